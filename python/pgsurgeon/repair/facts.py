"""What repair learns through SQL before it plans: the server (version, privileges, extensions, where its files
are), the table and its relatives, the columns; and the refusals when it cannot go on."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import db, versions
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection

APPLICATION_NAME = "pgsurgeon repair"
PLANNING_EXTENSIONS = ("amcheck", "pageinspect")
_ROLE_ORDER = {"table": 0, "toast": 1, "toast-index": 2, "index": 3}


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
            conn.execute(db.load_sql("session_setting"), {"name": name, "value": value})
    return conn


def server_facts(conn: Connection[tuple[Any, ...]], pgdata_override: Path | None) -> ServerFacts:
    """The server, after the refusals that need nothing but the role (a version too old, a standby, no superuser)."""
    server = catalog.server_facts(conn)
    check_role(server.version_num, server.version, server.superuser, server.usename, server.in_recovery)
    server.pgdata = catalog.local_pgdata(server, pgdata_override)
    return server


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


def preflight(server: ServerFacts) -> None:
    """Refuse early: a server too old, a standby, a role without the privileges, missing extensions. Planning
    needs amcheck and pageinspect; pg_surgery only the steps that kill or freeze tuples (see surgery_missing)."""
    check_role(server.version_num, server.version, server.superuser, server.usename, server.in_recovery)
    missing = [ext for ext in PLANNING_EXTENSIONS if server.schemas.get(ext) is None]
    if missing:
        are = "are" if len(missing) > 1 else "is"
        raise PgSurgeonError(
            f"extension{'s' if len(missing) > 1 else ''} {' and '.join(missing)} {are} not installed in database "
            f"{server.database}",
            hint="repair finds the damage with amcheck and pageinspect, even for a dry run; as a superuser: "
            + " ".join(f"CREATE EXTENSION {ext};" for ext in missing),
        )


def surgery_missing(server: ServerFacts) -> tuple[str, str] | None:
    """Why the plan's heap_force_kill/heap_force_freeze steps cannot run yet (a blocker), or None."""
    if server.schemas.get("pg_surgery") is not None:
        return None
    hint = "as a superuser: CREATE EXTENSION pg_surgery; then run repair again"
    if not server.pg_surgery_available:
        hint += " (pg_surgery is not installed on the server: it ships with postgresql's contrib package)"
    message = f"pg_surgery is not installed in database {server.database}: --execute needs it to kill or freeze tuples"
    return message, hint


def surgery_fn(server: ServerFacts, name: str) -> Any:
    """A pg_surgery function, schema-qualified; unqualified while the extension is not installed (a dry run shows
    the statement --execute will run once it is)."""
    if server.schemas.get("pg_surgery") is None:
        return db.sql.SQL(name)  # one of our constants, never user input
    return ext_fn(server, "pg_surgery", name)


def relations(conn: Connection[tuple[Any, ...]], oid: int, block_size: int) -> list[Relation]:
    """The table, its TOAST table, the TOAST table's index and the table's indexes, with their sizes (which take
    AccessShareLock on each)."""
    rels = catalog.relatives(conn, [oid], block_size=block_size)
    catalog.read_sizes(conn, rels)
    return sorted(rels, key=lambda r: (_ROLE_ORDER[r.role], r.name))


def ext_fn(server: ServerFacts, ext: str, name: str) -> Any:
    """An extension's function, schema-qualified (the extension may live outside the search_path)."""
    return db.sql.Identifier(str(server.schemas[ext]), name)
