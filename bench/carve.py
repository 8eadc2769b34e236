"""Benchmark: the row engine (`pgsurgeon salvage --carve-all --out DIR`) against the server's own
`COPY t TO 'file'` of the same table, in one run: the same database, both writing COPY text to a file.

Builds (once, then reuses) a PostgreSQL 18 lab cluster with data checksums holding `pgbench_accounts` at pgbench
scale 100 (10 M rows, 1.3 GB), or scale 800 (≥ 10 GB) with --big. Warm page cache: both read the table once before
they are timed. Prints both times, the ratio and peak RSS (from wait4 of the pgsurgeon process), and with --record
appends the result to docs/benchmarks.md. Targets (issue 12): ratio ≤ 1.0 with -j 2, peak RSS ≤ 200 MB at any size;
--check exits 1 when one is missed.

    python bench/carve.py [--big] [--jobs 2] [--repeat 1] [--lab-dir /var/tmp/pgsurgeon-bench] [--check] [--record]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from labs import pgbench_cluster, run_measured

from pgsurgeon.lab import LabCluster

TABLE = "pgbench_accounts"
ROOT = Path(__file__).resolve().parent.parent


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def server_copy(cluster: LabCluster, path: Path) -> float:
    """Server-side COPY of the table to a file the server writes (no rows cross the connection)."""
    with cluster.connect() as conn:
        started = time.perf_counter()
        conn.execute(f"COPY {TABLE} TO '{path}'")  # the path is ours: a fresh temporary directory
        return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="pgbench scale 800 (>= 10 GB) instead of 100 (1.3 GB)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = ap.parse_args()
    scale = 800 if args.big else 100
    cluster = pgbench_cluster(args.lab_dir, scale)
    with cluster.connect() as conn:
        size, nrows = conn.execute(f"SELECT pg_relation_size('{TABLE}'), (SELECT count(*) FROM {TABLE})").fetchone()  # type: ignore[misc]
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-carve-", dir="/var/tmp"))
    work.chmod(0o777)  # the server (another user) writes its COPY file here
    try:
        copy_file = work / "server.copy"
        server_copy(cluster, copy_file)  # warm the cache
        copy_s = min(server_copy(cluster, copy_file) for _ in range(args.repeat))
        copy_bytes = copy_file.stat().st_size
        copy_digest = digest(copy_file)
        copy_file.unlink()
        runs = []
        for _ in range(args.repeat):
            out = work / "carved"
            shutil.rmtree(out, ignore_errors=True)
            runs.append(
                run_measured(
                    [
                        pgsurgeon,
                        "salvage",
                        "--dsn",
                        cluster.dsn(),
                        "--table",
                        TABLE,
                        "--carve-all",
                        "--out",
                        str(out),
                        "-j",
                        str(args.jobs),
                        "--report-format",
                        "json",
                    ]
                )
            )
        carve_s, rss, _, text = min(runs, key=lambda r: r[0])
        report = json.loads(text)
        main_file = Path(report["outputs"]["rows_file"])
        carve_bytes = main_file.stat().st_size
        ratio = carve_s / copy_s
        lines = [
            f"table {TABLE}: {size / 1e9:.2f} GB, {nrows} rows; PostgreSQL {cluster.install.short_version}, "
            f"checksums on, {os.cpu_count()} cores, warm page cache, best of {args.repeat}",
            f"server   COPY {TABLE} TO 'file'                   {copy_s:7.2f} s  {copy_bytes / 1e6:8.0f} MB written",
            f"carve    pgsurgeon salvage --carve-all --out -j {args.jobs}  {carve_s:7.2f} s  "
            f"{carve_bytes / 1e6:8.0f} MB written  ({ratio:.2f}x the server COPY), peak RSS {rss:.0f} MB",
            f"rows carved: {report['rows']['carved']}, kept apart {report['rows']['carved_kept_apart']}, "
            f"lost entries {report['lost_count']}",
        ]
        same = carve_bytes == copy_bytes and digest(main_file) == copy_digest
        lines.append(f"carved file identical to the server's (sha256): {same}")
        print("\n".join(lines))
        if args.record:
            stamp = datetime.date.today().isoformat()
            cmd = f"python bench/carve.py{' --big' if args.big else ''} --jobs {args.jobs} --repeat {args.repeat}"
            with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
                fh.write(f"\n### carve-all, {stamp}: `{cmd}`\n\n```\n" + "\n".join(lines) + "\n```\n")
        missed = ratio > 1.0 or rss > 200 or report["rows"]["carved"] != nrows or not same
        return 1 if args.check and missed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
