"""``pgsurgeon files PGDATA``: every relation file of a data directory, grouped by relation and fork,
named through SQL when a DSN is given, with segment-level problems (missing, short, partial pages)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pgsurgeon import core
from pgsurgeon.catalog.files import names_from_files
from pgsurgeon.catalog.names import name_map
from pgsurgeon.commands import options
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "files",
        help="list the relation files of a data directory, with names (through a connection) and segment problems",
        description="Walk base/, global/ and pg_tblspc/ of PGDATA and list each relation fork with its segments.",
    )
    p.add_argument("datadir", nargs="?", type=Path, metavar="PGDATA", help="the data directory (or -D)")
    options.add_pgdata(p, env_default=True, help="the data directory", positional="datadir")
    options.add_connection(p, optional=True, purpose="to name relations")
    options.add_format(p)
    p.add_argument("--fork", choices=("main", "fsm", "vm", "init"), help="only this fork")
    p.set_defaults(func=run)


def collect(pgdata: Path, dsn: str | None) -> list[dict[str, Any]]:
    if not (pgdata / "global" / "pg_control").is_file():
        raise PgSurgeonError(
            f"{pgdata} is not a data directory (no global/pg_control)",
            hint="pass a stopped cluster's data directory (a base backup is checked by 'pgsurgeon scan BACKUP')",
        )
    try:
        control = core.read_control(pgdata)
    except core.FormatError as exc:
        raise PgSurgeonError(
            f"{pgdata / 'global' / 'pg_control'} cannot be read: {str(exc).removeprefix('pg_control: ')}",
            hint=f"'pgsurgeon control --plan {pgdata}' derives its values from the other files",
        ) from None
    relations = core.discover_relations(pgdata)
    names = name_map(dsn) if dsn else names_from_files(pgdata)
    out: list[dict[str, Any]] = []
    for rel in relations:
        key = (rel["tablespace_oid"], rel["database_oid"], rel["relfilenode"])
        name = names.get(key)
        size = sum(int(s["size"]) for s in rel["segments"])
        out.append(
            {
                **rel,
                "name": name.qualified if name else None,
                "database": name.database if name else None,
                "relkind": name.relkind if name else None,
                "size": size,
                "blocks": size // int(control["blcksz"]),
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    relations = collect(options.require_pgdata(args), args.dsn)
    if args.fork:
        relations = [r for r in relations if r["fork"] == args.fork]
    if args.format == "json":
        print(json.dumps(relations, indent=2))
        return Exit.CLEAN
    table = term.table(header_style="bold")
    for col in ("path", "fork", "segments", "blocks", "name"):
        table.add_column(col)
    for rel in relations:
        table.add_row(rel["path"], rel["fork"], str(len(rel["segments"])), str(rel["blocks"]), rel["name"] or "")
    term.console().print(table)
    return Exit.CLEAN
