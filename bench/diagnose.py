"""Benchmark: `pgsurgeon diagnose` (whole database) against `pg_amcheck` on the same database with the same -j, in one
run: heap + btree against diagnose, `--heapallindexed` against `diagnose --heapallindexed`.

Reuses the pgbench cluster the row-engine benchmark builds (bench/labs.py; PostgreSQL 18, data checksums on): scale
100 (about 1.6 GB) by default, scale 800 (≥ 10 GB) with --big. Warm page cache: every command runs once before it is
timed. Prints times, ratios and peak RSS (wait4 of each child; Linux carries the forking Python's high-water mark
across exec, so the baselines' RSS includes ~20 MB of it). Targets (issue 14): diagnose ≤ 2x pg_amcheck heap + btree,
diagnose --heapallindexed ≤ 1x pg_amcheck --heapallindexed, peak RSS ≤ 200 MB; --check exits 1 when one is missed.

    python bench/diagnose.py [--big] [--jobs 2] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench] [--check] [--record]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from labs import pgbench_cluster, run_measured

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="pgbench scale 800 (>= 10 GB) instead of 100")
    ap.add_argument("--jobs", type=int, default=2, help="-j for both tools")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = ap.parse_args()
    scale = 800 if args.big else 100
    cluster = pgbench_cluster(args.lab_dir, scale)
    with cluster.connect() as conn:
        (dbsize,) = conn.execute("SELECT pg_database_size('postgres')").fetchone()  # type: ignore[misc]
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    amcheck = [str(cluster.install.tool("pg_amcheck")), "-h", str(cluster.run_dir), "-p", str(cluster.port)]
    amcheck += ["-U", "postgres", "-d", "postgres", "-j", str(args.jobs)]
    diagnose = [pgsurgeon, "diagnose", "--dsn", cluster.dsn(), "-j", str(args.jobs), "--format", "json"]
    runs = {
        "pg_amcheck (heap + btree)": (amcheck, cluster),
        "pgsurgeon diagnose": (diagnose, None),
        "pg_amcheck --heapallindexed": ([*amcheck, "--heapallindexed"], cluster),
        "pgsurgeon diagnose --heapallindexed": ([*diagnose, "--heapallindexed"], None),
    }
    for cmd, server in runs.values():
        run_measured(cmd, as_server=server)  # warm
    # interleaved, so a change in the machine's load hits every tool alike
    timings: dict[str, list[tuple[float, float, int, str]]] = {label: [] for label in runs}
    load_before = os.getloadavg()
    for _ in range(args.repeat):
        for label, (cmd, server) in runs.items():
            timings[label].append(run_measured(cmd, as_server=server))
    results = {
        label: (statistics.median(t[0] for t in ts), max(t[1] for t in ts), max(t[2] for t in ts))
        for label, ts in timings.items()
    }
    findings = max(
        json.loads(t[3])["summary"]["findings"] for label, ts in timings.items() if "pgsurgeon" in label for t in ts
    )
    load = os.getloadavg()
    lines = [
        f"database postgres: {dbsize / 1e9:.2f} GB (pgbench scale {scale}); "
        f"PostgreSQL {cluster.install.short_version}, "
        f"checksums on, {os.cpu_count()} cores, -j {args.jobs} for both tools, warm page cache, median of "
        f"{args.repeat}; load average (1 min) before {load_before[0]:.2f}, after {load[0]:.2f}",
        f"{'run':40} {'seconds':>8} {'peak RSS MB':>12} {'exit':>5}",
    ]
    lines += [f"{label:40} {s:8.2f} {rss:12.1f} {code:5d}" for label, (s, rss, code) in results.items()]
    plain = results["pgsurgeon diagnose"][0] / results["pg_amcheck (heap + btree)"][0]
    full = results["pgsurgeon diagnose --heapallindexed"][0] / results["pg_amcheck --heapallindexed"][0]
    rss = max(results["pgsurgeon diagnose"][1], results["pgsurgeon diagnose --heapallindexed"][1])
    lines.append(f"diagnose / pg_amcheck heap + btree: {plain:.2f}x (target <= 2.0x)")
    lines.append(f"diagnose --heapallindexed / pg_amcheck --heapallindexed: {full:.2f}x (target <= 1.0x)")
    lines.append(f"diagnose peak RSS {rss:.0f} MB (target <= 200 MB); findings on the healthy database: {findings}")
    print("\n".join(lines))
    if args.record:
        stamp = datetime.date.today().isoformat()
        cmd = f"python bench/diagnose.py{' --big' if args.big else ''} --jobs {args.jobs} --repeat {args.repeat}"
        with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
            fh.write(f"\n### diagnose, {stamp}: `{cmd}`\n\n```\n" + "\n".join(lines) + "\n```\n")
    missed = plain > 2.0 or full > 1.0 or rss > 200 or findings > 0
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
