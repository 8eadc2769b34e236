"""``pgsurgeon control --plan``: the pg_resetwal plan (issue 29), on real PostgreSQL 15 and 18.

- pg_wal emptied after a clean stop: the server does not start; alternative (b) of the plan, run through bash exactly
  as printed (copy, pg_resetwal, start, pg_dumpall, stop, scan), brings the copy up with the table as it was: no row
  of the aborted transaction back, no committed row lost, the deleted rows still gone;
- pg_control's CRC broken (one byte flipped, the original put back after): every value comes from the files and
  lies on the safe side of the intact pg_control's (next ids and the next WAL file at or past them, oldest ids at or
  before them);
- bad input: one error line and the documented exit status, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon import core, db
from pgsurgeon.errors import LabError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

ROWS = 3000
TRUTH = "SELECT count(*), md5(string_agg(t::text, ',' ORDER BY id)), count(*) FILTER (WHERE v = 'aborted') FROM t"


def pgsurgeon(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def plan_json(pgdata: Path, *extra: str | Path, code: int = Exit.CLEAN) -> dict[str, Any]:
    done = pgsurgeon("control", "--plan", pgdata, "--format", "json", *extra)
    assert done.returncode == code, done.stdout[-3000:] + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


def values(plan: dict[str, Any]) -> dict[str, Any]:
    return {s["key"]: s["value"] for s in plan["settings"]}


def bash(script: str) -> subprocess.CompletedProcess[str]:
    """As the DBA runs it: bash, stopping at the first command that fails; `pgsurgeon` on PATH."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-e", "-x", "-c", script], capture_output=True, text=True, env=env, timeout=600)


def ground_truth(lab: LabCluster) -> tuple[Any, ...]:
    """Committed rows, rows of an aborted transaction, rows a committed DELETE removed; and a MultiXact (two
    sessions share-locking the same rows) so that pg_multixact has something to say."""
    exec_sql(lab, "CREATE TABLE t (id int PRIMARY KEY, v text)")
    exec_sql(lab, f"INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, {ROWS}) g")
    with lab.connect(autocommit=False) as conn:
        conn.execute(f"INSERT INTO t SELECT g, 'aborted' FROM generate_series({ROWS + 1}, {ROWS + 500}) g")
        conn.rollback()
    exec_sql(lab, "DELETE FROM t WHERE id % 7 = 0")
    with lab.connect(autocommit=False) as a, lab.connect(autocommit=False) as b:
        a.execute("SELECT * FROM t WHERE id < 50 FOR SHARE")
        b.execute("SELECT * FROM t WHERE id < 50 FOR SHARE")
        a.commit()
        b.commit()
    truth = exec_sql(lab, TRUTH)[0]
    assert truth[0] == ROWS - ROWS // 7 and truth[2] == 0, truth
    return truth


@pytest.mark.parametrize("version", ["15", "18"])
def test_pg_wal_emptied_plan_b_as_printed(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    truth = ground_truth(lab)
    lab.stop()
    control = core.read_control(lab.pgdata)
    for seg in (lab.pgdata / "pg_wal").iterdir():
        if seg.is_file():
            seg.unlink()
    with pytest.raises(LabError):
        lab.start()
    # explain on the server's log: after the unload step comes the plan, and the plan step runs as printed
    explained = pgsurgeon("explain", "--file", lab.log_path, "-D", lab.pgdata).stdout
    steps = [ln.strip()[2:] for ln in explained.splitlines() if ln.strip().startswith("$ pgsurgeon ")]
    unload = next(i for i, c in enumerate(steps) if c.startswith("pgsurgeon unload"))
    planned = next(i for i, c in enumerate(steps) if c.startswith("pgsurgeon control --plan"))
    assert unload < planned, steps
    assert pgsurgeon(*steps[planned].split()[1:]).returncode == Exit.CLEAN
    copy = lab.lab_dir / "rescue"
    plan = plan_json(lab.pgdata, "--copy", copy)
    got = values(plan)
    assert plan["control_ok"] and not plan["force"], plan["force_why"]  # a clean stop: -f not needed
    assert got["next_xid"] >= int(control["next_xid"].split(":")[1]) and got["next_multi"] >= control["next_multi"]
    assert got["next_wal_file"] > control["redo_wal_file"], (got, control["redo_wal_file"])
    assert plan["pg_resetwal"].startswith("/") and Path(plan["pg_resetwal"]).is_file(), plan["pg_resetwal"]
    alt = {a["key"]: a for a in plan["alternatives"]}
    assert list(alt) == ["unload", "copy", "original"] and alt["original"]["last_resort"]
    assert alt["unload"]["script"].startswith(f"pgsurgeon unload {lab.pgdata} --out ")
    script = alt["copy"]["script"]
    assert f"cp -a {lab.pgdata} {copy}" in script and "pg_resetwal" in script and "pg_dumpall" in script
    # the plan never runs anything: the original is untouched and no copy exists yet
    assert not copy.exists() and not any((lab.pgdata / "pg_wal").glob("0*"))
    start = next(s["command"] for s in alt["copy"]["steps"] if " start" in s["command"] and "pg_ctl" in s["command"])
    stop = next(s["command"] for s in alt["copy"]["steps"] if s["command"].endswith(" stop"))
    try:
        done = bash(script)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        # pgsurgeon scan COPY, the last step, exits 0 (bash -e): no damage; the stretch of ids pg_resetwal skipped,
        # which no row names, at most warned about
        assert "no damage found" in done.stdout or "\n0 error(s)" in done.stdout, done.stdout[-2000:]
        dump = copy.with_name(copy.name + ".sql").read_text()
        assert "CREATE TABLE public.t" in dump and "COPY public.t" in dump
        # the copy starts again, as printed, and holds exactly the rows the cluster held
        assert bash(start).returncode == 0
        sock = next(w.split("=", 1)[1] for w in start.split() if w.startswith("unix_socket_directories="))
        dsn = db.make_dsn(host=sock, port=5499, user=plan["superuser"], dbname="postgres")
        with db.connect(dsn) as conn:
            row = conn.execute(TRUTH).fetchone()
        assert row == truth, (row, truth)
    finally:
        if (copy / "postmaster.pid").exists():
            bash(stop)


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_broken_crc_plans_from_the_files_alone(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    ground_truth(lab)
    lab.stop()
    path = lab.pgdata / "global" / "pg_control"
    original = path.read_bytes()
    true = core.read_control(lab.pgdata)
    crc = int(true["crc_stored"]).to_bytes(4, "little")
    at = original.index(crc)  # flip a byte of the stored CRC: every value stays as it was, the CRC fails
    try:
        path.write_bytes(original[:at] + bytes([original[at] ^ 0xFF]) + original[at + 1 :])
        assert not core.read_control(lab.pgdata)["crc_ok"]
        plan = plan_json(lab.pgdata, code=Exit.DAMAGE)
        assert not plan["control_ok"] and plan["force"] and "CRC" in plan["control_problem"]
        assert all(s["from_control"] is None for s in plan["settings"]), plan["settings"]
        got = values(plan)
        assert got["next_xid"] >= int(true["next_xid"].split(":")[1]), (got, true["next_xid"])
        assert got["next_multi"] >= true["next_multi"] > 1, (got, true["next_multi"])
        assert got["next_multi_offset"] >= true["next_multi_offset"] > 0, (got, true["next_multi_offset"])
        assert got["next_wal_file"] > true["redo_wal_file"], (got, true["redo_wal_file"])
        # oldest ids: the safe side is at or before the true ones (a later one moves the wraparound limits on)
        assert 3 <= got["oldest_xid"] <= true["oldest_xid"], (got, true["oldest_xid"])
        assert 1 <= got["oldest_multi"] <= true["oldest_multi"], (got, true["oldest_multi"])
        assert got["epoch"] is None and any(n.startswith("-e") for n in plan["not_derived"]), plan["not_derived"]
        assert plan["blcksz"] == true["blcksz"] and plan["wal_seg_size"] == true["xlog_seg_size"]
        assert plan["arguments"][0] == "-f"
        text = pgsurgeon("control", "--plan", lab.pgdata)
        assert text.returncode == Exit.DAMAGE and "NOT USED" in text.stdout and "-f needed" in text.stdout
    finally:
        path.write_bytes(original)
    lab.start()


def _one_error(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert done.returncode == code, (done.returncode, done.stdout[-2000:], done.stderr)
    assert "Traceback" not in done.stderr and not done.stdout, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("pgsurgeon: error: ") and all(w in lines[0] for w in words), lines
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), lines


def _fake_datadir(root: Path, pg_version: str, control: bytes) -> Path:
    (root / "global").mkdir(parents=True)
    (root / "pg_wal").mkdir()
    (root / "PG_VERSION").write_text(pg_version + "\n")
    (root / "global" / "pg_control").write_bytes(control)
    return root


def test_bad_input(pg: LabCluster, tmp_path: Path) -> None:
    control = (pg.pgdata / "global" / "pg_control").read_bytes()
    _one_error(pgsurgeon("control", "--plan", tmp_path), Exit.FAILED, "not a data directory")
    other = "17" if pg.version == 18 else "16"
    _one_error(
        pgsurgeon("control", "--plan", _fake_datadir(tmp_path / "other", other, control)),
        Exit.FAILED,
        f"pg_control is of postgresql {pg.version}",
    )
    _one_error(
        pgsurgeon("control", "--plan", _fake_datadir(tmp_path / "old", "12", control)), Exit.FAILED, "postgresql 12"
    )
    _one_error(pgsurgeon("control", "--plan", "--xid", "5", pg.pgdata), Exit.USAGE, "--plan")
    # a truncated pg_control is what the plan is for: it says so and plans from the files alone (pg_resetwal, too,
    # ignores a pg_control it cannot read and guesses)
    short = _fake_datadir(tmp_path / "short", str(pg.version), control[:40])
    shutil.copytree(pg.pgdata / "pg_xact", short / "pg_xact")
    plan = plan_json(short, code=Exit.DAMAGE)
    assert not plan["control_ok"] and "not readable" in plan["control_problem"]
    assert values(plan)["next_xid"] >= int(core.read_control(pg.pgdata)["next_xid"].split(":")[1])
    assert any(n.startswith("-l") for n in plan["not_derived"]), plan["not_derived"]  # pg_wal empty, nothing to go by
