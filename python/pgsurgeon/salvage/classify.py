"""Phase 1 of a salvage: every block classified without the executor (the data files, or pg_read_binary_file) as
healthy, all zeroes, missing or damaged. A damaged item-ID array or tuple header can crash the backend, so damaged
blocks never reach SQL: they are carved, and the blocks SQL may still try are settled here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.salvage.pages import LocalPages
from pgsurgeon.salvage.ranges import _complement, _merge, plan_chunks
from pgsurgeon.salvage.server_view import flush_for_carving, newer_in_server
from pgsurgeon.salvage.sinks import DirSink
from pgsurgeon.salvage.sqlread import chunk_blocks, run_sql

if TYPE_CHECKING:
    from pgsurgeon.salvage.engine import Salvage


def classify(s: Salvage, region: int) -> tuple[list[tuple[int, int]], set[int]]:
    """Classify the blocks (``region`` at a time while SQL reads, with --out from local files) and settle what
    becomes of them: returns the block ranges SQL must skip and the blocks it tries alone (``s.carve_blocks``,
    ``s.carve_ranges`` and ``s.lost`` take the rest)."""
    o = s.opts
    t = s.table
    nblocks = t.rel.nblocks
    s.stats.blocks_total = nblocks
    s.classes = {}
    s.classify_seconds = 0.0
    if s.pages is None and o.carve_all:
        raise PgSurgeonError("--carve-all needs raw pages", hint="use --files local or remote")
    s.classify_cfg = {
        "nblocks": nblocks,
        "blcksz": t.rel.block_size,
        "checksums": t.facts.checksums,
        "desc": t.rel_desc(),
        "horizons": s.horizons,
        "jobs": o.jobs,
        "columns": t.columns_out(),
    }
    if s.pages is not None and o.precheck and not o.carve_all:
        c0 = time.monotonic()
        if isinstance(s.pages, LocalPages) and isinstance(s.sink, DirSink) and not o.deleted:
            _classify_while_reading(s, s.pages, region)
        else:
            res = s.pages.classify(s.classify_cfg)
            s.classes = {int(b["block"]): b for b in res["blocks"]}
        s.classify_seconds = time.monotonic() - c0
    return _settle(s)


def _settle(s: Salvage) -> tuple[list[tuple[int, int]], set[int]]:
    o = s.opts
    nblocks = s.table.rel.nblocks
    damaged = {b for b, c in s.classes.items() if c["state"] in ("damaged", "missing")}
    # A page whose only fault is its checksum is never used by the server (it raises "invalid page"), so SQL
    # may try it: on a running server the page in shared buffers may be fine and the file mid-write. Alone,
    # so a failure costs one block.
    checksum_only = {
        b
        for b, c in s.classes.items()
        if c["state"] == "damaged" and set(c["codes"]) == {"checksum.mismatch"} and not o.carve_all
    }
    # The files lag behind the server: a page it changed since it last wrote it out (or is writing now) may
    # read damaged there and sound in its buffers. Such a page is read through SQL like the others.
    checksum_only |= newer_in_server(
        s, sorted(b for b in damaged if s.classes[b]["state"] == "damaged" and b not in checksum_only)
    )
    s.carve_blocks |= {b for b in damaged if s.classes[b]["state"] == "damaged"} - checksum_only
    missing = [b for b, c in s.classes.items() if c["state"] == "missing"]
    # block ranges to carve beside single blocks (after a missing segment; everything with --carve-all)
    s.carve_ranges = []
    if missing and isinstance(s.pages, LocalPages):
        # the server cannot read past a missing segment ("previous segment is only N blocks"): carve the rest
        beyond = _complement(nblocks, _merge([(0, min(missing) + 1)] + [(b, b + 1) for b in s.classes]))
        if beyond:
            s.notes.append(
                f"{sum(b - a for a, b in beyond)} blocks after a missing segment are carved (the server cannot "
                "read them)"
            )
            s.carve_ranges += beyond
    for b in sorted(damaged):
        if s.classes[b]["state"] == "missing":
            s.lost.append({"block": b, "lp": None, "reason": "the block is missing from the relation's files"})
    skip = _merge([(b, b + 1) for b in damaged] + s.carve_ranges)
    if o.carve_all:
        s.carve_ranges = _complement(nblocks, _merge([(b, b + 1) for b in missing]))
        skip = [(0, nblocks)]
        if isinstance(s.pages, LocalPages):
            flush_for_carving(s)
    return skip, checksum_only


def _classify_while_reading(s: Salvage, pages: LocalPages, region: int) -> None:
    """``--out``: the SQL sessions read each region's sound chunks while the next region's pages are checked
    here, instead of after every page was. Blocks that fail the checks stay out (the usual path reads, carves
    or reports them afterwards); after a missing segment nothing more is read this way."""
    nblocks = s.table.rel.nblocks
    chunk = chunk_blocks(s)
    done = s.sink.done_ranges()

    def feed(push: Callable[[tuple[int, int]], None]) -> None:
        feeding = True
        for a in range(0, nblocks, region):
            if s.stop.is_set():
                return
            b = min(nblocks, a + region)
            res = pages.classify({**s.classify_cfg, "first": a, "nblocks": b, "rel_nblocks": nblocks})
            found = {int(x["block"]): x for x in res["blocks"]}
            with s.lock:
                s.classes.update(found)
            feeding = feeding and not any(c["state"] == "missing" for c in found.values())
            if feeding:
                bad = [(x, x + 1) for x, c in found.items() if c["state"] in ("damaged", "missing")]
                for r in plan_chunks(b, _merge([(0, a), *bad]), done, chunk):
                    push(r)

    s0 = time.monotonic()
    run_sql(s, [], feed)
    s.overlapped_sql_seconds = time.monotonic() - s0
