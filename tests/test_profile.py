"""``PGSURGEON_PROFILE=path``: each thread's busy time from the engine's own counters (issue 35), for carve and
scan, against a real PostgreSQL 18 cluster. The numbers must hang together: no thread busier than the command
lasted, no more worker threads than -j, the workers' CPU within the engine's window times -j, the serial share the
sum of its parts, and the rows the same at every -j."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fix_pg import MakeLab

SLACK = 0.05  # seconds: clock reads around a span, rounding


def _run(args: list[str], profile: Path) -> str:
    env = {**os.environ, "PGSURGEON_PROFILE": str(profile)}
    proc = subprocess.run([sys.executable, "-m", "pgsurgeon", *args], capture_output=True, text=True, env=env)
    assert proc.returncode in (0, 2), proc.stderr
    return proc.stdout


def _consistent(doc: dict[str, Any], jobs: int, worker_roles: set[str]) -> dict[str, Any]:
    s = doc["summary"]
    spans = doc["spans"]
    command = next(sp for sp in spans if sp["role"] == "call.command")
    wall = (command["end_ns"] - command["start_ns"]) / 1e9
    for sp in spans:
        assert command["start_ns"] <= sp["start_ns"] <= sp["end_ns"] <= command["end_ns"], sp
        # a thread cannot use more CPU in a span than the span lasted
        assert sp["cpu_ns"] <= sp["end_ns"] - sp["start_ns"] + SLACK * 1e9, sp
    workers = {t for t, roles in s["roles_by_thread"].items() if set(roles) & worker_roles}
    assert 1 <= len(workers) <= jobs, s["roles_by_thread"]
    for t, busy in s["busy_by_thread"].items():
        assert 0 <= busy <= wall + SLACK, (t, busy, wall)
    assert 0 < s["workers_s"] <= s["engine_wall_s"] * jobs + SLACK
    assert s["workers_s"] == sum(v for r, v in s["cpu_by_role"].items() if r in worker_roles)
    assert abs(s["serial_s"] - (s["python_s"] + s["serial_steps_s"] + s["pipeline_s"])) < 1e-9
    assert abs(s["serial_share"] - s["serial_s"] / s["workers_s"]) < 1e-9
    # Amdahl: more cores never slower, never more than the cores
    assert 1 <= s["predicted_speedup"]["16"] <= s["predicted_speedup"]["64"] <= 64
    assert doc["cpu_s"] > 0 and doc["max_rss_mb"] > 0
    return s


def test_profile_of_carve_and_scan(make_lab: MakeLab, tmp_path: Path) -> None:
    """Fails when a span is recorded outside the command, a thread is counted busier than the command lasted, the
    engine runs more workers than -j, the writer is not seen as a thread of its own, or the carved rows differ
    between -j 1 and -j 3."""
    lab = make_lab("18")
    with lab.connect() as conn:
        conn.execute("CREATE TABLE t AS SELECT g AS id, md5(g::text) AS body FROM generate_series(1, 200000) g")
        conn.execute("CHECKPOINT")
    digests = set()
    for jobs in (1, 3):
        prof = tmp_path / f"carve-{jobs}.json"
        out = tmp_path / f"carve-{jobs}"
        report = json.loads(
            _run(
                ["salvage", "--dsn", lab.dsn(), "-t", "t", "--carve-all", "--out", str(out), "-j", str(jobs),
                 "--report-format", "json"],
                prof,
            )
        )  # fmt: skip
        doc = json.loads(prof.read_text())
        s = _consistent(doc, jobs, {"worker.read", "worker.carve"})
        assert ["writer"] in s["roles_by_thread"].values()
        assert s["engine_wall_s"] > 0
        digests.add(hashlib.sha256(Path(report["outputs"]["rows_file"]).read_bytes()).hexdigest())
    assert len(digests) == 1

    lab.stop()
    prof = tmp_path / "scan.json"
    _run(["scan", str(lab.pgdata), "-j", "2", "--format", "json"], prof)
    doc = json.loads(prof.read_text())
    s = _consistent(doc, 2, {"worker.read", "worker.check"})
    assert {"scan.prepare", "scan.heapmap", "scan.assemble"} <= set(s["cpu_by_role"])


def test_no_profile_without_the_variable(make_lab: MakeLab, tmp_path: Path) -> None:
    """Fails when a command writes a profile (or fails) with PGSURGEON_PROFILE unset."""
    lab = make_lab("18", start=False)
    env = {k: v for k, v in os.environ.items() if k != "PGSURGEON_PROFILE"}
    proc = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "scan", str(lab.pgdata), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []
