"""Benchmark (issue 35): how scan, carve, unload and diagnose would scale past the cores at hand, measured on them.

Builds (once, then reuses) the pgbench cluster of bench/labs.py at --scale (PostgreSQL 18, checksums on) and an
empty cluster beside it. In one run, each command at every -j of --jobs beside its baseline, alternately:

- `salvage --carve-all --out` (server running) beside the server's `COPY t TO 'file'`;
- `diagnose` beside `pg_amcheck` at the same -j;
- `scan` (server stopped) beside `pg_checksums --check` (one thread);
- `unload --schema files` (server stopped) beside the server's COPY of every table, summed.

For each run: wall seconds, CPU seconds and peak RSS (os.wait4), and from the engine's own counters
(PGSURGEON_PROFILE, python/pgsurgeon/profile.py) each thread's busy CPU time, the serial part (the Python layer
outside the core, the core's single-threaded steps, the writer thread) against the workers' total, the speed-up
that share predicts at 16 and 64 cores (Amdahl), and the CPU/wall ratio of the parallel phase. The sha256 of the
output must be the same at every -j. The fixed start-up (interpreter, imports, catalog, connection) is measured on
the empty cluster and reported apart; "serial share, growing" leaves it out.

    python bench/many_cores.py [--scale 100] [--jobs 1,2,8,16] [--lab-dir /var/tmp/pgsurgeon-bench]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carve import digest
from labs import empty_cluster, pgbench_cluster, run_usage
from unload import TABLES_SQL

from pgsurgeon.lab import LabCluster
from pgsurgeon.profile import amdahl

TABLE = "pgbench_accounts"


@dataclass
class Run:
    label: str
    jobs: int
    wall: float
    cpu: float
    rss: float
    out: str
    profile: dict[str, Any] = field(default_factory=dict)
    sha: str = ""


def measure(label: str, jobs: int, cmd: list[str], *, as_server: LabCluster | None = None) -> Run:
    """Run ``cmd`` (as the server's OS user with ``as_server``; else with a profile): wall, CPU and peak RSS from
    wait4, stdout, and the profile's summary."""
    prof = Path(tempfile.mktemp(prefix="pgsurgeon-profile-", suffix=".json"))
    env = None if as_server is not None else {**os.environ, "PGSURGEON_PROFILE": str(prof)}
    wall, usage, _code, text = run_usage(cmd, as_server=as_server, env=env)
    summary: dict[str, Any] = {}
    if prof.exists():
        summary = json.loads(prof.read_text())["summary"]
        prof.unlink()
    return Run(label, jobs, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text, summary)


def sha_of(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(digest(p).encode())
    return h.hexdigest()[:16]


def findings_sha(findings: list[dict[str, Any]]) -> str:
    """The findings' codes and places, in a stable order (their messages carry timings and -j)."""
    keys = sorted(json.dumps([f.get(k) for k in ("code", "relation", "path", "block", "lp")]) for f in findings)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def server_copy(cluster: LabCluster, tables: list[str], work: Path) -> Run:
    with cluster.connect() as conn:
        started = time.perf_counter()
        for i, t in enumerate(tables):
            conn.execute(f"COPY {t} TO '{work / f'server-{i}.copy'}'")  # our own temporary directory
        wall = time.perf_counter() - started
    for i in range(len(tables)):
        (work / f"server-{i}.copy").unlink()
    return Run(f"server COPY ({len(tables)} tables)", 1, wall, float("nan"), float("nan"), "")


def line(r: Run, growing_fixed: float) -> str:
    p = r.profile
    share = p.get("serial_share")
    workers = p.get("workers_s", 0.0)
    grow = None
    if workers:
        grow = max(0.0, p["serial_s"] - growing_fixed) / workers
    threads = p.get("busy_by_thread", {})
    roles = p.get("roles_by_thread", {})
    worker_busy = [v for t, v in threads.items() if any(x.startswith("worker.") for x in roles.get(t, []))]
    cols = [
        f"{r.label:<28}{r.jobs:>4}",
        f"{r.wall:7.2f}",
        f"{r.cpu:7.2f}" if r.cpu == r.cpu else "      -",
        f"{r.rss:6.0f}" if r.rss == r.rss else "     -",
    ]
    if p:
        par = p.get("parallel_cpu_per_wall")
        cols += [
            f"{workers:7.2f} ({len(worker_busy):>2} thr)",
            f"{p['pipeline_s']:6.2f}",
            f"{p['serial_steps_s']:6.2f}",
            f"{p['python_s']:6.2f}",
            f"{share:6.3f}" if share is not None else "     -",
            f"{grow:6.3f}" if grow is not None else "     -",
            f"{amdahl(grow, 16):5.1f}x {amdahl(grow, 64):5.1f}x" if grow is not None else "      -       -",
            f"{par:5.2f}" if par else "    -",
            r.sha,
        ]
    return "  ".join(cols)


HEADER = (
    f"{'run':<28}{'-j':>4}  {'wall s':>7}  {'CPU s':>7}  {'RSS MB':>6}  {'workers busy s':>16}  {'writer':>6}  "
    f"{'steps':>6}  {'python':>6}  {'serial':>6}  {'grow':>6}  {'@16':>6} {'@64':>6}  {'c/w':>5}  sha256"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--jobs", default="1,2,8,16")
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    ap.add_argument("--only", default="carve,diagnose,scan,unload", help="the commands to run (comma-separated)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    jobs = [int(j) for j in args.jobs.split(",")]
    cluster = pgbench_cluster(args.lab_dir, args.scale)
    empty = empty_cluster(args.lab_dir)
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    amcheck = [str(cluster.install.tool("pg_amcheck")), "-h", str(cluster.run_dir), "-p", str(cluster.port)]
    amcheck += ["-U", "postgres", "-d", "postgres"]
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-cores-", dir="/var/tmp"))
    work.chmod(0o777)  # the server (another user) writes its COPY files here
    runs: dict[str, list[Run]] = {"carve": [], "diagnose": [], "scan": [], "unload": []}
    fixed: dict[str, Run] = {}
    try:
        with cluster.connect() as conn:
            tables = [r[0] for r in conn.execute(TABLES_SQL).fetchall()]
            size = conn.execute("SELECT pg_database_size('postgres')").fetchone()[0]  # type: ignore[index]
        server_copy(cluster, tables, work)  # warm the page cache
        # fixed start-up, on the empty cluster
        fixed["carve"] = measure(
            "salvage --carve-all (empty)",
            2,
            [
                pgsurgeon,
                "salvage",
                "--dsn",
                empty.dsn(),
                "-t",
                "t",
                "--carve-all",
                "--out",
                str(work / "e"),
                "-j",
                "2",
                "--report-format",
                "json",
            ],
        )
        fixed["diagnose"] = measure(
            "diagnose (empty)", 2, [pgsurgeon, "diagnose", "--dsn", empty.dsn(), "-j", "2", "--format", "json"]
        )
        for j in jobs if "carve" in only else []:
            runs["carve"].append(server_copy(cluster, [TABLE], work))
            out = work / f"carve-{j}"
            r = measure(
                "salvage --carve-all --out",
                j,
                [
                    pgsurgeon,
                    "salvage",
                    "--dsn",
                    cluster.dsn(),
                    "-t",
                    TABLE,
                    "--carve-all",
                    "--out",
                    str(out),
                    "-j",
                    str(j),
                    "--report-format",
                    "json",
                ],
            )
            r.sha = sha_of([Path(json.loads(r.out)["outputs"]["rows_file"])])
            shutil.rmtree(out)
            runs["carve"].append(r)
        for j in jobs if "diagnose" in only else []:
            runs["diagnose"].append(measure("pg_amcheck", j, [*amcheck, "-j", str(j)], as_server=cluster))
            r = measure(
                "diagnose", j, [pgsurgeon, "diagnose", "--dsn", cluster.dsn(), "-j", str(j), "--format", "json"]
            )
            r.sha = findings_sha(json.loads(r.out)["findings"])
            runs["diagnose"].append(r)
        copy_all = server_copy(cluster, tables, work)
        cluster.stop()
        empty.stop()
        try:
            fixed["scan"] = measure(
                "scan (empty)", 2, [pgsurgeon, "scan", str(empty.pgdata), "-j", "2", "--format", "json"]
            )
            fixed["unload"] = measure(
                "unload (empty)",
                2,
                [pgsurgeon, "unload", str(empty.pgdata), "--out", str(work / "ue"), "-j", "2", "--schema", "files"],
            )
            checksums = [str(cluster.install.tool("pg_checksums")), "--check", "-D", str(cluster.pgdata)]
            for j in jobs if "scan" in only else []:
                runs["scan"].append(measure("pg_checksums --check", 1, checksums, as_server=cluster))
                r = measure("scan", j, [pgsurgeon, "scan", str(cluster.pgdata), "-j", str(j), "--format", "json"])
                r.sha = findings_sha(json.loads(r.out)["findings"])
                runs["scan"].append(r)
            for j in jobs if "unload" in only else []:
                runs["unload"].append(copy_all)
                out = work / f"unload-{j}"
                r = measure(
                    "unload --schema files",
                    j,
                    [pgsurgeon, "unload", str(cluster.pgdata), "--out", str(out), "-j", str(j), "--schema", "files"],
                )
                report = json.loads((out / "report.json").read_text())
                r.sha = sha_of([out / t["file"] for t in sorted(report["tables"], key=lambda t: t["file"])])
                shutil.rmtree(out)
                runs["unload"].append(r)
        finally:
            cluster.start()
            empty.start()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"pgbench scale {args.scale} ({int(size) / 1e9:.2f} GB), PostgreSQL {cluster.install.short_version}, checksums"
        f" on, {os.cpu_count()} cores, warm page cache; busy = each thread's CPU clock"
    )
    print("fixed start-up on an empty cluster (wall s, CPU s, the Python layer's CPU s):")
    for r in fixed.values():
        print(f"  {r.label:<30} {r.wall:6.2f} {r.cpu:6.2f} {r.profile.get('python_s', 0.0):6.2f}")
    print(HEADER)
    ok = True
    for name, rs in runs.items():
        base_fixed = fixed[name].profile.get("python_s", 0.0) if name in fixed else 0.0
        for r in rs:
            print(line(r, base_fixed))
        ours = [r for r in rs if r.profile]
        if not ours:
            continue
        shas = {r.sha for r in ours}
        by_j = {r.jobs: r for r in ours}
        notes = [f"same output at every -j: {len(shas) == 1}"]
        if 2 in by_j:
            two = by_j[2]
            over = [
                f"-j {j}: {by_j[j].cpu / two.cpu:.2f}x CPU, {by_j[j].wall / two.wall:.2f}x wall"
                for j in (8, 16)
                if j in by_j
            ]
            notes += [f"vs -j 2: {'; '.join(over)}"] if over else []
        notes.append(f"peak RSS max {max(r.rss for r in ours):.0f} MB")
        print(f"  {name}: " + "; ".join(notes))
        ok = ok and len(shas) == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
