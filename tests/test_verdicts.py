"""Verdicts that were misleading (issue 19, point 9): a file we may not read is "could not run", not damage; a
sequence's page is not a heap page with a bad special size; a pg_control of another major version than the data
directory gives one warning, not false transaction-id findings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fix_corrupt import cli
from fix_pg import exec_sql
from pgsurgeon import core
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster


def _copy_pgdata(cluster: LabCluster, dst: Path) -> Path:
    """A copy of a running cluster's data directory after a checkpoint, without postmaster.pid (so it reads as
    a stopped cluster), readable by everyone."""
    exec_sql(cluster, "CHECKPOINT")
    shutil.copytree(cluster.pgdata, dst, ignore=shutil.ignore_patterns("postmaster.pid", "pg_wal"))
    (dst / "pg_wal").mkdir()
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _scan_as_nobody(pgdata: Path) -> subprocess.CompletedProcess[str]:
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is needed to drop root (root reads every file)")
        prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "pgsurgeon", "scan", str(pgdata), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=pgdata.parent,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(pgdata.parent)},
        timeout=120,
        check=False,
    )


def test_unreadable_file_is_could_not_run(pg: LabCluster, scratch: Path) -> None:
    """Before: exit 2 with ``file.unreadable`` ("check the storage (dmesg, SMART)") for a mere permission."""
    exec_sql(pg, "CREATE TABLE IF NOT EXISTS verdict_t AS SELECT g AS id FROM generate_series(1, 1000) g")
    (rel,) = exec_sql(pg, "SELECT pg_relation_filepath('verdict_t')")[0]
    pgdata = _copy_pgdata(pg, scratch / "pgdata")
    (pgdata / str(rel)).chmod(0)
    proc = _scan_as_nobody(pgdata)
    assert proc.returncode == Exit.FAILED, proc.stdout[-2000:] + proc.stderr
    assert "file.unreadable" not in proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("pgsurgeon: error: ") and str(rel) in lines[0] and "permission denied" in lines[0]
    assert lines[1].startswith("hint: ") and "permissions" in lines[1]


def test_sequence_page_is_not_a_heap_page(pg: LabCluster) -> None:
    """Before: ``inspect --dsn … --table SEQ`` decoded the page as a heap page and reported
    ``page_header.special_size`` (a sequence page has 4 bytes of special space: its magic number)."""
    exec_sql(pg, "CREATE SEQUENCE IF NOT EXISTS verdict_seq")
    exec_sql(pg, "SELECT nextval('verdict_seq')")
    exec_sql(pg, "CHECKPOINT")
    code, out, err = cli("inspect", "--dsn", pg.dsn(), "--table", "verdict_seq", "-b", "0", "--format", "json")
    report = json.loads(out)
    assert code == Exit.CLEAN, err + json.dumps(report["findings"])
    assert report["kind"] == "sequence"
    assert [f["code"] for f in report["findings"]] == []


def _burn_xids(cluster: LabCluster, n: int) -> None:
    if n > 0:
        exec_sql(cluster, f"DO $$ BEGIN FOR i IN 1..{n} LOOP PERFORM txid_current(); COMMIT; END LOOP; END $$")


def _next_xid(cluster: LabCluster) -> int:
    return int(exec_sql(cluster, "SELECT txid_current()")[0][0]) & 0xFFFFFFFF


@pytest.mark.parametrize(
    ("victim", "donor"), [("18", "15"), ("15", "18")], ids=["pg18-dir-pg15-control", "pg15-dir-pg18-control"]
)
def test_foreign_pg_control_warns_instead_of_xid_findings(
    request: pytest.FixtureRequest, scratch: Path, victim: str, donor: str
) -> None:
    """Before: a pg_control of another major version inside a data directory gave false ``xmin_future`` findings
    (its XID horizon belongs to the other cluster), with no word that the versions disagree."""
    vic: LabCluster = request.getfixturevalue(f"pg{victim}")
    don: LabCluster = request.getfixturevalue(f"pg{donor}")
    # rows whose xmin lies beyond the donor's next xid: judged against its horizon, they are "in the future"
    _burn_xids(vic, _next_xid(don) - _next_xid(vic) + 200)
    exec_sql(vic, "DROP TABLE IF EXISTS verdict_x")
    exec_sql(vic, "CREATE TABLE verdict_x (id int)")
    for i in range(5):
        exec_sql(vic, f"INSERT INTO verdict_x VALUES ({i})")
    exec_sql(vic, "SELECT count(*) FROM verdict_x")  # hint bits
    pgdata = _copy_pgdata(vic, scratch / "pgdata")
    exec_sql(don, "CHECKPOINT")
    shutil.copyfile(don.pgdata / "global" / "pg_control", pgdata / "global" / "pg_control")
    assert core.read_control(pgdata)["major_version"] == int(donor)
    code, out, err = cli("scan", str(pgdata), "--format", "json")
    doc = json.loads(out)
    codes = {f["code"] for f in doc["findings"]}
    assert not {c for c in codes if "xmin" in c or "xmax" in c}, codes
    assert len(doc["warnings"]) == 1 and f"postgresql {donor}" in doc["warnings"][0], doc["warnings"]
    assert err.count("pgsurgeon: warning: ") == 1 and "PG_VERSION" in err, err
    assert code in (Exit.CLEAN, Exit.DAMAGE)
