"""Salvage connections: the session settings carved rows are printed with, and surviving a backend that crashed.

A backend that dies (SIGSEGV on a damaged page) takes every session of the server with it while the postmaster
runs crash recovery. ``Session.run`` turns that into :class:`BackendLost` after waiting for the server to accept
connections again, and an ERROR into :class:`SqlFailed`; the caller decides what to retry, split or carve.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection

T = TypeVar("T")

APPLICATION_NAME = "pgsurgeon salvage"
# Output settings the carver prints values with (crates/core/src/datum/mod.rs), so SQL rows and carved rows agree.
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
# SQLSTATEs of a server going down or restarting: admin_shutdown, crash_shutdown, cannot_connect_now.
_RESTARTING = ("57P01", "57P02", "57P03")


class BackendLost(Exception):
    """The connection died in the middle of a statement: the backend crashed or was terminated."""


class SqlFailed(Exception):
    """The server raised an ERROR for the statement."""

    def __init__(self, sqlstate: str | None, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message


class Session:
    """One autocommit connection with salvage's settings; reconnects after a crash."""

    def __init__(
        self,
        dsn: str,
        *,
        read_only: bool = True,
        statement_timeout_s: float = 0,
        reconnect_timeout_s: float = 180,
        stop: threading.Event | None = None,
        wait: bool = True,
    ) -> None:
        self.dsn = dsn
        self.read_only = read_only
        self.statement_timeout_s = statement_timeout_s
        self.reconnect_timeout_s = reconnect_timeout_s
        self.stop = stop
        self.reconnects = 0
        self._conn: Connection[tuple[Any, ...]] | None = None
        if wait:
            # the server may be in crash recovery after another session's statement crashed it
            self._reconnect()
            self.reconnects = 0
        else:
            self._connect()

    @property
    def conn(self) -> Connection[tuple[Any, ...]]:
        if self._conn is None or self._conn.closed:
            self._reconnect()
        assert self._conn is not None
        return self._conn

    @property
    def options(self) -> str:
        """The session's settings as libpq ``options`` (PGOPTIONS): for a psql that must read like this session."""
        return self._options()

    def _options(self) -> str:
        opts = {**OUTPUT_SETTINGS, "application_name": APPLICATION_NAME}
        if self.read_only:
            opts["default_transaction_read_only"] = "on"
        opts["statement_timeout"] = str(int(self.statement_timeout_s * 1000))
        opts["lock_timeout"] = "60000"
        return " ".join(f"-c {k}={v.replace(' ', chr(92) + ' ')}" for k, v in opts.items() if k != "client_encoding")

    def _connect(self) -> None:
        self._conn = db.connect(self.dsn, autocommit=True, options=self._options(), client_encoding="UTF8")

    def _reconnect(self) -> None:
        """Connect again, waiting (with backoff) while the server restarts after a crash."""
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()
        self._conn = None
        deadline = time.monotonic() + self.reconnect_timeout_s
        delay = 0.2
        while True:
            if self.stop is not None and self.stop.is_set():
                raise PgSurgeonError("salvage interrupted while waiting for the server")
            try:
                self._connect()
                assert self._conn is not None
                self._conn.execute("SELECT 1")
                self.reconnects += 1
                return
            except (db.ConnectError, db.OperationalError) as exc:
                if time.monotonic() > deadline:
                    raise PgSurgeonError(
                        f"the server did not come back within {self.reconnect_timeout_s:.0f} s after a backend crash",
                        hint="check the server log; run salvage again when the server is up (it resumes)",
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 1.6, 2.0)

    def run(self, fn: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        """``fn(conn)``; an ERROR becomes :class:`SqlFailed`, a dead backend :class:`BackendLost`."""
        conn = self.conn
        try:
            return fn(conn)
        except db.Error as exc:
            sqlstate = getattr(exc, "sqlstate", None)
            broken = conn.closed or conn.broken or sqlstate is None or sqlstate in _RESTARTING
            if broken:
                message = (str(exc).strip().splitlines() or ["connection lost"])[0]
                self._reconnect()
                raise BackendLost(message) from exc
            message = (str(exc).strip().splitlines() or ["error"])[0]
            # a failed COPY or transaction leaves nothing open in autocommit mode, but be sure
            with contextlib.suppress(db.Error):
                if conn.info.transaction_status != 0:  # not idle
                    conn.rollback()
            raise SqlFailed(sqlstate, message) from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()
        self._conn = None


class SharedSnapshot:
    """One snapshot for every connection of a salvage: a REPEATABLE READ transaction exports it
    (``pg_export_snapshot()``) and stays open while the salvage runs; each SQL read imports it (``SET TRANSACTION
    SNAPSHOT``), and the carver judges visibility against the same snapshot. Without it, rows that change while
    the salvage runs could be saved twice or not at all.

    A backend crash ends the exporting transaction too: the next read takes a new snapshot and the change is
    recorded in ``renewed`` (the rows read before and after come from two moments)."""

    def __init__(self, dsn: str, stop: threading.Event | None = None) -> None:
        self.session = Session(dsn, read_only=True, stop=stop, wait=True)
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
                self.session = Session(self.session.dsn, read_only=True, stop=self.session.stop, wait=True)
                self._export()
                self.renewed += 1
            return self.id

    def begin(self, conn: Connection[tuple[Any, ...]]) -> None:
        """Make the transaction just begun on ``conn`` read with the shared snapshot."""
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute(db.sql.SQL("SET TRANSACTION SNAPSHOT {}").format(db.sql.Literal(self.current())))

    def close(self) -> None:
        self.session.close()
