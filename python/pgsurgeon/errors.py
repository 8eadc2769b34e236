"""Errors the CLI turns into one lowercase line plus an optional ``hint:`` line, and their exit statuses."""

from __future__ import annotations

from pgsurgeon.exitcodes import Exit


class PgSurgeonError(Exception):
    """A failure the user can act on: ``message`` is one lowercase line, ``hint`` the next step."""

    exit_code: Exit = Exit.FAILED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = f"pgsurgeon: error: {self.message}"
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text


class LabError(PgSurgeonError):
    """Creating, starting or stopping a lab cluster failed."""


class UsageError(PgSurgeonError):
    """The arguments do not make sense together, or name something that does not exist."""

    exit_code = Exit.USAGE
