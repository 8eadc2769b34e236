"""Repairs of a table's visibility map: the bits of the pages ``vm.all_visible_wrong`` / ``vm.all_frozen_wrong``
name are wrong, the heap pages are right. With the server stopped (``file`` method) the bits are cleared in the
``_vm`` file, the old map pages kept in the undo manifest; online (``sql``) pg_visibility's
``pg_truncate_visibility_map`` clears the whole map (WAL-logged). Either way the VACUUM that follows sets the bits
again from the pages as they are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgsurgeon.repair.model import PageWrite

if TYPE_CHECKING:
    from pgsurgeon.repair.planner import Planner

VM_CODES = frozenset({"vm.all_visible_wrong", "vm.all_frozen_wrong"})
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
