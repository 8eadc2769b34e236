"""Typed Python face of the Rust core (``pgsurgeon._pgsurgeon``): the only importer of the extension module.

Configs cross as the TypedDicts of :mod:`pgsurgeon.boundary`, deserialised by the binding straight into the core's
structs (unknown keys refused); results come back as the dicts those modules type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import _pgsurgeon as _ext

if TYPE_CHECKING:
    from pgsurgeon.boundary import (
        AllIndexedConfig,
        AllIndexedResult,
        CarveConfig,
        CarveResult,
        ClassifyConfig,
        ClassifyResult,
        ClusterFinding,
        ClusterOptions,
        ControlFile,
        DamageSpec,
        Finding,
        IndexEvidenceConfig,
        IndexTid,
        Injection,
        LossConfig,
        ModeInfo,
        MultiEvidence,
        PageEvidence,
        PageReport,
        ProfileSpan,
        RelationFork,
        TypeDesc,
        UnloadSummary,
        XidEvidence,
    )

FormatError = _ext.FormatError
Scanner = _ext.Scanner

# Page kinds the core knows by name (crates/core/src/format/page.rs PageKind).
PAGE_KINDS = ("heap", "btree", "btree_meta", "hash", "gist", "spgist", "gin", "brin", "sequence", "map")


def inspect_page(data: bytes, block: int, *, checksums: bool, kind: str | None = None) -> PageReport:
    """Decode one page: header, line pointers, tuple headers or btree items, findings."""
    return _ext.inspect_page(data, block, checksums, kind)


def finding_codes() -> list[str]:
    """Every finding code the core can emit (crates/core/src/finding/mod.rs ``Code``)."""
    return list(_ext.finding_codes())


def describe_code(code: str) -> tuple[str, str, str, str]:
    """(area, severity, pg_error, remedy) of a finding code, from the core's catalogue."""
    return _ext.describe_code(code)


def page_checksum(data: bytes, block: int) -> int | None:
    """PostgreSQL's pg_checksum_page for ``data`` at ``block`` (counted across segments)."""
    return _ext.page_checksum(data, block)


def crc32c(data: bytes, append_to: int | None = None) -> int:
    """PostgreSQL's CRC-32C of ``data``, or continued over it from the finished value ``append_to``."""
    return _ext.crc32c(data, append_to)


def profile_now() -> int:
    """Nanoseconds on the core's profile clock (0 unless ``PGSURGEON_PROFILE`` is set)."""
    return _ext.profile_now()


def profile_thread_cpu() -> int:
    """CPU nanoseconds the calling thread has used."""
    return _ext.profile_thread_cpu()


def profile_record(role: str, start_ns: int, end_ns: int, cpu_ns: int) -> None:
    """Record a span of the Python layer beside the core's own (nothing unless ``PGSURGEON_PROFILE`` is set)."""
    _ext.profile_record(role, start_ns, end_ns, cpu_ns)


def profile_take() -> list[ProfileSpan]:
    """Every span recorded so far, taken out of the profile."""
    return _ext.profile_take()


def control_crc_offset(data: bytes) -> int:
    """Where a pg_control image keeps its CRC, for the layout its pg_control_version names (FormatError when that
    version is unknown or the image too short)."""
    return _ext.control_crc_offset(data)


def parse_control(data: bytes) -> ControlFile:
    """A pg_control image decoded for its PostgreSQL version."""
    return _ext.parse_control(data)


def read_control(pgdata: str | Path) -> ControlFile:
    """``global/pg_control`` of a data directory, decoded for its PostgreSQL version."""
    return _ext.read_control(str(pgdata))


def cluster_checks(pgdata: str | Path, wal: bool = True) -> list[ClusterFinding]:
    """The cluster's bookkeeping against its pg_control: the WAL segments of the checkpoint and redo point (with
    ``wal``), pg_xact's segments from the oldest to the next XID (crates/core/src/checks/cluster.rs)."""
    return _ext.cluster_checks(str(pgdata), wal)


def hint_evidence(pgdata: str | Path, blcksz: int, relseg_size: int, lo: int, hi: int) -> tuple[list[XidEvidence], int]:
    """What heap tuples' hint bits say about XIDs ``lo..=hi``, and the rows depending on them; with the number of
    heap pages read (crates/core/src/visibility/hint_evidence.rs)."""
    return _ext.hint_evidence(str(pgdata), blcksz, relseg_size, lo, hi)


def multi_evidence(
    pgdata: str | Path, blcksz: int, relseg_size: int, lo: int, hi: int
) -> tuple[list[MultiEvidence], int]:
    """What heap tuples say about MultiXacts ``lo..=hi`` whose members are lost: lock-only or updated, and the
    updater from the update chain (crates/core/src/visibility/multi_evidence.rs)."""
    return _ext.multi_evidence(str(pgdata), blcksz, relseg_size, lo, hi)


def discover_relations(pgdata: str | Path) -> list[RelationFork]:
    """Every relation fork under ``pgdata`` with its segment files."""
    return _ext.discover_relations(str(pgdata))


def inject_page(
    data: bytes,
    block: int,
    damages: list[DamageSpec],
    *,
    seed: int,
    keep_checksum: bool = False,
    source: bytes | None = None,
) -> Injection:
    """Damage one page image (never a file): the changed byte runs (hex, offsets from the page start) and notes."""
    return _ext.inject_page(data, block, damages, seed, keep_checksum, source)


def inject_modes() -> list[ModeInfo]:
    """The page damage modes of the core."""
    return _ext.inject_modes()


def classify_relation(config: ClassifyConfig) -> ClassifyResult:
    """Classify every block of a heap relation from its files; ``blocks`` lists only those that are not healthy."""
    return _ext.classify_relation(config)


def classify_pages(data: bytes, first: int, config: ClassifyConfig) -> ClassifyResult:
    """Like :func:`classify_relation` for consecutive pages held in ``data`` from block ``first``."""
    return _ext.classify_pages(data, first, config)


def carve_pages(data: bytes, blocks: list[int], config: CarveConfig, blob: bytes = b"") -> tuple[CarveResult, bytes]:
    """Carve rows out of heap pages: the result (rows with provenance, lost items, what to ask the server) and the
    formatted rows, each ``out[row["data_start"]:row["data_end"]]``."""
    return _ext.carve_pages(data, blocks, blob, config)


class RowCarver:
    """The row engine over one heap relation (crates/core/src/rows): carves block ranges in parallel and streams
    the rows to files or to a callable; no row crosses into Python one by one."""

    def __init__(self, config: CarveConfig) -> None:
        self._c = _ext.RowCarver(config)

    def progress(self) -> tuple[int, int, int]:
        """(blocks done, rows to the main output, rows kept apart)."""
        return self._c.progress()

    def cancel(self) -> None:
        self._c.cancel()

    def run(
        self,
        ranges: list[tuple[int, int]],
        jobs: int,
        *,
        unit_blocks: int = 128,
        main: str | None = None,
        apart: str | None = None,
        prov: str | None = None,
        write: Callable[[bytes, bytes, bytes], None] | None = None,
        read: Callable[[int, int], bytes] | None = None,
        oracle: object | None = None,
    ) -> UnloadSummary:
        """Carve the half-open block ``ranges``; rows are appended to the files ``main``/``apart`` (and ``prov``)
        or passed to ``write(main, apart, prov)``. ``oracle`` answers ``xid_status``, ``multi_updaters``,
        ``toast_chunks``, ``commit_times`` and ``subxacts``. Returns the summary: counts, lost items, pages that need
        accounting."""
        return self._c.run(
            ranges,
            jobs,
            unit_blocks=unit_blocks,
            main=main,
            apart=apart,
            prov=prov,
            write=write,
            read=read,
            oracle=oracle,
        )


def toast_by_index(
    valueids: list[int], blcksz: int, read_index: Callable[[int, int], bytes], read_toast: Callable[[int, int], bytes]
) -> list[tuple[int, int, bytes]]:
    """The chunks (valueid, chunk_seq, bytes) of these TOAST values found through the TOAST index, its pages and
    the TOAST table's read by ``read_index(first, count)`` and ``read_toast(first, count)``: deleted values too,
    which no query returns."""
    return _ext.toast_by_index(valueids, blcksz, read_index, read_toast)


def index_evidence(config: IndexEvidenceConfig) -> list[IndexTid]:
    """Heap TIDs inside the given blocks that btree leaf entries point to."""
    return _ext.index_evidence(config)


def loss_evidence(config: LossConfig) -> list[PageEvidence]:
    """What the table's btree indexes and visibility map say about the rows of the given heap pages."""
    return _ext.loss_evidence(config)


def all_indexed(config: AllIndexedConfig) -> AllIndexedResult:
    """amcheck's heapallindexed from the relation files (crates/core/src/checks/diagnose/allindexed/): per index the
    entries fingerprinted, the live rows not found and the doubts, and ``proven`` per index."""
    return _ext.all_indexed(config)


def files_catalog(pgdata: Path, options: ClusterOptions) -> _ext.FilesCatalog:
    """A data directory read as a catalog, with no server (crates/core/src/catalog)."""
    return _ext.FilesCatalog(str(pgdata), options)


def open_backup(path: Path) -> _ext.Backup:
    """A base backup opened in place and mounted at its directory (crates/core/src/backup)."""
    return _ext.Backup(str(path))


def vfs_list(path: str | Path) -> list[tuple[str, bool, int]]:
    """A directory's entries as (name, is_dir, length), in a data directory or a mounted backup."""
    return _ext.vfs_list(str(path))


def vfs_copy(src: str | Path, dest: str | Path) -> int:
    """Copy a file of a data directory or a mounted backup to an ordinary file; the bytes copied."""
    return _ext.vfs_copy(str(src), str(dest))


def vfs_read(path: str | Path) -> bytes:
    """A small file of a data directory or a mounted backup, whole (at most 64 MiB: longer is an OSError)."""
    return _ext.vfs_read(str(path))


def is_backup(path: Path) -> bool:
    """A base backup (backup_label, backup_manifest or base.tar*) rather than a data directory."""
    return _ext.is_backup(str(path))


def missing_value(payload: bytes, type_desc: TypeDesc, server_version_num: int) -> str | None:
    """attmissingval's one element (its array bytes after the varlena header) printed as ``type_desc``."""
    return _ext.missing_value(payload, type_desc, server_version_num)


def format_datum(raw: bytes, type_desc: TypeDesc, server_version_num: int) -> str:
    """A stored datum (varlena with its header, or fixed bytes) printed as ``type_desc``."""
    return _ext.format_datum(raw, type_desc, server_version_num)


LineMap = _ext.LineMap
CrossPages = _ext.CrossPages
"""One index's pages read through the server, for the checks across its pages a scan runs on its files: give it to
``add(data, first)`` batch by batch, then ``finish(nblocks)`` for the findings."""
EntryScan = _ext.EntryScan
"""Repair planning's pass over a table's btree entries (crates/core/src/rows/entryscan.rs): feed ``heap`` the table's
pages and ``index`` each index's, then read ``named``, ``gone`` and ``keys_kept``."""


@dataclass
class PageBatch:
    """What the core found in a batch of consecutive pages (diagnose)."""

    findings: list[Finding]
    suspect: list[int]
    """Blocks with structural damage: no SQL that reads their tuples goes to them."""
    zero: list[int]
    candidates: list[tuple[int, int, int, int, bool]]
    """Index entries whose row seems missing: (index block, index item, heap block, heap item, past the end)."""
    pages: int


def check_pages(
    data: bytes,
    first: int,
    *,
    kind: str | None,
    checksums: bool,
    blcksz: int,
    relnatts: int | None = None,
    record: LineMap | None = None,
    against: LineMap | None = None,
    nblocks: int | None = None,
) -> PageBatch:
    """Check the pages of ``data`` (block ``first`` onwards) in the core, with the GIL released. Heap batches fill
    ``record`` with their line pointers; index batches compare their heap TIDs with ``against``. ``nblocks``: the
    relation's length, for the block numbers an index page names (not judged without it)."""
    findings, suspect, zero, candidates, pages = _ext.check_pages(
        data,
        first,
        kind=kind,
        checksums=checksums,
        blcksz=blcksz,
        relnatts=relnatts,
        record=record,
        against=against,
        nblocks=nblocks,
    )
    return PageBatch(findings, suspect, zero, candidates, pages)


def leaf_keys(data: bytes) -> list[tuple[int, int, bytes]]:
    """(heap block, heap item, key bytes) of every live entry of a btree leaf page (the key as bt_page_items'
    ``data``)."""
    return _ext.leaf_keys(data)


def leaf_tids(data: bytes) -> list[tuple[int, int, int]]:
    """(entry's line pointer, heap block, heap item) of every live entry of a btree leaf page."""
    return _ext.leaf_tids(data)


def lp_flags(data: bytes) -> bytes:
    """The line pointer flags of a heap page, one byte each (0 unused, 1 normal, 2 redirect, 3 dead)."""
    return _ext.lp_flags(data)
