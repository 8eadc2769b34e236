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
   with the executor). With the files here, the core does it first, beside amcheck (crates/core/src/checks/diagnose/
   allindexed.rs): what it proves is not asked of the server; what it doubts is.

Every statement runs in its own transaction (autocommit), with statement_timeout and lock_timeout; the locks
taken are AccessShareLock only (bt_index_parent_check, which takes ShareLock, is never used).
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pgsurgeon import core, db
from pgsurgeon.catalog.sql import lookup_relation, not_found
from pgsurgeon.datadir import Geometry, read_block, segments_of
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.findings import RelContext
from pgsurgeon.diagnose.session import BackendLost, Limits, ServerError, Session
from pgsurgeon.errors import PgSurgeonError, UsageError

T = TypeVar("T")
R = TypeVar("R")

STRUCTURAL_AREAS = frozenset({"page_header", "line_pointer", "tuple_header", "checksum"})
LOCK_RETRIES = 3
MAX_CROSS_FINDINGS = 50
ALLINDEXED_BLOOM_BYTES = 64 << 20  # one pass's Bloom filters, all indexes of a table (amcheck: maintenance_work_mem)
TOAST_MAX_CHUNK_SIZE = 1996  # 8 KB pages (heaptoast.h)
# File findings that compare several pages: on a live server the files mix pages from different moments, and
# diagnose checks the same things through the server (bt_index_check; the visibility map against the table's
# length). Index entries without their row are re-read through the server before they are believed.
SCAN_RECHECKED = frozenset({"index.sibling_link", "file.vm_beyond_end"})
_TID = re.compile(r"points to heap \((\d+),(\d+)\)")  # the core's index.tid_* messages (crates/core/src/checks/scan.rs)
_VM_HEADER = 24  # MAXALIGN(SizeOfPageHeaderData)
_BLAMED_CHUNK = re.compile(r"toast value \d+ chunk (-?\d+) has size")
_AM_KIND = {"heap": "heap", "btree": "btree", "hash": "hash", "gist": "gist", "spgist": "spgist", "gin": "gin"}


# the value, its size and its chunk count in the core's toast.* messages (crates/core/src/format/toast.rs)
_TOAST_VALUE = re.compile(r"toast value (\d+) \((\d+) bytes in (\d+) chunks\)")


@dataclass
class DiagnoseRequest:
    dsn: str
    tables: list[str] = field(default_factory=list)
    jobs: int = 1
    heapallindexed: bool = False
    use_files: bool = True
    """Read refused blocks from the relation files and merge the offline scan, when the data directory is here."""
    pgdata: Path | None = None
    """Where the server's data directory is mounted on this host, when not at the path the server reports."""
    limits: Limits = field(default_factory=Limits)
    raw_batch: int = 64
    amcheck_batch: int = 4096
    max_crashes: int = 1
    on_progress: Callable[[str], None] | None = None


@dataclass
class DiagnoseOutcome:
    server: dict[str, Any]
    relations: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    summary: dict[str, Any]


@dataclass
class Rel:
    role: str
    oid: int
    table_oid: int
    relname: str
    schema: str
    name: str
    relkind: str
    amname: str | None
    path: str
    relfilenode: int
    size: int
    vm_size: int
    natts: int
    usable: bool
    ctx: RelContext
    block_size: int
    refused: dict[int, ServerError] = field(default_factory=dict)
    suspect: set[int] = field(default_factory=set)
    unchecked: set[int] = field(default_factory=set)
    """Blocks not read (lock or statement timeout): amcheck skips them too."""
    locked: ServerError | None = None
    """The lock_timeout error, once another session's lock kept diagnose out of this relation."""
    lines: core.LineMap | None = None
    """A heap's line pointers, for the index batches (pages read through the server)."""
    zero: set[int] = field(default_factory=set)
    candidates: list[Crossref] = field(default_factory=list)
    """An index's entries whose row seemed missing, to re-read through the server."""
    toast_scan: list[dict[str, Any]] = field(default_factory=list)
    toast_checked: bool = False
    """verify_heapam followed this table's TOAST pointers."""
    """A table's TOAST findings from the files: kept only when the server's own TOAST check did not run."""
    pages_read: int = 0
    amcheck: str = "not run"
    notes: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)

    @property
    def nblocks(self) -> int:
        return self.size // self.block_size

    @property
    def kind(self) -> str | None:
        return _AM_KIND.get(self.amname or "")

    @property
    def is_heap(self) -> bool:
        return self.relkind in ("r", "m", "t")

    @property
    def is_btree(self) -> bool:
        return self.relkind == "i" and self.amname == "btree"

    def observe(self, text: str) -> None:
        if text not in self.observed and len(self.observed) < 10:
            self.observed.append(text)


class NotChecked(Exception):
    """A statement gave no answer about the pages (lock_timeout or statement_timeout fired)."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class Crossref:
    """An index entry whose table line pointer is missing: (index block, index item, table block, table item)."""

    index_block: int
    index_item: int
    heap_block: int
    heap_item: int
    past_end: bool


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
        self.server = self._server_info()
        self.geometry: Geometry | None = None
        self.pgdata = self._local_pgdata()
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

    def _one(self, session: Session, name: str, params: dict[str, Any] | None = None) -> list[Any]:
        rows = session.run(db.load_sql(name), params, again=True)
        if isinstance(rows, ServerError):
            raise PgSurgeonError(f"{name.replace('_', ' ')} query failed: {rows.message}")
        result: list[Any] = rows
        return result

    def _server_info(self) -> dict[str, Any]:
        (row,) = self._one(self.main, "diagnose_server")
        keys = (
            "version_num",
            "version",
            "checksums",
            "block_size",
            "segment_blocks",
            "data_directory",
            "system_identifier",
            "database",
            "database_oid",
            "amcheck_schema",
            "pageinspect_schema",
            "superuser",
        )
        info = dict(zip(keys, row, strict=True))
        missing = [ext for ext in ("amcheck", "pageinspect") if info[f"{ext}_schema"] is None]
        if missing:
            raise PgSurgeonError(
                f"extension{'s' if len(missing) > 1 else ''} {' and '.join(missing)} "
                f"{'are' if len(missing) > 1 else 'is'} not installed in database {info['database']}",
                hint="as a superuser: "
                + " ".join(f"CREATE EXTENSION {e};" for e in missing)
                + " (both ship with PostgreSQL's contrib; diagnose itself never changes the database)",
            )
        return info

    def _local_pgdata(self) -> Path | None:
        """The data directory when it is on this host and belongs to this server (same system identifier)."""
        if not self.req.use_files:
            return None
        candidate = self.req.pgdata or Path(str(self.server["data_directory"]))
        try:
            control = core.read_control(candidate)
        except (OSError, ValueError):
            return None
        if str(control.get("system_identifier")) != str(self.server["system_identifier"]):
            return None
        self.geometry = Geometry(
            blcksz=int(control["blcksz"]),
            relseg_size=int(control["relseg_size"]),
            checksums=bool(self.server["checksums"]),
            pgdata=candidate,
            control=control,
        )
        return candidate

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
                parts = self._one(self.main, "diagnose_partitions", {"oid": oid})
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
        rows = self._one(self.main, "diagnose_relations", params)
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
                one = self.main.run(query, {"oids": [rel.oid]})
                if isinstance(one, ServerError):
                    rel.locked = one
                    continue
                sizes.update({int(o): (int(m or 0), int(v or 0)) for o, m, v in one})
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

    # ------------------------------------------------------------------ 1. pages

    def raw_ranges(
        self, session: Session, rel: Rel, first: int, last: int, fork: str = "main"
    ) -> Iterator[tuple[int, bytes | ServerError]]:
        """Blocks first..last as the buffer manager returns them: (first block of a run, its pages one after
        another, in binary), or (block, the error the server raises for it).

        A batch is one bytea (string_agg) so no per-page row crosses the connection. A failing range is bisected;
        an error that names its block splits the range around that block.
        """
        query = db.sql.SQL(
            "SELECT string_agg({fn}(%(rel)s::oid::regclass::text, %(fork)s, b), ''::bytea ORDER BY b) "
            "FROM generate_series(%(a)s::bigint, %(b)s::bigint) b"
        ).format(fn=self.fn("pageinspect", "get_raw_page"))
        stack = [(first, last)]
        while stack:
            a, b = stack.pop()
            if a > b:
                continue
            if rel.locked is not None:
                raise NotChecked(rel.locked)
            params = {"rel": rel.oid, "fork": fork, "a": a, "b": b}
            rows = self._run_locked(session, query, params, binary=True, again=True)
            if not isinstance(rows, ServerError):
                if rows and rows[0][0]:
                    yield a, bytes(rows[0][0])
                continue
            err = rows
            if err.sqlstate in ("55P03", "57014"):  # lock_timeout, statement_timeout: not an answer about the pages
                if err.sqlstate == "55P03":
                    rel.locked = err
                raise NotChecked(err)
            if "out of range for relation" in err.message:  # the relation shrank since its size was read
                if a < b:
                    stack.extend([(a + (b - a) // 2 + 1, b), (a, a + (b - a) // 2)])
                continue
            named = amcheck.invalid_page_block(err.message) or amcheck.read_error_block(err.message)
            if named is not None and a <= named[0] <= b:
                stack.extend([(named[0] + 1, b)])
                yield named[0], err
                stack.extend([(a, named[0] - 1)])
            elif a == b:
                yield a, err
            else:
                mid = a + (b - a) // 2
                stack.extend([(mid + 1, b), (a, mid)])

    def server_page(self, rel: Rel, blk: int, fork: str = "main") -> bytes | ServerError | None:
        """Block ``blk`` as the server has it now, the error it raises for it, or None when it gives no answer."""
        try:
            for _start, got in self.raw_ranges(self.main, rel, blk, blk, fork):
                return got
        except NotChecked:
            return None
        return None

    def one_page(self, rel: Rel, blk: int) -> bytes | None:
        """Block ``blk`` as the server has it now, or None when it refuses it or gives no answer."""
        got = self.server_page(rel, blk)
        return got if isinstance(got, bytes) else None

    def check_batch(self, rel: Rel, data: bytes, first: int) -> core.PageBatch:
        """The core's checks of pages the server handed over (no checksum check: the server verified them)."""
        heap = self.heap_of(rel) if rel.is_btree else None
        return core.check_pages(
            data,
            first,
            kind=rel.kind,
            checksums=False,
            blcksz=rel.block_size,
            record=rel.lines if rel.is_heap else None,
            against=heap.lines if heap is not None else None,
        )

    def raw_task(self, session: Session, task: tuple[Rel, int, int]) -> dict[str, Any]:
        rel, a, b = task
        out: list[dict[str, Any]] = []
        refused: dict[int, ServerError] = {}
        suspect: set[int] = set()
        zero: set[int] = set()
        candidates: list[Crossref] = []
        pages = 0
        try:
            for start, got in self.raw_ranges(session, rel, a, b):
                if isinstance(got, ServerError):
                    refused[start] = got
                    out.extend(self.refused_findings(rel, start, got))
                    suspect.add(start)
                    continue
                batch = self.check_batch(rel, got, start)
                pages += batch.pages
                out.extend(fmod.from_core(f, rel.ctx, source=fmod.SOURCE_PAGE) for f in batch.findings)
                suspect.update(batch.suspect)
                zero.update(batch.zero)
                candidates.extend(Crossref(*c) for c in batch.candidates[: 10 * MAX_CROSS_FINDINGS])
        except NotChecked as why:
            rel.unchecked.update(range(a, b + 1))
            out.append(
                fmod.make(
                    "server.timeout",
                    rel.ctx,
                    a,
                    None,
                    f"blocks {a}..{b} not read: {why.error.message} (another session holds a conflicting lock, or "
                    "the statement took too long); amcheck skips them too",
                    source=fmod.SOURCE_SERVER,
                    observed_error=why.error.observed,
                )
            )
        return {
            "findings": out,
            "refused": refused,
            "suspect": suspect,
            "zero": zero,
            "pages": pages,
            "candidates": candidates,
        }

    def refused_findings(
        self, rel: Rel, blk: int, err: ServerError, decoded: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """The server refused block ``blk``: say so, and decode the file's copy when the files are here (or take
        ``decoded``, the file's findings the caller already has)."""
        rel.observe(err.observed)
        is_read = amcheck.read_error_block(err.message) is not None
        code = "server.read_error" if is_read else "server.invalid_page"
        what = "cannot read" if is_read else "refuses"
        out = [
            fmod.make(
                code,
                rel.ctx,
                blk,
                None,
                f"the server {what} block {blk}: {err.message}",
                source=fmod.SOURCE_SERVER,
                observed_error=err.observed,
            )
        ]
        if decoded is not None:
            for f in decoded:
                f["source"] = fmod.SOURCE_FILE
                f["observed_error"] = err.observed
            return out + decoded
        if self.pgdata is None or self.geometry is None or is_read:
            return out
        try:
            block = read_block(self.pgdata / rel.path, blk, self.geometry)
        except PgSurgeonError as exc:
            out[0]["message"] += f" (the file could not be read here: {exc.message})"
            return out
        if len(block.data) < 24:
            return out
        kind = "btree_meta" if rel.kind == "btree" and blk == 0 else rel.kind
        report = core.inspect_page(block.data, blk, checksums=bool(self.server["checksums"]), kind=kind)
        out.extend(
            fmod.from_core(f, rel.ctx, source=fmod.SOURCE_FILE, observed_error=err.observed) for f in report["findings"]
        )
        return out

    def raw_phase(self, rels: list[Rel], spans: dict[int, list[tuple[int, int]]] | None = None) -> None:
        """Read the pages of ``rels`` through the server and check them in the core, raw_batch blocks a statement,
        in parallel; ``spans``: only these block ranges of a relation (by oid)."""
        tasks: list[tuple[Rel, int, int]] = []
        step = self.req.raw_batch
        for rel in rels:
            if rel.is_heap and rel.lines is None:
                rel.lines = core.LineMap(rel.nblocks)
            for first, last in [(0, rel.nblocks - 1)] if spans is None else spans.get(rel.oid, []):
                tasks.extend((rel, a, min(a + step, last + 1) - 1) for a in range(first, last + 1, step))
        # heaps first: their line pointers are what the index batches compare their entries with
        heap_tasks = [t for t in tasks if t[0].is_heap]
        other_tasks = [t for t in tasks if not t[0].is_heap]
        results = self.parallel(self.raw_task, heap_tasks) + self.parallel(self.raw_task, other_tasks)
        for (rel, _a, _b), res in zip(heap_tasks + other_tasks, results, strict=True):
            self.add(res["findings"])
            rel.refused.update(res["refused"])
            rel.suspect.update(res["suspect"])
            rel.zero.update(res["zero"])
            rel.pages_read += res["pages"]
            rel.candidates.extend(res["candidates"])

    # ------------------------------------------------------------------ 1b. pages from the files

    def files_phase(self, rels: list[Rel]) -> bool:
        """Check the relation files on this host in the core (the live scan: pages written after the last
        checkpoint are skipped there and read through the server instead). A page the files show damaged is
        compared with the server's copy: the server refusing it confirms it, a different copy (written since) is
        checked instead. Index entries without their row are re-read through the server later. False when the
        files could not be read (the caller reads every page through the server)."""
        from pgsurgeon.scan import ScanRequest, run_scan, scan_metas

        assert self.pgdata is not None
        by_node = {r.relfilenode: r for r in rels}

        def next_xid() -> int:
            (row,) = self._one(self.main, "server_next_xid")
            return int(row[0]) % (1 << 32)

        try:
            outcome = run_scan(
                ScanRequest(
                    pgdata=self.pgdata,
                    dsn=self.req.dsn,
                    databases=[str(self.server["database_oid"])],
                    relations=[str(n) for n in by_node],
                    live=True,
                    jobs=self.req.jobs,
                    metadata=scan_metas(self._one(self.main, "scan_metadata")),
                    next_xid=next_xid,
                )
            )
        except PgSurgeonError as exc:
            self.scan_note = f"relation files not read ({exc.message}): every page read through the server"
            return False
        pending: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for f in outcome.findings:
            rel = by_node.get(int(f["relfilenode"]))
            if rel is None or f["code"] in SCAN_RECHECKED:
                continue
            if f["code"] == "file.unreadable" and self._rewritten(rel):
                continue  # its files were replaced while they were read: not damage
            if f["code"] in ("index.tid_unused", "index.tid_beyond_heap"):
                m = _TID.search(str(f["message"]))
                if m and f["block"] is not None and f["item"] is not None:
                    past = f["code"] == "index.tid_beyond_heap"
                    rel.candidates.append(Crossref(int(f["block"]), int(f["item"]), int(m[1]), int(m[2]), past))
                continue
            finding = {
                **{k: f.get(k) for k in fmod.FINDING_KEYS},
                "path": f["path"],
                "relation": rel.relname,
                "database": self.server["database"],
                "observed_error": None,
                "source": fmod.SOURCE_SCAN,
                "attnum": None,
            }
            if f["fork"] == "main" and f["block"] is not None:
                pending.setdefault((rel.oid, int(f["block"])), []).append(finding)
            else:
                self.add([finding])
        for rel in rels:
            rel.pages_read = rel.nblocks
        by_oid = {r.oid: r for r in rels}
        for (oid, blk), found in sorted(pending.items()):
            self.confirm_page(by_oid[oid], blk, found)
        spans: dict[int, list[tuple[int, int]]] = {}
        for s in outcome.skipped:
            rel = by_node.get(int(s["relfilenode"]))
            if rel is not None and s["fork"] == "main" and int(s["first"]) < rel.nblocks:
                spans.setdefault(rel.oid, []).append((int(s["first"]), min(int(s["last"]), rel.nblocks - 1)))
        skipped = sum(b - a + 1 for v in spans.values() for a, b in v)
        if spans:
            for rel in rels:
                rel.pages_read -= sum(b - a + 1 for a, b in spans.get(rel.oid, []))
            self.raw_phase([r for r in rels if r.oid in spans], spans)
        self.scan_note = (
            f"relation files read here ({outcome.summary['files']} file(s)); {skipped} page(s) written since the last "
            "checkpoint read through the server"
        )
        return True

    def _rewritten(self, rel: Rel) -> bool:
        """Whether the relation has other files now than when diagnose started (or is gone)."""
        rows = self.main.run(db.load_sql("diagnose_relfilenode"), {"oid": rel.oid}, again=True)
        if isinstance(rows, ServerError):
            return False
        return not rows or rows[0][0] is None or int(rows[0][0]) != rel.relfilenode

    def confirm_page(self, rel: Rel, blk: int, found: list[dict[str, Any]]) -> None:
        """Findings of the file's copy of a block, against the server's copy: a refusal confirms them, an equal
        copy keeps them, a different one (written since the file's copy) is checked instead."""
        got = self.server_page(rel, blk)
        if isinstance(got, ServerError):
            rel.refused[blk] = got
            rel.suspect.add(blk)
            self.add(self.refused_findings(rel, blk, got, decoded=found))
            return
        if got is not None and self.geometry is not None:
            try:
                disk = read_block(self.pgdata / rel.path, blk, self.geometry).data if self.pgdata else b""
            except PgSurgeonError:
                disk = b""
            # pd_checksum aside: a buffer keeps the checksum it was read with, the file gets a fresh one per write
            if not (disk[:8] == got[:8] and disk[10:] == got[10:]):
                batch = self.check_batch(rel, got, blk)
                rel.suspect.update(batch.suspect)
                rel.zero.update(batch.zero)
                self.add(fmod.from_core(f, rel.ctx, source=fmod.SOURCE_PAGE) for f in batch.findings)
                # A TOAST finding is about the value's chunks, not this page's bytes (hint bits set since the
                # file's copy make the copies differ): it is checked again against the TOAST table (heap_done).
                if rel.role == "table":
                    rel.toast_scan.extend(f for f in found if str(f["code"]).startswith("toast."))
                return
        if any(f["severity"] == "error" and f["area"] in STRUCTURAL_AREAS for f in found):
            rel.suspect.add(blk)
        # A table row's TOAST finding also depends on the TOAST table's pages, read at another moment: the server's
        # own TOAST check decides when it runs (heap_done).
        toast_rows = [f for f in found if str(f["code"]).startswith("toast.") and rel.role == "table"]
        rel.toast_scan.extend(toast_rows)
        self.add(f for f in found if f not in toast_rows)

    # ------------------------------------------------------------------ 2. cross-checks

    def vm_tails(self, heaps: list[Rel]) -> dict[int, list[int]]:
        """Per table, the blocks at or past its end that its visibility map marks, read in one statement for all
        tables; a table missing from the answer (the statement failed) has its map read alone by file_checks."""
        wanted = [
            (r, *span)
            for r in heaps
            if r.vm_size > 0 and r.locked is None and (span := self._vm_span(r, r.nblocks)) is not None
        ]
        if len(wanted) < 2:
            return {}
        query = db.sql.SQL(db.load_sql("diagnose_vm_tails")).format(get_raw_page=self.fn("pageinspect", "get_raw_page"))
        params = {
            "oids": [r.oid for r, _a, _b in wanted],
            "firsts": [a for _r, a, _b in wanted],
            "lasts": [b for _r, _a, b in wanted],
        }
        try:
            rows = self.main.run(query, params, binary=True, again=True)
        except BackendLost:
            return {}
        if isinstance(rows, ServerError):
            return {}
        by_oid = {r.oid: r for r, _a, _b in wanted}
        out: dict[int, list[int]] = {r.oid: [] for r, _a, _b in wanted}
        for oid, blk, page in rows:
            rel = by_oid[int(oid)]
            out[rel.oid].extend(self._vm_marked(rel, rel.nblocks, int(blk), bytes(page)))
        return out

    def file_checks(self, rel: Rel, vm_beyond: list[int] | None = None) -> None:
        """A trailing partial block and visibility-map bits for blocks past the end of the table (``vm_beyond``:
        those bits as vm_tails already read them)."""
        if rel.size % rel.block_size:
            self.add(
                [
                    fmod.make(
                        "file.partial_page",
                        rel.ctx,
                        rel.nblocks,
                        None,
                        f"the file ends {rel.size % rel.block_size} bytes into block {rel.nblocks}: the server does "
                        "not count that block, its rows are not returned",
                        source=fmod.SOURCE_SERVER,
                    )
                ]
            )
        if not rel.is_heap or rel.vm_size <= 0:
            return
        nblocks = rel.nblocks
        beyond: list[int] = []
        for attempt in range(2):
            try:
                beyond = vm_beyond if attempt == 0 and vm_beyond is not None else self._vm_beyond(rel, nblocks)
            except NotChecked:
                return
            if not beyond:
                return
            # The table grows while the map is read (a new block's bits can be set right away): what counts is
            # its length after the map was read.
            fresh = self._fresh_nblocks(rel)
            if fresh is None:
                break
            beyond = [b for b in beyond if b >= fresh]
            if not beyond:
                return
            nblocks = fresh
        self.add(
            [
                fmod.make(
                    "file.vm_beyond_end",
                    rel.ctx,
                    nblocks,
                    None,
                    f"the visibility map marks {len(beyond)} block(s) {beyond[0]}..{beyond[-1]} all-visible but "
                    f"the table ends at block {nblocks - 1}: blocks {nblocks}..{beyond[-1]} were cut off",
                    source=fmod.SOURCE_CROSS,
                    fork="main",
                )
            ]
        )

    @staticmethod
    def _vm_span(rel: Rel, nblocks: int) -> tuple[int, int] | None:
        """The map pages covering heap blocks ``nblocks`` and beyond."""
        per_page = (rel.block_size - _VM_HEADER) * 4
        first, last = nblocks // per_page, rel.vm_size // rel.block_size - 1
        return (first, last) if first <= last else None

    def _vm_beyond(self, rel: Rel, nblocks: int) -> list[int]:
        """Heap blocks at or past ``nblocks`` that the visibility map (as the server has it) marks."""
        span = self._vm_span(rel, nblocks)
        if span is None:
            return []
        bs = rel.block_size
        beyond: list[int] = []
        for start, got in self.raw_ranges(self.main, rel, *span, fork="vm"):
            if isinstance(got, ServerError):
                continue
            for i in range(len(got) // bs):
                beyond.extend(self._vm_marked(rel, nblocks, start + i, got[i * bs : (i + 1) * bs]))
        return beyond

    @staticmethod
    def _vm_marked(rel: Rel, nblocks: int, vm_block: int, page: bytes) -> list[int]:
        """Heap blocks at or past ``nblocks`` that map page ``vm_block`` marks."""
        per_page = (rel.block_size - _VM_HEADER) * 4
        base = vm_block * per_page
        first = max(nblocks - base, 0)
        if first >= per_page:
            return []
        lo = _VM_HEADER + first // 4
        tail = bytearray(page[lo : _VM_HEADER + per_page // 4])
        if tail:
            tail[0] &= (0xFF << (first % 4 * 2)) & 0xFF  # the first byte's bits for blocks before the end
        if not tail.strip(b"\0"):
            return []  # the usual case: no bit past the end; looked at bit by bit only when one is set
        return [
            base + (lo - _VM_HEADER + j) * 4 + bit
            for j, byte in enumerate(tail)
            if byte
            for bit in range(4)
            if (byte >> (bit * 2)) & 0x3
        ]

    def _fresh_nblocks(self, rel: Rel) -> int | None:
        rows = self.main.run(db.load_sql("relation_size"), {"oid": rel.oid}, again=True)
        if isinstance(rows, ServerError) or not rows:
            return None
        return int(rows[0][0]) // rel.block_size

    def index_refs(self, index: Rel) -> None:
        """Index entries that point past the end of the table or at unused line pointers, rechecked against
        fresh copies of the pages (a concurrent insert or VACUUM can explain a first mismatch)."""
        heap = self.heap_of(index)
        candidates = index.candidates
        index.candidates = []
        if heap is None or not candidates:
            return
        confirmed = self.recheck(index, heap, candidates)
        past = [c for c in confirmed if c.past_end]
        dangling = [c for c in confirmed if not c.past_end]
        out: list[dict[str, Any]] = []
        zeroed: dict[int, int] = {}
        for c in dangling:
            if c.heap_block in heap.zero:
                zeroed[c.heap_block] = zeroed.get(c.heap_block, 0) + 1
        for blk, n in sorted(zeroed.items()):
            if (heap.oid, "zero", blk) in self.reported:
                continue
            self.reported.add((heap.oid, "zero", blk))
            out.append(
                fmod.make(
                    "page_header.zeroed_referenced",
                    heap.ctx,
                    blk,
                    None,
                    f"block {blk} is all zeroes but index {index.relname} has {n} entr{'y' if n == 1 else 'ies'} "
                    "pointing into it: its rows are gone",
                    source=fmod.SOURCE_CROSS,
                )
            )
        if past and (heap.oid, "truncated", 0) not in self.reported:
            self.reported.add((heap.oid, "truncated", 0))
            top = max(c.heap_block for c in past)
            out.append(
                fmod.make(
                    "file.heap_truncated",
                    heap.ctx,
                    heap.nblocks,
                    None,
                    f"index {index.relname} has {len(past)} entr{'y' if len(past) == 1 else 'ies'} pointing to "
                    f"blocks {min(c.heap_block for c in past)}..{top}, but the table ends at block {heap.nblocks - 1}: "
                    f"blocks {heap.nblocks}..{top} are missing from the file",
                    source=fmod.SOURCE_CROSS,
                )
            )
        for c in (past + dangling)[:MAX_CROSS_FINDINGS]:
            code = "index.tid_beyond_heap" if c.past_end else "index.tid_unused"
            what = (
                f"past the end of the table (it ends at block {heap.nblocks - 1})"
                if c.past_end
                else "an unused or missing line pointer: the row it indexed is gone from the table"
            )
            out.append(
                fmod.make(
                    code,
                    index.ctx,
                    c.index_block,
                    c.index_item,
                    f"points to heap ({c.heap_block},{c.heap_item}), {what}",
                    source=fmod.SOURCE_CROSS,
                )
            )
        if len(past) + len(dangling) > MAX_CROSS_FINDINGS:
            index.notes.append(f"{len(past) + len(dangling) - MAX_CROSS_FINDINGS} more index entries without a row")
        self.add(out)

    def recheck(self, index: Rel, heap: Rel, candidates: list[Crossref]) -> list[Crossref]:
        size_rows = self.main.run(db.load_sql("relation_size"), {"oid": heap.oid}, again=True)
        nblocks = heap.nblocks if isinstance(size_rows, ServerError) else int(size_rows[0][0]) // heap.block_size
        fresh: dict[int, bytes | None] = {}
        confirmed: list[Crossref] = []
        for c in candidates:
            if c.past_end:
                if c.heap_block >= nblocks:
                    confirmed.append(c)
                continue
            if c.heap_block not in fresh:
                page = self.one_page(heap, c.heap_block)
                fresh[c.heap_block] = None if page is None else core.lp_flags(page)
            flags = fresh[c.heap_block]
            if flags is not None and (c.heap_item > len(flags) or flags[c.heap_item - 1] == 0):
                confirmed.append(c)
        if not confirmed:
            return []
        # the index entries must still be there too
        still: list[Crossref] = []
        pages: dict[int, dict[int, list[tuple[int, int]]]] = {}
        for c in confirmed:
            if c.index_block not in pages:
                ipage = self.one_page(index, c.index_block)
                entries: dict[int, list[tuple[int, int]]] = {}
                for item, hblk, hoff in core.leaf_tids(ipage) if ipage is not None else []:
                    entries.setdefault(item, []).append((hblk, hoff))
                pages[c.index_block] = entries
            if (c.heap_block, c.heap_item) in pages[c.index_block].get(c.index_item, []):
                still.append(c)
        return still

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
                rows = self._run_locked(session, query, {"rel": rel.oid, "toast": check_toast, "a": a, "b": b})
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
                out.extend(self.refused_findings(rel, named[0], err))
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

    def _run_locked(
        self, session: Session, query: Any, params: dict[str, Any], *, binary: bool = False, again: bool = False
    ) -> Any:
        """Run, retrying a few times when lock_timeout fired (someone holds a conflicting lock briefly)."""
        for attempt in range(LOCK_RETRIES):
            rows = session.run(query, params, binary=binary, again=again)
            if not (isinstance(rows, ServerError) and rows.sqlstate == "55P03") or attempt == LOCK_RETRIES - 1:
                return rows
            time.sleep(0.5 * (attempt + 1))
        return rows

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
                self.add(self.toast_scan_confirmed(rel))
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

    def toast_scan_confirmed(self, rel: Rel) -> list[dict[str, Any]]:
        """The files' TOAST findings on ``rel`` that verify_heapam did not repeat, checked again. verify_heapam finds
        chunks through the TOAST index, which still files a chunk whose chunk_id or chunk_seq was altered under its
        old key; the files, read at another moment, may also have caught a value being rewritten. The value's
        chunks are read twice, through the index and without it: when the index finds chunks the table itself
        does not hold whole, the index hides damage and the finding stays; otherwise (the value whole, or gone
        with the row that pointed at it) it was concurrent change and goes."""
        toast = self.toast_of(rel)
        wanted: dict[int, tuple[int, int]] = {}
        for f in rel.toast_scan:
            if m := _TOAST_VALUE.search(str(f["message"])):
                wanted[int(m[1])] = (int(m[2]), int(m[3]))
        if toast is None or not wanted:
            return []
        query = db.sql.SQL(db.load_sql("diagnose_toast_chunks")).format(
            toast=db.sql.Identifier(toast.schema, toast.name)
        )
        views: list[dict[int, tuple[int, int, int, int]]] = []
        for off in ("enable_indexscan", "enable_seqscan"):
            session = self.main
            got = session.run(f"SET enable_bitmapscan = off; SET {off} = off")
            try:
                rows = session.run(query, {"values": sorted(wanted)})
            finally:
                session.run("RESET enable_bitmapscan; RESET enable_indexscan; RESET enable_seqscan")
            if isinstance(got, ServerError) or isinstance(rows, ServerError):
                return list(rel.toast_scan)
            views.append({int(v): (int(n), int(a), int(b), int(size)) for v, n, a, b, size in rows})
        table_view, index_view = views
        hidden = {
            v
            for v, (size, chunks) in wanted.items()
            if v in index_view and table_view.get(v) != (chunks, 0, chunks - 1, size)
        }
        return [
            {**f, "message": f"{f['message']} (the TOAST index hides it: it still files an altered chunk)"}
            for f in rel.toast_scan
            if (m := _TOAST_VALUE.search(str(f["message"]))) is not None and int(m[1]) in hidden
        ]

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
            return self._run_locked(self.session(), query, {"rel": index.oid, "all": False})

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
        rows = self._one(self.main, "diagnose_allindexed", {"oids": [r.oid for r in candidates]})
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
        config = {
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
                rows = self._run_locked(session, query, {"rel": index.oid, "all": heapallindexed and in_core is None})
            if in_core is not None and not isinstance(rows, ServerError):
                try:
                    proven, note = in_core.result()[index.oid]
                except Exception as exc:  # the server decides: the check in the core is only a shortcut
                    proven, note = False, f"heapallindexed through the server (the check from the files failed: {exc})"
                index.notes.append(note)
                if not proven:
                    rows = self._run_locked(session, query, {"rel": index.oid, "all": True})
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

    # ------------------------------------------------------------------ 4b. TOAST chunks named

    def locate_toast_chunks(self) -> None:
        """For TOAST problems amcheck reports on a table row, find the chunks of that value through the TOAST
        index's entries and name the TOAST block and line pointer of each chunk that is wrong."""
        wanted: dict[int, dict[int, dict[str, Any]]] = {}
        for f in list(self.findings):
            if f["source"] != fmod.SOURCE_AMCHECK or not str(f["code"]).startswith("toast."):
                continue
            value = amcheck.toast_value_id(f["message"])
            table = next((r for r in self.rels if r.relfilenode == f["relfilenode"] and r.role == "table"), None)
            if value is None or table is None:
                continue
            wanted.setdefault(table.oid, {}).setdefault(value, f)
            if m := _BLAMED_CHUNK.search(f["message"]):
                self.blamed.add((value, int(m.group(1))))
        for table_oid, values in wanted.items():
            toast = next((r for r in self.rels if r.role == "toast" and r.table_oid == table_oid), None)
            tindex = next((r for r in self.rels if r.role == "toast-index" and r.table_oid == table_oid), None)
            if toast is None or tindex is None:
                continue
            chunks = self._toast_index_entries(tindex, set(values))
            self.add(self._check_chunks(toast, chunks, values))

    def _toast_index_entries(self, tindex: Rel, values: set[int]) -> dict[int, list[tuple[int, int, int]]]:
        """value id -> [(chunk_seq, toast block, toast item)] from the TOAST index's leaf pages."""
        found: dict[int, list[tuple[int, int, int]]] = {}
        bs = tindex.block_size
        try:
            pages = (
                (start + i, got[i * bs : (i + 1) * bs])
                for start, got in self.raw_ranges(self.main, tindex, 1, max(tindex.nblocks - 1, 0))
                if not isinstance(got, ServerError)
                for i in range(len(got) // bs)
            )
            for blk, page in pages:  # only for values amcheck found damaged: a TOAST index is small
                rep = core.inspect_page(page, blk, checksums=False, kind="btree")
                if not rep["btree"] or "BTP_LEAF" not in rep["btree"]["flags"]:
                    continue
                for it in rep["items"]:
                    bt = it.get("btree")
                    if not bt or bt["is_pivot"] or not bt["htid"]:
                        continue
                    key = bytes.fromhex(bt["data"].replace(" ", ""))
                    if len(key) < 8:
                        continue
                    value, seq = struct.unpack_from("<Ii", key)
                    if value in values:
                        found.setdefault(value, []).append((seq, bt["htid"]["block"], bt["htid"]["offset"]))
        except NotChecked:
            pass
        return found

    def _check_chunks(
        self, toast: Rel, chunks: dict[int, list[tuple[int, int, int]]], values: dict[int, dict[str, Any]]
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        pages: dict[int, bytes | None] = {}
        for value, entries in chunks.items():
            row = values[value]
            where = f"table row ({row['block']},{row['item']})"
            for seq, blk, off in sorted(entries):
                if blk not in pages:
                    pages[blk] = self.one_page(toast, blk) if blk < toast.nblocks else None
                page = pages[blk]
                if page is None:
                    continue
                problem = _chunk_problem(page, blk, off, value, seq)
                if problem is None and (value, seq) in self.blamed:
                    problem = (
                        "toast.chunk_size",
                        "amcheck found this chunk's size wrong (see the table row's finding)",
                    )
                if problem:
                    code, text = problem
                    out.append(
                        fmod.make(
                            code,
                            toast.ctx,
                            blk,
                            off,
                            f"chunk {seq} of toast value {value} (of {where}): {text}",
                            source=fmod.SOURCE_CROSS,
                            observed_error=row["observed_error"],
                        )
                    )
            locations = ", ".join(f"{s}@({b},{o})" for s, b, o in sorted(entries)[:8])
            row["message"] += f" [chunks in {toast.relname}: {locations or 'none indexed'}]"
        return out

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
            if self.pgdata is None or not self.files_phase(heaps + others):
                self.pgdata = None
                self.raw_phase(heaps + others)
            tails = self.vm_tails(heaps)
            for rel in heaps:
                rel.lines = None  # memory: only the index batches needed it
                self.file_checks(rel, tails.get(rel.oid))
            for index in others:
                self.index_refs(index)
            self.progress("verify_heapam on TOAST tables")
            self.heap_phase([r for r in heaps if r.role == "toast"])
            self.start_allindexed([r for r in heaps if r.role == "table"])
            self.progress("verify_heapam on tables, bt_index_check on their indexes")
            self.amcheck_phase(
                [r for r in heaps if r.role != "toast"], [r for r in self.rels if r.is_btree and r.role == "index"]
            )
            self.btree_phase([r for r in self.rels if r.is_btree and r.role == "toast-index"])
            self.locate_toast_chunks()
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


def _chunk_problem(page: bytes, blk: int, off: int, value: int, seq: int) -> tuple[str, str] | None:
    """What is wrong with the TOAST chunk the index says is chunk ``seq`` of ``value`` at (blk, off)."""
    if len(page) < 24:
        return None
    lower = int.from_bytes(page[12:14], "little")
    maxoff = max((lower - 24) // 4, 0)
    if off < 1 or off > maxoff:
        return (
            "toast.chunk_missing",
            f"line pointer {off} is beyond the page's {maxoff} line pointers: the chunk is gone",
        )
    (lp,) = struct.unpack_from("<I", page, 24 + (off - 1) * 4)
    lp_off, lp_flags, lp_len = lp & 0x7FFF, (lp >> 15) & 0x3, lp >> 17
    if lp_flags != 1:
        name = {0: "unused", 2: "a redirect", 3: "dead"}[lp_flags]
        return "toast.chunk_missing", f"line pointer {off} is {name}: the chunk is gone"
    if lp_off + lp_len > len(page) or lp_len < 24 + 9:
        return None  # the page decoder reports the line pointer itself
    t_hoff = page[lp_off + 22]
    data = lp_off + t_hoff
    if data + 8 > lp_off + lp_len:
        return None
    chunk_id, chunk_seq = struct.unpack_from("<Ii", page, data)
    if chunk_id != value:
        return (
            "toast.chunk_unexpected",
            f"the tuple holds chunk_id {chunk_id}, not {value}: the chunk is lost to its value",
        )
    if chunk_seq != seq:
        return "toast.chunk_unexpected", f"the tuple holds chunk_seq {chunk_seq} where the index says {seq}"
    b0 = page[data + 8]
    if b0 & 0x01:
        size = (b0 >> 1) - 1
    elif b0 & 0x03 == 0:
        size = (int.from_bytes(page[data + 8 : data + 12], "little") >> 2) - 4
    else:
        return "toast.chunk_header", f"chunk_data has a compressed varlena header (0x{b0:02x})"
    room = lp_off + lp_len - (data + 8) - (1 if b0 & 0x01 else 4)
    if size < 0 or size > TOAST_MAX_CHUNK_SIZE or size > room:
        return "toast.chunk_size", f"chunk_data claims {size} bytes, the tuple holds {room}"
    return None


def run_diagnose(req: DiagnoseRequest) -> DiagnoseOutcome:
    """Diagnose the database ``req.dsn`` points at (or the tables in ``req.tables``)."""
    if req.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return Diagnosis(req).run()
