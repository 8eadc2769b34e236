"""bt_index_check on every btree index (with heapallindexed over tables with no damage at all), started early
when nothing it needs is still being read."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import run_locked
from pgsurgeon.session import BackendLost, ServerError, Session

if TYPE_CHECKING:
    from concurrent.futures import Future


def start_btree_early(d: Diagnosis, indexes: list[Checked]) -> None:
    """Without --heapallindexed, bt_index_check needs nothing from the page checks (it reads only its index and
    is built to meet damage): with -j 2 or more it starts now, on one of the -j sessions, and runs while the
    pages are read. Its answer is read in the amcheck phase, as if it had run there."""
    if d.req.jobs <= 1 or d.req.heapallindexed:
        return
    query = _btree_query(d)

    def check(index: Checked) -> Any:
        return run_locked(d.session(), query, {"rel": index.relation.oid, "all": False})

    for index in sorted(indexes, key=lambda r: -r.relation.nblocks):
        if index.relation.usable and index.relation.nblocks > 0:
            d.early_btree[index.relation.oid] = d.workers().submit(check, index)


def _btree_query(d: Diagnosis) -> Any:
    return db.sql.SQL("SELECT {fn}(%(rel)s::oid::regclass, %(all)s)").format(fn=d.fn("amcheck", "bt_index_check"))


def btree_phase(d: Diagnosis, indexes: list[Checked]) -> None:
    for res in d.parallel(partial(btree_task, d), indexes):
        d.add(res)


def not_to_check(d: Diagnosis, index: Checked) -> bool:
    """An index amcheck is not asked about (invalid, or amcheck stopped for the run), its account saying why."""
    if not index.relation.usable:
        index.amcheck = "skipped: index is not valid (an interrupted CREATE INDEX CONCURRENTLY?)"
        return True
    if d.amcheck_stopped:
        index.amcheck = f"skipped: {d.amcheck_stopped}"
        return True
    return False


def unfinished(index: Checked, fn: str, err: ServerError) -> list[dict[str, Any]] | None:
    """amcheck's ``fn`` cut short by statement_timeout or lock_timeout: no answer about the pages, a finding that says
    so; None for an answer (an ERROR about the index)."""
    index.observe(err.observed)
    if err.sqlstate not in ("57014", "55P03"):
        return None
    index.amcheck = "not checked"
    return [
        fmod.make(
            "server.timeout",
            index.relation,
            None,
            None,
            f"{fn} not finished: {err.message}",
            source=fmod.SOURCE_SERVER,
            observed_error=err.observed,
        )
    ]


def _lost_early(d: Diagnosis, index: Checked, early: Future[Any] | None) -> list[dict[str, Any]]:
    """The check started early on an index amcheck is no longer asked about: when its backend was lost, it is
    recorded all the same. Another session may have counted the same restart first (a crash ends every backend),
    and stopped amcheck: the index whose check crashed the server is still named."""
    if early is None:
        return []
    try:
        early.result()
    except BackendLost as lost:
        return [d.crashed(index, 0, max(index.relation.nblocks - 1, 0), lost.message, "bt_index_check")]
    except Exception:  # an answer about an index no longer asked about is not reported
        return []
    return []


def btree_task(d: Diagnosis, session: Session, index: Checked) -> list[dict[str, Any]]:
    early = d.early_btree.pop(index.relation.oid, None)
    if not_to_check(d, index):
        return _lost_early(d, index, early)
    heap = d.heap_of(index)
    if index.locked is not None or (heap is not None and heap.locked is not None):
        index.amcheck = "not checked: its table is locked by another session"
        return []
    heap_sound = heap is not None and not heap.refused and not heap.suspect
    if heap is not None and index.relation.role == "index":
        # heapallindexed deforms the indexed columns of every row: only over a table with no damage at all
        with d.findings_lock:
            heap_sound = heap_sound and not any(
                f["relfilenode"] == heap.relation.relfilenode and f["severity"] == "error" for f in d.findings
            )
    want_all = d.req.heapallindexed or (index.relation.role == "toast-index" and _toast_trouble(d, index))
    heapallindexed = want_all and heap_sound
    if want_all and not heap_sound:
        index.notes.append("heapallindexed skipped: the table has damaged pages (it is read with the executor)")
    query = _btree_query(d)
    in_core = d.allindexed.get(index.relation.oid) if heapallindexed else None
    try:
        if early is not None and not heapallindexed:
            rows = early.result()
        else:
            rows = run_locked(session, query, {"rel": index.relation.oid, "all": heapallindexed and in_core is None})
        if in_core is not None and not isinstance(rows, ServerError):
            try:
                proven, note = in_core.result()[index.relation.oid]
            except Exception as exc:  # the server decides: the check in the core is only a shortcut
                proven, note = False, f"heapallindexed through the server (the check from the files failed: {exc})"
            index.notes.append(note)
            if not proven:
                rows = run_locked(session, query, {"rel": index.relation.oid, "all": True})
    except BackendLost as lost:
        return [d.crashed(index, 0, max(index.relation.nblocks - 1, 0), lost.message, "bt_index_check")]
    index.amcheck = "ok (heapallindexed)" if heapallindexed else "ok"
    if not isinstance(rows, ServerError):
        return []
    err = rows
    cut_short = unfinished(index, "bt_index_check", err)
    if cut_short is not None:
        return cut_short
    index.amcheck = "corrupt"
    where = amcheck.classify_btree(err.message, err.detail)
    if where.code == "server.invalid_page" and where.block in index.refused:
        return []  # the raw pass named this block already
    if where.heap_tid is not None and heap is not None:
        hblk, hoff = where.heap_tid
        return [
            fmod.make(
                "index.missing_entry",
                heap.relation,
                hblk,
                hoff,
                f"index {index.relation.regclass} has no entry for this row: its key columns changed after it was "
                f"indexed, or the index lost the entry ({err.message})",
                source=fmod.SOURCE_AMCHECK,
                observed_error=f"bt_index_check: {err.observed}",
            )
        ]
    return [
        fmod.make(
            where.code,
            index.relation,
            where.block,
            where.item,
            err.message + (f" ({err.detail})" if err.detail else ""),
            source=fmod.SOURCE_AMCHECK,
            observed_error=f"bt_index_check: {err.observed}",
        )
    ]


def _toast_trouble(d: Diagnosis, toast_index: Checked) -> bool:
    """amcheck found TOAST trouble anywhere, or the files found an error in this index's TOAST table."""
    with d.findings_lock:
        if any(f["code"].startswith("toast.") and f["source"] == fmod.SOURCE_AMCHECK for f in d.findings):
            return True
    toast = d.heap_of(toast_index)
    return toast is not None and d.has_errors(toast)
