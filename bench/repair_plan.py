"""Benchmark: planning a repair (`pgsurgeon repair`, the dry run) against `pgsurgeon diagnose` of the same table, in
one run. Issue 28's case: an `orders` table of 200,000 rows with a primary key and a secondary index, one page zeroed
and one page's line pointers garbled (PostgreSQL 18, data checksums on, so the second page is refused), the kind of
damage a DBA brings. Target: planning ≤ 2x diagnose of the table; peak RSS alongside.

The table lives in its own database of the shared bench cluster (bench/labs.py), one per size (``repair_bench`` at
the default 200,000 rows, ``repair_bench_<rows>`` otherwise), is built and damaged once, and the damage is kept (a
plan changes nothing).

    python bench/repair_plan.py [--rows 200000] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench] [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

from labs import bench_cluster, run_measured

ROWS = 200_000


def database(rows: int) -> str:
    """Each size its own database: a table built once is never taken for one of another size."""
    return "repair_bench" if rows == ROWS else f"repair_bench_{rows}"


def build(cluster: object, rows: int, pgsurgeon: str) -> str:
    """The damaged orders table in its own database, once; its connection string."""
    from pgsurgeon.lab import LabCluster

    assert isinstance(cluster, LabCluster)
    db = database(rows)
    with cluster.connect() as conn:
        have = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone()
        if not have:
            conn.execute(f"CREATE DATABASE {db}")
    dsn = cluster.dsn(db)
    with cluster.connect(db) as conn:
        done = conn.execute("SELECT to_regclass('orders') IS NOT NULL").fetchone()
        if done and done[0]:
            return dsn
        for ext in ("amcheck", "pageinspect", "pg_surgery"):
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, 5000) g")
        conn.execute(
            "CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers, amount numeric, "
            "note text, created timestamptz DEFAULT now())"
        )
        conn.execute(
            "INSERT INTO orders SELECT g, 1 + g %% 5000, g * 1.5, md5(g::text), now() FROM generate_series(1, %s) g",
            (rows,),
        )
        conn.execute("CREATE INDEX orders_customer_id_idx ON orders (customer_id)")
        conn.execute("VACUUM ANALYZE orders")
        conn.execute("CHECKPOINT")
        (blocks,) = conn.execute("SELECT pg_relation_size('orders') / 8192").fetchone()  # type: ignore[misc]
    for mode in (["zero", "--block", str(blocks // 2)], ["item-ids", "--block", str(blocks * 3 // 4), "--seed", "3"]):
        run_measured([pgsurgeon, "corrupt", *mode, "--dsn", dsn, "-t", "orders"], ok=(0,))
    return dsn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = ap.parse_args()
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    cluster = bench_cluster("repair18", args.lab_dir)
    dsn = build(cluster, args.rows, pgsurgeon)
    runs = {
        "pgsurgeon diagnose -t orders": [pgsurgeon, "diagnose", "--dsn", dsn, "-t", "orders", "--format", "json"],
        "pgsurgeon repair -t orders (plan)": [pgsurgeon, "repair", "--dsn", dsn, "-t", "orders", "--format", "json"],
    }
    for cmd in runs.values():
        run_measured(cmd)  # warm
    timings: dict[str, list[tuple[float, float, int, str]]] = {label: [] for label in runs}
    for _ in range(args.repeat):  # interleaved, so a change in the machine's load hits both alike
        for label, cmd in runs.items():
            timings[label].append(run_measured(cmd))
    print(
        f"orders: {args.rows} rows, one page zeroed, one page's line pointers garbled; PostgreSQL "
        f"{cluster.install.short_version}, checksums on, {os.cpu_count()} cores, median of {args.repeat}; load "
        f"average {os.getloadavg()[0]:.2f}"
    )
    med = {label: statistics.median(t[0] for t in ts) for label, ts in timings.items()}
    for label, ts in timings.items():
        print(f"{label:40} {med[label]:6.2f} s  peak RSS {max(t[1] for t in ts):6.1f} MB")
    ratio = med["pgsurgeon repair -t orders (plan)"] / med["pgsurgeon diagnose -t orders"]
    print(f"planning / diagnose: {ratio:.2f}x (target <= 2.0x)")
    return 1 if args.check and ratio > 2.0 else 0


if __name__ == "__main__":
    sys.exit(main())
