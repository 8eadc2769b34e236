"""Benchmark (issues 34, 35): CPU per row of `pgsurgeon unload` against the server's own `COPY t TO 'file'`, and
of two pgsurgeon builds against each other. On a shared machine wall time says little; CPU time does.

Uses the pgbench cluster of bench/labs.py (PostgreSQL 18, checksums on, scale 100). With the server running, every
user table is COPYed to a file --rounds times; the backend's CPU time (utime + stime of /proc/<pid>/stat, read
before and after) is the server's cost. Then the cluster is stopped and `unload --schema files -j JOBS` of each
build runs --rounds times, the builds alternating; its CPU time (user + sys) comes from os.wait4. Prints every run,
the medians and the ratio to the server's CPU, then starts the cluster again.

    python bench/unload_cpu.py [--build NAME=PATH/TO/pgsurgeon ...] [--rounds 5] [--jobs 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from labs import pgbench_cluster, run_usage
from unload import TABLES_SQL


def backend_cpu(pid: int) -> float:
    """utime + stime of process ``pid``, in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", default=[], help="NAME=PATH of a pgsurgeon executable (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    args = ap.parse_args()
    here = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    builds = dict(b.split("=", 1) for b in args.build) or {"this": here}
    cluster = pgbench_cluster(args.lab_dir, 100)
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-unload-cpu-", dir="/var/tmp"))
    work.chmod(0o777)  # the server (another user) writes its COPY files here
    server: list[tuple[float, float]] = []
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in builds}
    try:
        with cluster.connect() as conn:
            tables = [row[0] for row in conn.execute(TABLES_SQL).fetchall()]
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            for r in range(args.rounds + 1):  # the first round warms the cache
                cpu0, t0 = backend_cpu(pid), time.perf_counter()
                for qname in tables:
                    conn.execute(f"COPY {qname} TO '{work / 'server.copy'}'")  # the path is ours
                cpu, wall = backend_cpu(pid) - cpu0, time.perf_counter() - t0
                if r:
                    server.append((cpu, wall))
                    print(f"server COPY, {len(tables)} tables   CPU {cpu:6.2f} s  wall {wall:6.2f} s", flush=True)
            conn.execute("CHECKPOINT")
        cluster.stop()
        try:
            for r in range(args.rounds):
                order = list(builds.items()) if r % 2 == 0 else list(reversed(builds.items()))
                for name, exe in order:
                    out = work / f"out-{name}"
                    shutil.rmtree(out, ignore_errors=True)
                    cmd = [exe, "unload", str(cluster.pgdata), "--out", str(out), "-j", str(args.jobs)]
                    wall, usage, _, _ = run_usage([*cmd, "--schema", "files"])
                    cpu = usage.ru_utime + usage.ru_stime
                    runs[name].append((cpu, wall))
                    print(f"unload {name:12s} -j {args.jobs}  CPU {cpu:6.2f} s  wall {wall:6.2f} s", flush=True)
        finally:
            cluster.start()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    server_cpu = statistics.median(c for c, _ in server)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"server COPY       median CPU {server_cpu:5.2f} s, wall {statistics.median(w for _, w in server):5.2f} s")
    for name, v in runs.items():
        cpu = statistics.median(c for c, _ in v)
        wall = statistics.median(w for _, w in v)
        print(f"unload {name:10s} median CPU {cpu:5.2f} s ({cpu / server_cpu:.2f}x the server's), wall {wall:5.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
