"""One pg_dump per table, in parallel, past failures: the advice for a damaged database (dump table by table so
one bad table does not stop the others), done carefully.

A table whose pages crash the backend takes every other session down with it (the postmaster restarts all of
them), so the dumps running beside it fail too. Those are retried, one at a time, once the server is back: a
victim then succeeds, the culprit fails again and is reported with its log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.paths import safe_name

# Phrases of pg_dump/libpq when the connection died rather than the dump failing on its own.
_CONNECTION_LOST = re.compile(
    r"server closed the connection unexpectedly|terminating connection because of crash|"
    r"could not receive data from server|no connection to the server|connection to server .* failed|"
    r"the database system is (in recovery mode|shutting down|starting up|not yet accepting)|"
    r"SSL SYSCALL error|server conn crashed|lost synchronization with server",
    re.IGNORECASE,
)
_FORMATS = {"custom": ("c", "dump"), "plain": ("p", "sql"), "tar": ("t", "tar")}


def pattern_for(schema: str, name: str) -> str:
    """A pg_dump --table pattern matching exactly this table (quoted parts are taken literally)."""
    return db.quote_ident(schema, name)


@dataclass
class TableDump:
    schema: str
    name: str
    size: int
    file: Path
    log: Path
    status: str = "pending"
    attempts: int = 0
    seconds: float = 0.0
    bytes: int = 0
    error: str = ""
    connection_lost: bool = False

    @property
    def display(self) -> str:
        return f"{self.schema}.{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.display,
            "status": self.status,
            "file": str(self.file) if self.status == "ok" else None,
            "log": str(self.log),
            "bytes": self.bytes,
            "table_size": self.size,
            "seconds": round(self.seconds, 3),
            "attempts": self.attempts,
            "error": self.error or None,
        }


@dataclass
class DumpOptions:
    dsn: str
    out: Path
    jobs: int = 2
    pg_dump: Path | None = None
    fmt: str = "custom"
    schema: bool = True
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    retries: int = 2
    timeout_s: float = 0


def _major_of(pg_dump: Path) -> int | None:
    env = dict(os.environ)
    lib = pg_dump.resolve().parent.parent / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    try:
        out = subprocess.run([str(pg_dump), "--version"], capture_output=True, text=True, timeout=30, env=env).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\(PostgreSQL\)\s+(\d+)", out)
    return int(m.group(1)) if m else None


def find_pg_dump(server_major: int, explicit: Path | None) -> Path:
    """A pg_dump at least as new as the server (the same major preferred)."""
    if explicit is not None:
        path = explicit / "pg_dump" if explicit.is_dir() else explicit
        if not path.is_file():
            raise PgSurgeonError(f"no pg_dump at {path}", hint="pass --pg-bin DIR of a PostgreSQL installation")
        return path
    candidates: list[Path] = []
    which = shutil.which("pg_dump")
    if which:
        candidates.append(Path(which))
    candidates.extend(sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"), reverse=True))
    try:
        from pgsurgeon.pgbin import find_install

        candidates.append(find_install(None).bin_dir / "pg_dump")
    except Exception:  # no embedded PostgreSQL: fine
        pass
    best: tuple[int, Path] | None = None
    for c in candidates:
        major = _major_of(c) if c.is_file() else None
        if major is None or major < server_major:
            continue
        if (
            best is None
            or (major == server_major and best[0] != server_major)
            or (major < best[0] and best[0] != server_major)
        ):
            best = (major, c)
    if best is None:
        raise PgSurgeonError(
            f"no pg_dump of PostgreSQL {server_major} or newer found",
            hint="install the client package of your server's version, or pass --pg-bin DIR",
        )
    return best[1]


def _wait_for_server(dsn: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with db.connect(dsn) as conn:
                conn.execute("SELECT 1")
            return
        except (db.ConnectError, db.OperationalError):
            if time.monotonic() > deadline:
                raise PgSurgeonError(
                    "the server did not come back after a crash", hint="check the server log; rerun dump-tables"
                ) from None
            time.sleep(0.5)


def _selected(schema: str, name: str, include: list[str], exclude: list[str]) -> bool:
    from fnmatch import fnmatchcase

    full = f"{schema}.{name}"

    def hit(pats: list[str]) -> bool:
        return any(fnmatchcase(full, p) or fnmatchcase(name, p) for p in pats)

    return (not include or hit(include)) and not hit(exclude)


def split_password(dsn: str) -> tuple[str, str | None]:
    """The connection string without its password, and the password. A command line is readable by every local
    user (``ps``, /proc/PID/cmdline); a process's environment only by its owner and root."""
    from psycopg.conninfo import make_conninfo

    params = db.parse_dsn(dsn)
    password = params.pop("password", None)
    return make_conninfo("", **params), password


class Dumper:
    def __init__(self, opts: DumpOptions) -> None:
        self.opts = opts
        self.lock = threading.Lock()
        self.conninfo, self.password = split_password(opts.dsn)
        """What pg_dump gets on its command line, and the password it gets through PGPASSWORD."""

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("PGAPPNAME", "pgsurgeon dump-tables")
        if self.password is not None:
            env["PGPASSWORD"] = self.password
        # installations that are not on the library path (the embedded PostgreSQL) keep their libraries in ../lib
        lib = self.pg_dump.resolve().parent.parent / "lib"
        if lib.is_dir():
            env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
        return env

    def _run_dump(self, td: TableDump) -> None:
        o = self.opts
        flag, _ = _FORMATS[o.fmt]
        tmp = td.file.with_name(td.file.name + ".partial")
        cmd = [
            str(self.pg_dump),
            f"--dbname={self.conninfo}",
            f"--format={flag}",
            f"--file={tmp}",
            f"--table={pattern_for(td.schema, td.name)}",
            "--strict-names",
            "--no-password",
        ]
        td.attempts += 1
        start = time.monotonic()
        with td.log.open("a", encoding="utf-8") as log:
            log.write(f"--- attempt {td.attempts} at {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(cmd)}\n")
            log.flush()
            try:
                proc = subprocess.run(
                    cmd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=self._env(),
                    timeout=o.timeout_s or None,
                    check=False,
                )
                stderr, code = proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as exc:
                stderr = (exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or "") + "\ntimed out"
                code = -1
            log.write(stderr)
            log.write(f"--- exit status {code}\n")
        td.seconds += time.monotonic() - start
        if code == 0:
            os.replace(tmp, td.file)
            td.status = "ok"
            td.bytes = td.file.stat().st_size
            td.error = ""
            td.connection_lost = False
        else:
            tmp.unlink(missing_ok=True)
            td.status = "failed"
            lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
            errs = [ln for ln in lines if "error" in ln.lower()] or lines
            td.error = errs[0].strip() if errs else f"pg_dump exited with status {code}"
            if len(errs) > 1 and "connection" in td.error.lower():
                td.error = " / ".join(e.strip() for e in errs[:2])
            td.connection_lost = bool(_CONNECTION_LOST.search(stderr)) or code < 0

    def run(self, on_event: Any = None) -> dict[str, Any]:
        o = self.opts
        started = time.time()
        with db.connect(o.dsn) as conn:
            major = catalog.server_facts(conn).version_num // 10000
            rows = catalog.user_tables(conn)
            dbname = conn.info.dbname
        self.pg_dump = find_pg_dump(major, o.pg_dump)
        o.out.mkdir(parents=True, exist_ok=True)
        logs = o.out / "logs"
        logs.mkdir(exist_ok=True)
        _, ext = _FORMATS[o.fmt]
        tables: list[TableDump] = []
        used: set[str] = set()
        for schema, name, _kind, size in rows:
            if not _selected(schema, name, o.include, o.exclude):
                continue
            base = safe_name(f"{schema}.{name}")
            while base in used:
                base += "_"
            used.add(base)
            tables.append(TableDump(schema, name, int(size), o.out / f"{base}.{ext}", logs / f"{base}.log"))
        schema_result: dict[str, Any] | None = None
        if o.schema:
            schema_result = self._dump_schema(dbname)

        def one(td: TableDump) -> None:
            self._run_dump(td)
            if on_event is not None:
                on_event(td)

        with ThreadPoolExecutor(max_workers=max(1, o.jobs)) as pool:
            list(pool.map(one, tables))
        # Dumps that lost their connection: one at a time, after the server is back.
        for _ in range(o.retries):
            again = [td for td in tables if td.status == "failed" and td.connection_lost]
            if not again:
                break
            for td in again:
                _wait_for_server(o.dsn)
                one(td)
        ok = [td for td in tables if td.status == "ok"]
        failed = [td for td in tables if td.status != "ok"]
        summary = {
            "database": dbname,
            "pg_dump": str(self.pg_dump),
            "out": str(o.out),
            "schema": schema_result,
            "tables": [td.to_json() for td in tables],
            "saved": len(ok),
            "failed": len(failed),
            "bytes": sum(td.bytes for td in ok),
            "seconds": round(time.time() - started, 3),
        }
        (o.out / "summary.json").write_text(__import__("json").dumps(summary, indent=1))
        return summary

    def _dump_schema(self, dbname: str) -> dict[str, Any]:
        o = self.opts
        file = o.out / "schema.sql"
        log = o.out / "logs" / "schema.log"
        cmd = [str(self.pg_dump), f"--dbname={self.conninfo}", "--schema-only", f"--file={file}", "--no-password"]
        proc = subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self._env(), check=False
        )
        log.write_text(proc.stderr + f"--- exit status {proc.returncode}\n")
        return {"file": str(file), "status": "ok" if proc.returncode == 0 else "failed", "log": str(log)}


def render_text(summary: dict[str, Any]) -> str:
    lines = [
        f"dump-tables of {summary['database']} -> {summary['out']} ({summary['pg_dump']})",
        f"  saved {summary['saved']} tables ({summary['bytes'] / 1e6:.1f} MB), failed {summary['failed']}, "
        f"in {summary['seconds']:.1f} s",
    ]
    if summary.get("schema"):
        lines.append(f"  schema: {summary['schema']['status']} ({summary['schema']['file']})")
    for t in summary["tables"]:
        if t["status"] != "ok":
            lines.append(f"  FAILED {t['table']}: {t['error']} (log {t['log']})")
    if summary["failed"]:
        lines.append("  hint: save the rows of a failed table with 'pgsurgeon salvage --dsn … --table T --out DIR'")
    return "\n".join(lines) + "\n"
