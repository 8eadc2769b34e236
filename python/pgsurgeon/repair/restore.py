"""Restoring damaged pages from a good copy (``--from-standby``).

Planning: every page the plan would zero, clear, kill or freeze tuples on or find all zeroes, and every damaged
btree page, is offered a copy; a copy that passes the checks (copies.check_copy) replaces the page, and the page
leaves the rest of the plan. A copy that fails leaves the page to today's plan, and the plan says why. Executing,
with the primary stopped, every copy is fetched and checked again once the standby has replayed up to the primary's
shutdown checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.repair import carving, pages
from pgsurgeon.repair.copies import (
    INDEX_AMS,
    SOURCE_NONE,
    CarriedSource,
    PageCopy,
    PageSource,
    damaged_lsn,
    fetch_pages,
    judge_copy,
    lsn_text,
    page_lsn,
    parse_lsn,
)
from pgsurgeon.repair.maps import VM_BITS, VM_CODES, vm_bits_set, vm_heap_blocks_per_page
from pgsurgeon.repair.waltouch import PageRef

if TYPE_CHECKING:
    from pgsurgeon.repair.model import PageWrite
    from pgsurgeon.repair.planner import HeapDamage, Planner

REINDEX_WOULD = "REINDEX would rebuild the index (no row lost)"
# index findings that are about rows of the table (an entry into a missing row, a row with no entry), or about a
# page no other page leads to (the damage is in the page that should): a copy of their block repairs nothing
NOT_PAGE_DAMAGE = frozenset(
    {
        "index.tid_unused",
        "index.tid_beyond_heap",
        "index.missing_entry",
        "index.hash_unreachable",
        "index.gist_unreachable",
        "index.spgist_unreachable",
        "index.brin_unreferenced",
    }
)

# findings that say a heap page is all zeroes while rows were there (the planner's EVIDENCE_CODES keeps them
# out of the damage): a copy brings the rows back
ZERO_PAGE_CODES = frozenset({"page_header.zeroed_referenced", "page_header.zeroed_all_visible"})


def offer(
    p: Planner,
    source: PageSource,
    heaps: list[HeapDamage],
    errors: list[dict[str, Any]],
    index_findings: list[dict[str, Any]],
    primary_lsn: int | None,
) -> tuple[list[PageCopy], list[dict[str, Any]], list[dict[str, Any]]]:
    """The copies offered, and the findings left once the restored pages are taken out (all, then the indexes')."""
    ctx = p.ctx
    copies: list[PageCopy] = []
    restored: set[tuple[str, str, int]] = set()
    for d in heaps:
        zero_found = {
            int(f["block"])
            for f in errors
            if f["relation"] == d.rel.regclass and f["code"] in ZERO_PAGE_CODES and f["block"] is not None
        }
        blocks = [b for b in sorted(d.touched | d.zero_blocks_present | zero_found) if b < d.rel.nblocks]
        got = fetch_pages(source, d.rel, blocks)
        for blk in blocks:
            plan = _heap_plan(d, blk)
            copy = _offer_page(p, source, d.rel, blk, d.images.get(blk), got[blk], primary_lsn, plan)
            copies.append(copy)
            if copy.accepted:
                _take_out(d, blk, copy)
                restored.add((d.rel.regclass, "main", blk))
    indexes = {r.regclass: r for r in ctx.rels if r.role in ("index", "toast-index") and r.amname in INDEX_AMS}
    ix_blocks: dict[str, set[int]] = {}
    for f in index_findings:
        if f["relation"] in indexes and f["block"] is not None and str(f["code"]) not in NOT_PAGE_DAMAGE:
            ix_blocks.setdefault(str(f["relation"]), set()).add(int(f["block"]))
    for name, blks in sorted(ix_blocks.items()):
        rel = indexes[name]
        blocks = [b for b in sorted(blks) if b < rel.nblocks]
        got = fetch_pages(source, rel, blocks)
        damaged = _damaged_pages(p, rel, blocks)
        for blk in blocks:
            copy = _offer_page(p, source, rel, blk, damaged.get(blk), got[blk], primary_lsn, REINDEX_WOULD)
            copies.append(copy)
            if copy.accepted:
                restored.add((name, "main", blk))
    table = ctx.table
    # a restored heap page comes with the map bits it had on the source (the map's own copy, or the page's as the
    # primary's map has it): their findings were the damaged page's; a zeroed page's bits are cleared as it is
    heap_restored = {blk for name, _fork, blk in restored if name == table.regclass}
    vm_copies = _offer_vm(p, source, table, errors, primary_lsn, heap_restored | set(heaps[0].zero))
    copies += vm_copies
    vm_done = heap_restored | {blk for c in vm_copies if c.accepted for blk in c.must_clear}
    _count_rows(p, heaps[0], copies)

    def kept(f: dict[str, Any]) -> bool:
        if f["block"] is None:
            return True
        if str(f["code"]) in VM_CODES and f["relation"] == table.regclass:
            return int(f["block"]) not in vm_done
        return (str(f["relation"]), str(f.get("fork") or "main"), int(f["block"])) not in restored

    return copies, [f for f in errors if kept(f)], [f for f in index_findings if kept(f)]


def _damaged_pages(p: Planner, rel: Relation, blocks: list[int], fork: str = "main") -> dict[int, bytes]:
    """The primary's damaged pages as its server returns them (a batch a statement), else from its files."""
    out: dict[int, bytes] = {}
    for blk, got in p.reader.blocks_pages(rel, blocks, fork):
        data = got if isinstance(got, bytes) else p.reader.file_page(rel, blk, fork)
        if data is not None:
            out[blk] = data
    return out


def _offer_vm(
    p: Planner,
    source: PageSource,
    table: Relation,
    errors: list[dict[str, Any]],
    primary_lsn: int | None,
    skip: set[int],
) -> list[PageCopy]:
    """The visibility map pages whose bits are wrong (vm.all_visible_wrong, vm.all_frozen_wrong name the heap
    blocks, but those in ``skip``), offered a copy: accepted when the copy passes the checks and has the wrong
    bits clear."""
    must: dict[int, dict[int, int]] = {}
    per_page = vm_heap_blocks_per_page(p.server.block_size)
    for f in errors:
        bit = VM_BITS.get(str(f["code"]))
        if bit is None or f["relation"] != table.regclass or f["block"] is None or int(f["block"]) in skip:
            continue
        heap_blk = int(f["block"])
        bits = must.setdefault(heap_blk // per_page, {})
        bits[heap_blk] = bits.get(heap_blk, 0) | bit
    if not must:
        return []
    blocks = sorted(must)
    got = fetch_pages(source, table, blocks, "vm")
    damaged = _damaged_pages(p, table, blocks, "vm")
    out = []
    for blk in blocks:
        heap = ", ".join(str(b) for b in sorted(must[blk]))
        would = f"the visibility map bits of heap block(s) {heap} would be cleared (no row lost; VACUUM sets them)"
        copy = _offer_page(p, source, table, blk, damaged.get(blk), got[blk], primary_lsn, would, "vm")
        copy.must_clear = must[blk]
        if copy.accepted and copy.data is not None:
            wrong = vm_bits_set(copy.data, must[blk], p.server.block_size)
            if wrong:
                copy.why, copy.source, copy.data = wrong, SOURCE_NONE, None
        out.append(copy)
    return out


def _offer_page(
    p: Planner,
    source: PageSource,
    rel: Relation,
    blk: int,
    damaged: bytes | None,
    fetched: tuple[bytes | None, str],
    primary_lsn: int | None,
    would_lose: str,
    fork: str = "main",
) -> PageCopy:
    if damaged is None:
        damaged = p.reader.file_page(rel, blk, fork)
    floor = damaged_lsn(damaged, primary_lsn)
    data, read_by = fetched
    why, stale = (
        judge_copy(source, data, rel, blk, p.server.checksums, floor, fork=fork) if data is not None else (read_by, "")
    )
    return PageCopy(
        relation=rel.regclass,
        role=rel.role,
        block=blk,
        source=SOURCE_NONE if why else source.name,
        would_lose=would_lose,
        lsn_damaged=floor,
        lsn_copy=page_lsn(data) if data is not None else None,
        why=why,
        stale=stale,
        read_by=read_by if data is not None else "",
        # a copy refused only as possibly stale is kept to say what it holds
        data=data if not why or (stale and why.startswith(stale)) else None,
        fork=fork,
    )


def _heap_plan(d: HeapDamage, blk: int) -> str:
    """What today's plan does to the block (the rows it would take are counted on the copy)."""
    what = "TOAST chunks and the rows whose values they hold" if d.rel.role == "toast" else "rows"
    if blk in d.zero:
        return f"the page would be zeroed: all its {what} lost ({'; '.join(d.zero[blk])[:200]})"
    if blk in d.zero_blocks_present:
        return f"the page is all zeroes: its {what} would be counted as gone"
    parts = []
    if blk in d.clear:
        parts.append(f"line pointers {sorted(d.clear[blk])} would be cleared")
    kills = sorted(lp for b, lp in d.kill if b == blk)
    if kills:
        parts.append(f"{len(kills)} tuple(s) would be killed (heap_force_kill)")
    freezes = sorted(lp for b, lp in d.freeze if b == blk)
    if freezes:
        parts.append(f"{len(freezes)} tuple(s) would be frozen (heap_force_freeze)")
    return "; ".join(parts) or f"the page is all zeroes: its {what} would be counted as gone"


def _take_out(d: HeapDamage, blk: int, copy: PageCopy) -> None:
    """The block is restored whole: no other step touches it, and planning reads the copy from now on."""
    d.zero.pop(blk, None)
    d.clear.pop(blk, None)
    for table in (d.kill, d.freeze, d.gone_items):
        for tid in [t for t in table if t[0] == blk]:
            del table[tid]
    for items in (d.damaged_items, d.freezable_items):
        items -= {t for t in items if t[0] == blk}
    d.zero_blocks_present.discard(blk)
    copy.server_read = blk not in d.refused
    d.refused.discard(blk)
    assert copy.data is not None
    d.images[blk] = copy.data
    d.items[blk] = pages.heap_items(copy.data, blk)
    d.restore[blk] = copy


def _count_rows(p: Planner, main: HeapDamage, copies: list[PageCopy]) -> None:
    """The table's rows on each accepted copy: the carver reads them (and their visibility) as it reads the rows
    of a damaged page; the ledger expects them after the restore."""
    mine = [
        c for c in copies if (c.accepted or c.stale) and c.role == "table" and c.fork == "main" and c.data is not None
    ]
    if not mine:
        return
    images = {c.block: c.data for c in mine if c.data is not None}
    wanted = {(b, it.lp) for b, page in images.items() for it in pages.heap_items(page, b) if it.header is not None}
    try:
        found = carving.carve(p.ctx, images, wanted, set(), set())
    except carving.CarveUnavailable as exc:
        p.notes.append(f"the rows on the restored pages could not be counted beforehand ({exc}): counted after")
        return
    for c in mine:
        c.row_items = sorted(t[1] for t, got in found.items() if t[0] == c.block and any(x.live for x in got))
        c.rows = len(c.row_items)


# ---------------------------------------------------------------------------------------------- execution


def fetch_again(
    source: PageSource,
    writes: list[PageWrite],
    rels: dict[str, Relation],
    pgdata: Path,
    server: ServerFacts,
    timeout: float,
    say: Callable[[str], None],
    timings: dict[str, Any] | None = None,
) -> dict[tuple[str, int], bytes]:
    """With the primary stopped: wait for the standby to replay up to the primary's shutdown checkpoint (pg_control),
    then fetch every planned copy again and check it as planned, against the page on disk now. Any copy that
    fails stops the step before a page is written (the plan promised it)."""
    wanted = [w for w in writes if w.action == "restore" and w.copy is not None]
    if not wanted:
        return {}
    checkpoint = _shutdown_checkpoint(pgdata)
    # the shutdown checkpoint record changes no page: a standby that has replayed everything before it (up to its
    # start, where pg_control points) holds every page as the primary wrote it last
    say(f"  the primary's shutdown checkpoint is at {lsn_text(checkpoint)}; bringing the {source.name} up to it")
    started = time.monotonic()
    try:
        carried = _carried(source, checkpoint, wanted, rels, say)
        if not carried:
            source.wait(checkpoint, "shutdown checkpoint", timeout, say)
    except PgSurgeonError as exc:
        raise PgSurgeonError(
            exc.message,
            hint="WAL the standby did not receive before the primary stopped reaches it only once the primary runs "
            "again (it is started again now): run repair again once the standby streams (pg_stat_wal_receiver)",
        ) from None
    waited = time.monotonic()
    out: dict[tuple[str, int], bytes] = {}
    groups: dict[tuple[str, str], list[PageWrite]] = {}
    for w in wanted:
        assert w.copy is not None
        groups.setdefault((w.relation, w.copy.fork), []).append(w)
    for (name, fork), ws in groups.items():
        rel = rels[name]
        got = fetch_pages(source, rel, [w.block for w in ws], fork)
        for w in ws:
            assert w.copy is not None
            data, read_by = got[w.block]
            disk = _read(pgdata / w.file, w.offset, server.block_size)
            floor = damaged_lsn(disk, checkpoint)
            why = read_by
            if data is not None:
                why, _stale = judge_copy(source, data, rel, w.block, server.checksums, floor, w.copy.lsn_copy, fork)
            if not why and data is not None and w.copy.must_clear:
                why = vm_bits_set(data, w.copy.must_clear, server.block_size)
            if why:
                raise PgSurgeonError(
                    f"the {source.name}'s copy of {w.relation} block {w.block} fails now: {why}; no page was written",
                    hint="run repair again: it plans from the pages as they are now (that page falls back to today's "
                    "plan)",
                )
            assert data is not None
            out[(w.file, w.block)] = data
    if timings is not None:
        # how the copies were made exact to the primary's stop: the source replayed up to it, or the WAL since its
        # position was read and changes none of them
        timings["copies_exact_by"] = "pg_waldump" if carried else "replay"
        timings["wait_seconds"] = round(waited - started, 3)
        timings["fetch_seconds"] = round(time.monotonic() - waited, 3)
    say(f"  {len(out)} good copy(ies) fetched from the {source.name} again and checked")
    return out


def _carried(
    source: PageSource, checkpoint: int, wanted: list[PageWrite], rels: dict[str, Relation], say: Callable[[str], None]
) -> bool:
    """The source's copies shown exact to the shutdown checkpoint as they are (a backup recovered once, no WAL since
    touching the pages): no second recovery."""
    if not isinstance(source, CarriedSource):
        return False
    refs: list[PageRef] = []
    for w in wanted:
        path = rels[w.relation].filepath
        if path is None or w.copy is None:
            return False
        refs.append(PageRef(path, w.copy.fork, w.block))
    return source.carry_forward(checkpoint, "shutdown checkpoint", refs, say)


def _shutdown_checkpoint(pgdata: Path) -> int:
    """Where the stopped primary's WAL ends: its shutdown checkpoint, from pg_control."""
    try:
        control = core.read_control(str(pgdata))
    except (OSError, ValueError) as exc:
        raise PgSurgeonError(
            f"the primary's pg_control cannot be read ({exc}); no page was written",
            hint="run 'pgsurgeon control' on the data directory",
        ) from None
    checkpoint = parse_lsn(str(control["checkpoint"]))
    if checkpoint is None or str(control["state"]) != "shut down":
        raise PgSurgeonError(
            f"the primary was not shut down cleanly (pg_control: {control['state']}): where its WAL ends is not "
            "known; no page was written",
            hint="start it and stop it cleanly (pg_ctl stop -m fast), then run repair again",
        )
    return checkpoint


def _read(path: Path, offset: int, length: int) -> bytes | None:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
    except OSError:
        return None
    return data if len(data) == length else None
