"""What a table's btree indexes tell the plan, read in one pass that streams the table's pages and the indexes' through
the core (crates/core/src/rows/entryscan.rs), a statement's worth at a time: the rows the indexes name on the pages the
plan zeroes, the entries whose row is already gone, and the unique key of the rows the plan looks at. Nothing per
entry or per page is kept on this side: memory follows the damage, not the table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.repair.model import Tid
from pgsurgeon.repair.pages import RUN, PageReader

if TYPE_CHECKING:
    from pgsurgeon.repair.planner import HeapDamage


@dataclass
class Gone:
    """An index entry whose row is already gone."""

    tid: Tid
    why: str
    """past_end, zero, beyond, unused or dead_with_storage (crates/core/src/rows/entryscan.rs ``Gone``)."""
    max_offset: int
    """The heap page's line pointer count from pd_lower."""
    indexes: list[str]
    """The indexes whose entries name it, in the order they were read."""


@dataclass
class Evidence:
    named: dict[Tid, list[str]] = field(default_factory=dict)
    """Heap TID on a page the plan zeroes -> the indexes that hold it."""
    gone: list[Gone] = field(default_factory=list)
    """By TID."""


class UniqueKeys:
    """The entries of the table's unique key index the plan asks about (a lost row is named by its key, versions
    of one row are told apart by it): the evidence pass keeps them for the pages the plan touches and for the rows
    already gone; other rows' are read again when asked for."""

    def __init__(self, reader: PageReader, table: Relation, index: Relation | None) -> None:
        self.reader, self.table, self.index = reader, table, index
        self.of: dict[Tid, bytes] = {}
        self.blocks: set[int] = set()
        """Heap blocks whose every entry's key is in ``of``."""
        self.tids: set[Tid] = set()
        """TIDs, besides those blocks, whose key is in ``of`` when the index has one for them."""
        self.known = False
        """The index was read and holds entries with keys (else no row can be told apart by them)."""

    def take(self, scan: core.EntryScan, blocks: Iterable[int], tids: Iterable[Tid]) -> None:
        self.of.update(dict(scan.keys_kept()))
        self.blocks.update(blocks)
        self.tids.update(tids)
        self.known = scan.keyed_entries > 0

    def unnamed(self, tid: Tid) -> bool:
        """Whether the index holds entries but none names ``tid``; ``cover`` it first."""
        return self.known and tid not in self.of

    def get(self, tid: Tid) -> bytes | None:
        return self.of.get(tid)

    def cover(self, tids: Iterable[Tid]) -> None:
        """Read the keys of ``tids`` the evidence pass did not look at."""
        rest = sorted(t for t in tids if t[0] not in self.blocks and t not in self.tids)
        if not rest or not self.known:
            return
        scan = self._scan(key_tids=rest)
        self.of.update(dict(scan.keys_kept()))
        self.tids.update(rest)

    def holding(self, raws: set[bytes]) -> dict[Tid, bytes]:
        """Every heap TID whose entry's key is one of ``raws``."""
        if not raws or not self.known:
            return {}
        scan = self._scan(keys=sorted(raws))
        return {t: k for t, k in scan.keys_kept() if k in raws}

    def _scan(self, **wanted: Any) -> core.EntryScan:
        assert self.index is not None
        scan = core.EntryScan(self.table.nblocks, self.reader.bs, named_blocks=[], **wanted)
        read_index(self.reader, scan, self.index, 0, keyed=True)
        return scan


def read_index(reader: PageReader, scan: core.EntryScan, ix: Relation, number: int, *, keyed: bool) -> None:
    """Every page of ``ix`` but its metapage (block 0) through the scan; the pages the server refuses are left out."""
    for _blk, got in reader.server_pages(ix, 1, ix.nblocks - 1, step=RUN):
        if not isinstance(got, str):
            scan.index(got, number, keyed)


def read_heap(reader: PageReader, scan: core.EntryScan, dmg: HeapDamage) -> None:
    """The table's pages through the scan, but those the plan zeroes (their line pointers are not asked); a page
    the damaged blocks were judged from counts as it was then."""
    first = 0
    for blk in [*sorted(dmg.zero), dmg.rel.nblocks]:
        for start, got in reader.server_pages(dmg.rel, first, blk - 1, step=RUN):
            if not isinstance(got, str):
                scan.heap(got, start)
        first = blk + 1
    for blk, page in sorted(dmg.images.items()):
        if blk not in dmg.zero:
            scan.heap(page, blk)


def read_evidence(
    reader: PageReader, dmg: HeapDamage, indexes: list[Relation], keys: UniqueKeys, key_blocks: set[int]
) -> Evidence:
    """One pass over the table and its btree ``indexes``; ``key_blocks``: heap blocks whose rows' keys the plan
    may ask for (the pages it touches)."""
    keyed = keys.index.oid if keys.index is not None else None
    scan = core.EntryScan(
        dmg.rel.nblocks, reader.bs, named_blocks=sorted(dmg.zero), key_blocks=sorted(key_blocks | set(dmg.zero))
    )
    read_heap(reader, scan, dmg)
    for number, ix in enumerate(indexes):
        read_index(reader, scan, ix, number, keyed=ix.oid == keyed)
    names = [ix.regclass for ix in indexes]
    ev = Evidence(
        named={(b, lp): [names[i] for i in ixs] for b, lp, ixs in scan.named()},
        gone=[Gone((b, lp), why, maxoff, [names[i] for i in ixs]) for b, lp, why, maxoff, ixs in scan.gone()],
    )
    if keyed is not None:
        keys.take(scan, key_blocks | set(dmg.zero), [g.tid for g in ev.gone])
    return ev


def gone_rows(ev: Evidence, indexes: list[Relation], damaged: set[str]) -> dict[Tid, str]:
    """Index entries whose heap line pointer is unused, missing, dead with storage, on an all-zero page or past
    the end of the table: those rows were already gone. ``damaged``: indexes with damage of their own."""
    # Every full (non-partial) btree index has an entry for every row: a TID only some of them hold is a damaged
    # index entry (REINDEX drops it), not a row that was there. An index with damage of its own (a changed heap
    # TID, a damaged posting list) is not asked: the others are.
    full = {ix.regclass for ix in indexes if not ix.partial}
    if full - damaged:
        full -= damaged
    out: dict[Tid, str] = {}
    for g in ev.gone:
        if not full <= set(g.indexes):
            continue
        (blk, lp), which = g.tid, g.indexes[0]
        if g.why == "past_end":
            out[g.tid] = f"{which} points past the end of the table (block {blk}; the file was cut)"
        elif g.why == "zero":
            out[g.tid] = f"{which} points into block {blk}, which is all zeroes"
        elif g.why == "beyond":
            out[g.tid] = f"{which} points at line pointer {lp}, beyond the {g.max_offset} of block {blk}"
        elif g.why == "unused":
            out[g.tid] = f"{which} points at line pointer {lp}, which is unused"
        else:
            out[g.tid] = f"{which} points at line pointer {lp}, which is dead with storage (damaged flags)"
    return out
