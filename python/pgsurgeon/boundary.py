"""The shapes that cross the binding (``pgsurgeon._pgsurgeon``), one TypedDict per serde struct of the core.

Configs go in as these dicts and are deserialised straight into the Rust structs named in each docstring, which
refuse unknown keys: a misspelled key fails at the call with the struct's expected keys, and mypy refuses it
before that. ``tests/test_boundary.py`` holds every config here to the keys its Rust struct accepts
(``_pgsurgeon.config_fields``). Results come back as the dicts the core's serde output makes; the ones the
library reads are typed here too, so a key read in Python is a key the core writes.

Keys marked ``NotRequired`` have a serde default on the Rust side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from typing_extensions import NotRequired

# ---------------------------------------------------------------------------------------------- shared parts


class SegFile(TypedDict):
    """crates/core/src/sources/blocks.rs ``SegFile``: one segment file of a relation fork."""

    segno: int
    path: str


class Horizons(TypedDict):
    """crates/core/src/visibility/transam.rs ``Horizons``: pg_control's XID and MultiXact horizons."""

    next_xid: int
    oldest_xid: int
    next_multi: int
    oldest_multi: int


class AttrDesc(TypedDict):
    """crates/core/src/format/tuple/ ``AttrDesc``: one pg_attribute row, as much as the tuple walk needs."""

    attnum: int
    attlen: int
    attalign: str | int
    attbyval: NotRequired[bool]
    attisdropped: NotRequired[bool]
    typname: NotRequired[str]
    attstorage: NotRequired[str | int]


class RelDesc(TypedDict):
    """crates/core/src/format/tuple/ ``RelDesc``: a relation's tuple descriptor."""

    natts: int
    attrs: list[AttrDesc]
    has_toast: NotRequired[bool]
    toast_relid: NotRequired[int | str]


class FieldDesc(TypedDict):
    """crates/core/src/datum/mod.rs ``FieldDesc``: one attribute of a composite type."""

    name: NotRequired[str]
    attlen: int
    attalign: NotRequired[str | int]
    dropped: NotRequired[bool]
    type: NotRequired[TypeDesc | None]
    missing: NotRequired[str | None]


class TypeDesc(TypedDict):
    """crates/core/src/datum/mod.rs ``TypeDesc``: a column's type, domains resolved to their base type."""

    oid: int
    name: NotRequired[str]
    typtype: NotRequired[str | int]
    typlen: NotRequired[int]
    typalign: NotRequired[str | int]
    typbyval: NotRequired[bool]
    typdelim: NotRequired[str | int]
    elem: NotRequired[TypeDesc | None]
    enum_labels: NotRequired[dict[str, str]]
    fields: NotRequired[list[FieldDesc]]
    subtype: NotRequired[TypeDesc | None]
    names: NotRequired[dict[str, str]]


class ColumnOut(TypedDict):
    """crates/core/src/rows/carve.rs ``ColumnOut``: one output column of the row engine."""

    attnum: int
    name: str
    type: NotRequired[TypeDesc | None]
    missing: NotRequired[str | None]


class ChunkRef(TypedDict):
    """crates/core/src/rows/carve.rs ``ChunkRef``: a TOAST chunk fetched through SQL, at ``blob[start:start+len]``."""

    valueid: int
    seq: int
    start: int
    len: int


# ----------------------------------------------------------------------------------------------------- configs


class ClassifyConfig(TypedDict):
    """crates/core/src/rows/classify.rs ``ClassifyConfig``: which heap blocks are healthy, zero, damaged, missing."""

    files: NotRequired[list[SegFile]]
    first: NotRequired[int]
    nblocks: int
    rel_nblocks: NotRequired[int | None]
    blcksz: NotRequired[int]
    relseg_size: NotRequired[int]
    checksums: NotRequired[bool]
    desc: NotRequired[RelDesc | None]
    horizons: NotRequired[Horizons | None]
    jobs: NotRequired[int | None]
    unit_blocks: NotRequired[int]
    columns: NotRequired[list[ColumnOut]]


class CarveConfig(TypedDict):
    """crates/core/src/rows/carve.rs ``CarveConfig``: the row engine over one heap relation."""

    blcksz: NotRequired[int]
    relseg_size: NotRequired[int]
    nblocks: int
    files: NotRequired[list[SegFile]]
    desc: RelDesc
    columns: list[ColumnOut]
    format: NotRequired[Literal["text", "csv"]]
    server_version_num: NotRequired[int]
    encoding: NotRequired[str]
    checksums: NotRequired[bool]
    backup_start_lsn: NotRequired[int | None]
    horizons: NotRequired[Horizons | None]
    xact_dir: NotRequired[str | None]
    snapshot: NotRequired[str | None]
    can_ask: NotRequired[bool]
    xid_status: NotRequired[dict[str, str]]
    multis: NotRequired[dict[str, int | None]]
    toast_files: NotRequired[list[SegFile]]
    toast_nblocks: NotRequired[int]
    toast_relid: NotRequired[int]
    toast_chunks: NotRequired[list[ChunkRef]]
    can_fetch_toast: NotRequired[bool]
    only: NotRequired[dict[str, list[int]]]
    apart_rows: NotRequired[dict[str, list[tuple[int, str]]]]
    keep_invisible: NotRequired[bool]
    deleted: NotRequired[bool]
    deleted_by: NotRequired[int | None]


class IndexFiles(TypedDict):
    """crates/core/src/rows/evidence.rs ``IndexFiles``: a btree index's files, for index evidence."""

    name: str
    files: list[SegFile]
    nblocks: int


class LossConfig(TypedDict):
    """crates/core/src/rows/loss.rs ``LossConfig``: the heap pages whose rows are in question, the table's btree
    indexes (``key_index`` names its unique key among them) and its visibility map."""

    indexes: list[IndexFiles]
    key_index: NotRequired[str | None]
    blocks: list[int]
    vm: NotRequired[list[SegFile]]
    blcksz: NotRequired[int]
    relseg_size: NotRequired[int]


class IndexEvidenceConfig(TypedDict):
    """crates/core/src/rows/evidence.rs ``IndexEvidenceConfig``: which heap TIDs in ``blocks`` index entries name."""

    indexes: list[IndexFiles]
    blocks: list[int]
    beyond: NotRequired[int | None]
    blcksz: NotRequired[int]
    relseg_size: NotRequired[int]
    jobs: NotRequired[int]


class RelFiles(TypedDict):
    """crates/core/src/checks/diagnose/allindexed/ ``RelFiles``."""

    name: str
    files: list[SegFile]
    nblocks: int


class IndexSpec(RelFiles):
    """crates/core/src/checks/diagnose/allindexed/ ``IndexSpec`` (its ``RelFiles`` flattened in)."""

    keys: list[int]
    attrs: list[AttrDesc]


class AllIndexedConfig(TypedDict):
    """crates/core/src/checks/diagnose/allindexed/ ``AllIndexedConfig``: amcheck's heapallindexed from the files."""

    heap: RelFiles
    heap_attrs: list[AttrDesc]
    indexes: list[IndexSpec]
    expected_rows: int
    bloom_bytes: int
    seed: NotRequired[int]
    live_redo_lsn: NotRequired[int | None]
    jobs: NotRequired[int | None]
    blcksz: NotRequired[int]
    relseg_size: NotRequired[int]


RelKey = tuple[int, int, int]
"""(tablespace oid, database oid or 0 for shared catalogs, relfilenode), as in the file path."""


class RelMeta(TypedDict):
    """crates/core/src/checks/scan/ ``RelMeta``: what the catalog says about a relation beyond its files."""

    kind: NotRequired[str | None]
    natts: NotRequired[int | None]
    heap: NotRequired[RelKey | None]
    desc: NotRequired[RelDesc | None]
    desc_in_catalog: NotRequired[tuple[int, int] | list[int] | None]
    toast: NotRequired[RelKey | None]
    toast_name: NotRequired[str | None]
    gin_key: NotRequired[str | None]


class ScanOptions(TypedDict):
    """crates/core/src/checks/scan/ ``ScanOptions``."""

    checksums: bool
    blcksz: int
    relseg_size: int
    horizons: NotRequired[Horizons | None]
    clean_shutdown_lsn: NotRequired[int | None]
    live_redo_lsn: NotRequired[int | None]
    relations: NotRequired[list[tuple[RelKey, RelMeta]]]
    chunk_blocks: int
    jobs: NotRequired[int | None]
    toast_max_chunk_size: NotRequired[int]
    backup_start_lsn: NotRequired[int | None]
    health_major: NotRequired[int | None]
    checks: NotRequired[bool]
    bookkeeping: NotRequired[bool]


class ScannerConfig(TypedDict):
    """crates/py/src/lib.rs ``ScannerConfig``: a scan's options and which files it reads."""

    options: ScanOptions
    files: NotRequired[list[str]]
    databases: NotRequired[list[int]]
    relfilenodes: NotRequired[list[int]]


class ClusterOptions(TypedDict, total=False):
    """crates/core/src/catalog/files.rs ``ClusterOptions``: what pg_control cannot say when it is damaged."""

    block_size: int | None
    pg_version: int | None
    segment_blocks: int | None


class AttrLayout(TypedDict):
    """crates/core/src/inject/mod.rs ``AttrLayout``."""

    attlen: int
    attalign: str


class DamageSpec(TypedDict, total=False):
    """crates/core/src/inject/mod.rs ``DamageSpec``: one damage to apply to a page image (``mode`` is required)."""

    mode: str
    field: str | None
    item: int | None
    value: int | None
    tid: tuple[int, int] | None
    length: int | None
    flips: int | None
    tear_at: int | None
    attrs: list[AttrLayout] | None
    attnum: int | None
    clear_hints: bool
    nblocks: int | None
    stream: int


CONFIGS: dict[str, type] = {
    t.__name__: t
    for t in (
        SegFile,
        Horizons,
        AttrDesc,
        RelDesc,
        FieldDesc,
        TypeDesc,
        ColumnOut,
        ChunkRef,
        ClassifyConfig,
        CarveConfig,
        IndexFiles,
        IndexEvidenceConfig,
        LossConfig,
        RelFiles,
        AllIndexedConfig,
        RelMeta,
        ScanOptions,
        ScannerConfig,
        ClusterOptions,
        AttrLayout,
        DamageSpec,
    )
}
"""Every config shape, by the name ``_pgsurgeon.config_fields`` knows its Rust struct under."""


# ----------------------------------------------------------------------------------------------------- results

Severity = Literal["warning", "error"]


class Finding(TypedDict):
    """crates/core/src/finding/mod.rs ``Finding``: one observation about one page (and line pointer)."""

    code: str
    area: str
    severity: Severity
    block: int | None
    item: int | None
    message: str
    pg_error: str
    remedy: str


class RowRef(TypedDict):
    """crates/core/src/visibility/hint_evidence.rs ``RowRef``: a row whose visibility depends on an XID's status."""

    path: str
    database_oid: int
    relfilenode: int
    block: int
    offset: int
    role: Literal["inserted", "deleted"]


class XidEvidence(TypedDict):
    """crates/core/src/visibility/hint_evidence.rs ``XidEvidence``: what heap hint bits say about one XID."""

    xid: int
    committed_hints: int
    aborted_hints: int
    inserted_unhinted: int
    deleted_unhinted: int
    rows: list[RowRef]


class MultiEvidence(TypedDict):
    """crates/core/src/visibility/multi_evidence.rs ``MultiEvidence``: what the heap says about one MultiXact."""

    multi: int
    locked: int
    updated: int
    updater: int | None
    key_update: bool
    conflicting: bool
    deleted_unknown: int
    rows: list[RowRef]


class ClusterFinding(Finding):
    """crates/core/src/checks/cluster.rs ``ClusterFinding``: a finding about a file of the cluster's bookkeeping."""

    path: str


class FileFinding(Finding):
    """crates/core/src/checks/scan/ ``FileFinding``: a finding with the file it was found in."""

    path: str
    tablespace_oid: int
    database_oid: int
    relfilenode: int
    fork: str


class ScanSummary(TypedDict):
    """crates/core/src/checks/scan/ ``ScanSummary``."""

    files: int
    relations: int
    blocks: int
    bytes: int
    zero_pages: int
    zero_pages_inside: int
    skipped_live: int
    after_backup_start: int
    findings: int
    errors: int
    warnings: int


class SkippedRange(TypedDict):
    """crates/core/src/checks/scan/ ``SkippedRange``: blocks of one fork a live scan did not check."""

    tablespace_oid: int
    database_oid: int
    relfilenode: int
    fork: str
    first: int
    last: int


class PageNote(TypedDict):
    """crates/core/src/checks/scan/ ``PageNote``."""

    path: str
    block: int
    lsn: str


class TupleFigures(TypedDict):
    """crates/core/src/health/pages.rs ``TupleFigures``: pgstattuple's counts."""

    tuple_count: int
    tuple_len: int
    dead_tuple_count: int
    dead_tuple_len: int
    free_space: int
    undecided: int


class BtreeFigures(TypedDict):
    """crates/core/src/health/pages.rs ``BtreeFigures``: pgstatindex's counts and pgstattuple's of the index."""

    version: int
    tree_level: int
    root_block_no: int
    internal_pages: int
    leaf_pages: int
    empty_pages: int
    deleted_pages: int
    max_avail: int
    leaf_free_space: int
    fragments: int
    next_adjacent: int
    leaf_items: list[tuple[int, int]]
    heap_tids: int
    heap_runs: int
    tid_pairs: int
    tid_pairs_in_order: int
    leaf_order: list[tuple[int, int]]
    """(position of the leaf in key order, its block) for at most 512 leaves evenly spaced along the right-links."""
    tuples: TupleFigures


class HeapUpkeep(TypedDict):
    """crates/core/src/health/heap.rs ``HeapUpkeep``: a heap's upkeep beyond pgstattuple's figures."""

    never_live: int
    dead_stubs: int
    redirects: int
    unused: int
    heap_only: int
    hot_updated: int
    pages: int
    pages_all_visible: int
    pages_all_frozen: int
    oldest_xmin: int | None
    oldest_xmin_age: int
    newest_deleter: int | None
    newest_deleter_age: int


class HashFigures(TypedDict):
    """crates/core/src/health/hash.rs ``HashFigures``: pgstathashindex's counts and pgstattuple's of the index."""

    version: int
    space_per_page: int
    bucket_pages: int
    overflow_pages: int
    bitmap_pages: int
    unused_pages: int
    live_items: int
    dead_items: int
    free_space: int
    corrupt_pages: int
    tuples: TupleFigures


class GinFigures(TypedDict):
    """crates/core/src/health/gin.rs ``GinFigures``: pgstatginindex's figures, from the metapage."""

    version: int
    pending_pages: int
    pending_tuples: int


class GistFigures(TypedDict):
    """crates/core/src/health/gist.rs ``GistFigures``: pgstattuple's counts of a GiST index."""

    tuples: TupleFigures


class RelationHealth(TypedDict):
    """crates/core/src/health/mod.rs ``RelationHealth``: one main fork's health figures."""

    tablespace_oid: int
    database_oid: int
    relfilenode: int
    kind: str
    blocks: int
    zero_pages: int
    heap: NotRequired[TupleFigures]
    upkeep: NotRequired[HeapUpkeep]
    btree: NotRequired[BtreeFigures]
    hash: NotRequired[HashFigures]
    gin: NotRequired[GinFigures]
    gist: NotRequired[GistFigures]
    vm_all_visible: int
    vm_all_frozen: int


class ScanResult(TypedDict):
    """crates/core/src/checks/scan/ ``ScanResult``."""

    summary: ScanSummary
    findings: list[FileFinding]
    skipped: NotRequired[list[SkippedRange]]
    after_backup_start: NotRequired[list[PageNote]]
    health: NotRequired[list[RelationHealth]]
    zero_inside: NotRequired[list[ZeroPagesNote]]


class CheckedChunk(TypedDict):
    """crates/core/src/checks/scan/ ``CheckedChunk``: blocks ``first .. first + count`` of a main fork (a table's or an
    index's), every page checked: its blocks with a finding and the blocks a live scan skipped."""

    tablespace_oid: int
    database_oid: int
    relfilenode: int
    first: int
    count: int
    blocks_found: list[int]
    blocks_skipped: list[int]


class ZeroPagesNote(TypedDict):
    """crates/core/src/checks/scan/ ``ZeroPagesNote``: a table's all-zero pages before in-use pages that nothing
    names rows on."""

    tablespace_oid: int
    database_oid: int
    relfilenode: int
    path: str
    count: int
    blocks: list[int]


class RelationFile(TypedDict):
    """crates/core/src/sources/relfile.rs ``RelationFile``: one segment file."""

    path: str
    tablespace_oid: int
    database_oid: int
    relfilenode: int
    fork: str
    segno: int
    size: int


class RelationFork(TypedDict):
    """crates/core/src/sources/relfile.rs ``Relation``: one relation fork and its segment files."""

    path: str
    tablespace_oid: int
    database_oid: int
    relfilenode: int
    fork: str
    temp: bool
    temp_backend: int | None
    segments: list[RelationFile]


class BlockClass(TypedDict):
    """crates/core/src/rows/classify.rs ``BlockClass``: a block that is not plainly healthy."""

    block: int
    state: Literal["zero", "damaged", "missing"]
    codes: list[str]
    message: str


class ClassifyResult(TypedDict):
    """crates/core/src/rows/classify.rs ``ClassifyResult``."""

    nblocks: int
    healthy: int
    zero: int
    damaged: int
    missing: int
    bytes_read: int
    blocks: list[BlockClass]


class CarveCounts(TypedDict):
    """crates/core/src/rows/output.rs ``CarveCounts``."""

    pages: int
    tuples_found: int
    live: int
    invisible: int
    uncertain: int
    duplicates: int
    main_rows: int
    apart_rows: int
    checksum_failures: int
    torn_after_backup_start: int


class LostItem(TypedDict):
    """crates/core/src/rows/output.rs ``LostItem``: a row known to have been there that could not be carved."""

    block: int
    lp: int | None
    reason: str


class PageInfo(TypedDict):
    """crates/core/src/rows/find.rs ``PageInfo``: what the carver saw of one page."""

    block: int
    all_zero: bool
    header_sane: bool
    line_pointers: int
    lp_count_trusted: bool
    lp_valid: int
    lp_bad: list[int]
    lp_redirect: int
    lp_dead: int
    lp_unused: int
    body_scanned: bool
    found_in_body: int
    lp_array_destroyed: bool
    claimed_lps: list[int]
    unnumbered: int
    copies_from: int | None
    copies_at: int | None


Certainty = Literal["sure", "likely", "uncertain"]


class CarvedRow(TypedDict):
    """crates/core/src/rows/output.rs ``CarvedRow``: a carved row and where its formatted line is in the blob."""

    block: int
    lp: int | None
    offset: int
    len: int
    via: Literal["line_pointer", "page_body"]
    placement: str
    certainty: Certainty
    verdict: str
    reason: str
    notes: list[str]
    xmin: int
    xmax: int
    infomask: int
    infomask2: int
    checksum_failed: bool
    certainty_besides_checksum: Certainty
    data_start: int
    data_end: int


class CarveResult(TypedDict):
    """crates/core/src/rows/output.rs ``CarveResult``."""

    rows: list[CarvedRow]
    pages: list[PageInfo]
    lost: list[LostItem]
    counts: CarveCounts
    need_xids: list[int]
    need_multis: list[int]
    need_toast: list[int]


class UnloadSummary(TypedDict):
    """crates/core/src/rows/engine.rs ``UnloadSummary``: the account of a row engine run."""

    counts: CarveCounts
    blocks: int
    bytes_read: int
    lost: list[LostItem]
    pages: list[PageInfo]
    missing_blocks: int
    asked_xids: int
    asked_multis: int
    asked_toast: int
    asked_commit_ts: int
    cancelled: bool


class IndexTid(TypedDict):
    """crates/core/src/rows/evidence.rs ``IndexTid``: a heap TID a btree leaf entry points to."""

    block: int
    lp: int
    index: str


class NamedRow(TypedDict):
    """crates/core/src/rows/loss.rs ``NamedRow``: a row index entries name on a page in question."""

    lp: int
    indexes: list[str]
    dead: bool
    key: str | None
    """hex"""
    elsewhere: tuple[int, int] | None


class PageEvidence(TypedDict):
    """crates/core/src/rows/loss.rs ``PageEvidence``."""

    block: int
    all_visible: bool | None
    rows: list[NamedRow]


class IndexVerdict(TypedDict):
    """crates/core/src/checks/diagnose/allindexed/ ``IndexVerdict``."""

    name: str
    entries: int
    unreadable_entries: int
    unreadable_pages: int
    newer_pages: int
    bloom_bytes: int
    false_positive_rate: float
    missing: int
    first_missing: list[tuple[int, int]]
    toasted: int
    short_rows: int


class AllIndexedResult(TypedDict):
    """crates/core/src/checks/diagnose/allindexed/ ``AllIndexedResult``, with ``proven`` per index (the binding's)."""

    indexes: list[IndexVerdict]
    heap_pages: int
    unreadable_pages: int
    newer_pages: int
    rows: int
    unhinted: int
    orphans: int
    proven: list[bool]


class Change(TypedDict):
    """crates/core/src/inject/mod.rs ``Change``: one run of changed bytes (hex), from the page start."""

    offset: int
    old: str
    new: str


class Injection(TypedDict):
    """crates/core/src/inject/mod.rs ``Injection``."""

    changes: list[Change]
    notes: list[str]
    checksum_before: int
    checksum_after: int
    checksum_recomputed: bool


class ModeInfo(TypedDict):
    """crates/core/src/inject/mod.rs ``ModeInfo``: a page damage mode and its fields (the first is the default)."""

    mode: str
    fields: list[str]
    needs_item: bool
    needs_source: bool


class ControlFile(TypedDict):
    """crates/core/src/format/control/ ``ControlFile``: pg_control decoded for its layout (14 to 18). LSNs print as
    ``X/X``, the next XID as ``epoch:xid``, the state and wal_level as pg_controldata prints them."""

    major_version: int
    layout: Literal["V1300", "V1700", "V1800"]
    file_size: int
    system_identifier: int
    pg_control_version: int
    catalog_version_no: int
    state: str
    state_code: int
    time: int
    checkpoint: str
    redo: str
    redo_wal_file: str | None
    this_timeline_id: int
    prev_timeline_id: int
    full_page_writes: bool
    checkpoint_wal_level: str | None
    next_xid: str
    next_oid: int
    next_multi: int
    next_multi_offset: int
    oldest_xid: int
    oldest_xid_db: int
    oldest_active_xid: int
    oldest_multi: int
    oldest_multi_db: int
    oldest_commit_ts_xid: int
    newest_commit_ts_xid: int
    checkpoint_time: int
    unlogged_lsn: str
    min_recovery_point: str
    min_recovery_point_tli: int
    backup_start_point: str
    backup_end_point: str
    backup_end_required: bool
    wal_level: str
    wal_log_hints: bool
    max_connections: int
    max_worker_processes: int
    max_wal_senders: int
    max_prepared_xacts: int
    max_locks_per_xact: int
    track_commit_timestamp: bool
    max_align: int
    float_format: float
    blcksz: int
    relseg_size: int
    xlog_blcksz: int
    xlog_seg_size: int
    name_data_len: int
    index_max_keys: int
    toast_max_chunk_size: int
    loblksize: int
    float8_by_val: bool
    data_checksum_version: int
    default_char_signedness: bool | None
    mock_authentication_nonce: str
    crc_stored: int
    crc_computed: int
    crc_ok: bool
    anomalies: list[str]


class ItemPointerData(TypedDict):
    """crates/core/src/format/heap.rs ``ItemPointerData`` (a TID)."""

    block: int
    offset: int


class PageXLogRecPtr(TypedDict):
    xlogid: int
    xrecoff: int


class HeaderView(TypedDict):
    """crates/core/src/checks/inspect.rs ``HeaderView``: ``PageHeaderData`` with what is derived from it."""

    pd_lsn: PageXLogRecPtr
    pd_checksum: int
    pd_flags: int
    pd_lower: int
    pd_upper: int
    pd_special: int
    pd_pagesize_version: int
    pd_prune_xid: int
    lsn: str
    page_size: int
    layout_version: int
    flags: list[str]
    max_offset: int
    free_space: int


class ChecksumView(TypedDict):
    stored: int
    computed: int | None
    matches: bool


class HeapTuple(TypedDict):
    """crates/core/src/format/heap.rs ``HeapTuple``: ``HeapTupleHeaderData`` with its decoded flags."""

    t_xmin: int
    t_xmax: int
    t_field3: int
    t_ctid: ItemPointerData
    t_infomask2: int
    t_infomask: int
    t_hoff: int
    natts: int
    infomask_flags: list[str]
    infomask_combined: list[str]
    t_bits: str | None
    t_oid: int | None
    data_len: int | None


class BtItem(TypedDict):
    """crates/core/src/format/btree.rs ``BtItem``: one index tuple of a btree page."""

    itemoffset: int
    ctid: ItemPointerData
    itemlen: int
    nulls: bool
    vars: bool
    data: str
    dead: bool | None
    htid: ItemPointerData | None
    tids: list[ItemPointerData] | None
    is_pivot: bool
    is_posting: bool


class ItemView(TypedDict):
    """One line pointer (``LinePointer`` flattened in) and the tuple it points at."""

    lp: int
    lp_off: int
    lp_flags: int
    lp_len: int
    lp_flags_name: str
    heap: HeapTuple | None
    btree: BtItem | None


class BTPageOpaqueData(TypedDict):
    btpo_prev: int
    btpo_next: int
    btpo_level: int
    btpo_flags: int
    btpo_cycleid: int


class BTMetaPageData(TypedDict):
    btm_magic: int
    btm_version: int
    btm_root: int
    btm_level: int
    btm_fastroot: int
    btm_fastlevel: int
    btm_last_cleanup_num_delpages: int
    btm_last_cleanup_num_heap_tuples: float
    btm_allequalimage: bool


class BtreeView(TypedDict):
    opaque: BTPageOpaqueData
    flags: list[str]
    meta: BTMetaPageData | None


class Verification(TypedDict):
    """crates/core/src/format/page.rs ``Verification``: what PageIsVerified decides (``valid``, ``all_zero`` or
    ``invalid`` with why)."""

    result: Literal["valid", "all_zero", "invalid"]
    header_sane: NotRequired[bool]
    checksum_failure: NotRequired[bool]


class PageReport(TypedDict):
    """crates/core/src/checks/inspect.rs ``PageReport``: one page decoded for people."""

    block: int
    length: int
    kind: str
    kind_guessed: bool
    all_zero: bool
    header: HeaderView
    checksum: ChecksumView
    verification: Verification
    items: list[ItemView]
    btree: BtreeView | None
    findings: list[Finding]


class ClusterFacts(TypedDict):
    """crates/core/src/catalog/files.rs ``ClusterFacts``: the cluster's shape, read with no server, and doubts."""

    major: int
    server_version_num: int
    blcksz: int
    relseg_size: int
    catversion: int
    checksums: bool
    control_ok: bool
    clean_shutdown: bool
    system_identifier: int
    next_xid: int
    oldest_xid: int
    warnings: list[str]


class ArchiveFile(TypedDict):
    """crates/core/src/sources/backup/archive.rs ``ArchiveFile``: one archive of a tar-format backup."""

    path: str
    compression: Literal["none", "gzip", "lz4", "zstd"]
    prefix: str


BackupLabel = TypedDict(
    "BackupLabel",
    {
        "start_lsn": "int | None",
        "checkpoint_lsn": "int | None",
        "timeline": "int | None",
        "method": "str | None",
        "from": "str | None",
        "start_time": "str | None",
        "label": "str | None",
        "incremental_from": "int | None",
    },
)
"""crates/core/src/sources/backup/mod.rs ``BackupLabel``: what backup_label says (``from`` is a keyword, hence
this form)."""


class BackupInfo(TypedDict):
    """crates/core/src/sources/backup/mod.rs ``BackupInfo``."""

    root: str
    format: Literal["plain", "tar"]
    archives: list[ArchiveFile]
    label: BackupLabel | None
    manifest: bool
    files: int


class ManifestProblem(TypedDict):
    code: str
    path: str
    message: str


class WalRange(TypedDict):
    timeline: int
    start_lsn: int
    end_lsn: int


class ManifestReport(TypedDict):
    """crates/core/src/sources/backup/manifest ``ManifestReport``: the backup checked against backup_manifest as
    pg_verifybackup checks it."""

    present: bool
    version: int
    system_identifier: int | None
    files_checked: int
    bytes_checked: int
    algorithms: list[str]
    self_checksum_ok: bool
    wal_ranges: list[WalRange]
    wal_segments_checked: int
    problems: list[ManifestProblem]


# ---------------------------------------------------------------------------------------------- profile


class ProfileSpan(TypedDict):
    """crates/core/src/profile.rs ``Span``: one stretch of work on one thread (nanoseconds on the profile's clock)."""

    role: str
    thread: int
    start_ns: int
    end_ns: int
    cpu_ns: int
