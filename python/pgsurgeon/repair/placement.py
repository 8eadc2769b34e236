"""Where every row the repair removes ends, in the plan's ledger: carved and reinserted (``--reinsert``), kept
apart, dead already, or lost; versions of one row told apart by its unique key; and the rows the repair leaves in
place counted through SQL, so the check after the repair has something to hold the table to."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from pgsurgeon import db
from pgsurgeon.repair import ledger, pages
from pgsurgeon.repair.ledger import APART_FILE, CARVED_FILE, DEAD, KEPT_APART, LOST, REINSERTED
from pgsurgeon.repair.model import CAUSE_KILLED, CAUSE_ZEROED, Loss, Plan, Tid, tid_ranges, tid_text
from pgsurgeon.repair.pages import LP_NORMAL

if TYPE_CHECKING:
    from pgsurgeon.repair.planner import HeapDamage, Planner


def carve(
    p: Planner, plan: Plan, main: HeapDamage, losses: dict[Tid, Loss], lose: Callable[[Tid, str, str], None]
) -> None:
    """Carve the tuples the repair removes or freezes, and put each removed row in its place in the ledger:
    reinserted (certain, with ``--reinsert``), kept apart (certain without it, or uncertain), lost (not carved).

    A tuple planned for heap_force_freeze whose data does not decode whole is killed instead (and kept apart
    with what could be read); one the carver judges dead is no row: it is killed, not frozen back to life."""
    from pgsurgeon.repair import carving

    led = plan.ledger
    wanted = set(losses) | set(main.freeze)
    p.keys.cover(wanted)
    images: dict[int, bytes] = {}
    for b in sorted({b for b, _ in wanted}):
        if b not in main.images:
            page, _source = p.reader.page(main.rel, b)
            if page is None:
                continue
            main.images[b] = page
        images[b] = main.images[b]
    found: dict[Tid, list[carving.Carved]] = {}
    if images:
        try:
            found = carving.carve(p.ctx, images, wanted, main.damaged_items, main.freezable_items)
        except carving.CarveUnavailable as exc:
            p.notes.append(f"rows on the damaged pages were not carved: {exc}")
            if p.ctx.req.reinsert_required:
                p.blockers.append((f"--reinsert needs carving, which cannot run here: {exc}", "drop --reinsert"))
            found = {}
            images = {}
    if images:
        for tid in sorted(main.freeze):
            got = found.get(tid, [])
            if got and all(c.live and c.whole for c in got):
                continue
            if got and not any(c.live for c in got):
                why = "the carver judges it dead (deleted or updated before the damage): no row to freeze back"
            elif got:
                why = "its data does not decode whole: " + "; ".join(c.why for c in got if c.why)[:200]
            else:
                why = "the carver cannot read it: freezing could bring back a row that is not whole"
            del main.freeze[tid]
            main.kill[tid] = why
            lose(tid, CAUSE_KILLED, why)
    reinsert = p.reinsert
    for tid, loss in sorted(losses.items()):
        got = found.get(tid, [])
        live = [c for c in got if c.live and not c.foreign]
        copies = [c for c in got if c.live and c.foreign]
        if copies:
            # saved for people to look at, but not as the row at this ctid: that one's bytes are gone
            plan.apart_rows.setdefault(tid, []).extend((c.line, c.why) for c in copies)
        if copies and not live:
            if p.keys.unnamed(tid):
                loss.place = DEAD
                loss.reason += "; its page holds another block's rows and no index entry names this ctid"
            else:
                loss.place = LOST
                led.lost[tid] = f"{loss.reason}; another block's row was written over it (the copy is in {APART_FILE})"
        elif got and not live:
            loss.place = DEAD
        elif len(live) == 1 and live[0].trusted:
            plan.carved_rows[tid] = live[0].line
            loss.carved = True
            if reinsert:
                loss.place = REINSERTED
                led.reinsert.append(tid)
            else:
                loss.place = KEPT_APART
                led.apart[tid] = f"carved with certainty, saved in {CARVED_FILE} (with the command that loads it)"
        elif live:
            loss.place = KEPT_APART
            why = "; ".join(sorted({c.why or "carved with certainty" for c in live}))
            if len(live) > 1:
                why = f"{len(live)} tuples claim this ctid: {why}"
            plan.apart_rows.setdefault(tid, []).extend((c.line, c.why or why) for c in live)
            led.apart[tid] = f"{why}; saved in {APART_FILE}"
        elif p.keys.unnamed(tid) and tid[0] in main.zero and loss.cause == CAUSE_ZEROED:
            # With a unique index every row has an entry (a HOT chain's at its root, listed on its own): a ctid
            # no entry names where nothing could be read is no row, only a line pointer the damage made up.
            loss.place = DEAD
            loss.reason += "; nothing could be read there and no index entry names it"
        else:
            loss.place = LOST
            why = loss.reason if images else f"{loss.reason} (not carved)"
            led.lost[tid] = why if tid[0] in images else f"{why}; its page could not be read"
    resolve_versions(p, plan, main, losses)
    failed = sum(1 for t in plan.carved_rows for c in found.get(t, []) if c.checksum_failed)
    if failed:
        p.notes.append(
            f"{failed} carved row(s) come from pages that failed their checksum, certain besides it: their values "
            "may be altered, compare them with a backup"
        )


def resolve_versions(p: Planner, plan: Plan, main: HeapDamage, losses: dict[Tid, Loss]) -> None:
    """Index entries name versions, not rows: an entry into a lost page may lead to a dead version (an update's
    old tuple, a HOT chain's root) whose row is in place elsewhere or was carved, and several entries may name
    versions of one row. With a unique key, such ctids are no lost rows of their own; a row lost with several
    versions is listed once, under its key."""
    info, led = p.keyinfo, plan.ledger
    if info is None or not p.keys.known or not led.lost:
        return
    groups: dict[str, list[Tid]] = {}
    lost_raw: dict[bytes, str] = {}  # a btree stores equal keys as equal bytes: decode only the lost rows' keys
    for tid in sorted(led.lost):
        raw = p.keys.get(tid)
        if raw is not None:
            key = lost_raw.setdefault(raw, ledger.decode_key(info, raw))
            groups.setdefault(key, []).append(tid)
    if not groups:
        return
    carved: dict[str, Tid] = {}
    for tid in [*led.reinsert, *led.apart]:
        lines = [plan.carved_rows[tid]] if tid in plan.carved_rows else [x for x, _ in plan.apart_rows.get(tid, [])]
        for line in lines:
            k = ledger.line_key(info, line)
            if k is not None:
                carved.setdefault(k, tid)
    zeroed = set(main.zero) | main.zero_blocks_present | set(main.restore)
    unsafe = set(losses) | set(main.freeze) | main.damaged_items
    others: dict[str, list[Tid]] = {}
    nblocks = main.rel.nblocks
    for tid, raw in p.keys.holding(set(lost_raw)).items():
        k = lost_raw.get(raw)
        if k is None or tid in losses or tid[0] in zeroed or tid[0] >= nblocks:
            continue
        others.setdefault(k, []).append(tid)
    for k, tids in groups.items():
        where = None
        if k in carved:
            where = f"carved at {tid_text(carved[k])}"
        elif any(t in main.freeze for t in others.get(k, [])):
            where = "frozen in place"
        else:
            safe = sorted(t for t in others.get(k, []) if t not in unsafe)
            if safe and ledger.count_tids(p.ctx.conn, main.rel, None, safe)[0]:
                where = f"in place ({tid_ranges(safe, 3)})"
        first = tids[0]
        for t in tids if where is not None else tids[1:]:
            del led.lost[t]
            losses[t].place = DEAD
            losses[t].reason += (
                f"; an old version: the row with key {k} is {where}"
                if where is not None
                else f"; another version of the row with key {k}, lost at {tid_text(first)}"
            )
        if where is None:
            led.lost_keys[first] = k


def count_in_place(p: Planner, plan: Plan, main: HeapDamage) -> None:
    """Count the rows the repair leaves in place, through SQL, without reading a damaged tuple: blocks left
    alone by TID ranges, the sound tuples of the blocks it changes by ctid. With a unique key, a digest of their
    keys too."""
    ctx, led = p.ctx, plan.ledger
    removed = {loss.tid for loss in plan.lost}
    led.frozen = sorted(main.freeze)
    # a restored page is read neither here nor by SQL (the primary's copy is the damaged one): its rows were
    # counted on the good copy
    zeroed = set(main.zero) | main.zero_blocks_present | set(main.restore)
    led.restored_blocks = sorted(main.restore)
    led.restored = sum(c.rows or 0 for c in main.restore.values())
    led.possibly_stale = {(c.block, lp): c.stale for c in main.restore.values() if c.stale for lp in c.row_items}
    touched = main.touched | {b for b, _ in removed} | {b for b, _ in main.gone_items}
    beside: list[Tid] = []
    skip = removed | set(main.freeze) | main.damaged_items | set(main.gone_items)
    for b in sorted(touched - zeroed):
        items = main.items.get(b)
        if items is None:
            page = main.images.get(b) or p.reader.page(main.rel, b)[0]
            items = pages.heap_items(page, b) if page is not None else []
        beside += [(b, it.lp) for it in items if it.flags == LP_NORMAL and (b, it.lp) not in skip]
    try:
        led.key = p.keyinfo.columns if p.keyinfo is not None else None
        runs = ledger.untouched_runs(ctx.table.nblocks, touched | zeroed)
        ctx.progress(f"counting the rows left in place ({len(runs)} block range(s), {len(beside)} ctid(s))")
        led.untouched, d1 = p.early_count.result(ctx.conn, touched | zeroed)
        led.beside, d2 = ledger.count_tids(ctx.conn, ctx.table, led.key, beside)
        led.digest = d1 + d2
        led.counted = True
    except db.Error as exc:
        first = (str(exc).strip().splitlines() or ["error"])[0]
        meta = re.search(r'index "([^"]+)" is not an SP-GiST index', first)
        if meta and not (touched | zeroed | removed | set(main.freeze) | set(main.restore)):
            # spgGetCache reads the metapage when the planner asks the index what it can return (spgcanreturn,
            # spgutils.c): no query on the table is planned until the REINDEX the plan holds, which changes no row
            led.deferred = (
                f"every query on the table fails until index {meta[1]} is rebuilt ({first}): the rows are counted "
                "after its REINDEX, which neither adds nor removes one"
            )
            p.notes.append(led.deferred)
            return
        p.blockers.append(
            (
                "the rows the repair leaves in place could not be counted: " + first,
                # spgGetCache reads the metapage when the planner asks the index what it can return
                # (spgcanreturn, spgutils.c): every query on the table fails until the index is rebuilt
                f"the server reads index {meta[1]}'s metapage to plan every query on the table: rebuild it first "
                f"(REINDEX INDEX CONCURRENTLY {meta[1]}), then repair again"
                if meta
                else "a page the diagnosis did not flag fails to read; run 'pgsurgeon diagnose' on the table and "
                "repair again",
            )
        )
