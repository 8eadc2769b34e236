"""Checks across pages and forks: a trailing partial block, the visibility map against the table's length, and
index entries whose row seems missing, re-read through the server before they are believed."""

from __future__ import annotations

from typing import Any

from pgsurgeon import core, db
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import MAX_CROSS_FINDINGS, Checked, Crossref, NotChecked
from pgsurgeon.diagnose.pages import fresh_nblocks, one_page, raw_ranges
from pgsurgeon.session import BackendLost, ServerError

_VM_HEADER = 24  # MAXALIGN(SizeOfPageHeaderData)


def vm_tails(d: Diagnosis, heaps: list[Checked]) -> dict[int, list[int]]:
    """Per table, the blocks at or past its end that its visibility map marks, read in one statement for all
    tables; a table missing from the answer (the statement failed) has its map read alone by file_checks."""
    wanted = [
        (r, *span)
        for r in heaps
        if r.relation.vm_size > 0 and r.locked is None and (span := _vm_span(r, r.relation.nblocks)) is not None
    ]
    if len(wanted) < 2:
        return {}
    query = db.sql.SQL(db.load_sql("diagnose_vm_tails")).format(get_raw_page=d.fn("pageinspect", "get_raw_page"))
    params = {
        "oids": [r.relation.oid for r, _a, _b in wanted],
        "firsts": [a for _r, a, _b in wanted],
        "lasts": [b for _r, _a, b in wanted],
    }
    try:
        rows = d.main.rows(query, params, binary=True, again=True)
    except BackendLost:
        return {}
    if isinstance(rows, ServerError):
        return {}
    by_oid = {r.relation.oid: r for r, _a, _b in wanted}
    out: dict[int, list[int]] = {r.relation.oid: [] for r, _a, _b in wanted}
    for oid, blk, page in rows:
        rel = by_oid[int(oid)]
        out[rel.relation.oid].extend(_vm_marked(rel, rel.relation.nblocks, int(blk), bytes(page)))
    return out


def file_checks(d: Diagnosis, rel: Checked, vm_beyond: list[int] | None = None) -> None:
    """A trailing partial block and visibility-map bits for blocks past the end of the table (``vm_beyond``:
    those bits as vm_tails already read them)."""
    if rel.relation.size % rel.relation.block_size:
        d.add(
            [
                fmod.make(
                    "file.partial_page",
                    rel.relation,
                    rel.relation.nblocks,
                    None,
                    f"the file ends {rel.relation.size % rel.relation.block_size} bytes into block "
                    f"{rel.relation.nblocks}: the server does "
                    "not count that block, its rows are not returned",
                    source=fmod.SOURCE_SERVER,
                )
            ]
        )
    if not rel.relation.is_heap or rel.relation.vm_size <= 0:
        return
    nblocks = rel.relation.nblocks
    beyond: list[int] = []
    for attempt in range(2):
        try:
            beyond = vm_beyond if attempt == 0 and vm_beyond is not None else _vm_beyond(d, rel, nblocks)
        except NotChecked:
            return
        if not beyond:
            return
        # The table grows while the map is read (a new block's bits can be set right away): what counts is
        # its length after the map was read.
        fresh = fresh_nblocks(d, rel)
        if fresh is None:
            break
        beyond = [b for b in beyond if b >= fresh]
        if not beyond:
            return
        nblocks = fresh
    d.add(
        [
            fmod.make(
                "file.vm_beyond_end",
                rel.relation,
                nblocks,
                None,
                f"the visibility map marks {len(beyond)} block(s) {beyond[0]}..{beyond[-1]} all-visible but "
                f"the table ends at block {nblocks - 1}: blocks {nblocks}..{beyond[-1]} were cut off",
                source=fmod.SOURCE_CROSS,
                fork="main",
            )
        ]
    )


def _vm_span(rel: Checked, nblocks: int) -> tuple[int, int] | None:
    """The map pages covering heap blocks ``nblocks`` and beyond."""
    per_page = (rel.relation.block_size - _VM_HEADER) * 4
    first, last = nblocks // per_page, rel.relation.vm_size // rel.relation.block_size - 1
    return (first, last) if first <= last else None


def _vm_beyond(d: Diagnosis, rel: Checked, nblocks: int) -> list[int]:
    """Heap blocks at or past ``nblocks`` that the visibility map (as the server has it) marks."""
    span = _vm_span(rel, nblocks)
    if span is None:
        return []
    bs = rel.relation.block_size
    beyond: list[int] = []
    for start, got in raw_ranges(d, d.main, rel, *span, fork="vm"):
        if isinstance(got, ServerError):
            continue
        for i in range(len(got) // bs):
            beyond.extend(_vm_marked(rel, nblocks, start + i, got[i * bs : (i + 1) * bs]))
    return beyond


def _vm_marked(rel: Checked, nblocks: int, vm_block: int, page: bytes) -> list[int]:
    """Heap blocks at or past ``nblocks`` that map page ``vm_block`` marks."""
    per_page = (rel.relation.block_size - _VM_HEADER) * 4
    base = vm_block * per_page
    first = max(nblocks - base, 0)
    if first >= per_page:
        return []
    lo = _VM_HEADER + first // 4
    tail = bytearray(page[lo : _VM_HEADER + per_page // 4])
    if tail:
        tail[0] &= (0xFF << (first % 4 * 2)) & 0xFF  # the first byte's bits for blocks before the end
    if not tail.strip(b"\0"):
        return []  # the usual case: no bit past the end; looked at bit by bit only when one is set
    return [
        base + (lo - _VM_HEADER + j) * 4 + bit
        for j, byte in enumerate(tail)
        if byte
        for bit in range(4)
        if (byte >> (bit * 2)) & 0x3
    ]


def index_refs(d: Diagnosis, index: Checked) -> None:
    """Index entries that point past the end of the table or at unused line pointers, rechecked against
    fresh copies of the pages (a concurrent insert or VACUUM can explain a first mismatch)."""
    heap = d.heap_of(index)
    candidates = index.candidates
    index.candidates = []
    if heap is None or not candidates:
        return
    confirmed = recheck(d, index, heap, candidates)
    past = [c for c in confirmed if c.past_end]
    dangling = [c for c in confirmed if not c.past_end]
    out: list[dict[str, Any]] = []
    zeroed: dict[int, int] = {}
    for c in dangling:
        if c.heap_block in heap.zero:
            zeroed[c.heap_block] = zeroed.get(c.heap_block, 0) + 1
    for blk, n in sorted(zeroed.items()):
        if (heap.relation.oid, "zero", blk) in d.reported:
            continue
        d.reported.add((heap.relation.oid, "zero", blk))
        out.append(
            fmod.make(
                "page_header.zeroed_referenced",
                heap.relation,
                blk,
                None,
                f"block {blk} is all zeroes but index {index.relation.regclass} has {n} entr{'y' if n == 1 else 'ies'} "
                "pointing into it: its rows are gone",
                source=fmod.SOURCE_CROSS,
            )
        )
    if past and (heap.relation.oid, "truncated", 0) not in d.reported:
        d.reported.add((heap.relation.oid, "truncated", 0))
        top = max(c.heap_block for c in past)
        out.append(
            fmod.make(
                "file.heap_truncated",
                heap.relation,
                heap.relation.nblocks,
                None,
                f"index {index.relation.regclass} has {len(past)} entr{'y' if len(past) == 1 else 'ies'} pointing to "
                f"blocks {min(c.heap_block for c in past)}..{top}, but the table ends at block "
                f"{heap.relation.nblocks - 1}: "
                f"blocks {heap.relation.nblocks}..{top} are missing from the file",
                source=fmod.SOURCE_CROSS,
            )
        )
    for c in (past + dangling)[:MAX_CROSS_FINDINGS]:
        code = "index.tid_beyond_heap" if c.past_end else "index.tid_unused"
        what = (
            f"past the end of the table (it ends at block {heap.relation.nblocks - 1})"
            if c.past_end
            else "an unused or missing line pointer: the row it indexed is gone from the table"
        )
        out.append(
            fmod.make(
                code,
                index.relation,
                c.index_block,
                c.index_item or None,
                f"points to heap ({c.heap_block},{c.heap_item}), {what}",
                source=fmod.SOURCE_CROSS,
            )
        )
    if len(past) + len(dangling) > MAX_CROSS_FINDINGS:
        index.notes.append(f"{len(past) + len(dangling) - MAX_CROSS_FINDINGS} more index entries without a row")
    d.add(out)


def recheck(d: Diagnosis, index: Checked, heap: Checked, candidates: list[Crossref]) -> list[Crossref]:
    nblocks = fresh_nblocks(d, heap)
    if nblocks is None:
        nblocks = heap.relation.nblocks
    fresh: dict[int, bytes | None] = {}
    confirmed: list[Crossref] = []
    for c in candidates:
        if c.past_end:
            if c.heap_block >= nblocks:
                confirmed.append(c)
            continue
        if c.heap_block not in fresh:
            page = one_page(d, heap, c.heap_block)
            fresh[c.heap_block] = None if page is None else core.lp_flags(page)
        flags = fresh[c.heap_block]
        if flags is not None and (c.heap_item == 0 or c.heap_item > len(flags) or flags[c.heap_item - 1] == 0):
            confirmed.append(c)
    if not confirmed:
        return []
    # the index entries must still be there too
    still: list[Crossref] = []
    pages: dict[int, dict[int, list[tuple[int, int]]]] = {}
    for c in confirmed:
        if c.index_block not in pages:
            ipage = one_page(d, index, c.index_block)
            entries: dict[int, list[tuple[int, int]]] = {}
            for item, hblk, hoff in core.leaf_tids(ipage) if ipage is not None else []:
                entries.setdefault(item, []).append((hblk, hoff))
            pages[c.index_block] = entries
        if (c.heap_block, c.heap_item) in pages[c.index_block].get(c.index_item, []):
            still.append(c)
    return still
