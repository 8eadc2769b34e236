"""A table VACUUM truncated while the backup copied it is no damage (issue 32): its index copied before the cut still
points into the pages cut off, and the backup's own WAL holds the TRUNCATE record whose replay makes them agree.

The backup is made with the low-level API, deterministically: ``pg_backup_start``, the whole data directory copied,
then ``VACUUM`` cuts the table's emptied tail in a WAL segment of its own, its main fork copied again, and
``pg_backup_stop``'s backup_label and the WAL up to its stop written in. The index's pages are older than the start
LSN, so they are judged. Scanned as it is (plain, and as tar archives), the index entries into the lost pages are
information; without the segment that holds the TRUNCATE record, or as a stopped data directory (no backup_label),
they are errors. Real PostgreSQL 15 and 18, data checksums on."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_pg import create_test_cluster
from pgsurgeon.cli import main
from pgsurgeon.exitcodes import Exit

BLCKSZ = 8192
TID_BEYOND = "index.tid_beyond_heap"


@dataclass
class Made:
    backup: Path
    start_lsn: int
    vacuum_segment: str
    """The WAL segment that holds the VACUUM's TRUNCATE record (nothing else of the backup's)."""
    heap_blocks_before: int


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _scan(path: Path) -> tuple[int, dict[str, Any]]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["scan", str(path), "--format", "json"])
    return code, json.loads(buf.getvalue())


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def made(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Made]:
    version = request.param
    conf: dict[str, str | int | bool] = {"wal_level": "replica", "autovacuum": False}
    cluster = create_test_cluster(lab_base_dir, f"trunc{version}", version, checksums=True, extra_conf=conf)
    try:
        cluster.start()
        with cluster.connect() as conn:
            conn.execute("CREATE TABLE shrinks (id int PRIMARY KEY, pad text)")
            conn.execute("INSERT INTO shrinks SELECT g, repeat('x', 200) FROM generate_series(1, 3000) g")
            conn.execute("VACUUM shrinks")
            conn.execute("DELETE FROM shrinks WHERE id > 300")  # the rows of every page but the first few
            heap, index = conn.execute(
                "SELECT pg_relation_filepath('shrinks'), pg_relation_filepath('shrinks_pkey')"
            ).fetchone() or ("", "")
            blocks = int((conn.execute("SELECT pg_relation_size('shrinks') / 8192").fetchone() or (0,))[0])
        target = cluster.lab_dir / "truncated"
        shutil.rmtree(target, ignore_errors=True)
        with cluster.connect() as backup:
            backup.autocommit = True
            start = str((backup.execute("SELECT pg_backup_start('trunc', true)").fetchone() or ("",))[0])
            shutil.copytree(cluster.pgdata, target, ignore=shutil.ignore_patterns("pg_wal", "postmaster.*"))
            (target / "pg_wal").mkdir()
            with cluster.connect() as conn:
                conn.autocommit = True
                conn.execute("SELECT pg_switch_wal()")  # the VACUUM's records in a segment of their own
                segment = str((conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())").fetchone()
                               or ("",))[0])  # fmt: skip
                conn.execute("VACUUM shrinks")
                conn.execute("SELECT pg_switch_wal()")
                after = int((conn.execute("SELECT pg_relation_size('shrinks') / 8192").fetchone() or (0,))[0])
            assert after < blocks, (after, blocks)  # VACUUM truncated it (else the test proves nothing)
            shutil.copyfile(cluster.pgdata / heap, target / heap)  # the table copied after the cut
            stop_lsn, label, _spcmap = backup.execute("SELECT * FROM pg_backup_stop(false)").fetchone() or ("", "", "")
            last = str((backup.execute("SELECT pg_walfile_name(%s)", [stop_lsn]).fetchone() or ("",))[0])
        (target / "backup_label").write_text(str(label), encoding="utf-8")
        first = str(start)
        with cluster.connect() as conn:
            first = str((conn.execute("SELECT pg_walfile_name(%s)", [start]).fetchone() or ("",))[0])
        for seg in sorted((cluster.pgdata / "pg_wal").iterdir()):
            if len(seg.name) == 24 and first[8:] <= seg.name[8:] <= last[8:]:
                shutil.copyfile(seg, target / "pg_wal" / seg.name)
        assert (target / "pg_wal" / segment).is_file()
        # the index's pages are older than the backup's start: they are judged, not passed over
        pages = (target / index).read_bytes()
        for b in range(len(pages) // BLCKSZ):
            page = pages[b * BLCKSZ : b * BLCKSZ + 8]
            lsn = (int.from_bytes(page[0:4], "little") << 32) | int.from_bytes(page[4:8], "little")
            assert lsn < _lsn(start), b
        yield Made(target, _lsn(start), segment, blocks)
    finally:
        cluster.destroy()


def _as_tar(plain: Path, target: Path) -> Path:
    """The plain backup as pg_basebackup -Ft writes it: base.tar (pg_wal empty) and pg_wal.tar."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    with tarfile.open(target / "base.tar", "w") as tar:
        for child in sorted(plain.iterdir()):
            tar.add(child, arcname=child.name, recursive=child.name != "pg_wal")
    with tarfile.open(target / "pg_wal.tar", "w") as tar:
        for seg in sorted((plain / "pg_wal").iterdir()):
            tar.add(seg, arcname=seg.name)
    return target


def _excused(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["backup"]["truncated_while_copied"])


@pytest.mark.parametrize("form", ["plain", "tar"])
def test_a_truncation_during_the_copy_is_explained(made: Made, form: str) -> None:
    path = made.backup if form == "plain" else _as_tar(made.backup, made.backup.with_name("truncated-tar"))
    code, doc = _scan(path)
    assert (doc["summary"]["errors"], doc["summary"]["warnings"]) == (0, 0), doc["findings"][:5]
    assert code == Exit.CLEAN
    excused = _excused(doc)
    assert {f["code"] for f in excused} >= {TID_BEYOND}, excused
    assert doc["summary"]["truncated_while_copied"] == len(excused)
    for f in excused:
        assert f["severity"] == "info"
        assert "VACUUM truncated" in f["message"] and "WAL replay of the backup" in f["message"], f["message"]
    tid = next(f for f in excused if f["code"] == TID_BEYOND)
    assert tid["relation"] == "public.shrinks_pkey"


def test_without_the_truncation_record_it_is_an_error(made: Made, tmp_path: Path) -> None:
    copy = tmp_path / "no-truncate-wal"
    shutil.copytree(made.backup, copy)
    (copy / "pg_wal" / made.vacuum_segment).unlink()
    code, doc = _scan(copy)
    assert code == Exit.DAMAGE
    assert not _excused(doc)
    found = {(f["code"], f["relation"], f["severity"]) for f in doc["findings"]}
    assert (TID_BEYOND, "public.shrinks_pkey", "error") in found, doc["findings"][:5]


def test_in_a_stopped_data_directory_it_is_an_error(made: Made, tmp_path: Path) -> None:
    copy = tmp_path / "stopped"
    shutil.copytree(made.backup, copy)
    (copy / "backup_label").unlink()  # the same files, no longer a base backup
    code, doc = _scan(copy)
    assert code == Exit.DAMAGE
    assert "backup" not in doc
    found = {(f["code"], f["relation"], f["severity"]) for f in doc["findings"]}
    assert (TID_BEYOND, "public.shrinks_pkey", "error") in found, doc["findings"][:5]


def test_without_pg_waldump_the_findings_stay_and_it_is_said(made: Made, monkeypatch: pytest.MonkeyPatch) -> None:
    from pgsurgeon.rescue import walstatus

    monkeypatch.setattr(walstatus, "waldump_for", lambda _major: None)
    code, doc = _scan(made.backup)
    assert code == Exit.DAMAGE
    assert not _excused(doc)
    assert any(f["code"] == TID_BEYOND and f["severity"] == "error" for f in doc["findings"])
    said = [w for w in doc["warnings"] if "VACUUM truncation" in w]
    assert len(said) == 1 and "no pg_waldump of PostgreSQL" in said[0], doc["warnings"]
