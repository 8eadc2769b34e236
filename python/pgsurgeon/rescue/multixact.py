"""Rebuilding a lost or damaged pg_multixact members segment from the heap, with the offsets intact.

Once the server is down, every locker of every MultiXact is gone: a lock-only MultiXact needs no members at all (its
rows are visible whatever they say). What a member still decides is the *updater* of a row updated while others
held a lock on it: without it the old version of the row comes back beside the new one. The updater is the xmin of
the newer version the old one's ``t_ctid`` points to (``crates/core/src/visibility/multi_evidence.rs``). So the
rebuilt segment holds, for each MultiXact whose slots it covers, its updater in its first slot (status Update or
NoKeyUpdate, as the tuple's ``HEAP_KEYS_UPDATED`` says) and again, as a key-share locker, in the slots of its lost
lockers. A lock-only MultiXact's slots stay empty: nothing reads them once its lockers are gone. A row deleted in
place under a lock names no newer version: its deleter
is unknown, the row is listed and stays visible (nothing deleted is hidden on a guess).

Layout (multixact.c): offsets are one uint32 per MultiXactId, BLCKSZ/4 a page; members come in groups of four, four
flag bytes (each member's MultiXactStatus) then four XIDs, 20 bytes a group, BLCKSZ/20 groups a page; 32 pages a
segment for both.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.rescue.journaled import write_rebuilt
from pgsurgeon.rescue.xact import read_control, relation_names

if TYPE_CHECKING:
    from pgsurgeon.boundary import MultiEvidence

SLRU_PAGES_PER_SEGMENT = 32
MEMBERGROUP_SIZE = 20
MEMBERS_PER_GROUP = 4
STATUS_NO_KEY_UPDATE, STATUS_UPDATE = 4, 5
"""MultiXactStatusNoKeyUpdate and MultiXactStatusUpdate (multixact.h); 0 is MultiXactStatusForKeyShare."""


@dataclass(frozen=True)
class MembersRebuildRequest:
    pgdata: Path
    segment: str | None = None
    """The members segment (hex); default: the first missing one between the oldest and the next offset."""
    replace: bool = False
    """Replace an existing (damaged) segment; its bytes go into the manifest."""
    execute: bool = False
    manifest: Path | None = None


@dataclass
class MembersRebuild:
    segment: str
    multis: tuple[int, int]
    """The MultiXacts whose member slots lie in the segment."""
    size: int
    evidence: list[MultiEvidence]
    pages_read: int
    data: bytes = b""
    manifest: Path | None = None
    names: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def updaters(self) -> list[MultiEvidence]:
        return [e for e in self.evidence if e["updater"] is not None and not e["conflicting"]]

    @property
    def unknown(self) -> list[MultiEvidence]:
        """MultiXacts whose deleter or updater nothing names: their rows stay visible."""
        return [e for e in self.evidence if e["deleted_unknown"] or e["conflicting"]]


class _Layout:
    def __init__(self, blcksz: int) -> None:
        self.blcksz = blcksz
        self.offsets_per_seg = blcksz // 4 * SLRU_PAGES_PER_SEGMENT
        self.members_per_page = blcksz // MEMBERGROUP_SIZE * MEMBERS_PER_GROUP
        self.members_per_seg = self.members_per_page * SLRU_PAGES_PER_SEGMENT

    def offset_of(self, pgdata: Path, multi: int) -> int:
        seg, at = divmod(multi, self.offsets_per_seg)
        path = pgdata / "pg_multixact" / "offsets" / f"{seg:04X}"
        try:
            with path.open("rb") as fh:
                fh.seek(at * 4)
                raw = fh.read(4)
        except FileNotFoundError:
            raise PgSurgeonError(
                f"{path.relative_to(pgdata)} is missing: the members cannot be placed without the offsets",
                hint="the offsets segment must be restored from a backup; pgsurgeon unload saves the rows meanwhile",
            ) from None
        if len(raw) < 4:
            raise PgSurgeonError(f"{path.relative_to(pgdata)} is too short for MultiXact {multi}")
        return int(struct.unpack("<I", raw)[0])

    def slot(self, offset: int) -> tuple[int, int]:
        """(flag byte, xid) positions of member ``offset`` inside its segment file."""
        in_seg = offset % self.members_per_seg
        page, idx = divmod(in_seg, self.members_per_page)
        group, pos = divmod(idx, MEMBERS_PER_GROUP)
        base = page * self.blcksz + group * MEMBERGROUP_SIZE
        return base + pos, base + MEMBERS_PER_GROUP + pos * 4


def rebuild_members(req: MembersRebuildRequest) -> MembersRebuild:
    control = read_control(req.pgdata)
    lay = _Layout(int(control["blcksz"]))
    oldest, nxt = int(control["oldest_multi"]), int(control["next_multi"])
    next_offset = int(control["next_multi_offset"])
    if nxt <= oldest:
        raise PgSurgeonError("no MultiXact is in use (next = oldest): there are no members to rebuild")
    offsets = {m: lay.offset_of(req.pgdata, m) for m in range(oldest, nxt)}
    ends = {m: offsets.get(m + 1, next_offset) for m in offsets}
    segno = _segment(req, lay, offsets[oldest], next_offset)
    lo_off, hi_off = segno * lay.members_per_seg, (segno + 1) * lay.members_per_seg
    inside = [m for m in offsets if offsets[m] < hi_off and ends[m] > lo_off]
    lo, hi = (min(inside), max(inside)) if inside else (oldest, oldest)
    evidence, pages = (
        core.multi_evidence(str(req.pgdata), lay.blcksz, int(control["relseg_size"]), lo, hi) if inside else ([], 0)
    )
    last_page = (
        (next_offset % lay.members_per_seg) // lay.members_per_page
        if next_offset // lay.members_per_seg == segno
        else SLRU_PAGES_PER_SEGMENT - 1
    )
    size = (last_page + 1) * lay.blcksz
    data = bytearray(size)
    for e in evidence:
        first = offsets.get(e["multi"])
        if e["updater"] is None or e["conflicting"] or first is None:
            continue
        # the updater in the first slot; the lockers' slots (whoever they were, all gone) name it again as a key-share
        # locker, so no slot of an updated row's MultiXact is empty (an empty one reads as a page that predates it)
        for slot in range(first, ends[e["multi"]]):
            flag_at, xid_at = lay.slot(slot)
            if lo_off <= slot < hi_off and xid_at + 4 <= size:
                updates = slot == first
                data[flag_at] = (STATUS_UPDATE if e["key_update"] else STATUS_NO_KEY_UPDATE) if updates else 0
                struct.pack_into("<I", data, xid_at, e["updater"])
    out = MembersRebuild(f"{segno:04X}", (lo, hi), size, evidence, pages, bytes(data))
    out.names = relation_names(req.pgdata) if out.unknown else {}
    if req.execute:
        note = (
            f"rebuilt from the heap: {len(out.updaters)} updater(s) from update chains, "
            f"{sum(e['locked'] for e in evidence)} lock-only tuple(s) need none, {len(out.unknown)} unknown"
        )
        out.manifest = write_rebuilt(
            req.pgdata,
            f"pg_multixact/members/{out.segment}",
            out.data,
            mode="multixact-rebuild",
            note=note,
            manifest=req.manifest,
            replace=req.replace,
        )
    return out


def _segment(req: MembersRebuildRequest, lay: _Layout, first_offset: int, next_offset: int) -> int:
    members = req.pgdata / "pg_multixact" / "members"
    if req.segment is not None:
        try:
            segno = int(req.segment, 16)
        except ValueError:
            raise UsageError(f"--segment {req.segment} is not a members segment name (hex, e.g. 0000)") from None
    else:
        wanted = range(first_offset // lay.members_per_seg, next_offset // lay.members_per_seg + 1)
        missing = [s for s in wanted if not (members / f"{s:04X}").exists()]
        if not missing:
            raise PgSurgeonError(
                "no members segment between the oldest and the next member offset is missing",
                hint="name a damaged one with --segment and --replace to rebuild it",
            )
        segno = missing[0]
    if (members / f"{segno:04X}").exists() and not req.replace:
        raise PgSurgeonError(
            f"pg_multixact/members/{segno:04X} exists",
            hint="--replace rebuilds it anyway (its bytes are kept in the manifest for undo)",
        )
    return segno
