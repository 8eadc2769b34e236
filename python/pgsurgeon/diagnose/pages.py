"""Reading pages through the server: pageinspect's ``get_raw_page`` a batch of blocks per statement, the ranges
the server refuses bisected down to the refused blocks, each page checked in the core."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import TID_CHECKED_AMS
from pgsurgeon.datadir import read_block
from pgsurgeon.diagnose import amcheck
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import CROSS_PAGE_KINDS, MAX_CROSS_FINDINGS, Checked, Crossref, NotChecked
from pgsurgeon.diagnose.server import Refused, run_locked, runner
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.session import ServerError, Session

if TYPE_CHECKING:
    from pgsurgeon.boundary import Finding  # ~14 ms of TypedDicts to import, for annotations only


def raw_ranges(
    d: Diagnosis, session: Session, rel: Checked, first: int, last: int, fork: str = "main"
) -> Iterator[tuple[int, bytes | ServerError]]:
    """Blocks first..last as the buffer manager returns them: (first block of a run, its pages one after
    another, in binary), or (block, the error the server raises for it).

    A batch is one bytea (string_agg) so no per-page row crosses the connection. A failing range is bisected;
    an error that names its block splits the range around that block.
    """
    query = db.sql.SQL(
        "SELECT string_agg({fn}(%(rel)s::oid::regclass::text, %(fork)s, b), ''::bytea ORDER BY b) "
        "FROM generate_series(%(a)s::bigint, %(b)s::bigint) b"
    ).format(fn=d.fn("pageinspect", "get_raw_page"))
    stack = [(first, last)]
    while stack:
        a, b = stack.pop()
        if a > b:
            continue
        if rel.locked is not None:
            raise NotChecked(rel.locked)
        params = {"rel": rel.relation.oid, "fork": fork, "a": a, "b": b}
        rows = run_locked(session, query, params, binary=True, again=True)
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


def server_page(d: Diagnosis, rel: Checked, blk: int, fork: str = "main") -> bytes | ServerError | None:
    """Block ``blk`` as the server has it now, the error it raises for it, or None when it gives no answer."""
    try:
        for _start, got in raw_ranges(d, d.main, rel, blk, blk, fork):
            return got
    except NotChecked:
        return None
    return None


def one_page(d: Diagnosis, rel: Checked, blk: int) -> bytes | None:
    """Block ``blk`` as the server has it now, or None when it refuses it or gives no answer."""
    got = server_page(d, rel, blk)
    return got if isinstance(got, bytes) else None


def check_batch(d: Diagnosis, rel: Checked, data: bytes, first: int, nblocks: int | None = None) -> core.PageBatch:
    """The core's checks of pages the server handed over (no checksum check: the server verified them);
    ``nblocks``: the relation's length, for the block numbers an index page names."""
    # the index kinds whose entries carry heap TIDs the core walks (btree, GiST and SP-GiST leaves, hash bucket and
    # overflow pages, GIN postings and pending tuples) are checked against their table's line pointers
    heap = d.heap_of(rel) if rel.relation.amname in TID_CHECKED_AMS else None
    return core.check_pages(
        data,
        first,
        kind=rel.kind,
        checksums=False,
        blcksz=rel.relation.block_size,
        record=rel.lines if rel.relation.is_heap else None,
        against=heap.lines if heap is not None else None,
        nblocks=nblocks,
    )


def _key(f: Finding) -> tuple[str, int | None, int | None]:
    return str(f["code"]), f["block"], f["item"]


def past_the_end(d: Diagnosis, rel: Checked, data: bytes, first: int, seen: list[Finding]) -> list[Finding]:
    """The findings of an index's pages that only their length makes: a block named past its end (a link, a
    downlink, a posting tree root), those of ``seen`` (the same pages judged without it) aside."""
    bounded = check_batch(d, rel, data, first, rel.relation.nblocks)
    known = {_key(f) for f in seen}
    return [f for f in bounded.findings if _key(f) not in known]


def confirm_past_the_end(d: Diagnosis, rel: Checked, found: list[Finding]) -> list[dict[str, Any]]:
    """Of ``found``, those a fresh copy of their page shows again against the index's length now (it grows while
    it is read: a page read late may name a block added after its length was taken)."""
    kept: list[dict[str, Any]] = []
    for blk in sorted({int(f["block"]) for f in found if f["block"] is not None}):
        page = one_page(d, rel, blk)
        # the length taken after the page: a block is added to the index before any page links to it
        nblocks = fresh_nblocks(d, rel)
        if page is None or nblocks is None:
            continue
        again = {_key(f) for f in check_batch(d, rel, page, blk, nblocks).findings}
        kept.extend(
            fmod.from_core(f, rel.relation, source=fmod.SOURCE_PAGE)
            for f in found
            if f["block"] == blk and _key(f) in again
        )
    return kept


def raw_task(d: Diagnosis, session: Session, task: tuple[Checked, int, int]) -> dict[str, Any]:
    rel, a, b = task
    out: list[dict[str, Any]] = []
    refused: dict[int, ServerError] = {}
    suspect: set[int] = set()
    zero: set[int] = set()
    candidates: list[Crossref] = []
    bounded: list[Finding] = []
    pages = 0
    try:
        for start, got in raw_ranges(d, session, rel, a, b):
            if isinstance(got, ServerError):
                refused[start] = got
                out.extend(refused_findings(d, rel, start, got))
                suspect.add(start)
                continue
            batch = check_batch(d, rel, got, start)
            if rel.cross is not None:
                rel.cross.add(got, start)
                bounded.extend(past_the_end(d, rel, got, start, batch.findings))
            pages += batch.pages
            out.extend(fmod.from_core(f, rel.relation, source=fmod.SOURCE_PAGE) for f in batch.findings)
            suspect.update(batch.suspect)
            zero.update(batch.zero)
            candidates.extend(Crossref(*c) for c in batch.candidates[: 10 * MAX_CROSS_FINDINGS])
    except NotChecked as why:
        rel.unchecked.update(range(a, b + 1))
        out.append(
            fmod.make(
                "server.timeout",
                rel.relation,
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
        "bounded": bounded,
    }


def refused_findings(
    d: Diagnosis, rel: Checked, blk: int, err: ServerError, decoded: list[dict[str, Any]] | None = None
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
            rel.relation,
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
    if d.pgdata is None or d.geometry is None or is_read:
        return out
    try:
        block = read_block(d.pgdata / rel.path, blk, d.geometry)
    except PgSurgeonError as exc:
        out[0]["message"] += f" (the file could not be read here: {exc.message})"
        return out
    if len(block.data) < 24:
        return out
    kind = "btree_meta" if rel.kind == "btree" and blk == 0 else rel.kind
    report = core.inspect_page(block.data, blk, checksums=d.server.checksums, kind=kind)
    out.extend(
        fmod.from_core(f, rel.relation, source=fmod.SOURCE_FILE, observed_error=err.observed)
        for f in report["findings"]
    )
    return out


def raw_phase(d: Diagnosis, rels: list[Checked], spans: dict[int, list[tuple[int, int]]] | None = None) -> None:
    """Read the pages of ``rels`` through the server and check them in the core, raw_batch blocks a statement,
    in parallel; ``spans``: only these block ranges of a relation (by oid)."""
    tasks: list[tuple[Checked, int, int]] = []
    step = d.req.raw_batch
    for rel in rels:
        if rel.relation.is_heap and rel.lines is None:
            rel.lines = core.LineMap(rel.relation.nblocks)
        if spans is None and rel.kind in CROSS_PAGE_KINDS and rel.relation.nblocks > 0:
            rel.cross = core.CrossPages(rel.kind, rel.relation.block_size)
        for first, last in [(0, rel.relation.nblocks - 1)] if spans is None else spans.get(rel.relation.oid, []):
            tasks.extend((rel, a, min(a + step, last + 1) - 1) for a in range(first, last + 1, step))
    # heaps first: their line pointers are what the index batches compare their entries with
    heap_tasks = [t for t in tasks if t[0].relation.is_heap]
    other_tasks = [t for t in tasks if not t[0].relation.is_heap]
    tasks = heap_tasks + other_tasks
    results = d.parallel(partial(raw_task, d), heap_tasks) + d.parallel(partial(raw_task, d), other_tasks)
    for (rel, _a, _b), res in zip(tasks, results, strict=True):
        d.add(res["findings"])
        rel.refused.update(res["refused"])
        rel.suspect.update(res["suspect"])
        rel.zero.update(res["zero"])
        rel.pages_read += res["pages"]
        rel.candidates.extend(res["candidates"])
    for rel in rels:
        if rel.cross is not None:
            found = [f for (r, _a, _b), res in zip(tasks, results, strict=True) if r is rel for f in res["bounded"]]
            d.add(confirm_past_the_end(d, rel, found))
            d.add(cross_findings(d, rel, rel.cross))
            rel.cross = None


def cross_findings(d: Diagnosis, rel: Checked, cross: core.CrossPages) -> list[dict[str, Any]]:
    """The checks across an index's pages, read through the server. Its pages were copied at different moments
    while sessions may split, add or delete them: a finding is kept only when a second read of the whole index, at
    its length then, finds it again (same code, same block). An index with refused or unread blocks is not judged
    (the links into those blocks were not seen)."""
    if rel.refused or rel.unchecked or rel.locked is not None:
        return []
    first = cross.finish(rel.relation.nblocks)
    if not first:
        return []
    nblocks = fresh_nblocks(d, rel)
    nblocks = rel.relation.nblocks if nblocks is None else nblocks
    again = core.CrossPages(str(rel.kind), rel.relation.block_size)
    digest = _read_whole(d, rel, nblocks, again)
    # a busy index changes between any two reads (a page split, the pending list filling): its pages then disagree
    # about counts and lengths with nothing damaged, so it is judged only when a third read gives the same bytes
    if digest is None or digest != _read_whole(d, rel, nblocks, None):
        return []
    seen = {(f["code"], f["block"]) for f in again.finish(nblocks)}
    return [fmod.from_core(f, rel.relation, source=fmod.SOURCE_CROSS) for f in first if (f["code"], f["block"]) in seen]


def _read_whole(d: Diagnosis, rel: Checked, nblocks: int, into: core.CrossPages | None) -> str | None:
    """The sha256 of the index's first ``nblocks`` pages read through the server now (fed to ``into``); None when a
    page is refused or cannot be read."""
    h = hashlib.sha256()
    try:
        for start, got in raw_ranges(d, d.main, rel, 0, nblocks - 1):
            if isinstance(got, ServerError):
                return None
            h.update(got)
            if into is not None:
                into.add(got, start)
    except NotChecked:
        return None
    return h.hexdigest()


def fresh_nblocks(d: Diagnosis, rel: Checked) -> int | None:
    """The relation's length now (it grows and shrinks while it is read); None when the server gives none."""
    try:
        size = catalog.relation_size(runner(d.main), rel.relation.oid)
    except Refused:
        return None
    return None if size is None else size // rel.relation.block_size
