# Type stub for the compiled module built from crates/py.

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pgsurgeon.boundary import (
    AllIndexedConfig,
    AllIndexedResult,
    BackupInfo,
    CarveConfig,
    CarveResult,
    CheckedChunk,
    ClassifyConfig,
    ClassifyResult,
    ClusterFacts,
    ClusterFinding,
    ClusterOptions,
    ControlFile,
    DamageSpec,
    Finding,
    IndexEvidenceConfig,
    IndexTid,
    Injection,
    LossConfig,
    ManifestReport,
    ModeInfo,
    MultiEvidence,
    PageEvidence,
    PageReport,
    ProfileSpan,
    RelationFork,
    RelDesc,
    ScannerConfig,
    ScanResult,
    TypeDesc,
    UnloadSummary,
    XidEvidence,
)

__version__: str

class FormatError(ValueError): ...

class Scanner:
    def __init__(self, root: str, config: ScannerConfig, catalog: FilesCatalog | None = None) -> None: ...
    def main_forks(self) -> list[tuple[int, int, int, int, str]]: ...
    @property
    def total_bytes(self) -> int: ...
    def relations(self) -> list[RelationFork]: ...
    def progress(self) -> tuple[int, int]: ...
    def want_checked(self) -> None: ...
    def checked_chunks(self) -> list[CheckedChunk]: ...
    def cancel(self) -> None: ...
    def run(self) -> ScanResult: ...

class RowCarver:
    def __init__(self, config: CarveConfig) -> None: ...
    def progress(self) -> tuple[int, int, int]: ...
    def cancel(self) -> None: ...
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
    ) -> UnloadSummary: ...

def inspect_page(data: bytes, block: int, checksums: bool, kind: str | None = None) -> PageReport: ...
def describe_code(code: str) -> tuple[str, str, str, str]: ...
def finding_codes() -> list[FindingCode]: ...
def page_checksum(data: bytes, block: int) -> int | None: ...
def parse_control(data: bytes) -> ControlFile: ...
def read_control(pgdata: str) -> ControlFile: ...
def crc32c(data: bytes, append_to: int | None = None) -> int: ...
def profile_now() -> int: ...
def profile_record(role: str, start_ns: int, end_ns: int, cpu_ns: int) -> None: ...
def profile_thread_cpu() -> int: ...
def profile_take() -> list[ProfileSpan]: ...
def control_crc_offset(data: bytes) -> int: ...
def cluster_checks(pgdata: str, wal: bool) -> list[ClusterFinding]: ...
def hint_evidence(pgdata: str, blcksz: int, relseg_size: int, lo: int, hi: int) -> tuple[list[XidEvidence], int]: ...
def multi_evidence(pgdata: str, blcksz: int, relseg_size: int, lo: int, hi: int) -> tuple[list[MultiEvidence], int]: ...
def discover_relations(pgdata: str) -> list[RelationFork]: ...
def inject_page(
    data: bytes,
    block: int,
    damages: list[DamageSpec],
    seed: int,
    keep_checksum: bool = False,
    source: bytes | None = None,
) -> Injection: ...
def inject_modes() -> list[ModeInfo]: ...
def classify_relation(config: ClassifyConfig) -> ClassifyResult: ...
def classify_pages(data: bytes, first: int, config: ClassifyConfig) -> ClassifyResult: ...
def carve_pages(data: bytes, blocks: list[int], blob: bytes, config: CarveConfig) -> tuple[CarveResult, bytes]: ...
def toast_by_index(
    valueids: list[int],
    blcksz: int,
    read_index: Callable[[int, int], bytes],
    read_toast: Callable[[int, int], bytes],
) -> list[tuple[int, int, bytes]]: ...
def index_evidence(config: IndexEvidenceConfig) -> list[IndexTid]: ...
def loss_evidence(config: LossConfig) -> list[PageEvidence]: ...
def all_indexed(config: AllIndexedConfig) -> AllIndexedResult: ...
def config_fields(name: str) -> list[str]: ...

class Backup:
    def __init__(self, path: str) -> None: ...
    @property
    def root(self) -> Path: ...
    def info(self) -> BackupInfo: ...
    def verify(self) -> ManifestReport: ...
    def restarts(self) -> int: ...
    def read_order(self, rel: str) -> int | None: ...
    def hold(self, rel: str) -> None: ...
    def release(self, rel: str) -> None: ...
    def segments(self, rel: str) -> list[tuple[int, Path]]: ...
    def close(self) -> None: ...

def is_backup(path: str) -> bool: ...
def vfs_list(path: str) -> list[tuple[str, bool, int]]: ...
def vfs_copy(src: str, dest: str) -> int: ...
def vfs_read(path: str) -> bytes: ...

class FilesCatalog:
    def __init__(self, pgdata: str, options: ClusterOptions | None = None) -> None: ...
    def facts(self) -> ClusterFacts: ...
    def read(self, db: int, relid: int, columns: list[str]) -> tuple[list[list[str | None]], list[str], list[str]]: ...
    def table_desc(self, db: int, relid: int, relnatts: int) -> RelDesc: ...
    def keys(self, db: int, oids: list[int]) -> list[tuple[int, int, int] | None]: ...
    def locate(self, db: int, oid: int) -> tuple[int, int, int, str, int] | None: ...

def missing_value(payload: bytes, type_desc: TypeDesc, server_version_num: int) -> str | None: ...
def format_datum(raw: bytes, type_desc: TypeDesc, server_version_num: int) -> str: ...

class CrossPages:
    def __init__(self, kind: str, blcksz: int) -> None: ...
    def add(self, data: bytes, first: int) -> None: ...
    def finish(self, nblocks: int) -> list[Finding]: ...

class LineMap:
    def __init__(self, nblocks: int) -> None: ...
    @property
    def nblocks(self) -> int: ...

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
) -> tuple[list[Finding], list[int], list[int], list[tuple[int, int, int, int, bool]], int]: ...
def leaf_keys(data: bytes) -> list[tuple[int, int, bytes]]: ...

class EntryScan:
    def __init__(
        self,
        nblocks: int,
        blcksz: int,
        *,
        named_blocks: list[int],
        key_blocks: list[int] = ...,
        key_tids: list[tuple[int, int]] = ...,
        keys: list[bytes] = ...,
    ) -> None: ...
    def heap(self, data: bytes, first: int) -> None: ...
    def index(self, data: bytes, index: int, keyed: bool) -> None: ...
    def named(self) -> list[tuple[int, int, list[int]]]: ...
    def gone(self) -> list[tuple[int, int, str, int, list[int]]]: ...
    def keys_kept(self) -> list[tuple[tuple[int, int], bytes]]: ...
    @property
    def keyed_entries(self) -> int: ...

def leaf_tids(data: bytes) -> list[tuple[int, int, int]]: ...
def lp_flags(data: bytes) -> bytes: ...

# BEGIN generated finding codes (crates/core/src/finding Code; PGSURGEON_REGEN_CODES=1 pytest test_code_catalogue.py)
FindingCode = Literal[
    "checksum.mismatch",
    "page_header.bad_flags",
    "page_header.lower_gt_upper",
    "page_header.upper_gt_special",
    "page_header.special_gt_blcksz",
    "page_header.special_unaligned",
    "page_header.upper_zero",
    "page_header.invalid",
    "page_header.lower_below_header",
    "page_header.special_size",
    "page_header.page_size",
    "page_header.layout_version",
    "page_header.short_page",
    "line_pointer.past_special",
    "line_pointer.before_upper",
    "line_pointer.unaligned",
    "line_pointer.too_short",
    "line_pointer.past_page",
    "line_pointer.redirect_target",
    "line_pointer.count",
    "line_pointer.many_invalid",
    "line_pointer.hot_chain",
    "line_pointer.unreferenced_tuple",
    "tuple_header.t_hoff",
    "tuple_header.natts",
    "tuple_header.hoff_gt_len",
    "tuple_header.xmin_old",
    "tuple_header.xmax_old",
    "tuple_header.xmin_old_hinted",
    "tuple_header.xmin_future",
    "tuple_header.xmax_future",
    "tuple_header.multi_future",
    "tuple_header.multi_old",
    "tuple_header.ctid_not_self",
    "file.vm_beyond_end",
    "file.fsm_beyond_end",
    "tuple_header.xmin_invalid",
    "tuple_header.infomask",
    "tuple_header.ctid",
    "page_header.zeroed_all_visible",
    "page_header.zeroed_referenced",
    "page_header.lsn_future",
    "index.tid_beyond_heap",
    "index.tid_unused",
    "index.zero_page",
    "index.btree_flags",
    "index.sibling_link",
    "file.unreadable",
    "file.missing_segment",
    "file.short_segment",
    "file.partial_page",
    "file.oversized_segment",
    "tuple_data.natts_gt_relation",
    "tuple_data.attr_past_end",
    "tuple_data.varlena_bad_header",
    "tuple_data.compressed_bad",
    "tuple_data.value_bad",
    "tuple_data.trailing_bytes",
    "toast.pointer_bad",
    "toast.flag_missing",
    "toast.value_missing",
    "toast.chunk_missing",
    "toast.chunk_unexpected",
    "toast.chunk_size",
    "toast.chunk_header",
    "server.invalid_page",
    "server.read_error",
    "server.error",
    "server.crash",
    "server.timeout",
    "amcheck.heap",
    "amcheck.toast",
    "amcheck.btree",
    "index.missing_entry",
    "file.heap_truncated",
    "file.manifest_missing",
    "file.manifest_size",
    "file.manifest_checksum",
    "file.manifest_extra",
    "file.manifest_invalid",
    "file.manifest_own_checksum",
    "file.manifest_oversized",
    "file.manifest_system",
    "file.manifest_wal",
    "file.wal_missing",
    "file.wal_short",
    "file.xact_missing",
    "file.wal_page_header",
    "file.wal_checkpoint_record",
    "file.control_crc",
    "file.control_unreadable",
    "file.orphan",
    "file.relation_missing",
    "file.wal_record",
    "file.control_anomaly",
    "file.relmap",
    "file.multixact_missing",
    "file.multixact_offsets",
    "tuple_header.status_lost",
    "tuple_header.hint_contradiction",
    "tuple_header.multi_updater",
    "file.timeline_history_missing",
    "file.timeline_history",
    "index.special_size",
    "index.bad_cycle_id",
    "index.hash_metapage",
    "index.hash_page_type",
    "index.hash_chain",
    "index.hash_bitmap",
    "index.hash_code",
    "index.hash_unreachable",
    "index.brin_metapage",
    "index.brin_page_type",
    "index.brin_revmap",
    "index.brin_tuple",
    "index.brin_unreferenced",
    "index.gin_metapage",
    "index.gin_page_flags",
    "index.gin_entry_tuple",
    "index.gin_entry_order",
    "index.gin_posting_list",
    "index.gin_posting_tree",
    "index.gin_pending_list",
    "amcheck.gin",
    "index.gin_right_link",
    "index.gist_flags",
    "index.gist_nsn",
    "index.gist_follow_right",
    "index.gist_tuple",
    "index.gist_downlink",
    "index.gist_rightlink",
    "index.gist_unreachable",
    "index.spgist_meta",
    "index.spgist_page",
    "index.spgist_counts",
    "index.spgist_tuple",
    "index.spgist_inner",
    "index.spgist_leaf_chain",
    "index.spgist_downlink",
    "index.spgist_unreachable",
    "vm.all_visible_wrong",
    "vm.all_frozen_wrong",
    "fsm.tree_inconsistent",
]
# END generated finding codes
