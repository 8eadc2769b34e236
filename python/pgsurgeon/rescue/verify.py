"""After a rescue: does the cluster hold up? Read the files first (every page checked, every table's rows counted as
the files hold them), then start the server on a private socket as the data directory's owner, count the rows
again through SQL, run amcheck over every table and index (pg_amcheck, which installs the extension where it is
missing) and dump everything (pg_dumpall to nowhere), and stop it.

Starting the server writes to the data directory (a checkpoint at least): run it on the rescued copy, or on the
original once you mean to run it again.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.health import HealthRequest, run_health
from pgsurgeon.pgbin import PgInstall, install_of_major
from pgsurgeon.rescue.private import PrivateServer

if TYPE_CHECKING:
    from pgsurgeon.findings import Finding


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
    with PrivateServer(pgdata, install) as srv:
        out.started, out.start_error = srv.started, srv.start_error
        if srv.started:
            _count(srv.dsn(), out)
            _amcheck(srv, install, req, out)
            _dump(srv, install, out)
    return out


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


def _amcheck(srv: PrivateServer, install: PgInstall, req: VerifyRequest, out: Verification) -> None:
    if not req.amcheck:
        return
    done = subprocess.run(
        [
            str(install.tool("pg_amcheck")),
            *srv.client_args(),
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


def _dump(srv: PrivateServer, install: PgInstall, out: Verification) -> None:
    done = subprocess.run(
        [str(install.tool("pg_dumpall")), *srv.client_args()],
        stdout=subprocess.DEVNULL,  # the dump itself is not kept: that it completes is the check
        stderr=subprocess.PIPE,
        text=True,
        env=install.env(),
        check=False,
    )
    if done.returncode != 0:
        out.dump = (done.stderr.strip().splitlines() or [f"pg_dumpall exited {done.returncode}"])[-1]
