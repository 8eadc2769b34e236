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
   every session of the server). ``heapallindexed`` only over tables with no damage at all (it reads the table
   with the executor). With the files here, the core does it first, beside amcheck (crates/core/src/diagnose/
   allindexed.rs): what it proves is not asked of the server; what it doubts is.

Every statement runs in its own transaction (autocommit), with statement_timeout and lock_timeout; the locks
taken are AccessShareLock only (bt_index_parent_check, which takes ShareLock, is never used).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pgsurgeon import core, db
from pgsurgeon.boundary import AllIndexedConfig
from pgsurgeon.catalog.sql import lookup_relation, not_found
from pgsurgeon.datadir import Geometry, segments_of
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.crosscheck import file_checks, index_refs, vm_tails
from pgsurgeon.diagnose.files import files_phase
from pgsurgeon.diagnose.findings import RelContext
from pgsurgeon.diagnose.model import Crossref, DiagnoseOutcome, DiagnoseRequest, NotChecked, Rel
from pgsurgeon.diagnose.pages import raw_phase, refused_findings
from pgsurgeon.diagnose.server import local_pgdata, one, run_locked, server_info
from pgsurgeon.diagnose.session import BackendLost, ServerError, Session
from pgsurgeon.diagnose.toast import locate_toast_chunks, toast_scan_confirmed
from pgsurgeon.errors import PgSurgeonError, UsageError

__all__ = ["Crossref", "DiagnoseOutcome", "DiagnoseRequest", "Diagnosis", "NotChecked", "Rel", "run_diagnose"]

T = TypeVar("T")
R = TypeVar("R")

ALLINDEXED_BLOOM_BYTES = 64 << 20  # one pass's Bloom filters, all indexes of a table (amcheck: maintenance_work_mem)


# ---------------------------------------------------------------------------------------------------- the run


class Diagnosis:
    def __init__(self, req: DiagnoseRequest) -> None:
        self.req = req
        self.started = time.monotonic()
        self.local = threading.local()
        self.sessions: list[Session] = []
        self.sessions_lock = threading.Lock()
        self.findings: list[dict[str, Any]] = []
        self.findings_lock = threading.Lock()
        self.crashes = 0
        self.amcheck_stopped: str | None = None
        self.main = Session(req.dsn, req.limits)
        self.sessions.append(self.main)
        self.server = server_info(self.main)
        pgdata, geometry = local_pgdata(req, self.server)
        self.geometry: Geometry | None = geometry
        self.pgdata: Path | None = pgdata
        self.rels: list[Rel] = []
        self.scan_note: str | None = None
        self.reported: set[tuple[int, str, int]] = set()
        self.blamed: set[tuple[int, int]] = set()
        """(TOAST value, chunk) that amcheck found the wrong size."""
        self.allindexed: dict[int, Future[dict[int, tuple[bool, str]]]] = {}
        """Per btree index, its table's heapallindexed in the core: per index, proven or not and what it saw."""
        self.allindexed_pool: ThreadPoolExecutor | None = None
        self.pool: ThreadPoolExecutor | None = None
        """The -j workers, each with its own session for the whole run."""
        self.early_btree: dict[int, Future[Any]] = {}
        """Per index, bt_index_check started while the pages were being read (the rows or the error it returned)."""

    # ------------------------------------------------------------------ setup

    def fn(self, ext: str, name: str) -> Any:
        """An extension function, schema-qualified (the extension may live outside the search_path)."""
        return db.sql.Identifier(str(self.server[f"{ext}_schema"]), name)

    def _lookup(self, text: str) -> tuple[int, str] | None:
        def query(sql_text: str, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
            rows = self.main.run(sql_text, params)
            return None if isinstance(rows, ServerError) else rows

        return lookup_relation(query, text)

    def resolve_tables(self) -> tuple[list[int], list[int]]:
        tables: list[int] = []
        indexes: list[int] = []
        for text in self.req.tables:
            found = self._lookup(text)
            if found is None:
                raise not_found(text, str(self.server["database"]))
            oid, relkind = found
            if relkind == "p":
                parts = one(self.main, "diagnose_partitions", {"oid": oid})
                tables.extend(int(r[0]) for r in parts)
            elif relkind in ("i", "I"):
                indexes.append(oid)
            elif relkind in ("r", "m", "t"):
                tables.append(oid)
            else:
                raise UsageError(f"{text} is not a table, materialized view or index (relkind {relkind})")
        return tables, indexes

    def load_relations(self) -> None:
        tables, indexes = self.resolve_tables()
        params = {"tables": tables or None, "indexes": indexes or None}
        if self.req.tables and not tables and not indexes:
            raise UsageError("none of the given tables has storage", hint="a partitioned table without partitions?")
        rows = one(self.main, "diagnose_relations", params)
        bs = int(self.server["block_size"])
        for role, oid, table_oid, relname, schema, name, relkind, amname, path, node, natts, ok in rows:
            if path is None or node is None:
                continue
            ctx = RelContext(
                path=str(path), relfilenode=int(node), relation=str(relname), database=self.server["database"]
            )
            self.rels.append(
                Rel(
                    role=role,
                    oid=int(oid),
                    table_oid=int(table_oid),
                    relname=str(relname),
                    schema=str(schema),
                    name=str(name),
                    relkind=str(relkind),
                    amname=amname,
                    path=str(path),
                    relfilenode=int(node),
                    size=0,
                    vm_size=0,
                    natts=int(natts or 0),
                    usable=bool(ok),
                    ctx=ctx,
                    block_size=bs,
                )
            )
        self.load_sizes()

    def load_sizes(self) -> None:
        """Sizes for all relations in one statement; when another session's lock makes it time out, one by one,
        and a relation that stays locked is marked so (and not checked)."""
        query = db.load_sql("diagnose_sizes")
        rows = self.main.run(query, {"oids": [r.oid for r in self.rels]})
        if isinstance(rows, ServerError) and rows.sqlstate != "55P03":
            raise PgSurgeonError(f"reading relation sizes failed: {rows.message}")
        sizes: dict[int, tuple[int, int]] = {}
        if isinstance(rows, ServerError):
            for rel in self.rels:
                alone = self.main.run(query, {"oids": [rel.oid]})
                if isinstance(alone, ServerError):
                    rel.locked = alone
                    continue
                sizes.update({int(o): (int(m or 0), int(v or 0)) for o, m, v in alone})
        else:
            sizes = {int(o): (int(m or 0), int(v or 0)) for o, m, v in rows}
        empty = [r.oid for r in self.rels if sizes.get(r.oid, (0, 0))[0] == 0 and r.locked is None]
        missing = self.main.run(db.load_sql("diagnose_missing_files"), {"oids": empty}) if empty else []
        gone = {} if isinstance(missing, ServerError) else {int(o): str(p) for o, p in missing}
        for rel in self.rels:
            rel.size, rel.vm_size = sizes.get(rel.oid, (0, 0))
            if rel.oid in gone:
                self.add(
                    [
                        fmod.make(
                            "file.missing_segment",
                            rel.ctx,
                            0,
                            None,
                            f"the relation's file {gone[rel.oid]} is missing: every row in it is lost, and any read "
                            "fails",
                            source=fmod.SOURCE_SERVER,
                            observed_error=f'could not open file "{gone[rel.oid]}": No such file or directory',
                        )
                    ]
                )
            if rel.locked is not None:
                rel.amcheck = "not checked: locked by another session"
                self.add(
                    [
                        fmod.make(
                            "server.timeout",
                            rel.ctx,
                            None,
                            None,
                            f"not checked: {rel.locked.message} (another session holds a conflicting lock, e.g. "
                            "ALTER TABLE, VACUUM FULL, CLUSTER or REINDEX)",
                            source=fmod.SOURCE_SERVER,
                            observed_error=rel.locked.observed,
                        )
                    ]
                )

    # ------------------------------------------------------------------ plumbing

    def session(self) -> Session:
        s: Session | None = getattr(self.local, "session", None)
        if s is None:
            s = Session(self.req.dsn, self.req.limits, wait=True)
            self.local.session = s
            with self.sessions_lock:
                self.sessions.append(s)
        return s

    def parallel(self, fn: Callable[[Session, T], R], tasks: Iterable[T]) -> list[R]:
        items = list(tasks)
        if not items:
            return []
        if self.req.jobs <= 1 or len(items) == 1:
            return [fn(self.main, t) for t in items]
        return list(self.workers().map(lambda t: fn(self.session(), t), items))

    def workers(self) -> ThreadPoolExecutor:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=self.req.jobs, thread_name_prefix="pgsurgeon-diagnose")
        return self.pool

    def add(self, found: Iterable[dict[str, Any]]) -> None:
        with self.findings_lock:
            self.findings.extend(found)

    def progress(self, text: str) -> None:
        if self.req.on_progress is not None:
            self.req.on_progress(text)

    def close(self) -> None:
        if self.allindexed_pool is not None:
            self.allindexed_pool.shutdown(cancel_futures=True)
        if self.pool is not None:
            if any(not f.done() for f in self.early_btree.values()):
                # left early (an error, ^C): stop the check still running rather than wait for it
                for s in self.sessions:
                    if s is not self.main:
                        s.cancel()
            self.pool.shutdown(cancel_futures=True)
        for s in self.sessions:
            s.close()

    def rel_by_oid(self, oid: int) -> Rel | None:
        return next((r for r in self.rels if r.oid == oid), None)

    def heap_of(self, index: Rel) -> Rel | None:
        """The table an index belongs to (the TOAST table for the TOAST index)."""
        if index.role == "toast-index":
            return next((r for r in self.rels if r.role == "toast" and r.table_oid == index.table_oid), None)
        return self.rel_by_oid(index.table_oid)

    def toast_indexes_of(self, table: Rel) -> list[Rel]:
        return [r for r in self.rels if r.role == "toast-index" and r.table_oid == table.oid]

    def has_errors(self, *rels: Rel) -> bool:
        """Whether any finding so far is an error in one of ``rels``."""
        nodes = {r.relfilenode for r in rels}
        with self.findings_lock:
            return any(f["relfilenode"] in nodes and f["severity"] == "error" for f in self.findings)

    def toast_of(self, table: Rel) -> Rel | None:
        return next((r for r in self.rels if r.role == "toast" and r.table_oid == table.oid), None)

    # ------------------------------------------------------------------ 3. verify_heapam

    def ranges(self, rel: Rel) -> list[tuple[int, int]]:
        """Runs of blocks the server accepted, cut to amcheck_batch blocks."""
        out: list[tuple[int, int]] = []
        step = self.req.amcheck_batch
        start = 0
        # the gaps between skipped blocks, cut to step blocks (a skipped block per loop, not a block per loop)
        for skipped in [*sorted(b for b in rel.refused.keys() | rel.unchecked if b < rel.nblocks), rel.nblocks]:
            out.extend((a, min(a + step, skipped) - 1) for a in range(start, skipped, step))
            start = skipped + 1
        return out

    def heap_task(self, session: Session, task: tuple[Rel, int, int, bool]) -> list[dict[str, Any]]:
        rel, first, last, check_toast = task
        query = db.sql.SQL(
            "SELECT blkno, offnum, attnum, msg FROM {fn}(%(rel)s::oid::regclass, false, %(toast)s, 'none', "
            "%(a)s::bigint, %(b)s::bigint)"
        ).format(fn=self.fn("amcheck", "verify_heapam"))
        out: list[dict[str, Any]] = []
        stack = [(first, last)]
        while stack:
            a, b = stack.pop()
            if a > b:
                continue
            if self.amcheck_stopped:
                out.append(self._unchecked(rel, a, b, self.amcheck_stopped))
                continue
            try:
                rows = run_locked(session, query, {"rel": rel.oid, "toast": check_toast, "a": a, "b": b})
            except BackendLost as lost:
                out.append(self._crashed(rel, a, b, lost.message))
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
                            rel.ctx,
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
                        rel.ctx,
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
                out.extend(refused_findings(self, rel, named[0], err))
                stack.extend([(named[0] + 1, b), (a, named[0] - 1)])
            elif a == b:
                rel.observe(err.observed)
                out.append(
                    fmod.make(
                        "server.error",
                        rel.ctx,
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

    def _crashed(self, rel: Rel, a: int, b: int, message: str) -> dict[str, Any]:
        with self.findings_lock:
            self.crashes += 1
            if self.crashes >= self.req.max_crashes:
                self.amcheck_stopped = f"amcheck stopped after {self.crashes} lost backend(s)"
        rel.amcheck = "crashed"
        rel.observe(f"connection lost: {message}")
        return fmod.make(
            "server.crash",
            rel.ctx,
            a,
            None,
            f"the backend running verify_heapam on blocks {a}..{b} was lost ({message}); those blocks were not "
            "checked by amcheck, the page decoder's findings for them stand",
            source=fmod.SOURCE_SERVER,
            observed_error=message,
        )

    def _unchecked(self, rel: Rel, a: int, b: int, why: str) -> dict[str, Any]:
        f = fmod.make(
            "server.timeout",
            rel.ctx,
            a,
            None,
            f"blocks {a}..{b} not checked by amcheck: {why}",
            source=fmod.SOURCE_SERVER,
        )
        return f

    def heap_tasks(self, rels: list[Rel]) -> list[tuple[Rel, int, int, bool]]:
        tasks: list[tuple[Rel, int, int, bool]] = []
        for rel in rels:
            check_toast = False
            if rel.role == "table":
                toast = self.toast_of(rel)
                check_toast = toast is not None and toast.nblocks > 0 and not toast.refused and not toast.suspect
                if check_toast and toast is not None and self.has_errors(toast, *self.toast_indexes_of(rel)):
                    # verify_heapam finds chunks through the TOAST index: a chunk whose chunk_id or chunk_seq was
                    # altered is still found under its old key there, so the server calls the value whole. The
                    # files' own reading of the chunks stands.
                    check_toast = False
                if toast is not None and toast.nblocks > 0 and not check_toast:
                    rel.notes.append("TOAST values not followed: the TOAST table has damaged pages")
                rel.toast_checked = check_toast
            tasks.extend((rel, a, b, check_toast) for a, b in self.ranges(rel))
        return tasks

    def heap_done(
        self, rels: list[Rel], tasks: list[tuple[Rel, int, int, bool]], results: list[list[dict[str, Any]]]
    ) -> None:
        by_rel: dict[int, list[dict[str, Any]]] = {}
        for (rel, _a, _b, _t), res in zip(tasks, results, strict=True):
            by_rel.setdefault(rel.oid, []).extend(res)
        for rel in rels:
            res = by_rel.get(rel.oid, [])
            self.add(res)
            # The files' TOAST findings mix moments (a value rewritten while its table and TOAST table were read);
            # verify_heapam follows every pointer with one snapshot, and names the same damage on the row.
            if not (rel.toast_checked and rel.amcheck != "crashed" and not self.amcheck_stopped):
                self.add(rel.toast_scan)
            elif rel.toast_scan:
                self.add(toast_scan_confirmed(self, rel))
            rel.toast_scan = []
            if rel.amcheck == "crashed":
                continue
            if not self.ranges(rel) and rel.nblocks:
                rel.amcheck = "skipped: no readable block"
            elif any(f["source"] == fmod.SOURCE_AMCHECK for f in res):
                rel.amcheck = "corrupt"
            elif any(f["code"] in ("server.error", "server.invalid_page", "server.timeout") for f in res):
                rel.amcheck = "errors"
            else:
                rel.amcheck = "ok" if rel.nblocks else "empty"
            if rel.refused and rel.amcheck in ("ok", "corrupt", "errors"):
                rel.amcheck += f" ({len(rel.refused)} refused block(s) not checked)"

    def heap_phase(self, rels: list[Rel]) -> None:
        tasks = self.heap_tasks(rels)
        self.heap_done(rels, tasks, self.parallel(self.heap_task, tasks))

    def amcheck_phase(self, tables: list[Rel], indexes: list[Rel]) -> None:
        """verify_heapam over the tables and bt_index_check over their indexes, in one pool: the indexes first
        (each is one statement, the longest), block ranges of the tables filling the other sessions.

        Without the files, the rows' attributes were not walked before: heapallindexed (which deforms them) then
        waits for verify_heapam's verdict on its table."""
        if self.pgdata is None:
            self.heap_phase(tables)
            self.btree_phase(indexes)
            return
        heap_tasks = self.heap_tasks(tables)
        started = [i for i in indexes if i.oid in self.early_btree]
        indexes = [i for i in indexes if i.oid not in self.early_btree]
        tasks: list[tuple[Rel, int, int, bool] | Rel] = [*indexes, *heap_tasks]

        def cost(task: tuple[Rel, int, int, bool] | Rel) -> int:
            """Blocks a task reads: the longest go first, so no session is left with a big one at the end."""
            if isinstance(task, Rel):
                heap = self.heap_of(task)
                return task.nblocks + (heap.nblocks if heap is not None and self.req.heapallindexed else 0)
            return task[2] - task[1] + 1

        order = sorted(range(len(tasks)), key=lambda i: -cost(tasks[i]))

        def run(session: Session, task: tuple[Rel, int, int, bool] | Rel) -> list[dict[str, Any]]:
            return self.btree_task(session, task) if isinstance(task, Rel) else self.heap_task(session, task)

        done = self.parallel(run, [tasks[i] for i in order])
        results: list[list[dict[str, Any]]] = [[] for _ in tasks]
        for i, res in zip(order, done, strict=True):
            results[i] = res
        for res in results[: len(indexes)]:
            self.add(res)
        for index in started:  # finished by now, or soon: the heap ranges ran beside them
            self.add(self.btree_task(self.main, index))
        self.heap_done(tables, heap_tasks, results[len(indexes) :])

    def start_btree_early(self, indexes: list[Rel]) -> None:
        """Without --heapallindexed, bt_index_check needs nothing from the page checks (it reads only its index and
        is built to meet damage): with -j 2 or more it starts now, on one of the -j sessions, and runs while the
        pages are read. Its answer is read in the amcheck phase, as if it had run there."""
        if self.req.jobs <= 1 or self.req.heapallindexed:
            return
        query = self._btree_query()

        def check(index: Rel) -> Any:
            return run_locked(self.session(), query, {"rel": index.oid, "all": False})

        for index in sorted(indexes, key=lambda r: -r.nblocks):
            if index.usable and index.nblocks > 0:
                self.early_btree[index.oid] = self.workers().submit(check, index)

    def _btree_query(self) -> Any:
        return db.sql.SQL("SELECT {fn}(%(rel)s::oid::regclass, %(all)s)").format(
            fn=self.fn("amcheck", "bt_index_check")
        )

    # ------------------------------------------------------------------ 3b. heapallindexed from the files

    def start_allindexed(self, tables: list[Rel]) -> None:
        """With --heapallindexed and the files here: check in the core, beside amcheck, that every live row of each
        sound table is in its btree indexes (amcheck's Bloom filter check, reading the files). Proof ends there;
        any doubt (a row not found, a page written since the last checkpoint, a value in TOAST) sends the index to
        bt_index_check with heapallindexed, which decides."""
        if not self.req.heapallindexed or self.pgdata is None or self.geometry is None:
            return
        sound = {t.oid: t for t in tables if t.locked is None and not self.has_errors(t) and not t.refused}
        candidates = [r for r in self.rels if r.is_btree and r.role == "index" and r.usable and r.table_oid in sound]
        if not candidates:
            return
        rows = one(self.main, "diagnose_allindexed", {"oids": [r.oid for r in candidates]})
        plans: dict[int, list[tuple[Rel, list[int], list[Any], list[Any], int]]] = {}
        by_oid = {r.oid: r for r in candidates}
        for index_oid, table_oid, reltuples, keys, index_attrs, table_attrs in rows:
            plans.setdefault(int(table_oid), []).append(
                (by_oid[int(index_oid)], [int(k) for k in keys], index_attrs, table_attrs, int(reltuples))
            )
        if not plans:
            return
        from pgsurgeon.scan import parse_lsn

        redo = parse_lsn(str(core.read_control(self.pgdata)["redo"]))
        pool = self.allindexed_pool = ThreadPoolExecutor(1, thread_name_prefix="pgsurgeon-allindexed")
        for table_oid, plan in plans.items():
            future = pool.submit(self._allindexed, sound[table_oid], plan, redo)
            self.allindexed.update((index.oid, future) for index, *_rest in plan)

    def _allindexed(
        self, heap: Rel, plan: list[tuple[Rel, list[int], list[Any], list[Any], int]], redo: int
    ) -> dict[int, tuple[bool, str]]:
        assert self.geometry is not None and self.pgdata is not None
        table_attrs = max((p[3] for p in plan), key=len)
        config: AllIndexedConfig = {
            "heap": {"name": heap.relname, "files": segments_of(self.pgdata / heap.path), "nblocks": heap.nblocks},
            "heap_attrs": table_attrs,
            "indexes": [
                {
                    "name": index.relname,
                    "files": segments_of(self.pgdata / index.path),
                    "nblocks": index.nblocks,
                    "keys": keys,
                    "attrs": attrs,
                }
                for index, keys, attrs, _t, _n in plan
            ],
            "expected_rows": max(p[4] for p in plan),
            "bloom_bytes": ALLINDEXED_BLOOM_BYTES,
            "seed": int.from_bytes(os.urandom(8), "little"),
            "live_redo_lsn": redo,
            "jobs": self.req.jobs,
            "blcksz": self.geometry.blcksz,
            "relseg_size": self.geometry.relseg_size,
        }
        try:
            res = core.all_indexed(config)
        except (OSError, ValueError) as exc:
            why = f"heapallindexed through the server: the files could not be read here ({str(exc).splitlines()[0]})"
            return {index.oid: (False, why) for index, *_r in plan}
        out: dict[int, tuple[bool, str]] = {}
        doubts = [
            (res["newer_pages"], "table page(s) written since the last checkpoint"),
            (res["unreadable_pages"], "table page(s) not readable from the files"),
            (res["orphans"], "heap-only tuple(s) outside any HOT chain"),
        ]
        for (index, *_r), verdict, proven in zip(plan, res["indexes"], res["proven"], strict=True):
            if proven:
                out[index.oid] = (
                    True,
                    f"heapallindexed from the files: all {res['rows']} live rows found"
                    + (f" ({res['unhinted']} of them without hint bits)" if res["unhinted"] else "")
                    + f" among {verdict['entries']} index entries (Bloom filter {verdict['bloom_bytes'] // 1024} kB, "
                    f"{verdict['false_positive_rate']:.2%} false positives expected)",
                )
                continue
            mine = [
                (verdict["missing"], "live row(s) not found in the index"),
                (verdict["toasted"], "row(s) with an indexed value in TOAST"),
                (verdict["short_rows"], "row(s) older than an indexed column (its value is the default)"),
                (verdict["newer_pages"], "index page(s) written since the last checkpoint"),
                (verdict["unreadable_pages"] + verdict["unreadable_entries"], "index page(s) or entries not readable"),
            ]
            why = "; ".join(f"{n} {what}" for n, what in [*doubts, *mine] if n)
            out[index.oid] = (False, f"heapallindexed through the server (from the files: {why})")
        return out

    def btree_phase(self, indexes: list[Rel]) -> None:
        for res in self.parallel(self.btree_task, indexes):
            self.add(res)

    # ------------------------------------------------------------------ 4. bt_index_check

    def btree_task(self, session: Session, index: Rel) -> list[dict[str, Any]]:
        if not index.usable:
            index.amcheck = "skipped: index is not valid (an interrupted CREATE INDEX CONCURRENTLY?)"
            return []
        if self.amcheck_stopped:
            index.amcheck = f"skipped: {self.amcheck_stopped}"
            return []
        heap = self.heap_of(index)
        if index.locked is not None or (heap is not None and heap.locked is not None):
            index.amcheck = "not checked: its table is locked by another session"
            return []
        heap_sound = heap is not None and not heap.refused and not heap.suspect
        if heap is not None and index.role == "index":
            # heapallindexed deforms the indexed columns of every row: only over a table with no damage at all
            with self.findings_lock:
                heap_sound = heap_sound and not any(
                    f["relfilenode"] == heap.relfilenode and f["severity"] == "error" for f in self.findings
                )
        want_all = self.req.heapallindexed or (index.role == "toast-index" and self._toast_trouble(index))
        heapallindexed = want_all and heap_sound
        if want_all and not heap_sound:
            index.notes.append("heapallindexed skipped: the table has damaged pages (it is read with the executor)")
        query = self._btree_query()
        in_core = self.allindexed.get(index.oid) if heapallindexed else None
        early = self.early_btree.pop(index.oid, None)
        try:
            if early is not None and not heapallindexed:
                rows = early.result()
            else:
                rows = run_locked(session, query, {"rel": index.oid, "all": heapallindexed and in_core is None})
            if in_core is not None and not isinstance(rows, ServerError):
                try:
                    proven, note = in_core.result()[index.oid]
                except Exception as exc:  # the server decides: the check in the core is only a shortcut
                    proven, note = False, f"heapallindexed through the server (the check from the files failed: {exc})"
                index.notes.append(note)
                if not proven:
                    rows = run_locked(session, query, {"rel": index.oid, "all": True})
        except BackendLost as lost:
            return [self._crashed(index, 0, max(index.nblocks - 1, 0), lost.message)]
        index.amcheck = "ok (heapallindexed)" if heapallindexed else "ok"
        if not isinstance(rows, ServerError):
            return []
        err = rows
        index.observe(err.observed)
        if err.sqlstate in ("57014", "55P03"):
            index.amcheck = "not checked"
            return [
                fmod.make(
                    "server.timeout",
                    index.ctx,
                    None,
                    None,
                    f"bt_index_check not finished: {err.message}",
                    source=fmod.SOURCE_SERVER,
                    observed_error=err.observed,
                )
            ]
        index.amcheck = "corrupt"
        where = amcheck.classify_btree(err.message, err.detail)
        if where.code == "server.invalid_page" and where.block in index.refused:
            return []  # the raw pass named this block already
        if where.heap_tid is not None and heap is not None:
            hblk, hoff = where.heap_tid
            return [
                fmod.make(
                    "index.missing_entry",
                    heap.ctx,
                    hblk,
                    hoff,
                    f"index {index.relname} has no entry for this row: its key columns changed after it was "
                    f"indexed, or the index lost the entry ({err.message})",
                    source=fmod.SOURCE_AMCHECK,
                    observed_error=f"bt_index_check: {err.observed}",
                )
            ]
        return [
            fmod.make(
                where.code,
                index.ctx,
                where.block,
                where.item,
                err.message + (f" ({err.detail})" if err.detail else ""),
                source=fmod.SOURCE_AMCHECK,
                observed_error=f"bt_index_check: {err.observed}",
            )
        ]

    def _toast_trouble(self, toast_index: Rel) -> bool:
        with self.findings_lock:
            return any(
                f["code"].startswith("toast.") and f["source"] == fmod.SOURCE_AMCHECK for f in self.findings
            ) or any(
                f["relfilenode"] == t.relfilenode and f["severity"] == "error"
                for t in self.rels
                if t.role == "toast" and t.table_oid == toast_index.table_oid
                for f in self.findings
            )

    # ------------------------------------------------------------------ results

    def fold_amcheck(self) -> None:
        """An amcheck finding about a line pointer that the page decoder also found damaged (same area) is one
        problem: the decoder's finding keeps amcheck's words as what the server said."""
        decoded: dict[tuple[int, int | None, int | None, str], list[dict[str, Any]]] = {}
        for f in self.findings:
            if f["source"] in (fmod.SOURCE_PAGE, fmod.SOURCE_FILE):
                decoded.setdefault((f["relfilenode"], f["block"], f["item"], f["area"]), []).append(f)
        kept = []
        for f in self.findings:
            if f["source"] == fmod.SOURCE_AMCHECK and f["item"] is not None:
                twins = decoded.get((f["relfilenode"], f["block"], f["item"], f["area"]))
                if twins:
                    for t in twins:
                        if t["observed_error"] is None:
                            t["observed_error"] = f["observed_error"]
                    continue
            kept.append(f)
        self.findings = kept

    def relation_summaries(self) -> list[dict[str, Any]]:
        out = []
        for rel in self.rels:
            mine = [f for f in self.findings if f["relfilenode"] == rel.relfilenode]
            out.append(
                {
                    "relation": rel.relname,
                    "oid": rel.oid,
                    "role": rel.role,
                    "table": (self.rel_by_oid(rel.table_oid) or rel).relname,
                    "access_method": rel.amname,
                    "path": rel.path,
                    "relfilenode": rel.relfilenode,
                    "blocks": rel.nblocks,
                    "pages_read": rel.pages_read,
                    "pages_refused": sorted(rel.refused),
                    "amcheck": rel.amcheck,
                    "errors": sum(1 for f in mine if f["severity"] == "error"),
                    "warnings": sum(1 for f in mine if f["severity"] == "warning"),
                    "damaged_blocks": sorted(
                        {f["block"] for f in mine if f["block"] is not None and f["severity"] == "error"}
                    ),
                    "observed_errors": rel.observed,
                    "notes": rel.notes,
                }
            )
        return out

    def run(self) -> DiagnoseOutcome:
        try:
            self.load_relations()
            heaps = [r for r in self.rels if r.is_heap]
            others = [r for r in self.rels if not r.is_heap and r.relkind == "i"]
            self.start_btree_early([r for r in self.rels if r.is_btree and r.role == "index"])
            self.progress(f"reading {sum(r.nblocks for r in self.rels)} pages of {len(self.rels)} relation(s)")
            if self.pgdata is None or not files_phase(self, heaps + others):
                self.pgdata = None
                raw_phase(self, heaps + others)
            tails = vm_tails(self, heaps)
            for rel in heaps:
                rel.lines = None  # memory: only the index batches needed it
                file_checks(self, rel, tails.get(rel.oid))
            for index in others:
                index_refs(self, index)
            self.progress("verify_heapam on TOAST tables")
            self.heap_phase([r for r in heaps if r.role == "toast"])
            self.start_allindexed([r for r in heaps if r.role == "table"])
            self.progress("verify_heapam on tables, bt_index_check on their indexes")
            self.amcheck_phase(
                [r for r in heaps if r.role != "toast"], [r for r in self.rels if r.is_btree and r.role == "index"]
            )
            self.btree_phase([r for r in self.rels if r.is_btree and r.role == "toast-index"])
            locate_toast_chunks(self)
            for r in self.rels:
                if r.relkind == "i" and not r.is_btree:
                    r.amcheck = f"pages only (no amcheck for {r.amname})"
            self.fold_amcheck()
        finally:
            self.close()
        findings = sorted(self.findings, key=fmod.sort_key)
        reconnects = sum(s.reconnects for s in self.sessions)
        summary = {
            "database": self.server["database"],
            "relations": len(self.rels),
            "blocks": sum(r.nblocks for r in self.rels),
            "pages_read": sum(r.pages_read for r in self.rels),
            "pages_refused": sum(len(r.refused) for r in self.rels),
            "findings": len(findings),
            "errors": sum(1 for f in findings if f["severity"] == "error"),
            "warnings": sum(1 for f in findings if f["severity"] == "warning"),
            "damaged_relations": sorted({f["relation"] for f in findings if f["severity"] == "error"}),
            "files_used": self.pgdata is not None,
            "scan": self.scan_note,
            "crashes": self.crashes,
            "reconnects": reconnects,
            "amcheck_stopped": self.amcheck_stopped,
            "seconds": round(time.monotonic() - self.started, 3),
        }
        server = {
            k: self.server[k]
            for k in ("version", "version_num", "checksums", "block_size", "data_directory", "database", "database_oid")
        }
        server["data_directory_here"] = self.pgdata is not None
        return DiagnoseOutcome(server, self.relation_summaries(), findings, summary)


def run_diagnose(req: DiagnoseRequest) -> DiagnoseOutcome:
    """Diagnose the database ``req.dsn`` points at (or the tables in ``req.tables``)."""
    if req.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return Diagnosis(req).run()
