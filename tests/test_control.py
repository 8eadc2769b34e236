"""pg_control decoded by the core equals pg_controldata's output, on real PostgreSQL 15 and 18."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster

ONOFF = {True: "on", False: "off"}
YESNO = {True: "yes", False: "no"}

# pg_controldata label -> how to render our value the way it prints it
FIELDS: dict[str, tuple[str, Any]] = {
    "pg_control version number": ("pg_control_version", str),
    "Catalog version number": ("catalog_version_no", str),
    "Database system identifier": ("system_identifier", str),
    "Database cluster state": ("state", str),
    "Latest checkpoint location": ("checkpoint", str),
    "Latest checkpoint's REDO location": ("redo", str),
    "Latest checkpoint's REDO WAL file": ("redo_wal_file", str),
    "Latest checkpoint's TimeLineID": ("this_timeline_id", str),
    "Latest checkpoint's PrevTimeLineID": ("prev_timeline_id", str),
    "Latest checkpoint's full_page_writes": ("full_page_writes", ONOFF.get),
    "Latest checkpoint's NextXID": ("next_xid", str),
    "Latest checkpoint's NextOID": ("next_oid", str),
    "Latest checkpoint's NextMultiXactId": ("next_multi", str),
    "Latest checkpoint's NextMultiOffset": ("next_multi_offset", str),
    "Latest checkpoint's oldestXID": ("oldest_xid", str),
    "Latest checkpoint's oldestXID's DB": ("oldest_xid_db", str),
    "Latest checkpoint's oldestActiveXID": ("oldest_active_xid", str),
    "Latest checkpoint's oldestMultiXid": ("oldest_multi", str),
    "Latest checkpoint's oldestMulti's DB": ("oldest_multi_db", str),
    "Latest checkpoint's oldestCommitTsXid": ("oldest_commit_ts_xid", str),
    "Latest checkpoint's newestCommitTsXid": ("newest_commit_ts_xid", str),
    "Fake LSN counter for unlogged rels": ("unlogged_lsn", str),
    "Minimum recovery ending location": ("min_recovery_point", str),
    "Backup start location": ("backup_start_point", str),
    "Backup end location": ("backup_end_point", str),
    "End-of-backup record required": ("backup_end_required", YESNO.get),
    "wal_level setting": ("wal_level", str),
    "wal_log_hints setting": ("wal_log_hints", ONOFF.get),
    "max_connections setting": ("max_connections", str),
    "max_wal_senders setting": ("max_wal_senders", str),
    "max_prepared_xacts setting": ("max_prepared_xacts", str),
    "track_commit_timestamp setting": ("track_commit_timestamp", ONOFF.get),
    "Maximum data alignment": ("max_align", str),
    "Database block size": ("blcksz", str),
    "Blocks per segment of large relation": ("relseg_size", str),
    "WAL block size": ("xlog_blcksz", str),
    "Bytes per WAL segment": ("xlog_seg_size", str),
    "Maximum length of identifiers": ("name_data_len", str),
    "Maximum columns in an index": ("index_max_keys", str),
    "Maximum size of a TOAST chunk": ("toast_max_chunk_size", str),
    "Size of a large-object chunk": ("loblksize", str),
    "Data page checksum version": ("data_checksum_version", str),
    "Mock authentication nonce": ("mock_authentication_nonce", str),
    "Min recovery ending loc's timeline": ("min_recovery_point_tli", str),
    "max_worker_processes setting": ("max_worker_processes", str),
    "max_locks_per_xact setting": ("max_locks_per_xact", str),
    "Float8 argument passing": ("float8_by_val", {True: "by value", False: "by reference"}.get),
}

# pg_controldata lines not compared, and why
NOT_COMPARED: dict[str, str] = {
    "pg_control last modified": "a local time in the server's strftime format",
    "Time of latest checkpoint": "a local time in the server's strftime format",
    "Date/time type storage": "a constant (64-bit integers) since PostgreSQL 10, not stored in pg_control",
}


def compare(cluster: LabCluster) -> dict[str, Any]:
    theirs = cluster.controldata()
    ours = core.read_control(cluster.pgdata)
    assert ours["crc_ok"] and ours["anomalies"] == []
    assert ours["major_version"] == cluster.version
    for label, (key, render) in FIELDS.items():
        assert label in theirs, f"pg_controldata {cluster.version} no longer prints {label!r}"
        assert render(ours[key]) == theirs[label], f"{label}: ours {ours[key]!r}, pg_controldata {theirs[label]!r}"
    if cluster.version >= 18:
        signed = {True: "signed", False: "unsigned"}[ours["default_char_signedness"]]
        assert theirs["Default char data signedness"] == signed
    else:
        assert ours["default_char_signedness"] is None
    # every line pg_controldata prints is compared or listed as not compared: a field a new version adds fails here
    unchecked = set(theirs) - set(FIELDS) - set(NOT_COMPARED) - {"Default char data signedness"}
    assert not unchecked, f"pg_controldata {cluster.version} prints fields nobody compares: {sorted(unchecked)}"
    return ours


def test_stopped_clusters_match_pg_controldata(make_lab: MakeLab) -> None:
    for version, checksums in (("15", False), ("15", True), ("18", True), ("18", False)):
        cluster = make_lab(version, checksums=checksums)
        cluster.stop()
        ours = compare(cluster)
        assert ours["state"] == "shut down"
        assert ours["data_checksum_version"] == (1 if checksums else 0)


def test_running_cluster_matches_pg_controldata(pg: LabCluster) -> None:
    with pg.connect() as conn:
        conn.execute("CHECKPOINT")
    ours = compare(pg)
    assert ours["state"] == "in production"


def test_cli_json_and_damaged_crc(pg: LabCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["control", str(pg.pgdata), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["blcksz"] == 8192 and shown["major_version"] == pg.version
    image = bytearray((pg.pgdata / "global" / "pg_control").read_bytes())
    image[40] ^= 0xFF  # inside the checkpoint copy, before the CRC
    damaged = tmp_path / "pg_control"
    damaged.write_bytes(bytes(image))
    assert main(["control", str(damaged)]) == 2
    out = capsys.readouterr().out
    assert "does not match" in out


def test_text_shows_timestamps_and_on_off(pg: LabCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["control", "-D", str(pg.pgdata)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"checkpoint_time\s+│ 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", out), out
    assert re.search(r"full_page_writes\s+│ on ", out)
    assert "True" not in out and "False" not in out and "None" not in out
    if pg.version < 17:  # the checkpoint record has no wal_level before 17
        assert re.search(r"checkpoint_wal_level\s+│ \(not in this version's pg_control\)", out), out


def test_xid_against_the_horizons(pg: LabCluster, capsys: pytest.CaptureFixture[str]) -> None:
    control = core.read_control(pg.pgdata)
    oldest, nxt = int(control["oldest_xid"]), int(str(control["next_xid"]).split(":")[-1])
    assert main(["control", "-D", str(pg.pgdata), "--xid", str(nxt - 1)]) == 0
    assert "within the horizons" in capsys.readouterr().out
    # an xid from a damaged tuple header: half the XID space away, 'older than oldestXID'
    assert main(["control", "-D", str(pg.pgdata), "--xid", str((oldest + 2**31 + 5) % 2**32)]) == 2
    assert "older than oldestXID" in capsys.readouterr().out
    assert main(["control", "-D", str(pg.pgdata), "--xid", str(nxt + 1000), "--format", "json"]) == 2
    (check,) = json.loads(capsys.readouterr().out)
    assert check["within"] is False and "not been handed out" in check["text"]
