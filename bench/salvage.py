"""Benchmark: `pgsurgeon salvage` of a healthy table against the server doing the same work itself, in one run:
`--out DIR` against the server's `COPY t TO 'file'`, `--into NEW` against `CREATE TABLE … AS SELECT * FROM t`.

Reuses the pgbench cluster of bench/carve.py (bench/labs.py: PostgreSQL 18, data checksums on, wal_level minimal):
`pgbench_accounts` at scale 100 (10 M rows, 1.3 GB) by default, scale 800 (80 M rows, ≥ 10 GB) with --big. Warm page
cache: each command runs once before it is timed; best of --repeat. Peak RSS from wait4 of the pgsurgeon process.
Targets (issue 14): --out ≤ 1.2x the server COPY to a file, --into ≤ 1.5x CREATE TABLE AS, peak RSS ≤ 200 MB, every
row saved; --check exits 1 when one is missed.

    python bench/salvage.py [--big] [--jobs 2] [--repeat 2] [--lab-dir /var/tmp/pgsurgeon-bench] [--check] [--record]
"""

from __future__ import annotations

import argparse
import datetime
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
INTO = "bench_salvage_into"
ROOT = Path(__file__).resolve().parent.parent


def run_salvage(cmd: list[str]) -> tuple[float, float, dict[str, object]]:
    """Seconds, peak RSS in MB, the JSON report on stdout."""
    elapsed, rss, _, text = run_measured(cmd, ok=(0,))
    report: dict[str, object] = json.loads(text)
    return elapsed, rss, report


def drop_into(cluster: LabCluster) -> None:
    with cluster.connect() as conn:
        for suffix in ("", "_carved", "_salvage"):
            conn.execute(f"DROP TABLE IF EXISTS {INTO}{suffix}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="pgbench scale 800 (>= 10 GB) instead of 100")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = ap.parse_args()
    scale = 800 if args.big else 100
    cluster = pgbench_cluster(args.lab_dir, scale)
    with cluster.connect() as conn:
        size, nrows = conn.execute(f"SELECT pg_relation_size('{TABLE}'), (SELECT count(*) FROM {TABLE})").fetchone()  # type: ignore[misc]
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-salvage-", dir="/var/tmp"))
    work.chmod(0o777)  # the server (another user) writes its COPY file here
    base = [pgsurgeon, "salvage", "--dsn", cluster.dsn(), "--table", TABLE, "-j", str(args.jobs)]
    base += ["--report-format", "json"]

    def server_copy() -> float:
        with cluster.connect() as conn:
            started = time.perf_counter()
            conn.execute(f"COPY {TABLE} TO '{work / 'server.copy'}'")  # our own fresh directory
            elapsed = time.perf_counter() - started
        (work / "server.copy").unlink()
        return elapsed

    def ctas() -> float:
        with cluster.connect() as conn:
            conn.execute("DROP TABLE IF EXISTS bench_ctas")
            started = time.perf_counter()
            conn.execute(f"CREATE TABLE bench_ctas AS SELECT * FROM {TABLE}")
            elapsed = time.perf_counter() - started
            conn.execute("DROP TABLE bench_ctas")
        return elapsed

    def salvage_out() -> tuple[float, float, dict[str, object]]:
        shutil.rmtree(work / "out", ignore_errors=True)
        return run_salvage([*base, "--out", str(work / "out")])

    def salvage_into() -> tuple[float, float, dict[str, object]]:
        drop_into(cluster)
        return run_salvage([*base, "--into", INTO])

    try:
        server_copy()  # warm
        salvage_out()
        # interleaved, so a change in the machine's load hits both sides alike
        runs: dict[str, list[tuple[float, float, dict[str, object]]]] = {k: [] for k in ("COPY", "out", "CTAS", "into")}
        for _ in range(args.repeat):
            runs["COPY"].append((server_copy(), 0.0, {}))
            runs["out"].append(salvage_out())
            runs["CTAS"].append((ctas(), 0.0, {}))
            runs["into"].append(salvage_into())
        timings = {k: min(v, key=lambda r: r[0]) for k, v in runs.items()}
        drop_into(cluster)
        load = os.getloadavg()
        out_ratio = timings["out"][0] / timings["COPY"][0]
        into_ratio = timings["into"][0] / timings["CTAS"][0]
        saved = {k: timings[k][2]["rows"]["saved"] for k in ("out", "into")}  # type: ignore[index]
        lines = [
            f"table {TABLE}: {size / 1e9:.2f} GB, {nrows} rows (pgbench scale {scale}); PostgreSQL "
            f"{cluster.install.short_version}, checksums on, {os.cpu_count()} cores, warm page cache, best of "
            f"{args.repeat}; load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
            f"server  COPY {TABLE} TO 'file'                  {timings['COPY'][0]:7.2f} s",
            f"salvage --out DIR -j {args.jobs}                          {timings['out'][0]:7.2f} s  "
            f"{out_ratio:.2f}x (target <= 1.2x), peak RSS {timings['out'][1]:.0f} MB, rows saved {saved['out']}",
            f"server  CREATE TABLE … AS SELECT * FROM {TABLE}  {timings['CTAS'][0]:7.2f} s",
            f"salvage --into NEW -j {args.jobs}                         {timings['into'][0]:7.2f} s  "
            f"{into_ratio:.2f}x (target <= 1.5x), peak RSS {timings['into'][1]:.0f} MB, rows saved {saved['into']}",
        ]
        print("\n".join(lines))
        if args.record:
            stamp = datetime.date.today().isoformat()
            cmd = f"python bench/salvage.py{' --big' if args.big else ''} --jobs {args.jobs} --repeat {args.repeat}"
            with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
                fh.write(f"\n### salvage, {stamp}: `{cmd}`\n\n```\n" + "\n".join(lines) + "\n```\n")
        rss = max(timings["out"][1], timings["into"][1])
        missed = out_ratio > 1.2 or into_ratio > 1.5 or rss > 200 or any(v != nrows for v in saved.values())
        return 1 if args.check and missed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
