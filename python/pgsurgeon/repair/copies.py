"""Good copies of damaged pages: where they come from (a page source), how each is checked before it may replace a
damaged page, and what the plan says of it.

A page source hands out one page of a relation fork, read-only; the standby (standby.py) is one. Other sources (a
backup recovered up to the damaged cluster's position) plug in here: a source implements ``fetch`` (main-fork pages
one at a time), and may implement ``fetch_batch`` (many pages of any fork a call, see :class:`BatchSource`). A page
kind is a name ``core.inspect_page`` knows. A copy replaces a page only after the
core's page checks, its checksum and its LSN say it is at least as new as the damaged page; else the page keeps the
plan it would have had without a copy, and the plan says why."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pgsurgeon import core
from pgsurgeon.catalog.relation import Relation

if TYPE_CHECKING:
    from pgsurgeon.repair.waltouch import PageRef

SOURCE_STANDBY = "standby"
SOURCE_BACKUP = "backup + WAL"
SOURCE_NONE = "none"

# index access methods whose damaged pages are offered a copy: every kind whose pages the core checks
INDEX_AMS = frozenset({"btree", "gin", "gist", "spgist", "hash", "brin"})
# the visibility map's pages: their header and checksum are checked (the bits against the heap by restore.py). The
# free space map is not copied: it is not WAL-logged (a standby keeps its own approximation, pages carry no LSN to
# order them by), and removing the fork loses nothing (VACUUM rebuilds it from the pages)
MAP_FORKS = {"vm": "map"}


def parse_lsn(text: str | None) -> int | None:
    """``16/B374D848`` as a 64-bit number (None for None or text that is no LSN)."""
    if not text or "/" not in text:
        return None
    hi, _, lo = text.partition("/")
    try:
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        return None


def lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def page_lsn(page: bytes) -> int:
    """pd_lsn: xlogid then xrecoff, each a native (little-endian) uint32 (src/include/storage/bufpage.h)."""
    return (int.from_bytes(page[0:4], "little") << 32) | int.from_bytes(page[4:8], "little")


class PageSource(Protocol):
    name: str
    """``standby``, …: what the plan names as the page's source."""
    replayed: int | None
    """The WAL position the source's pages are exact to (None: not known yet)."""
    short_of: int | None
    """The primary's position when the source could not reach it (a backup whose WAL ends before), else None."""
    accept_older: bool
    follows_primary: bool
    """It receives the primary's WAL as it is written (a standby), so it must stream before the primary stops."""
    """Copies of pages that may have changed after ``replayed`` are taken all the same (--accept-older)."""

    def wait(self, target: int, what: str, timeout: float, say: Callable[[str], None], streaming: bool = False) -> int:
        """Wait until the source's pages are exact to ``target`` (and it follows the primary live, with
        ``streaming``), else refuse."""
        ...

    def fetch(self, rel: Relation, block: int) -> tuple[bytes | None, str]:
        """The page (or None) and how it was read, or why it could not be."""
        ...

    def describe(self) -> str:
        """One line for the plan: which copy, where it stands."""
        ...

    def close(self) -> None:
        """Let go of the source (a session, a scratch directory)."""
        ...


@runtime_checkable
class BatchSource(Protocol):
    """A page source that also hands out many pages of any fork a call (one round trip per batch, bounded memory):
    the planner and the execution use it when the source has it, else ``fetch`` page by page (main fork only)."""

    def fetch_batch(
        self, rel: Relation, blocks: list[int], fork: str = "main"
    ) -> Iterator[tuple[int, bytes | None, str]]:
        """Each block: the page (or None) and how it was read, or why it could not be."""
        ...


@runtime_checkable
class CarriedSource(Protocol):
    """A page source whose copies, exact to its ``replayed`` position, may be shown exact to a later one without
    bringing the source forward (a recovered backup: no WAL record in between touches the pages)."""

    def carry_forward(self, target: int, what: str, pages: list[PageRef], say: Callable[[str], None]) -> bool:
        """True when the copies of ``pages`` are exact to ``target`` as they are (``replayed`` is then ``target``);
        False when the source must be brought forward with ``wait``."""
        ...


def fetch_pages(
    source: PageSource, rel: Relation, blocks: list[int], fork: str = "main"
) -> dict[int, tuple[bytes | None, str]]:
    """The pages of ``blocks`` from ``source``: batched where it can, else one by one."""
    if isinstance(source, BatchSource):
        return {blk: (data, how) for blk, data, how in source.fetch_batch(rel, blocks, fork)}
    if fork != "main":
        return {blk: (None, f"the {source.name} hands out main-fork pages only") for blk in blocks}
    return {blk: source.fetch(rel, blk) for blk in blocks}


@dataclass
class PageCopy:
    """One damaged page and the copy offered for it."""

    relation: str
    role: str
    block: int
    source: str
    """Where the page comes from: ``standby`` when the copy is used, ``none`` when not (today's plan)."""
    would_lose: str
    """What today's plan does to the page, and the rows that would go with it."""
    lsn_damaged: int | None = None
    """pd_lsn of the damaged page, when its header can be trusted (None: zeroed or not readable)."""
    lsn_copy: int | None = None
    why: str = ""
    """Why the copy is not used (empty when it is)."""
    read_by: str = ""
    data: bytes | None = None
    rows: int | None = None
    """Rows of the table the copy holds (heap pages of the table; counted by the carver)."""
    row_items: list[int] = field(default_factory=list)
    """The line pointers of those rows (a possibly stale copy's rows are listed by ctid)."""
    stale: str = ""
    """Why the copy may be older than the page was (the WAL ends before the primary's position), taken with
    --accept-older: its rows are possibly stale."""
    fork: str = "main"
    """``main``, or ``vm`` for a visibility map page."""
    must_clear: dict[int, int] = field(default_factory=dict)
    """A visibility map page: heap block -> the bits the copy must not set (the heap page contradicts them)."""
    server_read: bool = False
    """The server reads the damaged heap page (all zeroes, or damage its checks let through): index scans that
    found its rows gone may have marked their index entries dead (LP_DEAD, a hint never WAL-logged)."""

    @property
    def accepted(self) -> bool:
        return self.source != SOURCE_NONE

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "role": self.role,
            "fork": self.fork,
            "block": self.block,
            "source": self.source,
            "lsn_damaged": lsn_text(self.lsn_damaged) if self.lsn_damaged is not None else None,
            "lsn_copy": lsn_text(self.lsn_copy) if self.lsn_copy is not None else None,
            "would_lose": self.would_lose,
            "rejected": self.why or None,
            "read_by": self.read_by or None,
            "rows": self.rows,
            "row_ctids": [f"({self.block},{lp})" for lp in self.row_items] if self.stale else None,
            "stale": self.stale or None,
            "server_read": self.server_read,
        }


def damaged_lsn(page: bytes | None, primary_lsn: int | None) -> int | None:
    """The damaged page's LSN where it can still be read: not an all-zero page, not an LSN past the primary's WAL
    (a damaged header says anything)."""
    if page is None or not any(page):
        return None
    lsn = page_lsn(page)
    if primary_lsn is not None and lsn > primary_lsn:
        return None
    return lsn


def staleness(source: PageSource, floor: int | None) -> str:
    """Why a copy may be older than the page was, when the source is exact only to a position before the primary's
    (empty: it is not): the damaged page changed after it (its LSN is newer), or its LSN cannot be read."""
    if source.short_of is None or source.replayed is None:
        return ""
    exact = lsn_text(source.replayed)
    if floor is None:
        return (
            f"the copy is exact to {exact} only (the WAL ends there, the primary is at {lsn_text(source.short_of)}) "
            "and the damaged page's LSN cannot be read: it may have changed since"
        )
    if floor > source.replayed:
        return f"the page changed on the primary after {exact}, where the WAL ends (its LSN {lsn_text(floor)})"
    return ""


def judge_copy(
    source: PageSource,
    page: bytes | None,
    rel: Relation,
    block: int,
    checksums: bool,
    floor: int | None,
    at_least: int | None = None,
    fork: str = "main",
) -> tuple[str, str]:
    """(why the copy cannot be used, why it may be stale): ``check_copy`` against the damaged page's LSN ``floor``
    (and ``at_least``, the LSN of the copy planned), and a copy that may be older than the page was only with
    --accept-older (its LSN is then not held to the damaged page's)."""
    stale = staleness(source, floor)
    least = None if stale else max(floor or 0, at_least or 0) or None
    why = check_copy(page, rel, block, checksums, least, source.replayed, fork)
    if not why and stale and not source.accept_older:
        why = f"{stale}; --accept-older restores it all the same"
    return why, stale


def check_copy(
    page: bytes | None,
    rel: Relation,
    block: int,
    checksums: bool,
    lsn_floor: int | None,
    lsn_ceiling: int | None,
    fork: str = "main",
) -> str:
    """Why ``page`` cannot replace block ``block`` of ``rel`` (empty: it can): the core's checks of the page (its
    header, item-ID array and tuples or index items), its checksum, and its LSN between the damaged page's and the
    position the copy's holder has replayed to."""
    if page is None:
        return "no copy could be read"
    if not any(page):
        return "the copy is all zeroes too"
    # the core's checks of the page alone (findings only, no decoded items: a thousand copies in milliseconds);
    # with checksums on, a mismatch is one of them, as PageIsVerified's header checks are
    kind = MAP_FORKS.get(fork) or rel.kind
    try:
        batch = core.check_pages(page, block, kind=kind, checksums=checksums, blcksz=len(page))
    except ValueError as exc:
        return f"the copy cannot be decoded: {exc}"
    errors = [f for f in batch.findings if f["severity"] == "error"]
    sums = [f for f in errors if f["code"] == "checksum.mismatch"]
    if sums:
        return f"the copy fails its checksum ({sums[0]['message']})"
    if errors:
        return f"the copy is damaged itself: {errors[0]['code']}: {errors[0]['message']}"
    lsn = page_lsn(page)
    if lsn_floor is not None and lsn < lsn_floor:
        return f"the copy is older than the damaged page (LSN {lsn_text(lsn)} < {lsn_text(lsn_floor)})"
    if lsn_ceiling is not None and lsn > lsn_ceiling:
        return f"the copy's LSN {lsn_text(lsn)} is past what its holder has replayed ({lsn_text(lsn_ceiling)})"
    return ""
