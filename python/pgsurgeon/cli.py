"""Entry point: ``pgsurgeon <command> …``; each command lives in ``pgsurgeon.commands.<name>``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pgsurgeon import __version__
from pgsurgeon.commands import COMMANDS
from pgsurgeon.errors import PgSurgeonError


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
