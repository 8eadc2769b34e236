"""TOAST: the files' TOAST findings checked again through the server, and the chunks of a value amcheck found damaged
named by TOAST block and line pointer."""

from __future__ import annotations

import re
import struct
from typing import Any

from pgsurgeon import core, db
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked, NotChecked
from pgsurgeon.diagnose.pages import one_page, raw_ranges
from pgsurgeon.session import ServerError

TOAST_MAX_CHUNK_SIZE = 1996  # 8 KB pages (heaptoast.h)
_BLAMED_CHUNK = re.compile(r"toast value \d+ chunk (-?\d+) has size")
# the value, its size and its chunk count in the core's toast.* messages (crates/core/src/format/toast.rs)
_TOAST_VALUE = re.compile(r"toast value (\d+) \((\d+) bytes in (\d+) chunks\)")


def toast_scan_confirmed(d: Diagnosis, rel: Checked) -> list[dict[str, Any]]:
    """The files' TOAST findings on ``rel`` that verify_heapam did not repeat, checked again. verify_heapam finds
    chunks through the TOAST index, which still files a chunk whose chunk_id or chunk_seq was altered under its
    old key; the files, read at another moment, may also have caught a value being rewritten. The value's
    chunks are read twice, through the index and without it: when the index finds chunks the table itself
    does not hold whole, the index hides damage and the finding stays; otherwise (the value whole, or gone
    with the row that pointed at it) it was concurrent change and goes."""
    toast = d.toast_of(rel)
    wanted: dict[int, tuple[int, int]] = {}
    for f in rel.toast_scan:
        if m := _TOAST_VALUE.search(str(f["message"])):
            wanted[int(m[1])] = (int(m[2]), int(m[3]))
    if toast is None or not wanted:
        return []
    query = db.sql.SQL(db.load_sql("diagnose_toast_chunks")).format(toast=toast.relation.ident())
    views: list[dict[int, tuple[int, int, int, int]]] = []
    for off in ("enable_indexscan", "enable_seqscan"):
        session = d.main
        got = session.rows(f"SET enable_bitmapscan = off; SET {off} = off")
        try:
            rows = session.rows(query, {"values": sorted(wanted)})
        finally:
            session.rows("RESET enable_bitmapscan; RESET enable_indexscan; RESET enable_seqscan")
        if isinstance(got, ServerError) or isinstance(rows, ServerError):
            return list(rel.toast_scan)
        views.append({int(v): (int(n), int(a), int(b), int(size)) for v, n, a, b, size in rows})
    table_view, index_view = views
    hidden = {
        v
        for v, (size, chunks) in wanted.items()
        if v in index_view and table_view.get(v) != (chunks, 0, chunks - 1, size)
    }
    return [
        {**f, "message": f"{f['message']} (the TOAST index hides it: it still files an altered chunk)"}
        for f in rel.toast_scan
        if (m := _TOAST_VALUE.search(str(f["message"]))) is not None and int(m[1]) in hidden
    ]


def locate_toast_chunks(d: Diagnosis) -> None:
    """For TOAST problems amcheck reports on a table row, find the chunks of that value through the TOAST
    index's entries and name the TOAST block and line pointer of each chunk that is wrong."""
    wanted: dict[int, dict[int, dict[str, Any]]] = {}
    for f in list(d.findings):
        if f["source"] != fmod.SOURCE_AMCHECK or not str(f["code"]).startswith("toast."):
            continue
        value = amcheck.toast_value_id(f["message"])
        table = next(
            (r for r in d.rels if r.relation.relfilenode == f["relfilenode"] and r.relation.role == "table"), None
        )
        if value is None or table is None:
            continue
        wanted.setdefault(table.relation.oid, {}).setdefault(value, f)
        if m := _BLAMED_CHUNK.search(f["message"]):
            d.blamed.add((value, int(m.group(1))))
    for table_oid, values in wanted.items():
        toast = next((r for r in d.rels if r.relation.role == "toast" and r.relation.table_oid == table_oid), None)
        tindex = next(
            (r for r in d.rels if r.relation.role == "toast-index" and r.relation.table_oid == table_oid), None
        )
        if toast is None or tindex is None:
            continue
        chunks = _toast_index_entries(d, tindex, set(values))
        d.add(_check_chunks(d, toast, chunks, values))


def _toast_index_entries(d: Diagnosis, tindex: Checked, values: set[int]) -> dict[int, list[tuple[int, int, int]]]:
    """value id -> [(chunk_seq, toast block, toast item)] from the TOAST index's leaf pages."""
    found: dict[int, list[tuple[int, int, int]]] = {}
    bs = tindex.relation.block_size
    try:
        pages = (
            (start + i, got[i * bs : (i + 1) * bs])
            for start, got in raw_ranges(d, d.main, tindex, 1, max(tindex.relation.nblocks - 1, 0))
            if not isinstance(got, ServerError)
            for i in range(len(got) // bs)
        )
        for blk, page in pages:  # only for values amcheck found damaged: a TOAST index is small
            rep = core.inspect_page(page, blk, checksums=False, kind="btree")
            if not rep["btree"] or "BTP_LEAF" not in rep["btree"]["flags"]:
                continue
            for it in rep["items"]:
                bt = it.get("btree")
                if not bt or bt["is_pivot"] or not bt["htid"]:
                    continue
                key = bytes.fromhex(bt["data"].replace(" ", ""))
                if len(key) < 8:
                    continue
                value, seq = struct.unpack_from("<Ii", key)
                if value in values:
                    found.setdefault(value, []).append((seq, bt["htid"]["block"], bt["htid"]["offset"]))
    except NotChecked:
        pass
    return found


def _check_chunks(
    d: Diagnosis, toast: Checked, chunks: dict[int, list[tuple[int, int, int]]], values: dict[int, dict[str, Any]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pages: dict[int, bytes | None] = {}
    for value, entries in chunks.items():
        row = values[value]
        where = f"table row ({row['block']},{row['item']})"
        for seq, blk, off in sorted(entries):
            if blk not in pages:
                pages[blk] = one_page(d, toast, blk) if blk < toast.relation.nblocks else None
            page = pages[blk]
            if page is None:
                continue
            problem = _chunk_problem(page, blk, off, value, seq)
            if problem is None and (value, seq) in d.blamed:
                problem = (
                    "toast.chunk_size",
                    "amcheck found this chunk's size wrong (see the table row's finding)",
                )
            if problem:
                code, text = problem
                out.append(
                    fmod.make(
                        code,
                        toast.relation,
                        blk,
                        off,
                        f"chunk {seq} of toast value {value} (of {where}): {text}",
                        source=fmod.SOURCE_CROSS,
                        observed_error=row["observed_error"],
                    )
                )
        locations = ", ".join(f"{s}@({b},{o})" for s, b, o in sorted(entries)[:8])
        row["message"] += f" [chunks in {toast.relation.regclass}: {locations or 'none indexed'}]"
    return out


def _chunk_problem(page: bytes, blk: int, off: int, value: int, seq: int) -> tuple[str, str] | None:
    """What is wrong with the TOAST chunk the index says is chunk ``seq`` of ``value`` at (blk, off)."""
    if len(page) < 24:
        return None
    lower = int.from_bytes(page[12:14], "little")
    maxoff = max((lower - 24) // 4, 0)
    if off < 1 or off > maxoff:
        return (
            "toast.chunk_missing",
            f"line pointer {off} is beyond the page's {maxoff} line pointers: the chunk is gone",
        )
    (lp,) = struct.unpack_from("<I", page, 24 + (off - 1) * 4)
    lp_off, lp_flags, lp_len = lp & 0x7FFF, (lp >> 15) & 0x3, lp >> 17
    if lp_flags != 1:
        name = {0: "unused", 2: "a redirect", 3: "dead"}[lp_flags]
        return "toast.chunk_missing", f"line pointer {off} is {name}: the chunk is gone"
    if lp_off + lp_len > len(page) or lp_len < 24 + 9:
        return None  # the page decoder reports the line pointer itself
    t_hoff = page[lp_off + 22]
    data = lp_off + t_hoff
    if data + 8 > lp_off + lp_len:
        return None
    chunk_id, chunk_seq = struct.unpack_from("<Ii", page, data)
    if chunk_id != value:
        return (
            "toast.chunk_unexpected",
            f"the tuple holds chunk_id {chunk_id}, not {value}: the chunk is lost to its value",
        )
    if chunk_seq != seq:
        return "toast.chunk_unexpected", f"the tuple holds chunk_seq {chunk_seq} where the index says {seq}"
    b0 = page[data + 8]
    if b0 & 0x01:
        size = (b0 >> 1) - 1
    elif b0 & 0x03 == 0:
        size = (int.from_bytes(page[data + 8 : data + 12], "little") >> 2) - 4
    else:
        return "toast.chunk_header", f"chunk_data has a compressed varlena header (0x{b0:02x})"
    room = lp_off + lp_len - (data + 8) - (1 if b0 & 0x01 else 4)
    if size < 0 or size > TOAST_MAX_CHUNK_SIZE or size > room:
        return "toast.chunk_size", f"chunk_data claims {size} bytes, the tuple holds {room}"
    return None
