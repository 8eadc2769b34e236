"""Restoring damaged pages from a streaming standby (issue 31) against reading the same pages off the standby.

    python bench/standby_restore.py --pages 1000 --rows 250000 --version 15

A primary and its streaming standby (``pg_basebackup -R``, lab clusters on localhost), table ``orders`` (``--rows``
rows of ~60 bytes, primary key), ``--pages`` of its pages zeroed in the primary's file (seeded, the primary stopped
meanwhile). Side by side in one run:

* **plain loop**: one ``SELECT pg_read_binary_file(path, offset, 8192)`` per damaged page on the standby, the pages
  in block order, one connection (what a script that copies the pages would do at the least);
* **repair**: ``pgsurgeon repair --from-standby … --execute --yes --skip-salvage`` in a child process: its total
  time, the page-write step's time (stopping and starting the primary included), and the page restore alone: the
  copies fetched again and checked once the primary is stopped (``fetch_seconds``), then the undo manifest built
  and the pages written (``write_seconds``), beside the wait for the standby to replay the shutdown checkpoint.

Every row is checked after the repair (count and an md5 of the table in id order, against before the damage)."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fix_standby import make_pair
from pgsurgeon.lab import LabCluster, run_sql

BLOCK = 8192


def table_digest(lab: LabCluster) -> tuple[int, str]:
    (n, md5), *_ = run_sql(lab, "SELECT count(*), md5(string_agg(t::text, ',' ORDER BY id)) FROM orders t")
    return int(n), str(md5)


def zero_pages(lab: LabCluster, path: str, nblocks: int, pages: int, seed: int, segment_blocks: int) -> list[int]:
    """Zero ``pages`` pages of orders (block 0 kept) in its file with the primary stopped: their blocks. (Written
    here rather than with ``pgsurgeon corrupt zero --count``, whose manifest of a thousand pages takes minutes.)"""
    blocks = sorted(random.Random(seed).sample(range(1, nblocks), pages))
    lab.stop()
    for b in blocks:
        seg, off = divmod(b, segment_blocks)
        with (lab.pgdata / (path if seg == 0 else f"{path}.{seg}")).open("r+b") as fh:
            fh.seek(off * BLOCK)
            fh.write(bytes(BLOCK))
    lab.start()
    return blocks


def plain_loop(standby: LabCluster, path: str, blocks: list[int], segment_blocks: int) -> float:
    """Seconds to read every block from the standby's relation file, one pg_read_binary_file a page."""
    with standby.connect() as conn:
        started = time.monotonic()
        for b in blocks:
            seg, off = divmod(b, segment_blocks)
            name = path if seg == 0 else f"{path}.{seg}"
            row = conn.execute("SELECT pg_read_binary_file(%s, %s, %s)", (name, off * BLOCK, BLOCK)).fetchone()
            assert row is not None and len(row[0]) == BLOCK
        return time.monotonic() - started


def repair(primary: LabCluster, standby: LabCluster, run_dir: Path) -> tuple[float, dict[str, object]]:
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "repair", "--dsn", primary.dsn(), "--table", "orders",
         "--from-standby", standby.dsn(), "--execute", "--yes", "--skip-salvage", "--format", "json",
         "--run-dir", str(run_dir)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if r.returncode != 0:
        raise SystemExit(f"repair failed ({r.returncode}): {r.stderr[-2000:]}")
    doc: dict[str, object] = json.loads(r.stdout)
    return seconds, doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=250000)
    ap.add_argument("--version", default="15")
    ap.add_argument("--checksums", action="store_true", help="initdb --data-checksums")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lab-dir", type=Path, default=None, help="where the two clusters go (default: a temp dir)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pgsurgeon-standby-bench-", dir=args.lab_dir or "/var/tmp"))
    base.chmod(0o755)
    pair = make_pair(base, "sbbench", args.version, args.checksums)
    try:
        p = pair.primary
        run_sql(p, "CREATE TABLE orders (id int PRIMARY KEY, a int, b text)")
        run_sql(p, f"INSERT INTO orders SELECT g, g % 7, 'order ' || g FROM generate_series(1, {args.rows}) g")
        run_sql(p, "VACUUM orders")
        run_sql(p, "CHECKPOINT")
        (nblocks,), *_ = run_sql(p, "SELECT pg_relation_size('orders') / 8192")
        (path,), *_ = run_sql(p, "SELECT pg_relation_filepath('orders')")
        (segment,), *_ = run_sql(p, "SELECT setting::int FROM pg_settings WHERE name = 'segment_size'")
        before = table_digest(p)
        pair.caught_up()
        blocks = zero_pages(p, str(path), int(nblocks), args.pages, args.seed, int(segment))
        pair.caught_up()
        pair.streaming()
        loop = plain_loop(pair.standby, str(path), blocks, int(segment))
        total, doc = repair(p, pair.standby, base / "run")
        after = table_digest(p)
        execution = doc["execution"]
        assert isinstance(execution, dict)
        step = next(s for s in execution["steps"] if "fetch_seconds" in s)
        fetch, write, wait = step["fetch_seconds"], step["write_seconds"], step.get("wait_seconds", 0.0)
        restore = fetch + write
        copies = doc["plan"]["copies"] if isinstance(doc.get("plan"), dict) else []
        used = sum(1 for c in copies if c["source"] == "standby")
        sums = "on" if args.checksums else "off"
        print(
            f"PostgreSQL {args.version}, checksums {sums}; orders: {args.rows} rows, {nblocks} pages; "
            f"{len(blocks)} pages zeroed on the primary, {used} restored from the standby"
        )
        print("| what | seconds | against the plain loop |")
        print("|---|---:|---:|")
        print(f"| plain loop: {len(blocks)} x pg_read_binary_file on the standby | {loop:.3f} | 1.00x |")
        print(f"| repair: copies fetched again and checked (primary stopped) | {fetch:.3f} | {fetch / loop:.2f}x |")
        print(f"| repair: undo manifest and page writes | {write:.3f} | {write / loop:.2f}x |")
        print(f"| **repair: the page restore (the two above)** | **{restore:.3f}** | **{restore / loop:.2f}x** |")
        print(f"| repair: waiting for the standby to replay the shutdown checkpoint | {wait:.3f} | |")
        print(f"| repair: the page-write step (primary stopped and started) | {step['seconds']:.3f} | |")
        print(f"| repair: the whole command (diagnose, plan, execute, verify) | {total:.3f} | |")
        print(f"rows: {before[0]} before, {after[0]} after; table md5 {'identical' if before == after else 'DIFFERS'}")
        if before != after:
            raise SystemExit(1)
    finally:
        pair.close()


if __name__ == "__main__":
    main()
