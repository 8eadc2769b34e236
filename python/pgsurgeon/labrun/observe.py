"""What the server does with a damaged table: a full read, count(*), pg_dump and pg_amcheck, each captured
as it happened (rows compared with the ground truth, errors, crashed backends)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgsurgeon import db
from pgsurgeon.lab import LabCluster

# A read of a damaged table may hang (a btree sibling loop); the lab moves on after this.
STATEMENT_TIMEOUT = "15s"


@dataclass
class Read:
    """One query's outcome against the ground truth."""

    error: str | None = None
    crashed: bool = False
    timed_out: bool = False
    rows: int | None = None
    missing: int = 0
    wrong: int = 0
    extra: int = 0
    seconds: float = 0.0

    @property
    def silent_loss(self) -> bool:
        return self.error is None and not self.crashed and (self.missing > 0 or self.wrong > 0 or self.extra > 0)

    def text(self) -> str:
        if self.crashed:
            return "backend crashed (server restarted)"
        if self.timed_out:
            return "hung (statement timeout)"
        if self.error:
            text = self.error.split(" of relation ")[0] if self.error.startswith("invalid page") else self.error
            return f"ERROR: {text}"
        if self.silent_loss:
            parts = [
                f"{n} {what}"
                for n, what in ((self.missing, "missing"), (self.wrong, "wrong"), (self.extra, "extra"))
                if n
            ]
            return "no error, " + ", ".join(parts)
        return "ok"


@dataclass
class Tool:
    code: int
    first_error: str | None
    lines: int = 0
    seconds: float = 0.0
    output: list[str] = field(default_factory=list)
    """The tool's output lines (the first ones), for the report's full messages."""

    def text(self) -> str:
        if self.code == 0:
            return "ok"
        return self.first_error or f"exit {self.code}"


@dataclass
class Observation:
    select: Read
    count: Read
    pg_dump: Tool
    amcheck: Tool
    notes: list[str] = field(default_factory=list)


def wait_ready(cluster: LabCluster, timeout: float = 60.0) -> None:
    """Wait until the server accepts connections again (after a crash it runs recovery first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with cluster.connect() as conn:
                conn.execute("SELECT 1")
            return
        except (db.Error, db.ConnectError):
            time.sleep(0.3)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _guarded(cluster: LabCluster, out: Read, query: Callable[[], None]) -> Read:
    """Run ``query``, recording into ``out`` how it ended: rows, an ERROR, a hang, or a crashed backend."""
    started = time.monotonic()
    try:
        query()
    except db.QueryCanceled:
        out.timed_out = True
    except db.OperationalError as exc:  # the connection died under us: the backend crashed
        out.crashed = True
        out.error = _first_line(exc)
        wait_ready(cluster)
    except db.Error as exc:
        out.error = _first_line(exc)
    except db.ConnectError as exc:  # the previous step left the server in crash recovery
        out.crashed = True
        out.error = exc.message
        wait_ready(cluster)
    out.seconds = time.monotonic() - started
    return out


def read_rows(cluster: LabCluster, table: str, truth: dict[int, str]) -> Read:
    """Every row by sequential scan, compared with the ground truth (id -> md5 of the row's text)."""
    out = Read()

    def query() -> None:
        with cluster.connect() as conn:
            conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            conn.execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
            sql = db.sql.SQL("SELECT id, md5(t::text) FROM {} t").format(db.sql.Identifier(table))
            seen: dict[int, str] = {}
            dup = 0
            for key, digest in conn.execute(sql):
                if key in seen:
                    dup += 1
                seen[key] = digest
            out.rows = len(seen) + dup
            out.missing = sum(1 for k in truth if k not in seen)
            out.wrong = sum(1 for k, d in seen.items() if k in truth and truth[k] != d)
            out.extra = dup + sum(1 for k in seen if k not in truth)

    return _guarded(cluster, out, query)


def count_rows(cluster: LabCluster, table: str, expected: int) -> Read:
    out = Read()

    def query() -> None:
        with cluster.connect() as conn:
            conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            row = conn.execute(db.sql.SQL("SELECT count(*) FROM {}").format(db.sql.Identifier(table))).fetchone()
            out.rows = int(row[0]) if row else 0
            out.missing = max(0, expected - out.rows)
            out.extra = max(0, out.rows - expected)

    return _guarded(cluster, out, query)


def run_tool(cluster: LabCluster, *args: str) -> Tool:
    started = time.monotonic()
    result = cluster.run_tool(*args, check=False, timeout=120)
    lines = [ln for ln in (result.stdout + result.stderr).splitlines() if ln.strip()]
    # The server's own words where the tool quotes them ("... ERROR:  invalid page in block 3 ..."), else the
    # tool's first error line, else its first line.
    server = [ln.split("ERROR:", 1)[1].strip() for ln in lines if "ERROR:" in ln]
    errors = [ln for ln in lines if "error" in ln.lower() or "corrupt" in ln.lower() or "invalid" in ln.lower()]
    first = server[0] if server else errors[0] if errors else (lines[0] if lines else None)
    if first is not None:
        first = first.removeprefix("pg_dump: error: ").removeprefix("pg_amcheck: error: ").strip()
        first = first.split(" of relation ")[0] if first.startswith("invalid page") else first
    return Tool(
        result.returncode, first if result.returncode else None, len(lines), time.monotonic() - started, lines[:40]
    )


def observe(cluster: LabCluster, table: str, truth: dict[int, str]) -> Observation:
    select = read_rows(cluster, table, truth)
    count = count_rows(cluster, table, len(truth))
    dump = run_tool(cluster, "pg_dump", "-d", "postgres", "-t", f"public.{table}", "-f", "/dev/null")
    wait_ready(cluster)
    amcheck = run_tool(cluster, "pg_amcheck", "-d", "postgres", "-t", f"public.{table}", "--heapallindexed")
    wait_ready(cluster)
    return Observation(select, count, dump, amcheck)


def summary(obs: Observation) -> dict[str, Any]:
    return {
        "select": obs.select.text(),
        "count": obs.count.text(),
        "pg_dump": obs.pg_dump.text(),
        "pg_amcheck": obs.amcheck.text(),
    }
