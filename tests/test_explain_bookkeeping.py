"""The cluster's own bookkeeping broken (issue 29), on real PostgreSQL 15 and 18: scan and control find the missing
file (exit 2, naming it and what it held), and explain reads what the server logs:

- pg_wal emptied: the server refuses to start with `PANIC: could not locate a valid checkpoint record`; explain
  --file on its log names the missing checkpoint (and the startup process's abort as its consequence, not as a
  backend crash), and its `unload` step, run as printed, gives back every row with no server;
- a pg_xact segment removed: a query on rows without hint bits fails with `could not access status of transaction N`
  and `DETAIL: Could not open file "pg_xact/0000"`: explained as a missing status file, not a garbage XID."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon.cli import main
from pgsurgeon.explain import explain_text
from pgsurgeon.lab import LabCluster
from pgsurgeon.lab.cluster import LabError

ROWS = 3000


def explain_file(log: Path, pgdata: Path) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["explain", "--file", str(log), "-D", str(pgdata)])
    return buf.getvalue()


def scan_names(lab: LabCluster, code: str) -> list[str]:
    """The files scan and control name with ``code`` (both exit 2, and agree)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["scan", str(lab.pgdata), "--format", "json"]) == 2
    scanned = [f["path"] for f in json.loads(out.getvalue())["findings"] if f["code"] == code]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["control", "-D", str(lab.pgdata), "--format", "json"]) == 2
    controlled = [f["path"] for f in json.loads(out.getvalue())["findings"] if f["code"] == code]
    assert scanned == controlled, (scanned, controlled)
    return scanned


def start_fails(lab: LabCluster) -> None:
    with pytest.raises(LabError):
        lab.start()


@pytest.mark.parametrize("version", ["15", "18"])
def test_pg_wal_emptied_points_to_unload(version: str, make_lab: MakeLab, tmp_path: Path) -> None:
    lab = make_lab(version)
    exec_sql(lab, f"CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, {ROWS}) g")
    lab.stop()
    for seg in (lab.pgdata / "pg_wal").iterdir():
        if seg.is_file():
            seg.unlink()
    start_fails(lab)
    segment = scan_names(lab, "file.wal_missing")
    assert segment and segment[0].startswith("pg_wal/0000000"), segment
    found, _ = explain_text(lab.log_path.read_text())
    ids = [e.pattern.id for e in found]
    assert "checkpoint_record" in ids and "startup_failed" in ids, ids
    assert "crash_signal" not in ids, ids
    text = explain_file(lab.log_path, lab.pgdata)
    unload = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("$ pgsurgeon unload")]
    assert unload, text
    # run the printed step as printed (its --out is relative: from a scratch directory)
    done = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *shlex.split(unload[0])[1:]], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    copies = list(tmp_path.glob("unloaded/**/*t*.copy")) or list(tmp_path.glob("unloaded/**/*.copy"))
    rows = sum(len(p.read_text().splitlines()) for p in copies if "public" in str(p) and p.stem.endswith("t"))
    assert rows == ROWS, (copies, done.stdout[-2000:])


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_missing_pg_xact_segment_is_not_a_garbage_xid(version: str, make_lab: MakeLab) -> None:
    """pg_xact/0000 removed from a stopped cluster: the startup process needs the page of the next XID and the
    server does not start (FATAL, then 'startup process … exited with exit code 1'). The XID is the cluster's next
    one: explain reads a missing status file, and its first step, run as printed, says the XID is within the
    horizons."""
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE t (id int)")
    exec_sql(lab, f"INSERT INTO t SELECT generate_series(1, {ROWS})")
    lab.stop()
    (lab.pgdata / "pg_xact" / "0000").unlink()
    start_fails(lab)
    assert scan_names(lab, "file.xact_missing") == ["pg_xact/0000"]
    found, _ = explain_text(lab.log_path.read_text())
    by_id = {e.pattern.id: e for e in found}
    assert "xact_file_missing" in by_id and "startup_failed" in by_id and "xact_status" not in by_id, list(by_id)
    exp = by_id["xact_file_missing"]
    assert exp.values["slru"] == "pg_xact/0000"
    text = explain_file(lab.log_path, lab.pgdata)
    control = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("$ pgsurgeon control")]
    assert control and f"--xid {exp.values['xid']}" in control[0], text
    done = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *shlex.split(control[0])[1:]], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"transaction {exp.values['xid']} is the cluster's NextXID" in done.stdout, done.stdout
    assert "pg_xact/0000, which is MISSING" in done.stdout and "not a damaged tuple" in done.stdout
    # the rebuild step, run as printed: a dry run that decides the table's transaction and writes nothing
    rebuild = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("$ pgsurgeon xact")]
    assert rebuild, text
    done = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *shlex.split(rebuild[0])[1:]], capture_output=True, text=True
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    assert "pg_xact/0000: XIDs" in done.stdout and "dry run: nothing written" in done.stdout, done.stdout
    assert not (lab.pgdata / "pg_xact" / "0000").exists()
