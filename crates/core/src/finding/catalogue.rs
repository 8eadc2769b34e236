//! The finding catalogue as data: for each code its area, its severity, the error PostgreSQL raises when it reads
//! such damage, and the remedy. Codes that share their texts share one entry; entries are grouped by family (the
//! part of a code's name before the dot). The texts are user-facing output: the Python tests compare them verbatim.

use super::{Area, Code, CodeInfo, Severity};

/// The entry of `code`. An exhaustive match: a code without an entry does not compile.
pub(super) fn info(code: Code) -> CodeInfo {
    match code {
        Code::ChecksumMismatch => CHECKSUM_MISMATCH,
        // page_header.invalid: PageIsVerified refuses the page and no narrower check names why (salvage's block
        // classifier)
        Code::PageHeaderBadFlags
        | Code::PageHeaderLowerGtUpper
        | Code::PageHeaderUpperGtSpecial
        | Code::PageHeaderSpecialGtBlcksz
        | Code::PageHeaderSpecialUnaligned
        | Code::PageHeaderUpperZero
        | Code::PageHeaderInvalid => PAGE_HEADER_REFUSED,
        Code::PageHeaderLowerBelowHeader => PAGE_HEADER_LOWER_BELOW_HEADER,
        Code::PageHeaderSpecialSize => PAGE_HEADER_SPECIAL_SIZE,
        Code::PageHeaderPageSize => PAGE_HEADER_PAGE_SIZE,
        Code::PageHeaderLayoutVersion => PAGE_HEADER_LAYOUT_VERSION,
        Code::PageHeaderShortPage => PAGE_HEADER_SHORT_PAGE,
        Code::PageHeaderZeroedAllVisible | Code::PageHeaderZeroedReferenced => PAGE_HEADER_ZEROED,
        Code::PageHeaderLsnFuture => PAGE_HEADER_LSN_FUTURE,
        Code::LinePointerPastSpecial
        | Code::LinePointerBeforeUpper
        | Code::LinePointerUnaligned
        | Code::LinePointerTooShort
        | Code::LinePointerPastPage
        | Code::LinePointerRedirectTarget
        | Code::LinePointerCount
        | Code::LinePointerManyInvalid
        | Code::LinePointerHotChain => LINE_POINTER_DAMAGED,
        Code::LinePointerUnreferencedTuple => LINE_POINTER_UNREFERENCED_TUPLE,
        Code::TupleHeaderTHoff | Code::TupleHeaderNatts | Code::TupleHeaderHoffGtLen => TUPLE_HEADER_LAYOUT,
        Code::TupleHeaderXminOld | Code::TupleHeaderXmaxOld => TUPLE_HEADER_XID_OLD,
        Code::TupleHeaderXminOldHinted => TUPLE_HEADER_XMIN_OLD_HINTED,
        Code::TupleHeaderXminFuture | Code::TupleHeaderXmaxFuture => TUPLE_HEADER_XID_FUTURE,
        Code::TupleHeaderMultiFuture => TUPLE_HEADER_MULTI_FUTURE,
        Code::TupleHeaderMultiOld => TUPLE_HEADER_MULTI_OLD,
        Code::TupleHeaderCtidNotSelf => TUPLE_HEADER_CTID_NOT_SELF,
        Code::TupleHeaderXminInvalid | Code::TupleHeaderInfomask | Code::TupleHeaderCtid => TUPLE_HEADER_VISIBILITY,
        Code::TupleDataNattsGtRelation => TUPLE_DATA_NATTS_GT_RELATION,
        Code::TupleDataAttrPastEnd | Code::TupleDataVarlenaBadHeader => TUPLE_DATA_ATTR_DAMAGED,
        Code::TupleDataCompressedBad => TUPLE_DATA_COMPRESSED_BAD,
        Code::TupleDataValueBad => TUPLE_DATA_VALUE_BAD,
        Code::TupleDataTrailingBytes => TUPLE_DATA_TRAILING_BYTES,
        Code::ToastPointerBad => TOAST_POINTER_BAD,
        Code::ToastFlagMissing => TOAST_FLAG_MISSING,
        Code::ToastValueMissing => TOAST_VALUE_MISSING,
        Code::ToastChunkMissing => TOAST_CHUNK_MISSING,
        Code::ToastChunkUnexpected => TOAST_CHUNK_UNEXPECTED,
        Code::ToastChunkSize => TOAST_CHUNK_SIZE,
        Code::ToastChunkHeader => TOAST_CHUNK_HEADER,
        Code::IndexTidBeyondHeap => INDEX_TID_BEYOND_HEAP,
        Code::IndexTidUnused => INDEX_TID_UNUSED,
        Code::IndexZeroPage => INDEX_ZERO_PAGE,
        Code::IndexBtreeFlags | Code::IndexSiblingLink => INDEX_BTREE_PAGE,
        Code::IndexMissingEntry => INDEX_MISSING_ENTRY,
        Code::IndexSpecialSize | Code::IndexBadCycleId => INDEX_SPECIAL_DAMAGED,
        // Issue 30, GIN part.
        Code::IndexGinMetapage | Code::IndexGinPendingList => INDEX_GIN_PENDING,
        // a GIN right-link has its own code: diagnose leaves index.sibling_link to bt_index_check
        Code::IndexGinPageFlags | Code::IndexGinRightLink => INDEX_GIN_PAGE_FLAGS,
        Code::IndexGinEntryTuple | Code::IndexGinPostingTree => INDEX_GIN_TREE,
        Code::IndexGinEntryOrder => INDEX_GIN_ENTRY_ORDER,
        Code::IndexGinPostingList => INDEX_GIN_POSTING_LIST,
        Code::AmcheckGin => AMCHECK_GIN,
        Code::FileVmBeyondEnd => FILE_VM_BEYOND_END,
        Code::FileFsmBeyondEnd => FILE_FSM_BEYOND_END,
        Code::FileUnreadable => FILE_UNREADABLE,
        Code::FileMissingSegment => FILE_MISSING_SEGMENT,
        Code::FileShortSegment | Code::FilePartialPage | Code::FileOversizedSegment => FILE_SHORT_READ,
        Code::FileHeapTruncated => FILE_HEAP_TRUNCATED,
        Code::FileManifestMissing | Code::FileManifestSize | Code::FileManifestChecksum | Code::FileManifestExtra => {
            FILE_MANIFEST_MISMATCH
        }
        Code::FileManifestInvalid | Code::FileManifestOwnChecksum | Code::FileManifestOversized => {
            FILE_MANIFEST_UNUSABLE
        }
        Code::FileManifestSystem => FILE_MANIFEST_SYSTEM,
        Code::FileManifestWal => FILE_MANIFEST_WAL,
        Code::FileWalMissing | Code::FileWalShort => FILE_WAL_MISSING,
        Code::FileXactMissing => FILE_XACT_MISSING,
        Code::FileWalPageHeader => FILE_WAL_PAGE_HEADER,
        Code::FileWalCheckpointRecord => FILE_WAL_CHECKPOINT_RECORD,
        Code::FileControlCrc => FILE_CONTROL_CRC,
        Code::FileControlUnreadable => FILE_CONTROL_UNREADABLE,
        Code::FileOrphan => FILE_ORPHAN,
        Code::FileRelationMissing => FILE_RELATION_MISSING,
        Code::FileWalRecord => FILE_WAL_RECORD,
        Code::FileControlAnomaly => FILE_CONTROL_ANOMALY,
        Code::FileRelmap => FILE_RELMAP,
        Code::FileMultixactMissing => FILE_MULTIXACT_MISSING,
        Code::FileMultixactOffsets => FILE_MULTIXACT_OFFSETS,
        Code::TupleHeaderStatusLost => TUPLE_HEADER_STATUS_LOST,
        Code::TupleHeaderHintContradiction => TUPLE_HEADER_HINT_CONTRADICTION,
        Code::TupleHeaderMultiUpdater => TUPLE_HEADER_MULTI_UPDATER,
        Code::FileTimelineHistoryMissing => FILE_TIMELINE_HISTORY_MISSING,
        Code::FileTimelineHistory => FILE_TIMELINE_HISTORY,
        Code::ServerInvalidPage => SERVER_INVALID_PAGE,
        Code::ServerReadError => SERVER_READ_ERROR,
        Code::ServerError => SERVER_ERROR,
        Code::ServerCrash => SERVER_CRASH,
        Code::ServerTimeout => SERVER_TIMEOUT,
        Code::AmcheckHeap => AMCHECK_HEAP,
        Code::AmcheckToast => AMCHECK_TOAST,
        Code::AmcheckBtree => AMCHECK_BTREE,
        // issue 30, hash and BRIN indexes
        Code::IndexHashMetapage => INDEX_HASH_METAPAGE,
        Code::IndexHashPageType => INDEX_HASH_PAGE_TYPE,
        Code::IndexHashChain => INDEX_HASH_CHAIN,
        Code::IndexHashBitmap => INDEX_HASH_BITMAP,
        Code::IndexHashCode => INDEX_HASH_CODE,
        Code::IndexHashUnreachable => INDEX_HASH_UNREACHABLE,
        Code::IndexBrinMetapage => INDEX_BRIN_METAPAGE,
        Code::IndexBrinPageType => INDEX_BRIN_PAGE_TYPE,
        Code::IndexBrinRevmap | Code::IndexBrinTuple => INDEX_BRIN_RANGE_MAP,
        Code::IndexBrinUnreferenced => INDEX_BRIN_UNREFERENCED,
        // Issue 30, GiST and SP-GiST part.
        Code::IndexGistFlags => INDEX_GIST_FLAGS,
        Code::IndexGistNsn => INDEX_GIST_NSN,
        Code::IndexGistFollowRight => INDEX_GIST_FOLLOW_RIGHT,
        Code::IndexGistTuple => INDEX_GIST_TUPLE,
        Code::IndexGistDownlink => INDEX_GIST_DOWNLINK,
        Code::IndexGistRightlink => INDEX_GIST_RIGHTLINK,
        Code::IndexGistUnreachable | Code::IndexSpgistUnreachable => INDEX_UNREACHABLE,
        Code::IndexSpgistMeta => INDEX_SPGIST_META,
        Code::IndexSpgistCounts => INDEX_SPGIST_COUNTS,
        Code::IndexSpgistPage | Code::IndexSpgistTuple | Code::IndexSpgistInner => INDEX_SPGIST_TUPLE,
        Code::IndexSpgistLeafChain => INDEX_SPGIST_LEAF_CHAIN,
        Code::IndexSpgistDownlink => INDEX_SPGIST_DOWNLINK,
        // issue 30, visibility map and free space map part
        Code::VmAllVisibleWrong => VM_ALL_VISIBLE_WRONG,
        Code::VmAllFrozenWrong => VM_ALL_FROZEN_WRONG,
        Code::FsmTreeInconsistent => FSM_TREE_INCONSISTENT,
    }
}

// Texts named once: shared by several entries, or too long to sit in one.

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

// Checksums.

const CHECKSUM_MISMATCH: CodeInfo = CodeInfo {
    area: Area::Checksum,
    severity: Severity::Error,
    pg_error:
        "page verification failed, calculated checksum C but expected S; then invalid page in block N of relation R",
    remedy: REMEDY_CHECKSUM,
};

// Page headers.

const PAGE_HEADER_REFUSED: CodeInfo =
    CodeInfo { area: Area::PageHeader, severity: Severity::Error, pg_error: INVALID_PAGE, remedy: REMEDY_HEADER };

const PAGE_HEADER_LOWER_BELOW_HEADER: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none on read; corrupted page pointers: lower = L, upper = U, special = S (PANIC) on the next insert",
    remedy: REMEDY_HEADER,
};

const PAGE_HEADER_SPECIAL_SIZE: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none on PostgreSQL 15: rows are returned, those in the pretend special space may be wrong or missing; \
later writes to the page corrupt it further",
    remedy: REMEDY_HEADER,
};

// The server only ever writes BLCKSZ and layout version 4 into pd_pagesize_version and
// PageIsVerified never reads it back: any other value means the header was overwritten,
// and PostgreSQL 15 still returns the page's rows without a word.
const PAGE_HEADER_PAGE_SIZE: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none: read silently (the server never checks the page size in pd_pagesize_version)",
    remedy: REMEDY_SIZE_VERSION,
};

const PAGE_HEADER_LAYOUT_VERSION: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none: read silently (the server never checks the layout version in pd_pagesize_version)",
    remedy: REMEDY_SIZE_VERSION,
};

const PAGE_HEADER_SHORT_PAGE: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "could not read block N in file F: read only X of 8192 bytes",
    remedy: "the file ends inside this page (a torn or truncated write): salvage, then restore the file from a backup",
};

const PAGE_HEADER_ZEROED: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none: the server reads an all-zero page as empty, its rows are silently gone (pg_checksums accepts it)",
    remedy: "restore the block from a backup if you have one; otherwise the rows are lost: find what referenced them \
(index entries, foreign keys) and decide with the application owners",
};

const PAGE_HEADER_LSN_FUTURE: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "none on read; after recovery or on a standby the page may be overwritten or disagree with WAL",
    remedy: "the page comes from a later state of the cluster (a misdirected write or a mixed-up restore): \
compare with a backup and salvage the table",
};

// Line pointers.

const LINE_POINTER_DAMAGED: CodeInfo = CodeInfo {
    area: Area::LinePointer,
    severity: Severity::Error,
    pg_error: "none on read, or invalid memory alloc request size, or a crashed backend (SIGSEGV)",
    remedy: REMEDY_ITEMS,
};

const LINE_POINTER_UNREFERENCED_TUPLE: CodeInfo = CodeInfo {
    area: Area::LinePointer,
    severity: Severity::Error,
    pg_error: "none: the row is silently missing from every query (index entries may still point at its line \
pointer)",
    remedy: "salvage the table: the carver finds the tuple in the page body and saves the row; then repair",
};

// Tuple headers.

const TUPLE_HEADER_LAYOUT: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "wrong column values, invalid memory alloc request size, or a crashed backend",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_XID_OLD: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "could not access status of transaction X (DETAIL: Could not open file \"pg_xact/…\")",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_XMIN_OLD_HINTED: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "none while the hint bits last; VACUUM fails with found xmin X from before relfrozenxid",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_XID_FUTURE: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "none: the row is silently invisible (or visible as never deleted) because its XID looks in progress",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_MULTI_FUTURE: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "MultiXactId M has not been created yet -- apparent wraparound",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_MULTI_OLD: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "MultiXactId M does no longer exist -- apparent wraparound",
    remedy: REMEDY_TUPLE,
};

const TUPLE_HEADER_CTID_NOT_SELF: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "none on read: the rows of another block appear here (duplicates, or rows in the wrong place), and \
the rows that belonged here are gone",
    remedy: "the page holds another block's contents (a misdirected or torn write): restore the block from a backup, \
or salvage the table and zero this page",
};

const TUPLE_HEADER_VISIBILITY: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "wrong visibility, an UPDATE or VACUUM failing on the chain, or a crashed backend",
    remedy: REMEDY_TUPLE,
};

// Tuple data.

const TUPLE_DATA_NATTS_GT_RELATION: CodeInfo = CodeInfo {
    area: Area::TupleData,
    severity: Severity::Error,
    pg_error: "none on read: attributes beyond the relation's are ignored (amcheck: number of attributes N exceeds \
maximum expected for table M)",
    remedy:
        "t_infomask2 is damaged, so the row may be read with wrong values: salvage the row's columns, then delete it \
with pg_surgery heap_force_kill (block, lp) and re-insert it",
};

const TUPLE_DATA_ATTR_DAMAGED: CodeInfo = CodeInfo {
    area: Area::TupleData,
    severity: Severity::Error,
    pg_error: "wrong values, invalid memory alloc request size, or a crashed backend",
    remedy: "the columns before this attribute are readable: salvage the row with this and later columns set to NULL \
(pgsurgeon salvage), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
};

const TUPLE_DATA_COMPRESSED_BAD: CodeInfo = CodeInfo {
    area: Area::TupleData,
    severity: Severity::Error,
    pg_error: "compressed pglz data is corrupt / compressed lz4 data is corrupt / invalid compression method id N / \
invalid memory alloc request size N",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

const TUPLE_DATA_VALUE_BAD: CodeInfo = CodeInfo {
    area: Area::TupleData,
    severity: Severity::Error,
    pg_error: "wrong values, an error from the type's output function (array size exceeds the maximum allowed, \
invalid numeric), or a crashed backend when it reads the value's damaged internals (jsonb, arrays)",
    remedy: "the row's other columns are intact: salvage it (pgsurgeon salvage keeps the row apart with this column \
NULL), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
};

const TUPLE_DATA_TRAILING_BYTES: CodeInfo = CodeInfo {
    area: Area::TupleData,
    severity: Severity::Error,
    pg_error: "none on read: the extra bytes are ignored, but a length or alignment before them is wrong, so values \
are read wrong",
    remedy: "compare the row's values with a backup or the application; salvage the row, then delete it with \
pg_surgery heap_force_kill (block, lp) and re-insert it corrected",
};

// TOAST values.

const TOAST_POINTER_BAD: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "invalid compression method id N or compressed pglz data is corrupt (the value is decompressed as if \
compressed) / could not open relation with OID N / missing chunk number 0 for toast value V in pg_toast_R / \
unexpected chunk size N (expected M) / invalid memory alloc request size N; some fields are only used by length() \
and pg_column_compression(), then only amcheck notices",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

const TOAST_FLAG_MISSING: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "none on read when the TOAST table exists (the value leaks on DELETE/UPDATE); could not open relation \
with OID N when the relation has no TOAST table",
    remedy: "the value may still be readable: copy the row out (INSERT … SELECT), delete the original with \
pg_surgery heap_force_kill (block, lp); or set HEAP_HASEXTERNAL again (pgsurgeon repair)",
};

const TOAST_VALUE_MISSING: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "missing chunk number 0 for toast value V in pg_toast_R",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

const TOAST_CHUNK_MISSING: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "missing chunk number N for toast value V in pg_toast_R / unexpected chunk number N (expected M) for \
toast value V in pg_toast_R",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

const TOAST_CHUNK_UNEXPECTED: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "unexpected chunk number N (expected M) for toast value V in pg_toast_R / unexpected chunk number N \
(out of range 0..M) for toast value V in pg_toast_R",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert; REINDEX the TOAST table if its index is the culprit",
};

const TOAST_CHUNK_SIZE: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "unexpected chunk size N (expected M) in chunk C of T for toast value V in pg_toast_R",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

const TOAST_CHUNK_HEADER: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "found toasted toast chunk for toast value V in pg_toast_R",
    remedy: "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
};

// Indexes.

const INDEX_TID_BEYOND_HEAP: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "could not read block N in file F: read only 0 of 8192 bytes (index scans that reach the entry)",
    remedy: "the heap lost its tail (or the index is wrong): salvage the table, then REINDEX; restore the heap file \
from a backup if the rows matter",
};

const INDEX_TID_UNUSED: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: index scans silently miss the row, or return a different row that reused the slot",
    remedy: "the heap row is gone while the index still has it (or the heap page was overwritten): REINDEX after \
checking the heap page with pgsurgeon inspect",
};

const INDEX_ZERO_PAGE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains unexpected zero page at block N (HINT: Please REINDEX it.)",
    remedy: REMEDY_INDEX,
};

const INDEX_BTREE_PAGE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains corrupted page at block N, or scans that skip or repeat entries",
    remedy: REMEDY_INDEX,
};

const INDEX_MISSING_ENTRY: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: index scans silently miss this row (a unique index lets a duplicate in)",
    remedy: REMEDY_INDEX,
};

const INDEX_SPECIAL_DAMAGED: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains corrupted page at block N (HINT: Please REINDEX it.)",
    remedy: REMEDY_INDEX,
};

// Issue 30, GIN part: GIN pages (access/ginblock.h). The server reads them without checking (ginget.c, ginbtree.c):
// damage shows as wrong rows, "right sibling of GIN page is of different type", or a failed heap fetch.

const INDEX_GIN_PENDING: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none, or an insert or VACUUM failing on the pending list; searches silently miss rows inserted since \
the last cleanup (gin_index_check does not read the pending list)",
    remedy: REMEDY_INDEX,
};

const INDEX_GIN_PAGE_FLAGS: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "right sibling of GIN page is of different type, or a search that silently returns wrong rows",
    remedy: REMEDY_INDEX,
};

const INDEX_GIN_TREE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "could not read block N in file \"…\", or a search that silently misses rows; gin_index_check: index \
\"I\" has inconsistent tuple sizes / has unexpected pd_lower in posting tree block N",
    remedy: REMEDY_INDEX,
};

const INDEX_GIN_ENTRY_ORDER: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: a search for a key silently misses rows; gin_index_check: index \"I\" has wrong tuple order on \
entry tree page",
    remedy: REMEDY_INDEX,
};

const INDEX_GIN_POSTING_LIST: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "a search returns wrong rows or fails fetching a heap row that is not there; gin_index_check: number \
of items mismatch in GIN entry tuple / posting list contains invalid heap pointer",
    remedy: REMEDY_INDEX,
};

const AMCHECK_GIN: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "searches that miss or return wrong rows, or errors reading the index; gin_index_check names the block",
    remedy: REMEDY_INDEX,
};

// Relation files and backups.

const FILE_VM_BEYOND_END: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none: a sequential scan stops at the file's end, rows past it are silently missing",
    remedy:
        "the relation file is shorter than the visibility map says: restore the file from a backup, salvage the rest",
};

// The server checks every block the FSM offers against the main fork's length (fsm_does_block_exist in
// freespace.c's fsm_search) and zeroes the slot of one past the end: an INSERT goes elsewhere, no error.
// That check came with "freespace: Don't return blocks past the end of the main fork" (2024, back-patched
// to 14; REL_15_STABLE 7c490a18b75b); older minor releases fail the INSERT with a short read instead.
// The FSM also leads the main fork after a crash (extended blocks' WAL-less space reached disk, the blocks
// did not), so alone this is no damage; beside file.vm_beyond_end or index.tid_beyond_heap it confirms the cut.
const FILE_FSM_BEYOND_END: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Warning,
    pg_error: "",
    remedy: "the free space map covers blocks the relation file no longer has: if the file lost its tail (see the \
other findings), restore it from a backup. The map is a hint the server corrects as inserts meet it (plain VACUUM \
leaves it), but minor releases older than May 2024 (before 14.12, 15.7, 16.3) follow it and fail the INSERT with \
'could not read block N in file F: read only 0 of 8192 bytes'. To rebuild it, stop the server, delete the \
relation's _fsm file, start it and run VACUUM (DISABLE_PAGE_SKIPPING) on the table (plain VACUUM records only the \
pages it does not skip as all-visible)",
};

const FILE_UNREADABLE: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "could not read block N in file F: …",
    remedy: "check the storage (dmesg, SMART) and file permissions; copy what can be read before anything else",
};

const FILE_MISSING_SEGMENT: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error:
        "could not open file F (target block N): No such file or directory, or rows past the gap silently missing",
    remedy: "restore the missing segment file from a backup; otherwise salvage the blocks before the gap",
};

const FILE_SHORT_READ: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "could not read block N in file F: read only X of 8192 bytes",
    remedy: "the file was truncated or torn: salvage what is readable, then restore the file from a backup",
};

const FILE_HEAP_TRUNCATED: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none on a sequential scan: the rows past the end are silently missing; could not read block N in file \
F when an index scan follows an entry into the missing part",
    remedy: "the table file is shorter than its indexes or visibility map say: restore the file from a backup; the \
indexes still hold the key columns of the lost rows",
};

const FILE_MANIFEST_MISMATCH: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none until the backup is restored: then missing or changed files give wrong rows, or recovery fails \
(pg_verifybackup reports the same)",
    remedy: "the backup is not what pg_basebackup wrote (a file was changed, lost or added afterwards): take a new \
backup, or restore from another one and compare",
};

const FILE_MANIFEST_UNUSABLE: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none until the backup is restored: pg_verifybackup refuses the manifest (could not parse backup \
manifest, manifest checksum mismatch), so nothing in the backup can be verified against it",
    remedy: "the manifest was damaged or edited after pg_basebackup wrote it: the files may still be intact, but \
nothing vouches for them; take a new backup, or check this one by restoring it and running amcheck",
};

const FILE_MANIFEST_SYSTEM: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none until the backup is restored; pg_verifybackup: manifest system identifier is N, but control file \
has M",
    remedy: "the manifest belongs to another cluster's backup (a manifest copied into the wrong directory), or the \
pg_control in the backup does: find the backup the manifest was written with",
};

const FILE_MANIFEST_WAL: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  requested WAL segment S has already been removed, or could not find redo location referenced \
by checkpoint record: the restored backup does not reach consistency",
    remedy:
        "the WAL the backup needs (its manifest's WAL-Ranges) is not in its pg_wal: copy the segments from the WAL \
archive into pg_wal (or set restore_command), or take the backup again with -X stream",
};

const FILE_WAL_MISSING: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "PANIC:  could not locate a valid checkpoint record (the server does not start)",
    remedy: "copy the segment back from the WAL archive or a backup into pg_wal and start again (nothing is lost); without one, save every table with `pgsurgeon unload` before anything else (pg_resetwal only on a copy)",
};

const REMEDY_WAL: &str = "copy the segment back from the WAL archive or a backup into pg_wal and start again \
(nothing is lost); without one, save every table with `pgsurgeon unload` before anything else (pg_resetwal only on a \
copy: it throws away what the WAL still held)";

const FILE_WAL_PAGE_HEADER: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "LOG:  invalid magic number M in WAL segment S, LSN X/X, offset N (or unexpected pageaddr, WAL file is \
from different database system); then PANIC:  could not locate a valid checkpoint record (the server does not start)",
    remedy: REMEDY_WAL,
};

const FILE_WAL_CHECKPOINT_RECORD: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "LOG:  incorrect resource manager data checksum in record at X/X (or invalid checkpoint record, invalid \
xl_info or length in checkpoint record); then PANIC:  could not locate a valid checkpoint record (the server does not \
start)",
    remedy: REMEDY_WAL,
};

const FILE_CONTROL_UNREADABLE: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "PANIC:  could not read file \"global/pg_control\": read N of M (the server does not start)",
    remedy:
        "pg_control is cut short or not a pg_control of a known version: save every table with `pgsurgeon unload`, \
then plan its rebuild with `pgsurgeon control --plan` (every value from the other files) and run it on a copy",
};

const FILE_ORPHAN: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Warning,
    pg_error: "none: no relation of the catalog uses the file (what a crash during a table rewrite, CREATE or DROP \
leaves)",
    remedy:
        "check it holds nothing wanted (`pgsurgeon inspect`, or `pgsurgeon unload` lists orphans and carves them), \
then move it out of the data directory with the server stopped; it only takes space",
};

const FILE_RELATION_MISSING: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "ERROR:  could not open file \"base/…\": No such file or directory, on every query of the relation",
    remedy: "the catalog names a relation whose file is gone: restore the file from a backup of this cluster, or \
(for an index) rebuild it with REINDEX; a table's rows are lost with the file",
};

const FILE_WAL_RECORD: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none at startup (crash recovery begins at the redo point, after it); a restore, a standby or \
pg_waldump replaying these segments stops there: invalid record length, incorrect resource manager data checksum",
    remedy:
        "the segment is damaged before the last checkpoint: take a new base backup now (the damaged stretch cannot \
be replayed), and copy the segment back from the WAL archive if it holds a sound one",
};

const FILE_CONTROL_CRC: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  incorrect checksum in control file (the server does not start)",
    remedy: "put back global/pg_control from a backup of this very cluster state, or compare the fields with \
`pgsurgeon control` and the WAL before rewriting it; without that, save every table with `pgsurgeon unload` first \
(pg_resetwal -f only on a copy)",
};

const FILE_CONTROL_ANOMALY: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  database files are incompatible with server (for a version, size or format field the server \
was not built with)",
    remedy: "check that the server binaries are the major and build this cluster was made with (`pgsurgeon \
control` shows each field); a field no build writes means the file was rewritten wrongly: restore it from a backup",
};

const FILE_RELMAP: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  relation mapping file \"F\" contains incorrect checksum (or contains invalid data, or could \
not open file \"F\") on every connection",
    remedy: "restore the file from a backup of this cluster (a map from another cluster or from before a VACUUM FULL \
or CLUSTER of a mapped catalog points at the wrong files); without one, `pgsurgeon unload` reads the tables with no \
server",
};

const REMEDY_MULTIXACT: &str = "restore pg_multixact from a backup taken after those MultiXacts ended; without \
one, save the tables with `pgsurgeon unload` first (it reports the rows locked or updated by them), and never create \
zero-filled segments: a MultiXact whose members read as none hides who updated a row";

const FILE_MULTIXACT_MISSING: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  could not access status of transaction N; DETAIL:  Could not open file \
\"pg_multixact/offsets/…\": No such file or directory (at startup for the next MultiXact's page, else on the first \
row locked by a lost MultiXact)",
    remedy: REMEDY_MULTIXACT,
};

const FILE_MULTIXACT_OFFSETS: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "ERROR:  MultiXact N has invalid next offset (or a row's lockers and updater read wrong) when a row \
locked by it is visited",
    remedy: REMEDY_MULTIXACT,
};

const TUPLE_HEADER_STATUS_LOST: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "ERROR:  could not access status of transaction N; DETAIL:  Could not open file \"pg_xact/…\" (or \
\"pg_multixact/…\") on the first query that visits these rows",
    remedy: "restore the status files from a backup taken after those transactions ended; without one, save the table \
with `pgsurgeon unload` (it keeps these rows apart, their fate unknown) before anything else, then rebuild a lost \
pg_xact segment from the evidence left with `pgsurgeon xact` (a members segment with `pgsurgeon multixact`); never \
create zero-filled status files: they turn committed rows into aborted ones",
};

const TUPLE_HEADER_MULTI_UPDATER: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "none, or ERROR:  could not access status of transaction N: the server reads the MultiXact's members to \
know who updated the row; without an updating member the old version is visible again beside the new one",
    remedy: "pg_multixact/members was zeroed or garbled: rebuild the segment from the update chains with `pgsurgeon \
multixact --replace` (dry run first), after saving the table with `pgsurgeon unload`",
};

const TUPLE_HEADER_HINT_CONTRADICTION: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "none for these tuples (the server trusts the hint bit); rows of the same transactions without the hint \
take the garbled status",
    remedy:
        "the pg_xact page named was overwritten or zeroed since the hints were set: restore pg_xact from a backup, \
and salvage the table (pgsurgeon salvage) before rows without hint bits are judged by the garbled page",
};

const REMEDY_HISTORY: &str = "copy the history file back from the WAL archive (or from the standby or primary that \
made the timeline): it is small and the same on every node; without one, write it by hand from the promotion's log \
lines (parent timeline, switch point)";

const FILE_TIMELINE_HISTORY_MISSING: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "LOG:  unexpected timeline ID N in log segment S, offset O; then PANIC:  could not locate a valid \
checkpoint record (while the checkpoint's segment holds pages of the parent timeline)",
    remedy: REMEDY_HISTORY,
};

const FILE_TIMELINE_HISTORY: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  syntax error in history file: LINE (or invalid data in history file) wherever the file is read",
    remedy: REMEDY_HISTORY,
};

const FILE_XACT_MISSING: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "FATAL:  could not access status of transaction N; DETAIL:  Could not open file \"pg_xact/…\": No such file or directory (at startup, or on the first row that needs it)",
    remedy: "restore the file from a backup taken after those transactions ended; without one, save every table with `pgsurgeon unload` (it reports the rows whose fate depended on the lost status) before anything else, and never create a zero-filled segment: it turns committed transactions into aborted ones",
};

// Codes of `pgsurgeon diagnose`, for what the server itself said while reading or checking.

const SERVER_INVALID_PAGE: CodeInfo = CodeInfo {
    area: Area::PageHeader,
    severity: Severity::Error,
    pg_error: "invalid page in block N of relation R (PostgreSQL 18: relation \"R\")",
    remedy: "the server refuses the whole page: salvage the table (pgsurgeon salvage) to carve its rows from the \
file, then zero or rebuild the page (pgsurgeon repair); never set zero_damaged_pages before the rows are saved",
};

const SERVER_READ_ERROR: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "could not read block N in file F: read only X of 8192 bytes / could not open file F (target block N)",
    remedy: "the relation file is shorter than the server expects or a segment is missing: salvage what is \
readable, then restore the file from a backup",
};

const SERVER_ERROR: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "the ERROR in observed_error, raised while amcheck checked this block",
    remedy: "inspect the block (pgsurgeon inspect) and salvage the table before repairing it",
};

const SERVER_CRASH: CodeInfo = CodeInfo {
    area: Area::LinePointer,
    severity: Severity::Error,
    pg_error: "server process was terminated by signal 11: Segmentation fault (every session is disconnected and \
the server runs crash recovery)",
    remedy: "do not query these blocks with ordinary SQL: decode them offline (pgsurgeon inspect/scan) and salvage \
the table from its files",
};

const SERVER_TIMEOUT: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Warning,
    pg_error: "canceling statement due to statement timeout / lock timeout",
    remedy: "the range was not checked: run diagnose again with a longer --statement-timeout, or when the table is \
not locked (ALTER TABLE, VACUUM FULL, CLUSTER take conflicting locks)",
};

// What amcheck reported.

const AMCHECK_HEAP: CodeInfo = CodeInfo {
    area: Area::TupleHeader,
    severity: Severity::Error,
    pg_error: "see the amcheck message: reading the tuple may fail or return wrong values",
    remedy: REMEDY_TUPLE,
};

const AMCHECK_TOAST: CodeInfo = CodeInfo {
    area: Area::Toast,
    severity: Severity::Error,
    pg_error: "see the amcheck message",
    remedy: REMEDY_TOAST,
};

const AMCHECK_BTREE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index scans that skip or repeat rows, or index \"I\" contains corrupted page at block N",
    remedy: REMEDY_INDEX,
};

// Issue 30, hash and BRIN indexes (access/hash/hashutil.c _hash_checkpage; access/brin/brin_revmap.c).

const INDEX_HASH_METAPAGE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" is not a hash index, or index \"I\" has wrong hash version (HINT: Please REINDEX it.), \
or scans that read the wrong bucket's pages",
    remedy: REMEDY_INDEX,
};

const INDEX_HASH_PAGE_TYPE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains corrupted page at block N (HINT: Please REINDEX it.)",
    remedy: REMEDY_INDEX,
};

const INDEX_HASH_CHAIN: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains corrupted page at block N, or scans of the bucket that miss or repeat rows",
    remedy: REMEDY_INDEX,
};

const INDEX_HASH_BITMAP: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none at once: the next insert that needs an overflow page takes this one, in use, and the rows on it \
are lost from the index",
    remedy: REMEDY_INDEX,
};

const INDEX_HASH_CODE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: index scans silently miss the row",
    remedy: REMEDY_INDEX,
};

const INDEX_HASH_UNREACHABLE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Warning,
    pg_error: "",
    remedy: "space is lost in the index but no scan is wrong: REINDEX when convenient",
};

const INDEX_BRIN_METAPAGE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "corrupted BRIN index: inconsistent range map, or bitmap scans that skip ranges",
    remedy: REMEDY_INDEX,
};

const INDEX_BRIN_PAGE_TYPE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "unexpected page type 0xT in BRIN index \"I\" block N",
    remedy: REMEDY_INDEX,
};

const INDEX_BRIN_RANGE_MAP: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "corrupted BRIN index: inconsistent range map",
    remedy: REMEDY_INDEX,
};

const INDEX_BRIN_UNREFERENCED: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Warning,
    pg_error: "",
    remedy: "space is lost in the index but no scan is wrong: REINDEX when convenient",
};

// Issue 30, GiST and SP-GiST part (access/gist*.c, access/spgist*.c).

const INDEX_GIST_FLAGS: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none, but scans go wrong: a leaf read as an inner page follows heap TIDs as downlinks (could not read \
block N), an inner page read as a leaf returns downlinks as rows, a deleted page loses its entries",
    remedy: REMEDY_INDEX,
};

const INDEX_GIST_NSN: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: index scans take the page for one split concurrently, follow its right-link and return the \
right sibling's rows twice",
    remedy: REMEDY_INDEX,
};

const INDEX_GIST_FOLLOW_RIGHT: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Warning,
    pg_error: "none: the next insert that passes completes the split (LOG: fixing incomplete split in index \"I\", \
block N)",
    remedy: "left by a crash in the middle of a page split, which the server finishes by itself; if it stays, \
REINDEX INDEX CONCURRENTLY rebuilds the index",
};

const INDEX_GIST_TUPLE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains an inner tuple marked as invalid, could not read block N of a heap or index \
file, or scans that return wrong rows",
    remedy: REMEDY_INDEX,
};

const INDEX_GIST_DOWNLINK: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" contains unexpected zero page at block N, index \"I\" contains corrupted page at block N, \
could not read block N in file F, or scans that miss or repeat rows",
    remedy: REMEDY_INDEX,
};

const INDEX_GIST_RIGHTLINK: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "could not read block N in file F when a scan or insert follows it after a split, or scans that \
repeat or miss rows",
    remedy: REMEDY_INDEX,
};

const INDEX_UNREACHABLE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "none: index scans silently miss these entries' rows (an exclusion constraint no longer sees them)",
    remedy: REMEDY_INDEX,
};

const INDEX_SPGIST_META: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "index \"I\" is not an SP-GiST index",
    remedy: REMEDY_INDEX,
};

const INDEX_SPGIST_COUNTS: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Warning,
    pg_error: "none: an insert that trusts the count and finds no placeholder resets it and adds a new item",
    remedy: "harmless alone, but the page was written wrong: look for other damage on it (pgsurgeon inspect), and \
REINDEX INDEX CONCURRENTLY if there is any",
};

const INDEX_SPGIST_TUPLE: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "unexpected SPGiST tuple state: N, or scans that return wrong rows or crash the backend",
    remedy: REMEDY_INDEX,
};

const INDEX_SPGIST_LEAF_CHAIN: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "inconsistent tuple chain links in page N of index \"I\" (VACUUM), unexpected SPGiST tuple state: N, \
or scans that miss rows or never end",
    remedy: REMEDY_INDEX,
};

const INDEX_SPGIST_DOWNLINK: CodeInfo = CodeInfo {
    area: Area::Index,
    severity: Severity::Error,
    pg_error: "unexpected SPGiST tuple state: N, could not read block N in file F, or scans that miss rows",
    remedy: REMEDY_INDEX,
};

// issue 30, visibility map and free space map part.
// An all-visible bit lets index-only scans skip the heap (nodeIndexonlyscan.c, VM_ALL_VISIBLE) and VACUUM skip
// the page (vacuumlazy.c): rows that are not visible to everyone are returned by index-only scans, and dead ones
// are never removed. pg_visibility's pg_check_visible() reports these tuples (contrib/pg_visibility).
const VM_ALL_VISIBLE_WRONG: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none: index-only scans return rows that are not visible (aborted, deleted or uncommitted), VACUUM \
skips the page",
    remedy: "the visibility map's bit is wrong, the heap page is right: clear the map (pgsurgeon repair clears the \
bits in the _vm file while the server is stopped; online, pg_visibility's pg_truncate_visibility_map('table') then \
VACUUM rebuilds it)",
};

// An all-frozen bit lets anti-wraparound VACUUM skip the page (vacuumlazy.c): its unfrozen XIDs are never frozen,
// and once pg_xact below them is truncated their rows fail with "could not access status of transaction".
// pg_visibility's pg_check_frozen() reports these tuples.
const VM_ALL_FROZEN_WRONG: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Error,
    pg_error: "none at first; after the XIDs' pg_xact is truncated: could not access status of transaction N",
    remedy: "the visibility map's bit is wrong: clear the map (pgsurgeon repair clears the bits in the _vm file while \
the server is stopped; online, pg_visibility's pg_truncate_visibility_map('table') then VACUUM (FREEZE))",
};

// fsm_set_avail (fsmpage.c) keeps each upper node of an FSM page the max of its children; a page where it is not
// was damaged. The server repairs it as a search meets it (fsm_search_avail, fsm_rebuild_page): no error, inserts
// may meanwhile go to full pages (one retry each) or miss free ones.
const FSM_TREE_INCONSISTENT: CodeInfo = CodeInfo {
    area: Area::File,
    severity: Severity::Warning,
    pg_error: "",
    remedy: "the free space map is a hint the server corrects as it meets it: to rebuild it, stop the server, remove \
the relation's _fsm file (pgsurgeon repair does, saved for undo), start it and VACUUM the table",
};
