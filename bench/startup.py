"""Benchmark (issue 35): the fixed start-up of each command, on an empty cluster, in phases.

On the empty PostgreSQL 18 cluster of bench/many_cores.py (one empty table, amcheck and pageinspect), each command
runs --repeat times, as a user runs it (the console script, bytecode compiled); the median of each figure:

- wall and CPU seconds of the whole command (os.wait4: its children, pg_waldump, included);
- the interpreter: ``python -c pass``;
- the imports the run made (``-X importtime``, a run of its own), and of them the driver (psycopg) and rich;
- the Python layer's CPU outside the core (PGSURGEON_PROFILE ``python_s``: argv, catalog, connection, rendering)
  and the core's calls (wall).

The online commands (diagnose, salvage, health --live) run against the started cluster; the offline ones (scan,
health, unload) with it stopped.

    python bench/startup.py [--repeat 7] [--lab-dir /var/tmp/pgsurgeon-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from labs import empty_cluster, run_usage

_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)")


def imports(cmd: list[str]) -> dict[str, float]:
    """Seconds of the imports ``cmd`` (a pgsurgeon command line) made: all of them, psycopg's and rich's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pgsurgeon", *cmd[1:]],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    total, parts = 0.0, {"psycopg": 0.0, "rich": 0.0}
    for m in _IMPORT.finditer(done.stderr):
        cumulative, depth, name = int(m.group(2)) * 1e-6, len(m.group(3)), m.group(4)
        if depth == 1:
            total += cumulative
        if name in parts:
            parts[name] = max(parts[name], cumulative)
    return {"imports": total, **parts}


def measure(cmd: list[str], repeat: int, out: Path | None) -> dict[str, float]:
    """Medians over ``repeat`` runs (after one to warm the page cache and the bytecode)."""
    rows: list[dict[str, float]] = []
    for i in range(repeat + 1):
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        prof = Path(tempfile.mktemp(prefix="pgsurgeon-profile-", suffix=".json"))
        wall, usage, _code, _text = run_usage(cmd, env={**os.environ, "PGSURGEON_PROFILE": str(prof)})
        summary = json.loads(prof.read_text())["summary"] if prof.exists() else {}
        prof.unlink(missing_ok=True)
        if i:
            rows.append(
                {
                    "wall": wall,
                    "cpu": usage.ru_utime + usage.ru_stime,
                    "python": summary.get("python_s", 0.0),
                    "core": float(summary.get("engine_wall_s", 0.0)) + float(summary.get("evidence_wall_s", 0.0)),
                    **imports(cmd),
                }
            )
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def interpreter(repeat: int) -> tuple[float, float]:
    runs = [run_usage([sys.executable, "-c", "pass"]) for _ in range(repeat + 1)][1:]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1].ru_utime + r[1].ru_stime for r in runs),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-bench"))
    args = ap.parse_args()
    empty = empty_cluster(args.lab_dir)
    pgs = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    work = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-startup-"))
    d, dsn = str(empty.pgdata), empty.dsn()
    online = {
        "diagnose": ([pgs, "diagnose", "--dsn", dsn, "-j", "2", "--format", "json"], None),
        "salvage --carve-all": (
            [
                pgs,
                "salvage",
                "--dsn",
                dsn,
                "-t",
                "t",
                "--carve-all",
                "--out",
                str(work / "s"),
                "-j",
                "2",
                "--report-format",
                "json",
            ],
            work / "s",
        ),
        "health --live -d": ([pgs, "health", d, "--live", "-d", dsn, "-j", "2", "--format", "json"], None),
    }
    offline = {
        "scan": ([pgs, "scan", d, "-j", "2", "--format", "json"], None),
        "health": ([pgs, "health", d, "-j", "2", "--format", "json"], None),
        "unload --schema files": (
            [pgs, "unload", d, "--out", str(work / "u"), "-j", "2", "--schema", "files"],
            work / "u",
        ),
    }
    results: dict[str, dict[str, float]] = {}
    try:
        for name, (cmd, out) in online.items():
            results[name] = measure(cmd, args.repeat, out)
        empty.stop()
        try:
            for name, (cmd, out) in offline.items():
                results[name] = measure(cmd, args.repeat, out)
        finally:
            empty.start()
        py_wall, py_cpu = interpreter(args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"empty PostgreSQL {empty.install.short_version} cluster, {os.cpu_count()} cores, median of {args.repeat}; "
        f"the interpreter alone (python -c pass): {py_wall:.3f} s wall, {py_cpu:.3f} s CPU"
    )
    print(f"{'command':<24}{'wall s':>8}{'CPU s':>8}{'imports':>9}{'psycopg':>9}{'rich':>7}{'python':>8}{'core':>7}")
    for name, r in results.items():
        print(
            f"{name:<24}{r['wall']:8.3f}{r['cpu']:8.3f}{r['imports']:9.3f}{r['psycopg']:9.3f}{r['rich']:7.3f}"
            f"{r['python']:8.3f}{r['core']:7.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
