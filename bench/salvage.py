"""Benchmark: `pgsurgeon salvage` of a damaged table of at least 1 GB against a plain COPY of the same table while
it was healthy, in one run.

Builds (once, then reuses) a PostgreSQL 18 lab cluster with data checksums holding one table of about 1.1 GB (10
million rows: bigint key, integers, text, float, timestamptz, numeric; a primary key), times the server's own `COPY t
TO 'file'` of it (equal work: salvage has the server write its chunk files the same way; warm cache, best of
--repeat), then damages --damaged blocks spread evenly over the table
(page header, item-ID array, tuple header, checksum, zeroed page: the simulator, with the server stopped) and times
`pgsurgeon salvage --out DIR -j 2` (best of --repeat). Prints both, the ratio, and what salvage saved, carved and
lost. The damage is undone at the end, so the cluster can be reused.

    python bench/salvage.py [--rows 10000000] [--damaged 64] [--repeat 2] [--lab-dir /var/tmp/pgsurgeon-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labs import bench_cluster

from pgsurgeon.lab import LabCluster

NAME = "salv18"
TABLE = "bench_orders"
MODES = (("header", ["--field", "random"]), ("item-ids", []), ("tuple-header", []), ("checksum", []), ("zero", []))


def build(lab_dir: Path, rows: int) -> LabCluster:
    cluster = bench_cluster(NAME, lab_dir)
    with cluster.connect() as conn:
        have = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,)).fetchone()
        if not (have and have[0]):
            print(f"building {TABLE} with {rows} rows (once) ...", file=sys.stderr)
            started = time.monotonic()
            conn.execute(
                f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, customer integer, status smallint, note text, "
                "amount float8, created timestamptz, total numeric)"
            )
            step = 1_000_000
            for first in range(1, rows + 1, step):
                last = min(rows, first + step - 1)
                conn.execute(
                    f"INSERT INTO {TABLE} SELECT g, g % 100000, (g % 5)::smallint, "
                    "'order ' || g || ' ' || md5(g::text), g * 0.25, "
                    "'2020-01-01'::timestamptz + g * interval '1 second', round(g / 7.0, 2) "
                    f"FROM generate_series({first}, {last}) g"
                )
            conn.execute(f"VACUUM (FREEZE, ANALYZE) {TABLE}")
            conn.execute("CHECKPOINT")
            print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return cluster


def timed(cmd: list[str], env: dict[str, str] | None = None, stdout_to: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    if stdout_to is not None:
        with stdout_to.open("wb") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, env=env, check=False)
        out = ""
    else:
        proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
        out = proc.stdout.decode()
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 2):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--damaged", type=int, default=64, help="blocks to damage, spread over the table")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--remove", action="store_true", help="remove the cluster afterwards")
    ap.add_argument("--check", action="store_true", help="exit 1 when salvage takes more than 1.5x the COPY")
    args = ap.parse_args()

    cluster = build(args.lab_dir, args.rows)
    dsn = cluster.dsn()
    with cluster.connect() as conn:
        size, nblocks, path = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_relation_size(%s::regclass) / 8192, "
            "pg_relation_filepath(%s::regclass)",
            (TABLE, TABLE, TABLE),
        ).fetchone()  # type: ignore[misc]
        (nrows,) = conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()  # type: ignore[misc]
    if size < 1 << 30:
        print(f"warning: {TABLE} is only {size / 1e9:.2f} GB; pass more --rows", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-salvage-"))
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    work.chmod(0o777)  # the server (another user) writes its COPY file here

    def server_copy(path: Path) -> float:
        """Equal work for `salvage --out`: the server writes the table to a file itself (no rows cross the
        connection), as salvage has it write its chunks."""
        with cluster.connect() as conn:
            started = time.perf_counter()
            conn.execute(f"COPY {TABLE} TO '{path}'")  # our own fresh temporary directory
            return time.perf_counter() - started

    try:
        # the healthy baseline: the server's COPY of the whole table to a file
        server_copy(work / "warm.copy")
        copy_s = min(server_copy(work / "healthy.copy") for _ in range(args.repeat))
        copy_bytes = (work / "healthy.copy").stat().st_size
        (work / "warm.copy").unlink()

        # damage blocks spread over the table, with the server stopped once
        stride = max(1, nblocks // (args.damaged + 1))
        blocks = [stride * (i + 1) for i in range(args.damaged)]
        manifests: list[str] = []
        cluster.stop()
        try:
            for i, block in enumerate(blocks):
                mode, extra = MODES[i % len(MODES)]
                proc = subprocess.run(
                    [
                        pgsurgeon,
                        "corrupt",
                        mode,
                        "--pgdata",
                        str(cluster.pgdata),
                        "--file",
                        str(path),
                        "--block",
                        str(block),
                        "--seed",
                        str(i),
                        *extra,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise SystemExit(f"corrupt {mode} block {block} failed: {proc.stderr[-500:]}")
                manifests.extend(
                    line.split("undo with: pgsurgeon undo ", 1)[1].strip()
                    for line in (proc.stdout + proc.stderr).splitlines()
                    if "undo with:" in line
                )
        finally:
            cluster.start()

        runs = []
        for _ in range(args.repeat):
            out = work / "salvaged"
            shutil.rmtree(out, ignore_errors=True)
            seconds, stdout = timed(
                [
                    pgsurgeon,
                    "salvage",
                    "--dsn",
                    dsn,
                    "--table",
                    TABLE,
                    "--out",
                    str(out),
                    "-j",
                    str(args.jobs),
                    "--report-format",
                    "json",
                ]
            )
            runs.append((seconds, json.loads(stdout)))
        salvage_s, report = min(runs, key=lambda r: r[0])
        ratio = salvage_s / copy_s
        rows = report["rows"]
        print(
            f"table {TABLE}: {size / 1e9:.2f} GB, {nblocks} blocks, {nrows} rows; PostgreSQL "
            f"{cluster.install.short_version}, data checksums on, {os.cpu_count()} cores, warm page cache, "
            f"best of {args.repeat}"
        )
        print(
            f"healthy   server COPY {TABLE} TO 'file'         {copy_s:7.2f} s  ({copy_bytes / 1e6 / copy_s:.0f} MB/s)"
        )
        print(
            f"damaged   pgsurgeon salvage --out DIR -j {args.jobs}      {salvage_s:7.2f} s  "
            f"({ratio:.2f}x the healthy COPY; classify {report['seconds']['classify']:.2f} s, "
            f"SQL {report['seconds']['sql']:.2f} s, carve {report['seconds']['carve']:.2f} s)"
        )
        print(
            f"damage: {len(blocks)} blocks ({', '.join(m for m, _ in MODES)}); salvage found "
            f"{report['blocks']['damaged']} damaged, {report['blocks']['zero']} all-zero"
        )
        print(
            f"rows: {rows['saved']} saved ({rows['sql']} through SQL, {rows['carved']} carved), "
            f"{rows['carved_kept_apart']} kept apart, {report['lost_count']} lost entries "
            f"({report['maybe_lost_count']} index entries into lost pages), of {nrows}"
        )
        for manifest in reversed(manifests):
            subprocess.run([pgsurgeon, "undo", manifest], capture_output=True, check=False)
        return 1 if args.check and ratio > 1.5 else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.remove:
            cluster.destroy()


if __name__ == "__main__":
    sys.exit(main())
