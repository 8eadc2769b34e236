"""A cluster started on a private socket: no TCP, autovacuum off, run as the data directory's owner, and stopped on
leaving, also on errors and Ctrl-C. ``verify`` starts a rescued cluster this way; ``unload`` its throwaway copy of
the catalog."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from pgsurgeon.journal.server import last_complaint
from pgsurgeon.lab.cluster import pick_free_port
from pgsurgeon.pgbin import PgInstall, run_as, user_owning
from pgsurgeon.rescue.plan import superuser_of

START_TIMEOUT = 300


class PrivateServer:
    """``with PrivateServer(pgdata, install) as srv:``; ``srv.started`` says whether it came up (``start_error``
    says why not), ``srv.dsn(db)`` and ``srv.client_args()`` reach it."""

    def __init__(
        self,
        pgdata: Path,
        install: PgInstall,
        settings: Mapping[str, str] | None = None,
        user: str | None = None,
        stop_mode: str = "fast",
    ) -> None:
        self.pgdata, self.install = pgdata, install
        self.settings = dict(settings or {})
        self.owner = user_owning(pgdata)
        self.user = user
        self.sock = Path(tempfile.mkdtemp(prefix="pgs-srv-", dir="/tmp"))  # short: a socket path is < 108 bytes
        self.log = self.sock / "server.log"
        self.stop_mode = stop_mode
        """``immediate`` for a throwaway copy: no shutdown checkpoint for a directory about to be removed."""
        self.port = 0
        self.started = False
        self.start_error = ""

    def __enter__(self) -> PrivateServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        if self.owner.switch:  # the server, run as the owner, makes its socket there
            shutil.chown(self.sock, self.owner.uid, self.owner.gid)
        self.port = pick_free_port()
        settings = {
            "port": str(self.port),
            "listen_addresses": "",
            "unix_socket_directories": str(self.sock),
            "archive_mode": "off",
            "autovacuum": "off",
            **self.settings,
        }
        opts = " ".join(f"-c {k}={v}" for k, v in settings.items())
        done = run_as(
            self.owner,
            [self.install.tool("pg_ctl"), "-D", self.pgdata, "-l", self.log, "-w", "-t", str(START_TIMEOUT), "-o",
             opts, "start"],
            env=self.install.env(),
            timeout=START_TIMEOUT + 30,
        )  # fmt: skip
        if done.returncode != 0:
            complaint = last_complaint(self.log) if self.log.exists() else ""
            self.start_error = complaint or done.stderr.strip() or "pg_ctl start failed"
            return
        self.started = True
        if self.user is None:
            self.user = superuser_of(self.pgdata)

    def stop(self) -> None:
        if self.started:
            run_as(
                self.owner,
                [self.install.tool("pg_ctl"), "-D", self.pgdata, "-m", self.stop_mode, "-w", "stop"],
                env=self.install.env(),
                timeout=START_TIMEOUT,
            )
            self.started = False
        shutil.rmtree(self.sock, ignore_errors=True)

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.sock} port={self.port} user={self.user} dbname={database}"

    def client_args(self) -> list[str]:
        """Connection options for the client programs (pg_dump, pg_amcheck…)."""
        return ["-h", str(self.sock), "-p", str(self.port), "-U", str(self.user)]

    def log_tail(self) -> str:
        return last_complaint(self.log) if self.log.exists() else ""
