"""Entry point: ``pgsurgeon <command> …``; each command lives in ``pgsurgeon.commands.<name>``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from pgsurgeon import __version__
from pgsurgeon.commands import COMMANDS
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on a bad command line, the status of "damage found": ours exits with the usage status.
    Subcommand parsers are made of the same class (add_subparsers defaults to it)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(Exit.USAGE, f"{self.prog}: error: {message}\n")


def get_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="pgsurgeon",
        description="PostgreSQL corruption lab and rescue kit: simulate, detect, explain, save and fix damaged pages.",
    )
    parser.add_argument("--version", action="version", version=f"pgsurgeon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = get_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except PgSurgeonError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pgsurgeon: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
