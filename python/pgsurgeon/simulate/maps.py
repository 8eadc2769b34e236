"""Damage to a table's visibility map and free space map forks: a VM bit set for a heap block (``vm``), an FSM
slot past the table's end or an FSM upper node made wrong (``fsm``). The bytes are the core's
(``crates/core/src/inject/maps.rs``); this module picks the map block and the heap block it concerns.

``--block`` names the heap block (``vm``: the block whose bits to set; ``fsm beyond-end``: a block at or past the
table's end), never the map's own block. The map page's checksum is kept valid: the server zeroes a map page whose
checksum fails, which would hide the damage.
"""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING

from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.simulate.target import Resolved, nblocks

if TYPE_CHECKING:
    from pgsurgeon.boundary import DamageSpec
    from pgsurgeon.simulate.plan import CorruptRequest, Plan

VM_HEADER = 24
"""MAXALIGN(SizeOfPageHeaderData): the visibility map's bits start after the page header (visibilitymap.c)."""


def fsm_slots(blcksz: int) -> int:
    """SlotsPerFSMPage (fsm_internals.h): NodesPerPage - NonLeafNodesPerPage."""
    return (blcksz - VM_HEADER - 4) - (blcksz // 2 - 1)


def fsm_leaf_block(heap_block: int, blcksz: int) -> int:
    """fsm_logical_to_physical (freespace.c) of the leaf page holding ``heap_block``'s slot."""
    slots = fsm_slots(blcksz)
    depth = 3 if slots >= 1626 else 4
    leafno = heap_block // slots
    pages = 0
    for _ in range(depth):
        pages += leafno + 1
        leafno //= slots
    return pages - 1


def map_resolved(res: Resolved, fork: str) -> Resolved:
    """``res`` aimed at the table's ``fork`` (``vm`` or ``fsm``) instead of its main fork."""
    what = "visibility map" if fork == "vm" else "free space map"
    path = res.relation.path.with_name(f"{res.relation.path.name}_{fork}")
    if res.relation.kind != "heap":
        raise PgSurgeonError(f"{res.relation.name} is not a table: only tables have a {what}")
    if not path.exists():
        raise PgSurgeonError(
            f"{res.relation.name} has no {what} ({res.relpath(path)})",
            hint="VACUUM the table (it creates the maps), CHECKPOINT, then damage them",
        )
    target = dataclasses.replace(res.relation, path=path, name=f"{res.relation.name} ({what})", kind=None)
    return dataclasses.replace(res, relation=target)


def plan_map(plan: Plan, req: CorruptRequest, heap: Resolved) -> None:
    """Fill ``plan`` (made on the map fork) with the damage of ``req``; ``heap`` is the table itself."""
    from pgsurgeon.simulate.plan import _finish_pages, _Injector, _Pages

    geo = heap.geometry
    heap_n = nblocks(heap.relation.path, geo)
    pages = _Pages(plan.resolved)
    inj = _Injector(plan, pages, req)
    rng = random.Random(req.seed)
    field = plan.field or ""
    if plan.mode.name == "vm":
        per_page = (geo.blcksz - VM_HEADER) * 4
        if req.block is not None and req.block >= heap_n:
            raise PgSurgeonError(f"block {req.block} is beyond the end of {heap.relation.name} ({heap_n} blocks)")
        order = [req.block] if req.block is not None else rng.sample(range(heap_n), heap_n)
        done = 0
        last = ""
        for hb in order:
            vb = hb // per_page
            if vb >= plan.nblocks:
                last = f"the visibility map ends before heap block {hb}"
                continue
            spec: DamageSpec = {"mode": "vm", "field": field, "value": hb, "stream": inj.stream}
            try:
                inj.try_inject(vb, spec)
            except ValueError as exc:
                last = str(exc)
                continue
            done += 1
            if done == req.count:
                break
        if done < req.count:
            raise PgSurgeonError(
                f"found {done} of {req.count} heap block(s) of {heap.relation.name} whose bits vm can set: {last}",
                hint="VACUUM the table so that its map covers every block, or name another --block",
            )
    elif field == "beyond-end":
        hb = req.block if req.block is not None else heap_n
        if hb < heap_n:
            raise PgSurgeonError(
                f"block {hb} is inside {heap.relation.name} ({heap_n} blocks)", hint=f"name a block from {heap_n} on"
            )
        leaf = fsm_leaf_block(hb, geo.blcksz)
        if leaf >= plan.nblocks:
            raise PgSurgeonError(f"the free space map has no leaf page for heap block {hb} (block {leaf})")
        inj.try_inject(leaf, {"mode": "fsm", "field": field, "value": hb, "stream": inj.stream})
    else:
        # an upper node of a leaf page (the first leaf: block 2 with 8 KB pages), or of --block's leaf
        leaf = fsm_leaf_block(req.block or 0, geo.blcksz)
        if leaf >= plan.nblocks:
            raise PgSurgeonError(f"the free space map has no leaf page for heap block {req.block or 0}")
        inj.try_inject(leaf, {"mode": "fsm", "field": field, "stream": inj.stream})
    # The server reads both maps with RBM_ZERO_ON_ERROR: a map page failing its checksum reads as zeroes and the
    # damage would vanish, so the checksum is always kept valid.
    _finish_pages(plan, dataclasses.replace(req, keep_checksum_valid=True), pages)
