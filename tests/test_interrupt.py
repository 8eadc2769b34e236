"""Stopping work half-way leaves nothing running: SIGTERM to the test suite or to ``pgsurgeon lab`` stops every
PostgreSQL server they started and removes their directories, as Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fix_pg import running
from pgsurgeon.exitcodes import Exit

TESTS = Path(__file__).resolve().parent

HOLD = """
import os, time
from pathlib import Path

def test_hold(make_lab, pg18):
    lab = make_lab("15")
    mark = Path(os.environ["PGSURGEON_TEST_MARK"])
    pids = [str(c.postmaster_pid()) for c in (lab, pg18)]
    mark.write_text(str(lab.lab_dir.parent) + "\\n" + " ".join(pids))
    time.sleep(300)
"""


def still_running(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still running a few seconds on: pg_ctl stop returns once the postmaster has removed
    its pid file, a moment before the process is gone."""
    deadline = time.monotonic() + 10
    while (left := [p for p in pids if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def wait_for(predicate: object, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.parametrize("jobs", [[], ["-n", "2", "--dist", "loadfile"]], ids=["serial", "xdist"])
def test_sigterm_to_the_suite_stops_its_servers_and_removes_their_directories(tmp_path: Path, jobs: list[str]) -> None:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\npytest_plugins = ['fix_pg']\n"
    )
    (tmp_path / "test_hold.py").write_text(HOLD)
    mark = tmp_path / "mark"
    env = {**os.environ, "PGSURGEON_TEST_MARK": str(mark)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *jobs, "-q", "-p", "no:cacheprovider", str(tmp_path / "test_hold.py")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: mark.exists() or proc.poll() is not None, "the held test to start its servers")
        assert mark.exists(), proc.communicate()[0]
        base, pids = mark.read_text().split("\n")
        servers = [int(p) for p in pids.split()]
        assert base.startswith("/tmp/pgsurgeon-test-") and all(running(p) for p in servers)
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, out
    assert not still_running(servers), f"servers still running after SIGTERM:\n{out}"
    assert not Path(base).exists(), f"{base} left behind:\n{out}"


def test_sigterm_to_a_lab_run_stops_its_servers_and_removes_their_directories(tmp_path: Path, scratch: Path) -> None:
    lab_dir = scratch
    cmd = [sys.executable, "-m", "pgsurgeon.cli", "lab", "--lab-dir", str(lab_dir), "--modes", "zero,header"]
    proc = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pid_files: list[Path] = []

    def started() -> bool:
        pid_files[:] = list(lab_dir.glob("pgsurgeon-lab-*/*/data/postmaster.pid"))
        return len(pid_files) == 2 or proc.poll() is not None

    try:
        wait_for(started, "the lab's two servers to start")
        assert len(pid_files) == 2, proc.communicate()
        servers = [int(f.read_text().split()[0]) for f in pid_files]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == Exit.TERMINATED, err
    assert err.rstrip().endswith("pgsurgeon: terminated"), err
    assert not still_running(servers), err
    assert list(lab_dir.iterdir()) == [], err
