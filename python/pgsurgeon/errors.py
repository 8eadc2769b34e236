"""Errors the CLI turns into one lowercase line plus an optional ``hint:`` line, and their exit statuses."""

from __future__ import annotations

import errno
import os

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


# What to do next for the OS errors a user causes with a path; errno -> hint.
_OS_HINTS = {
    errno.EACCES: "run as the owner of the files (the cluster's OS user) or root, or fix their permissions",
    errno.EPERM: "run as the owner of the files (the cluster's OS user) or root, or fix their permissions",
    errno.ENOENT: "check the path",
    errno.EISDIR: "a directory was given where a file is expected",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EEXIST: "remove it or choose another path",
    errno.ENOSPC: "free some space, then run again",
    errno.EROFS: "the file system is mounted read-only; write somewhere else",
    errno.ENAMETOOLONG: "shorten the path",
    errno.ELOOP: "the path has a symbolic link loop",
}


_ERRNO_OF: dict[type[OSError], int] = {
    PermissionError: errno.EACCES,
    FileNotFoundError: errno.ENOENT,
    IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR,
    FileExistsError: errno.EEXIST,
}


def from_os_error(exc: OSError) -> PgSurgeonError | None:
    """The expected OS error as our error, or None for one that points at a bug (then the traceback stays)."""
    if isinstance(exc, BrokenPipeError):
        return PgSurgeonError(
            "the output was closed before everything was written (broken pipe)",
            hint="the reading end (head, a pager) exited early; nothing else went wrong",
        )
    # The Rust core's own errors (a damaged archive, a file too long to read whole) carry their hint.
    message, sep, hint = str(exc).partition("\nhint: ")
    if sep:
        return PgSurgeonError(message, hint=hint)
    # The Rust core's errors carry the errno when the OS gave one, and a message naming the path; else the class.
    code = exc.errno if exc.errno is not None else _ERRNO_OF.get(type(exc))
    if code not in _OS_HINTS:
        return None
    if exc.filename is not None:
        message = f"{os.fsdecode(exc.filename)}: {(exc.strerror or str(code)).lower()}"
    else:
        path, sep, reason = str(exc).rpartition(": ")
        message = path + sep + reason.lower()
    return PgSurgeonError(message, hint=_OS_HINTS[code])
