"""Under load (issue 14): `pgbench -c 4 -T 60` on a healthy pgbench database while diagnose, diagnose
--heapallindexed and salvage --out run in turn, back to back, until pgbench ends. Passes when pgbench reports no
failed transaction, every diagnose exits 0 with no error finding, and every salvage exits 0 (every row saved, none
carved or lost).

Builds its own cluster (bench/labs.py, PostgreSQL 18, checksums on, scale 100 by default) under --lab-dir, apart
from the timing benchmarks' clusters: pgbench changes the tables it runs on.

    python bench/load.py [--scale 100] [--seconds 60] [--jobs 2] [--lab-dir /var/tmp/pgsurgeon-load]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from labs import pgbench_cluster, server_user


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lab-dir", type=Path, default=Path("/var/tmp/pgsurgeon-load"))
    args = ap.parse_args()
    cluster = pgbench_cluster(args.lab_dir, args.scale)
    pgsurgeon = shutil.which("pgsurgeon") or str(Path(sys.executable).with_name("pgsurgeon"))
    dsn = cluster.dsn()
    user = server_user()
    as_user: dict[str, object] = {"user": user.uid, "group": user.gid, "cwd": "/"} if user.switch else {}
    pgbench = [str(cluster.install.tool("pgbench")), "-h", str(cluster.run_dir), "-p", str(cluster.port)]
    pgbench += ["-U", "postgres", "-c", "4", "-j", "2", "-T", str(args.seconds), "-P", "10", "postgres"]
    out_dir = args.lab_dir / "salvage-out"
    jobs = ["-j", str(args.jobs)]
    salvage = [pgsurgeon, "salvage", "-d", dsn, "-t", "pgbench_accounts", *jobs, "--out", str(out_dir)]
    runs = [
        ("diagnose", [pgsurgeon, "diagnose", "-d", dsn, *jobs, "--format", "json"]),
        (
            "diagnose --heapallindexed",
            [pgsurgeon, "diagnose", "-d", dsn, *jobs, "--heapallindexed", "--format", "json"],
        ),
        ("salvage --out", [*salvage, "--report-format", "json"]),
    ]
    started = time.monotonic()
    load = subprocess.Popen(pgbench, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **as_user)  # type: ignore[call-overload]
    ok = True
    n = 0
    print(f"{'at s':>6}  {'run':<28}{'exit':>5}{'seconds':>9}  what it found", flush=True)
    while load.poll() is None:
        label, cmd = runs[n % len(runs)]
        n += 1
        shutil.rmtree(out_dir, ignore_errors=True)
        t = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        took = time.monotonic() - t
        if label.startswith("diagnose"):
            summary = json.loads(proc.stdout)["summary"] if proc.stdout else {}
            said = f"{summary.get('errors')} errors, {summary.get('findings')} findings"
            ok = ok and proc.returncode == 0 and summary.get("errors") == 0
        else:
            report = json.loads(proc.stdout) if proc.stdout else {}
            damaged, lost = len(report.get("damaged_blocks", [])), len(report.get("lost", []))
            rows = report.get("rows") or {}
            said = (
                f"{rows.get('saved')} rows saved ({rows.get('carved')} carved), {damaged} damaged blocks, {lost} lost"
            )
            ok = ok and proc.returncode == 0 and damaged == 0 and lost == 0
        print(f"{t - started:6.1f}  {label:<28}{proc.returncode:>5}{took:9.2f}  {said}", flush=True)
    stdout, stderr = load.communicate()
    failed = re.search(r"number of failed transactions: (\d+)", stdout)
    processed = re.search(r"number of transactions actually processed: (\d+)", stdout)
    print(
        f"pgbench -c 4 -T {args.seconds}: {processed[1] if processed else '?'} transactions, "
        f"{failed[1] if failed else '?'} failed, exit {load.returncode}"
    )
    ok = ok and load.returncode == 0 and failed is not None and failed[1] == "0"
    if not ok:
        print(stderr[-2000:], file=sys.stderr)
    print("passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
