"""The one table of exit statuses every command returns (like pgBackRest's error.yaml).

Scripts and monitoring branch on these, so each outcome has its own status and no two share one: in particular
a mistyped option (usage error) never looks like "damage found". The README and docs/errors.md show
:func:`markdown`; tests/test_exit_codes.py checks every command against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Exit(IntEnum):
    CLEAN = 0
    """Done, and nothing is damaged or lost."""
    FAILED = 1
    """Could not run: an error stopped the command."""
    DAMAGE = 2
    """Damage found, or rows or tables lost."""
    USAGE = 64
    """The command line is wrong; nothing was done (EX_USAGE of sysexits.h)."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C): 128 + SIGINT, as shells report it."""
    TERMINATED = 143
    """Stopped by SIGTERM (kill, systemd, a timeout): 128 + SIGTERM, after the same clean-up as Ctrl-C."""


@dataclass(frozen=True)
class Status:
    code: Exit
    name: str
    meaning: str


TABLE: tuple[Status, ...] = (
    Status(
        Exit.CLEAN,
        "clean",
        "the command did what was asked and found nothing wrong: no damage (scan, diagnose, inspect, control), "
        "every row saved (salvage, dump-tables), the table clean after the repair (repair)",
    ),
    Status(
        Exit.DAMAGE,
        "damage found / rows lost",
        "scan, diagnose, inspect and control found damage; salvage lost or kept apart rows, dump-tables lost a "
        "table; repair ran but the table is still not clean",
    ),
    Status(
        Exit.FAILED,
        "could not run",
        "an error stopped the command (server unreachable, refused, a file we may not read or write, a closed "
        "output pipe, a lab scenario failed): one line `pgsurgeon: error: …` on stderr and, where there is a next "
        "step, a `hint:` line; nothing is left half written",
    ),
    Status(
        Exit.USAGE,
        "usage error",
        "the arguments are wrong, do not fit together, or name something that does not exist (argparse's own "
        "errors, a malformed dsn, a number out of range included): one line and a hint; nothing was done",
    ),
    Status(
        Exit.INTERRUPTED,
        "interrupted",
        "stopped by Ctrl-C (SIGINT), after stopping the worker threads and removing the servers and directories of a "
        "lab run",
    ),
    Status(
        Exit.TERMINATED,
        "terminated",
        "stopped by SIGTERM (kill, a service manager, a timeout), cleaned up as after Ctrl-C",
    ),
)


def markdown() -> str:
    """The table for the README and docs/errors.md."""
    lines = ["| status | name | when |", "|---|---|---|"]
    lines += [f"| {s.code.value} | {s.name} | {s.meaning} |" for s in TABLE]
    return "\n".join(lines) + "\n"
