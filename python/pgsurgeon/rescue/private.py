"""A cluster started on a private socket: no TCP, autovacuum off, run as the data directory's owner, and stopped on
leaving, also on errors and Ctrl-C. ``verify`` starts a rescued cluster this way; ``unload`` its throwaway copy of
the catalog."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from pgsurgeon.journal.server import last_complaint
from pgsurgeon.lab.cluster import pick_free_port
from pgsurgeon.pgbin import PgInstall, user_owning
from pgsurgeon.rescue.plan import superuser_of

START_TIMEOUT = 300
POLL = 0.005
"""Seconds between looks at postmaster.pid while the server starts (pg_ctl's 0.1 s was a tenth of the schema step)."""
# postmaster.pid's status line and its values (src/include/utils/pidfile.h)
LOCK_FILE_LINE_PM_STATUS = 8
PM_STATUS_READY = "ready"
PM_STATUS_STANDBY = "standby"
STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}
"""pg_ctl stop -m's signals (src/bin/pg_ctl/pg_ctl.c, set_mode)."""


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
        self._proc: subprocess.Popen[bytes] | None = None
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
        # postgres itself, not pg_ctl start -w: pg_ctl looks at postmaster.pid every 100 ms and its stop as often,
        # 0.1-0.2 s of a schema step of about a second (docs/benchmarks.md); its own session, as pg_ctl gives it,
        # so a Ctrl-C reaches us and not the server
        argv = [str(self.install.tool("postgres")), "-D", str(self.pgdata.absolute())]  # it runs in /
        for k, v in settings.items():
            argv += ["-c", f"{k}={v}"]
        env = self.install.env()
        if self.owner.switch:
            env.update({"USER": self.owner.name, "LOGNAME": self.owner.name, "HOME": "/"})
        with self.log.open("ab") as log:
            try:
                self._proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd="/",
                    start_new_session=True,
                    user=self.owner.uid if self.owner.switch else None,
                    group=self.owner.gid if self.owner.switch else None,
                    extra_groups=[] if self.owner.switch else None,
                )  # fmt: skip
            except OSError as exc:
                self.start_error = f"cannot run postgres: {exc.strerror or exc}"
                return
        self.start_error = self._wait_ready(self._proc)
        if self.start_error:
            self._end(signal.SIGQUIT)
            return
        self.started = True
        if self.user is None:
            self.user = superuser_of(self.pgdata)

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> str:
        """Why the server did not start, or nothing once postmaster.pid says it accepts connections (its status
        line, as pg_ctl reads it: src/bin/pg_ctl/pg_ctl.c, wait_for_postmaster_start)."""
        deadline = time.monotonic() + START_TIMEOUT
        pidfile = self.pgdata / "postmaster.pid"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                complaint = last_complaint(self.log)
                return complaint if complaint.startswith(("PANIC", "FATAL")) else f"postgres exited ({proc.returncode})"
            try:
                lines = pidfile.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            if (
                len(lines) >= LOCK_FILE_LINE_PM_STATUS
                and lines[0].strip() == str(proc.pid)
                and lines[LOCK_FILE_LINE_PM_STATUS - 1].strip() in (PM_STATUS_READY, PM_STATUS_STANDBY)
            ):
                return ""
            time.sleep(POLL)
        complaint = last_complaint(self.log)
        return complaint if complaint.startswith(("PANIC", "FATAL")) else f"not ready after {START_TIMEOUT} s"

    def stop(self) -> None:
        if self._proc is not None:
            self._end(STOP_SIGNALS[self.stop_mode])
        self.started = False
        shutil.rmtree(self.sock, ignore_errors=True)

    def _end(self, sig: signal.Signals) -> None:
        """Signal the postmaster as pg_ctl stop -m does, and wait until it has exited (it removes its
        postmaster.pid before); stopped ``immediate`` when it will not, then killed."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for signum, wait in ((sig, START_TIMEOUT), (signal.SIGQUIT, 60), (signal.SIGKILL, None)):
            if proc.poll() is not None:
                return
            proc.send_signal(signum)
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue

    @property
    def pid(self) -> int | None:
        """The postmaster's process ID while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.sock} port={self.port} user={self.user} dbname={database}"

    def client_args(self) -> list[str]:
        """Connection options for the client programs (pg_dump, pg_amcheck…)."""
        return ["-h", str(self.sock), "-p", str(self.port), "-U", str(self.user)]

    def log_tail(self) -> str:
        return last_complaint(self.log) if self.log.exists() else ""
