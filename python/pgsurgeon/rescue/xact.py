"""Rebuilding a lost pg_xact segment from evidence instead of from hope.

The blog recipe (``dd`` a segment full of "committed", or of zeroes) decides every transaction of a million at once,
and either resurrects aborted rows or hides committed ones. Here each XID's status comes from what the cluster still
says about it:

1. hint bits on heap tuple headers (``crates/core/src/visibility/hint_evidence.rs``);
2. commit and abort records in the WAL that survives (``pg_waldump``);
3. the DBA's choice, per XID (``decide``), for what neither decides.

What nothing decides is written as *not committed* by default: rows such a transaction inserted stay hidden (they are
listed, to be kept apart), rows it deleted stay visible; nothing aborted comes back. Prepared transactions (files in
pg_twophase) keep status 0, in progress, as the server expects. The file is written only with ``execute``, with the
server stopped, through the journal: an undo manifest first, then the file (``pgsurgeon undo`` removes it).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.rescue.journaled import write_rebuilt
from pgsurgeon.rescue.walstatus import WalStatus, read_wal_status

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile, RowRef, XidEvidence

COMMITTED, ABORTED, IN_PROGRESS = "committed", "aborted", "in_progress"
_BITS = {IN_PROGRESS: 0, COMMITTED: 1, ABORTED: 2}
"""TRANSACTION_STATUS_* (clog.h): two bits per XID, four XIDs a byte, lowest bits first."""
SLRU_PAGES_PER_SEGMENT = 32
"""slru.h."""
FIRST_NORMAL_XID = 3
"""transam.h: 0 invalid, 1 bootstrap, 2 frozen are never looked up."""


@dataclass(frozen=True)
class XactRebuildRequest:
    pgdata: Path
    segment: str | None = None
    """The segment's name (hex, as in pg_xact); default: the first missing one between the horizons."""
    decide: dict[int, str] = field(default_factory=dict)
    """XID -> committed or aborted: the DBA's choice where the evidence is silent (or overruled)."""
    undecided: str = ABORTED
    """What every XID left undecided becomes: aborted (the default: nothing resurrected) or committed."""
    wal: bool = True
    """Read commit and abort records from pg_wal as evidence."""
    execute: bool = False
    manifest: Path | None = None


@dataclass
class XidFate:
    xid: int
    status: str
    source: str
    """hint bits, WAL, hint bits and WAL, your choice, or undecided."""
    inserted: int = 0
    """Rows it inserted whose visibility depends on this status."""
    deleted: int = 0
    rows: list[RowRef] = field(default_factory=list)


@dataclass
class XactRebuild:
    segment: str
    lo: int
    hi: int
    size: int
    fates: list[XidFate]
    conflicts: list[str]
    pages_read: int
    wal: WalStatus
    prepared: list[int]
    data: bytes = b""
    manifest: Path | None = None
    names: dict[tuple[int, int], str] = field(default_factory=dict)
    """(database OID, relfilenode) -> the relation's name, from the catalog in the files (empty when unreadable)."""

    @property
    def undecided(self) -> list[XidFate]:
        return [f for f in self.fates if f.source == "undecided"]

    @property
    def decided(self) -> list[XidFate]:
        return [f for f in self.fates if f.source != "undecided"]


def rebuild_xact(req: XactRebuildRequest) -> XactRebuild:
    """Decide every XID of the segment that the heap references, build the segment, and with ``execute`` write it."""
    if req.undecided not in (COMMITTED, ABORTED):
        raise UsageError(f"undecided XIDs become committed or aborted, not {req.undecided}")
    control = read_control(req.pgdata)
    blcksz = int(control["blcksz"])
    per_seg = blcksz * 4 * SLRU_PAGES_PER_SEGMENT
    next_xid = int(str(control["next_xid"]).rsplit(":", 1)[-1])
    segno = _segment(req, control, per_seg, next_xid)
    first = segno * per_seg
    lo = max(first, FIRST_NORMAL_XID)
    hi = min(first + per_seg - 1, next_xid - 1) if next_xid // per_seg == segno else first + per_seg - 1
    evidence, pages = core.hint_evidence(str(req.pgdata), blcksz, int(control["relseg_size"]), lo, hi)
    wal = (
        read_wal_status(req.pgdata, int(control["major_version"]), int(control["this_timeline_id"]))
        if req.wal
        else WalStatus(note="WAL records not read (--no-wal)")
    )
    prepared = _prepared(req.pgdata, lo, hi)
    fates, conflicts = _decide(evidence, wal, req, prepared, range(lo, hi + 1))
    # the next XID's segment ends with its page: the server zeroes what follows it on that page at startup
    pages_needed = SLRU_PAGES_PER_SEGMENT if next_xid // per_seg != segno else (next_xid % per_seg) // (blcksz * 4) + 1
    size = pages_needed * blcksz
    out = XactRebuild(f"{segno:04X}", lo, hi, size, fates, conflicts, pages, wal, prepared)
    out.data = _segment_bytes(fates, first, size)
    out.names = relation_names(req.pgdata)
    if req.execute:
        out.manifest = _write(req, out)
    return out


def relation_names(pgdata: Path) -> dict[tuple[int, int], str]:
    """The names of the relations whose rows are listed, read from the catalog in the data files; nothing when the
    catalog cannot be read there (its own rows may depend on the lost statuses)."""
    from pgsurgeon.catalog.files import CatalogUnreadable, FilesCatalog, relation_index

    try:
        names, _ = relation_index(FilesCatalog(pgdata), descs=False)
    except (ValueError, OSError, CatalogUnreadable):
        return {}
    return {(db, node): f"{rel.schema}.{rel.name}" for (_spc, db, node), rel in names.items()}


def read_control(pgdata: Path) -> ControlFile:
    if not (pgdata / "global" / "pg_control").is_file():
        raise PgSurgeonError(f"{pgdata} is not a data directory (no global/pg_control)", hint="pass the data directory")
    try:
        control = core.read_control(str(pgdata))
    except core.FormatError as exc:
        raise PgSurgeonError(
            f"pg_control is not readable: {exc}", hint="rebuild pg_control first (pgsurgeon control --plan)"
        ) from None
    if not control["crc_ok"]:
        raise PgSurgeonError(
            "pg_control's CRC does not match: its XID horizons cannot be trusted to size the segment",
            hint="rebuild pg_control first (pgsurgeon control --plan)",
        )
    return control


def _segment(req: XactRebuildRequest, control: ControlFile, per_seg: int, next_xid: int) -> int:
    """The segment asked for, or the first one missing between the oldest and the next XID."""
    if req.segment is not None:
        try:
            segno = int(req.segment, 16)
        except ValueError:
            raise UsageError(f"--segment {req.segment} is not a pg_xact segment name (hex, e.g. 0000)") from None
    else:
        oldest = int(control["oldest_xid"])
        wanted = (
            range(oldest // per_seg, next_xid // per_seg + 1) if oldest <= next_xid else range(next_xid // per_seg + 1)
        )
        missing = [s for s in wanted if not (req.pgdata / "pg_xact" / f"{s:04X}").exists()]
        if not missing:
            raise PgSurgeonError(
                "no pg_xact segment between the oldest and the next XID is missing",
                hint="name a segment with --segment to rebuild it anyway",
            )
        segno = missing[0]
    if (req.pgdata / "pg_xact" / f"{segno:04X}").exists():
        raise PgSurgeonError(
            f"pg_xact/{segno:04X} exists: only a missing segment is rebuilt",
            hint="move the damaged file aside first (keep it: its intact pages still hold real statuses)",
        )
    return segno


def _prepared(pgdata: Path, lo: int, hi: int) -> list[int]:
    """Prepared transactions (pg_twophase/<XID in hex>): in progress until COMMIT/ROLLBACK PREPARED."""
    out = []
    with contextlib.suppress(OSError):
        for f in (pgdata / "pg_twophase").iterdir():
            with contextlib.suppress(ValueError):
                xid = int(f.name, 16) & 0xFFFFFFFF
                if lo <= xid <= hi:
                    out.append(xid)
    return sorted(out)


def _decide(
    evidence: list[XidEvidence], wal: WalStatus, req: XactRebuildRequest, prepared: list[int], span: range
) -> tuple[list[XidFate], list[str]]:
    fates: dict[int, XidFate] = {}
    conflicts: list[str] = []
    for e in evidence:
        xid = e["xid"]
        fate = XidFate(xid, "", "", e["inserted_unhinted"], e["deleted_unhinted"], list(e["rows"]))
        said, denied = e["committed_hints"], e["aborted_hints"]
        hint = COMMITTED if said and not denied else ABORTED if denied and not said else None
        if said and denied:
            conflicts.append(f"XID {xid}: {said} tuple(s) hinted committed, {denied} aborted")
        logged = wal.status.get(xid)
        if hint and logged and hint != logged:
            conflicts.append(f"XID {xid}: hint bits say {hint}, the WAL says {logged} (the WAL is believed)")
        _settle(fate, hint, logged, req, xid in prepared)
        fates[xid] = fate
    # a transaction the WAL names but no tuple does (its rows pruned since) still gets its status
    for xid, logged in wal.status.items():
        if xid in span and xid not in fates:
            fates[xid] = XidFate(xid, logged, "WAL")
    for xid, status in req.decide.items():
        if xid in span and xid not in fates:
            fates[xid] = XidFate(xid, status, "your choice")
    return [fates[x] for x in sorted(fates)], conflicts


def _settle(fate: XidFate, hint: str | None, logged: str | None, req: XactRebuildRequest, prepared: bool) -> None:
    if prepared:
        fate.status, fate.source = IN_PROGRESS, "prepared (pg_twophase)"
    elif fate.xid in req.decide:
        fate.status, fate.source = req.decide[fate.xid], "your choice"
    elif logged:
        fate.status, fate.source = logged, "hint bits and WAL" if hint == logged else "WAL"
    elif hint:
        fate.status, fate.source = hint, "hint bits"
    else:
        fate.status, fate.source = req.undecided, "undecided"


def _segment_bytes(fates: list[XidFate], first: int, size: int) -> bytes:
    data = bytearray(size)
    for f in fates:
        at = f.xid - first
        if at // 4 < size:
            data[at // 4] |= _BITS[f.status] << (2 * (at % 4))
    return bytes(data)


def _write(req: XactRebuildRequest, out: XactRebuild) -> Path:
    note = f"rebuilt from evidence: {len(out.decided)} XID(s) decided, {len(out.undecided)} undecided ({req.undecided})"
    return write_rebuilt(
        req.pgdata,
        f"pg_xact/{out.segment}",
        out.data,
        mode="xact-rebuild",
        note=note,
        manifest=req.manifest,
        replace=False,
    )
