"""Benchmark: `pgsurgeon unload PGDATA --out DIR` (no server: catalog from the files, every table through the row
engine) against the server's own `COPY t TO 'file'` of every user table, summed, in one run: the same cluster, both
writing COPY text files.

Uses the benchmark cluster of bench/carve.py (PostgreSQL 18, checksums on, pgbench scale 100: 1.3 GB; --big: scale
800, >= 10 GB). The server COPYs run first (warm cache), then the cluster is stopped and unloaded, then started
again. Prints both times, the ratio and pgsurgeon's peak RSS (wait4), checks every data file is byte-identical to
the server's COPY of that table, and with --record appends the result to docs/benchmarks.md. Targets (issues 16,
34): ratio <= 1.0 with the schema step (pg_dump of a started catalog copy, run beside the carving), peak RSS <= 200
MB; --check exits 1 when one is missed. The same unload with --schema files (no schema step) is timed beside it.

    python bench/unload.py [--big] [--jobs 2] [--lab-dir /var/tmp/pgsurgeon-bench] [--check] [--record]
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

from carve import digest
from labs import pgbench_cluster, run_measured

ROOT = Path(__file__).resolve().parent.parent

TABLES_SQL = (
    "SELECT format('%I.%I', n.nspname, c.relname), n.nspname, c.relname, c.oid FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="pgbench scale 800 (>= 10 GB) instead of 100 (1.3 GB)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = ap.parse_args()
    cluster = pgbench_cluster(args.lab_dir, 800 if args.big else 100)
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-unload-", dir="/var/tmp"))
    work.chmod(0o777)  # the server (another user) writes its COPY files here
    try:
        with cluster.connect() as conn:
            tables = conn.execute(TABLES_SQL).fetchall()
            size = conn.execute("SELECT sum(pg_table_size(c.oid)) FROM pg_class c WHERE c.relkind = 'r'").fetchone()
            for qname, *_ in tables:  # warm the cache
                conn.execute(f"COPY {qname} TO '{work / 'warm.copy'}'")
            digests: dict[str, str] = {}
            copy_s = 0.0
            for qname, _schema, _name, oid in tables:
                path = work / f"server-{oid}.copy"
                started = time.perf_counter()
                conn.execute(f"COPY {qname} TO '{path}'")  # the path is ours: a fresh temporary directory
                copy_s += time.perf_counter() - started
                digests[str(oid)] = digest(path)
                path.unlink()
            conn.execute("CHECKPOINT")
        cluster.stop()
        try:
            rows_only = work / "rows-only"
            rows_s, rows_rss, _, _ = run_measured(
                [pgsurgeon, "unload", str(cluster.pgdata), "--out", str(rows_only), "-j", str(args.jobs),
                 "--schema", "files"]
            )  # fmt: skip
            out = work / "unloaded"
            unload_s, rss, _, _ = run_measured(
                [pgsurgeon, "unload", str(cluster.pgdata), "--out", str(out), "-j", str(args.jobs)]
            )
        finally:
            cluster.start()
        report = json.loads((out / "report.json").read_text())
        schema = report["schema"]
        same = True
        rows = 0
        for t in report["tables"]:
            rows += t["rows"]
            want = digests.get(str(t["oid"]))
            if want is not None and digest(out / t["file"]) != want:
                same = False
        ratio = unload_s / copy_s
        lines = [
            f"{len(tables)} tables, {int(size[0] or 0) / 1e9:.2f} GB, {rows} rows; PostgreSQL "
            f"{cluster.install.short_version}, checksums on, {os.cpu_count()} cores, warm page cache",
            f"server   COPY t TO 'file', every table, summed       {copy_s:7.2f} s",
            f"unload   pgsurgeon unload PGDATA --out -j {args.jobs}         {unload_s:7.2f} s  "
            f"({ratio:.2f}x the server COPY), peak RSS {rss:.0f} MB",
            f"  of which the schema step (pg_dump of a catalog copy, beside the carving): "
            f"{schema.get('seconds', 0):.2f} s ({schema['method']}, "
            f"copy {schema.get('catalog_copy_bytes', 0) / 1e6:.0f} MB)",
            f"unload   --schema files (rows and files-built DDL only) {rows_s:7.2f} s  "
            f"({rows_s / copy_s:.2f}x), peak RSS {rows_rss:.0f} MB",
            f"every data file identical to the server's COPY (sha256): {same}; kept apart {report['kept_apart']}",
        ]
        print("\n".join(lines))
        if args.record:
            stamp = datetime.date.today().isoformat()
            cmd = f"python bench/unload.py{' --big' if args.big else ''} --jobs {args.jobs}"
            with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
                fh.write(f"\n### unload, {stamp}: `{cmd}`\n\n```\n" + "\n".join(lines) + "\n```\n")
        missed = ratio > 1.0 or rss > 200 or not same or report["kept_apart"] or schema["method"] != "pg_dump"
        return 1 if args.check and missed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
