"""After a rescue: does the cluster hold up? Read the files first (every page checked, every table's rows counted as
the files hold them), then start the server on a private socket as the data directory's owner, count the rows
again through SQL, run amcheck over every table and index (pg_amcheck, which installs the extension where it is
missing) and dump everything (pg_dumpall to nowhere), and stop it.

Starting the server writes to the data directory (a checkpoint at least): run it on the rescued copy, or on the
original once you mean to run it again.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.health import HealthRequest, run_health
from pgsurgeon.lab.cluster import pick_free_port
from pgsurgeon.pgbin import PgInstall, install_of_major, run_as, user_owning
from pgsurgeon.rescue.plan import superuser_of

if TYPE_CHECKING:
    from pgsurgeon.findings import Finding

START_TIMEOUT = 300


@dataclass(frozen=True)
class VerifyRequest:
    pgdata: Path
    pg_bin: Path | None = None
    amcheck: bool = True


@dataclass
class TableCount:
    database: str
    table: str
    files: int
    """Rows the files hold (a new snapshot's view, judged from hint bits and pg_xact)."""
    undecided: int
    """Of those, rows whose fate the files could not settle."""
    server: int | None = None


@dataclass
class Verification:
    findings: list[Finding]
    counts: list[TableCount]
    started: bool = False
    start_error: str = ""
    amcheck: str | None = None
    """None: passed (or not run); otherwise what pg_amcheck said."""
    amcheck_ran: bool = False
    dump: str | None = None
    """None: pg_dumpall passed; otherwise its error."""
    notes: list[str] = field(default_factory=list)

    @property
    def mismatches(self) -> list[TableCount]:
        return [c for c in self.counts if c.server is not None and c.server != c.files]

    @property
    def ok(self) -> bool:
        errors = [f for f in self.findings if f["severity"] == "error"]
        return self.started and not errors and not self.mismatches and self.amcheck is None and self.dump is None


def verify(req: VerifyRequest) -> Verification:
    pgdata = req.pgdata.absolute()
    health = run_health(HealthRequest(pgdata, checks=True))
    counts = [
        TableCount(f.database, f.name, f.counted["heap"]["tuple_count"], f.counted["heap"]["undecided"])
        for f in health.relations
        if "heap" in f.counted and f.relation is not None and f.relation.relkind in ("r", "m")
    ]
    out = Verification(health.findings, counts)
    major = int(health.scan.control["major_version"])
    install = install_of_major(major, req.pg_bin, program="pg_ctl")
    if install is None:
        raise PgSurgeonError(
            f"no postgresql {major} installation found to start the cluster with",
            hint="pass its bin directory with --pg-bin",
        )
    with _server(pgdata, install, out) as dsn:
        if dsn is not None:
            _count(dsn, out)
            _amcheck(dsn, install, req, out)
            _dump(dsn, install, out)
    return out


class _server:
    """The cluster started on a private socket (no TCP) as the data directory's owner, stopped on leaving."""

    def __init__(self, pgdata: Path, install: PgInstall, out: Verification) -> None:
        self.pgdata, self.install, self.out = pgdata, install, out
        self.owner = user_owning(pgdata)
        self.sock = Path(tempfile.mkdtemp(prefix="pgs-verify-", dir="/tmp"))
        self.log = self.sock / "server.log"

    def __enter__(self) -> str | None:
        if self.owner.switch:  # the server, run as the owner, makes its socket there
            shutil.chown(self.sock, self.owner.uid, self.owner.gid)
        port = pick_free_port()
        opts = (
            f"-c port={port} -c listen_addresses= -c unix_socket_directories={self.sock} -c archive_mode=off "
            "-c autovacuum=off"
        )
        pg_ctl = self.install.tool("pg_ctl")
        done = run_as(
            self.owner,
            [pg_ctl, "-D", self.pgdata, "-l", self.log, "-w", "-t", str(START_TIMEOUT), "-o", opts, "start"],
            env=self.install.env(),
            timeout=START_TIMEOUT + 30,
        )
        if done.returncode != 0:
            self.out.start_error = _last_complaint(self.log) or done.stderr.strip() or "pg_ctl start failed"
            return None
        self.out.started = True
        user = superuser_of(self.pgdata)
        return f"host={self.sock} port={port} user={user} dbname=postgres"

    def __exit__(self, *exc: object) -> None:
        if self.out.started:
            run_as(
                self.owner,
                [self.install.tool("pg_ctl"), "-D", self.pgdata, "-m", "fast", "-w", "stop"],
                env=self.install.env(),
                timeout=START_TIMEOUT,
            )
        shutil.rmtree(self.sock, ignore_errors=True)


def _last_complaint(log: Path) -> str:
    from pgsurgeon.journal.server import last_complaint

    return last_complaint(log) if log.exists() else ""


def _count(dsn: str, out: Verification) -> None:
    import psycopg
    from psycopg import sql

    by_db: dict[str, list[TableCount]] = {}
    for c in out.counts:
        by_db.setdefault(c.database, []).append(c)
    for database, tables in by_db.items():
        with db.connect(db.dsn_for_database(dsn, database)) as conn:
            for c in tables:
                schema, _, name = c.table.partition(".")
                query = sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(name))
                try:
                    row = conn.execute(query).fetchone()
                except psycopg.Error as exc:
                    out.notes.append(f"{database}: {c.table}: {str(exc).strip().splitlines()[0]}")
                    continue
                c.server = int(row[0]) if row is not None else None


def _amcheck(dsn: str, install: PgInstall, req: VerifyRequest, out: Verification) -> None:
    if not req.amcheck:
        return
    host, port, user = (dict(w.split("=", 1) for w in dsn.split()).get(k) for k in ("host", "port", "user"))
    done = subprocess.run(
        [
            str(install.tool("pg_amcheck")),
            "-h",
            str(host),
            "-p",
            str(port),
            "-U",
            str(user),
            "--all",
            "--install-missing",
            "--heapallindexed",
            "--no-strict-names",
        ],
        capture_output=True,
        text=True,
        env=install.env(),
        check=False,
    )
    out.amcheck_ran = True
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        out.amcheck = "; ".join(lines[:3]) or f"pg_amcheck exited {done.returncode}"


def _dump(dsn: str, install: PgInstall, out: Verification) -> None:
    host, port, user = (dict(w.split("=", 1) for w in dsn.split()).get(k) for k in ("host", "port", "user"))
    done = subprocess.run(
        [str(install.tool("pg_dumpall")), "-h", str(host), "-p", str(port), "-U", str(user)],
        stdout=subprocess.DEVNULL,  # the dump itself is not kept: that it completes is the check
        stderr=subprocess.PIPE,
        text=True,
        env=install.env(),
        check=False,
    )
    if done.returncode != 0:
        out.dump = (done.stderr.strip().splitlines() or [f"pg_dumpall exited {done.returncode}"])[-1]
