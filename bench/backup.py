"""Scan and unload straight from base backups (issue 17): time and peak memory by backup form and size.

    python bench/backup.py --rows 1000000 3000000 --forms plain tar zstd gzip

For each size: a PostgreSQL 15 lab cluster with table ``big`` (``--rows`` rows of ~100 bytes, primary key) and
``docs`` (10 000 TOASTed values of 6.4 kB, a constant 64 MB), one ``pg_basebackup`` per form, then ``pgsurgeon scan``
and ``pgsurgeon unload`` of each backup in a child process (peak RSS from ``/usr/bin/time -v``). The unload of every
form is compared with the plain directory's (``diff -r``, data files and schema.sql)."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fix_pg import create_test_cluster

FORMS = {
    "plain": ("-Fp",),
    "tar": ("-Ft",),
    "zstd": ("-Ft", "--compress=server-zstd"),
    "gzip": ("-Ft", "-z"),
    "lz4": ("-Ft", "--compress=client-lz4"),
}


def measure(*argv: str) -> tuple[int, int, float]:
    """(exit code, peak RSS in MB, seconds) of one pgsurgeon command."""
    started = time.monotonic()
    r = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "pgsurgeon", *argv], capture_output=True, text=True, check=False
    )
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return r.returncode, int(m.group(1)) // 1024 if m else -1, round(time.monotonic() - started, 1)


def one_size(rows: int, forms: list[str], base: Path) -> None:
    c = create_test_cluster(base, f"bk{rows}", "15", extra_conf={"wal_level": "replica", "max_wal_senders": 4})
    try:
        c.start()
        with c.connect() as conn:
            conn.execute("CREATE TABLE big (id int PRIMARY KEY, a int, label text)")
            conn.execute(f"INSERT INTO big SELECT g, g % 7, repeat('x', 80) || g FROM generate_series(1, {rows}) g")
            conn.execute("CREATE TABLE docs (id int, body text)")
            conn.execute("ALTER TABLE docs ALTER body SET STORAGE EXTERNAL")
            conn.execute("INSERT INTO docs SELECT g, repeat(md5(g::text), 200) FROM generate_series(1, 10000) g")
            conn.execute("VACUUM")
            size = conn.execute("SELECT pg_database_size('postgres') / 1000000").fetchone()
        print(f"\n{rows} rows, database {size[0] if size else '?'} MB")
        print("| form | backup MB | scan s | scan peak RSS MB | unload s | unload peak RSS MB | unload = plain |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for form in forms:
            target = c.lab_dir / form
            c.run_tool("pg_basebackup", "-D", str(target), "-c", "fast", *FORMS[form], timeout=3600)
            mb = sum(p.stat().st_size for p in target.rglob("*") if p.is_file()) // 1000000
            _, scan_rss, scan_s = measure("scan", str(target), "-j", "2")
            out = base / f"out-{rows}-{form}"
            _, unload_rss, unload_s = measure("unload", str(target), "--out", str(out), "-j", "2")
            same = "—"
            if form != "plain" and "plain" in forms:
                d = subprocess.run(
                    ["diff", "-r", "-x", "restore.sql", "-x", "report.*", str(base / f"out-{rows}-plain"), str(out)],
                    capture_output=True,
                    check=False,
                )
                same = "yes" if d.returncode == 0 else "NO"
            print(f"| {form} | {mb} | {scan_s} | {scan_rss} | {unload_s} | {unload_rss} | {same} |", flush=True)
            if form != "plain":
                shutil.rmtree(out)
            shutil.rmtree(target, ignore_errors=True)
    finally:
        c.destroy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 3_000_000])
    ap.add_argument("--forms", nargs="+", choices=list(FORMS), default=["plain", "tar", "zstd", "gzip"])
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pgs-bench-backup-", dir="/tmp"))
    base.chmod(0o755)
    try:
        for rows in args.rows:
            one_size(rows, args.forms, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
