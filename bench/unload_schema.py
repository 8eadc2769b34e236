"""Benchmark: unload's schema step (a copy of the catalog started and read by pg_dump) against `pg_dump
--schema-only` of the running server, side by side, on the regression-sized test database: the every-object
database twice and a database per PostgreSQL regression file (tests/data), PostgreSQL 18, checksums on.

The running server's side is `pg_dumpall --globals-only` plus one `pg_dump --schema-only` per database, summed. The
cluster is then stopped and unloaded; the schema step's own seconds and phases come from report.json (the step runs
beside the carving: its time is its own thread's wall time). Target (issue 34): the schema step <= 2x pg_dump
--schema-only (the median of --runs); peak RSS of the unload <= 200 MB. --check exits 1 when one is missed;
--record appends to docs/benchmarks.md. Each run prints the step's phases, wall and CPU (its thread and its
programs: pg_resetwal, the copy's server with its backends, pg_dump, pg_restore), and the load average.

    python bench/unload_schema.py [--lab-dir /var/tmp/pgsurgeon-bench] [--runs 3] [--check] [--record]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from labs import bench_cluster, run_measured, run_usage  # noqa: E402

from fix_schema import REGRESS_ERRORS, load_every_object, regress_load  # noqa: E402
from pgsurgeon.lab import LabCluster  # noqa: E402

DATABASES_SQL = "SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    ap.add_argument("--runs", type=int, default=1, help="runs, each the server's dumps then the unload (default 1)")
    args = ap.parse_args()
    cluster = bench_cluster("schema18", args.lab_dir)
    with cluster.connect() as conn:
        built = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'every'").fetchone() is not None
    if not built:
        for dbname in ("every", "every_again"):
            load_every_object(cluster, dbname)
        for name in REGRESS_ERRORS:
            regress_load(cluster, f"regress_{name}", name)
    with cluster.connect() as conn:
        dbnames = [r[0] for r in conn.execute(DATABASES_SQL).fetchall()]
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    runs = [_one_run(cluster, dbnames, pgsurgeon) for _ in range(args.runs)]
    ratios = sorted(r.ratio for r in runs)
    lines = [line for r in runs for line in r.lines]
    if args.runs > 1:
        lines.append(
            f"{args.runs} runs: schema step / server {', '.join(f'{x:.2f}x' for x in ratios)} "
            f"(median {statistics.median(ratios):.2f}x)"
        )
        print(lines[-1])
    if args.record:
        stamp = datetime.date.today().isoformat()
        with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
            fh.write(
                f"\n### unload's schema step, {stamp}: `python bench/unload_schema.py --runs {args.runs}`\n\n```\n"
            )
            fh.write("\n".join(lines) + "\n```\n")
    missed = statistics.median(ratios) > 2.0 or any(r.missed for r in runs)
    return 1 if args.check and missed else 0


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _server_cpu(cluster: LabCluster) -> float:
    """CPU seconds of the running server's postmaster and the backends it has reaped (/proc/PID/stat: utime, stime,
    cutime, cstime in clock ticks)."""
    pid = cluster.postmaster_pid()
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@dataclass
class _Run:
    lines: list[str]
    ratio: float
    missed: bool
    """Peak RSS over 200 MB, or no pg_dump schema."""


def _one_run(cluster: LabCluster, dbnames: list[str], pgsurgeon: str) -> _Run:
    """The server's pg_dump --schema-only of every database, then the stopped cluster unloaded."""
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-schema-", dir="/var/tmp"))
    try:
        load_before = os.getloadavg()[0]
        server_cpu = _server_cpu(cluster)
        started = time.perf_counter()
        # to files, as unload writes its own (pg_dumpall fsyncs what it writes, and /dev/null cannot be)
        pg_dumpall, pg_dump = str(cluster.install.tool("pg_dumpall")), str(cluster.install.tool("pg_dump"))
        cmds = [[pg_dumpall, "-d", cluster.dsn(), "--globals-only", "-f", str(work / "globals.sql")]]
        cmds += [[pg_dump, "-d", cluster.dsn(db), "--schema-only", "-f", str(work / f"{db}.sql")] for db in dbnames]
        dump_cpu = sum(_cpu(run_usage(cmd)[1]) for cmd in cmds)
        dump_s = time.perf_counter() - started
        dump_cpu += _server_cpu(cluster) - server_cpu
        cluster.stop()
        try:
            unload_s, rss, _, _ = run_measured([pgsurgeon, "unload", str(cluster.pgdata), "--out", str(work / "out")])
        finally:
            cluster.start()
        schema = json.loads((work / "out" / "report.json").read_text())["schema"]
        cpu = schema.get("phases_cpu", {})
        step_s, step_cpu = float(schema["seconds"]), sum(cpu.values())
        ratio = step_s / dump_s
        lines = [
            f"{len(dbnames)} databases, {sum(sum(k.values()) for k in schema['objects'].values())} objects in "
            f"pg_dump's archives; PostgreSQL "
            f"{cluster.install.short_version}, checksums on, warm page cache",
            f"server   pg_dumpall --globals-only + pg_dump --schema-only per database   {dump_s:6.2f} s  "
            f"(CPU {dump_cpu:.2f} s, its backends' included)",
            f"unload   its schema step (copy, pg_resetwal, check, start, pg_dump -Fc, split) {step_s:6.2f} s  "
            f"({ratio:.2f}x; CPU {step_cpu:.2f} s, {step_cpu / dump_cpu:.2f}x), the whole unload {unload_s:.2f} s, "
            f"peak RSS {rss:.0f} MB",
            "  phases (wall, CPU of the step's thread and its programs): "
            + ", ".join(f"{k} {v:.2f} s ({cpu.get(k, 0.0):.2f})" for k, v in schema.get("phases", {}).items()),
            f"  load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (two cores, shared)",
        ]
        print("\n".join(lines), flush=True)
        return _Run(lines, ratio, rss > 200 or schema.get("method") != "pg_dump")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
