//! Findings: what a check says about damaged bytes, as data. The scanner adds file context
//! (path, relfilenode, fork) around these; checks only know the page.

use serde::Serialize;

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
    /// `index.special_size`
    IndexSpecialSize,
    /// `index.bad_cycle_id`
    IndexBadCycleId,
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
        Code::IndexSpecialSize,
        Code::IndexBadCycleId,
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
            Code::IndexSpecialSize => "index.special_size",
            Code::IndexBadCycleId => "index.bad_cycle_id",
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

const INVALID_PAGE: &str = "invalid page in block N of relation R";
const REMEDY_HEADER: &str = "the page header is damaged, so the server refuses the whole page: salvage the table \
(pgsurgeon salvage) to carve its rows, then zero or rebuild the page (pgsurgeon repair)";
const REMEDY_SIZE_VERSION: &str = "the page header was overwritten although the server still reads the page: \
look for more damage on it (pgsurgeon inspect), salvage the table, then rewrite the page (pgsurgeon repair)";
const REMEDY_ITEMS: &str = "rows on this page may be returned wrong or crash the backend: salvage the readable rows \
first, then repair (pg_surgery heap_force_kill on the damaged items, or zero the page)";
const REMEDY_TUPLE: &str = "salvage the table, then remove the damaged tuple with pg_surgery's heap_force_kill \
using its physical ctid (block, line pointer), and reindex";
const REMEDY_TOAST: &str = "the row's other columns are intact: salvage it with this column set to NULL, then \
delete the row with pg_surgery heap_force_kill (block, lp) and re-insert";
const REMEDY_INDEX: &str = "indexes hold no unique data: REINDEX INDEX (or REINDEX TABLE) rebuilds it from the heap";
const REMEDY_CHECKSUM: &str = "the page changed after it was written: compare with a backup, salvage the readable \
rows (ignore_checksum_failure=on lets the server read a page whose header is sane), then repair";

impl Code {
    /// The catalogue: area, severity, the server's error and the remedy of each code.
    pub fn info(self) -> CodeInfo {
        use Area::*;
        use Severity::*;
        let (area, severity, pg_error, remedy) = match self {
        Code::ChecksumMismatch => (
            Checksum,
            Error,
            "page verification failed, calculated checksum C but expected S; then invalid page in block N of relation R",
            REMEDY_CHECKSUM,
        ),
        Code::PageHeaderBadFlags
        | Code::PageHeaderLowerGtUpper
        | Code::PageHeaderUpperGtSpecial
        | Code::PageHeaderSpecialGtBlcksz
        | Code::PageHeaderSpecialUnaligned
        | Code::PageHeaderUpperZero
        // PageIsVerified refuses the page and no narrower check names why (salvage's block classifier)
        | Code::PageHeaderInvalid => (PageHeader, Error, INVALID_PAGE, REMEDY_HEADER),
        Code::PageHeaderLowerBelowHeader => (
            PageHeader,
            Error,
            "none on read; corrupted page pointers: lower = L, upper = U, special = S (PANIC) on the next insert",
            REMEDY_HEADER,
        ),
        Code::PageHeaderSpecialSize => (
            PageHeader,
            Error,
            "none on PostgreSQL 15: rows are returned, those in the pretend special space may be wrong or missing; \
later writes to the page corrupt it further",
            REMEDY_HEADER,
        ),
        // The server only ever writes BLCKSZ and layout version 4 into pd_pagesize_version and
        // PageIsVerified never reads it back: any other value means the header was overwritten,
        // and PostgreSQL 15 still returns the page's rows without a word.
        Code::PageHeaderPageSize => (
            PageHeader,
            Error,
            "none: read silently (the server never checks the page size in pd_pagesize_version)",
            REMEDY_SIZE_VERSION,
        ),
        Code::PageHeaderLayoutVersion => (
            PageHeader,
            Error,
            "none: read silently (the server never checks the layout version in pd_pagesize_version)",
            REMEDY_SIZE_VERSION,
        ),
        Code::PageHeaderShortPage => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes",
            "the file ends inside this page (a torn or truncated write): salvage, then restore the file from a backup",
        ),
        Code::LinePointerPastSpecial
        | Code::LinePointerBeforeUpper
        | Code::LinePointerUnaligned
        | Code::LinePointerTooShort
        | Code::LinePointerPastPage
        | Code::LinePointerRedirectTarget
        | Code::LinePointerCount
        | Code::LinePointerManyInvalid
        | Code::LinePointerHotChain => (
            LinePointer,
            Error,
            "none on read, or invalid memory alloc request size, or a crashed backend (SIGSEGV)",
            REMEDY_ITEMS,
        ),
        Code::LinePointerUnreferencedTuple => (
            LinePointer,
            Error,
            "none: the row is silently missing from every query (index entries may still point at its line \
pointer)",
            "salvage the table: the carver finds the tuple in the page body and saves the row; then repair",
        ),
        Code::TupleHeaderTHoff | Code::TupleHeaderNatts | Code::TupleHeaderHoffGtLen => (
            TupleHeader,
            Error,
            "wrong column values, invalid memory alloc request size, or a crashed backend",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderXminOld | Code::TupleHeaderXmaxOld => (
            TupleHeader,
            Error,
            "could not access status of transaction X (DETAIL: Could not open file \"pg_xact/…\")",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderXminOldHinted => (
            TupleHeader,
            Error,
            "none while the hint bits last; VACUUM fails with found xmin X from before relfrozenxid",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderXminFuture | Code::TupleHeaderXmaxFuture => (
            TupleHeader,
            Error,
            "none: the row is silently invisible (or visible as never deleted) because its XID looks in progress",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderMultiFuture => (
            TupleHeader,
            Error,
            "MultiXactId M has not been created yet -- apparent wraparound",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderMultiOld => (
            TupleHeader,
            Error,
            "MultiXactId M does no longer exist -- apparent wraparound",
            REMEDY_TUPLE,
        ),
        Code::TupleHeaderCtidNotSelf => (
            TupleHeader,
            Error,
            "none on read: the rows of another block appear here (duplicates, or rows in the wrong place), and \
the rows that belonged here are gone",
            "the page holds another block's contents (a misdirected or torn write): restore the block from a backup, \
or salvage the table and zero this page",
        ),
        Code::FileVmBeyondEnd => (
            File,
            Error,
            "none: a sequential scan stops at the file's end, rows past it are silently missing",
            "the relation file is shorter than the visibility map says: restore the file from a backup, salvage the rest",
        ),
        // The server checks every block the FSM offers against the main fork's length (fsm_does_block_exist in
        // freespace.c's fsm_search) and zeroes the slot of one past the end: an INSERT goes elsewhere, no error.
        // That check came with "freespace: Don't return blocks past the end of the main fork" (2024, back-patched
        // to 14; REL_15_STABLE 7c490a18b75b); older minor releases fail the INSERT with a short read instead.
        // The FSM also leads the main fork after a crash (extended blocks' WAL-less space reached disk, the blocks
        // did not), so alone this is no damage; beside file.vm_beyond_end or index.tid_beyond_heap it confirms the cut.
        Code::FileFsmBeyondEnd => (
            File,
            Warning,
            "",
            "the free space map covers blocks the relation file no longer has: if the file lost its tail (see the \
other findings), restore it from a backup. The map is a hint the server corrects as inserts meet it (plain VACUUM \
leaves it), but minor releases older than May 2024 (before 14.12, 15.7, 16.3) follow it and fail the INSERT with \
'could not read block N in file F: read only 0 of 8192 bytes'. To rebuild it, stop the server, delete the \
relation's _fsm file, start it and run VACUUM (DISABLE_PAGE_SKIPPING) on the table (plain VACUUM records only the \
pages it does not skip as all-visible)",
        ),
        Code::TupleHeaderXminInvalid | Code::TupleHeaderInfomask | Code::TupleHeaderCtid => (
            TupleHeader,
            Error,
            "wrong visibility, an UPDATE or VACUUM failing on the chain, or a crashed backend",
            REMEDY_TUPLE,
        ),
        Code::PageHeaderZeroedAllVisible | Code::PageHeaderZeroedReferenced => (
            PageHeader,
            Error,
            "none: the server reads an all-zero page as empty, its rows are silently gone (pg_checksums accepts it)",
            "restore the block from a backup if you have one; otherwise the rows are lost: find what referenced them \
(index entries, foreign keys) and decide with the application owners",
        ),
        Code::PageHeaderLsnFuture => (
            PageHeader,
            Error,
            "none on read; after recovery or on a standby the page may be overwritten or disagree with WAL",
            "the page comes from a later state of the cluster (a misdirected write or a mixed-up restore): \
compare with a backup and salvage the table",
        ),
        Code::IndexTidBeyondHeap => (
            Index,
            Error,
            "could not read block N in file F: read only 0 of 8192 bytes (index scans that reach the entry)",
            "the heap lost its tail (or the index is wrong): salvage the table, then REINDEX; restore the heap file \
from a backup if the rows matter",
        ),
        Code::IndexTidUnused => (
            Index,
            Error,
            "none: index scans silently miss the row, or return a different row that reused the slot",
            "the heap row is gone while the index still has it (or the heap page was overwritten): REINDEX after \
checking the heap page with pgsurgeon inspect",
        ),
        Code::IndexZeroPage => (
            Index,
            Error,
            "index \"I\" contains unexpected zero page at block N (HINT: Please REINDEX it.)",
            REMEDY_INDEX,
        ),
        Code::IndexBtreeFlags | Code::IndexSiblingLink => (
            Index,
            Error,
            "index \"I\" contains corrupted page at block N, or scans that skip or repeat entries",
            REMEDY_INDEX,
        ),
        Code::FileUnreadable => (
            File,
            Error,
            "could not read block N in file F: …",
            "check the storage (dmesg, SMART) and file permissions; copy what can be read before anything else",
        ),
        Code::FileMissingSegment => (
            File,
            Error,
            "could not open file F (target block N): No such file or directory, or rows past the gap silently missing",
            "restore the missing segment file from a backup; otherwise salvage the blocks before the gap",
        ),
        Code::FileShortSegment | Code::FilePartialPage | Code::FileOversizedSegment => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes",
            "the file was truncated or torn: salvage what is readable, then restore the file from a backup",
        ),
        Code::TupleDataNattsGtRelation => (
            TupleData,
            Error,
            "none on read: attributes beyond the relation's are ignored (amcheck: number of attributes N exceeds \
maximum expected for table M)",
            "t_infomask2 is damaged, so the row may be read with wrong values: salvage the row's columns, then delete it \
with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        Code::TupleDataAttrPastEnd | Code::TupleDataVarlenaBadHeader => (
            TupleData,
            Error,
            "wrong values, invalid memory alloc request size, or a crashed backend",
            "the columns before this attribute are readable: salvage the row with this and later columns set to NULL \
(pgsurgeon salvage), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        Code::TupleDataCompressedBad => (
            TupleData,
            Error,
            "compressed pglz data is corrupt / compressed lz4 data is corrupt / invalid compression method id N / \
invalid memory alloc request size N",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        Code::TupleDataValueBad => (
            TupleData,
            Error,
            "wrong values, an error from the type's output function (array size exceeds the maximum allowed, \
invalid numeric), or a crashed backend when it reads the value's damaged internals (jsonb, arrays)",
            "the row's other columns are intact: salvage it (pgsurgeon salvage keeps the row apart with this column \
NULL), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        Code::TupleDataTrailingBytes => (
            TupleData,
            Error,
            "none on read: the extra bytes are ignored, but a length or alignment before them is wrong, so values \
are read wrong",
            "compare the row's values with a backup or the application; salvage the row, then delete it with \
pg_surgery heap_force_kill (block, lp) and re-insert it corrected",
        ),
        Code::ToastPointerBad => (
            Toast,
            Error,
            "invalid compression method id N or compressed pglz data is corrupt (the value is decompressed as if \
compressed) / could not open relation with OID N / missing chunk number 0 for toast value V in pg_toast_R / \
unexpected chunk size N (expected M) / invalid memory alloc request size N; some fields are only used by length() \
and pg_column_compression(), then only amcheck notices",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        Code::ToastFlagMissing => (
            Toast,
            Error,
            "none on read when the TOAST table exists (the value leaks on DELETE/UPDATE); could not open relation \
with OID N when the relation has no TOAST table",
            "the value may still be readable: copy the row out (INSERT … SELECT), delete the original with \
pg_surgery heap_force_kill (block, lp); or set HEAP_HASEXTERNAL again (pgsurgeon repair)",
        ),
        Code::ToastValueMissing => (
            Toast,
            Error,
            "missing chunk number 0 for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        Code::ToastChunkMissing => (
            Toast,
            Error,
            "missing chunk number N for toast value V in pg_toast_R / unexpected chunk number N (expected M) for \
toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        Code::ToastChunkUnexpected => (
            Toast,
            Error,
            "unexpected chunk number N (expected M) for toast value V in pg_toast_R / unexpected chunk number N \
(out of range 0..M) for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert; REINDEX the TOAST table if its index is the culprit",
        ),
        Code::ToastChunkSize => (
            Toast,
            Error,
            "unexpected chunk size N (expected M) in chunk C of T for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        Code::ToastChunkHeader => (
            Toast,
            Error,
            "found toasted toast chunk for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        // Codes of `pgsurgeon diagnose`, for what the server itself said while reading or checking.
        Code::ServerInvalidPage => (
            PageHeader,
            Error,
            "invalid page in block N of relation R (PostgreSQL 18: relation \"R\")",
            "the server refuses the whole page: salvage the table (pgsurgeon salvage) to carve its rows from the \
file, then zero or rebuild the page (pgsurgeon repair); never set zero_damaged_pages before the rows are saved",
        ),
        Code::ServerReadError => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes / could not open file F (target block N)",
            "the relation file is shorter than the server expects or a segment is missing: salvage what is \
readable, then restore the file from a backup",
        ),
        Code::ServerError => (
            TupleHeader,
            Error,
            "the ERROR in observed_error, raised while amcheck checked this block",
            "inspect the block (pgsurgeon inspect) and salvage the table before repairing it",
        ),
        Code::ServerCrash => (
            LinePointer,
            Error,
            "server process was terminated by signal 11: Segmentation fault (every session is disconnected and \
the server runs crash recovery)",
            "do not query these blocks with ordinary SQL: decode them offline (pgsurgeon inspect/scan) and salvage \
the table from its files",
        ),
        Code::ServerTimeout => (
            File,
            Warning,
            "canceling statement due to statement timeout / lock timeout",
            "the range was not checked: run diagnose again with a longer --statement-timeout, or when the table is \
not locked (ALTER TABLE, VACUUM FULL, CLUSTER take conflicting locks)",
        ),
        Code::AmcheckHeap => {
            (TupleHeader, Error, "see the amcheck message: reading the tuple may fail or return wrong values", REMEDY_TUPLE)
        }
        Code::AmcheckToast => (Toast, Error, "see the amcheck message", REMEDY_TOAST),
        Code::AmcheckBtree => (
            Index,
            Error,
            "index scans that skip or repeat rows, or index \"I\" contains corrupted page at block N",
            REMEDY_INDEX,
        ),
        Code::IndexMissingEntry => (
            Index,
            Error,
            "none: index scans silently miss this row (a unique index lets a duplicate in)",
            REMEDY_INDEX,
        ),
        Code::FileHeapTruncated => (
            File,
            Error,
            "none on a sequential scan: the rows past the end are silently missing; could not read block N in file \
F when an index scan follows an entry into the missing part",
            "the table file is shorter than its indexes or visibility map say: restore the file from a backup; the \
indexes still hold the key columns of the lost rows",
        ),
        Code::FileManifestMissing | Code::FileManifestSize | Code::FileManifestChecksum | Code::FileManifestExtra => (
            File,
            Error,
            "none until the backup is restored: then missing or changed files give wrong rows, or recovery fails \
(pg_verifybackup reports the same)",
            "the backup is not what pg_basebackup wrote (a file was changed, lost or added afterwards): take a new \
backup, or restore from another one and compare",
        ),
        Code::IndexSpecialSize | Code::IndexBadCycleId => (
            Index,
            Error,
            "index \"I\" contains corrupted page at block N (HINT: Please REINDEX it.)",
            REMEDY_INDEX,
        ),
    };
        CodeInfo { area, severity, pg_error, remedy }
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
