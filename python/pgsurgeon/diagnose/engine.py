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

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pgsurgeon import core as core  # the tests reach the core through this module (monkeypatch engine.core)
from pgsurgeon import db
from pgsurgeon.catalog.sql import lookup_relation, not_found
from pgsurgeon.datadir import Geometry
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.allindexed import start_allindexed
from pgsurgeon.diagnose.btreecheck import btree_phase, start_btree_early
from pgsurgeon.diagnose.crosscheck import file_checks, index_refs, vm_tails
from pgsurgeon.diagnose.files import files_phase
from pgsurgeon.diagnose.findings import RelContext
from pgsurgeon.diagnose.heapcheck import amcheck_phase, heap_phase
from pgsurgeon.diagnose.model import Crossref, DiagnoseOutcome, DiagnoseRequest, NotChecked, Rel
from pgsurgeon.diagnose.pages import raw_phase
from pgsurgeon.diagnose.server import local_pgdata, one, server_info
from pgsurgeon.diagnose.session import ServerError, Session
from pgsurgeon.diagnose.toast import locate_toast_chunks
from pgsurgeon.errors import PgSurgeonError, UsageError

__all__ = ["Crossref", "DiagnoseOutcome", "DiagnoseRequest", "Diagnosis", "NotChecked", "Rel", "run_diagnose"]

T = TypeVar("T")
R = TypeVar("R")

# The core's heapallindexed budget, a knob of the run (the tests shrink it here)
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

    def crashed(self, rel: Rel, a: int, b: int, message: str) -> dict[str, Any]:
        """A backend lost under amcheck (verify_heapam or bt_index_check): counted, and amcheck stops after
        ``max_crashes``."""
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
            start_btree_early(self, [r for r in self.rels if r.is_btree and r.role == "index"])
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
            heap_phase(self, [r for r in heaps if r.role == "toast"])
            start_allindexed(self, [r for r in heaps if r.role == "table"], ALLINDEXED_BLOOM_BYTES)
            self.progress("verify_heapam on tables, bt_index_check on their indexes")
            amcheck_phase(
                self,
                [r for r in heaps if r.role != "toast"],
                [r for r in self.rels if r.is_btree and r.role == "index"],
            )
            btree_phase(self, [r for r in self.rels if r.is_btree and r.role == "toast-index"])
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
