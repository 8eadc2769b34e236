"""SegmentIndex: segments_of for many relations of one directory, listed once."""

from __future__ import annotations

from pathlib import Path

from pgsurgeon.datadir import SegmentIndex, segments_of


def test_the_index_finds_what_segments_of_finds_listing_the_directory_once(tmp_path: Path) -> None:
    db = tmp_path / "base" / "5"
    db.mkdir(parents=True)
    names = ["16384", "16384.1", "16384.2", "16384_vm", "16384_fsm", "16390", "16390.2", "16390.01", "163", "1638"]
    names += ["16400.1", "pg_filenode.map", "PG_VERSION", "t1_16500", "t1_16500.1", "16384.x"]
    for n in names:
        (db / n).write_bytes(b"")
    index = SegmentIndex()
    for rel in ["16384", "16384_vm", "16390", "163", "1638", "16400", "t1_16500", "99999"]:
        assert index.of(db / rel) == segments_of(db / rel), rel
    # a gap (16390.1 missing) stays a gap; a segment 0 that is gone stays gone (16400)
    assert [s["segno"] for s in index.of(db / "16390")] == [0, 2]
    assert [s["segno"] for s in index.of(db / "16400")] == [1]
    # listed once: a file made since is not seen by this index (the directories it is for do not change)
    (db / "16384.3").write_bytes(b"")
    assert [s["segno"] for s in index.of(db / "16384")] == [0, 1, 2]
    assert [s["segno"] for s in SegmentIndex().of(db / "16384")] == [0, 1, 2, 3]
    assert SegmentIndex().of(tmp_path / "absent" / "1") == []
