"""One diagnose connection: short autocommit statements with timeouts, read-only, and a reconnect when the
backend it talked to died (a crash restarts every backend of the server, so the next connection may have to wait
for crash recovery to finish)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composable

APPLICATION_NAME = "pgsurgeon diagnose"
# SQLSTATEs of a server that is restarting: admin_shutdown, crash_shutdown, cannot_connect_now.
_RESTARTING = ("57P01", "57P02", "57P03")


@dataclass(frozen=True)
class Limits:
    """Per-session limits, so a check never holds locks or snapshots for long on a busy server."""

    statement_timeout_ms: int = 600_000
    lock_timeout_ms: int = 2_000
    reconnect_timeout_s: float = 120.0


class BackendLost(Exception):
    """The connection died in the middle of a statement: the backend crashed or was terminated."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ServerError:
    """An ERROR the server raised for a statement, as the client saw it."""

    sqlstate: str | None
    message: str
    detail: str | None
    hint: str | None
    warnings: tuple[str, ...] = ()

    @property
    def observed(self) -> str:
        """One line: the warnings that came first (PostgreSQL 15 sends the checksum failure as a WARNING), the
        error, and its detail."""
        parts = [f"WARNING: {w}" for w in self.warnings]
        parts.append(f"ERROR: {self.message}")
        if self.detail:
            parts.append(f"DETAIL: {self.detail}")
        return " ".join(parts)


class Session:
    """A connection to one database with diagnose's settings. ``run`` returns rows or a :class:`ServerError`;
    a dead backend raises :class:`BackendLost` after reconnecting (or :class:`PgSurgeonError` when the server
    does not come back)."""

    def __init__(self, dsn: str, limits: Limits, *, wait: bool = False) -> None:
        """``wait``: the dsn is known to work (another session of the run connected with it), so a refused
        connection is a server restarting after a crash: wait for it as a reconnect does."""
        self.dsn = dsn
        self.limits = limits
        self.reconnects = 0
        self._notices: list[str] = []
        self._conn: Connection[tuple[Any, ...]] | None = None
        if wait:
            self._connect_waiting()
        else:
            self._connect()

    def _connect(self) -> None:
        conn = db.connect(self.dsn, autocommit=True)
        conn.add_notice_handler(self._on_notice)
        for setting, value in (
            ("application_name", APPLICATION_NAME),
            ("statement_timeout", str(self.limits.statement_timeout_ms)),
            ("lock_timeout", str(self.limits.lock_timeout_ms)),
            ("idle_in_transaction_session_timeout", "60000"),
            ("default_transaction_read_only", "on"),
            # evidence first: never let this session's reads zero a damaged page or accept a bad checksum
            ("zero_damaged_pages", "off"),
            ("ignore_checksum_failure", "off"),
        ):
            # superuser-only settings fail on a non-superuser session: they are off by default there
            with contextlib.suppress(db.DatabaseError):
                conn.execute(db.load_sql("session_setting"), {"name": setting, "value": value})
        self._conn = conn

    def _on_notice(self, diag: Any) -> None:
        if diag.severity_nonlocalized in ("WARNING", "ERROR") or diag.severity in ("WARNING", "ERROR"):
            self._notices.append(str(diag.message_primary or ""))

    @property
    def conn(self) -> Connection[tuple[Any, ...]]:
        if self._conn is None or self._conn.closed:
            self._reconnect()
        assert self._conn is not None
        return self._conn

    def cancel(self) -> None:
        """Ask the server to cancel the statement running on this session (from another thread)."""
        conn = self._conn
        if conn is not None and not conn.closed:
            with contextlib.suppress(db.Error):
                conn.cancel_safe(timeout=5.0)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _reconnect(self) -> None:
        """Connect again, waiting while the server restarts or runs crash recovery."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._connect_waiting()
        self.reconnects += 1

    def _connect_waiting(self) -> None:
        deadline = time.monotonic() + self.limits.reconnect_timeout_s
        delay = 0.2
        while True:
            try:
                self._connect()
                return
            except db.ConnectError as exc:
                if time.monotonic() > deadline:
                    raise PgSurgeonError(
                        f"the server did not accept connections again within {self.limits.reconnect_timeout_s:.0f}s "
                        f"after a backend was lost: {exc.message}",
                        hint="check the server log for a crash (terminated by signal) and whether it is up",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def run(
        self,
        query: str | Composable,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        binary: bool = False,
        again: bool = False,
    ) -> Any:
        """Rows of ``query``, or the :class:`ServerError` it raised; ``binary``: results in binary format (a bytea
        arrives as its bytes, not as hex text twice its size). ``again``: for a statement that cannot crash a backend
        itself (a catalog query, raw page bytes), a lost backend means a crash elsewhere restarted them all: run it
        once more on the new connection instead of raising :class:`BackendLost`."""
        try:
            return self._run(query, params, binary)
        except BackendLost:
            if not again:
                raise
            return self._run(query, params, binary)

    def _run(self, query: str | Composable, params: Sequence[Any] | dict[str, Any] | None, binary: bool) -> Any:
        self._notices.clear()
        conn = self.conn
        try:
            cur = conn.execute(query, params, binary=binary)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []
        except (db.OperationalError, db.InterfaceError) as exc:
            diag = getattr(exc, "diag", None)
            sqlstate = getattr(exc, "sqlstate", None)
            if conn.closed or conn.broken or sqlstate in _RESTARTING:
                text = (str(exc).strip().splitlines() or ["connection lost"])[0]
                self._reconnect()
                raise BackendLost(text) from None
            return self._server_error(exc, diag)
        except db.DatabaseError as exc:
            return self._server_error(exc, getattr(exc, "diag", None))

    def _server_error(self, exc: Exception, diag: Any) -> ServerError:
        message = (getattr(diag, "message_primary", None) or str(exc).strip().splitlines()[0]).strip()
        return ServerError(
            sqlstate=getattr(exc, "sqlstate", None),
            message=message,
            detail=getattr(diag, "message_detail", None),
            hint=getattr(diag, "message_hint", None),
            warnings=tuple(n for n in self._notices if n),
        )
