"""The server a run talks to: its facts (version, block size, extensions, data directory), the data directory when it
is on this host, and the statements every phase runs the same way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.sql import Runner, ServerFacts
from pgsurgeon.datadir import Geometry
from pgsurgeon.diagnose.model import DiagnoseRequest
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.session import Profile, ServerError, Session

LOCK_RETRIES = 3
PROFILE = Profile(
    "pgsurgeon diagnose",
    options={"idle_in_transaction_session_timeout": "60000"},
    # evidence first: never let these sessions' reads zero a damaged page or accept a bad checksum (superuser-only
    # settings: a role that may not set them has them off anyway)
    guarded={"zero_damaged_pages": "off", "ignore_checksum_failure": "off"},
)
"""Diagnose's sessions: read-only, short statements with timeouts (the request's Limits)."""


class Refused(PgSurgeonError):
    """A catalog query the server answered with an ERROR (``error``: what it said)."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(f"catalog query failed: {error.message}")
        self.error = error


def runner(session: Session) -> Runner:
    """The catalog layer's queries on ``session``: run once more after a lost backend (a catalog query cannot
    crash one itself), an ERROR raised as :class:`Refused`."""

    def run(text: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        rows = session.rows(text, params, again=True)
        if isinstance(rows, ServerError):
            raise Refused(rows)
        result: list[tuple[Any, ...]] = rows
        return result

    return run


def one(session: Session, name: str, params: dict[str, Any] | None = None) -> list[Any]:
    rows = session.rows(db.load_sql(name), params, again=True)
    if isinstance(rows, ServerError):
        raise PgSurgeonError(f"{name.replace('_', ' ')} query failed: {rows.message}")
    result: list[Any] = rows
    return result


def server_info(main: Session) -> ServerFacts:
    """The server's facts; refused when amcheck or pageinspect is missing."""
    facts = catalog.server_facts(runner(main))
    missing = [ext for ext in ("amcheck", "pageinspect") if facts.schemas[ext] is None]
    if missing:
        raise PgSurgeonError(
            f"extension{'s' if len(missing) > 1 else ''} {' and '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} not installed in database {facts.database}",
            hint="as a superuser: "
            + " ".join(f"CREATE EXTENSION {e};" for e in missing)
            + f" ({' and '.join(missing)} {'ship' if len(missing) > 1 else 'ships'} with PostgreSQL's contrib; "
            "diagnose itself never changes the database)",
        )
    return facts


def local_pgdata(req: DiagnoseRequest, server: ServerFacts) -> tuple[Path | None, Geometry | None]:
    """The data directory when it is on this host and belongs to this server, and its geometry."""
    if not req.use_files:
        return None, None
    pgdata = catalog.local_pgdata(server, req.pgdata)
    if pgdata is None:
        return None, None
    server.pgdata = pgdata
    control = core.read_control(pgdata)
    geometry = Geometry(control["blcksz"], control["relseg_size"], server.checksums, pgdata, control)
    return pgdata, geometry


def run_locked(
    session: Session, query: Any, params: dict[str, Any], *, binary: bool = False, again: bool = False
) -> Any:
    """Run, retrying a few times when lock_timeout fired (someone holds a conflicting lock briefly)."""
    for attempt in range(LOCK_RETRIES):
        rows = session.rows(query, params, binary=binary, again=again)
        if not (isinstance(rows, ServerError) and rows.sqlstate == "55P03") or attempt == LOCK_RETRIES - 1:
            return rows
        time.sleep(0.5 * (attempt + 1))
    return rows
