"""Whether the WAL between two positions changes given pages, read with the cluster's own ``pg_waldump``.

A backup recovered to one position holds a page exactly as it is at a later one when no WAL record in between
touches it: ``repair --from-backup --execute`` then takes the copies its plan recovered instead of recovering the
whole backup a second time once the primary is stopped. The reading is conservative. Each of these says "may have
changed":
- a record naming one of the pages: a block reference, ``blkref #0: rel 1663/5/16384 fork vm blk 0`` (xlogdesc.c,
  XLogRecGetBlockRefInfo);
- for a visibility map page, a Heap or Heap2 record naming any heap block of its table (a full-page image for hint
  bits, XLOG's FPI_FOR_HINT, restores the heap page and nothing else);
- any other mention of one of their relations' files: a truncation, a commit dropping them, a lock, their statistics;
- any record of the Database resource manager: a database copied or dropped as a whole;
- WAL that does not read from the first position to the second.

The segments are taken from each directory given in turn (the primary's pg_wal, then the WAL archive): a busy primary
has archived and recycled the segment where the plan's recovery ended by the time it stops."""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgsurgeon.catalog.files import file_key
from pgsurgeon.repair.copies import lsn_text, parse_lsn
from pgsurgeon.rescue.files import wal_file_name

_BLKREF = re.compile(r"blkref #\d+: rel \d+/(?P<db>\d+)/(?P<rel>\d+)(?: fork (?P<fork>\w+))? blk (?P<blk>\d+)")
_LSN = re.compile(r"\blsn: ([0-9A-F]+/[0-9A-F]+)")
_WHOLE_DATABASE = "rmgr: Database"
SIZE_OF_XLOG_LONG_PHD = 40  # SizeOfXLogLongPHD, the header of a segment's first page (access/xlog_internal.h)
# the resource managers whose redo clears a heap block's map bits (heapam_xlog.c: XLH_*_ALL_VISIBLE_CLEARED,
# visibilitymap_clear in heap_xlog_*): pg_waldump pads the name, "rmgr: Heap        len …"
_CLEARS_MAP_BITS = ("rmgr: Heap ", "rmgr: Heap2 ")


@dataclass(frozen=True)
class PageRef:
    """A page by its relation's file: segment 0 of the main fork relative to the data directory
    (pg_relation_filepath), the fork's name (main, vm, …) and the block."""

    filepath: str
    fork: str
    block: int


def _node(filepath: str) -> tuple[int, int]:
    """(database OID, relfilenode) of a relation's path (catalog.files.file_key's reading of it, the relative path:
    a tablespace's symlink is not followed): what pg_waldump prints after the tablespace."""
    key = file_key(Path(filepath))
    if key is None:
        raise ValueError(f"not a relation file path: {filepath}")
    _spc, db, node = key[1]
    return db, node


@dataclass(frozen=True)
class WalRange:
    """The WAL to read: from ``start`` up to ``end`` on ``timeline``, its segments of ``seg_size`` bytes found in
    ``dirs`` (the first that holds each)."""

    dirs: Sequence[Path]
    timeline: int
    seg_size: int
    start: int
    end: int

    def gather(self, into: Path) -> str | None:
        """A link in ``into`` to each segment of the range; the name of the first one no directory holds. The
        segments of the end's record are linked where they are there (it may start a segment not written yet, or
        run on into the next one)."""
        # a record before the end starts before it, and not inside a segment's first page header
        last = (self.end - 1 - SIZE_OF_XLOG_LONG_PHD) // self.seg_size
        for segno in range(self.start // self.seg_size, last + 3):
            name = wal_file_name(self.timeline, segno, self.seg_size)
            found = next((d / name for d in self.dirs if (d / name).is_file()), None)
            if found is None:
                return name if segno <= last else None
            (into / name).symlink_to(found.absolute())
        return None


def first_touch(waldump: Path, wal: WalRange, pages: Collection[PageRef]) -> str | None:
    """None when every record from ``wal.start`` up to ``wal.end`` (exclusive) was read and none may change one of
    ``pages``; otherwise the first record that may (pg_waldump's line) or why the WAL could not be read. Streams:
    pg_waldump is stopped at the first such record."""
    if not pages:
        return None
    with tempfile.TemporaryDirectory(prefix="pgsurgeon-wal-") as tmp:
        missing = wal.gather(Path(tmp))
        if missing is not None:
            where = ", ".join(map(str, wal.dirs))
            span = f"{lsn_text(wal.start)} to {lsn_text(wal.end)}"
            return f"the WAL from {span} does not read: {missing} is not in {where}"
        return _first_touch_in(waldump, Path(tmp), wal, pages)


def _first_touch_in(waldump: Path, wal_dir: Path, wal: WalRange, pages: Collection[PageRef]) -> str | None:
    start, end = wal.start, wal.end
    wanted = {(*_node(p.filepath), p.fork, p.block) for p in pages}
    nodes = {(db, rel) for db, rel, _, _ in wanted}
    # redo clears visibility map bits of the heap block a record names, without naming the map's page (heapam.c,
    # heap_xlog_delete and the others: XLH_*_ALL_VISIBLE_CLEARED): any heap block of its table may change a map page
    mapped = {(db, rel) for db, rel, fork, _ in wanted if fork == "vm"}
    mention = re.compile("|".join(_mentions(db, rel) for db, rel in sorted(nodes)))
    # no -e: pg_waldump fails at an end that falls right after a page header (the record there is read past it);
    # it reads on to the end of the WAL there is instead, and is stopped at the first record at or after ``end``
    args = [str(waldump), "-p", str(wal_dir), "-t", str(wal.timeline), "-s", lsn_text(start)]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errors, text=True, errors="replace")
        assert proc.stdout is not None
        found: str | None = None
        reached = False
        for line in proc.stdout:
            at = _LSN.search(line)
            if at is not None and (parse_lsn(at[1]) or 0) >= end:
                reached = True
                break
            found = _touches(line, wanted, mapped, mention)
            if found is not None:
                break
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.wait()
        if found is not None:
            return f"a WAL record may change them: {found}"
        if not reached:
            errors.seek(0)
            lines = [ln for ln in errors.read().decode(errors="replace").splitlines() if ln.strip()]
            said = lines[-1] if lines else "it ends before"
            where = ", ".join(map(str, wal.dirs))
            return f"the WAL from {lsn_text(start)} to {lsn_text(end)} does not read in {where}: {said}"
    return None


def _mentions(db: int, rel: int) -> str:
    """A relation's file named outside a block reference: ``base/5/16384`` (Storage, a commit's dropped files),
    ``2/5/16384`` (dropped statistics: conservative, that is the OID), ``db 5 rel 16384`` (Standby locks)."""
    names = rf"(?<!\d){db}/{rel}(?!\d)|\bdb {db} rel {rel}(?!\d)"
    return names + (rf"|\bglobal/{rel}(?!\d)" if db == 0 else "")


def _touches(
    line: str, wanted: set[tuple[int, int, str, int]], mapped: set[tuple[int, int]], mention: re.Pattern[str]
) -> str | None:
    """The record's line when it may change a wanted page, else None."""
    if line.startswith(_WHOLE_DATABASE):
        return line.strip()
    heap = line.startswith(_CLEARS_MAP_BITS)
    for ref in _BLKREF.finditer(line):
        node, fork = (int(ref["db"]), int(ref["rel"])), ref["fork"] or "main"
        if (*node, fork, int(ref["blk"])) in wanted or (heap and fork == "main" and node in mapped):
            return line.strip()
    if mention.search(_BLKREF.sub("", line)):
        return line.strip()
    return None
