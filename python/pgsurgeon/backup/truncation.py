"""A relation VACUUM truncated while pg_basebackup copied it is no damage: the backup's own WAL holds the truncation,
and replay of the backup makes the files agree (issue 32).

VACUUM cuts empty pages off a table's end (``RelationTruncate``, src/backend/catalog/storage.c, WAL-logs an
``XLOG_SMGR_TRUNCATE`` record first). A file copied before the cut still holds what named the lost pages: the table's
indexes (``index.tid_beyond_heap``), its visibility map and free space map (``file.vm_beyond_end``,
``file.fsm_beyond_end``); a table file that shrank while it was sent is padded with zeros (basebackup.c, sendFile),
all-zero pages past the cut. pg_waldump prints the record as ``desc: TRUNCATE base/5/16384 to 0 blocks flags 7``
(src/backend/access/rmgrdesc/smgrdesc.c). Only for base backups: in a stopped data directory the same findings are
damage.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core

if TYPE_CHECKING:
    from pgsurgeon.backup import BackupSource
    from pgsurgeon.findings import Finding

_ZEROED = frozenset({"page_header.zeroed_referenced", "page_header.zeroed_all_visible"})
CODES = frozenset({"index.tid_beyond_heap", "file.vm_beyond_end", "file.fsm_beyond_end"}) | _ZEROED
"""What a truncation during the copy can leave behind."""

_TRUNCATE = re.compile(r"lsn: (?P<lsn>[0-9A-F]+/[0-9A-F]+),.*desc: TRUNCATE (?P<path>\S+) to (?P<blocks>\d+) blocks")
_SEGMENT = re.compile(r"^[0-9A-F]{24}$")
_HEAP_TID = re.compile(r"points to heap \((?P<block>\d+),\d+\)")
_LEFT = "findings a VACUUM truncation during the copy may explain are left as they are"
_FORK_SUFFIX = re.compile(r"(_vm|_fsm|_init)?(\.\d+)?$")


@dataclass(frozen=True)
class Truncation:
    lsn: str
    blocks: int


def rel_of_path(path: str) -> tuple[int, int] | None:
    """(database OID, relfilenode) of a relation file's path in the data directory (0 for global/)."""
    parts = _FORK_SUFFIX.sub("", path).split("/")
    if not parts[-1].isdigit():
        return None
    if parts[0] == "global":
        return 0, int(parts[-1])
    return (int(parts[-2]), int(parts[-1])) if len(parts) >= 3 and parts[-2].isdigit() else None


def lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


@dataclass
class Excused:
    findings: list[Finding] = field(default_factory=list)
    """Reworded, severity ``info``."""
    errors: int = 0
    """How many of them were errors before (the others warnings)."""
    note: str = ""
    """Why findings that may be explained were not looked at (no pg_waldump, no WAL)."""


def excuse(backup: BackupSource, major: int, findings: list[Finding], metas: list[Any]) -> Excused:
    """Take out of ``findings`` those a truncation in the backup's WAL explains and return them reworded."""
    out = Excused()
    start = backup.start_lsn
    if start is None or not any(f["code"] in CODES for f in findings):
        return out
    got = truncations(backup, major, start)
    if isinstance(got, str):
        out.note = got
        return out
    heaps = _index_heaps(metas)
    listed = _listed_pages(findings, got, heaps)
    kept: list[Finding] = []
    for f in findings:
        hit = _explained(f, got, heaps)
        if hit is None and f["code"] == "index.tid_beyond_heap" and f["item"] is None:
            hit = listed.get((f["path"], f["block"]))
        if hit is None:
            kept.append(f)
            continue
        what = "the table" if f["code"] == "index.tid_beyond_heap" else "the relation"
        f["message"] += (
            f" (not damage: VACUUM truncated {what} to {hit.blocks} blocks at LSN {hit.lsn} while the backup copied "
            "it; WAL replay of the backup makes the files agree)"
        )
        out.errors += f["severity"] == "error"
        f["severity"] = "info"
        out.findings.append(f)
    findings[:] = kept
    return out


def _listed_pages(
    findings: list[Finding], cuts: dict[tuple[int, int], Truncation], heaps: dict[Any, Any]
) -> dict[tuple[str | None, int | None], Truncation]:
    """Index pages whose listed entries into the heap (the core names the first 16 of a page, then counts the rest in
    one finding without an item, crates/core/src/checks/scan/unit.rs) are all explained: the count with them."""
    out: dict[tuple[str | None, int | None], Truncation] = {}
    unexplained: set[tuple[str | None, int | None]] = set()
    for f in findings:
        if f["code"] != "index.tid_beyond_heap" or f["item"] is None:
            continue
        page = (f["path"], f["block"])
        hit = _explained(f, cuts, heaps)
        if hit is None:
            unexplained.add(page)
        else:
            out[page] = hit
    return {page: hit for page, hit in out.items() if page not in unexplained}


def _index_heaps(metas: list[Any]) -> dict[tuple[int, int], tuple[int, int]]:
    """(database, index relfilenode) -> (database, its table's relfilenode), from the relation descriptions."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for key, meta in metas:
        heap = meta.get("heap")
        if heap is not None:
            out[(int(key[1]), int(key[2]))] = (int(heap[1]), int(heap[2]))
    return out


def _explained(f: Finding, cuts: dict[tuple[int, int], Truncation], heaps: dict[Any, Any]) -> Truncation | None:
    """The truncation that explains finding ``f``, if one does."""
    rel = rel_of_path(f["path"] or "")
    if rel is None or f["code"] not in CODES:
        return None
    if f["code"] == "index.tid_beyond_heap":
        tid = _HEAP_TID.search(f["message"])
        cut = cuts.get(heaps.get(rel, (-1, -1)))
        return cut if cut is not None and tid is not None and cut.blocks <= int(tid.group("block")) else None
    cut = cuts.get(rel)
    if cut is None:
        return None
    if f["code"] in _ZEROED:
        # the padding of a file that shrank while sent: only past the cut, in the main fork
        return cut if f["fork"] in (None, "main") and f["block"] is not None and f["block"] >= cut.blocks else None
    return cut


def truncations(backup: BackupSource, major: int, start: int) -> dict[tuple[int, int], Truncation] | str:
    """Each relation's smallest truncation in the backup's WAL from its start LSN, or why the WAL was not read."""
    from pgsurgeon.rescue.walstatus import waldump_for

    tool = waldump_for(major)
    if tool is None:
        return f"{_LEFT}: no pg_waldump of PostgreSQL {major} found to read the backup's WAL"
    label = backup.info["label"]
    # pg_waldump reads timeline 1 unless told: a backup of a promoted standby starts on a later one
    timeline = str(label["timeline"] or 1) if label is not None else "1"
    with _wal_dir(backup) as wal:
        if wal is None:  # taken with -X none
            return f"{_LEFT}: the backup has no pg_wal"
        done = subprocess.run(
            [str(tool), "--path", str(wal), "--rmgr", "Storage", "--start", lsn_text(start), "--timeline", timeline],
            capture_output=True,
            text=True,
            check=False,
        )
    out: dict[tuple[int, int], Truncation] = {}
    for line in done.stdout.splitlines():
        m = _TRUNCATE.search(line)
        rel = rel_of_path(m.group("path")) if m else None
        if m is None or rel is None:
            continue
        blocks = int(m.group("blocks"))
        if rel not in out or blocks < out[rel].blocks:
            out[rel] = Truncation(m.group("lsn"), blocks)
    return out


@contextmanager
def _wal_dir(backup: BackupSource) -> Iterator[Path | None]:
    """The backup's pg_wal as a directory pg_waldump reads: in place for a plain backup, its segments copied out of
    pg_wal.tar to a temporary directory (removed after) for a tar backup."""
    wal = backup.root / "pg_wal"
    if backup.form == "plain":
        yield wal if wal.is_dir() else None
        return
    try:
        members = [(n, is_dir) for n, is_dir, _size in core.vfs_list(wal)]
    except (OSError, ValueError):
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix="pgsurgeon-wal-"))
    try:
        for name, is_dir in members:
            if not is_dir and _SEGMENT.match(name):
                core.vfs_copy(wal / name, tmp / name)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
