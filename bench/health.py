"""Benchmark: `pgsurgeon health` against pgstattuple + pgstatindex over every relation through the server, and against
`pg_checksums --check`, on the same pgbench cluster in one run (issue 33's targets).

Equal work: the server computes pgstattuple of every table and btree index of the database (and pgstatindex of each
btree) in one psql session; pgsurgeon health counts the same figures for the same relations from the files (the
server stopped, warm page cache), at -j 1 and on every core. --check exits 1 when health on every core takes more
than 1.0x pg_checksums on the same machine, 0.2x the server's functions, or more than 200 MB.

    python bench/health.py [--scale 100] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench] [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

from labs import pgbench_cluster, run_measured

# every table, TOAST table and btree index of the database, through the server's own functions
SERVER_SQL = """
CREATE EXTENSION IF NOT EXISTS pgstattuple;
SELECT count(*), sum(s.tuple_count), sum(s.dead_tuple_count)
  FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam, LATERAL pgstattuple(c.oid) s
  WHERE c.relkind IN ('r', 't', 'm') OR (c.relkind = 'i' AND a.amname = 'btree');
SELECT count(*), sum(s.leaf_pages)
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam, LATERAL pgstatindex(c.oid::regclass) s
  WHERE c.relkind = 'i' AND a.amname = 'btree';
"""


def median(runs: list[tuple[float, float, int, str]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()

    cluster = pgbench_cluster(args.lab_dir, args.scale)
    psql = [str(cluster.install.tool("psql")), "-X", "-q", "-h", str(cluster.run_dir), "-p", str(cluster.port)]
    server_cmd = [*psql, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", SERVER_SQL]
    run_measured(server_cmd, as_server=cluster)  # warm: the relations in shared buffers / page cache
    server = median([run_measured(server_cmd, as_server=cluster) for _ in range(args.repeat)])
    cluster.stop()
    try:
        pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
        checksums = [str(cluster.install.tool("pg_checksums")), "--check", "-D", str(cluster.pgdata)]
        run_measured(checksums, as_server=cluster)
        pg_checksums = median([run_measured(checksums, as_server=cluster) for _ in range(args.repeat)])
        ours: dict[int, tuple[float, float]] = {}
        for jobs in sorted({1, os.cpu_count() or 1}):
            cmd = [pgsurgeon, "health", str(cluster.pgdata), "--system", "-j", str(jobs)]  # a summary, as psql prints
            run_measured(cmd)
            ours[jobs] = median([run_measured(cmd) for _ in range(args.repeat)])
    finally:
        cluster.start()
    print(
        f"pgbench scale {args.scale}, PostgreSQL {cluster.install.short_version}, {os.cpu_count()} cores, "
        f"warm page cache, median of {args.repeat}"
    )
    print(f"{'work':52} {'seconds':>8} {'peak RSS MB':>12}")
    print(f"{'pgstattuple + pgstatindex of every relation (server)':52} {server[0]:8.2f} {server[1]:12.1f}")
    print(f"{'pg_checksums --check (one thread)':52} {pg_checksums[0]:8.2f} {pg_checksums[1]:12.1f}")
    for jobs, (secs, rss) in ours.items():
        print(f"{f'pgsurgeon health -j {jobs}':52} {secs:8.2f} {rss:12.1f}")
    best = min(secs for secs, _ in ours.values())  # every core of the machine pg_checksums ran on
    print(f"health (all cores) / pg_checksums: {best / pg_checksums[0]:.2f}x; / the server's functions: "
          f"{best / server[0]:.2f}x (targets: <= 1.0x, < 0.2x; peak RSS <= 200 MB)")  # fmt: skip
    missed = best > pg_checksums[0] or best > 0.2 * server[0] or max(r for _, r in ours.values()) > 200
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
