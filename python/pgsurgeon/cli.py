"""Entry point: ``pgsurgeon <command> …``; each command lives in ``pgsurgeon.commands.<name>``.

This is the one place that turns failures into what the user sees: one ``pgsurgeon: error: …`` line, an optional
``hint:`` line, and the status of :mod:`pgsurgeon.exitcodes`. Our own errors (:class:`PgSurgeonError`) say it
themselves; the operating system's expected refusals (a path that is missing, unreadable, a directory, a closed
pipe) and files in a format we cannot decode are rendered here. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pgsurgeon import __version__, core, profile
from pgsurgeon.commands import modules, options
from pgsurgeon.errors import PgSurgeonError, UsageError, from_os_error
from pgsurgeon.exitcodes import Exit


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on a bad command line, the status of "damage found": ours exits with the usage status,
    and says it in one line plus a hint like every other error (no usage block to parse around).
    Subcommand parsers are made of the same class (add_subparsers defaults to it).

    Help is ``-?/--help`` as in pg_dump and pg_amcheck, because ``-h`` is the server's host in every command that
    connects; the top level, which has no -h option, keeps ``-h`` too."""

    def __init__(self, **kwargs: Any) -> None:
        add_help = kwargs.pop("add_help", True)
        super().__init__(add_help=False, **kwargs)
        if add_help:
            self.add_argument("-?", "--help", action="help", help="show this help and exit")

    def error(self, message: str) -> NoReturn:
        err = UsageError(message, hint=f"'{self.prog} --help' lists the options")
        self.exit(Exit.USAGE, err.render() + "\n")


def get_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the command line, with only the command it names (the top level has no option that
    takes a value, so the first word that is not an option is the command)."""
    parser = Parser(
        prog="pgsurgeon",
        description="PostgreSQL corruption lab and rescue kit: simulate, detect, explain, save and fix damaged pages.",
    )
    parser.add_argument("-h", action="help", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"pgsurgeon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    command = None if argv is None else next((a for a in argv if not a.startswith("-")), None)
    for module in modules(command):
        module.register(sub)
    return parser


def _stdout_gone() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail on the closed pipe again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced by a test's buffer, or already closed
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    timed = profile.Command()
    try:
        return _main(words)
    finally:
        timed.close()


def _main(words: Sequence[str]) -> int:
    parser = get_parser(words)
    args = parser.parse_args(words)
    try:
        options.resolve(args)
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be reported
    except PgSurgeonError as exc:
        failure = exc
    except Terminated:
        print("pgsurgeon: terminated", file=sys.stderr)
        return Exit.TERMINATED
    except KeyboardInterrupt:
        print("pgsurgeon: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except OSError as exc:
        mapped = from_os_error(exc)
        if mapped is None:
            raise
        if isinstance(exc, BrokenPipeError):
            _stdout_gone()
        failure = mapped
    except core.FormatError as exc:
        failure = PgSurgeonError(
            (str(exc).strip().splitlines() or ["a file is not in a format pgsurgeon knows"])[0],
            hint="the file is damaged or is not the file named (pgsurgeon reads postgresql 14 to 18)",
        )
    else:
        return code
    print(failure.render(), file=sys.stderr)
    return failure.exit_code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: every ``except KeyboardInterrupt``/``finally`` that stops worker
    threads, servers the lab started, or partial output then runs for a ``kill`` too. Python's default for SIGTERM
    is to die at once, which would leave the lab's PostgreSQL servers running and its directories behind."""


def _terminate(signum: int, _frame: object) -> None:
    raise Terminated(f"signal {signum}")


def run() -> int:
    """The console script: :func:`main` with SIGTERM handled like Ctrl-C, then every object of the run frozen
    (gc.freeze) so the interpreter's exit does not walk them all in one more collection (~0.04 s of each command).
    In-process callers, tests among them, call :func:`main`, which leaves the collector and signals alone."""
    signal.signal(signal.SIGTERM, _terminate)
    # Collections of the oldest generation walk every live object; with the default thresholds one ran each time
    # that generation grew by a quarter, and a wide schema's catalog (80,000 relations: millions of objects, all
    # still needed) spent a fifth of a scan walking them. Young cycles are still collected as before, the old
    # generation a hundredth as often: a command's run is short and its large data lives in the core.
    gc.set_threshold(50_000, 50, 1000)
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
