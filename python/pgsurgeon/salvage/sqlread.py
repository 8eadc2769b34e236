"""Phase 2 of a salvage: the healthy blocks read through SQL in TID-range chunks (``ctid >= '(a,0)' AND ctid <
'(b,0)'``, a TID range scan), in parallel. A chunk that fails is split (at the block an error names, else in
halves) down to single blocks; a block that fails is read tuple by tuple (``ctid = '(b,i)'``). A chunk whose read
crashes the backend is retried alone once, then carved."""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon.salvage.ranges import _merge, plan_chunks
from pgsurgeon.session import BackendLost, Session, SqlFailed

if TYPE_CHECKING:
    from pgsurgeon.salvage.engine import Salvage

_INVALID_PAGE = re.compile(r"invalid page in block (\d+) of relation \"?([^\s\"]+)")
MAX_TUPLES = 291  # MaxHeapTuplesPerPage for 8 KB pages


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


def read_sound(s: Salvage, skip: list[tuple[int, int]], checksum_only: set[int]) -> None:
    """Read every block not skipped nor already done through SQL (the blocks in ``checksum_only`` alone)."""
    nblocks = s.table.rel.nblocks
    done = s.sink.done_ranges()
    chunk = chunk_blocks(s)
    # blocks SQL already failed on while the pages were checked (they are carved or lost, not read again)
    skip = _merge(skip + [(f.first, f.end) for f in s.failures])
    work = plan_chunks(nblocks, skip, done, chunk)
    done_set = _merge(done)
    work += [(b, b + 1) for b in sorted(checksum_only) if not any(x <= b < y for x, y in done_set)]
    with s.stats.lock:
        # the SQL phase and the carve add what they do as they go
        s.stats.blocks_done = sum(max(0, min(b, nblocks) - a) for a, b in _merge(done))
    s.sql_seconds = 0.0
    s0 = time.monotonic()
    work = _copy_all(s, work, set(checksum_only))
    run_sql(s, work)
    s.sql_seconds = time.monotonic() - s0


def chunk_blocks(s: Salvage) -> int:
    nblocks = s.table.rel.nblocks
    return s.opts.chunk_blocks or max(16, min(2048, nblocks // max(1, s.opts.jobs * 8) or 16))


def _copy_all(s: Salvage, work: list[tuple[int, int]], alone: set[int]) -> list[tuple[int, int]]:
    """A new table in the same database: the sound ranges copied inside the server in one transaction, like
    CREATE TABLE AS (blocks to try alone, whose pages failed only their checksum, stay out of it). Returns the
    work left for the range-by-range path: everything when this does not apply or the server refuses."""
    copy_all = getattr(s.sink, "copy_all", None)
    bulk = _merge([(a, b) for a, b in work if not (b - a == 1 and a in alone)])
    if copy_all is None or not bulk:
        return work
    dest = s.sink.dest_session()
    if dest is None:
        return work
    try:
        rows = copy_all(dest, bulk)
    except (SqlFailed, BackendLost) as exc:
        s.notes.append(f"one-transaction copy refused ({exc}): copied range by range")
        return work
    finally:
        dest.close()
    if rows is None:
        return work
    s.stats.add(sum(b - a for a, b in bulk), int(rows))
    return [(a, b) for a, b in work if b - a == 1 and a in alone]


def run_sql(
    s: Salvage,
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
    nworkers = max(1, s.opts.jobs)

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
            src = s.session()
            dest = s.sink.dest_session()
            while not s.stop.is_set():
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
                    _read_range(s, src, dest, a, b, push, suspects, serial=False)
                finally:
                    finish_one()
        except BaseException as exc:  # handed to the caller
            errors.append(exc)
            s.stop.set()
        finally:
            for sess in (src, dest):
                if sess is not None:
                    sess.close()

    threads = [threading.Thread(target=worker, name=f"salvage-{i}", daemon=True) for i in range(nworkers)]
    if feed is not None:

        def producer() -> None:
            try:
                feed(push)
            except BaseException as exc:  # handed to the caller
                errors.append(exc)
                s.stop.set()
            finally:
                finish_one()

        threads.append(threading.Thread(target=producer, name="salvage-classify", daemon=True))
    for th in threads:
        th.start()
    try:
        while any(th.is_alive() for th in threads):
            for th in threads:
                th.join(0.25)
            if s.on_progress is not None:
                s.on_progress(s.stats)
    except KeyboardInterrupt:
        s.stop.set()
        for th in threads:
            th.join()
        raise
    if errors:
        raise errors[0]
    _retry_suspects(s, suspects)


def _retry_suspects(s: Salvage, suspects: list[tuple[int, int, str]]) -> None:
    # Ranges whose read lost the backend: alone now, so a crash there cannot be another range's fault.
    if suspects:
        src = s.session()
        dest = s.sink.dest_session()
        try:
            serial: list[tuple[int, int]] = [(a, b) for a, b, _ in suspects]
            while serial:
                a, b = serial.pop()
                _read_range(s, src, dest, a, b, serial.append, None, serial=True)
        finally:
            src.close()
            if dest is not None:
                dest.close()


def _read_range(
    s: Salvage,
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
        rows = s.sink.copy_range(src, dest, a, b)
        s.stats.add(b - a, rows)
        return
    except SqlFailed as exc:
        error = exc.message
        m = _INVALID_PAGE.search(error)
        # the block of this table the error names (not of its TOAST table or an index)
        bad = int(m.group(1)) if m and m.group(2) == s.table.rel.filepath else None
        if bad is not None and a <= bad < b:
            # the error names the block: read around it, carve it
            with s.lock:
                s.failures.append(Failure(bad, bad + 1, error, "carved" if s.pages else "lost"))
            _block_failed(s, bad, error)
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
        _read_tuples(s, src, dest, a, error)
        return
    except BackendLost as exc:
        with s.lock:
            s.stats.crashes += 1
        if not serial and suspects is not None:
            with s.lock:
                suspects.append((a, b, str(exc)))
            return
        # It crashed alone: carve the range when we can, else narrow it down.
        if s.pages is not None:
            with s.lock:
                s.failures.append(Failure(a, b, f"backend crashed: {exc}", "carved"))
                s.carve_blocks.update(range(a, b))
            s.stats.add(b - a, 0)
            return
        if s.stats.crashes >= s.opts.max_crashes or b - a == 1:
            with s.lock:
                s.failures.append(Failure(a, b, f"backend crashed: {exc}", "lost"))
                for blk in range(a, b):
                    s.lost.append({"block": blk, "lp": None, "reason": f"reading it crashed the backend: {exc}"})
            s.stats.add(b - a, 0)
            return
        mid = (a + b) // 2
        push((a, mid))
        push((mid, b))


def _block_failed(s: Salvage, block: int, error: str) -> None:
    with s.lock:
        if s.pages is not None:
            s.carve_blocks.add(block)
        else:
            s.lost.append({"block": block, "lp": None, "reason": f"SQL read failed: {error}"})
    s.stats.add(1, 0)


def _max_lp(s: Salvage, block: int) -> int:
    if s.pages is None:
        return MAX_TUPLES
    page = s.pages.read_pages([block])
    lower = int.from_bytes(page[12:14], "little")
    n = (lower - 24) // 4 if 24 <= lower <= len(page) else MAX_TUPLES
    return max(0, min(n, MAX_TUPLES))


def _read_tuples(s: Salvage, src: Session, dest: Session | None, block: int, error: str) -> None:
    """One block that SQL cannot read as a whole: tuple by tuple; what still fails is carved or lost."""
    n = _max_lp(s, block)
    outcome = s.sink.copy_tuples(src, dest, block, list(range(1, n + 1)))
    with s.lock:
        s.stats.rows_tuples += outcome.rows
        s.stats.crashes += len(outcome.crashed)
        action = "carved" if s.pages is not None else "lost"
        s.failures.append(Failure(block, block + 1, error, f"read tuple by tuple ({outcome.rows} rows)"))
        for lp, err in sorted(outcome.failed.items()):
            # "no such tuple" is not an error: only real failures land here
            s.failures.append(Failure(block, block + 1, err, action, lp=lp))
            if s.pages is not None:
                s.carve_items.setdefault(block, set()).add(lp)
            else:
                s.lost.append({"block": block, "lp": lp, "reason": f"SQL read failed: {err}"})
    s.stats.add(1, outcome.rows)
