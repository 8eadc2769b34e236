"""Our page decoding equals pageinspect's, field by field, for every page of real relations.

Pages are read from the data files (offline, as pgsurgeon reads them) and compared with what pageinspect says about
the same block through the server: page_header, heap_page_items, bt_page_items, bt_page_stats, bt_metap and
page_checksum. The files must equal get_raw_page's bytes (the fixture checkpoints after its last change).
"""

from __future__ import annotations

from typing import Any

import pytest

from fix_data import Seeded
from pgsurgeon import core
from pgsurgeon.datadir import DEFAULT_RELSEG_SIZE, Geometry, read_block

INT2 = 0xFFFF
INT4 = 0xFFFFFFFF


def lsn_value(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def tid_text(t: dict[str, Any] | None) -> str | None:
    return None if t is None else f"({t['block']},{t['offset']})"


def relations(seeded: Seeded) -> dict[str, str]:
    """name -> 'heap' | 'btree' for the seeds table, its TOAST table and index, its indexes, and a catalog."""
    (toast,) = seeded.sql("SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'seeds'::regclass")[0]
    (toast_index,) = seeded.sql(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass", [toast]
    )[0]
    return {
        "seeds": "heap",
        str(toast): "heap",
        "seeds_pkey": "btree",
        "seeds_a": "btree",
        "seeds_note": "btree",
        str(toast_index): "btree",
        "pg_class": "heap",
        "pg_attribute": "heap",
        "pg_class_oid_index": "btree",
    }


def file_page(seeded: Seeded, relname: str, block: int) -> bytes:
    path = seeded.relation_file(relname)
    return read_block(path, block, Geometry.for_path(path)).data


def strip_checksum(page: bytes) -> bytes:
    return page[:8] + page[10:]


def compare_header(ours: dict[str, Any], theirs: tuple[Any, ...], *, same_checksum: bool) -> None:
    lsn, checksum, flags, lower, upper, special, pagesize, version, prune_xid = theirs
    h = ours["header"]
    assert h["pd_lsn"]["xlogid"] << 32 | h["pd_lsn"]["xrecoff"] == lsn_value(str(lsn))
    if same_checksum:
        assert h["pd_checksum"] == checksum & INT2
    assert h["pd_flags"] == flags
    assert h["pd_lower"] == lower
    assert h["pd_upper"] == upper
    assert h["pd_special"] == special
    assert h["page_size"] == pagesize
    assert h["layout_version"] == version
    assert h["pd_prune_xid"] == int(prune_xid)


HEAP_ITEMS = """
SELECT lp, lp_off, lp_flags, lp_len, t_xmin::text, t_xmax::text, t_field3, t_ctid::text, t_infomask2, t_infomask,
       t_hoff, t_bits, t_oid::text, length(t_data)
FROM heap_page_items(get_raw_page(%s::text, %s::int))
"""


def compare_heap_items(ours: dict[str, Any], theirs: list[tuple[Any, ...]]) -> int:
    assert len(ours["items"]) == len(theirs)
    tuples = 0
    for item, row in zip(ours["items"], theirs, strict=True):
        lp, lp_off, lp_flags, lp_len, xmin, xmax, field3, ctid, im2, im, hoff, bits, oid, data_len = row
        assert (item["lp"], item["lp_off"], item["lp_flags"], item["lp_len"]) == (
            lp,
            lp_off,
            lp_flags,
            lp_len,
        )
        heap = item["heap"]
        if xmin is None:
            assert heap is None, f"lp {lp}: pageinspect decodes no header here"
            continue
        tuples += 1
        assert heap is not None, f"lp {lp}: we decoded no header"
        assert heap["t_xmin"] == int(xmin)
        assert heap["t_xmax"] == int(xmax)
        assert heap["t_field3"] == field3 & INT4
        assert tid_text(heap["t_ctid"]) == ctid
        assert heap["t_infomask2"] == im2
        assert heap["t_infomask"] == im
        assert heap["t_hoff"] == hoff
        assert heap["t_bits"] == bits
        assert heap["t_oid"] == (None if oid is None else int(oid))
        assert heap["data_len"] == data_len
    return tuples


BT_ITEMS = """
SELECT itemoffset, ctid::text, itemlen, nulls, vars, data, dead, htid::text, tids::text
FROM bt_page_items(get_raw_page(%s::text, %s::int))
"""


def tids_text(tids: list[dict[str, Any]] | None) -> str | None:
    return None if tids is None else "{" + ",".join(f'"{tid_text(t)}"' for t in tids) + "}"


def compare_btree(ours: dict[str, Any], stats: tuple[Any, ...], items: list[tuple[Any, ...]]) -> int:
    prev, nxt, level, flags = stats
    o = ours["btree"]["opaque"]
    assert (o["btpo_prev"], o["btpo_next"], o["btpo_level"], o["btpo_flags"]) == (prev, nxt, level, flags)
    assert len(ours["items"]) == len(items)
    for item, row in zip(ours["items"], items, strict=True):
        itemoffset, ctid, itemlen, nulls, vars_, data, dead, htid, tids = row
        b = item["btree"]
        assert b is not None, f"item {itemoffset} not decoded"
        assert b["itemoffset"] == itemoffset
        assert tid_text(b["ctid"]) == ctid
        assert b["itemlen"] == itemlen
        assert (b["nulls"], b["vars"]) == (nulls, vars_)
        assert b["data"] == data
        assert b["dead"] == dead
        assert tid_text(b["htid"]) == htid
        assert tids_text(b["tids"]) == tids
    return len(items)


def test_every_page_matches_pageinspect(seeded: Seeded) -> None:
    checksums = seeded.cluster.checksums
    counted = {"pages": 0, "tuples": 0, "index_items": 0, "posting": 0, "redirects": 0, "toast_pages": 0}
    for relname, am in relations(seeded).items():
        nblocks = seeded.nblocks(relname)
        assert nblocks > 0, relname
        for blk in range(nblocks):
            raw_row = seeded.sql("SELECT get_raw_page(%s::text, %s::int)", [relname, blk])[0]
            raw = bytes(raw_row[0])
            data = file_page(seeded, relname, blk)
            # The server stamps checksums into a copy at write time, so the buffer keeps a stale pd_checksum;
            # every other byte of the file must equal the buffer.
            assert strip_checksum(data) == strip_checksum(raw), f"{relname} block {blk}: file differs from buffer"
            kind = am if not (am == "btree" and blk == 0) else "btree_meta"
            ours = core.inspect_page(data, blk, checksums=checksums, kind=kind)
            assert ours["findings"] == [], f"{relname} block {blk}: {ours['findings']}"
            assert ours["verification"]["result"] == "valid"
            header = seeded.sql("SELECT * FROM page_header(get_raw_page(%s::text, %s::int))", [relname, blk])[0]
            compare_header(ours, header, same_checksum=data[8:10] == raw[8:10])
            (their_sum,) = seeded.sql(
                "SELECT page_checksum(get_raw_page(%s::text, %s::int), %s::int)", [relname, blk, blk]
            )[0]
            assert ours["checksum"]["computed"] == int(their_sum) & INT2
            assert core.page_checksum(data, blk) == ours["checksum"]["computed"]
            if checksums:
                assert ours["checksum"]["matches"], f"{relname} block {blk}: stored checksum differs"
            if am == "heap":
                counted["tuples"] += compare_heap_items(ours, seeded.sql(HEAP_ITEMS, [relname, blk]))
                counted["redirects"] += sum(1 for i in ours["items"] if i["lp_flags"] == 2)
                counted["toast_pages"] += relname.startswith("pg_toast")
            elif blk == 0:
                meta = seeded.sql("SELECT magic, version, root, level, fastroot FROM bt_metap(%s::text)", [relname])[0]
                m = ours["btree"]["meta"]
                assert (
                    m["btm_magic"],
                    m["btm_version"],
                    m["btm_root"],
                    m["btm_level"],
                    m["btm_fastroot"],
                ) == meta
            else:
                stats = seeded.sql(
                    "SELECT btpo_prev, btpo_next, btpo_level, btpo_flags FROM bt_page_stats(%s::text, %s::int)",
                    [relname, blk],
                )[0]
                n = compare_btree(ours, stats, seeded.sql(BT_ITEMS, [relname, blk]))
                counted["index_items"] += n
                counted["posting"] += sum(1 for i in ours["items"] if i["btree"]["is_posting"])
            counted["pages"] += 1
    # the data set must exercise what it claims to
    assert counted["pages"] > 100
    assert counted["tuples"] > 4000
    assert counted["toast_pages"] > 50
    assert counted["posting"] > 10, "no posting-list tuples compared"
    assert counted["redirects"] > 0, "no HOT redirects compared"


def test_btree_internal_pages_are_covered(seeded: Seeded) -> None:
    (root, level) = seeded.sql("SELECT root, level FROM bt_metap('seeds_pkey')")[0]
    assert level >= 1
    data = file_page(seeded, "seeds_pkey", int(root))
    ours = core.inspect_page(data, int(root), checksums=seeded.cluster.checksums)
    assert ours["kind"] == "btree" and ours["kind_guessed"]
    assert "BTP_ROOT" in ours["btree"]["flags"]
    first = ours["items"][0]["btree"]
    assert first["is_pivot"] and first["itemlen"] == 8  # the "minus infinity" downlink


@pytest.mark.slow
def test_second_segment_blocks(seeded: Seeded) -> None:
    """A relation over 1 GB: blocks in `.1` are numbered across segments, checksums use that number."""
    seeded.sql("CREATE TABLE IF NOT EXISTS big (id int, pad text) WITH (fillfactor = 10, autovacuum_enabled = off)")
    if seeded.nblocks("big") <= DEFAULT_RELSEG_SIZE:
        # one ~830-byte row per page at fillfactor 10; wal_level=minimal skips WAL for a table created and
        # filled in one transaction (the fixture's TRUNCATE makes that so)
        seeded.sql(
            "BEGIN; TRUNCATE big; INSERT INTO big SELECT g, repeat('x', 800) FROM generate_series(1, %s) g; COMMIT"
            % (DEFAULT_RELSEG_SIZE + 300)
        )
        seeded.sql("CHECKPOINT")
    nblocks = seeded.nblocks("big")
    assert nblocks > DEFAULT_RELSEG_SIZE
    path = seeded.relation_file("big")
    assert path.with_name(path.name + ".1").is_file()
    geometry = Geometry.for_path(path)
    for blk in (0, DEFAULT_RELSEG_SIZE - 1, DEFAULT_RELSEG_SIZE, DEFAULT_RELSEG_SIZE + 1, nblocks - 1):
        block = read_block(path, blk, geometry)
        assert block.segno == blk // DEFAULT_RELSEG_SIZE
        raw = bytes(seeded.sql("SELECT get_raw_page('big', %s::int)", [blk])[0][0])
        assert strip_checksum(block.data) == strip_checksum(raw)
        ours = core.inspect_page(block.data, blk, checksums=seeded.cluster.checksums)
        (their_sum,) = seeded.sql("SELECT page_checksum(get_raw_page('big', %s::int), %s::int)", [blk, blk])[0]
        assert ours["checksum"]["computed"] == int(their_sum) & INT2
        if seeded.cluster.checksums:
            assert ours["checksum"]["matches"]
            # the same page checked as if it were block 0 of its segment must fail: numbering matters
            if blk >= DEFAULT_RELSEG_SIZE:
                assert core.page_checksum(block.data, blk - DEFAULT_RELSEG_SIZE) != ours["header"]["pd_checksum"]
        items = seeded.sql("SELECT count(*) FROM heap_page_items(get_raw_page('big', %s::int))", [blk])[0][0]
        assert len(ours["items"]) == items
    seeded.sql("DROP TABLE big")
