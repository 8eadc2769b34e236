"""Repairs of a table's visibility map: the bits of the pages ``vm.all_visible_wrong`` / ``vm.all_frozen_wrong``
name are wrong, the heap pages are right. With the server stopped (``file`` method) the bits are cleared in the
``_vm`` file, the old map pages kept in the undo manifest; online (``sql``) pg_visibility's
``pg_truncate_visibility_map`` clears the whole map (WAL-logged). Either way the VACUUM that follows sets the bits
again from the pages as they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.repair.model import PageWrite

if TYPE_CHECKING:
    from pgsurgeon.repair.planner import Planner

VM_CODES = frozenset({"vm.all_visible_wrong", "vm.all_frozen_wrong"})
VM_HEADER = 24
"""MAXALIGN(SizeOfPageHeaderData): where a map page's bits start (visibilitymap.c, MAPSIZE)."""
# VISIBILITYMAP_ALL_VISIBLE, VISIBILITYMAP_ALL_FROZEN (src/include/access/visibilitymapdefs.h): the two bits each
# heap block has in the map, by the finding that says the bit is wrong
VM_BITS = {"vm.all_visible_wrong": 0x01, "vm.all_frozen_wrong": 0x02}


def vm_heap_blocks_per_page(block_size: int) -> int:
    """HEAPBLOCKS_PER_PAGE (visibilitymap.c): MAPSIZE bytes after the MAXALIGNed page header, 4 heap blocks a
    byte."""
    return (block_size - VM_HEADER) * 4


def vm_bits_set(page: bytes, must_clear: dict[int, int], block_size: int) -> str:
    """Why the copy of a map page cannot be used (empty: it can): it sets a bit the heap page contradicts."""
    per_page = vm_heap_blocks_per_page(block_size)
    for heap_blk, bits in sorted(must_clear.items()):
        at = heap_blk % per_page
        have = (page[VM_HEADER + at // 4] >> ((at % 4) * 2)) & 0x3
        if have & bits:
            return f"the copy marks heap block {heap_blk} all-visible or all-frozen too (bits {have:#x})"
    return ""


VM_CLEAR = "vm-clear"
"""A :class:`PageWrite` action: the map bits of heap block ``block`` cleared in the ``_vm`` fork of ``file``."""


def vm_blocks(findings: list[dict[str, Any]], table: str) -> list[int]:
    """The heap blocks of ``table`` whose visibility map bits are wrong."""
    return sorted(
        {
            int(f["block"])
            for f in findings
            if f["code"] in VM_CODES and f["relation"] == table and f["block"] is not None
        }
    )


def vm_writes(p: Planner, blocks: list[int]) -> list[PageWrite]:
    rel = p.ctx.table
    assert rel.filepath is not None
    return [PageWrite(relation=rel.regclass, file=rel.filepath, block=b, offset=0, action=VM_CLEAR) for b in blocks]


FSM_CODES = frozenset({"fsm.tree_inconsistent", "file.fsm_beyond_end"})
FSM_REMOVE = "fsm-remove"
"""A :class:`PageWrite` action: the free space map fork ``file`` removed (every segment), for VACUUM to rebuild."""


def fsm_damaged(findings: list[dict[str, Any]], table: str) -> bool:
    """Whether ``table``'s free space map is wrong (a tree that is not one, free space past the table's end)."""
    return any(f["code"] in FSM_CODES and f["relation"] == table for f in findings)


def fsm_write(p: Planner) -> PageWrite:
    rel = p.ctx.table
    assert rel.filepath is not None
    return PageWrite(relation=rel.regclass, file=f"{rel.filepath}_fsm", block=0, offset=0, action=FSM_REMOVE)


def fsm_removals(pgdata: Path, file: str) -> list[Any]:
    """The removal of every segment of the free space map fork ``file`` (relative to ``pgdata``), for the undo
    manifest (which keeps each file whole)."""
    from pgsurgeon.journal.manifest import FileChange

    out = []
    segno = 0
    while (pgdata / (name := file if segno == 0 else f"{file}.{segno}")).exists():
        out.append(FileChange.removal(name, pgdata / name, "repair: free space map removed (VACUUM rebuilds it)"))
        segno += 1
    return out
