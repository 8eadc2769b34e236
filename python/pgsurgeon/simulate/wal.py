"""Just enough of the WAL format to damage the checkpoint record the way a disk would: where it lies, its header,
and its CRC-32C recomputed when a damage should pass the CRC and trip a later check.

Layouts from ``src/include/access/xlog_internal.h`` (XLogPageHeaderData, XLogLongPageHeaderData) and
``src/include/access/xlogrecord.h`` (XLogRecord), the same in PostgreSQL 14 to 18; the CRC is computed as
``ValidXLogRecord`` (``src/backend/access/transam/xlogreader.c``) does: over the record after its header, then over the
header up to ``xl_crc``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.rescue.files import wal_file_name

SIZE_OF_XLOG_SHORT_PHD = 24
"""MAXALIGN(sizeof(XLogPageHeaderData)) (xlog_internal.h)."""
SIZE_OF_XLOG_LONG_PHD = 40
"""MAXALIGN(sizeof(XLogLongPageHeaderData)) (xlog_internal.h)."""
SIZE_OF_XLOG_RECORD = 24
"""SizeOfXLogRecord: xl_tot_len, xl_xid, xl_prev, xl_info, xl_rmid, 2 bytes padding, xl_crc (xlogrecord.h)."""
XL_CRC_OFFSET = 20
"""offsetof(XLogRecord, xl_crc)."""
XL_RMID_OFFSET = 17
"""offsetof(XLogRecord, xl_rmid)."""
RM_XLOG_ID = 0
"""rmgrlist.h: the first resource manager, XLOG, owns checkpoint records."""


def record_crc(record: bytes) -> int:
    """The CRC a WAL record (header and body, contiguous) must carry."""
    return core.crc32c(record[:XL_CRC_OFFSET], core.crc32c(record[SIZE_OF_XLOG_RECORD:]))


def segment_name(tli: int, lsn: int, seg_size: int) -> str:
    """The name of the segment holding ``lsn`` (rescue.files.wal_file_name: XLogFileName)."""
    return wal_file_name(tli, lsn // seg_size, seg_size)


def parse_lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


@dataclass(frozen=True)
class RecordSpan:
    """Where a record's bytes lie in its segment file: runs of (file offset, length), page headers skipped."""

    path: Path
    runs: tuple[tuple[int, int], ...]
    total_len: int

    def read(self, data: bytes) -> bytes:
        return b"".join(data[off : off + n] for off, n in self.runs)

    def file_offset(self, record_offset: int) -> int:
        """The file offset of byte ``record_offset`` of the record."""
        for off, n in self.runs:
            if record_offset < n:
                return off + record_offset
            record_offset -= n
        raise ValueError(record_offset)


def record_span(pgdata: Path, tli: int, lsn: int, seg_size: int, page_size: int) -> RecordSpan:
    """The record at ``lsn`` in its segment (the segment must hold all of it: a record continued into the next
    segment is refused, which a fresh checkpoint record never is in practice)."""
    path = pgdata / "pg_wal" / segment_name(tli, lsn, seg_size)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PgSurgeonError(
            f"{path.relative_to(pgdata)} is missing: no checkpoint record to damage",
            hint="undo the earlier damage to pg_wal first",
        ) from None
    start = lsn % seg_size
    if start + SIZE_OF_XLOG_RECORD > len(data) or start % page_size < SIZE_OF_XLOG_SHORT_PHD:
        raise PgSurgeonError(f"{path.relative_to(pgdata)} does not hold a record at offset {start}")
    (tot_len,) = struct.unpack_from("<I", data, start)
    if tot_len < SIZE_OF_XLOG_RECORD or tot_len > seg_size:
        raise PgSurgeonError(
            f"the record at {lsn >> 32:X}/{lsn & 0xFFFFFFFF:X} has length {tot_len}: it is already damaged",
            hint="undo the earlier damage first",
        )
    runs: list[tuple[int, int]] = []
    pos, left = start, tot_len
    while left > 0:
        if pos >= len(data):
            raise PgSurgeonError(f"the checkpoint record runs past the end of {path.relative_to(pgdata)}")
        if pos % page_size == 0:  # a continuation page: skip its short header
            pos += SIZE_OF_XLOG_SHORT_PHD
        n = min(left, page_size - pos % page_size)
        runs.append((pos, n))
        pos += n
        left -= n
    return RecordSpan(path, tuple(runs), tot_len)
