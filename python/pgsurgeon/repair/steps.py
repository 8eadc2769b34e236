"""The steps of a repair plan, one function per kind, in the order they run: salvage, save the pages and the carved
rows, heap_force_freeze, heap_force_kill, the page writes (``file``) or the rewrite (``sql``), REINDEX, the
visibility map and VACUUM, the reinsert, then the diagnosis and the check against the ledger."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.datadir import segment_name
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.repair import facts
from pgsurgeon.repair.ledger import APART_FILE, CARVED_FILE
from pgsurgeon.repair.maps import FSM_REMOVE, VM_CLEAR, fsm_damaged, fsm_write, vm_blocks, vm_writes
from pgsurgeon.repair.model import (
    CARVE,
    CAUSE_CLEARED,
    CAUSE_GONE,
    CAUSE_ZEROED,
    CHECK,
    CLEAR_LPS,
    FREEZE,
    KILL,
    METHOD_SQL,
    REINDEX,
    REINSERT,
    RESTORE_FILE,
    REWRITE_SQL,
    SALVAGE,
    SAVE_PAGES,
    VACUUM,
    VERIFY,
    VM_FILE,
    ZERO_FILE,
    PageWrite,
    Plan,
    Step,
    Tid,
    rows_lost,
    tid_ranges,
    tid_text,
)
from pgsurgeon.repair.pages import LP_NORMAL

if TYPE_CHECKING:
    from pgsurgeon.repair.copies import PageCopy
    from pgsurgeon.repair.planner import HeapDamage, Planner, RepairRequest

KILL_BATCH = 500

_Add = Callable[[Step], Step]
"""Appends a step to the plan, numbering it."""


def plan_steps(
    p: Planner,
    plan: Plan,
    main: HeapDamage,
    tdmg: HeapDamage | None,
    index_findings: list[dict[str, Any]],
) -> None:
    req = p.ctx.req
    steps: list[Step] = []
    heaps = [d for d in (main, tdmg) if d is not None]
    zeroing = any(d.zero or d.clear for d in heaps)
    # a page restored from a good copy is the page as it was: no index entry, visibility bit or row changes
    restoring = any(c.accepted for c in plan.copies)
    pagework = zeroing or restoring
    tuplework = any(d.kill or d.freeze for d in heaps)
    gone = [loss for loss in plan.lost if loss.cause == CAUSE_GONE]
    # index entries into a restored page the server could read damaged may carry LP_DEAD (an index scan found the
    # row gone and said so): a scan would skip them, amcheck's heapallindexed too; rebuilt, they point again
    dead_hints = [c for c in plan.copies if c.accepted and c.server_read]
    if dead_hints:
        p.notes.append(
            f"{len(dead_hints)} restored page(s) were readable while damaged: index scans may have marked the index "
            "entries of their rows dead (LP_DEAD), so the indexes are rebuilt"
        )
    reindex = bool(zeroing or any(d.kill for d in heaps) or gone or index_findings or dead_hints)
    _restored_index_notes(p, plan, index_findings, reindex)
    wrong_vm = vm_blocks(plan.findings, plan.table)
    wrong_fsm = fsm_damaged(plan.findings, plan.table)
    if not (pagework or tuplework or reindex or wrong_vm or wrong_fsm):
        plan.steps = []
        return
    rewrite = plan.method == METHOD_SQL and zeroing
    # wrong visibility map bits: cleared in the file where pages are written anyway, else the map truncated online
    file_vm = bool(wrong_vm) and plan.method != METHOD_SQL and not rewrite
    # a wrong free space map: its fork removed while the server is stopped (a rewrite makes a new one anyway)
    file_fsm = wrong_fsm and plan.method != METHOD_SQL and not rewrite
    if wrong_fsm and not file_fsm and not rewrite:
        p.notes.append(
            f"the free space map of {plan.table} is wrong: the server corrects what its searches meet; "
            "--method file removes the fork for VACUUM to rebuild"
        )

    def add(step: Step) -> Step:
        step.id = str(len(steps) + 1)
        steps.append(step)
        return step

    _salvage_step(add, plan, req)
    _save_steps(add, plan, heaps, p)
    _freeze_steps(p, add, heaps)
    _kill_steps(p, add, plan, main, heaps, rewrite)
    if (pagework and not rewrite) or file_vm or file_fsm:
        maps = (vm_writes(p, wrong_vm) if file_vm else []) + ([fsm_write(p)] if file_fsm else [])
        _file_write_step(p, add, plan, heaps, maps)
    if rewrite:
        _rewrite_step(p, add, plan, heaps)
    if reindex and not rewrite:
        _reindex_step(p, add, plan)
    _visibility_steps(
        p, add, plan, heaps, zeroing or bool(wrong_vm) or file_fsm, rewrite, bool(wrong_vm) and not file_vm, file_fsm
    )
    _reinsert_step(p, add, plan)
    _check_steps(add, plan)
    plan.steps = steps


def _restored_index_notes(p: Planner, plan: Plan, index_findings: list[dict[str, Any]], reindex: bool) -> None:
    """Say of each index whose damaged pages all come back from a good copy that it needs no REINDEX (or that it
    is rebuilt all the same, for the table's sake)."""
    still = {str(f["relation"]) for f in index_findings}
    whole: dict[str, int] = {}
    for c in plan.copies:
        if c.role in ("index", "toast-index"):
            whole[c.relation] = whole.get(c.relation, 0) + 1 if c.accepted else -(10**9)
    for name, n in sorted(whole.items()):
        if n <= 0 or name in still:
            continue
        src = next(c.source for c in plan.copies if c.relation == name and c.accepted)
        p.notes.append(
            f"index {name}: its {n} damaged page(s) are restored from the {src}: no REINDEX is needed for it"
            + (" (the table's indexes are rebuilt all the same, for the other damage)" if reindex else "")
        )


def _salvage_step(add: _Add, plan: Plan, req: RepairRequest) -> None:
    if not req.skip_salvage:
        dest = req.salvage_into or str(req.salvage_out or "<run directory>/salvage")
        add(
            Step(
                "",
                SALVAGE,
                f"salvage {plan.table} into {dest} (every readable row, the damaged blocks carved)",
                relation=plan.table,
                wal_logged=req.salvage_into is not None,
                cost="reads the whole table through SQL in TID ranges; "
                + ("creates tables in this database" if req.salvage_into else "writes files only"),
            )
        )


def _save_steps(add: _Add, plan: Plan, heaps: list[HeapDamage], p: Planner) -> None:
    plan.touched = {d.rel.regclass: sorted(d.touched) for d in heaps if d.touched}
    heap_names = {d.rel.regclass for d in heaps}
    for c in plan.copies:
        if c.accepted and c.relation not in heap_names:
            plan.touched.setdefault(c.relation, []).append(c.block)
    touched = sum(len(blocks) for blocks in plan.touched.values())
    if touched:
        add(
            Step(
                "",
                SAVE_PAGES,
                f"save the {touched} page(s) the repair touches, as they are now, to <run directory>/pages",
                cost="reads pages; writes files only",
            )
        )
    if plan.carved_rows or plan.apart_rows:
        add(
            Step(
                "",
                CARVE,
                f"save the {len(plan.carved_rows)} row(s) carved with certainty to <run directory>/{CARVED_FILE}"
                + (
                    f" and the {len(plan.apart_rows)} uncertain one(s) to <run directory>/{APART_FILE}"
                    if plan.apart_rows
                    else ""
                ),
                cost="writes files only",
            )
        )


def _freeze_steps(p: Planner, add: _Add, heaps: list[HeapDamage]) -> None:
    for d in heaps:
        if d.freeze:
            step = add(
                Step(
                    "",
                    FREEZE,
                    f"heap_force_freeze {len(d.freeze)} tuple(s) of {d.rel.regclass}: their damaged visibility "
                    "fields are reset, the rows stay",
                    relation=d.rel.regclass,
                    tids=sorted(d.freeze),
                    irreversible=True,
                    wal_logged=True,
                    cost="no row lost; the tuples become visible (frozen) whatever their old xmin/xmax said",
                )
            )
            step.sql = surgery_sql(p, facts.surgery_fn(p.server, "heap_force_freeze"), d.rel, step.tids)


def _kill_steps(p: Planner, add: _Add, plan: Plan, main: HeapDamage, heaps: list[HeapDamage], rewrite: bool) -> None:
    for d in heaps:
        kills = dict(d.kill)
        if rewrite:
            for blk in d.zero:
                if blk in d.refused:
                    continue
                for it in d.items.get(blk, []):
                    if it.flags == LP_NORMAL:
                        kills.setdefault((blk, it.lp), f"on block {blk}, whose page goes in the rewrite")
        if not kills:
            continue
        is_main = d is main
        lost_here = [t for t in kills if is_main]
        step = add(
            Step(
                "",
                KILL,
                f"heap_force_kill {len(kills)} tuple(s) of {d.rel.regclass} (ctids from block and line pointer)",
                relation=d.rel.regclass,
                tids=sorted(kills),
                irreversible=True,
                wal_logged=True,
                cost=rows_lost(lost_here)
                if is_main
                else f"{len(kills)} TOAST chunk(s) removed (the rows that used them are killed too)",
            )
        )
        step.sql = surgery_sql(p, facts.surgery_fn(p.server, "heap_force_kill"), d.rel, step.tids)
        if is_main:
            for loss in plan.lost:
                if loss.tid in kills:
                    loss.step = step.id


def _file_write_step(p: Planner, add: _Add, plan: Plan, heaps: list[HeapDamage], vm: list[PageWrite]) -> None:
    ctx = p.ctx
    writes: list[PageWrite] = list(vm)
    for d in heaps:
        for blk in sorted(d.zero):
            writes.append(page_write(p, d.rel, blk, "zero"))
        for blk, lps in sorted(d.clear.items()):
            if blk not in d.zero:
                writes.append(page_write(p, d.rel, blk, "clear", sorted(lps)))
    by_name = {r.regclass: r for r in p.ctx.rels}
    for c in plan.copies:
        if c.accepted:
            writes.append(page_write(p, by_name[c.relation], c.block, "restore", copy=c, fork=c.fork))
    lost_pages = [loss.tid for loss in plan.lost if loss.cause in (CAUSE_ZEROED, CAUSE_CLEARED)]
    kinds = {w.action for w in writes}
    kind = (
        ZERO_FILE
        if "zero" in kinds
        else CLEAR_LPS
        if "clear" in kinds
        else RESTORE_FILE
        if "restore" in kinds
        else VM_FILE
    )
    restored = sum(1 for w in writes if w.action == "restore")
    stop = (
        f"lab cluster {ctx.lab.name} is stopped and started again around it"
        if ctx.lab is not None
        else "the server must be stopped by you (repair waits for it, then for it to start again)"
    )
    step = add(
        Step(
            "",
            kind,
            f"write {len(writes)} page(s) in the relation files: "
            + ", ".join(f"{w.relation} block {w.block} {write_words(w)}" for w in writes[:6])
            + (" …" if len(writes) > 6 else ""),
            relation=plan.table,
            writes=writes,
            server_stopped=True,
            cost=f"{rows_lost(lost_pages)}; reversible: the old pages go "
            "into an undo manifest ('pgsurgeon undo MANIFEST')",
            notes=[stop]
            + (
                [
                    f"{restored} page(s) come from {plan.options.get('from_standby') or 'the standby'}: with the "
                    "server stopped, repair brings the copy up to its shutdown checkpoint (the standby replays to it, "
                    "a backup is recovered to it again), fetches each page again and checks it as planned; a page "
                    "that fails then stops the step before anything is written"
                ]
                if restored
                else []
            ),
        )
    )
    for loss in plan.lost:
        if loss.cause in (CAUSE_ZEROED, CAUSE_CLEARED):
            loss.step = step.id


def write_words(w: PageWrite) -> str:
    """What a page write does, in the plan's and the report's words."""
    if w.action == "zero":
        return "zeroed"
    if w.action == "clear":
        return f"line pointers {w.lps} cleared"
    if w.action == VM_CLEAR:
        return "visibility map bits cleared"
    if w.action == FSM_REMOVE:
        return "free space map removed"
    return f"restored from the {w.copy.source if w.copy is not None else 'copy'}"


def _rewrite_step(p: Planner, add: _Add, plan: Plan, heaps: list[HeapDamage]) -> None:
    ctx = p.ctx
    refused = sorted(b for d in heaps for b in d.refused if b in d.zero)
    zdp = db.sql.SQL("SET zero_damaged_pages = on")
    vf = db.sql.SQL("VACUUM FULL {}").format(ctx.table.ident())
    reset = db.sql.SQL("RESET zero_damaged_pages")
    sql = [ctx.sql_text(vf)]
    if refused:
        sql = [ctx.sql_text(zdp), *sql, ctx.sql_text(reset)]
    lost_pages = [loss.tid for loss in plan.lost if loss.cause in (CAUSE_ZEROED, CAUSE_CLEARED)]
    step = add(
        Step(
            "",
            REWRITE_SQL,
            f"rewrite {plan.table} and its TOAST table"
            + (" with zero_damaged_pages on (the pages the server refuses read as empty)" if refused else "")
            + ": only readable tuples are copied, the indexes are rebuilt",
            relation=plan.table,
            sql=sql,
            irreversible=True,
            wal_logged=True,
            cost=f"{rows_lost(lost_pages)}; takes an ACCESS EXCLUSIVE "
            "lock and room for a second copy of the table; the old files (with the damaged pages) are removed",
            notes=[
                "plain VACUUM does not write a page zero_damaged_pages zeroed in memory back to disk "
                "(an all-zero page is never dirtied): the rewrite is what makes it stick"
            ],
        )
    )
    for loss in plan.lost:
        if loss.cause in (CAUSE_ZEROED, CAUSE_CLEARED):
            loss.step = step.id


def _reindex_step(p: Planner, add: _Add, plan: Plan) -> None:
    ctx = p.ctx
    concurrently = reindex_concurrently(p)
    q = db.sql.SQL("REINDEX TABLE {}{}").format(
        db.sql.SQL("CONCURRENTLY ") if concurrently else db.sql.SQL(""), ctx.table.ident()
    )
    ixnames = [r.regclass for r in ctx.rels if r.relkind == "i"]
    add(
        Step(
            "",
            REINDEX,
            f"rebuild the {len(ixnames)} index(es) of {plan.table} and its TOAST table (entries that point at "
            "removed or missing rows go)",
            relation=plan.table,
            sql=[ctx.sql_text(q)],
            wal_logged=True,
            cost="no row lost; "
            + (
                "builds new indexes next to the old ones, then swaps them (writes go on)"
                if concurrently
                else "blocks writes to the table while it runs"
            ),
        )
    )


def _visibility_steps(
    p: Planner,
    add: _Add,
    plan: Plan,
    heaps: list[HeapDamage],
    pagework: bool,
    rewrite: bool,
    online_vm: bool,
    fsm_removed: bool = False,
) -> None:
    ctx = p.ctx
    # An all-zero page whose visibility-map bit is still set: VACUUM leaves new pages alone, so the bit would
    # stay, and once rows land on the page index-only scans would trust it. Reset the table's map (pg_visibility)
    # and let the VACUUM below rebuild it.
    stale_vm = any(
        f.get("code")
        in (
            "page_header.zeroed_all_visible",
            "page_header.zeroed_referenced",
            "file.vm_beyond_end",
            "file.heap_truncated",
        )
        for f in plan.findings
    )
    stale_vm = stale_vm or online_vm
    if stale_vm and not rewrite:
        target = db.sql.Literal(ctx.table.regclass)
        add(
            Step(
                "",
                VACUUM,
                f"reset the visibility map of {plan.table}: it marks "
                + ("pages whose tuples are not all visible" if online_vm else "all-zero or missing pages")
                + " all-visible",
                relation=plan.table,
                sql=[
                    "CREATE EXTENSION IF NOT EXISTS pg_visibility",
                    ctx.sql_text(db.sql.SQL("SELECT pg_truncate_visibility_map({}::regclass)").format(target)),
                ],
                wal_logged=True,
                cost="no row lost; index-only scans read the heap until VACUUM sets the bits again",
            )
        )
    if (any(d.kill for d in heaps) or pagework or stale_vm) and not rewrite:
        # plain VACUUM skips all-visible pages and records no free space for them: with the free space map removed,
        # every page is visited
        q = db.sql.SQL("VACUUM {}{}").format(
            db.sql.SQL("(DISABLE_PAGE_SKIPPING) " if fsm_removed else ""), ctx.table.ident()
        )
        add(
            Step(
                "",
                VACUUM,
                f"vacuum {plan.table}: the killed tuples' dead line pointers are cleaned up"
                + (", the free space map rebuilt" if fsm_removed else ""),
                relation=plan.table,
                sql=[ctx.sql_text(q)],
                wal_logged=True,
                cost="no row lost",
            )
        )


def _reinsert_step(p: Planner, add: _Add, plan: Plan) -> None:
    if p.reinsert and not plan.carved_rows and plan.lost:
        p.notes.append("carving recovers none of the removed rows with certainty: none to insert back")
    if p.reinsert and plan.carved_rows:
        n = len(plan.carved_rows)
        add(
            Step(
                "",
                REINSERT,
                f"insert the {n} carved row(s) back into {plan.table} (original values, keys included; ON "
                "CONFLICT DO NOTHING)",
                relation=plan.table,
                tids=sorted(plan.carved_rows),
                wal_logged=True,
                cost=f"{n} of the {len(plan.lost_tids)} removed row(s) come back: "
                + tid_ranges(list(plan.carved_rows), 12)
                + f"; a row the table refuses goes to <run directory>/{APART_FILE}",
            )
        )
    elif plan.carved_rows:
        p.notes.append(
            f"carving recovers {len(plan.carved_rows)} of the removed rows: they stay in <run directory>/"
            f"{CARVED_FILE} (--no-reinsert or a materialized view), and repair prints the command that loads them"
        )


def _check_steps(add: _Add, plan: Plan) -> None:
    add(Step("", VERIFY, f"diagnose {plan.table} again (amcheck, heapallindexed) and report clean or not"))
    led = plan.ledger
    add(
        Step(
            "",
            CHECK,
            f"check {plan.table} against the ledger: {led.expected_after} row(s) ("
            f"{led.in_place} in place, {led.restored} restored, {len(led.reinsert)} reinserted)"
            + (f", keys ({', '.join(led.key)}) by digest" if led.key else "")
            + "; any difference fails the repair",
            relation=plan.table,
            cost="reads the table once",
        )
    )


def surgery_sql(p: Planner, fn: Any, rel: Relation, tids: list[Tid]) -> list[str]:
    out = []
    for i in range(0, len(tids), KILL_BATCH):
        chunk = tids[i : i + KILL_BATCH]
        q = db.sql.SQL("SELECT {}({}::regclass, {}::tid[])").format(
            fn, db.sql.Literal(rel.regclass), db.sql.Literal([tid_text(t) for t in chunk])
        )
        out.append(p.ctx.sql_text(q))
    return out


def page_write(
    p: Planner,
    rel: Relation,
    blk: int,
    action: str,
    lps: list[int] | None = None,
    copy: PageCopy | None = None,
    fork: str = "main",
) -> PageWrite:
    from pgsurgeon.journal.manifest import sha256

    bs = p.server.block_size
    segno, in_seg = divmod(blk, p.server.segment_blocks)
    assert rel.filepath is not None
    file = segment_name(rel.filepath, segno, fork)
    disk = p.reader.file_page(rel, blk, fork)
    return PageWrite(
        relation=rel.regclass,
        file=file,
        block=blk,
        offset=in_seg * bs,
        action=action,
        lps=lps or [],
        sha256_before=sha256(disk) if disk is not None else None,
        copy=copy,
    )


def reindex_concurrently(p: Planner) -> bool:
    mode = p.ctx.req.reindex
    if mode == "plain":
        return False
    problems = []
    if any(r.exclusion for r in p.ctx.rels if r.relkind == "i"):
        problems.append("an exclusion constraint's index cannot be rebuilt concurrently")
    if any(not r.valid for r in p.ctx.rels if r.relkind == "i"):
        problems.append("an index is invalid (a failed concurrent build?)")
    if problems:
        if mode == "concurrently":
            raise PgSurgeonError(
                f"REINDEX CONCURRENTLY is not possible on {p.ctx.table.regclass}: {problems[0]}",
                hint="use --reindex plain",
            )
        p.notes.append(f"REINDEX without CONCURRENTLY: {problems[0]}")
        return False
    return True
