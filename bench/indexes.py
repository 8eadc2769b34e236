"""Benchmark (issue 30): what the GIN, GiST, SP-GiST, hash, BRIN, visibility-map and free-space-map checks cost
`scan` and `diagnose` on the bench cluster with a GIN, a GiST and a BRIN index added.

A/B on the same cluster: the pgsurgeon of this checkout against the one of ``--base`` (a wheel built from the commit
before issue 30's checks landed, given by its unpacked directory, run with PYTHONPATH so it shadows this checkout's
package). The product has no switch that turns the new checks off: the old commit is what "without the new checks"
was. Each side runs alternately, --repeat rounds, medians reported: the machine may be shared. Also diagnose against
pg_amcheck (heap + btree) at the same -j, and peak RSS (wait4; it includes the forking Python's ~20 MB).
Targets: scan and diagnose ≤ 1.2x the base, diagnose ≤ 2x pg_amcheck, peak RSS ≤ 200 MB.

CPU too: the command's own (wait4) and the server's (its processes' times in /proc, the reaped backends included),
and the least time that CPU can take on this machine's cores, each kept busy all along.

    cd /tmp/base && git -C CHECKOUT archive a4221b6 | tar -x && maturin build --release -o /tmp/base/wheel
    unzip -q /tmp/base/wheel/*.whl -d /tmp/base/site
    python bench/indexes.py --base /tmp/base/site [--jobs 2] [--repeat 3] [--lab-dir /var/tmp/pgsurgeon-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from labs import pgbench_cluster, run_measured, run_usage, server_cpu

# The indexes added to pgbench_accounts (10 M rows at scale 100): an int4[] GIN (bid and a key of 1000 values: long
# posting trees), a box GiST over (aid, bid) and a minmax BRIN on aid.
INDEXES = {
    "acc_gin": "CREATE INDEX acc_gin ON pgbench_accounts USING gin ((ARRAY[bid, aid % 1000]))",
    "acc_gist": "CREATE INDEX acc_gist ON pgbench_accounts USING gist (box(point(aid, bid), point(aid, bid)))",
    "acc_brin": "CREATE INDEX acc_brin ON pgbench_accounts USING brin (aid)",
}


def add_indexes(cluster: object) -> None:
    with cluster.connect() as conn:  # type: ignore[attr-defined]
        conn.execute("SET maintenance_work_mem = '256MB'")
        for name, ddl in INDEXES.items():
            if conn.execute("SELECT to_regclass(%s)", [name]).fetchone()[0] is None:
                print(f"adding {name} (once) ...", file=sys.stderr)
                conn.execute(ddl)
        conn.execute("VACUUM ANALYZE pgbench_accounts")
        conn.execute("CHECKPOINT")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the unpacked wheel of the commit before issue 30")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    args = ap.parse_args()
    cluster = pgbench_cluster(args.lab_dir, 100)
    add_indexes(cluster)
    py = sys.executable
    sides = {
        "base": {**os.environ, "PYTHONPATH": str(args.base)},
        "now": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    }
    j = ["-j", str(args.jobs)]
    diagnose = [py, "-m", "pgsurgeon", "diagnose", "--dsn", cluster.dsn(), *j, "--format", "json"]
    amcheck = [str(cluster.install.tool("pg_amcheck")), "-h", str(cluster.run_dir), "-p", str(cluster.port)]
    amcheck += ["-U", "postgres", "-d", "postgres", *j]
    scan = [py, "-m", "pgsurgeon", "scan", str(cluster.pgdata), *j, "--format", "json"]
    times: dict[str, list[tuple[float, float, int, str]]] = {}
    cpu: dict[str, list[tuple[float, float]]] = {}

    def run(label: str, cmd: list[str], env: dict[str, str] | None) -> None:
        before = server_cpu(cluster)
        elapsed, usage, code, out = run_usage(cmd, env=env, as_server=cluster if env is None else None)
        time.sleep(0.3)  # the last backends exit and are reaped
        times.setdefault(label, []).append((elapsed, usage.ru_maxrss / 1024, code, out))
        cpu.setdefault(label, []).append((usage.ru_utime + usage.ru_stime, server_cpu(cluster) - before))

    load_before = os.getloadavg()
    for env in sides.values():  # warm
        run_measured(diagnose, env=env)
    run_measured(amcheck, as_server=cluster)
    for _ in range(args.repeat):
        for side, env in sides.items():
            run(f"diagnose ({side})", diagnose, env)
        run("pg_amcheck (heap + btree)", amcheck, None)
    cluster.stop()
    try:
        for env in sides.values():  # warm
            run_measured(scan, env=env)
        for _ in range(args.repeat):
            for side, env in sides.items():
                run(f"scan ({side})", scan, env)
    finally:
        cluster.start()
    load = os.getloadavg()
    res = {k: (statistics.median(t[0] for t in v), max(t[1] for t in v)) for k, v in times.items()}
    found = {
        k: max(json.loads(t[3])["summary"]["findings"] for t in v) for k, v in times.items() if "pg_amcheck" not in k
    }
    lines = [
        f"pgbench scale 100 + {', '.join(INDEXES)}; PostgreSQL {cluster.install.short_version}, checksums on, "
        f"{os.cpu_count()} cores shared with other work, -j {args.jobs}, warm page cache, sides alternating, median "
        f"of {args.repeat}; load average (1 min) before {load_before[0]:.2f}, after {load[0]:.2f}",
        f"{'run':28} {'seconds':>8} {'peak RSS MB':>12} {'findings':>9}",
    ]
    lines += [f"{k:28} {s:8.2f} {rss:12.1f} {found.get(k, '-')!s:>9}" for k, (s, rss) in res.items()]
    ratios = {
        "scan now / base": res["scan (now)"][0] / res["scan (base)"][0],
        "diagnose now / base": res["diagnose (now)"][0] / res["diagnose (base)"][0],
        "diagnose now / pg_amcheck": res["diagnose (now)"][0] / res["pg_amcheck (heap + btree)"][0],
    }
    lines += [f"{k}: {v:.2f}x" for k, v in ratios.items()]
    cores = os.cpu_count() or 1
    lines.append(f"{'CPU (medians)':28} {'own s':>8} {'server s':>9} {'least s on ' + str(cores) + ' cores':>20}")
    least = {}
    for k, v in cpu.items():
        own, server = statistics.median(c[0] for c in v), statistics.median(c[1] for c in v)
        least[k] = (own + server) / cores
        lines.append(f"{k:28} {own:8.2f} {server:9.2f} {least[k]:20.2f}")
    floor = least["diagnose (now)"] / res["pg_amcheck (heap + btree)"][0]
    lines.append(f"diagnose's CPU on {cores} cores, all busy, against pg_amcheck's time: at least {floor:.2f}x")
    print("\n".join(lines))
    rss = max(v[1] for k, v in res.items() if "now" in k)
    missed = ratios["scan now / base"] > 1.2 or ratios["diagnose now / base"] > 1.2
    missed = missed or ratios["diagnose now / pg_amcheck"] > 2.0 or rss > 200
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
