"""Planning damage to the cluster's own bookkeeping: pg_control, WAL, pg_xact, pg_subtrans, pg_multixact,
pg_filenode.map, and a relation file no catalog names (an orphan). Like page damage, a plan is bytes and files only;
the journal writes it and undo puts it back.

Every change is seeded. A byte change is recorded with the whole "page" it lies in (an SLRU page, a WAL page,
pg_control's 8 kB, the relation map's 512 or 524 bytes), so undo compares and restores whole pages as it does for
relation pages. What each mode makes a real server do is in docs/corruption-modes.md and
tests/test_simulate_bookkeeping.py.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.datadir import Geometry
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.journal.manifest import KIND_CREATE, KIND_TRUNCATE, FileChange, PageRecord, sha256
from pgsurgeon.simulate import wal
from pgsurgeon.simulate.plan import diff_runs
from pgsurgeon.simulate.target import Resolved, Target

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile

CONTROL = "global/pg_control"
CONTROL_FIELDS = {"checkpoint": (32, "<Q"), "version": (8, "<I"), "next-xid": (64, "<I"), "next-multi": (76, "<I")}
"""Offsets in ControlFileData, the same in PostgreSQL 14 to 18 (pg_control.h): checkPoint after system_identifier,
pg_control_version, catalog_version_no, state and time; checkPointCopy.nextXid (its low 32 bits) at 64 and
checkPointCopy.nextMulti at 76."""
RELMAP_MAGIC_END = 8
"""pg_filenode.map: int32 magic, int32 num_mappings, then the mappings (relmapper.c)."""


@dataclass
class BookPlan:
    """The changes and the page images they lie in, and one line per change for people."""

    changes: list[FileChange]
    pages: list[PageRecord]
    lines: list[str]
    warnings: list[str]
    target: str
    """The file (or directory) damaged, relative to the data directory."""


@dataclass(frozen=True)
class BookRequest:
    mode: str
    field: str
    seed: int
    file: str | None = None
    """Which file, relative to the data directory (default: the one the mode names)."""
    value: int | None = None


class _Planner:
    def __init__(self, pgdata: Path, req: BookRequest) -> None:
        self.pgdata = pgdata
        self.req = req
        self.rng = random.Random(req.seed)
        self.plan = BookPlan([], [], [], [], req.file or "")
        self._control: ControlFile | None = None

    # ----------------------------------------------------------------------------------- shared

    def control(self) -> ControlFile:
        if self._control is None:
            try:
                c = core.read_control(str(self.pgdata))
            except (core.FormatError, OSError) as exc:
                raise PgSurgeonError(
                    f"pg_control of {self.pgdata} is unreadable ({exc}): this mode needs its values",
                    hint="undo the damage to pg_control first (pgsurgeon undo MANIFEST)",
                ) from None
            if not c["crc_ok"]:
                raise PgSurgeonError(
                    "pg_control's CRC does not match: this mode needs its values",
                    hint="undo the damage to pg_control first (pgsurgeon undo MANIFEST)",
                )
            self._control = c
        return self._control

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.pgdata))

    def existing(self, relpath: str) -> Path:
        path = self.pgdata / relpath
        if not path.is_file():
            raise PgSurgeonError(f"{relpath} does not exist in {self.pgdata}", hint="pass an existing file with --file")
        return path

    def replace(self, relpath: str, offset: int, new: bytes, page_size: int, note: str) -> None:
        """``new`` written at ``offset`` of ``relpath``: byte changes and the page images around them."""
        path = self.existing(relpath)
        data = path.read_bytes()
        if offset + len(new) > len(data):
            raise PgSurgeonError(f"{relpath} is {len(data)} bytes: nothing at offset {offset}")
        image = bytearray(data)
        image[offset : offset + len(new)] = new
        first, last = offset // page_size, (offset + len(new) - 1) // page_size
        for page in range(first, last + 1):
            lo, hi = page * page_size, min((page + 1) * page_size, len(data))
            old_page, new_page = data[lo:hi], bytes(image[lo:hi])
            if old_page == new_page:
                continue
            for at, o, n in diff_runs(old_page, new_page):
                self.plan.changes.append(FileChange.replace_bytes(relpath, lo + at, o, n, block=page, note=note))
            self.plan.pages.append(
                PageRecord(relpath, page, lo, hi - lo, sha256(old_page), sha256(new_page), original=old_page)
            )
        if not self.plan.changes:
            raise PgSurgeonError(f"the damage planned for {relpath} changes no byte", hint="try another --seed")
        self.plan.lines.append(f"{relpath}: {note}")
        self.plan.target = self.plan.target or relpath

    def remove(self, relpath: str, note: str) -> None:
        self.plan.changes.append(FileChange.removal(relpath, self.existing(relpath), note))
        self.plan.lines.append(f"{relpath}: {note}")
        self.plan.target = self.plan.target or relpath

    def truncate(self, relpath: str, size: int, note: str) -> None:
        old = self.existing(relpath).stat().st_size
        if not 0 <= size < old:
            raise PgSurgeonError(f"{relpath} is {old} bytes: nothing to cut at {size}")
        self.plan.changes.append(
            FileChange(KIND_TRUNCATE, relpath, size, length=old - size, block=size // 8192, old_size=old, note=note)
        )
        self.plan.lines.append(f"{relpath}: {note}")
        self.plan.target = self.plan.target or relpath

    def garble(self, relpath: str, offset: int, length: int, page_size: int, what: str) -> None:
        noise = self.rng.randbytes(length)
        self.replace(relpath, offset, noise, page_size, f"{what}: {length} random bytes at offset {offset}")

    def slru_file(self, directory: str, default: Callable[[list[str]], str]) -> str:
        """The segment named with --file (checked to be in ``directory``) or the mode's default among those present."""
        if self.req.file:
            if Path(self.req.file).parent != Path(directory):
                raise UsageError(f"--file {self.req.file} is not in {directory}/")
            return self.req.file
        names = sorted(
            (p.name for p in (self.pgdata / directory).iterdir() if p.is_file() and _is_hex(p.name)),
            key=lambda n: int(n, 16),
        )
        if not names:
            raise PgSurgeonError(f"{directory}/ holds no segment file to damage")
        return f"{directory}/{default(names)}"

    def blcksz(self) -> int:
        try:
            return Geometry.for_path(self.pgdata / CONTROL).blcksz
        except (core.FormatError, OSError):
            return 8192


def _is_hex(name: str) -> bool:
    return bool(name) and all(c in "0123456789ABCDEF" for c in name)


# --------------------------------------------------------------------------------------------------- modes


def _control(p: _Planner) -> None:
    data = p.existing(CONTROL).read_bytes()
    crc_at = _control_crc_offset(data)
    field = p.req.field
    if field == "truncate":
        size = p.req.value if p.req.value is not None else p.rng.randrange(0, crc_at, 8)
        if size >= crc_at:
            raise UsageError(f"--value {size}: pg_control keeps its {crc_at + 4} bytes of data; cut below {crc_at}")
        p.truncate(CONTROL, size, f"cut to {size} bytes (the server reads {crc_at + 4})")
        return
    if field == "crc":
        stored = struct.unpack_from("<I", data, crc_at)[0]
        bad = stored ^ (p.req.value if p.req.value else p.rng.randrange(1, 1 << 32))
        p.replace(CONTROL, crc_at, struct.pack("<I", bad), len(data), f"stored CRC {stored:08x} -> {bad:08x}")
        return
    offset, fmt = CONTROL_FIELDS[field]
    old = struct.unpack_from(fmt, data, offset)[0]
    new = p.req.value if p.req.value is not None else _control_value(p, field, old)
    if new == old:
        raise UsageError(f"{field} is already {new}")
    image = bytearray(data)
    struct.pack_into(fmt, image, offset, new)
    # the CRC recomputed: the value itself is the damage, as a bad write through a valid CRC would leave it
    struct.pack_into("<I", image, crc_at, core.crc32c(bytes(image[:crc_at])))
    shown = (lambda v: f"{v >> 32:X}/{v & 0xFFFFFFFF:X}") if field == "checkpoint" else str
    p.replace(
        CONTROL,
        0,
        bytes(image[: crc_at + 4]),
        len(data),
        f"{field} {shown(old)} -> {shown(new)}, CRC recomputed",
    )


def _control_value(p: _Planner, field: str, old: int) -> int:
    c = p.control()
    if field == "checkpoint":  # a few records further into the same page: no record starts there
        return int(old + 8 * p.rng.randrange(3, 40))
    if field == "version":
        return 1800 if old != 1800 else 1300
    if field == "next-xid":  # back to the oldest XID: every XID since is handed out again
        return max(3, int(c["oldest_xid"]))
    if old > 2:  # next-multi back towards the oldest: tuples naming later multis name ones "not created yet"
        return int(old - p.rng.randrange(1, old - 1))
    return int(old + p.rng.randrange(1 << 20, 1 << 22))  # none handed out yet: far ahead, past every offsets page


def _control_crc_offset(data: bytes) -> int:
    """Where pg_control keeps its CRC (``offsetof(ControlFileData, crc)`` differs between versions)."""
    try:
        return core.control_crc_offset(data)
    except core.FormatError as exc:
        raise PgSurgeonError(
            f"pg_control cannot be read ({exc}): it is damaged already",
            hint="undo the earlier damage to pg_control first",
        ) from None


def _wal(p: _Planner) -> None:
    c = p.control()
    seg_size, page = int(c["xlog_seg_size"]), int(c["xlog_blcksz"])
    tli, ckpt = int(c["this_timeline_id"]), wal.parse_lsn(str(c["checkpoint"]))
    seg = f"pg_wal/{wal.segment_name(tli, ckpt, seg_size)}"
    field = p.req.field
    where = f"the checkpoint record at {c['checkpoint']}"
    if field == "empty":
        names = sorted(f.name for f in (p.pgdata / "pg_wal").iterdir() if f.is_file())
        if not names:
            raise PgSurgeonError("pg_wal is already empty")
        for name in names:
            p.remove(f"pg_wal/{name}", "removed with every other file of pg_wal")
        p.plan.target = "pg_wal"
        return
    if field == "checkpoint-segment":
        p.remove(seg, f"removed: it holds {where}")
        return
    if field == "truncate":
        cut = ckpt % seg_size // page * page
        p.truncate(seg, cut, f"cut to {cut} bytes, before the page holding {where}")
        return
    span = wal.record_span(p.pgdata, tli, ckpt, seg_size, page)
    if field == "page-header":
        at = span.runs[0][0] // page * page
        p.garble(seg, at, 2, page, f"xlp_magic of the WAL page holding {where}")
        return
    if field == "checkpoint-record":
        body = p.rng.randrange(wal.SIZE_OF_XLOG_RECORD, span.total_len - 4)
        at = span.file_offset(body)
        p.garble(seg, at, min(4, span.runs[-1][0] + span.runs[-1][1] - at), page, f"the body of {where}")
        return
    if field == "checkpoint-rmid":
        _checkpoint_rmid(p, seg, span, page, where)
        return
    _earlier_record(p, seg, tli, ckpt, seg_size, page)


def _checkpoint_rmid(p: _Planner, seg: str, span: wal.RecordSpan, page: int, where: str) -> None:
    data = (p.pgdata / seg).read_bytes()
    record = bytearray(span.read(data))
    rmid = p.req.value if p.req.value is not None else p.rng.randrange(1, 22)
    if rmid == wal.RM_XLOG_ID or not 0 <= rmid <= 255:
        raise UsageError(f"--value {rmid}: give another resource manager than XLOG (0), up to 255")
    record[wal.XL_RMID_OFFSET] = rmid
    struct.pack_into("<I", record, wal.XL_CRC_OFFSET, wal.record_crc(bytes(record)))
    header_at = span.runs[0][0]
    p.replace(
        seg, header_at, bytes(record[: wal.SIZE_OF_XLOG_RECORD]), page, f"xl_rmid of {where} -> {rmid}, CRC kept valid"
    )


def _earlier_record(p: _Planner, seg: str, tli: int, ckpt: int, seg_size: int, page: int) -> None:
    """Garbage in a record before the checkpoint, found by walking xl_prev back from it (seeded number of steps)."""
    data = (p.pgdata / seg).read_bytes()
    seg_start = ckpt - ckpt % seg_size
    lsn, steps = ckpt, p.rng.randrange(1, 12)
    for _ in range(steps):
        at = lsn - seg_start
        prev = struct.unpack_from("<Q", data, at + 8)[0]
        if prev < seg_start + wal.SIZE_OF_XLOG_LONG_PHD:
            break
        lsn = prev
    if lsn == ckpt:
        raise PgSurgeonError(f"{seg} holds no record before the checkpoint record", hint="use another --field")
    rec = wal.record_span(p.pgdata, tli, lsn, seg_size, page)
    body_at = rec.file_offset(min(wal.SIZE_OF_XLOG_RECORD, rec.total_len - 1))
    n = max(1, min(8, rec.runs[0][0] + rec.runs[0][1] - body_at))
    p.garble(seg, body_at, n, page, f"the record at {lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}, before the checkpoint record")


def _slru(p: _Planner, directory: str, what: str) -> None:
    """remove, zero or page (random bytes over one page) for a segment of ``directory``."""
    field = p.req.field.rsplit("-", 1)[-1]
    seg = p.slru_file(directory, lambda names: names[-1])
    size = p.existing(seg).stat().st_size
    blcksz = p.blcksz()
    if field == "remove":
        p.remove(seg, f"removed ({size} bytes of {what})")
    elif field == "zero":
        if not any(p.existing(seg).read_bytes()):
            raise PgSurgeonError(f"{seg} is all zeros already: nothing to zero", hint="use another --field")
        p.replace(seg, 0, bytes(size), blcksz, f"zeroed ({size} bytes of {what})")
    else:
        pages = max(1, size // blcksz)
        n = p.req.value if p.req.value is not None else p.rng.randrange(pages)
        if n >= pages:
            raise UsageError(f"--value {n}: {seg} has pages 0..{pages - 1}")
        p.garble(seg, n * blcksz, blcksz, blcksz, f"page {n} of {what}")


def _xact(p: _Planner) -> None:
    _slru(p, "pg_xact", "commit status")


def _subtrans(p: _Planner) -> None:
    _slru(p, "pg_subtrans", "subtransaction parents")


def _multixact(p: _Planner) -> None:
    part = "offsets" if p.req.field.startswith("offsets") else "members"
    _slru(p, f"pg_multixact/{part}", f"MultiXact {part}")


def _relmap(p: _Planner) -> None:
    if p.req.file:
        relpath = p.req.file
        if Path(relpath).name != "pg_filenode.map":
            raise UsageError(f"--file {relpath} is not a pg_filenode.map")
    elif p.req.field == "global":
        relpath = "global/pg_filenode.map"
    else:
        dbs = sorted(d.name for d in (p.pgdata / "base").iterdir() if (d / "pg_filenode.map").is_file())
        if not dbs:
            raise PgSurgeonError("no database directory holds a pg_filenode.map")
        relpath = f"base/{p.rng.choice(dbs)}/pg_filenode.map"
    size = p.existing(relpath).stat().st_size
    at = p.rng.randrange(RELMAP_MAGIC_END, size - 16)
    p.garble(relpath, at, 4, size, "the relation map's mappings")


def _orphan(p: _Planner) -> None:
    """A relation file in a database directory that no pg_class row names, holding a copy of a real relation's
    first pages (what a crashed table rewrite leaves)."""
    base = p.pgdata / "base"
    dbs = sorted(d for d in base.iterdir() if d.is_dir() and d.name.isdigit())
    db = p.pgdata / p.req.file if p.req.file else p.rng.choice(dbs)
    if not db.is_dir() or db.parent != base:
        raise UsageError(f"--file {p.req.file}: name a database directory, e.g. base/5")
    files = sorted((f for f in db.iterdir() if f.name.isdigit() and f.stat().st_size > 0), key=lambda f: int(f.name))
    if not files:
        raise PgSurgeonError(f"{p.rel(db)} holds no relation file to copy pages from")
    source = p.rng.choice(files)
    number = int(files[-1].name) + p.rng.randrange(1000, 100000)
    while (db / str(number)).exists():
        number += 1
    blcksz = p.blcksz()
    with source.open("rb") as fh:
        content = fh.read(8 * blcksz)
    relpath = f"{p.rel(db)}/{number}"
    note = f"created: {len(content) // blcksz} page(s) copied from {p.rel(source)}, named by no catalog"
    p.plan.changes.append(FileChange(KIND_CREATE, relpath, 0, new=content, length=len(content), note=note))
    p.plan.lines.append(f"{relpath}: {note}")
    p.plan.target = relpath


_PLANNERS: dict[str, Callable[[_Planner], None]] = {
    "control": _control,
    "wal": _wal,
    "xact": _xact,
    "subtrans": _subtrans,
    "multixact": _multixact,
    "relmap": _relmap,
    "orphan-file": _orphan,
}
BOOKKEEPING_MODES = tuple(_PLANNERS)


def plan_bookkeeping(pgdata: Path, req: BookRequest) -> BookPlan:
    """The changes ``req`` makes to ``pgdata``'s bookkeeping, read from the files as they are now."""
    planner = _Planner(pgdata, req)
    _PLANNERS[req.mode](planner)
    return planner.plan


def resolved_for(pgdata: Path, target: str) -> Resolved:
    """A :class:`Resolved` naming the bookkeeping file, for the manifest header the relation modes write too."""
    try:
        geometry = Geometry.for_path(pgdata / CONTROL)
    except (core.FormatError, OSError):
        geometry = Geometry(pgdata=pgdata)
    return Resolved(pgdata, Target(target, "bookkeeping", None, pgdata / target), geometry)
