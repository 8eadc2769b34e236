"""``first_touch`` against the WAL a real server writes (PostgreSQL 15 and 18, each with its own pg_waldump): a page
no record changes is said untouched; a delete on it, a visibility map bit its table's heap record clears, a
truncation, a rewrite that drops the file, and WAL that is no longer there each say "may have changed"."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fix_corrupt import sql
from fix_pg import create_test_cluster
from pgsurgeon import core
from pgsurgeon.catalog.files import file_key
from pgsurgeon.lab import LabCluster
from pgsurgeon.repair.copies import parse_lsn
from pgsurgeon.repair.waltouch import PageRef, WalRange, first_touch
from pgsurgeon.rescue.files import wal_file_name
from pgsurgeon.rescue.walstatus import waldump_for


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def lab(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[LabCluster]:
    cluster = create_test_cluster(lab_base_dir, f"waltouch{request.param}", request.param)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()


def lsn(lab: LabCluster) -> int:
    (text,) = sql(lab, "SELECT pg_current_wal_insert_lsn()::text")[0]
    value = parse_lsn(str(text))
    assert value is not None
    return value


def table(lab: LabCluster, name: str) -> str:
    """A table of 20 blocks, all visible and frozen (its visibility map set); its file path."""
    sql(
        lab,
        f"DROP TABLE IF EXISTS {name}",
        f"CREATE TABLE {name} (id int, pad text) WITH (autovacuum_enabled = off)",
        f"INSERT INTO {name} SELECT g, repeat('x', 700) FROM generate_series(1, 200) g",
        f"VACUUM (FREEZE) {name}",
        "CHECKPOINT",
    )
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{name}')")[0]
    return str(path)


def touch(lab: LabCluster, start: int, pages: list[PageRef]) -> str | None:
    (found,) = touches(lab, start, pages)
    return found


def touches(lab: LabCluster, start: int, *page_sets: list[PageRef]) -> list[str | None]:
    """first_touch of each set of pages over the WAL from ``start`` to now (a switch record: one that exists, as
    the shutdown checkpoint does in repair)."""
    tool, seg_size = waldump(lab)
    end = lsn(lab)
    sql(lab, "SELECT pg_switch_wal()")  # every record before the end flushed to pg_wal
    wal = WalRange([lab.pgdata / "pg_wal"], 1, seg_size, start, end)
    return [first_touch(tool, wal, pages) for pages in page_sets]


def waldump(lab: LabCluster) -> tuple[Path, int]:
    """The cluster's own pg_waldump and its WAL segment size."""
    control = core.read_control(str(lab.pgdata))
    major = int(control["major_version"])
    tool = waldump_for(major)
    assert tool is not None, f"no pg_waldump for {major}"
    return tool, int(control["xlog_seg_size"])


def test_pages_no_record_names_are_untouched(lab: LabCluster) -> None:
    path = table(lab, "wt_quiet")
    start = lsn(lab)
    sql(lab, "DELETE FROM wt_quiet WHERE ctid = '(3,2)'", "CREATE TABLE wt_other AS SELECT 1 AS x")
    assert touch(lab, start, [PageRef(path, "main", 0), PageRef(path, "main", 7)]) is None
    found = touch(lab, start, [PageRef(path, "main", 3)])
    assert found is not None and "blk 3" in found and "DELETE" in found, found
    sql(lab, "DROP TABLE wt_other")


def test_a_map_page_is_touched_by_its_tables_heap_records(lab: LabCluster) -> None:
    path = table(lab, "wt_map")
    start = lsn(lab)
    sql(lab, "DELETE FROM wt_map WHERE ctid = '(12,1)'")  # clears block 12's all-visible bit: no blkref to the map
    found = touch(lab, start, [PageRef(path, "vm", 0)])
    assert found is not None and "blk 12" in found, found


def test_hint_bits_after_a_checkpoint_touch_their_page_and_not_the_map(lab: LabCluster) -> None:
    """A read setting hint bits, first after a checkpoint: with checksums (18 here) the page is WAL-logged whole
    (FPI_FOR_HINT), a change of that page; its redo does not touch the map. Without them (15) there is no record."""
    sql(
        lab,
        "DROP TABLE IF EXISTS wt_hint",
        "CREATE TABLE wt_hint (id int) WITH (autovacuum_enabled = off)",
        "INSERT INTO wt_hint SELECT generate_series(1, 10)",  # one page, mostly free: no read prunes it
        "VACUUM (FREEZE) wt_hint",
        "DELETE FROM wt_hint WHERE id = 4",  # committed, its xmax hint bit not set yet
        "CHECKPOINT",
    )
    (path,) = sql(lab, "SELECT pg_relation_filepath('wt_hint')")[0]
    start = lsn(lab)
    sql(lab, "SELECT count(*) FROM wt_hint")
    map_page, heap_page = touches(lab, start, [PageRef(str(path), "vm", 0)], [PageRef(str(path), "main", 0)])
    assert map_page is None, map_page
    found = heap_page
    if lab.checksums:
        assert found is not None and "FPI_FOR_HINT" in found and "blk 0" in found, found
    else:
        assert found is None, found


def test_a_truncation_and_a_rewrite_touch_every_page(lab: LabCluster) -> None:
    path = table(lab, "wt_trunc")
    start = lsn(lab)
    sql(lab, "DELETE FROM wt_trunc WHERE id > 100", "VACUUM wt_trunc")  # the empty tail is cut off
    found = touch(lab, start, [PageRef(path, "main", 0)])
    key = file_key(Path(path))
    assert key is not None
    node = f"{key[1][1]}/{key[1][2]}"
    assert found is not None and "TRUNCATE" in found and node in found, found

    path = table(lab, "wt_full")
    start = lsn(lab)
    sql(lab, "VACUUM FULL wt_full")  # a new file; the commit drops the old one
    found = touch(lab, start, [PageRef(path, "main", 0)])
    assert found is not None and "COMMIT" in found and path in found, found


def test_wal_that_is_not_there_is_not_taken_for_quiet(lab: LabCluster) -> None:
    path = table(lab, "wt_gone")
    start = lsn(lab)
    tool, seg_size = waldump(lab)
    empty = lab.lab_dir / "no-wal"
    empty.mkdir(exist_ok=True)
    found = first_touch(tool, WalRange([empty], 1, seg_size, start, start + 8192), [PageRef(path, "main", 0)])
    assert found is not None and "does not read" in found, found


def test_segments_gone_from_pg_wal_are_read_from_the_archive(lab: LabCluster) -> None:
    """The segment where the range starts archived and recycled (here: copied apart): read from the second
    directory given, the archive; without it the range does not read."""
    path = table(lab, "wt_arch")
    start = lsn(lab)
    sql(lab, "DELETE FROM wt_arch WHERE ctid = '(3,2)'", "SELECT pg_switch_wal()", "CREATE TABLE wt_arch2 (x int)")
    tool, seg_size = waldump(lab)
    end = lsn(lab)
    sql(lab, "SELECT pg_switch_wal()", "DROP TABLE wt_arch2")
    recycled, archive = lab.lab_dir / "wt-pg_wal", lab.lab_dir / "wt-archive"
    for d in (recycled, archive):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    for segno in range(start // seg_size, end // seg_size + 2):
        name = wal_file_name(1, segno, seg_size)
        if (lab.pgdata / "pg_wal" / name).exists():
            shutil.copy(lab.pgdata / "pg_wal" / name, (archive if segno == start // seg_size else recycled) / name)
    pages = [PageRef(path, "main", 3)]
    alone = first_touch(tool, WalRange([recycled], 1, seg_size, start, end), pages)
    assert alone is not None and "does not read" in alone and wal_file_name(1, start // seg_size, seg_size) in alone
    both = first_touch(tool, WalRange([recycled, archive], 1, seg_size, start, end), pages)
    assert both is not None and "DELETE" in both and "blk 3" in both, both
