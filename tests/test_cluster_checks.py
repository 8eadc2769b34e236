"""Offline checks of the cluster's bookkeeping (issue 29), on real PostgreSQL 15 and 18: each damage is made by hand
on a stopped cluster; scan (whole cluster) and control name it (exit 2), the real server is asked what it does with
it, and the original bytes put back make the finding go away."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster
from pgsurgeon.lab.cluster import LabError

VERSIONS = ["15", "18"]


def run_json(args: list[str]) -> tuple[int, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    return code, json.loads(out.getvalue())


def cluster_findings(lab: LabCluster) -> list[dict[str, Any]]:
    """What scan (whole cluster) and control say about the bookkeeping: the same findings, exit 2 when one is an
    error."""
    scan_code, scanned = run_json(["scan", str(lab.pgdata), "--format", "json"])
    control_code, controlled = run_json(["control", "-D", str(lab.pgdata), "--format", "json"])
    ours = [f for f in scanned["findings"] if f.get("path") and not f.get("relfilenode")]
    files = [(f["code"], f["path"]) for f in controlled["findings"]]
    assert [(f["code"], f["path"]) for f in ours] == files, (ours, files)
    damaged = any(f["severity"] == "error" for f in ours)
    assert (scan_code, control_code) == ((2, 2) if damaged else (0, 0)), (scan_code, control_code)
    return ours


def codes(lab: LabCluster) -> list[str]:
    return [f["code"] for f in cluster_findings(lab)]


@contextlib.contextmanager
def damaged(path: Path) -> Iterator[bytearray]:
    """The bytes of ``path`` to change in place; written on entry's exit, the original put back afterwards by
    ``restore``."""
    original = path.read_bytes()
    image = bytearray(original)
    yield image
    path.write_bytes(bytes(image))
    _originals[path] = original


_originals: dict[Path, bytes] = {}


def restore(path: Path) -> None:
    path.write_bytes(_originals.pop(path))


def start_fails(lab: LabCluster) -> str:
    """The server refuses to start; what it logged."""
    with pytest.raises(LabError):
        lab.start()
    return lab.log_path.read_text(errors="replace")


def checkpoint_segment(lab: LabCluster) -> tuple[Path, int, int]:
    """The WAL file holding the checkpoint record, and the record's offset in it and the WAL page size."""
    c = core.read_control(lab.pgdata)
    hi, lo = (int(x, 16) for x in str(c["checkpoint"]).split("/"))
    lsn = (hi << 32) | lo
    seg = int(c["xlog_seg_size"])
    name = f"{int(c['this_timeline_id']):08X}{lsn // seg // (2**32 // seg):08X}{lsn // seg % (2**32 // seg):08X}"
    return lab.pgdata / "pg_wal" / name, lsn % seg, int(c["xlog_blcksz"])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_healthy_stopped_cluster_has_no_finding(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 1000) g")
    lab.stop()
    assert cluster_findings(lab) == []
    assert main(["scan", str(lab.pgdata)]) == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_checkpoint_record_crc(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    lab.stop()
    seg, at, _ = checkpoint_segment(lab)
    with damaged(seg) as b:
        b[at + 30] ^= 0x01  # inside the checkpoint payload (nextXid): only the CRC tells
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.wal_checkpoint_record" and found["path"] == f"pg_wal/{seg.name}"
    assert "CRC mismatch" in found["message"]
    log = start_fails(lab)
    assert "incorrect resource manager data checksum in record" in log, log[-2000:]
    assert "could not locate a valid checkpoint record" in log, log[-2000:]
    restore(seg)
    assert cluster_findings(lab) == []
    lab.start()


@pytest.mark.parametrize("version", VERSIONS)
def test_wal_page_magic(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    lab.stop()
    seg, at, blcksz = checkpoint_segment(lab)
    with damaged(seg) as b:
        b[at - at % blcksz] ^= 0x01  # xlp_magic of the checkpoint record's page
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.wal_page_header" and "xlp_magic" in found["message"], found
    log = start_fails(lab)
    assert "invalid magic number" in log and "could not locate a valid checkpoint record" in log, log[-2000:]
    restore(seg)
    assert cluster_findings(lab) == []
    lab.start()


@pytest.mark.parametrize("version", VERSIONS)
def test_pg_control_crc(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    lab.stop()
    path = lab.pgdata / "global" / "pg_control"
    with damaged(path) as b:
        b[40] ^= 0xFF  # inside the checkpoint copy, before the CRC
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.control_crc" and "CRC mismatch" in found["message"], found
    log = start_fails(lab)
    assert "incorrect checksum in control file" in log, log[-2000:]
    restore(path)
    assert cluster_findings(lab) == []
    lab.start()


@pytest.mark.parametrize("version", VERSIONS)
def test_pg_filenode_map_checksum(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    (oid,) = exec_sql(lab, "SELECT oid FROM pg_database WHERE datname = 'postgres'")[0]
    lab.stop()
    path = lab.pgdata / "base" / str(oid) / "pg_filenode.map"
    with damaged(path) as b:
        b[12] ^= 0x01  # a mapped file number
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.relmap" and found["path"] == f"base/{oid}/pg_filenode.map", found
    assert "incorrect checksum" in found["message"] and f"database {oid}" in found["message"]
    lab.start()  # the server starts: only connections to that database fail
    with pytest.raises(Exception, match="relation mapping file"):
        exec_sql(lab, "SELECT 1")
    assert exec_sql(lab, "SELECT 1", dbname="template1") == [(1,)]
    assert "contains incorrect checksum" in lab.log_path.read_text(errors="replace")
    lab.stop()
    restore(path)
    assert cluster_findings(lab) == []


def make_multis(lab: LabCluster, rows: int) -> None:
    """Real MultiXacts: two transactions lock the same rows FOR SHARE at once, then commit."""
    exec_sql(lab, f"CREATE TABLE m AS SELECT g AS id FROM generate_series(1, {rows}) g")
    a, b = lab.connect(autocommit=False), lab.connect(autocommit=False)
    try:
        a.execute("SELECT * FROM m FOR SHARE").fetchall()
        b.execute("SELECT * FROM m FOR SHARE").fetchall()
        a.commit()
        b.commit()
    finally:
        a.close()
        b.close()
    exec_sql(lab, "CHECKPOINT")


@pytest.mark.parametrize("version", VERSIONS)
def test_multixact_offsets_segment_removed(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    make_multis(lab, 100)
    lab.stop()
    control = core.read_control(lab.pgdata)
    assert int(control["next_multi"]) > 1, control
    path = lab.pgdata / "pg_multixact" / "offsets" / "0000"
    away = path.with_name("0000.away")  # renamed, not rewritten: the server's OS user must still own it
    path.rename(away)
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.multixact_missing" and found["path"] == "pg_multixact/offsets/0000", found
    assert f"next MultiXact {control['next_multi']}" in found["message"], found
    log = start_fails(lab)
    assert "could not access status of transaction" in log and "pg_multixact/offsets/0000" in log, log[-2000:]
    away.rename(path)
    assert cluster_findings(lab) == []
    lab.start()
    assert exec_sql(lab, "SELECT count(*) FROM m") == [(100,)]


@pytest.mark.parametrize("version", VERSIONS)
def test_pg_xact_removed_counts_the_rows_without_hints(version: str, make_lab: MakeLab) -> None:
    """Rows written and never read again keep no hint bits: with pg_xact/0000 gone their fate is unknown. The
    server does not start (it reads the next XID's page); the table's finding counts every row."""
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE t (id int)")
    exec_sql(lab, "INSERT INTO t SELECT generate_series(1, 3000)")
    ((table,),) = exec_sql(lab, "SELECT pg_relation_filepath('t')")
    lab.stop()  # a clean stop writes the table's pages as they are: no query has set hint bits
    path = lab.pgdata / "pg_xact" / "0000"
    away = path.with_name("0000.away")
    path.rename(away)
    found = cluster_findings(lab)
    assert [f["code"] for f in found] == ["file.xact_missing"], found
    _, scanned = run_json(["scan", str(lab.pgdata), "--format", "json"])
    lost = [f for f in scanned["findings"] if f["code"] == "tuple_header.status_lost"]
    rows = [f for f in lost if f["path"] == table]  # the catalog rows of CREATE TABLE are without hints too
    assert len(rows) == 1 and rows[0]["message"].startswith("3000 rows' fate depends"), lost
    assert "pg_xact/0000 missing" in rows[0]["message"], rows
    log = start_fails(lab)
    assert "could not access status of transaction" in log and "pg_xact/0000" in log, log[-2000:]
    away.rename(path)
    assert cluster_findings(lab) == []
    _, scanned = run_json(["scan", str(lab.pgdata), "--format", "json"])
    assert not [f for f in scanned["findings"] if f["code"].startswith("tuple_header.")], scanned["findings"]
    lab.start()
    assert exec_sql(lab, "SELECT count(*) FROM t") == [(3000,)]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_garbled_pg_xact_page_contradicts_the_hint_bits(version: str, make_lab: MakeLab) -> None:
    """The table's rows hinted committed (a VACUUM sets the hints), then the status of their transaction turned to
    aborted in pg_xact: the scan counts the contradiction on that page; the server trusts the hints."""
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE t (id int)")
    exec_sql(lab, "INSERT INTO t SELECT generate_series(1, 500)")
    ((xid,),) = exec_sql(lab, "SELECT xmin::text::bigint FROM t LIMIT 1")
    exec_sql(lab, "SELECT count(*) FROM t")  # sets HEAP_XMIN_COMMITTED
    exec_sql(lab, "CHECKPOINT")
    lab.stop()
    path = lab.pgdata / "pg_xact" / "0000"
    with damaged(path) as b:
        byte, shift = xid // 4, (xid % 4) * 2
        b[byte] = (b[byte] & ~(3 << shift)) | (2 << shift)  # aborted
    _, scanned = run_json(["scan", str(lab.pgdata), "--format", "json"])
    hints = [f for f in scanned["findings"] if f["code"] == "tuple_header.hint_contradiction"]
    assert len(hints) == 1 and hints[0]["message"].startswith("500 tuples"), hints
    assert "pg_xact page 0" in hints[0]["message"]
    lab.start()
    assert exec_sql(lab, "SELECT count(*) FROM t") == [(500,)]  # the hints decide
    lab.stop()
    restore(path)
    _, scanned = run_json(["scan", str(lab.pgdata), "--format", "json"])
    assert not [f for f in scanned["findings"] if f["code"] == "tuple_header.hint_contradiction"]


@pytest.mark.parametrize("version", VERSIONS)
def test_timeline_history_missing(version: str, make_lab: MakeLab) -> None:
    """Timeline 2 made by an archive recovery that ends at the end of pg_wal (recovery.signal, a failing
    restore_command):
    its history file removed, scan and control say so. The server takes a timeline without its file to have no
    parents, then refuses the pages of timeline 1 that the new timeline's first segment holds: it does not start."""
    lab = make_lab(version, extra_conf={"wal_level": "replica"})  # the labs' minimal WAL is no base to recover
    exec_sql(lab, "ALTER SYSTEM SET restore_command = 'false'")
    lab.stop()
    (lab.pgdata / "recovery.signal").touch()
    lab.start()
    exec_sql(lab, "ALTER SYSTEM RESET restore_command")
    exec_sql(lab, "CHECKPOINT")
    lab.stop()
    assert int(core.read_control(lab.pgdata)["this_timeline_id"]) == 2
    assert cluster_findings(lab) == []
    path = lab.pgdata / "pg_wal" / "00000002.history"
    away = path.with_name("00000002.history.away")
    path.rename(away)
    (found,) = cluster_findings(lab)
    assert found["code"] == "file.timeline_history_missing" and found["path"] == "pg_wal/00000002.history", found
    log = start_fails(lab)
    assert "unexpected timeline ID 1" in log and "could not locate a valid checkpoint record" in log, log[-2000:]
    away.rename(path)
    assert cluster_findings(lab) == []
    lab.start()
