"""Data directories and relation files on disk: finding PGDATA, segments, reading one block."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile, SegFile

# Defaults when no pg_control is at hand (BLCKSZ and RELSEG_SIZE in pg_config.h).
DEFAULT_BLCKSZ = 8192
DEFAULT_RELSEG_SIZE = 131072
# Transactions per pg_xact segment file: 4 a byte (2 status bits each), 32 pages per SLRU segment (clog.c, slru.h).
XIDS_PER_XACT_FILE = DEFAULT_BLCKSZ * 4 * 32

_SEGMENT = re.compile(r"^(?P<base>.+?)\.(?P<segno>[1-9][0-9]*)$")


def postmaster_pid(pgdata: Path) -> int | None:
    """PID of the postmaster running on ``pgdata`` (from postmaster.pid, checked alive), or None."""
    try:
        first = (pgdata / "postmaster.pid").read_text(encoding="utf-8").split("\n", 1)[0]
        pid = int(first.strip())
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, owned by the server user
        return pid
    return pid


def find_pgdata(start: Path) -> Path | None:
    """The data directory that contains ``start``: the nearest parent with global/pg_control."""
    for candidate in [start, *start.parents]:
        if (candidate / "global" / "pg_control").is_file() and (candidate / "PG_VERSION").is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Geometry:
    """Block and segment sizes, and whether checksums are on, from pg_control when available: the one place
    block numbers (counted across segments, as server errors count them) become segment files and offsets."""

    blcksz: int = DEFAULT_BLCKSZ
    relseg_size: int = DEFAULT_RELSEG_SIZE
    """RELSEG_SIZE: blocks per segment file."""
    checksums: bool | None = None
    pgdata: Path | None = None
    control: ControlFile | None = None

    def locate(self, block: int) -> tuple[int, int]:
        """(segment number, byte offset in that segment file) of ``block``."""
        segno, in_file = divmod(block, self.relseg_size)
        return segno, in_file * self.blcksz

    def first_block(self, segno: int) -> int:
        return segno * self.relseg_size

    def block_at(self, segno: int, offset: int) -> int:
        """The block holding byte ``offset`` of segment ``segno``."""
        return self.first_block(segno) + offset // self.blcksz

    def blocks_to(self, segno: int, size: int) -> int:
        """Blocks of a relation whose last segment is ``segno`` and ``size`` bytes long (a partial page counts)."""
        return self.first_block(segno) + (size + self.blcksz - 1) // self.blcksz

    @classmethod
    def for_path(cls, path: Path) -> Geometry:
        pgdata = find_pgdata(path.resolve().parent)
        if pgdata is None:
            return cls()
        control = core.read_control(pgdata)
        return cls(
            blcksz=int(control["blcksz"]),
            relseg_size=int(control["relseg_size"]),
            checksums=int(control["data_checksum_version"]) > 0,
            pgdata=pgdata,
            control=control,
        )


def split_segment(path: Path) -> tuple[Path, int]:
    """``base/5/16384.2`` -> (``base/5/16384``, 2); a path without a segment suffix is segment 0."""
    m = _SEGMENT.match(path.name)
    if m is None:
        return path, 0
    return path.with_name(m.group("base")), int(m.group("segno"))


def segment_path(base: Path, segno: int) -> Path:
    return base if segno == 0 else base.with_name(f"{base.name}.{segno}")


def segment_name(filepath: str, segno: int, fork: str = "main") -> str:
    """A segment file's path as the server names it: ``base/5/16384``, ``base/5/16384_vm.1``."""
    stem = filepath if fork == "main" else f"{filepath}_{fork}"
    return stem if segno == 0 else f"{stem}.{segno}"


def segments_of(base: Path) -> list[SegFile]:
    """The segment files of a relation fork that exist: ``[{"segno", "path"}]`` (a gap is a missing segment)."""
    out: list[SegFile] = [{"segno": 0, "path": str(base)}] if base.exists() else []
    for p in base.parent.glob(f"{base.name}.*"):
        suffix = p.name[len(base.name) + 1 :]
        if suffix.isdigit() and not suffix.startswith("0"):
            out.append({"segno": int(suffix), "path": str(p)})
    return sorted(out, key=lambda s: int(s["segno"]))


class SegmentIndex:
    """:func:`segments_of` for many relations of a directory nothing changes meanwhile (a stopped cluster, a
    backup): each directory is listed once. Listed again for each relation, a database of 80,000 files made an
    unload of its 20,000 tables quadratic (half an hour)."""

    def __init__(self) -> None:
        self._dirs: dict[Path, tuple[set[str], dict[str, list[int]]]] = {}

    def of(self, base: Path) -> list[SegFile]:
        names, extra = self._dirs.get(base.parent) or self._list(base.parent)
        out: list[SegFile] = [{"segno": 0, "path": str(base)}] if base.name in names else []
        out += [{"segno": n, "path": f"{base}.{n}"} for n in sorted(extra.get(base.name, []))]
        return out

    def _list(self, directory: Path) -> tuple[set[str], dict[str, list[int]]]:
        names: set[str] = set()
        extra: dict[str, list[int]] = {}
        try:
            entries = list(os.scandir(directory))
        except OSError:
            entries = []
        for e in entries:
            names.add(e.name)
            stem, dot, suffix = e.name.rpartition(".")
            if dot and suffix.isdigit() and not suffix.startswith("0"):
                extra.setdefault(stem, []).append(int(suffix))
        self._dirs[directory] = (names, extra)
        return names, extra


@dataclass(frozen=True)
class Block:
    data: bytes
    file: Path
    segno: int
    block_in_file: int
    #: Fewer bytes than a block: the file ends inside this page.
    partial: bool


# VACUUM FULL, CLUSTER, TRUNCATE and REINDEX give a relation a new file, and leave the old one empty until the next
# checkpoint removes it (md.c's mdunlink): the path in an older error message may be that old file.
_REWRITTEN = (
    "if the relation was rewritten since (VACUUM FULL, CLUSTER, TRUNCATE, REINDEX), its file has a new name: "
    "pgsurgeon files PGDATA lists them, or ask the server: SELECT pg_relation_filepath('TABLE')"
)


def read_block(path: Path, block: int, geometry: Geometry) -> Block:
    """Read relation block ``block`` (counted across segments, as server errors count it).

    ``path`` may name segment 0 or the segment that holds the block.
    """
    base, given_segno = split_segment(path)
    segno, offset = geometry.locate(block)
    if given_segno and given_segno != segno:
        first = geometry.first_block(given_segno)
        last = first + geometry.relseg_size - 1
        raise PgSurgeonError(
            f"block {block} is not in segment file {path.name} (it holds blocks {first}..{last})",
            hint=f"pass the relation's first file ({base.name}) and the block number from the error message",
        )
    file = segment_path(base, segno)
    try:
        with file.open("rb") as fh:
            size = fh.seek(0, 2)
            if size == 0 and segno == 0:
                raise PgSurgeonError(f"{file} is empty (0 bytes): no block {block} in it", hint=_REWRITTEN)
            if offset >= size:
                nblocks = geometry.blocks_to(segno, size)
                raise PgSurgeonError(
                    f"block {block} is beyond the end of {file} ({size} bytes, blocks end at {nblocks - 1})",
                    hint="server errors count blocks across segments; check the block number and the file",
                )
            fh.seek(offset)
            data = fh.read(geometry.blcksz)
    except FileNotFoundError:
        if segno and base.exists():
            hint = f"segment 0 ({base.name}) is there but not segment {segno}: the blocks it held are lost unless "
            hint += "a backup or standby has the file"
        else:
            hint = _REWRITTEN
        raise PgSurgeonError(f"no such relation file: {file}", hint=hint) from None
    except PermissionError:
        raise PgSurgeonError(
            f"cannot read {file}: permission denied", hint="run as the cluster's owner or root"
        ) from None
    return Block(data, file, segno, offset // geometry.blcksz, partial=len(data) < geometry.blcksz)
