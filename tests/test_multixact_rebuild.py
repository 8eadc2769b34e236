"""A pg_multixact members segment lost or garbled (issue 29), on real PostgreSQL 15 and 18.

Rows of ``m`` are locked FOR SHARE by two transactions at once (three rounds: lock-only MultiXacts), then all
updated while another transaction holds FOR KEY SHARE (the old versions' xmax is a MultiXact naming the updater).
- members removed: the server refuses to start; ``pgsurgeon multixact`` rebuilds the segment from the update chains
  and the server starts with every row readable and exactly the rows it had (no old version back), updatable, and
  amcheck's verify_heapam clean;
- one members page garbled: the server starts but shows old versions again; ``--replace`` rebuilds the segment,
  ``undo`` puts the garbled bytes back exactly, and rebuilt again the rows are right.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_locks import lock_from_two_sessions, update_under_key_share
from fix_pg import MakeLab, exec_sql
from pgsurgeon import simulate
from pgsurgeon.cli import main
from pgsurgeon.errors import LabError
from pgsurgeon.lab import LabCluster

ROWS = 100


def _multixact(pgdata: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["multixact", "-D", str(pgdata), "--format", "json", *extra])
    return code, json.loads(out.getvalue())


def _rows(lab: LabCluster) -> list[tuple[Any, ...]]:
    return exec_sql(lab, "SELECT id, v FROM m ORDER BY id")


def _cluster(make_lab: MakeLab, version: str) -> tuple[LabCluster, list[tuple[Any, ...]]]:
    lab = make_lab(version)
    exec_sql(
        lab, f"CREATE TABLE m (id int PRIMARY KEY, v int); INSERT INTO m SELECT g, 0 FROM generate_series(1, {ROWS}) g"
    )
    for _ in range(3):
        lock_from_two_sessions(lab, "m")
    update_under_key_share(lab, "m", "v = v + 1")
    truth = _rows(lab)
    assert len(truth) == ROWS and all(v == 1 for _, v in truth)
    exec_sql(lab, "CHECKPOINT")
    lab.stop()
    return lab, truth


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _right_after_rescue(lab: LabCluster, truth: list[tuple[Any, ...]]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["verify", str(lab.pgdata), "--format", "json"])
    report = json.loads(out.getvalue())
    assert code == 0 and report["ok"], report
    assert {c["table"]: c["server"] for c in report["counts"]}["public.m"] == ROWS
    lab.start()
    try:
        assert _rows(lab) == truth
        assert exec_sql(lab, "SELECT count(*) FROM m")[0][0] == ROWS  # no old version beside the new one
        exec_sql(lab, "UPDATE m SET v = v + 1 WHERE id <= 10")
        exec_sql(lab, "CREATE EXTENSION IF NOT EXISTS amcheck")
        assert exec_sql(lab, "SELECT * FROM verify_heapam('m')") == []
    finally:
        lab.stop()


@pytest.mark.parametrize("version", ["15", "18"])
def test_members_segment_removed(version: str, make_lab: MakeLab, tmp_path: Path) -> None:
    lab, truth = _cluster(make_lab, version)
    simulate.run(simulate.SimulateRequest(mode="multixact", field="members-remove", pgdata=lab.pgdata, seed=1))
    with pytest.raises(LabError):
        lab.start()
    code, doc = _multixact(lab.pgdata)
    assert code == 0 and doc["manifest"] is None and doc["segment"] == "pg_multixact/members/0000", doc
    assert doc["updaters"] == 1 and not doc["unknown"], doc
    assert sum(e["updated"] for e in doc["evidence"]) == ROWS
    code, doc = _multixact(lab.pgdata, "--execute", "--manifest", str(tmp_path / "m.json"))
    assert doc["manifest"] and (lab.pgdata / "pg_multixact" / "members" / "0000").is_file()
    _right_after_rescue(lab, truth)


@pytest.mark.parametrize("version", ["15", "18"])
def test_members_page_garbled(version: str, make_lab: MakeLab, tmp_path: Path) -> None:
    lab, truth = _cluster(make_lab, version)
    members = lab.pgdata / "pg_multixact" / "members" / "0000"
    simulate.run(simulate.SimulateRequest(mode="multixact", field="members-page", pgdata=lab.pgdata, seed=1, value=0))
    lab.start()
    try:  # the updated rows' old versions are back, or the garbage names a transaction the cluster never had
        assert exec_sql(lab, "SELECT count(*) FROM m")[0][0] > ROWS
    except psycopg.Error as exc:
        assert "could not access status of transaction" in str(exc), exc
    finally:
        lab.stop()
    garbled = _digest(members)  # as the server left it
    manifest = tmp_path / "m.json"
    _code, doc = _multixact(lab.pgdata, "--segment", "0000", "--replace", "--execute", "--manifest", str(manifest))
    assert doc["manifest"] == str(manifest) and _digest(members) != garbled
    assert main(["undo", str(manifest)]) == 0 and _digest(members) == garbled
    manifest.unlink()
    _multixact(lab.pgdata, "--segment", "0000", "--replace", "--execute", "--manifest", str(manifest))
    _right_after_rescue(lab, truth)
