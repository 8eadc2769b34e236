"""Finding every damaged block and tuple of a live database, through SQL, without crashing it.

The order is what keeps a damaged server up:

1. Check every page in the core before any SQL looks at its tuples, in parallel (-j), memory independent of the
   table's size. When the data directory is on this host, the relation files are read directly with the rules of
   ``scan --live``: a page written since the last checkpoint is skipped there and read through the server instead,
   and a page the files show damaged is compared with the server's copy (a refusal confirms it, a newer copy is
   checked instead). Otherwise every page comes through pageinspect's ``get_raw_page`` (a copy of the buffer, the
   executor never looks at the tuples), a batch of consecutive pages per statement as one binary bytea; a range
   the server refuses is bisected down to the refused blocks.
2. Index entries whose row seems missing (past the end of the table, on an unused line pointer) are re-read
   through the server before they are believed (a concurrent insert or VACUUM explains a first mismatch); the
   visibility map is compared with the table's length as it is after the map was read.
3. ``verify_heapam`` over the ranges of pages that passed (TOAST tables first, without following TOAST pointers;
   then the tables, following them only when the TOAST table is sound), and ``bt_index_check`` on every btree
   index, in one pool of sessions. A range that raises an ERROR is bisected to the failing blocks and the rest is
   checked. A backend crash is recorded, the session reconnects and amcheck is not run again (a crash restarts
   every session of the server). With -j 2 or more and the files here, two of these start during step 1 on the
   -j sessions: bt_index_check (it reads only its index, built to meet damage), and verify_heapam on a table
   without TOAST data, on each chunk of blocks as soon as the scan has checked it, over the blocks its files
   vouched for (diagnose/heapcheck.py ``start_heap_early``); the blocks held back are checked here.
   ``heapallindexed`` only over tables with no damage at all (it reads the table
   with the executor); with the files here, the core does it first, beside amcheck (crates/core/src/diagnose/
   allindexed.rs): what it proves is not asked of the server; what it doubts is. On 18, ``gin_index_check`` on
   every GIN index (with -j 2 or more, started during step 1 once the scan has found every page of the index
   sound: diagnose/gincheck.py ``start_gin_early``). A damaged index of a kind amcheck has no checker for is used
   through SQL, its table's rows looked up by their keys: what the server then says is its findings'
   ``observed_error`` (diagnose/probe.py).
4. The visibility map: the files' verdict on every marked page (the live scan) against pg_visibility's
   ``pg_check_visible``/``pg_check_frozen`` where that extension is installed (diagnose/visibility.py).

Every statement runs in its own transaction (autocommit), with statement_timeout and lock_timeout; the locks
taken are AccessShareLock only (bt_index_parent_check, which takes ShareLock, is never used).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pgsurgeon import core as core  # the tests reach the core through this module (monkeypatch engine.core)
from pgsurgeon.diagnose.allindexed import start_allindexed
from pgsurgeon.diagnose.btreecheck import btree_phase, start_btree_early
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.crosscheck import file_checks, index_refs, vm_tails
from pgsurgeon.diagnose.files import files_phase
from pgsurgeon.diagnose.gincheck import gin_phase, start_gin_early
from pgsurgeon.diagnose.heapcheck import amcheck_phase, heap_phase, start_heap_early
from pgsurgeon.diagnose.model import Checked, Crossref, DiagnoseOutcome, DiagnoseRequest, NotChecked
from pgsurgeon.diagnose.outcome import fold_amcheck, outcome
from pgsurgeon.diagnose.pages import raw_phase
from pgsurgeon.diagnose.probe import PROBED_AMS, probe_phase
from pgsurgeon.diagnose.relations import load_relations
from pgsurgeon.diagnose.toast import locate_toast_chunks
from pgsurgeon.diagnose.visibility import visibility_phase
from pgsurgeon.errors import UsageError

if TYPE_CHECKING:
    from pgsurgeon.boundary import CheckedChunk

__all__ = ["Checked", "Crossref", "DiagnoseOutcome", "DiagnoseRequest", "Diagnosis", "NotChecked", "run_diagnose"]

# The core's heapallindexed budget, a knob of the run (the tests shrink it here)
ALLINDEXED_BLOOM_BYTES = 64 << 20  # one pass's Bloom filters, all indexes of a table (amcheck: maintenance_work_mem)


def diagnose(d: Diagnosis) -> DiagnoseOutcome:
    """Every phase in order (the module's docstring says why this order); the sessions are closed whatever happens."""
    try:
        load_relations(d)
        heaps = [r for r in d.rels if r.relation.is_heap]
        others = [r for r in d.rels if not r.relation.is_heap and r.relation.relkind == "i"]
        start_btree_early(d, [r for r in d.rels if r.relation.is_btree and r.relation.role == "index"])
        d.progress(f"reading {sum(r.relation.nblocks for r in d.rels)} pages of {len(d.rels)} relation(s)")
        gins = [r for r in others if r.relation.amname == "gin"]
        early = [cb for cb in (start_heap_early(d, heaps), start_gin_early(d, gins)) if cb is not None]
        if d.pgdata is None or not files_phase(d, heaps + others, _each(early)):
            d.pgdata = None
            raw_phase(d, heaps + others)
        tails = vm_tails(d, heaps)
        for rel in heaps:
            rel.lines = None  # memory: only the index batches needed it
            file_checks(d, rel, tails.get(rel.relation.oid))
        for index in others:
            index_refs(d, index)
        visibility_phase(d, heaps)
        d.progress("verify_heapam on TOAST tables")
        heap_phase(d, [r for r in heaps if r.relation.role == "toast"])
        start_allindexed(d, [r for r in heaps if r.relation.role == "table"], ALLINDEXED_BLOOM_BYTES)
        d.progress("verify_heapam on tables, bt_index_check on their indexes")
        amcheck_phase(
            d,
            [r for r in heaps if r.relation.role != "toast"],
            [r for r in d.rels if r.relation.is_btree and r.relation.role == "index"],
        )
        btree_phase(d, [r for r in d.rels if r.relation.is_btree and r.relation.role == "toast-index"])
        gin_phase(d, [r for r in d.rels if r.relation.amname == "gin" and r.relation.relkind == "i"])
        probe_phase(d, [r for r in d.rels if r.relation.amname in PROBED_AMS and r.relation.relkind == "i"])
        locate_toast_chunks(d)
        for r in d.rels:
            if r.relation.relkind == "i" and not r.relation.is_btree and r.relation.amname != "gin":
                r.amcheck = f"pages only (no amcheck for {r.relation.amname})"
        fold_amcheck(d)
    finally:
        d.close()
    return outcome(d)


def _each(callbacks: list[Callable[[list[CheckedChunk]], None]]) -> Callable[[list[CheckedChunk]], None] | None:
    """One callback for the scan's checked chunks that hands them to each of ``callbacks`` (None for none)."""
    if not callbacks:
        return None

    def each(chunks: list[CheckedChunk]) -> None:
        for cb in callbacks:
            cb(chunks)

    return each


def run_diagnose(req: DiagnoseRequest) -> DiagnoseOutcome:
    """Diagnose the database ``req.dsn`` points at (or the tables in ``req.tables``)."""
    if req.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return diagnose(Diagnosis(req))
