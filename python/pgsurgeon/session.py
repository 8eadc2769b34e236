"""One server connection for every command that reads through SQL while the server may crash under it.

A backend that dies on a damaged page (SIGSEGV) takes every session of the server with it while the postmaster
runs crash recovery. A :class:`Session` reconnects, waiting with backoff until the server accepts connections
again, and tells the caller with :class:`BackendLost`; an ERROR is a :class:`ServerError` (``rows``) or a
:class:`SqlFailed` (``run``). What differs between commands (application name, settings, read-only, what to
say when the server does not come back) is a :class:`Profile`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composable

T = TypeVar("T")

# SQLSTATEs of a server going down or restarting: admin_shutdown, crash_shutdown, cannot_connect_now.
RESTARTING = ("57P01", "57P02", "57P03")


@dataclass(frozen=True)
class Limits:
    """Per-session limits, so a check never holds locks or snapshots for long on a busy server."""

    statement_timeout_ms: int = 600_000
    lock_timeout_ms: int = 2_000
    reconnect_timeout_s: float = 120.0


@dataclass(frozen=True)
class Profile:
    """How one command's sessions are set up."""

    application_name: str
    options: dict[str, str] = field(default_factory=dict)
    """Settings given at connection time (libpq ``options``), so every statement sees them."""
    guarded: dict[str, str] = field(default_factory=dict)
    """Settings made with set_config after connecting; a refusal (superuser-only settings) leaves the default."""
    read_only: bool = True
    lost_hint: str = "check the server log for a crash (terminated by signal) and whether it is up"
    """What to do when the server does not come back after a lost backend."""


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


class SqlFailed(Exception):
    """The server raised an ERROR for the statement (``Session.run``)."""

    def __init__(self, sqlstate: str | None, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message


def _first_line(exc: BaseException, default: str) -> str:
    return (str(exc).strip().splitlines() or [default])[0]


class Session:
    """One autocommit connection to one database with a command's profile; reconnects after a lost backend."""

    def __init__(
        self,
        dsn: str,
        profile: Profile,
        limits: Limits | None = None,
        *,
        wait: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        """``wait``: the dsn is known to work (another session of the run connected with it), so a refused
        connection is a server restarting after a crash: wait for it as a reconnect does. ``stop``: give up
        waiting when it is set."""
        self.dsn = dsn
        self.profile = profile
        self.limits = limits or Limits()
        self.stop = stop
        self.reconnects = 0
        self._notices: list[str] = []
        self._conn: Connection[tuple[Any, ...]] | None = None
        if wait:
            self._connect_waiting()
        else:
            self._connect()

    @property
    def options(self) -> str:
        """The session's settings as libpq ``options`` (PGOPTIONS): for a psql that must read like this session."""
        opts = {**self.profile.options, "application_name": self.profile.application_name}
        if self.profile.read_only:
            opts["default_transaction_read_only"] = "on"
        opts["statement_timeout"] = str(self.limits.statement_timeout_ms)
        opts["lock_timeout"] = str(self.limits.lock_timeout_ms)
        return " ".join(f"-c {k}={v.replace(' ', chr(92) + ' ')}" for k, v in opts.items() if k != "client_encoding")

    def _connect(self) -> None:
        encoding = self.profile.options.get("client_encoding")
        extra = {"client_encoding": encoding} if encoding else {}
        conn = db.connect(self.dsn, autocommit=True, options=self.options, **extra)
        conn.add_notice_handler(self._on_notice)
        for setting, value in self.profile.guarded.items():
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
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()
        self._conn = None

    def _reconnect(self) -> None:
        """Connect again, waiting while the server restarts or runs crash recovery."""
        self.close()
        self._connect_waiting()
        self.reconnects += 1

    def _connect_waiting(self) -> None:
        deadline = time.monotonic() + self.limits.reconnect_timeout_s
        delay = 0.2
        while True:
            if self.stop is not None and self.stop.is_set():
                raise PgSurgeonError(f"{self.profile.application_name}: interrupted while waiting for the server")
            try:
                self._connect()
                return
            except (db.ConnectError, db.OperationalError) as exc:
                if time.monotonic() > deadline:
                    raise PgSurgeonError(
                        f"the server did not accept connections again within {self.limits.reconnect_timeout_s:.0f} s "
                        f"after a backend was lost: {_first_line(exc, 'no connection')}",
                        hint=self.profile.lost_hint,
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _lost(self, conn: Connection[tuple[Any, ...]], exc: BaseException) -> BackendLost:
        text = _first_line(exc, "connection lost")
        self._reconnect()
        return BackendLost(text)

    def rows(
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
            return self._rows(query, params, binary)
        except BackendLost:
            if not again:
                raise
            return self._rows(query, params, binary)

    def _rows(self, query: str | Composable, params: Sequence[Any] | dict[str, Any] | None, binary: bool) -> Any:
        self._notices.clear()
        conn = self.conn
        try:
            cur = conn.execute(query, params, binary=binary)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []
        except (db.OperationalError, db.InterfaceError) as exc:
            if conn.closed or conn.broken or getattr(exc, "sqlstate", None) in RESTARTING:
                raise self._lost(conn, exc) from None
            return self._server_error(exc)
        except db.DatabaseError as exc:
            return self._server_error(exc)

    def _server_error(self, exc: Exception) -> ServerError:
        diag = getattr(exc, "diag", None)
        message = (getattr(diag, "message_primary", None) or _first_line(exc, "error")).strip()
        return ServerError(
            sqlstate=getattr(exc, "sqlstate", None),
            message=message,
            detail=getattr(diag, "message_detail", None),
            hint=getattr(diag, "message_hint", None),
            warnings=tuple(n for n in self._notices if n),
        )

    def run(self, fn: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        """``fn(conn)``; an ERROR becomes :class:`SqlFailed`, a dead backend :class:`BackendLost`."""
        conn = self.conn
        try:
            return fn(conn)
        except db.Error as exc:
            sqlstate = getattr(exc, "sqlstate", None)
            if conn.closed or conn.broken or sqlstate is None or sqlstate in RESTARTING:
                raise self._lost(conn, exc) from exc
            # a failed COPY or transaction leaves nothing open in autocommit mode, but be sure
            with contextlib.suppress(db.Error):
                if conn.info.transaction_status != 0:  # not idle
                    conn.rollback()
            raise SqlFailed(sqlstate, _first_line(exc, "error")) from exc
