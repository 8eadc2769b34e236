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
    /// Stable dotted name, e.g. `page_header.lower_gt_upper`.
    pub code: &'static str,
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
    pub fn new(code: &'static str, block: Option<u64>, item: Option<u16>, message: String) -> Self {
        let info = describe(code);
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
    pub fn with_server_error(
        code: &'static str,
        block: Option<u64>,
        item: Option<u16>,
        message: &str,
        pg_error: &str,
    ) -> Self {
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

/// The catalogue of finding codes. Unknown codes get a neutral description rather than a panic.
pub fn describe(code: &str) -> CodeInfo {
    use Area::*;
    use Severity::*;
    let (area, severity, pg_error, remedy) = match code {
        "checksum.mismatch" => (
            Checksum,
            Error,
            "page verification failed, calculated checksum C but expected S; then invalid page in block N of relation R",
            REMEDY_CHECKSUM,
        ),
        "page_header.bad_flags"
        | "page_header.lower_gt_upper"
        | "page_header.upper_gt_special"
        | "page_header.special_gt_blcksz"
        | "page_header.special_unaligned"
        | "page_header.upper_zero"
        // PageIsVerified refuses the page and no narrower check names why (salvage's block classifier)
        | "page_header.invalid" => (PageHeader, Error, INVALID_PAGE, REMEDY_HEADER),
        "page_header.lower_below_header" => (
            PageHeader,
            Error,
            "none on read; corrupted page pointers: lower = L, upper = U, special = S (PANIC) on the next insert",
            REMEDY_HEADER,
        ),
        "page_header.special_size" => (
            PageHeader,
            Error,
            "none on PostgreSQL 15: rows are returned, those in the pretend special space may be wrong or missing; \
later writes to the page corrupt it further",
            REMEDY_HEADER,
        ),
        // The server only ever writes BLCKSZ and layout version 4 into pd_pagesize_version and
        // PageIsVerified never reads it back: any other value means the header was overwritten,
        // and PostgreSQL 15 still returns the page's rows without a word.
        "page_header.page_size" => (
            PageHeader,
            Error,
            "none: read silently (the server never checks the page size in pd_pagesize_version)",
            REMEDY_SIZE_VERSION,
        ),
        "page_header.layout_version" => (
            PageHeader,
            Error,
            "none: read silently (the server never checks the layout version in pd_pagesize_version)",
            REMEDY_SIZE_VERSION,
        ),
        "page_header.short_page" => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes",
            "the file ends inside this page (a torn or truncated write): salvage, then restore the file from a backup",
        ),
        "line_pointer.past_special"
        | "line_pointer.before_upper"
        | "line_pointer.unaligned"
        | "line_pointer.too_short"
        | "line_pointer.past_page"
        | "line_pointer.redirect_target"
        | "line_pointer.count"
        | "line_pointer.many_invalid"
        | "line_pointer.hot_chain" => (
            LinePointer,
            Error,
            "none on read, or invalid memory alloc request size, or a crashed backend (SIGSEGV)",
            REMEDY_ITEMS,
        ),
        "line_pointer.unreferenced_tuple" => (
            LinePointer,
            Error,
            "none: the row is silently missing from every query (index entries may still point at its line \
pointer)",
            "salvage the table: the carver finds the tuple in the page body and saves the row; then repair",
        ),
        "tuple_header.t_hoff" | "tuple_header.natts" | "tuple_header.hoff_gt_len" => (
            TupleHeader,
            Error,
            "wrong column values, invalid memory alloc request size, or a crashed backend",
            REMEDY_TUPLE,
        ),
        "tuple_header.xmin_old" | "tuple_header.xmax_old" => (
            TupleHeader,
            Error,
            "could not access status of transaction X (DETAIL: Could not open file \"pg_xact/…\")",
            REMEDY_TUPLE,
        ),
        "tuple_header.xmin_old_hinted" => (
            TupleHeader,
            Error,
            "none while the hint bits last; VACUUM fails with found xmin X from before relfrozenxid",
            REMEDY_TUPLE,
        ),
        "tuple_header.xmin_future" | "tuple_header.xmax_future" => (
            TupleHeader,
            Error,
            "none: the row is silently invisible (or visible as never deleted) because its XID looks in progress",
            REMEDY_TUPLE,
        ),
        "tuple_header.multi_future" => (
            TupleHeader,
            Error,
            "MultiXactId M has not been created yet -- apparent wraparound",
            REMEDY_TUPLE,
        ),
        "tuple_header.multi_old" => (
            TupleHeader,
            Error,
            "MultiXactId M does no longer exist -- apparent wraparound",
            REMEDY_TUPLE,
        ),
        "tuple_header.ctid_not_self" => (
            TupleHeader,
            Error,
            "none on read: the rows of another block appear here (duplicates, or rows in the wrong place), and \
the rows that belonged here are gone",
            "the page holds another block's contents (a misdirected or torn write): restore the block from a backup, \
or salvage the table and zero this page",
        ),
        "file.vm_beyond_end" => (
            File,
            Error,
            "none: a sequential scan stops at the file's end, rows past it are silently missing",
            "the relation file is shorter than the visibility map says: restore the file from a backup, salvage the rest",
        ),
        "tuple_header.xmin_invalid" | "tuple_header.infomask" | "tuple_header.ctid" => (
            TupleHeader,
            Error,
            "wrong visibility, an UPDATE or VACUUM failing on the chain, or a crashed backend",
            REMEDY_TUPLE,
        ),
        "page_header.zeroed_all_visible" | "page_header.zeroed_referenced" => (
            PageHeader,
            Error,
            "none: the server reads an all-zero page as empty, its rows are silently gone (pg_checksums accepts it)",
            "restore the block from a backup if you have one; otherwise the rows are lost: find what referenced them \
(index entries, foreign keys) and decide with the application owners",
        ),
        "page_header.lsn_future" => (
            PageHeader,
            Error,
            "none on read; after recovery or on a standby the page may be overwritten or disagree with WAL",
            "the page comes from a later state of the cluster (a misdirected write or a mixed-up restore): \
compare with a backup and salvage the table",
        ),
        "index.tid_beyond_heap" => (
            Index,
            Error,
            "could not read block N in file F: read only 0 of 8192 bytes (index scans that reach the entry)",
            "the heap lost its tail (or the index is wrong): salvage the table, then REINDEX; restore the heap file \
from a backup if the rows matter",
        ),
        "index.tid_unused" => (
            Index,
            Error,
            "none: index scans silently miss the row, or return a different row that reused the slot",
            "the heap row is gone while the index still has it (or the heap page was overwritten): REINDEX after \
checking the heap page with pgsurgeon inspect",
        ),
        "index.zero_page" => (
            Index,
            Error,
            "index \"I\" contains unexpected zero page at block N (HINT: Please REINDEX it.)",
            REMEDY_INDEX,
        ),
        "index.btree_flags" | "index.sibling_link" => (
            Index,
            Error,
            "index \"I\" contains corrupted page at block N, or scans that skip or repeat entries",
            REMEDY_INDEX,
        ),
        "file.unreadable" => (
            File,
            Error,
            "could not read block N in file F: …",
            "check the storage (dmesg, SMART) and file permissions; copy what can be read before anything else",
        ),
        "file.missing_segment" => (
            File,
            Error,
            "could not open file F (target block N): No such file or directory, or rows past the gap silently missing",
            "restore the missing segment file from a backup; otherwise salvage the blocks before the gap",
        ),
        "file.short_segment" | "file.partial_page" | "file.oversized_segment" => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes",
            "the file was truncated or torn: salvage what is readable, then restore the file from a backup",
        ),
        "tuple_data.natts_gt_relation" => (
            TupleData,
            Error,
            "none on read: attributes beyond the relation's are ignored (amcheck: number of attributes N exceeds \
maximum expected for table M)",
            "t_infomask2 is damaged, so the row may be read with wrong values: salvage the row's columns, then delete it \
with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        "tuple_data.attr_past_end" | "tuple_data.varlena_bad_header" => (
            TupleData,
            Error,
            "wrong values, invalid memory alloc request size, or a crashed backend",
            "the columns before this attribute are readable: salvage the row with this and later columns set to NULL \
(pgsurgeon salvage), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        "tuple_data.compressed_bad" => (
            TupleData,
            Error,
            "compressed pglz data is corrupt / compressed lz4 data is corrupt / invalid compression method id N / \
invalid memory alloc request size N",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        "tuple_data.value_bad" => (
            TupleData,
            Error,
            "wrong values, an error from the type's output function (array size exceeds the maximum allowed, \
invalid numeric), or a crashed backend when it reads the value's damaged internals (jsonb, arrays)",
            "the row's other columns are intact: salvage it (pgsurgeon salvage keeps the row apart with this column \
NULL), then delete it with pg_surgery heap_force_kill (block, lp) and re-insert it",
        ),
        "tuple_data.trailing_bytes" => (
            TupleData,
            Error,
            "none on read: the extra bytes are ignored, but a length or alignment before them is wrong, so values \
are read wrong",
            "compare the row's values with a backup or the application; salvage the row, then delete it with \
pg_surgery heap_force_kill (block, lp) and re-insert it corrected",
        ),
        "toast.pointer_bad" => (
            Toast,
            Error,
            "invalid compression method id N or compressed pglz data is corrupt (the value is decompressed as if \
compressed) / could not open relation with OID N / missing chunk number 0 for toast value V in pg_toast_R / \
unexpected chunk size N (expected M) / invalid memory alloc request size N; some fields are only used by length() \
and pg_column_compression(), then only amcheck notices",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        "toast.flag_missing" => (
            Toast,
            Error,
            "none on read when the TOAST table exists (the value leaks on DELETE/UPDATE); could not open relation \
with OID N when the relation has no TOAST table",
            "the value may still be readable: copy the row out (INSERT … SELECT), delete the original with \
pg_surgery heap_force_kill (block, lp); or set HEAP_HASEXTERNAL again (pgsurgeon repair)",
        ),
        "toast.value_missing" => (
            Toast,
            Error,
            "missing chunk number 0 for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        "toast.chunk_missing" => (
            Toast,
            Error,
            "missing chunk number N for toast value V in pg_toast_R / unexpected chunk number N (expected M) for \
toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        "toast.chunk_unexpected" => (
            Toast,
            Error,
            "unexpected chunk number N (expected M) for toast value V in pg_toast_R / unexpected chunk number N \
(out of range 0..M) for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert; REINDEX the TOAST table if its index is the culprit",
        ),
        "toast.chunk_size" => (
            Toast,
            Error,
            "unexpected chunk size N (expected M) in chunk C of T for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        "toast.chunk_header" => (
            Toast,
            Error,
            "found toasted toast chunk for toast value V in pg_toast_R",
            "the row's other columns are intact: salvage it with this column set to NULL, then delete the row with \
pg_surgery heap_force_kill (block, lp) and re-insert",
        ),
        // Codes of `pgsurgeon diagnose`, for what the server itself said while reading or checking.
        "server.invalid_page" => (
            PageHeader,
            Error,
            "invalid page in block N of relation R (PostgreSQL 18: relation \"R\")",
            "the server refuses the whole page: salvage the table (pgsurgeon salvage) to carve its rows from the \
file, then zero or rebuild the page (pgsurgeon repair); never set zero_damaged_pages before the rows are saved",
        ),
        "server.read_error" => (
            File,
            Error,
            "could not read block N in file F: read only X of 8192 bytes / could not open file F (target block N)",
            "the relation file is shorter than the server expects or a segment is missing: salvage what is \
readable, then restore the file from a backup",
        ),
        "server.error" => (
            TupleHeader,
            Error,
            "the ERROR in observed_error, raised while amcheck checked this block",
            "inspect the block (pgsurgeon inspect) and salvage the table before repairing it",
        ),
        "server.crash" => (
            LinePointer,
            Error,
            "server process was terminated by signal 11: Segmentation fault (every session is disconnected and \
the server runs crash recovery)",
            "do not query these blocks with ordinary SQL: decode them offline (pgsurgeon inspect/scan) and salvage \
the table from its files",
        ),
        "server.timeout" => (
            File,
            Warning,
            "canceling statement due to statement timeout / lock timeout",
            "the range was not checked: run diagnose again with a longer --statement-timeout, or when the table is \
not locked (ALTER TABLE, VACUUM FULL, CLUSTER take conflicting locks)",
        ),
        "amcheck.heap" => {
            (TupleHeader, Error, "see the amcheck message: reading the tuple may fail or return wrong values", REMEDY_TUPLE)
        }
        "amcheck.toast" => (Toast, Error, "see the amcheck message", REMEDY_TOAST),
        "amcheck.btree" => (
            Index,
            Error,
            "index scans that skip or repeat rows, or index \"I\" contains corrupted page at block N",
            REMEDY_INDEX,
        ),
        "index.missing_entry" => (
            Index,
            Error,
            "none: index scans silently miss this row (a unique index lets a duplicate in)",
            REMEDY_INDEX,
        ),
        "file.heap_truncated" => (
            File,
            Error,
            "none on a sequential scan: the rows past the end are silently missing; could not read block N in file \
F when an index scan follows an entry into the missing part",
            "the table file is shorter than its indexes or visibility map say: restore the file from a backup; the \
indexes still hold the key columns of the lost rows",
        ),
        "file.manifest_missing" | "file.manifest_size" | "file.manifest_checksum" | "file.manifest_extra" => (
            File,
            Error,
            "none until the backup is restored: then missing or changed files give wrong rows, or recovery fails \
(pg_verifybackup reports the same)",
            "the backup is not what pg_basebackup wrote (a file was changed, lost or added afterwards): take a new \
backup, or restore from another one and compare",
        ),
        "index.special_size" | "index.bad_cycle_id" => (
            Index,
            Error,
            "index \"I\" contains corrupted page at block N (HINT: Please REINDEX it.)",
            REMEDY_INDEX,
        ),
        _ => (
            PageHeader,
            Warning,
            "",
            "inspect the page (pgsurgeon inspect) and compare with a healthy copy",
        ),
    };
    CodeInfo { area, severity, pg_error, remedy }
}
