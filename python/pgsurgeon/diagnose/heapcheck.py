"""verify_heapam over the runs of blocks the server accepted (a range that raises an ERROR bisected to the failing
blocks), and the amcheck phase's one pool of sessions for the tables and their btree indexes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.btreecheck import btree_phase, btree_task
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.pages import refused_findings
from pgsurgeon.diagnose.server import run_locked
from pgsurgeon.diagnose.toast import toast_scan_confirmed
from pgsurgeon.session import BackendLost, ServerError, Session

if TYPE_CHECKING:
    from pgsurgeon.boundary import CheckedChunk


def ranges(d: Diagnosis, rel: Checked) -> list[tuple[int, int]]:
    """Runs of blocks the server accepted, cut to amcheck_batch blocks."""
    return _runs(0, rel.relation.nblocks, rel.refused.keys() | rel.unchecked, d.req.amcheck_batch)


def _runs(first: int, end: int, held: Iterable[int], step: int) -> list[tuple[int, int]]:
    """Blocks first..end-1 but those ``held``, as runs cut to ``step`` blocks."""
    out: list[tuple[int, int]] = []
    start = first
    # the gaps between held blocks, cut to step blocks (a held block per loop, not a block per loop)
    for skipped in [*sorted(b for b in set(held) if first <= b < end), end]:
        out.extend((a, min(a + step, skipped) - 1) for a in range(start, skipped, step))
        start = skipped + 1
    return out


def _minus(runs: list[tuple[int, int]], done: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``runs`` without the blocks of ``done`` (both ascending and without overlaps among themselves)."""
    out: list[tuple[int, int]] = []
    for a, b in runs:
        for x, y in done:
            if y < a or x > b:
                continue
            if x > a:
                out.append((a, x - 1))
            a = y + 1
        if a <= b:
            out.append((a, b))
    return out


def start_heap_early(d: Diagnosis, tables: list[Checked]) -> Callable[[list[CheckedChunk]], None] | None:
    """With -j 2 or more, verify_heapam on a table's blocks starts as the scan checks them (the scan hands over its
    chunks as they are done), on the blocks its files vouched for: no finding on the page and not skipped by the
    live scan. The server never reads a page the core has not checked first; the blocks held back (damage to
    confirm, pages written since the checkpoint) are checked in the amcheck phase as before, once their page checks
    are done. Only tables without TOAST data: verify_heapam follows TOAST pointers only once the TOAST table's
    pages and index are known sound, which is known only at the end of the scan."""
    if d.req.jobs <= 1:
        return None
    by_node: dict[int, Checked] = {}
    for rel in tables:
        toast = d.toast_of(rel)
        if rel.relation.role == "table" and (toast is None or toast.relation.nblocks == 0):
            by_node[rel.relation.relfilenode] = rel

    def check(task: tuple[Checked, int, int, bool]) -> list[dict[str, Any]]:
        return heap_task(d, d.session(), task)

    def started(chunks: list[CheckedChunk]) -> None:
        # the chunks handed over at once, adjacent ones merged: fewer, longer statements
        spans: dict[int, list[tuple[int, int, list[int]]]] = {}
        for c in sorted(chunks, key=lambda c: (c["relfilenode"], c["first"])):
            rel = by_node.get(c["relfilenode"])
            if rel is None or c["database_oid"] != d.server.database_oid:
                continue
            end = min(rel.relation.nblocks, c["first"] + c["count"])
            held = [*c["blocks_found"], *c["blocks_skipped"]]
            got = spans.setdefault(rel.relation.oid, [])
            if got and got[-1][1] == c["first"]:
                got[-1] = (got[-1][0], end, got[-1][2] + held)
            elif c["first"] < end:
                got.append((c["first"], end, held))
        for oid, found in spans.items():
            rel = d.rel_by_oid(oid)
            assert rel is not None
            for a, b in (r for first, end, held in found for r in _runs(first, end, held, d.req.amcheck_batch)):
                task = (rel, a, b, False)
                d.early_heap.setdefault(oid, []).append((task, d.workers().submit(check, task)))

    return started


def heap_task(d: Diagnosis, session: Session, task: tuple[Checked, int, int, bool]) -> list[dict[str, Any]]:
    rel, first, last, check_toast = task
    query = db.sql.SQL(
        "SELECT blkno, offnum, attnum, msg FROM {fn}(%(rel)s::oid::regclass, false, %(toast)s, 'none', "
        "%(a)s::bigint, %(b)s::bigint)"
    ).format(fn=d.fn("amcheck", "verify_heapam"))
    out: list[dict[str, Any]] = []
    stack = [(first, last)]
    while stack:
        a, b = stack.pop()
        if a > b:
            continue
        if d.amcheck_stopped:
            out.append(_unchecked(rel, a, b, d.amcheck_stopped))
            continue
        try:
            rows = run_locked(session, query, {"rel": rel.relation.oid, "toast": check_toast, "a": a, "b": b})
        except BackendLost as lost:
            out.append(d.crashed(rel, a, b, lost.message))
            continue
        if not isinstance(rows, ServerError):
            for blkno, offnum, attno, msg in rows:
                code, area = amcheck.classify_heap(msg)
                # verify_heapam counts attributes from 0 (ctx->attnum, contrib/amcheck/verify_heapam.c); a
                # column is attnum 1 and up everywhere else, pg_attribute and the next steps included
                attnum = None if attno is None else int(attno) + 1
                out.append(
                    fmod.make(
                        code,
                        rel.relation,
                        int(blkno),
                        int(offnum) if offnum is not None else None,
                        msg if attnum is None else f"attribute {attnum}: {msg}",
                        source=fmod.SOURCE_AMCHECK,
                        observed_error=f"verify_heapam: {msg}",
                        attnum=attnum,
                        area=area,
                    )
                )
            continue
        err = rows
        if "must be between 0 and" in err.message:  # the table shrank since its size was read
            continue
        if err.sqlstate in ("57014", "55P03") and a == b:
            out.append(
                fmod.make(
                    "server.timeout",
                    rel.relation,
                    a,
                    None,
                    f"block {a} not checked: {err.message}",
                    source=fmod.SOURCE_SERVER,
                    observed_error=err.observed,
                )
            )
            continue
        named = amcheck.invalid_page_block(err.message)
        if named is not None and named[1] == rel.path and a <= named[0] <= b:
            rel.observe(err.observed)
            rel.refused[named[0]] = err
            out.extend(refused_findings(d, rel, named[0], err))
            stack.extend([(named[0] + 1, b), (a, named[0] - 1)])
        elif a == b:
            rel.observe(err.observed)
            out.append(
                fmod.make(
                    "server.error",
                    rel.relation,
                    a,
                    None,
                    f"verify_heapam failed on block {a}: {err.message}",
                    source=fmod.SOURCE_SERVER,
                    observed_error=err.observed,
                )
            )
        else:
            mid = a + (b - a) // 2
            stack.extend([(mid + 1, b), (a, mid)])
    return out


def _unchecked(rel: Checked, a: int, b: int, why: str) -> dict[str, Any]:
    f = fmod.make(
        "server.timeout",
        rel.relation,
        a,
        None,
        f"blocks {a}..{b} not checked by amcheck: {why}",
        source=fmod.SOURCE_SERVER,
    )
    return f


def heap_tasks(d: Diagnosis, rels: list[Checked]) -> list[tuple[Checked, int, int, bool]]:
    tasks: list[tuple[Checked, int, int, bool]] = []
    for rel in rels:
        check_toast = False
        if rel.relation.role == "table":
            toast = d.toast_of(rel)
            check_toast = toast is not None and toast.relation.nblocks > 0 and not toast.refused and not toast.suspect
            if check_toast and toast is not None and d.has_errors(toast, *d.toast_indexes_of(rel)):
                # verify_heapam finds chunks through the TOAST index: a chunk whose chunk_id or chunk_seq was
                # altered is still found under its old key there, so the server calls the value whole. The
                # files' own reading of the chunks stands.
                check_toast = False
            if toast is not None and toast.relation.nblocks > 0 and not check_toast:
                rel.notes.append("TOAST values not followed: the TOAST table has damaged pages")
            rel.toast_checked = check_toast
        early = sorted((t[1], t[2]) for t, _ in d.early_heap.get(rel.relation.oid, []))
        tasks.extend((rel, a, b, check_toast) for a, b in _minus(ranges(d, rel), early))
    return tasks


def heap_done(
    d: Diagnosis, rels: list[Checked], tasks: list[tuple[Checked, int, int, bool]], results: list[list[dict[str, Any]]]
) -> None:
    by_rel: dict[int, list[dict[str, Any]]] = {}
    for (rel, _a, _b, _t), res in zip(tasks, results, strict=True):
        by_rel.setdefault(rel.relation.oid, []).extend(res)
    for rel in rels:  # the ranges started while the indexes were read (start_heap_early)
        for _task, future in d.early_heap.get(rel.relation.oid, []):
            by_rel.setdefault(rel.relation.oid, []).extend(future.result())
    for rel in rels:
        res = by_rel.get(rel.relation.oid, [])
        d.add(res)
        # The files' TOAST findings mix moments (a value rewritten while its table and TOAST table were read);
        # verify_heapam follows every pointer with one snapshot, and names the same damage on the row.
        if not (rel.toast_checked and rel.amcheck != "crashed" and not d.amcheck_stopped):
            d.add(rel.toast_scan)
        elif rel.toast_scan:
            d.add(toast_scan_confirmed(d, rel))
        rel.toast_scan = []
        if rel.amcheck == "crashed":
            continue
        if not ranges(d, rel) and rel.relation.nblocks:
            rel.amcheck = "skipped: no readable block"
        elif any(f["source"] == fmod.SOURCE_AMCHECK for f in res):
            rel.amcheck = "corrupt"
        elif any(f["code"] in ("server.error", "server.invalid_page", "server.timeout") for f in res):
            rel.amcheck = "errors"
        else:
            rel.amcheck = "ok" if rel.relation.nblocks else "empty"
        if rel.refused and rel.amcheck in ("ok", "corrupt", "errors"):
            rel.amcheck += f" ({len(rel.refused)} refused block(s) not checked)"


def heap_phase(d: Diagnosis, rels: list[Checked]) -> None:
    tasks = heap_tasks(d, rels)
    heap_done(d, rels, tasks, d.parallel(partial(heap_task, d), tasks))


def amcheck_phase(d: Diagnosis, tables: list[Checked], indexes: list[Checked]) -> None:
    """verify_heapam over the tables and bt_index_check over their indexes, in one pool: the indexes first
    (each is one statement, the longest), block ranges of the tables filling the other sessions.

    Without the files, the rows' attributes were not walked before: heapallindexed (which deforms them) then
    waits for verify_heapam's verdict on its table."""
    if d.pgdata is None:
        heap_phase(d, tables)
        btree_phase(d, indexes)
        return
    table_tasks = heap_tasks(d, tables)
    started = [i for i in indexes if i.relation.oid in d.early_btree]
    indexes = [i for i in indexes if i.relation.oid not in d.early_btree]
    tasks: list[tuple[Checked, int, int, bool] | Checked] = [*indexes, *table_tasks]

    def cost(task: tuple[Checked, int, int, bool] | Checked) -> int:
        """Blocks a task reads: the longest go first, so no session is left with a big one at the end."""
        if isinstance(task, Checked):
            heap = d.heap_of(task)
            return task.relation.nblocks + (heap.relation.nblocks if heap is not None and d.req.heapallindexed else 0)
        return task[2] - task[1] + 1

    order = sorted(range(len(tasks)), key=lambda i: -cost(tasks[i]))

    def run(session: Session, task: tuple[Checked, int, int, bool] | Checked) -> list[dict[str, Any]]:
        return btree_task(d, session, task) if isinstance(task, Checked) else heap_task(d, session, task)

    done = d.parallel(run, [tasks[i] for i in order])
    results: list[list[dict[str, Any]]] = [[] for _ in tasks]
    for i, res in zip(order, done, strict=True):
        results[i] = res
    for res in results[: len(indexes)]:
        d.add(res)
    for index in started:  # finished by now, or soon: the heap ranges ran beside them
        d.add(btree_task(d, d.main, index))
    heap_done(d, tables, table_tasks, results[len(indexes) :])
