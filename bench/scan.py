"""Benchmark: `pgsurgeon scan` against `pg_checksums --check` and `pg_amcheck` on the same cluster, in one run.

Builds (once, then reuses) a PostgreSQL 18 lab cluster with data checksums (pgbench tables: scale 100, about 1.6 GB;
--big: scale 800, ≥ 10 GB), then times each tool over warm page cache, takes the median of --repeat runs, and prints
throughput, ratios and peak RSS. Equal work: pg_amcheck and pgsurgeon scan get the same -j, one run per job count.
--check exits 1 when pgsurgeon scan is slower than pg_amcheck (heap + btree) at the same -j or its peak RSS passes
200 MB.

    python bench/scan.py [--scale 100 | --big] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench] [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pgsurgeon.lab import LabCluster
from pgsurgeon.pgbin import server_user

NAME = "bench18"  # scale 100; other scales get their own cluster (bench18s800)


@dataclass
class Timing:
    tool: str
    seconds: float
    max_rss_mb: float
    exit_code: int


def run_timed(cmd: list[str], *, as_server: LabCluster | None = None) -> Timing:
    """Run ``cmd``, returning wall time and the child's peak RSS (from wait4)."""
    env = as_server.tool_env() if as_server else dict(os.environ)
    if as_server is not None:
        user = server_user()
        started = time.perf_counter()
        ids = {"user": user.uid, "group": user.gid} if user.switch else {}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/", **ids)
    else:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    return Timing(Path(cmd[0]).name, elapsed, usage.ru_maxrss / 1024, code)


def build(lab_dir: Path, scale: int) -> LabCluster:
    lab_dir.mkdir(parents=True, exist_ok=True)
    lab_dir.chmod(0o755)
    name = NAME if scale == 100 else f"{NAME}s{scale}"
    try:
        cluster = LabCluster.load(name, base_dir=lab_dir)
    except Exception:
        cluster = LabCluster.create(
            name, base_dir=lab_dir, checksums=True, extra_conf={"max_wal_size": "4GB", "checkpoint_timeout": "30min"}
        )
    if not cluster.is_running():
        cluster.start()
    size = int(cluster.connect().execute("SELECT pg_database_size('postgres')").fetchone()[0])  # type: ignore[index]
    if size < scale * 15e6:
        print(f"building a pgbench scale {scale} cluster (once) ...", file=sys.stderr)
        cluster.run_tool("pgbench", "-i", "-q", "-s", str(scale), "-d", "postgres", timeout=3600)
        with cluster.connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
            conn.execute("VACUUM ANALYZE")
            conn.execute("CHECKPOINT")
    return cluster


def data_bytes(pgdata: Path) -> int:
    total = 0
    for sub in ("base", "global"):
        for root, _dirs, files in os.walk(pgdata / sub):
            total += sum((Path(root) / f).stat().st_size for f in files)
    return total


def median(timings: list[Timing]) -> Timing:
    best = sorted(timings, key=lambda t: t.seconds)[len(timings) // 2]
    return Timing(
        best.tool, statistics.median(t.seconds for t in timings), max(t.max_rss_mb for t in timings), best.exit_code
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--big", action="store_true", help="pgbench scale 800 (>= 10 GB)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--remove", action="store_true", help="remove the cluster afterwards")
    args = ap.parse_args()

    cluster = build(args.lab_dir, 800 if args.big else args.scale)
    pgdata = cluster.pgdata
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    nbytes = data_bytes(pgdata)
    results: dict[str, Timing] = {}

    # pg_amcheck needs the server; heap + btree is its default, then with --heapallindexed. Equal work: it gets the
    # same -j as pgsurgeon scan, one run per job count.
    amcheck = str(cluster.install.tool("pg_amcheck"))
    job_counts = sorted({1, os.cpu_count() or 1})
    for jobs in job_counts:
        for label, extra in (("pg_amcheck (heap+btree)", []), ("pg_amcheck --heapallindexed", ["--heapallindexed"])):
            cmd = [amcheck, "-h", str(cluster.run_dir), "-p", str(cluster.port), "-U", "postgres", "-d", "postgres"]
            cmd += ["-j", str(jobs), *extra]
            run_timed(cmd, as_server=cluster)  # warm
            results[f"{label} -j {jobs}"] = median([run_timed(cmd, as_server=cluster) for _ in range(args.repeat)])

    cluster.stop()
    checksums = [str(cluster.install.tool("pg_checksums")), "--check", "-D", str(pgdata)]
    run_timed(checksums, as_server=cluster)
    results["pg_checksums --check"] = median([run_timed(checksums, as_server=cluster) for _ in range(args.repeat)])
    for jobs in job_counts:
        scan = [pgsurgeon, "scan", str(pgdata), "--format", "json", "-j", str(jobs)]
        run_timed(scan)
        results[f"pgsurgeon scan -j {jobs}"] = median([run_timed(scan) for _ in range(args.repeat)])

    base = results["pg_checksums --check"].seconds
    print(
        f"cluster: {pgdata} ({nbytes / 1e9:.2f} GB in base/ and global/), PostgreSQL {cluster.install.short_version},"
        f" data checksums on, {os.cpu_count()} cores, warm page cache, median of {args.repeat}"
    )
    print(f"{'tool':34} {'seconds':>8} {'MB/s':>8} {'vs pg_checksums':>16} {'peak RSS MB':>12} {'exit':>5}")
    for label, t in results.items():
        print(
            f"{label:34} {t.seconds:8.2f} {nbytes / 1e6 / t.seconds:8.0f} {base / t.seconds:15.2f}x"
            f" {t.max_rss_mb:12.1f} {t.exit_code:5d}"
        )
    missed = False
    for jobs in job_counts:
        ours = results[f"pgsurgeon scan -j {jobs}"]
        theirs = results[f"pg_amcheck (heap+btree) -j {jobs}"].seconds
        print(f"-j {jobs}: pgsurgeon scan vs pg_amcheck (heap+btree): {theirs / ours.seconds:.1f}x faster")
        missed = missed or ours.seconds > theirs or ours.max_rss_mb > 200
    if args.remove:
        cluster.destroy()
    else:
        cluster.start()
        cluster.stop()
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
