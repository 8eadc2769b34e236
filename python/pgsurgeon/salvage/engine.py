"""The salvage of one table.

1. Classify every block without the executor (the data files, or pg_read_binary_file): healthy, all zeroes, or
   damaged. A damaged item-ID array or tuple header can crash the backend, so damaged blocks never reach SQL.
2. Read the healthy blocks through SQL in TID-range chunks (``ctid >= '(a,0)' AND ctid < '(b,0)'``, a TID range
   scan), in parallel. A chunk that fails is split (at the block an error names, else in halves) down to single
   blocks; a block that fails is read tuple by tuple (``ctid = '(b,i)'``). A chunk whose read crashes the backend
   is retried alone once, then carved.
3. Carve the damaged blocks, and the tuples SQL could not read, from their raw bytes (crates/core/src/rows/carve.rs),
   asking the server for what the files do not say (transaction status, MultiXact members, TOAST chunks).
4. Account for what is lost: line pointers that lead nowhere, all-zero pages, with the index entries that point
   there as evidence.

This module holds the options, the run state the phases share (``Salvage``) and the order they run in; each phase
is a module of its own: prepare.py (where raw pages come from), classify.py (1), sqlread.py (2), keycheck.py and
carve.py (3), evidence.py (4), server_view.py (the server's copy of a page against the file's), outcome.py (the
report as data).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import loss
from pgsurgeon.catalog.sql import ServerFacts, resolve_relation
from pgsurgeon.errors import UsageError
from pgsurgeon.rescue.walstatus import CommitRecords
from pgsurgeon.salvage import catalog
from pgsurgeon.salvage.carve import carve, carve_config
from pgsurgeon.salvage.classify import classify
from pgsurgeon.salvage.deleted import undelete
from pgsurgeon.salvage.evidence import Background, index_evidence
from pgsurgeon.salvage.keycheck import apart_by_key
from pgsurgeon.salvage.outcome import report
from pgsurgeon.salvage.pages import LocalPages, PageSource
from pgsurgeon.salvage.prepare import _has_gap, _horizons, open_pages
from pgsurgeon.salvage.ranges import _complement, plan_chunks
from pgsurgeon.salvage.session import SharedSnapshot, limits, profile
from pgsurgeon.salvage.sinks import DirSink, Sink, TableSink
from pgsurgeon.salvage.sqlread import Failure, read_sound
from pgsurgeon.session import Session

if TYPE_CHECKING:
    from pgsurgeon.boundary import BlockClass, ClassifyConfig, Horizons

__all__ = [
    "CLASSIFY_REGION",
    "Salvage",
    "SalvageOptions",
    "Stats",
    "_complement",
    "_has_gap",
    "plan_chunks",
    "salvage",
]

CLASSIFY_REGION = 8192
"""Blocks checked per step while the SQL sessions read the sound chunks of the steps before (--out). Not for --into:
INSERT … SELECT region by region is slower than one CREATE TABLE AS (no bulk insert), 4.3 s against 3.65 s."""


@dataclass
class SalvageOptions:
    dsn: str
    table: str
    into: str | None = None
    into_dsn: str | None = None
    out: Path | None = None
    fmt: str = "copy"
    jobs: int = 2
    chunk_blocks: int = 0
    """Blocks per SQL chunk (0: chosen from the table size)."""
    pgdata: Path | None = None
    files: str = "auto"
    """auto (data directory if local, else pg_read_binary_file), local, remote, none (SQL only)."""
    restart: bool = False
    statement_timeout_s: float = 0
    max_crashes: int = 8
    keep_parts: bool = False
    carve_all: bool = False
    """Carve every block instead of reading through SQL (a cross-check, or when SQL cannot be trusted)."""
    precheck: bool = True
    """Classify blocks before sending SQL (off: SQL first, carve only what fails or crashes)."""
    server_files: bool = True
    """With --out and a local server: let the server write the chunk files (COPY … TO 'file')."""
    deleted: bool = False
    """Also write the row versions committed DELETEs and UPDATEs removed (salvage/deleted.py); needs --out."""
    deleted_by: int | None = None
    """With ``deleted``: only what this transaction removed (the low 32 bits of txid_current())."""

    def __post_init__(self) -> None:
        # every caller (the command, repair, the lab) gets the same refusal, before anything runs
        if not 1 <= self.jobs <= 64:
            raise UsageError(f"jobs must be between 1 and 64, not {self.jobs}", hint="pass -j 1 to 64")
        if self.deleted_by is not None:
            self.deleted = True
            self.deleted_by &= 0xFFFFFFFF
        if self.deleted and self.out is None:
            raise UsageError("--deleted writes files: it needs --out DIR")
        if self.chunk_blocks < 0:
            raise UsageError(
                f"chunk blocks must be 0 (chosen from the table size) or more, not {self.chunk_blocks}",
                hint="pass --chunk-blocks 0 or a positive number",
            )


@dataclass
class Stats:
    blocks_total: int = 0
    blocks_done: int = 0
    rows_sql: int = 0
    rows_tuples: int = 0
    crashes: int = 0
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, blocks: int, rows: int) -> None:
        with self.lock:
            self.blocks_done += blocks
            self.rows_sql += rows


class Salvage:
    """The run state of one table's salvage, which its phases (the modules named above) read and add to."""

    # set as the run goes (outcome.py reads some with getattr: a run that stops early has not set them)
    main: Session
    snapshot: SharedSnapshot
    table: catalog.Table
    facts: ServerFacts
    pages: PageSource | None
    pgdata: Path | None
    horizons: Horizons | None
    sink: Sink
    classes: dict[int, BlockClass]
    classify_cfg: ClassifyConfig
    classify_seconds: float
    overlapped_sql_seconds: float
    carve_ranges: list[tuple[int, int]]
    """Block ranges to carve beside single blocks (after a missing segment; everything with --carve-all)."""
    sql_seconds: float
    carved: dict[str, Any]
    carve_seconds: float
    outputs: dict[str, Any]

    def __init__(self, opts: SalvageOptions, on_progress: Callable[[Stats], None] | None = None) -> None:
        self.opts = opts
        self.on_progress = on_progress
        self.stats = Stats()
        self.stop = threading.Event()
        self.failures: list[Failure] = []
        self.lost: list[dict[str, Any]] = []
        self.carve_blocks: set[int] = set()
        self.carve_items: dict[int, set[int]] = {}
        self.apart_rows: dict[str, list[tuple[int, str]]] = {}
        """Block -> carved rows to keep apart (offset, reason): copies of rows read through SQL."""
        self.early_evidence: Background | None = None
        self.notes: list[str] = []
        self.page_losses: list[loss.PageLoss] = []
        """The loss account of each page that lost rows (salvage/evidence.py)."""
        self.lock = threading.Lock()
        self.deleted: dict[str, Any] | None = None
        """What salvage --deleted wrote (salvage/deleted.py)."""
        self.commit_records: CommitRecords | None = None
        """--deleted-by's commit record in pg_wal, once read (salvage/carve.py, Oracle.subxacts)."""

    def session(self, read_only: bool = True, wait: bool = True) -> Session:
        return Session(
            self.opts.dsn, profile(read_only), limits(self.opts.statement_timeout_s), stop=self.stop, wait=wait
        )

    def run(self) -> dict[str, Any]:
        o = self.opts
        started = time.time()
        self.main = self.session(wait=False)
        # Every SQL read and the carver see the table as of one snapshot, taken before the table is sized: a row
        # version the snapshot sees lies in a block that existed when it was taken.
        self.snapshot = SharedSnapshot(o.dsn, self.stop)
        conn = self.main.conn
        oid, _relkind = resolve_relation(conn, o.table)
        self.table = t = catalog.load_table(conn, oid)
        facts = t.facts
        if t.rel.block_size != 8192:
            self.notes.append(f"block size is {t.rel.block_size}")
        # where raw pages come from
        pgdata = open_pages(self, facts)
        self.facts = facts
        self.horizons = _horizons(t, facts, pgdata)
        self.pgdata = pgdata
        if self._open_sink(pgdata):
            return report(self, started, already=True)
        sink = self.sink
        if t.unsupported_columns:
            self.notes.append(
                "carved rows cannot print these columns (they come out NULL, the row kept apart): "
                + ", ".join(t.unsupported_columns)
            )
        # 1. classify
        skip, checksum_only = classify(self, CLASSIFY_REGION)
        if o.deleted and isinstance(sink, DirSink) and self.pages is not None:
            # before any SQL reads the table: a scan prunes the removed versions from the pages it reads
            self.deleted = undelete(self, carve_config(self), sink.out_dir, sink.base, sink.ext)
        # The index entries into all-zero blocks and past the end, read from the index files beside the SQL phase.
        if isinstance(self.pages, LocalPages) and self.table.indexes and not o.carve_all:
            nblocks = t.rel.nblocks
            zero_now = sorted(b for b, c in self.classes.items() if c["state"] == "zero")
            self.early_evidence = Background(set(zero_now), lambda: index_evidence(self, zero_now, nblocks))
        # 2. SQL
        read_sound(self, skip, checksum_only)
        # 3. carve
        self.carved = {"rows": 0, "uncertain": 0, "invisible": 0, "pages": 0}
        c0 = time.monotonic()
        apart_by_key(self)
        carve(self)
        self.carve_seconds = time.monotonic() - c0
        outputs = sink.finish()
        if isinstance(sink, DirSink) and not o.keep_parts:
            sink.cleanup()
        self.outputs = outputs
        return report(self, started)

    def _open_sink(self, pgdata: Path | None) -> bool:
        """Where rows go: a table (--into) or a directory (--out). True when --into finds the salvage already
        complete (nothing more to do)."""
        o = self.opts
        t = self.table
        if o.into:
            into_dsn = o.into_dsn or o.dsn
            tsink = TableSink(into_dsn, o.into, t, self.main.conn, same_db=o.into_dsn is None)
            self.sink = tsink
            if tsink.carved_done():
                return True
        else:
            assert o.out is not None
            dsink = DirSink(o.out, t, o.fmt, restart=o.restart, keep_parts=o.keep_parts)
            self.sink = dsink
            if pgdata is not None and o.server_files:
                dsink.try_server_side(self.main, pgdata)
        self.sink.snapshot = self.snapshot
        return False


def salvage(opts: SalvageOptions, on_progress: Callable[[Stats], None] | None = None) -> dict[str, Any]:
    s = Salvage(opts, on_progress)
    try:
        return s.run()
    finally:
        with contextlib.suppress(Exception):
            s.main.close()
        with contextlib.suppress(Exception):
            s.snapshot.close()
