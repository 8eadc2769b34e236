"""The server a run talks to: its facts (version, block size, extensions, data directory), the data directory when it
is on this host, and the statements every phase runs the same way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pgsurgeon import core, db
from pgsurgeon.datadir import Geometry
from pgsurgeon.diagnose.model import DiagnoseRequest
from pgsurgeon.diagnose.session import ServerError, Session
from pgsurgeon.errors import PgSurgeonError

LOCK_RETRIES = 3


def one(session: Session, name: str, params: dict[str, Any] | None = None) -> list[Any]:
    rows = session.run(db.load_sql(name), params, again=True)
    if isinstance(rows, ServerError):
        raise PgSurgeonError(f"{name.replace('_', ' ')} query failed: {rows.message}")
    result: list[Any] = rows
    return result


def server_info(main: Session) -> dict[str, Any]:
    (row,) = one(main, "diagnose_server")
    keys = (
        "version_num",
        "version",
        "checksums",
        "block_size",
        "segment_blocks",
        "data_directory",
        "system_identifier",
        "database",
        "database_oid",
        "amcheck_schema",
        "pageinspect_schema",
        "superuser",
    )
    info = dict(zip(keys, row, strict=True))
    missing = [ext for ext in ("amcheck", "pageinspect") if info[f"{ext}_schema"] is None]
    if missing:
        raise PgSurgeonError(
            f"extension{'s' if len(missing) > 1 else ''} {' and '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} not installed in database {info['database']}",
            hint="as a superuser: "
            + " ".join(f"CREATE EXTENSION {e};" for e in missing)
            + " (both ship with PostgreSQL's contrib; diagnose itself never changes the database)",
        )
    return info


def local_pgdata(req: DiagnoseRequest, server: dict[str, Any]) -> tuple[Path | None, Geometry | None]:
    """The data directory when it is on this host and belongs to this server (same system identifier), and its
    geometry."""
    if not req.use_files:
        return None, None
    candidate = req.pgdata or Path(str(server["data_directory"]))
    try:
        control = core.read_control(candidate)
    except (OSError, ValueError):
        return None, None
    if str(control.get("system_identifier")) != str(server["system_identifier"]):
        return None, None
    geometry = Geometry(
        blcksz=int(control["blcksz"]),
        relseg_size=int(control["relseg_size"]),
        checksums=bool(server["checksums"]),
        pgdata=candidate,
        control=control,
    )
    return candidate, geometry


def run_locked(
    session: Session, query: Any, params: dict[str, Any], *, binary: bool = False, again: bool = False
) -> Any:
    """Run, retrying a few times when lock_timeout fired (someone holds a conflicting lock briefly)."""
    for attempt in range(LOCK_RETRIES):
        rows = session.run(query, params, binary=binary, again=again)
        if not (isinstance(rows, ServerError) and rows.sqlstate == "55P03") or attempt == LOCK_RETRIES - 1:
            return rows
        time.sleep(0.5 * (attempt + 1))
    return rows
