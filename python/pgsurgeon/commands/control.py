"""``pgsurgeon control PGDATA``: pg_control decoded for its version, CRC checked, like pg_controldata."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.commands import options
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term

if TYPE_CHECKING:
    pass


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "control",
        help="show pg_control (versions 14-18): checkpoint, XID and MultiXact horizons, checksums, CRC",
        description="Decode PGDATA/global/pg_control without a server, for PostgreSQL 14 to 18, and check its CRC.",
    )
    p.add_argument(
        "datadir", nargs="?", type=Path, metavar="PGDATA", help="data directory or a pg_control file (or -D)"
    )
    options.add_pgdata(p, env_default=True, help="the data directory", positional="datadir")
    options.add_format(p)
    p.set_defaults(func=run)


def load(path: Path) -> dict[str, Any]:
    try:
        if path.is_file():
            return core.parse_control(path.read_bytes())
        return core.read_control(path)
    except FileNotFoundError:
        raise PgSurgeonError(
            f"no pg_control under {path}", hint="pass the data directory (the one holding global/pg_control)"
        ) from None
    except core.FormatError as exc:
        raise PgSurgeonError(f"pg_control is not readable: {exc}") from None


def run(args: argparse.Namespace) -> int:
    control = load(options.require_pgdata(args))
    if args.format == "json":
        print(json.dumps(control, indent=2))
    else:
        console = term.console()
        table = term.table(title=f"pg_control of {args.pgdata}", header_style="bold")
        table.add_column("field")
        table.add_column("value")
        for key, value in control.items():
            table.add_row(key, json.dumps(value) if isinstance(value, dict | list) else str(value))
        console.print(table)
        if not control.get("crc_ok", True):
            console.print(
                "[red]the CRC does not match: the server will refuse to start (incorrect checksum in control file)[/]"
            )
    return Exit.CLEAN if control.get("crc_ok", True) else Exit.DAMAGE
