"""Benchmark: a wide schema. `scan`, `health` and `unload --schema files` of a stopped cluster holding many small
tables (each with its primary key and TOAST table: four relation files a table), against `pg_checksums --check` of
the same files, in one run. Here the per-relation steps (the catalog read from the files, each relation's
description, the report) are the work, not the pages: a cluster of 20,000 empty tables is 0.5 GB in 80,000 files.

    python bench/wide.py [--tables 20000] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from labs import bench_cluster, run_usage

from pgsurgeon.lab import LabCluster

MAKE_TABLES = """
CREATE FUNCTION pg_temp.make_tables(first int, last int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN first..last LOOP
    EXECUTE format('CREATE TABLE t%s (id int primary key, a text, b int, c timestamptz, d numeric)', i);
  END LOOP;
END $$
"""


def wide_cluster(lab_dir: Path, tables: int) -> LabCluster:
    """The started cluster holding ``tables`` tables t1..tN (id int primary key, a text, b int, c timestamptz, d
    numeric), built once."""
    cluster = bench_cluster(f"wide{tables}", lab_dir)
    with cluster.connect() as conn:
        row = conn.execute("SELECT count(*) FROM pg_class WHERE relname ~ '^t[0-9]+$' AND relkind = 'r'").fetchone()
    have = int(row[0]) if row else 0
    # a thousand a transaction: each CREATE TABLE holds its locks to the end of the transaction
    for first in range(have + 1, tables + 1, 1000):
        with cluster.connect() as conn:
            conn.execute(MAKE_TABLES)
            conn.execute("SELECT pg_temp.make_tables(%s, %s)", (first, min(first + 999, tables)))
    with cluster.connect() as conn:
        conn.execute("CHECKPOINT")
    return cluster


def median(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[2] for r in runs),
    )


def measure(
    cmd: list[str], repeat: int, as_server: LabCluster | None = None, out: Path | None = None
) -> tuple[float, float, float]:
    """Median wall and CPU seconds and the peak RSS in MB of ``repeat`` runs, after one to warm the page cache
    (``out``: removed before each run)."""
    runs = []
    for i in range(repeat + 1):
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        elapsed, usage, _code, _out = run_usage(cmd, as_server=as_server)
        if i:
            runs.append((elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024))
    return median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    args = ap.parse_args()

    cluster = wide_cluster(args.lab_dir, args.tables)
    with cluster.connect() as conn:
        row = conn.execute("SELECT count(*) FROM pg_class WHERE relfilenode <> 0").fetchone()
    files = int(row[0]) if row else 0
    cluster.stop()
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    jobs = str(os.cpu_count() or 1)
    data = str(cluster.pgdata)
    checksums = [str(cluster.install.tool("pg_checksums")), "--check", "-D", data]
    out = Path(tempfile.mkdtemp(prefix="pgsurgeon-wide-")) / "unload"
    unload = [pgsurgeon, "unload", data, "--out", str(out), "-j", jobs, "--schema", "files"]
    rows = [
        ("pg_checksums --check", measure(checksums, args.repeat, cluster)),
        (
            f"scan -j {jobs} --format json",
            measure([pgsurgeon, "scan", data, "-j", jobs, "--format", "json"], args.repeat),
        ),
        (
            f"health -j {jobs} --format json",
            measure([pgsurgeon, "health", data, "-j", jobs, "--format", "json"], args.repeat),
        ),
        (f"unload -j {jobs} --schema files", measure(unload, args.repeat, out=out)),
    ]
    shutil.rmtree(out.parent, ignore_errors=True)
    print(
        f"{args.tables} tables ({files} relations with storage), PostgreSQL {cluster.version}, {os.cpu_count()} cores, "
        f"warm page cache, median of {args.repeat}"
    )
    print(f"{'run':<30}{'wall s':>8}{'CPU s':>8}{'RSS MB':>8}{'x pg_checksums':>16}")
    base = rows[0][1][0]
    for name, (wall, cpu, rss) in rows:
        print(f"{name:<30}{wall:8.2f}{cpu:8.2f}{rss:8.0f}{wall / base:15.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
