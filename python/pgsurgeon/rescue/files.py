"""What the data directory's own files say about the counters pg_resetwal sets: the SLRU segments of pg_xact,
pg_multixact and pg_commit_ts, the WAL segments in pg_wal, the block size in a page header. Read-only.

The multipliers pg_resetwal's documentation gives (doc/src/sgml/ref/pg_resetwal.sgml: 0x100000 for -x/-u, 0x10000
for -m, 52352 for -O) hold for 8 kB pages only; here they are derived from the cluster's block size with the
definitions they come from."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

SLRU_PAGES_PER_SEGMENT = 32
"""src/include/access/slru.h."""
CLOG_XACTS_PER_BYTE = 4
"""src/backend/access/transam/clog.c: two status bits a transaction."""
MULTIXACT_OFFSET_SIZE = 4
"""sizeof(MultiXactOffset), src/include/c.h (32 bits through PostgreSQL 18)."""
MULTIXACT_MEMBERGROUP_SIZE = 4 + 4 * 4
"""src/backend/access/transam/multixact.c: a group of 4 members is 4 flag bytes and 4 TransactionIds."""
MULTIXACT_MEMBERS_PER_MEMBERGROUP = 4
COMMIT_TS_ENTRY_SIZE = 10
"""SizeOfCommitTimestampEntry, src/backend/access/transam/commit_ts.c: a TimestampTz and a RepOriginId."""
FIRST_NORMAL_XID = 3
"""FirstNormalTransactionId, src/include/access/transam.h: pg_resetwal refuses -x and -u below it."""
FIRST_MULTI = 1
"""FirstMultiXactId, src/include/access/multixact.h: pg_resetwal adds it to an oldest -m of 0."""
DEFAULT_WAL_SEG_SIZE = 16 * 1024 * 1024
"""DEFAULT_XLOG_SEG_SIZE, src/include/pg_config_manual.h: what pg_resetwal assumes when it has to guess."""
_SPACE = 1 << 32
"""TransactionId, MultiXactId and MultiXactOffset are 32-bit counters that wrap around."""

# SlruFileName (src/backend/access/transam/slru.c): 4 to 6 hex digits, or 15 with long segment names
_SLRU_NAME = re.compile(r"^(?:[0-9A-F]{4,6}|[0-9A-F]{15})$")
# IsXLogFileName and IsPartialXLogFileName (src/include/access/xlog_internal.h)
_WAL_NAME = re.compile(r"^(?P<tli>[0-9A-F]{8})(?P<log>[0-9A-F]{8})(?P<seg>[0-9A-F]{8})(?:\.partial)?$")
_HISTORY_NAME = re.compile(r"^(?P<tli>[0-9A-F]{8})\.history$")


@dataclass(frozen=True)
class Geometry:
    """How many ids one SLRU segment file holds, for one block size."""

    blcksz: int

    @property
    def xacts_per_segment(self) -> int:
        """pg_xact: SLRU_PAGES_PER_SEGMENT * BLCKSZ * CLOG_XACTS_PER_BYTE (1048576 with 8 kB pages)."""
        return SLRU_PAGES_PER_SEGMENT * self.blcksz * CLOG_XACTS_PER_BYTE

    @property
    def multis_per_segment(self) -> int:
        """pg_multixact/offsets: SLRU_PAGES_PER_SEGMENT * BLCKSZ / sizeof(MultiXactOffset) (65536 with 8 kB)."""
        return SLRU_PAGES_PER_SEGMENT * (self.blcksz // MULTIXACT_OFFSET_SIZE)

    @property
    def members_per_page(self) -> int:
        return (self.blcksz // MULTIXACT_MEMBERGROUP_SIZE) * MULTIXACT_MEMBERS_PER_MEMBERGROUP

    @property
    def members_per_segment(self) -> int:
        """pg_multixact/members: SLRU_PAGES_PER_SEGMENT * floor(BLCKSZ/20) * 4 (52352 with 8 kB)."""
        return SLRU_PAGES_PER_SEGMENT * self.members_per_page

    @property
    def commit_ts_per_page(self) -> int:
        return self.blcksz // COMMIT_TS_ENTRY_SIZE

    @property
    def commit_ts_per_segment(self) -> int:
        return SLRU_PAGES_PER_SEGMENT * self.commit_ts_per_page


@dataclass(frozen=True)
class Segments:
    """The segment files of one SLRU directory: their numbers, and the oldest and newest in circular order."""

    directory: str
    """Relative to PGDATA, e.g. ``pg_xact``."""
    numbers: tuple[int, ...]
    oldest: int | None
    newest: int | None
    sizes: dict[int, int]


def slru_segments(pgdata: Path, directory: str, per_segment: int) -> Segments:
    """The segments in ``pgdata/directory``. The counter wraps at 2^32, so after a wraparound the largest file name
    is not the newest: the oldest segment is the one after the widest gap in circular order (pg_resetwal's
    documentation assumes no wraparound; this is the same rule where there is none)."""
    sizes: dict[int, int] = {}
    try:
        entries = list((pgdata / directory).iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if _SLRU_NAME.match(entry.name) and entry.is_file():
            sizes[int(entry.name, 16)] = entry.stat().st_size
    numbers = tuple(sorted(sizes))
    if not numbers:
        return Segments(directory, numbers, None, None, sizes)
    modulus = -(-_SPACE // per_segment)  # segments the 32-bit space spans
    if len(numbers) == 1 or numbers[-1] >= modulus:
        return Segments(directory, numbers, numbers[0], numbers[-1], sizes)
    # the gap after each segment, the last one wrapping to the first
    gaps = [(numbers[(i + 1) % len(numbers)] - n) % modulus for i, n in enumerate(numbers)]
    widest = max(range(len(numbers)), key=lambda i: gaps[i])
    return Segments(directory, numbers, numbers[(widest + 1) % len(numbers)], numbers[widest], sizes)


@dataclass(frozen=True)
class WalFiles:
    """What pg_wal holds: the largest segment (any timeline, as pg_resetwal's FindEndOfXLOG takes it), the largest
    timeline seen (segments and .history files) and the size of the segment files."""

    count: int
    largest: str | None
    largest_segno: int | None
    """In units of ``seg_size`` (the caller's segment size)."""
    max_tli: int | None
    file_size: int | None
    """The size most segment files have: the WAL segment size when pg_control cannot say."""


def wal_files(pgdata: Path, seg_size: int | None) -> WalFiles:
    names: list[tuple[int, int, int, str]] = []
    tlis: list[int] = []
    sizes: dict[int, int] = {}
    try:
        entries = list((pgdata / "pg_wal").iterdir())
    except OSError:
        entries = []
    for entry in entries:
        m = _WAL_NAME.match(entry.name)
        if m:
            names.append((int(m["tli"], 16), int(m["log"], 16), int(m["seg"], 16), entry.name))
            tlis.append(int(m["tli"], 16))
            try:
                size = entry.stat().st_size
            except OSError:
                continue
            sizes[size] = sizes.get(size, 0) + 1
        h = _HISTORY_NAME.match(entry.name)
        if h:
            tlis.append(int(h["tli"], 16))
    file_size = max(sizes, key=lambda s: sizes[s]) if sizes else None
    size = seg_size or file_size or DEFAULT_WAL_SEG_SIZE
    per_id = _SPACE // size
    best: tuple[int, str] | None = None
    for _tli, log, seg, name in names:
        segno = log * per_id + seg
        if best is None or segno > best[0]:
            best = (segno, name)
    return WalFiles(
        count=len(names),
        largest=best[1] if best else None,
        largest_segno=best[0] if best else None,
        max_tli=max(tlis) if tlis else None,
        file_size=file_size,
    )


def wal_file_name(tli: int, segno: int, seg_size: int) -> str:
    """XLogFileName (src/include/access/xlog_internal.h): timeline, then the segment number in two 8-digit parts."""
    per_id = _SPACE // seg_size
    return f"{tli:08X}{segno // per_id:08X}{segno % per_id:08X}"


def lsn_segno(lsn: str, seg_size: int) -> int:
    """The segment number of an LSN printed ``X/X``."""
    hi, _, lo = lsn.partition("/")
    return ((int(hi, 16) << 32) | int(lo, 16)) // seg_size


def block_size_from_pages(pgdata: Path) -> int | None:
    """The block size a page header states (pd_pagesize_version, bufpage.h: the size in its high byte), read from
    the shared catalogs' files in global/: for when pg_control cannot say."""
    try:
        files = sorted(p for p in (pgdata / "global").iterdir() if p.name.isdigit())
    except OSError:
        return None
    for path in files:
        try:
            with path.open("rb") as fh:
                header = fh.read(24)
        except OSError:
            continue
        if len(header) < 24:
            continue
        size = int.from_bytes(header[18:20], "little") & 0xFF00
        if size in (1024, 2048, 4096, 8192, 16384, 32768) and (path.stat().st_size % size == 0):
            return size
    return None


def largest_relfilenode(pgdata: Path) -> int | None:
    """The largest relation file number under base/, global/ and the tablespaces: every OID below it may be taken
    (a lower bound of the next OID; types, functions and other objects take OIDs too, without a file)."""
    best = 0
    dirs = [pgdata / "global"]
    for pattern in ("base/*", "pg_tblspc/*/*/*"):
        try:
            dirs += [d for d in pgdata.glob(pattern) if d.is_dir()]
        except OSError:
            continue
    for d in dirs:
        try:
            for entry in d.iterdir():
                stem = entry.name.split("_", 1)[0].split(".", 1)[0]
                if stem.isdigit():
                    best = max(best, int(stem))
        except OSError:
            continue
    return best or None


def size_of(path: Path) -> int:
    """Bytes under ``path`` (what a copy of it needs)."""
    total = 0
    # os.walk, not Path.rglob: the same files (links neither counted nor followed), a fifth of the time
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total
