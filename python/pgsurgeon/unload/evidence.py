"""Rows an all-zero page held, named by the table's btree indexes (their files, read like the table's): an all-zero
page reads as empty, with no error, so without this the rows on it would vanish from the unload's account. A page
the server extended but never wrote is all zeroes too; no index entry points into it, and nothing is reported."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pgsurgeon import core

if TYPE_CHECKING:
    from pgsurgeon.boundary import IndexFiles, LostItem, SegFile, UnloadSummary
    from pgsurgeon.catalog.files import DbCatalog
    from pgsurgeon.catalog.relation import Relation

Segments = Callable[[str], "list[SegFile]"]
"""A relation's segment files from its path relative to the data directory."""


def zero_page_losses(
    cat: DbCatalog, rel: Relation, summary: UnloadSummary, segments: Segments, block_size: int
) -> list[LostItem]:
    """One lost row per heap TID the indexes hold into the table's all-zero pages."""
    zero = sorted(int(p["block"]) for p in summary.get("pages", []) if p.get("all_zero"))
    if not zero:
        return []
    indexes = btree_files(cat, rel, segments)
    if not indexes:
        return []
    tids = core.index_evidence({"indexes": indexes, "blocks": zero, "beyond": None, "blcksz": block_size})
    held: dict[tuple[int, int], list[str]] = {}
    for e in tids:
        held.setdefault((int(e["block"]), int(e["lp"])), []).append(e["index"])
    return [
        {
            "block": blk,
            "lp": lp,
            "reason": f"block {blk} is all zeroes (it reads as empty, with no error); index "
            f"{', '.join(sorted(set(names)))} points here",
        }
        for (blk, lp), names in sorted(held.items())
    ]


def btree_files(cat: DbCatalog, rel: Relation, segments: Segments) -> list[IndexFiles]:
    """The table's btree indexes with their segment files."""
    out: list[IndexFiles] = []
    for ix in cat.indexes:
        irel = cat.relations.get(ix.oid)
        if ix.table != rel.oid or irel is None or irel.amname != "btree":
            continue
        loc = cat.locate(ix.oid)
        if loc is not None:
            out.append({"name": irel.name, "files": segments(loc[0]), "nblocks": loc[1]})
    return out
