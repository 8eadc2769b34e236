"""The shared state of one diagnose run: the request, the sessions and workers, the relations and the findings so
far; what every phase reads and adds to. The phases are functions of it in the modules beside this one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pgsurgeon import db
from pgsurgeon.datadir import Geometry
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.model import Checked, DiagnoseRequest
from pgsurgeon.diagnose.server import PROFILE, local_pgdata, server_info
from pgsurgeon.session import Session

T = TypeVar("T")
R = TypeVar("R")


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
        self.main = Session(req.dsn, PROFILE, req.limits)
        self.sessions.append(self.main)
        self.server = server_info(self.main)
        pgdata, geometry = local_pgdata(req, self.server)
        self.geometry: Geometry | None = geometry
        self.pgdata: Path | None = pgdata
        self.rels: list[Checked] = []
        self._indexed: tuple[int, dict[int, Checked], dict[int, Checked], dict[int, list[Checked]]] | None = None
        self.scan_note: str | None = None
        self.visibility_note: str | None = None
        """What pg_visibility said against the files' verdict on the visibility map (diagnose/visibility.py)."""
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
        self.early_heap: dict[int, list[tuple[tuple[Checked, int, int, bool], Future[list[dict[str, Any]]]]]] = {}
        """Per table, verify_heapam's block ranges started while the indexes were being read, and their findings."""
        self.early_gin: dict[int, Future[list[dict[str, Any]]]] = {}
        """Per GIN index, gin_index_check started once the scan had checked all its pages, and its findings."""
        self.gin_check: bool | None = None
        """Whether amcheck has gin_index_check (None: not asked yet)."""

    def fn(self, ext: str, name: str) -> Any:
        """An extension function, schema-qualified (the extension may live outside the search_path)."""
        return db.sql.Identifier(str(self.server.schemas[ext]), name)

    # ------------------------------------------------------------------ plumbing

    def session(self) -> Session:
        s: Session | None = getattr(self.local, "session", None)
        if s is None:
            s = Session(self.req.dsn, PROFILE, self.req.limits, wait=True)
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
            early = [f for runs in self.early_heap.values() for _t, f in runs]
            if any(not f.done() for f in [*self.early_btree.values(), *early, *self.early_gin.values()]):
                # left early (an error, ^C): stop the check still running rather than wait for it
                for s in self.sessions:
                    if s is not self.main:
                        s.cancel()
            self.pool.shutdown(cancel_futures=True)
        for s in self.sessions:
            s.close()

    def _index(self) -> tuple[dict[int, Checked], dict[int, Checked], dict[int, list[Checked]]]:
        """The relations by OID, the TOAST tables by their table's OID (the first of each, as a walk of ``rels``
        finds it) and the TOAST indexes by their table's OID, made again when ``rels`` grew: a walk per lookup made
        the cross-checks quadratic (~30 ms for an empty cluster's ~300 catalogs and indexes, more than five minutes
        for a schema of 20,000 tables)."""
        seen = self._indexed
        if seen is None or seen[0] != len(self.rels):
            by_oid: dict[int, Checked] = {}
            toast: dict[int, Checked] = {}
            toast_indexes: dict[int, list[Checked]] = {}
            for r in self.rels:
                by_oid.setdefault(r.relation.oid, r)
                if r.relation.role == "toast":
                    toast.setdefault(r.relation.table_oid, r)
                elif r.relation.role == "toast-index":
                    toast_indexes.setdefault(r.relation.table_oid, []).append(r)
            seen = self._indexed = (len(self.rels), by_oid, toast, toast_indexes)
        return seen[1], seen[2], seen[3]

    def rel_by_oid(self, oid: int) -> Checked | None:
        return self._index()[0].get(oid)

    def heap_of(self, index: Checked) -> Checked | None:
        """The table an index belongs to (the TOAST table for the TOAST index)."""
        if index.relation.role == "toast-index":
            return self._index()[1].get(index.relation.table_oid)
        return self.rel_by_oid(index.relation.table_oid)

    def toast_indexes_of(self, table: Checked) -> list[Checked]:
        return self._index()[2].get(table.relation.oid, [])

    def has_errors(self, *rels: Checked) -> bool:
        """Whether any finding so far is an error in one of ``rels``."""
        nodes = {r.relation.relfilenode for r in rels}
        with self.findings_lock:
            return any(f["relfilenode"] in nodes and f["severity"] == "error" for f in self.findings)

    def toast_of(self, table: Checked) -> Checked | None:
        return self._index()[1].get(table.relation.oid)

    def crashed(self, rel: Checked, a: int, b: int, message: str, check: str = "verify_heapam") -> dict[str, Any]:
        """A backend lost under amcheck's ``check`` (verify_heapam, bt_index_check, gin_index_check): counted, and
        amcheck stops after ``max_crashes``."""
        with self.findings_lock:
            self.crashes += 1
            if self.crashes >= self.req.max_crashes:
                self.amcheck_stopped = f"amcheck stopped after {self.crashes} lost backend(s)"
        rel.amcheck = "crashed"
        rel.observe(f"connection lost: {message}")
        return fmod.make(
            "server.crash",
            rel.relation,
            a,
            None,
            f"the backend running {check} on blocks {a}..{b} was lost ({message}); those blocks were not "
            "checked by amcheck, the page decoder's findings for them stand",
            source=fmod.SOURCE_SERVER,
            observed_error=message,
        )
