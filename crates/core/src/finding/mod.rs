//! Findings: what a check says about damaged bytes, as data. The scanner adds file context
//! (path, relfilenode, fork) around these; checks only know the page.

use serde::Serialize;

mod catalogue;

/// Which part of the storage a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Area {
    File,
    Checksum,
    PageHeader,
    LinePointer,
    TupleHeader,
    TupleData,
    Toast,
    Index,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Not corruption by itself, or not what the server would fail on, but worth a look.
    Warning,
    /// Damage: reading it fails, crashes, or returns wrong rows.
    Error,
}

/// One observation about one page (and one line pointer, where it applies).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found (its stable dotted name when serialised).
    pub code: Code,
    pub area: Area,
    pub severity: Severity,
    /// Block number counted across segments, when known.
    pub block: Option<u64>,
    /// Line pointer (offset number, 1-based), where the finding is about one item.
    pub item: Option<u16>,
    /// What is wrong, with the values seen.
    pub message: String,
    /// The error PostgreSQL raises when it reads this (empty when it raises none).
    pub pg_error: &'static str,
    /// What to do about it.
    pub remedy: &'static str,
}

impl Finding {
    pub fn new(code: Code, block: Option<u64>, item: Option<u16>, message: String) -> Self {
        let info = code.info();
        Finding {
            code,
            area: info.area,
            severity: info.severity,
            block,
            item,
            message,
            pg_error: info.pg_error,
            remedy: info.remedy,
        }
    }
}

impl Finding {
    /// A finding whose message ends with the server's error for this very case, values filled in
    /// (the catalogue's `pg_error` only has placeholders).
    pub fn with_server_error(code: Code, block: Option<u64>, item: Option<u16>, message: &str, pg_error: &str) -> Self {
        let message = if pg_error.is_empty() { message.to_string() } else { format!("{message} (server: {pg_error})") };
        Finding::new(code, block, item, message)
    }
}

/// What a finding code means, independent of where it was found.
#[derive(Debug, Clone, Copy)]
pub struct CodeInfo {
    pub area: Area,
    pub severity: Severity,
    pub pg_error: &'static str,
    pub remedy: &'static str,
}

/// Every finding code. Each is catalogued in [`describe`] (a unit test checks none falls through), and code that
/// emits a finding names one of these: a code missing from the catalogue does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// `checksum.mismatch`
    ChecksumMismatch,
    /// `page_header.bad_flags`
    PageHeaderBadFlags,
    /// `page_header.lower_gt_upper`
    PageHeaderLowerGtUpper,
    /// `page_header.upper_gt_special`
    PageHeaderUpperGtSpecial,
    /// `page_header.special_gt_blcksz`
    PageHeaderSpecialGtBlcksz,
    /// `page_header.special_unaligned`
    PageHeaderSpecialUnaligned,
    /// `page_header.upper_zero`
    PageHeaderUpperZero,
    /// `page_header.invalid`
    PageHeaderInvalid,
    /// `page_header.lower_below_header`
    PageHeaderLowerBelowHeader,
    /// `page_header.special_size`
    PageHeaderSpecialSize,
    /// `page_header.page_size`
    PageHeaderPageSize,
    /// `page_header.layout_version`
    PageHeaderLayoutVersion,
    /// `page_header.short_page`
    PageHeaderShortPage,
    /// `line_pointer.past_special`
    LinePointerPastSpecial,
    /// `line_pointer.before_upper`
    LinePointerBeforeUpper,
    /// `line_pointer.unaligned`
    LinePointerUnaligned,
    /// `line_pointer.too_short`
    LinePointerTooShort,
    /// `line_pointer.past_page`
    LinePointerPastPage,
    /// `line_pointer.redirect_target`
    LinePointerRedirectTarget,
    /// `line_pointer.count`
    LinePointerCount,
    /// `line_pointer.many_invalid`
    LinePointerManyInvalid,
    /// `line_pointer.hot_chain`
    LinePointerHotChain,
    /// `line_pointer.unreferenced_tuple`
    LinePointerUnreferencedTuple,
    /// `tuple_header.t_hoff`
    TupleHeaderTHoff,
    /// `tuple_header.natts`
    TupleHeaderNatts,
    /// `tuple_header.hoff_gt_len`
    TupleHeaderHoffGtLen,
    /// `tuple_header.xmin_old`
    TupleHeaderXminOld,
    /// `tuple_header.xmax_old`
    TupleHeaderXmaxOld,
    /// `tuple_header.xmin_old_hinted`
    TupleHeaderXminOldHinted,
    /// `tuple_header.xmin_future`
    TupleHeaderXminFuture,
    /// `tuple_header.xmax_future`
    TupleHeaderXmaxFuture,
    /// `tuple_header.multi_future`
    TupleHeaderMultiFuture,
    /// `tuple_header.multi_old`
    TupleHeaderMultiOld,
    /// `tuple_header.ctid_not_self`
    TupleHeaderCtidNotSelf,
    /// `file.vm_beyond_end`
    FileVmBeyondEnd,
    /// `file.fsm_beyond_end`
    FileFsmBeyondEnd,
    /// `tuple_header.xmin_invalid`
    TupleHeaderXminInvalid,
    /// `tuple_header.infomask`
    TupleHeaderInfomask,
    /// `tuple_header.ctid`
    TupleHeaderCtid,
    /// `page_header.zeroed_all_visible`
    PageHeaderZeroedAllVisible,
    /// `page_header.zeroed_referenced`
    PageHeaderZeroedReferenced,
    /// `page_header.lsn_future`
    PageHeaderLsnFuture,
    /// `index.tid_beyond_heap`
    IndexTidBeyondHeap,
    /// `index.tid_unused`
    IndexTidUnused,
    /// `index.zero_page`
    IndexZeroPage,
    /// `index.btree_flags`
    IndexBtreeFlags,
    /// `index.sibling_link`
    IndexSiblingLink,
    /// `file.unreadable`
    FileUnreadable,
    /// `file.missing_segment`
    FileMissingSegment,
    /// `file.short_segment`
    FileShortSegment,
    /// `file.partial_page`
    FilePartialPage,
    /// `file.oversized_segment`
    FileOversizedSegment,
    /// `tuple_data.natts_gt_relation`
    TupleDataNattsGtRelation,
    /// `tuple_data.attr_past_end`
    TupleDataAttrPastEnd,
    /// `tuple_data.varlena_bad_header`
    TupleDataVarlenaBadHeader,
    /// `tuple_data.compressed_bad`
    TupleDataCompressedBad,
    /// `tuple_data.value_bad`
    TupleDataValueBad,
    /// `tuple_data.trailing_bytes`
    TupleDataTrailingBytes,
    /// `toast.pointer_bad`
    ToastPointerBad,
    /// `toast.flag_missing`
    ToastFlagMissing,
    /// `toast.value_missing`
    ToastValueMissing,
    /// `toast.chunk_missing`
    ToastChunkMissing,
    /// `toast.chunk_unexpected`
    ToastChunkUnexpected,
    /// `toast.chunk_size`
    ToastChunkSize,
    /// `toast.chunk_header`
    ToastChunkHeader,
    /// `server.invalid_page`
    ServerInvalidPage,
    /// `server.read_error`
    ServerReadError,
    /// `server.error`
    ServerError,
    /// `server.crash`
    ServerCrash,
    /// `server.timeout`
    ServerTimeout,
    /// `amcheck.heap`
    AmcheckHeap,
    /// `amcheck.toast`
    AmcheckToast,
    /// `amcheck.btree`
    AmcheckBtree,
    /// `index.missing_entry`
    IndexMissingEntry,
    /// `file.heap_truncated`
    FileHeapTruncated,
    /// `file.manifest_missing`
    FileManifestMissing,
    /// `file.manifest_size`
    FileManifestSize,
    /// `file.manifest_checksum`
    FileManifestChecksum,
    /// `file.manifest_extra`
    FileManifestExtra,
    /// `file.manifest_invalid`
    FileManifestInvalid,
    /// `file.manifest_own_checksum`
    FileManifestOwnChecksum,
    /// `file.manifest_oversized`
    FileManifestOversized,
    /// `file.manifest_system`
    FileManifestSystem,
    /// `file.manifest_wal`
    FileManifestWal,
    /// `file.wal_missing`
    FileWalMissing,
    /// `file.wal_short`
    FileWalShort,
    /// `file.xact_missing`
    FileXactMissing,
    /// `file.wal_page_header`
    FileWalPageHeader,
    /// `file.wal_checkpoint_record`
    FileWalCheckpointRecord,
    /// `file.control_crc`
    FileControlCrc,
    /// `file.control_unreadable`
    FileControlUnreadable,
    /// `file.orphan`
    FileOrphan,
    /// `file.relation_missing`
    FileRelationMissing,
    /// `file.wal_record`
    FileWalRecord,
    /// `file.control_anomaly`
    FileControlAnomaly,
    /// `file.relmap`
    FileRelmap,
    /// `file.multixact_missing`
    FileMultixactMissing,
    /// `file.multixact_offsets`
    FileMultixactOffsets,
    /// `tuple_header.status_lost`
    TupleHeaderStatusLost,
    /// `file.timeline_history_missing`
    FileTimelineHistoryMissing,
    /// `file.timeline_history`
    FileTimelineHistory,
    /// `tuple_header.hint_contradiction`
    TupleHeaderHintContradiction,
    /// `tuple_header.multi_updater`
    TupleHeaderMultiUpdater,
    /// `index.special_size`
    IndexSpecialSize,
    /// `index.bad_cycle_id`
    IndexBadCycleId,
    // issue 30, hash and BRIN indexes
    /// `index.hash_metapage`
    IndexHashMetapage,
    /// `index.hash_page_type`
    IndexHashPageType,
    /// `index.hash_chain`
    IndexHashChain,
    /// `index.hash_bitmap`
    IndexHashBitmap,
    /// `index.hash_code`
    IndexHashCode,
    /// `index.hash_unreachable`
    IndexHashUnreachable,
    /// `index.brin_metapage`
    IndexBrinMetapage,
    /// `index.brin_page_type`
    IndexBrinPageType,
    /// `index.brin_revmap`
    IndexBrinRevmap,
    /// `index.brin_tuple`
    IndexBrinTuple,
    /// `index.brin_unreferenced`
    IndexBrinUnreferenced,
    // Issue 30, GIN part.
    /// `index.gin_metapage`
    IndexGinMetapage,
    /// `index.gin_page_flags`
    IndexGinPageFlags,
    /// `index.gin_entry_tuple`
    IndexGinEntryTuple,
    /// `index.gin_entry_order`
    IndexGinEntryOrder,
    /// `index.gin_posting_list`
    IndexGinPostingList,
    /// `index.gin_posting_tree`
    IndexGinPostingTree,
    /// `index.gin_pending_list`
    IndexGinPendingList,
    /// `amcheck.gin`
    AmcheckGin,
    /// `index.gin_right_link`
    IndexGinRightLink,
    // Issue 30, GiST and SP-GiST part.
    /// `index.gist_flags`
    IndexGistFlags,
    /// `index.gist_nsn`
    IndexGistNsn,
    /// `index.gist_follow_right`
    IndexGistFollowRight,
    /// `index.gist_tuple`
    IndexGistTuple,
    /// `index.gist_downlink`
    IndexGistDownlink,
    /// `index.gist_rightlink`
    IndexGistRightlink,
    /// `index.gist_unreachable`
    IndexGistUnreachable,
    /// `index.spgist_meta`
    IndexSpgistMeta,
    /// `index.spgist_page`
    IndexSpgistPage,
    /// `index.spgist_counts`
    IndexSpgistCounts,
    /// `index.spgist_tuple`
    IndexSpgistTuple,
    /// `index.spgist_inner`
    IndexSpgistInner,
    /// `index.spgist_leaf_chain`
    IndexSpgistLeafChain,
    /// `index.spgist_downlink`
    IndexSpgistDownlink,
    /// `index.spgist_unreachable`
    IndexSpgistUnreachable,
    // issue 30, visibility map and free space map part
    /// `vm.all_visible_wrong`
    VmAllVisibleWrong,
    /// `vm.all_frozen_wrong`
    VmAllFrozenWrong,
    /// `fsm.tree_inconsistent`
    FsmTreeInconsistent,
}

impl Code {
    pub const ALL: &'static [Code] = &[
        Code::ChecksumMismatch,
        Code::PageHeaderBadFlags,
        Code::PageHeaderLowerGtUpper,
        Code::PageHeaderUpperGtSpecial,
        Code::PageHeaderSpecialGtBlcksz,
        Code::PageHeaderSpecialUnaligned,
        Code::PageHeaderUpperZero,
        Code::PageHeaderInvalid,
        Code::PageHeaderLowerBelowHeader,
        Code::PageHeaderSpecialSize,
        Code::PageHeaderPageSize,
        Code::PageHeaderLayoutVersion,
        Code::PageHeaderShortPage,
        Code::LinePointerPastSpecial,
        Code::LinePointerBeforeUpper,
        Code::LinePointerUnaligned,
        Code::LinePointerTooShort,
        Code::LinePointerPastPage,
        Code::LinePointerRedirectTarget,
        Code::LinePointerCount,
        Code::LinePointerManyInvalid,
        Code::LinePointerHotChain,
        Code::LinePointerUnreferencedTuple,
        Code::TupleHeaderTHoff,
        Code::TupleHeaderNatts,
        Code::TupleHeaderHoffGtLen,
        Code::TupleHeaderXminOld,
        Code::TupleHeaderXmaxOld,
        Code::TupleHeaderXminOldHinted,
        Code::TupleHeaderXminFuture,
        Code::TupleHeaderXmaxFuture,
        Code::TupleHeaderMultiFuture,
        Code::TupleHeaderMultiOld,
        Code::TupleHeaderCtidNotSelf,
        Code::FileVmBeyondEnd,
        Code::FileFsmBeyondEnd,
        Code::TupleHeaderXminInvalid,
        Code::TupleHeaderInfomask,
        Code::TupleHeaderCtid,
        Code::PageHeaderZeroedAllVisible,
        Code::PageHeaderZeroedReferenced,
        Code::PageHeaderLsnFuture,
        Code::IndexTidBeyondHeap,
        Code::IndexTidUnused,
        Code::IndexZeroPage,
        Code::IndexBtreeFlags,
        Code::IndexSiblingLink,
        Code::FileUnreadable,
        Code::FileMissingSegment,
        Code::FileShortSegment,
        Code::FilePartialPage,
        Code::FileOversizedSegment,
        Code::TupleDataNattsGtRelation,
        Code::TupleDataAttrPastEnd,
        Code::TupleDataVarlenaBadHeader,
        Code::TupleDataCompressedBad,
        Code::TupleDataValueBad,
        Code::TupleDataTrailingBytes,
        Code::ToastPointerBad,
        Code::ToastFlagMissing,
        Code::ToastValueMissing,
        Code::ToastChunkMissing,
        Code::ToastChunkUnexpected,
        Code::ToastChunkSize,
        Code::ToastChunkHeader,
        Code::ServerInvalidPage,
        Code::ServerReadError,
        Code::ServerError,
        Code::ServerCrash,
        Code::ServerTimeout,
        Code::AmcheckHeap,
        Code::AmcheckToast,
        Code::AmcheckBtree,
        Code::IndexMissingEntry,
        Code::FileHeapTruncated,
        Code::FileManifestMissing,
        Code::FileManifestSize,
        Code::FileManifestChecksum,
        Code::FileManifestExtra,
        Code::FileManifestInvalid,
        Code::FileManifestOwnChecksum,
        Code::FileManifestOversized,
        Code::FileManifestSystem,
        Code::FileManifestWal,
        Code::FileWalMissing,
        Code::FileWalShort,
        Code::FileXactMissing,
        Code::FileWalPageHeader,
        Code::FileWalCheckpointRecord,
        Code::FileControlCrc,
        Code::FileControlUnreadable,
        Code::FileOrphan,
        Code::FileRelationMissing,
        Code::FileWalRecord,
        Code::FileControlAnomaly,
        Code::FileRelmap,
        Code::FileMultixactMissing,
        Code::FileMultixactOffsets,
        Code::TupleHeaderStatusLost,
        Code::TupleHeaderHintContradiction,
        Code::TupleHeaderMultiUpdater,
        Code::FileTimelineHistoryMissing,
        Code::FileTimelineHistory,
        Code::IndexSpecialSize,
        Code::IndexBadCycleId,
        // issue 30, hash and BRIN indexes
        Code::IndexHashMetapage,
        Code::IndexHashPageType,
        Code::IndexHashChain,
        Code::IndexHashBitmap,
        Code::IndexHashCode,
        Code::IndexHashUnreachable,
        Code::IndexBrinMetapage,
        Code::IndexBrinPageType,
        Code::IndexBrinRevmap,
        Code::IndexBrinTuple,
        Code::IndexBrinUnreferenced,
        // Issue 30, GIN part.
        Code::IndexGinMetapage,
        Code::IndexGinPageFlags,
        Code::IndexGinEntryTuple,
        Code::IndexGinEntryOrder,
        Code::IndexGinPostingList,
        Code::IndexGinPostingTree,
        Code::IndexGinPendingList,
        Code::AmcheckGin,
        Code::IndexGinRightLink,
        // Issue 30, GiST and SP-GiST part.
        Code::IndexGistFlags,
        Code::IndexGistNsn,
        Code::IndexGistFollowRight,
        Code::IndexGistTuple,
        Code::IndexGistDownlink,
        Code::IndexGistRightlink,
        Code::IndexGistUnreachable,
        Code::IndexSpgistMeta,
        Code::IndexSpgistPage,
        Code::IndexSpgistCounts,
        Code::IndexSpgistTuple,
        Code::IndexSpgistInner,
        Code::IndexSpgistLeafChain,
        Code::IndexSpgistDownlink,
        Code::IndexSpgistUnreachable,
        // issue 30, visibility map and free space map part
        Code::VmAllVisibleWrong,
        Code::VmAllFrozenWrong,
        Code::FsmTreeInconsistent,
    ];

    /// The stable dotted name, e.g. `page_header.lower_gt_upper`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::ChecksumMismatch => "checksum.mismatch",
            Code::PageHeaderBadFlags => "page_header.bad_flags",
            Code::PageHeaderLowerGtUpper => "page_header.lower_gt_upper",
            Code::PageHeaderUpperGtSpecial => "page_header.upper_gt_special",
            Code::PageHeaderSpecialGtBlcksz => "page_header.special_gt_blcksz",
            Code::PageHeaderSpecialUnaligned => "page_header.special_unaligned",
            Code::PageHeaderUpperZero => "page_header.upper_zero",
            Code::PageHeaderInvalid => "page_header.invalid",
            Code::PageHeaderLowerBelowHeader => "page_header.lower_below_header",
            Code::PageHeaderSpecialSize => "page_header.special_size",
            Code::PageHeaderPageSize => "page_header.page_size",
            Code::PageHeaderLayoutVersion => "page_header.layout_version",
            Code::PageHeaderShortPage => "page_header.short_page",
            Code::LinePointerPastSpecial => "line_pointer.past_special",
            Code::LinePointerBeforeUpper => "line_pointer.before_upper",
            Code::LinePointerUnaligned => "line_pointer.unaligned",
            Code::LinePointerTooShort => "line_pointer.too_short",
            Code::LinePointerPastPage => "line_pointer.past_page",
            Code::LinePointerRedirectTarget => "line_pointer.redirect_target",
            Code::LinePointerCount => "line_pointer.count",
            Code::LinePointerManyInvalid => "line_pointer.many_invalid",
            Code::LinePointerHotChain => "line_pointer.hot_chain",
            Code::LinePointerUnreferencedTuple => "line_pointer.unreferenced_tuple",
            Code::TupleHeaderTHoff => "tuple_header.t_hoff",
            Code::TupleHeaderNatts => "tuple_header.natts",
            Code::TupleHeaderHoffGtLen => "tuple_header.hoff_gt_len",
            Code::TupleHeaderXminOld => "tuple_header.xmin_old",
            Code::TupleHeaderXmaxOld => "tuple_header.xmax_old",
            Code::TupleHeaderXminOldHinted => "tuple_header.xmin_old_hinted",
            Code::TupleHeaderXminFuture => "tuple_header.xmin_future",
            Code::TupleHeaderXmaxFuture => "tuple_header.xmax_future",
            Code::TupleHeaderMultiFuture => "tuple_header.multi_future",
            Code::TupleHeaderMultiOld => "tuple_header.multi_old",
            Code::TupleHeaderCtidNotSelf => "tuple_header.ctid_not_self",
            Code::FileVmBeyondEnd => "file.vm_beyond_end",
            Code::FileFsmBeyondEnd => "file.fsm_beyond_end",
            Code::TupleHeaderXminInvalid => "tuple_header.xmin_invalid",
            Code::TupleHeaderInfomask => "tuple_header.infomask",
            Code::TupleHeaderCtid => "tuple_header.ctid",
            Code::PageHeaderZeroedAllVisible => "page_header.zeroed_all_visible",
            Code::PageHeaderZeroedReferenced => "page_header.zeroed_referenced",
            Code::PageHeaderLsnFuture => "page_header.lsn_future",
            Code::IndexTidBeyondHeap => "index.tid_beyond_heap",
            Code::IndexTidUnused => "index.tid_unused",
            Code::IndexZeroPage => "index.zero_page",
            Code::IndexBtreeFlags => "index.btree_flags",
            Code::IndexSiblingLink => "index.sibling_link",
            Code::FileUnreadable => "file.unreadable",
            Code::FileMissingSegment => "file.missing_segment",
            Code::FileShortSegment => "file.short_segment",
            Code::FilePartialPage => "file.partial_page",
            Code::FileOversizedSegment => "file.oversized_segment",
            Code::TupleDataNattsGtRelation => "tuple_data.natts_gt_relation",
            Code::TupleDataAttrPastEnd => "tuple_data.attr_past_end",
            Code::TupleDataVarlenaBadHeader => "tuple_data.varlena_bad_header",
            Code::TupleDataCompressedBad => "tuple_data.compressed_bad",
            Code::TupleDataValueBad => "tuple_data.value_bad",
            Code::TupleDataTrailingBytes => "tuple_data.trailing_bytes",
            Code::ToastPointerBad => "toast.pointer_bad",
            Code::ToastFlagMissing => "toast.flag_missing",
            Code::ToastValueMissing => "toast.value_missing",
            Code::ToastChunkMissing => "toast.chunk_missing",
            Code::ToastChunkUnexpected => "toast.chunk_unexpected",
            Code::ToastChunkSize => "toast.chunk_size",
            Code::ToastChunkHeader => "toast.chunk_header",
            Code::ServerInvalidPage => "server.invalid_page",
            Code::ServerReadError => "server.read_error",
            Code::ServerError => "server.error",
            Code::ServerCrash => "server.crash",
            Code::ServerTimeout => "server.timeout",
            Code::AmcheckHeap => "amcheck.heap",
            Code::AmcheckToast => "amcheck.toast",
            Code::AmcheckBtree => "amcheck.btree",
            Code::IndexMissingEntry => "index.missing_entry",
            Code::FileHeapTruncated => "file.heap_truncated",
            Code::FileManifestMissing => "file.manifest_missing",
            Code::FileManifestSize => "file.manifest_size",
            Code::FileManifestChecksum => "file.manifest_checksum",
            Code::FileManifestExtra => "file.manifest_extra",
            Code::FileManifestInvalid => "file.manifest_invalid",
            Code::FileManifestOwnChecksum => "file.manifest_own_checksum",
            Code::FileManifestOversized => "file.manifest_oversized",
            Code::FileManifestSystem => "file.manifest_system",
            Code::FileManifestWal => "file.manifest_wal",
            Code::FileWalMissing => "file.wal_missing",
            Code::FileWalShort => "file.wal_short",
            Code::FileXactMissing => "file.xact_missing",
            Code::FileWalPageHeader => "file.wal_page_header",
            Code::FileWalCheckpointRecord => "file.wal_checkpoint_record",
            Code::FileControlCrc => "file.control_crc",
            Code::FileControlUnreadable => "file.control_unreadable",
            Code::FileOrphan => "file.orphan",
            Code::FileRelationMissing => "file.relation_missing",
            Code::FileWalRecord => "file.wal_record",
            Code::FileControlAnomaly => "file.control_anomaly",
            Code::FileRelmap => "file.relmap",
            Code::FileMultixactMissing => "file.multixact_missing",
            Code::FileMultixactOffsets => "file.multixact_offsets",
            Code::TupleHeaderStatusLost => "tuple_header.status_lost",
            Code::TupleHeaderHintContradiction => "tuple_header.hint_contradiction",
            Code::TupleHeaderMultiUpdater => "tuple_header.multi_updater",
            Code::FileTimelineHistoryMissing => "file.timeline_history_missing",
            Code::FileTimelineHistory => "file.timeline_history",
            Code::IndexSpecialSize => "index.special_size",
            Code::IndexBadCycleId => "index.bad_cycle_id",
            // issue 30, hash and BRIN indexes
            Code::IndexHashMetapage => "index.hash_metapage",
            Code::IndexHashPageType => "index.hash_page_type",
            Code::IndexHashChain => "index.hash_chain",
            Code::IndexHashBitmap => "index.hash_bitmap",
            Code::IndexHashCode => "index.hash_code",
            Code::IndexHashUnreachable => "index.hash_unreachable",
            Code::IndexBrinMetapage => "index.brin_metapage",
            Code::IndexBrinPageType => "index.brin_page_type",
            Code::IndexBrinRevmap => "index.brin_revmap",
            Code::IndexBrinTuple => "index.brin_tuple",
            Code::IndexBrinUnreferenced => "index.brin_unreferenced",
            // Issue 30, GIN part.
            Code::IndexGinMetapage => "index.gin_metapage",
            Code::IndexGinPageFlags => "index.gin_page_flags",
            Code::IndexGinEntryTuple => "index.gin_entry_tuple",
            Code::IndexGinEntryOrder => "index.gin_entry_order",
            Code::IndexGinPostingList => "index.gin_posting_list",
            Code::IndexGinPostingTree => "index.gin_posting_tree",
            Code::IndexGinPendingList => "index.gin_pending_list",
            Code::AmcheckGin => "amcheck.gin",
            Code::IndexGinRightLink => "index.gin_right_link",
            // Issue 30, GiST and SP-GiST part.
            Code::IndexGistFlags => "index.gist_flags",
            Code::IndexGistNsn => "index.gist_nsn",
            Code::IndexGistFollowRight => "index.gist_follow_right",
            Code::IndexGistTuple => "index.gist_tuple",
            Code::IndexGistDownlink => "index.gist_downlink",
            Code::IndexGistRightlink => "index.gist_rightlink",
            Code::IndexGistUnreachable => "index.gist_unreachable",
            Code::IndexSpgistMeta => "index.spgist_meta",
            Code::IndexSpgistPage => "index.spgist_page",
            Code::IndexSpgistCounts => "index.spgist_counts",
            Code::IndexSpgistTuple => "index.spgist_tuple",
            Code::IndexSpgistInner => "index.spgist_inner",
            Code::IndexSpgistLeafChain => "index.spgist_leaf_chain",
            Code::IndexSpgistDownlink => "index.spgist_downlink",
            Code::IndexSpgistUnreachable => "index.spgist_unreachable",
            // issue 30, visibility map and free space map part
            Code::VmAllVisibleWrong => "vm.all_visible_wrong",
            Code::VmAllFrozenWrong => "vm.all_frozen_wrong",
            Code::FsmTreeInconsistent => "fsm.tree_inconsistent",
        }
    }

    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Code {
    /// The catalogue: area, severity, the server's error and the remedy of each code (the texts are in
    /// finding/catalogue.rs).
    pub fn info(self) -> CodeInfo {
        catalogue::info(self)
    }
}

/// The catalogue entry of a code given by name (from Python), None for a name that is not a code.
pub fn describe(code: &str) -> Option<CodeInfo> {
    Code::parse(code).map(Code::info)
}

#[cfg(test)]
mod code_tests {
    use super::*;

    /// The catalogue is complete: every code has a remedy, an error says what the server does, and names map back.
    #[test]
    fn every_code_is_described() {
        assert!(Code::ALL.len() > 50);
        for &code in Code::ALL {
            let info = code.info();
            assert!(!info.remedy.is_empty(), "{code}");
            assert!(info.severity != Severity::Error || !info.pg_error.is_empty(), "{code}");
            assert_eq!(Code::parse(code.as_str()), Some(code));
            assert!(describe(code.as_str()).is_some());
        }
        assert!(describe("no_such_area.no_such_code").is_none());
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }
}
