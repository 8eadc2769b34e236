"""What repair learns through SQL before it plans: the server (version, privileges, extensions, where its files
are), the table and its relatives, the columns; and the refusals when it cannot go on."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db, versions
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.repair.model import RelInfo

if TYPE_CHECKING:
    from psycopg import Connection

APPLICATION_NAME = "pgsurgeon repair"
EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery")


def connect(dsn: str, *, read_only: bool = False) -> Connection[tuple[Any, ...]]:
    """An autocommit session for repair: every statement its own transaction, evidence first (this session never
    zeroes a damaged page by accident), a lock_timeout so a busy table makes repair stop instead of queueing.
    Planning runs ``read_only``: a dry run cannot change the database even by mistake."""
    conn = db.connect(dsn, autocommit=True)
    for name, value in (
        ("application_name", APPLICATION_NAME),
        ("lock_timeout", "10000"),
        ("zero_damaged_pages", "off"),
        ("ignore_checksum_failure", "off"),
        ("default_transaction_read_only", "on" if read_only else "off"),
    ):
        with contextlib.suppress(db.DatabaseError):
            conn.execute(db.load_sql("repair_setting"), {"name": name, "value": value})
    return conn


@dataclass
class Server:
    version_num: int
    version: str
    superuser: bool
    usename: str
    data_directory: str | None
    system_identifier: str
    checksums: bool
    block_size: int
    segment_blocks: int
    database: str
    in_recovery: bool
    schemas: dict[str, str | None]
    pg_surgery_available: bool
    pgdata: Path | None = None
    """The data directory when it is readable on this host and belongs to this server."""

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "version_num": self.version_num,
            "database": self.database,
            "checksums": self.checksums,
            "block_size": self.block_size,
            "data_directory": self.data_directory,
            "data_directory_here": self.pgdata is not None,
            "superuser": self.superuser,
        }


def _row(conn: Connection[tuple[Any, ...]], name: str) -> dict[str, Any]:
    cur = conn.execute(db.load_sql(name))
    names = [d.name for d in cur.description or []]
    row = cur.fetchone()
    assert row is not None
    return dict(zip(names, row, strict=True))


def server_facts(conn: Connection[tuple[Any, ...]], pgdata_override: Path | None) -> Server:
    """The server, after the refusals that need nothing but the role (a version too old, a standby, no superuser)."""
    info = _row(conn, "repair_role")
    check_role(
        int(info["version_num"]),
        str(info["version"]),
        bool(info["superuser"]),
        str(info["usename"]),
        bool(info["in_recovery"]),
    )
    info.update(_row(conn, "repair_server"))
    server = Server(
        version_num=int(info["version_num"]),
        version=str(info["version"]),
        superuser=bool(info["superuser"]),
        usename=str(info["usename"]),
        data_directory=info["data_directory"],
        system_identifier=str(info["system_identifier"]),
        checksums=bool(info["checksums"]),
        block_size=int(info["block_size"]),
        segment_blocks=int(info["segment_blocks"]),
        database=str(info["database"]),
        in_recovery=bool(info["in_recovery"]),
        schemas={ext: info[f"{ext}_schema"] for ext in EXTENSIONS},
        pg_surgery_available=bool(info["pg_surgery_available"]),
    )
    server.pgdata = _local_pgdata(server, pgdata_override)
    return server


def _local_pgdata(server: Server, override: Path | None) -> Path | None:
    candidate = override or (Path(server.data_directory) if server.data_directory else None)
    if candidate is None:
        return None
    try:
        control = core.read_control(candidate)
    except (OSError, ValueError):
        return None
    if str(control.get("system_identifier")) != server.system_identifier:
        return None
    return candidate


def check_role(version_num: int, version: str, superuser: bool, usename: str, in_recovery: bool) -> None:
    """Refuse early: a server too old, a standby, a role without the privileges."""
    if not versions.is_supported(version_num):
        raise PgSurgeonError(
            f"the server runs postgresql {version}: repair needs postgresql {versions.OLDEST_SUPPORTED} or later",
            hint="pg_surgery (heap_force_kill, heap_force_freeze) and amcheck's verify_heapam arrived in 14; "
            "on older servers save the rows with 'pgsurgeon salvage' and rebuild the table",
        )
    if in_recovery:
        raise PgSurgeonError(
            "the server is a standby (in recovery): a repair changes the table and must run on the primary",
            hint="repair the primary; the standby follows through WAL (file-level steps need the same on each "
            "standby, or rebuilding it)",
        )
    if not superuser:
        raise PgSurgeonError(
            f"role {usename} is not a superuser: repair needs one",
            hint="pg_surgery's functions, zero_damaged_pages and reading raw pages are superuser-only; connect as a "
            "superuser (e.g. user=postgres in the dsn)",
        )


def preflight(server: Server) -> None:
    """Refuse early: a server too old, a standby, a role without the privileges, missing extensions."""
    check_role(server.version_num, server.version, server.superuser, server.usename, server.in_recovery)
    missing = [ext for ext in EXTENSIONS if server.schemas.get(ext) is None]
    if missing:
        what = " and ".join(missing) if len(missing) < 3 else ", ".join(missing[:-1]) + " and " + missing[-1]
        hint = "as a superuser: " + " ".join(f"CREATE EXTENSION {ext};" for ext in missing)
        if "pg_surgery" in missing and not server.pg_surgery_available:
            hint += " (pg_surgery is not installed on the server: it ships with postgresql's contrib package)"
        raise PgSurgeonError(
            f"extension{'s' if len(missing) > 1 else ''} {what} {'are' if len(missing) > 1 else 'is'} not "
            f"installed in database {server.database}",
            hint=hint + "; repair uses amcheck and pageinspect to find the damage and pg_surgery to remove tuples",
        )


def relations(conn: Connection[tuple[Any, ...]], oid: int, block_size: int) -> list[RelInfo]:
    cur = conn.execute(db.load_sql("repair_relations"), {"oid": oid})
    names = [d.name for d in cur.description or []]
    out: list[RelInfo] = []
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        out.append(
            RelInfo(
                role=str(r["role"]),
                oid=int(r["oid"]),
                schema=str(r["schema"]),
                name=str(r["name"]),
                regclass=str(r["regclass"]),
                relkind=str(r["relkind"]),
                amname=r["amname"],
                filepath=r["filepath"],
                size=int(r["size"] or 0),
                exclusion=bool(r["exclusion"]),
                valid=bool(r["valid"]),
                system=bool(r["system"]),
                block_size=block_size,
                partial=bool(r["partial"]),
            )
        )
    return out


@dataclass(frozen=True)
class Column:
    attnum: int
    name: str
    attlen: int
    attalign: str
    dropped: bool
    generated: bool
    identity: str


def columns(conn: Connection[tuple[Any, ...]], oid: int) -> list[Column]:
    rows = conn.execute(db.load_sql("repair_columns"), {"oid": oid}).fetchall()
    return [
        Column(int(n), str(name), int(ln), str(al), bool(dr), bool(gen), str(ident or ""))
        for n, name, ln, al, dr, gen, ident in rows
    ]


def qualified(rel: RelInfo) -> Any:
    """The relation as a quoted SQL identifier (any name works)."""
    return db.sql.Identifier(rel.schema, rel.name)


def ext_fn(server: Server, ext: str, name: str) -> Any:
    """An extension's function, schema-qualified (the extension may live outside the search_path)."""
    return db.sql.Identifier(str(server.schemas[ext]), name)
