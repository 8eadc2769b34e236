"""Phase 4 of a salvage: accounting for what is lost. Line pointers that lead nowhere, all-zero pages and blocks
past the end of the table, with the index entries that point there (read from the btree index files) as evidence;
a page all zeroes in its file only because the server has not written it out yet is no loss."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core, loss
from pgsurgeon.datadir import segments_of
from pgsurgeon.salvage.pages import LocalPages
from pgsurgeon.salvage.server_view import not_zero_in_server, rows_in_block, size_now

if TYPE_CHECKING:
    from pgsurgeon.boundary import IndexTid, PageInfo
    from pgsurgeon.salvage.engine import Salvage


class Background:
    """A call run in a thread of its own; ``result()`` waits for it and raises what it raised."""

    def __init__(self, blocks: set[int], fn: Callable[[], list[IndexTid]]) -> None:
        self.blocks = blocks
        self._out: list[list[IndexTid]] = []
        self._err: list[BaseException] = []

        def run() -> None:
            try:
                self._out.append(fn())
            except BaseException as exc:  # handed to result()
                self._err.append(exc)

        self._thread = threading.Thread(target=run, name="salvage-evidence", daemon=True)
        self._thread.start()

    def result(self) -> list[IndexTid]:
        self._thread.join()
        if self._err:
            raise self._err[0]
        return self._out[0]


def index_evidence(s: Salvage, blocks: list[int], beyond: int | None) -> list[IndexTid]:
    """The TIDs the table's btree indexes hold into ``blocks`` (and at or past ``beyond``), from their files."""
    assert isinstance(s.pages, LocalPages)
    return core.index_evidence(
        {
            "indexes": s.pages.index_files(),
            "blocks": blocks,
            "beyond": beyond,
            "blcksz": s.table.rel.block_size,
            "jobs": s.opts.jobs,
        }
    )


def evidence(s: Salvage, zero_blocks: list[int], page_infos: list[PageInfo]) -> None:
    """All-zero pages, and damaged pages whose line pointer array is destroyed: which rows index entries say
    were there and were not found."""
    pages = {int(p["block"]): p for p in page_infos}
    destroyed = [b for b, p in pages.items() if p.get("lp_array_destroyed") or p.get("copies_at") == 0]
    targets = sorted(set(zero_blocks) | set(destroyed))
    tids: list[IndexTid] = []
    nblocks = s.table.rel.nblocks
    early = s.early_evidence
    if early is not None and set(zero_blocks) <= early.blocks:
        # read while SQL copied the rows; only the destroyed pages the carve found are left to look up
        try:
            tids = early.result()
            if destroyed:
                tids += index_evidence(s, destroyed, None)
        except (OSError, ValueError) as exc:
            s.notes.append(f"index evidence unavailable: {exc}")
    elif isinstance(s.pages, LocalPages) and s.table.indexes:
        try:
            tids = index_evidence(s, targets, nblocks)
        except (OSError, ValueError) as exc:
            s.notes.append(f"index evidence unavailable: {exc}")
    _beyond_end(s, tids)
    tids = [e for e in tids if int(e["block"]) < nblocks]
    by_tid: dict[tuple[int, int], list[str]] = {}
    for e in tids:
        by_tid.setdefault((int(e["block"]), int(e["lp"])), []).append(e["index"])
    counted = _destroyed_pages(s, pages, destroyed, bool(tids), by_tid)
    zero_lost = _zero_pages(s, zero_blocks, by_tid)
    _account(s, pages, sorted(set(counted) | set(zero_lost)), by_tid)
    for item in s.lost:
        if item.get("account") and item["block"] in zero_lost:
            item["zero"] = True


def _beyond_end(s: Salvage, tids: list[IndexTid]) -> None:
    """Index entries past the table's end: a file cut short or a missing segment, unless the table grew since."""
    nblocks = s.table.rel.nblocks
    beyond: dict[int, int] = {}
    for e in tids:
        if int(e["block"]) >= nblocks:
            beyond[int(e["block"])] = beyond.get(int(e["block"]), 0) + 1
    if beyond:
        # On a running server the table may have grown since it was sized (rows the snapshot does not see):
        # index entries into blocks it has now are concurrent change, not a cut file.
        grown = size_now(s)
        if grown is not None and grown > nblocks:
            inside = [b for b in beyond if b < grown]
            for b in inside:
                del beyond[b]
            if inside:
                s.notes.append(
                    f"the table grew from {nblocks} to {grown} blocks while it was saved: index entries into "
                    f"{len(inside)} new block(s) are rows the snapshot does not see"
                )
    for blk, n in sorted(beyond.items()):
        s.lost.append(
            {
                "block": blk,
                "lp": None,
                "reason": f"beyond the end of the table ({nblocks} blocks): its file was cut short or a segment is "
                "missing; index entries point here",
                "index_entries": n,
            }
        )


def _destroyed_pages(
    s: Salvage,
    pages: dict[int, PageInfo],
    destroyed: list[int],
    any_tids: bool,
    by_tid: dict[tuple[int, int], list[str]],
) -> list[int]:
    """Pages whose line pointer array is destroyed and whose rows the account must count: those where index
    entries name line pointers no carved tuple claimed (``any_tids`` False: no index evidence at all)."""
    out: list[int] = []
    for b in destroyed:
        claimed = set(pages[b].get("claimed_lps", []))
        missing = sorted(lp for (blk, lp) in by_tid if blk == b and lp not in claimed)
        # tuples found without a line pointer number (older versions of updated rows) account for some
        spare = int(pages[b].get("unnumbered", 0))
        if spare:
            s.notes.append(
                f"block {b}: {spare} tuple(s) found without a line pointer number may be among the rows lost"
            )
        if spare >= len(missing):
            missing = []
        if not any_tids:
            s.lost.append(
                {
                    "block": b,
                    "lp": None,
                    "reason": "the line pointer array is destroyed: rows found in the page body were saved, "
                    "rows whose bytes are damaged too cannot be counted (no index evidence)",
                    "certain": False,
                }
            )
        if missing:
            out.append(b)
    return out


def _zero_pages(s: Salvage, zero_blocks: list[int], by_tid: dict[tuple[int, int], list[str]]) -> list[int]:
    """The all-zero pages whose rows are lost: those index entries point into, unless the server holds them."""
    # An all-zero page is lost only when something says rows were there: relation extension leaves empty
    # pages in healthy tables.
    evidence_on = {blk for blk, _ in by_tid}
    quiet = [b for b in zero_blocks if b not in evidence_on]
    if quiet:
        s.notes.append(
            f"{len(quiet)} all-zero page(s) with no index entry pointing into them (relation extension leaves "
            f"such pages; a zeroed page of a table without indexes cannot be told apart): blocks "
            + ", ".join(str(b) for b in quiet[:20])
            + (" …" if len(quiet) > 20 else "")
        )
    # On a running server a page may be all zeroes in its file only because the server has not written it out
    # yet: SQL read it from the server's buffers (in the shared snapshot). Such a page is no loss.
    unflushed = {b for b in zero_blocks if b in evidence_on and not s.opts.carve_all and rows_in_block(s, b)}
    if unflushed:
        s.notes.append(
            f"{len(unflushed)} page(s) all zeroes in the file but holding rows in the server's buffers (not "
            "written out yet): read through SQL"
        )
    # Pages the table was extended by and filled after the snapshot: the server holds them, their rows are not
    # in the snapshot, and the index points at those rows already.
    # (--carve-all took a CHECKPOINT after the snapshot: a page the server holds that the file lacks then may
    # be damage under a clean buffer, and its rows were not carved.)
    later = set()
    if not s.opts.carve_all:
        later = not_zero_in_server(s, [b for b in zero_blocks if b in evidence_on and b not in unflushed])
    if later:
        s.notes.append(
            f"{len(later)} page(s) all zeroes in the file, filled in the server's buffers with rows the shared "
            "snapshot does not see (added after it was taken): not lost: "
            + ", ".join(str(b) for b in sorted(later)[:20])
            + (" …" if len(later) > 20 else "")
        )
        unflushed |= later
    return [b for b in zero_blocks if b in evidence_on and b not in unflushed]


def _account(
    s: Salvage, pages: dict[int, PageInfo], blocks: list[int], by_tid: dict[tuple[int, int], list[str]]
) -> None:
    """The loss account of the pages that lost rows (scan, diagnose and inspect count them the same way): each
    row certainly or possibly gone, named by its key; rows known dead are no loss."""
    recovered = {(b, int(lp)) for b in blocks if b in pages for lp in pages[b].get("claimed_lps", [])}
    losses: list[loss.PageLoss] = []
    if isinstance(s.pages, LocalPages) and blocks:
        try:
            vm = segments_of(Path(str(s.pages.base) + "_vm"))
            losses = loss.evidence_for(
                s.pages.index_files(), s.table.key_desc, blocks, vm, s.table.rel.block_size, recovered
            )
        except (OSError, ValueError) as exc:
            s.notes.append(f"the loss account could not read the indexes again: {exc}")
    if not losses:  # no account: every row an index names, possibly gone
        losses = [loss.PageLoss(b, None) for b in blocks]
        for (blk, lp), names in sorted(by_tid.items()):
            if blk in blocks and (blk, lp) not in recovered:
                losses[blocks.index(blk)].possible.append(loss.LostRow(blk, lp, None, tuple(sorted(set(names)))))
    s.page_losses = losses
    for page in losses:
        for rows, certain in ((page.certain, True), (page.possible, False)):
            for r in rows:
                s.lost.append(
                    {
                        "block": r.block,
                        "lp": r.lp,
                        "reason": "certainly gone" if certain else "possibly gone (it may have been dead already)",
                        "evidence": list(r.indexes),
                        "key": r.key,
                        "certain": certain,
                        "account": True,
                    }
                )
