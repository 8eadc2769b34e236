"""Salvage's sessions (pgsurgeon.session with the settings carved rows are printed with) and the one snapshot
every SQL read and the carver share. ``Session.run`` turns a crashed backend into :class:`BackendLost` after
waiting for the server, and an ERROR into :class:`SqlFailed`; the caller decides what to retry, split or carve.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.session import Limits, Profile, Session

if TYPE_CHECKING:
    from psycopg import Connection

APPLICATION_NAME = "pgsurgeon salvage"
# Output settings the carver prints values with (crates/core/src/datum/), so SQL rows and carved rows agree.
OUTPUT_SETTINGS = {
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "extra_float_digits": "1",
    "bytea_output": "hex",
    # money prints per lc_monetary; 'C' gives cash_out's fallbacks ($, ',' groups, '.' and 2 digits)
    "lc_monetary": "C",
    "client_encoding": "UTF8",
}


def profile(read_only: bool = True) -> Profile:
    """Salvage's sessions: the output settings carved rows are printed with, so SQL rows and carved rows agree."""
    return Profile(
        APPLICATION_NAME,
        options=OUTPUT_SETTINGS,
        read_only=read_only,
        lost_hint="check the server log; run salvage again when the server is up (it resumes)",
    )


def limits(statement_timeout_s: float = 0) -> Limits:
    """No statement timeout unless asked (a COPY of a big range takes long), a minute's wait for a lock, and three
    for the server to come back after a crash."""
    return Limits(statement_timeout_ms=int(statement_timeout_s * 1000), lock_timeout_ms=60_000, reconnect_timeout_s=180)


def connect(dsn: str, *, read_only: bool = True, stop: threading.Event | None = None, wait: bool = True) -> Session:
    """A salvage session; ``wait``: the server may be in crash recovery after another session's statement."""
    return Session(dsn, profile(read_only), limits(), wait=wait, stop=stop)


class SharedSnapshot:
    """One snapshot for every connection of a salvage: a REPEATABLE READ transaction exports it
    (``pg_export_snapshot()``) and stays open while the salvage runs; each SQL read imports it (``SET TRANSACTION
    SNAPSHOT``), and the carver judges visibility against the same snapshot. Without it, rows that change while
    the salvage runs could be saved twice or not at all.

    A backend crash ends the exporting transaction too: the next read takes a new snapshot and the change is
    recorded in ``renewed`` (the rows read before and after come from two moments)."""

    def __init__(self, dsn: str, stop: threading.Event | None = None) -> None:
        self.session = connect(dsn, stop=stop)
        self.lock = threading.Lock()
        self.renewed = 0
        self.id = ""
        self.text = ""
        self._export()

    def _export(self) -> None:
        def fn(conn: Connection[tuple[Any, ...]]) -> tuple[Any, ...] | None:
            conn.execute("SET idle_in_transaction_session_timeout = 0")
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return conn.execute("SELECT pg_export_snapshot(), pg_current_snapshot()::text").fetchone()

        row = self.session.run(fn)
        if not row:
            raise PgSurgeonError("the server exported no snapshot")
        self.id, self.text = str(row[0]), str(row[1])

    def current(self) -> str:
        """The snapshot to import: the exported one, or a new one when its transaction died with a backend."""
        with self.lock:
            conn = self.session.conn
            alive = not (conn.closed or conn.broken) and conn.info.transaction_status == 2  # idle in transaction
            if alive:
                # a backend crash kills the exporting session without its socket saying so until it is used
                try:
                    conn.execute("SELECT 1")
                except db.Error:
                    alive = False
            if not alive:
                self.session.close()
                self.session = connect(self.session.dsn, stop=self.session.stop)
                self._export()
                self.renewed += 1
            return self.id

    def begin(self, conn: Connection[tuple[Any, ...]]) -> None:
        """Make the transaction just begun on ``conn`` read with the shared snapshot."""
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute(db.sql.SQL("SET TRANSACTION SNAPSHOT {}").format(db.sql.Literal(self.current())))

    def close(self) -> None:
        self.session.close()
