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
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog.sql import resolve_relation
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.salvage import catalog
from pgsurgeon.salvage.deleted import undelete
from pgsurgeon.salvage.pages import (
    LocalPages,
    PageSource,
    RemotePages,
    can_read_remote,
    fetch_toast,
    pageinspect_function,
)
from pgsurgeon.salvage.session import BackendLost, Session, SharedSnapshot, SqlFailed
from pgsurgeon.salvage.sinks import DirSink, Sink, TableSink, reading

if TYPE_CHECKING:
    from psycopg import Connection

_INVALID_PAGE = re.compile(r"invalid page in block (\d+) of relation \"?([^\s\"]+)")
MAX_TUPLES = 291  # MaxHeapTuplesPerPage for 8 KB pages
KEY_CHECK_MAX_BLOCKS = 100_000
CLASSIFY_REGION = 8192
"""Blocks checked per step while the SQL sessions read the sound chunks of the steps before (--out). Not for --into:
INSERT … SELECT region by region is slower than one CREATE TABLE AS (no bulk insert), 4.3 s against 3.65 s."""
NEWER_CHECK_MAX_BLOCKS = 10_000
"""Damaged blocks up to which the server's copy is compared with the file's (one statement each)."""
"""Blocks to carve up to which their rows' keys are checked against the rows read through SQL (the keys are held)."""
_COPY_ESCAPES = {b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}


def _copy_text_value(field: bytes) -> str | None:
    """One field of a COPY text line as the value's text (None for NULL or bytes that are not UTF-8)."""
    if field == b"\\N":
        return None
    out = bytearray()
    i = 0
    while i < len(field):
        ch = field[i : i + 1]
        if ch == b"\\" and i + 1 < len(field):
            nxt = field[i + 1 : i + 2]
            out += _COPY_ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += ch
        i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


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


@dataclass
class Failure:
    first: int
    end: int
    error: str
    action: str
    lp: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"blocks": [self.first, self.end], "error": self.error, "action": self.action}
        if self.lp is not None:
            d["ctid"] = f"({self.first},{self.lp})"
        return d


class _Background:
    """A call run in a thread of its own; ``result()`` waits for it and raises what it raised."""

    def __init__(self, blocks: set[int], fn: Callable[[], list[dict[str, Any]]]) -> None:
        self.blocks = blocks
        self._out: list[list[dict[str, Any]]] = []
        self._err: list[BaseException] = []

        def run() -> None:
            try:
                self._out.append(fn())
            except BaseException as exc:  # handed to result()
                self._err.append(exc)

        self._thread = threading.Thread(target=run, name="salvage-evidence", daemon=True)
        self._thread.start()

    def result(self) -> list[dict[str, Any]]:
        self._thread.join()
        if self._err:
            raise self._err[0]
        return self._out[0]


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _complement(nblocks: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges of [0, nblocks) outside ``covered`` (merged, sorted)."""
    out: list[tuple[int, int]] = []
    at = 0
    for a, b in covered:
        if a > at:
            out.append((at, min(a, nblocks)))
        at = max(at, b)
    if at < nblocks:
        out.append((at, nblocks))
    return [(a, b) for a, b in out if a < b]


def plan_chunks(
    nblocks: int, skip: list[tuple[int, int]], done: list[tuple[int, int]], chunk: int
) -> list[tuple[int, int]]:
    """Ranges of blocks still to read through SQL: everything not skipped and not done, cut into chunks that do not
    cross a skipped block. Works on ranges: its cost does not grow with the table."""
    out: list[tuple[int, int]] = []
    for a, b in _complement(nblocks, _merge(skip + done)):
        out.extend((x, min(x + chunk, b)) for x in range(a, b, chunk))
    return out


def _horizons(table: catalog.TableInfo, facts: catalog.ServerFacts, pgdata: Path | None) -> dict[str, Any] | None:
    control: dict[str, Any] | None = None
    if pgdata is not None:
        with contextlib.suppress(Exception):
            control = core.read_control(pgdata)
    if control is None or not control.get("crc_ok", False):
        return None
    next_xid = int(str(control["next_xid"]).split(":")[-1])
    if facts.next_xid:
        next_xid = facts.next_xid
    # The snapshot's xmax is one past the latest finished transaction: running ones (and those starting while
    # we work) are above it. Only garbage lies far beyond.
    next_xid = (next_xid + 10_000_000) % (1 << 32)
    if next_xid < 3:
        next_xid = 3
    return {
        "next_xid": next_xid,
        "oldest_xid": int(control["oldest_xid"]),
        # pg_control's value is from the last checkpoint; MultiXacts made since are valid too
        "next_multi": (int(control["next_multi"]) + 10_000_000) % (1 << 32),
        "oldest_multi": int(control["oldest_multi"]),
    }


def _files_size(pages: LocalPages, t: catalog.TableInfo) -> int:
    """Bytes up to the end of the last segment file present (a missing segment reads as all-zero blocks...
    counted as missing by the classifier)."""
    last = max((int(s["segno"]) for s in pages.segments), default=0)
    size = 0
    for seg in pages.segments:
        if int(seg["segno"]) == last:
            size = last * pages.relseg_size * t.block_size + Path(seg["path"]).stat().st_size
    return size


def _has_gap(pages: LocalPages, t: catalog.TableInfo) -> bool:
    """Whether a segment file is missing, or one before the last is short: where the server stops counting blocks
    (md.c's mdnblocks)."""
    segs = sorted((int(s["segno"]), Path(s["path"])) for s in pages.segments)
    full = pages.relseg_size * t.block_size
    return any(segno != i for i, (segno, _) in enumerate(segs)) or any(
        path.stat().st_size < full for _, path in segs[:-1]
    )


class _Oracle:
    """What the files do not say, asked of the server for the row engine (crates/core/src/rows/engine.rs)."""

    def __init__(self, salvage: Salvage) -> None:
        self.salvage = salvage

    def xid_status(self, xids: list[int]) -> dict[int, str]:
        return {int(k): v for k, v in self.salvage._resolve_xids(xids).items()}

    def multi_updaters(self, multis: list[int]) -> dict[int, int | None]:
        return {int(k): v for k, v in self.salvage._resolve_multis(multis).items()}

    def toast_chunks(self, valueids: list[int]) -> list[tuple[int, int, bytes]]:
        try:
            refs, blob = fetch_toast(self.salvage.main, self.salvage.table, valueids)
        except (SqlFailed, BackendLost) as exc:
            self.salvage.notes.append(f"TOAST values could not be read through SQL: {exc}")
            return []
        return [(int(r["valueid"]), int(r["seq"]), blob[r["start"] : r["start"] + r["len"]]) for r in refs]


class Salvage:
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
        self._early_evidence: _Background | None = None
        """Block -> carved rows to keep apart (offset, reason): copies of rows read through SQL."""
        self.notes: list[str] = []
        self.lock = threading.Lock()
        self.deleted: dict[str, Any] | None = None
        """What salvage --deleted wrote (salvage/deleted.py)."""

    # ------------------------------------------------------------------ setup

    def _session(self, read_only: bool = True, wait: bool = True) -> Session:
        return Session(
            self.opts.dsn,
            read_only=read_only,
            statement_timeout_s=self.opts.statement_timeout_s,
            stop=self.stop,
            wait=wait,
        )

    def run(self) -> dict[str, Any]:
        o = self.opts
        started = time.time()
        self.main = self._session(wait=False)
        # Every SQL read and the carver see the table as of one snapshot, taken before the table is sized: a row
        # version the snapshot sees lies in a block that existed when it was taken.
        self.snapshot = SharedSnapshot(o.dsn, self.stop)
        conn = self.main.conn
        oid, _relkind = resolve_relation(conn, o.table)
        self.table = t = catalog.load_table(conn, oid)
        facts = catalog.server_facts(conn)
        if t.block_size != 8192:
            self.notes.append(f"block size is {t.block_size}")
        # where raw pages come from
        pgdata: Path | None = None
        self.pages: PageSource | None = None
        if o.files in ("auto", "local"):
            pgdata = catalog.local_pgdata(facts, t, o.pgdata)
            if pgdata is not None:
                self.pages = LocalPages(pgdata, t, facts.segment_bytes // t.block_size)
            elif o.files == "local":
                raise PgSurgeonError(
                    f"the data directory of {db.describe_dsn(o.dsn)} cannot be read here",
                    hint="pass --pgdata, run where the data directory is, or use --files remote",
                )
        if self.pages is None and o.files in ("auto", "remote"):
            if can_read_remote(t):
                self.pages = RemotePages(self._session(), t, facts.segment_bytes // t.block_size)
            elif o.files == "remote":
                raise PgSurgeonError(
                    "reading raw pages through the server needs a superuser or pg_read_server_files",
                    hint="connect as a superuser, or use --files none (SQL only: damaged pages cannot be carved)",
                )
        if self.pages is None:
            self.notes.append("no raw page access: damaged blocks cannot be carved, only read through SQL")
        if t.size < 0:
            # the server cannot size the table (a segment file is missing): count the blocks in the files
            if not isinstance(self.pages, LocalPages):
                raise PgSurgeonError(
                    f"the server cannot tell the size of {t.display} (a segment file is missing?)",
                    hint="run salvage where the data directory is (or pass --pgdata) so the files can be counted",
                )
            t.size = _files_size(self.pages, t)
            self.notes.append("the server could not size the table (a segment file is missing); sized from its files")
        elif isinstance(self.pages, LocalPages) and _has_gap(self.pages, t):
            # segments after a missing or short one are invisible to the server (it stops counting at the gap) but
            # not to us. Without a gap, files longer than the server's count are the table growing since it was
            # sized: blocks the snapshot (taken first) has no rows in.
            on_disk = _files_size(self.pages, t)
            if on_disk > t.size:
                self.notes.append(
                    f"the files hold {(on_disk - t.size) // t.block_size} blocks past the end the server sees "
                    "(a segment file is missing before them): they are carved"
                )
                t.size = on_disk
        self.facts = facts
        self.horizons = _horizons(t, facts, pgdata)
        self.pgdata = pgdata
        # where rows go
        sink: Sink
        self.sink: Sink
        if o.into:
            into_dsn = o.into_dsn or o.dsn
            tsink = TableSink(into_dsn, o.into, t, conn, same_db=o.into_dsn is None)
            self.sink = sink = tsink
            if tsink.carved_done():
                return self._report(started, already=True)
        else:
            assert o.out is not None
            dsink = DirSink(o.out, t, o.fmt, restart=o.restart, keep_parts=o.keep_parts)
            self.sink = sink = dsink
            if pgdata is not None and o.server_files:
                dsink.try_server_side(self.main, pgdata)
        sink.snapshot = self.snapshot
        if t.unsupported_columns:
            self.notes.append(
                "carved rows cannot print these columns (they come out NULL, the row kept apart): "
                + ", ".join(t.unsupported_columns)
            )
        # 1. classify
        nblocks = t.nblocks
        self.stats.blocks_total = nblocks
        self.classes: dict[int, dict[str, Any]] = {}
        self.classify_seconds = 0.0
        if self.pages is None and o.carve_all:
            raise PgSurgeonError("--carve-all needs raw pages", hint="use --files local or remote")
        self.classify_cfg: dict[str, Any] = {
            "nblocks": nblocks,
            "blcksz": t.block_size,
            "checksums": t.checksums,
            "desc": t.rel_desc(),
            "horizons": self.horizons,
            "jobs": o.jobs,
            "columns": t.columns_out(),
        }
        if self.pages is not None and o.precheck and not o.carve_all:
            c0 = time.monotonic()
            if isinstance(self.pages, LocalPages) and isinstance(sink, DirSink) and not o.deleted:
                self._classify_while_reading(self.pages)
            else:
                res = self.pages.classify(self.classify_cfg)
                self.classes = {int(b["block"]): b for b in res["blocks"]}
            self.classify_seconds = time.monotonic() - c0
        damaged = {b for b, c in self.classes.items() if c["state"] in ("damaged", "missing")}
        # A page whose only fault is its checksum is never used by the server (it raises "invalid page"), so SQL
        # may try it: on a running server the page in shared buffers may be fine and the file mid-write. Alone,
        # so a failure costs one block.
        checksum_only = {
            b
            for b, c in self.classes.items()
            if c["state"] == "damaged" and set(c["codes"]) == {"checksum.mismatch"} and not o.carve_all
        }
        # The files lag behind the server: a page it changed since it last wrote it out (or is writing now) may
        # read damaged there and sound in its buffers. Such a page is read through SQL like the others.
        checksum_only |= self._newer_in_server(
            sorted(b for b in damaged if self.classes[b]["state"] == "damaged" and b not in checksum_only)
        )
        self.carve_blocks |= {b for b in damaged if self.classes[b]["state"] == "damaged"} - checksum_only
        missing = [b for b, c in self.classes.items() if c["state"] == "missing"]
        # block ranges to carve beside single blocks (after a missing segment; everything with --carve-all)
        self.carve_ranges: list[tuple[int, int]] = []
        if missing and isinstance(self.pages, LocalPages):
            # the server cannot read past a missing segment ("previous segment is only N blocks"): carve the rest
            beyond = _complement(nblocks, _merge([(0, min(missing) + 1)] + [(b, b + 1) for b in self.classes]))
            if beyond:
                self.notes.append(
                    f"{sum(b - a for a, b in beyond)} blocks after a missing segment are carved (the server cannot "
                    "read them)"
                )
                self.carve_ranges += beyond
        for b in sorted(damaged):
            if self.classes[b]["state"] == "missing":
                self.lost.append({"block": b, "lp": None, "reason": "the block is missing from the relation's files"})
        skip = _merge([(b, b + 1) for b in damaged] + self.carve_ranges)
        if o.carve_all:
            self.carve_ranges = _complement(nblocks, _merge([(b, b + 1) for b in missing]))
            skip = [(0, nblocks)]
            if isinstance(self.pages, LocalPages):
                self._flush_for_carving()
        if o.deleted and isinstance(sink, DirSink) and self.pages is not None:
            # before any SQL reads the table: a scan prunes the removed versions from the pages it reads
            self.deleted = undelete(self, self._carve_config(), _Oracle(self), sink.out_dir, sink.base, sink.ext)
        # The index entries into all-zero blocks and past the end, read from the index files beside the SQL phase.
        if isinstance(self.pages, LocalPages) and self.table.indexes and not o.carve_all:
            zero_now = sorted(b for b, c in self.classes.items() if c["state"] == "zero")
            self._early_evidence = _Background(set(zero_now), lambda: self._index_evidence(zero_now, nblocks))
        # 2. SQL
        done = sink.done_ranges()
        chunk = self._chunk_blocks()
        # blocks SQL already failed on while the pages were checked (they are carved or lost, not read again)
        skip = _merge(skip + [(f.first, f.end) for f in self.failures])
        work = plan_chunks(nblocks, skip, done, chunk)
        done_set = _merge(done)
        work += [(b, b + 1) for b in sorted(checksum_only) if not any(x <= b < y for x, y in done_set)]
        with self.stats.lock:
            # the SQL phase and the carve add what they do as they go
            self.stats.blocks_done = sum(max(0, min(b, nblocks) - a) for a, b in _merge(done))
        self.sql_seconds = 0.0
        s0 = time.monotonic()
        work = self._copy_all(work, set(checksum_only))
        self._run_sql(work)
        self.sql_seconds = time.monotonic() - s0
        # 3. carve
        self.carved: dict[str, Any] = {"rows": 0, "uncertain": 0, "invisible": 0, "pages": 0}
        c0 = time.monotonic()
        self._apart_by_key()
        self._carve()
        self.carve_seconds = time.monotonic() - c0
        outputs = sink.finish()
        if isinstance(sink, DirSink) and not o.keep_parts:
            sink.cleanup()
        self.outputs = outputs
        return self._report(started)

    def _chunk_blocks(self) -> int:
        nblocks = self.table.nblocks
        return self.opts.chunk_blocks or max(16, min(2048, nblocks // max(1, self.opts.jobs * 8) or 16))

    def _classify_while_reading(self, pages: LocalPages) -> None:
        """``--out``: the SQL sessions read each region's sound chunks while the next region's pages are checked
        here, instead of after every page was. Blocks that fail the checks stay out (the usual path reads, carves
        or reports them afterwards); after a missing segment nothing more is read this way."""
        nblocks = self.table.nblocks
        chunk = self._chunk_blocks()
        done = self.sink.done_ranges()

        def feed(push: Callable[[tuple[int, int]], None]) -> None:
            feeding = True
            for a in range(0, nblocks, CLASSIFY_REGION):
                if self.stop.is_set():
                    return
                b = min(nblocks, a + CLASSIFY_REGION)
                res = pages.classify({**self.classify_cfg, "first": a, "nblocks": b, "rel_nblocks": nblocks})
                found = {int(x["block"]): x for x in res["blocks"]}
                with self.lock:
                    self.classes.update(found)
                feeding = feeding and not any(c["state"] == "missing" for c in found.values())
                if feeding:
                    bad = [(x, x + 1) for x, c in found.items() if c["state"] in ("damaged", "missing")]
                    for r in plan_chunks(b, _merge([(0, a), *bad]), done, chunk):
                        push(r)

        s0 = time.monotonic()
        self._run_sql([], feed)
        self.overlapped_sql_seconds = time.monotonic() - s0

    def _flush_for_carving(self) -> None:
        """Every page is carved from the files, which hold what the server last wrote out: a change committed before
        the shared snapshot may still sit only in its buffers. A CHECKPOINT taken now writes every such page."""

        def checkpoint(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute("CHECKPOINT")

        try:
            self.main.run(checkpoint)
        except (SqlFailed, BackendLost) as exc:
            self.notes.append(
                f"CHECKPOINT refused ({exc}): rows changed since the last checkpoint may be carved as they were then"
            )
        else:
            self.notes.append("CHECKPOINT taken: the files hold every change the snapshot sees")

    def _newer_in_server(self, blocks: list[int]) -> set[int]:
        """Of the blocks the files show damaged, those the server holds in a sound, newer state: its copy (read
        through the buffer manager with pageinspect's get_raw_page, which never looks at the tuples) carries a
        later page LSN and passes the page checks. A copy the server refuses, or one with the file's LSN (hint
        bits aside, the same page), confirms the damage. Without pageinspect, the file is read again: a page that
        was being written reads differently a moment later."""
        if not blocks or not isinstance(self.pages, LocalPages) or self.opts.carve_all:
            return set()
        cfg = {**self.classify_cfg, "checksums": False, "nblocks": self.table.nblocks, "jobs": 1}
        query = self._raw_page_query()
        newer: set[int] = set()
        for b in blocks[:NEWER_CHECK_MAX_BLOCKS]:
            disk = self.pages.read_pages([b])
            if query is not None:
                try:
                    copy = self._server_copy(query, b)
                except (SqlFailed, BackendLost):
                    continue  # refused: the damage is in the server's view too
                if copy is None or copy[:8] == disk[:8]:
                    continue
            else:
                time.sleep(0.05)
                copy = self.pages.read_pages([b])
                if copy == disk:
                    continue
            if not core.classify_pages(copy, b, cfg)["blocks"]:  # it lists the blocks that are not healthy
                newer.add(b)
        if newer:
            self.notes.append(
                f"{len(newer)} block(s) damaged in the files but sound and newer in the server's "
                f"{'buffers' if query is not None else 'file a moment later'} (changed since last written out): "
                "read through SQL: " + ", ".join(str(b) for b in sorted(newer)[:20]) + (" …" if len(newer) > 20 else "")
            )
        return newer

    def _raw_page_query(self) -> db.sql.Composed | None:
        """pageinspect's get_raw_page, which reads a page through the buffer manager without looking at its tuples
        (None when pageinspect is not installed)."""
        fn = pageinspect_function(self.main.conn, "get_raw_page")
        if fn is None:
            return None
        return db.sql.SQL("SELECT {fn}(%s::oid::regclass::text, 'main', %s::bigint)").format(fn=fn)

    def _server_copy(self, query: db.sql.Composed, block: int) -> bytes | None:
        """The server's current image of ``block``: from its buffers when it holds the page, else from the file."""

        def fetch(conn: Connection[tuple[Any, ...]]) -> bytes | None:
            row = conn.execute(query, (self.table.oid, block), binary=True).fetchone()
            return bytes(row[0]) if row and row[0] is not None else None

        return self.main.run(fetch)

    def _not_zero_in_server(self, blocks: list[int]) -> set[int]:
        """Of pages all zeroes in the file, those the server holds with contents: written since the file was last
        written out (a block the table was extended by, filled after the shared snapshot was taken). Without
        pageinspect, a page that returns rows as of now has contents."""
        if not isinstance(self.pages, LocalPages):
            return set()
        query = self._raw_page_query()
        out: set[int] = set()
        for b in blocks[:NEWER_CHECK_MAX_BLOCKS]:
            if query is None:
                if self._rows_in_block(b, shared=False):
                    out.add(b)
                continue
            try:
                copy = self._server_copy(query, b)
            except (SqlFailed, BackendLost):
                continue
            if copy is not None and any(copy):
                out.add(b)
        return out

    # ------------------------------------------------------------------ SQL phase

    def _copy_all(self, work: list[tuple[int, int]], alone: set[int]) -> list[tuple[int, int]]:
        """A new table in the same database: the sound ranges copied inside the server in one transaction, like
        CREATE TABLE AS (blocks to try alone, whose pages failed only their checksum, stay out of it). Returns the
        work left for the range-by-range path: everything when this does not apply or the server refuses."""
        copy_all = getattr(self.sink, "copy_all", None)
        bulk = _merge([(a, b) for a, b in work if not (b - a == 1 and a in alone)])
        if copy_all is None or not bulk:
            return work
        dest = self.sink.dest_session()
        if dest is None:
            return work
        try:
            rows = copy_all(dest, bulk)
        except (SqlFailed, BackendLost) as exc:
            self.notes.append(f"one-transaction copy refused ({exc}): copied range by range")
            return work
        finally:
            dest.close()
        if rows is None:
            return work
        self.stats.add(sum(b - a for a, b in bulk), int(rows))
        return [(a, b) for a, b in work if b - a == 1 and a in alone]

    def _run_sql(
        self,
        work: list[tuple[int, int]],
        feed: Callable[[Callable[[tuple[int, int]], None]], None] | None = None,
    ) -> None:
        """Read ``work`` through SQL with --jobs sessions; ``feed(push)``, run in a thread of its own, may add more
        as it goes (the sessions wait for it to end)."""
        if not work and feed is None:
            return
        q: queue.Queue[tuple[int, int] | None] = queue.Queue()
        for w in work:
            q.put(w)
        pending = [len(work) + (feed is not None)]
        suspects: list[tuple[int, int, str]] = []
        errors: list[BaseException] = []
        cond = threading.Condition()
        nworkers = max(1, self.opts.jobs)

        def finish_one() -> None:
            with cond:
                pending[0] -= 1
                cond.notify_all()
                if pending[0] == 0:
                    for _ in range(nworkers):
                        q.put(None)  # wake every session now rather than at its next poll

        def push(item: tuple[int, int]) -> None:
            with cond:
                pending[0] += 1
            q.put(item)

        def worker() -> None:
            src: Session | None = None
            dest: Session | None = None
            try:
                src = self._session()
                dest = self.sink.dest_session()
                while not self.stop.is_set():
                    try:
                        item = q.get(timeout=0.1)
                    except queue.Empty:
                        with cond:
                            if pending[0] == 0:
                                return
                        continue
                    if item is None:
                        return
                    a, b = item
                    try:
                        self._read_range(src, dest, a, b, push, suspects, serial=False)
                    finally:
                        finish_one()
            except BaseException as exc:  # handed to the caller
                errors.append(exc)
                self.stop.set()
            finally:
                for s in (src, dest):
                    if s is not None:
                        s.close()

        threads = [threading.Thread(target=worker, name=f"salvage-{i}", daemon=True) for i in range(nworkers)]
        if feed is not None:

            def producer() -> None:
                try:
                    feed(push)
                except BaseException as exc:  # handed to the caller
                    errors.append(exc)
                    self.stop.set()
                finally:
                    finish_one()

            threads.append(threading.Thread(target=producer, name="salvage-classify", daemon=True))
        for th in threads:
            th.start()
        try:
            while any(th.is_alive() for th in threads):
                for th in threads:
                    th.join(0.25)
                if self.on_progress is not None:
                    self.on_progress(self.stats)
        except KeyboardInterrupt:
            self.stop.set()
            for th in threads:
                th.join()
            raise
        if errors:
            raise errors[0]
        # Ranges whose read lost the backend: alone now, so a crash there cannot be another range's fault.
        if suspects:
            src = self._session()
            dest = self.sink.dest_session()
            try:
                serial: list[tuple[int, int]] = [(a, b) for a, b, _ in suspects]
                while serial:
                    a, b = serial.pop()
                    self._read_range(src, dest, a, b, serial.append, None, serial=True)
            finally:
                src.close()
                if dest is not None:
                    dest.close()

    def _read_range(
        self,
        src: Session,
        dest: Session | None,
        a: int,
        b: int,
        push: Callable[[tuple[int, int]], None],
        suspects: list[tuple[int, int, str]] | None,
        *,
        serial: bool,
    ) -> None:
        try:
            rows = self.sink.copy_range(src, dest, a, b)
            self.stats.add(b - a, rows)
            return
        except SqlFailed as exc:
            error = exc.message
            m = _INVALID_PAGE.search(error)
            # the block of this table the error names (not of its TOAST table or an index)
            bad = int(m.group(1)) if m and m.group(2) == self.table.filepath else None
            if bad is not None and a <= bad < b:
                # the error names the block: read around it, carve it
                with self.lock:
                    self.failures.append(Failure(bad, bad + 1, error, "carved" if self.pages else "lost"))
                self._block_failed(bad, error)
                if a < bad:
                    push((a, bad))
                if bad + 1 < b:
                    push((bad + 1, b))
                return
            if b - a > 1:
                mid = (a + b) // 2
                push((a, mid))
                push((mid, b))
                return
            self._read_tuples(src, dest, a, error)
            return
        except BackendLost as exc:
            with self.lock:
                self.stats.crashes += 1
            if not serial and suspects is not None:
                with self.lock:
                    suspects.append((a, b, str(exc)))
                return
            # It crashed alone: carve the range when we can, else narrow it down.
            if self.pages is not None:
                with self.lock:
                    self.failures.append(Failure(a, b, f"backend crashed: {exc}", "carved"))
                    self.carve_blocks.update(range(a, b))
                self.stats.add(b - a, 0)
                return
            if self.stats.crashes >= self.opts.max_crashes or b - a == 1:
                with self.lock:
                    self.failures.append(Failure(a, b, f"backend crashed: {exc}", "lost"))
                    for blk in range(a, b):
                        self.lost.append({"block": blk, "lp": None, "reason": f"reading it crashed the backend: {exc}"})
                self.stats.add(b - a, 0)
                return
            mid = (a + b) // 2
            push((a, mid))
            push((mid, b))

    def _block_failed(self, block: int, error: str) -> None:
        with self.lock:
            if self.pages is not None:
                self.carve_blocks.add(block)
            else:
                self.lost.append({"block": block, "lp": None, "reason": f"SQL read failed: {error}"})
        self.stats.add(1, 0)

    def _max_lp(self, block: int) -> int:
        if self.pages is None:
            return MAX_TUPLES
        page = self.pages.read_pages([block])
        lower = int.from_bytes(page[12:14], "little")
        n = (lower - 24) // 4 if 24 <= lower <= len(page) else MAX_TUPLES
        return max(0, min(n, MAX_TUPLES))

    def _read_tuples(self, src: Session, dest: Session | None, block: int, error: str) -> None:
        """One block that SQL cannot read as a whole: tuple by tuple; what still fails is carved or lost."""
        n = self._max_lp(block)
        outcome = self.sink.copy_tuples(src, dest, block, list(range(1, n + 1)))
        with self.lock:
            self.stats.rows_tuples += outcome.rows
            self.stats.crashes += len(outcome.crashed)
            action = "carved" if self.pages is not None else "lost"
            self.failures.append(Failure(block, block + 1, error, f"read tuple by tuple ({outcome.rows} rows)"))
            for lp, err in sorted(outcome.failed.items()):
                # "no such tuple" is not an error: only real failures land here
                self.failures.append(Failure(block, block + 1, err, action, lp=lp))
                if self.pages is not None:
                    self.carve_items.setdefault(block, set()).add(lp)
                else:
                    self.lost.append({"block": block, "lp": lp, "reason": f"SQL read failed: {err}"})
        self.stats.add(1, outcome.rows)

    # ------------------------------------------------------------------ carving

    def _resolve_xids(self, xids: list[int]) -> dict[str, str]:
        """pg_xact_status for 32-bit XIDs (epoch from the current next XID)."""
        out: dict[str, str] = {}
        if not xids:
            return out
        try:
            row = self.main.run(
                lambda c: c.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
            )
        except (SqlFailed, BackendLost):
            return out
        full_next = int(row[0]) if row else 0
        epoch = full_next >> 32
        for x in xids:
            full = (epoch << 32) | x
            # running transactions may have IDs past the snapshot's xmax (it is one past the latest finished one):
            # only an ID more than half the XID space ahead belongs to the previous epoch
            if full >= full_next + (1 << 31):
                full -= 1 << 32
            if full < 0:
                continue

            def status(c: Connection[tuple[Any, ...]], f: int = full) -> tuple[Any, ...] | None:
                return c.execute("SELECT pg_xact_status(%s::text::xid8)", (str(f),)).fetchone()

            try:
                r = self.main.run(status)
            except (SqlFailed, BackendLost):
                continue
            if r and r[0] is not None:
                out[str(x)] = str(r[0])
        return out

    def _resolve_multis(self, multis: list[int]) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for m in multis:

            def members(c: Connection[tuple[Any, ...]], m: int = m) -> list[tuple[Any, ...]]:
                return c.execute(
                    "SELECT xid::text, mode FROM pg_get_multixact_members(%s::text::xid)", (str(m),)
                ).fetchall()

            try:
                rows = self.main.run(members)
            except (SqlFailed, BackendLost):
                continue
            updater = next((int(x) for x, mode in rows if mode in ("upd", "nokeyupd")), None)
            out[str(m)] = updater
        return out

    def _carve(self) -> None:
        """Carve the damaged blocks (every block with --carve-all) through the row engine: rows stream from the
        core into the sink; only counters, losses and the pages that need accounting come back."""
        ranges = _merge(self.carve_ranges + [(b, b + 1) for b in self.carve_blocks | set(self.carve_items)])
        zero_blocks = sorted(b for b, c in self.classes.items() if c["state"] == "zero")
        summary: dict[str, Any] = {"counts": {}, "lost": [], "pages": []}
        if ranges and self.pages is not None:
            summary = self._run_carver(self._carve_config(), ranges)
        elif ranges:
            for a, b in ranges:
                self.lost.extend(
                    {"block": x, "lp": None, "reason": "damaged, and raw pages cannot be read here"}
                    for x in range(a, b)
                )
        self._account(summary, ranges, zero_blocks)

    def _account(self, summary: dict[str, Any], ranges: list[tuple[int, int]], zero_blocks: list[int]) -> None:
        counts = summary["counts"]
        self.lost.extend(summary["lost"])
        self.carved["rows"] = int(counts.get("main_rows", 0))
        self.carved["uncertain"] = int(counts.get("apart_rows", 0))
        self.carved["invisible"] = int(counts.get("invisible", 0))
        self.carved["checksum_failures"] = int(counts.get("checksum_failures", 0))
        self.carved["pages"] = sum(b - a for a, b in ranges)
        if self.opts.carve_all:
            # no classify pass ran: the carve saw every page
            for p in summary["pages"]:
                if p.get("all_zero"):
                    self.classes[int(p["block"])] = {"state": "zero", "codes": [], "message": "all zeroes"}
            zero_blocks = sorted(b for b, c in self.classes.items() if c["state"] == "zero")
        self._evidence(zero_blocks, summary["pages"])

    def _apart_by_key(self) -> None:
        """Carved rows whose key SQL read in another row are copies of that row (a spliced or misdirected page, an
        old image written back): the carve keeps them apart and names the row. Settled before the carve writes
        anything: the blocks to carve are carved once for their keys, and the server is asked which of those keys
        the blocks it read hold (TID range scans over those blocks only, in the shared snapshot)."""
        t = self.table
        if not t.key or self.pages is None or self.opts.carve_all:
            return
        blocks = sorted(
            self.carve_blocks | set(self.carve_items) | {b for a, e in self.carve_ranges for b in range(a, e)}
        )
        if not blocks:
            return
        if len(blocks) > KEY_CHECK_MAX_BLOCKS:
            self.notes.append(
                f"{len(blocks)} blocks to carve: carved rows were not checked against the key of the rows read "
                f"through SQL (done up to {KEY_CHECK_MAX_BLOCKS} blocks); look for duplicate keys in the output"
            )
            return
        names = [c.name for c in t.live_columns]
        if not all(k in names for k in t.key):
            return
        positions = [names.index(k) for k in t.key]
        cfg = {**self._carve_config(), "format": "text", "can_ask": False, "can_fetch_toast": False}
        found: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        for i in range(0, len(blocks), 256):
            chunk = blocks[i : i + 256]
            res, out = core.carve_pages(self.pages.read_pages(chunk), chunk, cfg, b"")
            for r in res["rows"]:
                if r["verdict"] == "invisible":
                    continue
                fields = bytes(out[r["data_start"] : r["data_end"]]).rstrip(b"\n").split(b"\t")
                vals = [_copy_text_value(fields[p]) if p < len(fields) else None for p in positions]
                if all(v is not None for v in vals):
                    found.setdefault(tuple(v for v in vals if v is not None), []).append(
                        (int(r["block"]), int(r["offset"]))
                    )
        if not found:
            return
        unsafe = _merge(
            [(b, b + 1) for b in blocks]
            + [(b, b + 1) for b, c in self.classes.items() if c["state"] in ("damaged", "missing")]
            + [(f.first, f.end) for f in self.failures]
        )
        elsewhere = self._keys_in(list(found), _complement(t.nblocks, unsafe))
        cols = ", ".join(t.key)
        for key, ctid in elsewhere.items():
            why = (
                f"its key ({cols})=({', '.join(key)}) is readable in row {ctid}: a copy of that row (a spliced or "
                "misdirected page, an old page image written back)"
            )
            for block, offset in found[key]:
                self.apart_rows.setdefault(str(block), []).append((offset, why))
        if elsewhere:
            self.notes.append(
                f"{sum(len(found[k]) for k in elsewhere)} carved row(s) kept apart: their key is readable in another "
                "row of the table"
            )

    def _keys_in(self, keys: list[tuple[str, ...]], ranges: list[tuple[int, int]]) -> dict[tuple[str, ...], str]:
        """Which of ``keys`` (the key columns as text) rows in ``ranges`` hold, with the ctid of one such row. Only
        TID range scans run, so no other block is read."""
        t = self.table
        sq = db.sql.SQL
        cols = sq(", ").join(sq("{}::text").format(db.sql.Identifier(c)) for c in t.key)
        arrays = sq(", ").join(sq("%s::text[]") for _ in t.key)
        query = sq(
            "SELECT ctid::text, {cols} FROM {t} WHERE ctid >= %s::tid AND ctid < %s::tid "
            "AND ({cols}) IN (SELECT * FROM unnest({arrays}))"
        ).format(cols=cols, t=t.ident(), arrays=arrays)
        columns = [list(col) for col in zip(*keys, strict=True)]
        out: dict[tuple[str, ...], str] = {}
        for a, b in ranges:

            def fn(conn: Connection[tuple[Any, ...]], a: int = a, b: int = b) -> list[tuple[Any, ...]]:
                with reading(conn, self.snapshot):
                    for knob in ("seqscan", "indexscan", "indexonlyscan", "bitmapscan"):
                        conn.execute(f"SET LOCAL enable_{knob} = off")
                    return list(conn.execute(query, (f"({a},0)", f"({b},0)", *columns)).fetchall())

            try:
                rows = self.main.run(fn)
            except (SqlFailed, BackendLost) as exc:
                self.notes.append(f"blocks {a}..{b - 1} not searched for the keys of carved rows: {exc}")
                continue
            for ctid, *vals in rows:
                out.setdefault(tuple(str(v) for v in vals), str(ctid))
        return out

    def _carve_config(self) -> dict[str, Any]:
        """The row engine's configuration for this table (crates/core/src/rows/carve.rs CarveConfig)."""
        t = self.table
        assert self.pages is not None
        return {
            "blcksz": t.block_size,
            "nblocks": t.nblocks,
            "desc": t.rel_desc(),
            "columns": t.columns_out(),
            "format": "csv" if isinstance(self.sink, DirSink) and self.sink.fmt == "csv" else "text",
            "server_version_num": t.server_version_num,
            "encoding": self.facts.encoding,
            "checksums": t.checksums,
            "horizons": self.horizons,
            "snapshot": self.snapshot.text,
            "can_ask": True,
            "can_fetch_toast": t.toast_oid != 0,
            "toast_relid": t.toast_oid,
            "only": {str(b): sorted(lps) for b, lps in self.carve_items.items() if b not in self.carve_blocks},
            "apart_rows": self.apart_rows,
            **self.pages.carve_extras(),
        }

    def _run_carver(self, cfg: dict[str, Any], ranges: list[tuple[int, int]]) -> dict[str, Any]:
        """Run the row engine over ``ranges`` in a worker thread, reporting progress meanwhile."""
        assert self.pages is not None
        carver = core.RowCarver(cfg)
        read = None if "files" in cfg else self.pages.read_range
        oracle = _Oracle(self)
        result: list[dict[str, Any]] = []
        errors: list[BaseException] = []
        done_before = self.stats.blocks_done

        def work(**targets: Any) -> None:
            try:
                result.append(carver.run(ranges, self.opts.jobs, read=read, oracle=oracle, **targets))
            except BaseException as exc:  # handed to the caller
                errors.append(exc)

        with self.sink.carve_targets() as targets:
            th = threading.Thread(target=work, kwargs=targets, name="salvage-carve", daemon=True)
            th.start()
            try:
                while th.is_alive():
                    th.join(0.25)
                    blocks, _, _ = carver.progress()
                    with self.stats.lock:
                        self.stats.blocks_done = done_before + blocks
                    if self.on_progress is not None:
                        self.on_progress(self.stats)
            except KeyboardInterrupt:
                carver.cancel()
                th.join()
                raise
            if errors:
                raise errors[0]
        return result[0]

    def _index_evidence(self, blocks: list[int], beyond: int | None) -> list[dict[str, Any]]:
        """The TIDs the table's btree indexes hold into ``blocks`` (and at or past ``beyond``), from their files."""
        assert isinstance(self.pages, LocalPages)
        return core.index_evidence(
            {"indexes": self.pages.index_files(), "blocks": blocks, "beyond": beyond, "blcksz": self.table.block_size}
        )

    def _evidence(self, zero_blocks: list[int], page_infos: list[dict[str, Any]]) -> None:
        """All-zero pages, and damaged pages whose line pointer array is destroyed: which rows index entries say
        were there and were not found."""
        pages = {int(p["block"]): p for p in page_infos}
        destroyed = [b for b, p in pages.items() if p.get("lp_array_destroyed") or p.get("copies_at") == 0]
        targets = sorted(set(zero_blocks) | set(destroyed))
        tids: list[dict[str, Any]] = []
        nblocks = self.table.nblocks
        early = self._early_evidence
        if early is not None and set(zero_blocks) <= early.blocks:
            # read while SQL copied the rows; only the destroyed pages the carve found are left to look up
            try:
                tids = early.result()
                if destroyed:
                    tids += self._index_evidence(destroyed, None)
            except (OSError, ValueError) as exc:
                self.notes.append(f"index evidence unavailable: {exc}")
        elif isinstance(self.pages, LocalPages) and self.table.indexes:
            try:
                tids = self._index_evidence(targets, nblocks)
            except (OSError, ValueError) as exc:
                self.notes.append(f"index evidence unavailable: {exc}")
        beyond: dict[int, int] = {}
        for e in tids:
            if int(e["block"]) >= nblocks:
                beyond[int(e["block"])] = beyond.get(int(e["block"]), 0) + 1
        if beyond:
            # On a running server the table may have grown since it was sized (rows the snapshot does not see):
            # index entries into blocks it has now are concurrent change, not a cut file.
            grown = self._size_now()
            if grown is not None and grown > nblocks:
                inside = [b for b in beyond if b < grown]
                for b in inside:
                    del beyond[b]
                if inside:
                    self.notes.append(
                        f"the table grew from {nblocks} to {grown} blocks while it was saved: index entries into "
                        f"{len(inside)} new block(s) are rows the snapshot does not see"
                    )
        for blk, n in sorted(beyond.items()):
            self.lost.append(
                {
                    "block": blk,
                    "lp": None,
                    "reason": f"beyond the end of the table ({nblocks} blocks): its file was cut short or a segment is "
                    "missing; index entries point here",
                    "index_entries": n,
                }
            )
        tids = [e for e in tids if int(e["block"]) < nblocks]
        by_tid: dict[tuple[int, int], list[str]] = {}
        for e in tids:
            by_tid.setdefault((int(e["block"]), int(e["lp"])), []).append(e["index"])
        for b in destroyed:
            claimed = set(pages[b].get("claimed_lps", []))
            missing = sorted(lp for (blk, lp) in by_tid if blk == b and lp not in claimed)
            # tuples found without a line pointer number (older versions of updated rows) account for some
            spare = int(pages[b].get("unnumbered", 0))
            if spare >= len(missing):
                missing = []
            note = f" ({spare} tuples found without a line pointer number may be among these)" if spare else ""
            if not tids:
                self.lost.append(
                    {
                        "block": b,
                        "lp": None,
                        "reason": "the line pointer array is destroyed: rows found in the page body were saved, "
                        "rows whose bytes are damaged too cannot be counted (no index evidence)",
                        "certain": False,
                    }
                )
            for lp in missing:
                self.lost.append(
                    {
                        "block": b,
                        "lp": lp,
                        "reason": "index entries point here but no tuple was found (it may have been dead already)"
                        + note,
                        "evidence": sorted(set(by_tid[(b, lp)])),
                        "certain": False,
                    }
                )
        # An all-zero page is lost only when something says rows were there: relation extension leaves empty
        # pages in healthy tables.
        evidence_on = {blk for blk, _ in by_tid}
        quiet = [b for b in zero_blocks if b not in evidence_on]
        if quiet:
            self.notes.append(
                f"{len(quiet)} all-zero page(s) with no index entry pointing into them (relation extension leaves "
                f"such pages; a zeroed page of a table without indexes cannot be told apart): blocks "
                + ", ".join(str(b) for b in quiet[:20])
                + (" …" if len(quiet) > 20 else "")
            )
        # On a running server a page may be all zeroes in its file only because the server has not written it out
        # yet: SQL read it from the server's buffers (in the shared snapshot). Such a page is no loss.
        unflushed = {b for b in zero_blocks if b in evidence_on and not self.opts.carve_all and self._rows_in_block(b)}
        if unflushed:
            self.notes.append(
                f"{len(unflushed)} page(s) all zeroes in the file but holding rows in the server's buffers (not "
                "written out yet): read through SQL"
            )
        # Pages the table was extended by and filled after the snapshot: the server holds them, their rows are not
        # in the snapshot, and the index points at those rows already.
        # (--carve-all took a CHECKPOINT after the snapshot: a page the server holds that the file lacks then may
        # be damage under a clean buffer, and its rows were not carved.)
        later = set()
        if not self.opts.carve_all:
            later = self._not_zero_in_server([b for b in zero_blocks if b in evidence_on and b not in unflushed])
        if later:
            self.notes.append(
                f"{len(later)} page(s) all zeroes in the file, filled in the server's buffers with rows the shared "
                "snapshot does not see (added after it was taken): not lost: "
                + ", ".join(str(b) for b in sorted(later)[:20])
                + (" …" if len(later) > 20 else "")
            )
            unflushed |= later
        for b in zero_blocks:
            if b in unflushed:
                continue
            if b in evidence_on:
                n = sum(1 for blk, _ in by_tid if blk == b)
                self.lost.append(
                    {
                        "block": b,
                        "lp": None,
                        "reason": f"the page is all zeroes; index entries point at {n} row(s) on it",
                    }
                )
            for (blk, lp), names in sorted(by_tid.items()):
                if blk == b:
                    self.lost.append(
                        {
                            "block": b,
                            "lp": lp,
                            "reason": "on an all-zero page; index entries point here "
                            "(the row may have been dead already)",
                            "evidence": sorted(set(names)),
                            "certain": False,
                        }
                    )

    def _size_now(self) -> int | None:
        """The table's length in blocks as the server has it now (None when it cannot say)."""

        def fn(conn: Connection[tuple[Any, ...]]) -> int | None:
            row = conn.execute(db.load_sql("salvage_size"), {"oid": self.table.oid}).fetchone()
            return int(row[0]) // self.table.block_size if row and row[0] is not None else None

        try:
            return self.main.run(fn)
        except (SqlFailed, BackendLost):
            return None

    def _rows_in_block(self, block: int, shared: bool = True) -> bool:
        """Whether the server returns rows from ``block`` (a TID range scan of one page), in the shared snapshot or,
        with ``shared=False``, as of now."""
        query = db.sql.SQL("SELECT EXISTS (SELECT FROM {} WHERE ctid >= {}::tid AND ctid < {}::tid)").format(
            self.table.ident(), db.sql.Literal(f"({block},0)"), db.sql.Literal(f"({block + 1},0)")
        )

        def fn(conn: Connection[tuple[Any, ...]]) -> bool:
            with reading(conn, self.snapshot if shared else None):
                row = conn.execute(query).fetchone()
            return bool(row and row[0])

        try:
            return self.main.run(fn)
        except (SqlFailed, BackendLost):
            return False

    # ------------------------------------------------------------------ report

    def _report(self, started: float, already: bool = False) -> dict[str, Any]:
        t = self.table
        if already:
            return {
                "table": t.display,
                "complete": True,
                "already_complete": True,
                "outputs": self.sink.finish(),
                "seconds": round(time.time() - started, 3),
            }
        classes = getattr(self, "classes", {})
        everything = sorted(self.lost, key=lambda x: (x["block"], x["lp"] or 0))
        for item in everything:
            item["ctid"] = f"({item['block']},{item['lp'] if item['lp'] is not None else '?'})"
        lost = [x for x in everything if x.get("certain", True)]
        maybe = [x for x in everything if not x.get("certain", True)]
        rows_sql = self.stats.rows_sql
        snap = getattr(self, "snapshot", None)
        if snap is not None and snap.renewed:
            self.notes.append(
                f"the shared snapshot was lost {snap.renewed} time(s) with a crashed backend: rows read after that "
                "come from a later moment (a row changed meanwhile may be missing or saved twice)"
            )
        report = {
            "table": t.display,
            "oid": t.oid,
            "file": t.filepath,
            "pages_from": self.pages.kind if self.pages is not None else "none",
            "output": self.sink.describe,
            "outputs": getattr(self, "outputs", {}),
            "blocks": {
                "total": t.nblocks,
                "healthy": t.nblocks - len(classes),
                "zero": sum(1 for c in classes.values() if c["state"] == "zero"),
                "damaged": sum(1 for c in classes.values() if c["state"] == "damaged"),
                "missing": sum(1 for c in classes.values() if c["state"] == "missing"),
                "carved": self.carved.get("pages", 0),
            },
            "damaged_blocks": [
                {"block": b, "codes": c["codes"], "message": c["message"]}
                for b, c in sorted(classes.items())
                if c["state"] == "damaged"
            ][:1000],
            "rows": {
                "sql": rows_sql,
                "carved": self.carved.get("rows", 0),
                "carved_kept_apart": self.carved.get("uncertain", 0),
                "carved_invisible_skipped": self.carved.get("invisible", 0),
                "carved_from_checksum_failures": self.carved.get("checksum_failures", 0),
                "saved": rows_sql + self.carved.get("rows", 0),
            },
            "lost": lost,
            "lost_count": len(lost),
            "maybe_lost": maybe,
            "maybe_lost_count": len(maybe),
            "failures": [f.to_json() for f in self.failures],
            "crashes": self.stats.crashes,
            "notes": self.notes,
            "seconds": {
                "total": round(time.time() - started, 3),
                "classify": round(getattr(self, "classify_seconds", 0.0), 3),
                "sql": round(getattr(self, "sql_seconds", 0.0), 3),
                "carve": round(getattr(self, "carve_seconds", 0.0), 3),
            },
        }
        if self.deleted is not None:
            report["deleted"] = self.deleted
        report["complete"] = not lost and self.carved.get("uncertain", 0) == 0
        return report


def salvage(opts: SalvageOptions, on_progress: Callable[[Stats], None] | None = None) -> dict[str, Any]:
    s = Salvage(opts, on_progress)
    try:
        return s.run()
    finally:
        with contextlib.suppress(Exception):
            s.main.close()
        with contextlib.suppress(Exception):
            s.snapshot.close()
