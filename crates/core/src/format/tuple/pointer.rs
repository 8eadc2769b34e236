//! External TOAST pointers (`varatt_external`) as a heap tuple carries them: decoding one, the liveness of
//! the tuple that holds it, and amcheck's checks of its fields. Fetching the value is TOAST's business
//! (format/toast.rs), which uses this module, never the other way round.

use serde::Serialize;

use super::varlena::{
    MAX_ALLOC_SIZE, VARHDRSZ, VARHDRSZ_EXTERNAL, VARLENA_EXTSIZE_BITS, VARLENA_EXTSIZE_MASK, VARTAG_ONDISK,
};
use super::{attr_label, AttrDesc, AttrProblem, RelDesc, Walk};
use crate::finding::Code;
use crate::format::bytes::{u32_at, u8_at};
use crate::format::compress::TOAST_INVALID_COMPRESSION_ID;
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_HASEXTERNAL, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID,
};

/// What the referencing tuple's header says about its own liveness: decides whether a missing
/// TOAST value is damage or just VACUUM having been there first (amcheck's
/// `tuple_could_be_pruned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Referrer {
    /// xmax invalid, zero or lock-only: the row is live (or its deleter aborted), so its TOAST
    /// values must be complete.
    Live,
    /// xmax set and not lock-only: the row may be deleted and its TOAST chunks already
    /// vacuumed, so absent chunks prove nothing.
    MaybeDeleted,
    /// HEAP_XMIN_INVALID without HEAP_XMIN_COMMITTED: the inserter aborted; nothing to check.
    XminAborted,
}

impl Referrer {
    pub fn of(header: &HeapTupleHeaderData) -> Referrer {
        let m = header.t_infomask;
        if m & HEAP_XMIN_INVALID != 0 && m & HEAP_XMIN_COMMITTED == 0 {
            return Referrer::XminAborted;
        }
        if xmax_is_live(header) {
            Referrer::Live
        } else {
            Referrer::MaybeDeleted
        }
    }
}

/// xmax does not delete the tuple: HEAP_XMAX_INVALID, xmax 0, or `HEAP_XMAX_IS_LOCKED_ONLY`.
pub(crate) fn xmax_is_live(header: &HeapTupleHeaderData) -> bool {
    let m = header.t_infomask;
    let locked_only =
        m & HEAP_XMAX_LOCK_ONLY != 0 || m & (HEAP_XMAX_IS_MULTI | HEAP_XMAX_SHR_LOCK) == HEAP_XMAX_EXCL_LOCK;
    m & HEAP_XMAX_INVALID != 0 || header.t_xmax == 0 || locked_only
}

/// An on-disk external TOAST pointer (`varatt_external`, tag `VARTAG_ONDISK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ToastPointer {
    pub attnum: i16,
    /// Offset of the pointer (its 0x01 byte) from the tuple start.
    pub offset: usize,
    /// Original size including a 4-byte header.
    pub va_rawsize: i32,
    /// Stored size (low 30 bits) | compression method (top 2 bits).
    pub va_extinfo: u32,
    /// `VARATT_EXTERNAL_GET_EXTSIZE`: bytes stored in the chunks.
    pub extsize: u32,
    /// `VARATT_EXTERNAL_GET_COMPRESS_METHOD`.
    pub compression_method: u8,
    /// `VARATT_EXTERNAL_IS_COMPRESSED`: extsize < va_rawsize - VARHDRSZ.
    pub is_compressed: bool,
    /// chunk_id in the TOAST table.
    pub va_valueid: u32,
    /// pg_class OID of the TOAST table.
    pub va_toastrelid: u32,
    /// The referencing tuple's liveness.
    pub referrer: Referrer,
    /// The referencing tuple has HEAP_XMIN_COMMITTED (or is frozen).
    pub referrer_xmin_committed: bool,
}

impl ToastPointer {
    /// Decode the 18 bytes at `at` (the 0x01 byte); `None` if they are not all inside `buf` or
    /// the tag is not `VARTAG_ONDISK`.
    pub fn parse(buf: &[u8], at: usize, attnum: i16, header: &HeapTupleHeaderData) -> Option<ToastPointer> {
        if u8_at(buf, at)? != 0x01 || u8_at(buf, at + 1)? != VARTAG_ONDISK {
            return None;
        }
        let p = at + VARHDRSZ_EXTERNAL;
        let va_rawsize = u32_at(buf, p)? as i32;
        let va_extinfo = u32_at(buf, p + 4)?;
        let extsize = va_extinfo & VARLENA_EXTSIZE_MASK;
        Some(ToastPointer {
            attnum,
            offset: at,
            va_rawsize,
            va_extinfo,
            extsize,
            compression_method: (va_extinfo >> VARLENA_EXTSIZE_BITS) as u8,
            is_compressed: i64::from(extsize) < i64::from(va_rawsize) - VARHDRSZ as i64,
            va_valueid: u32_at(buf, p + 8)?,
            va_toastrelid: u32_at(buf, p + 12)?,
            referrer: Referrer::of(header),
            referrer_xmin_committed: header.t_infomask & HEAP_XMIN_COMMITTED != 0,
        })
    }

    /// Number of chunks the value is stored in (0 for an empty value), with `max_chunk_size`
    /// data bytes per chunk (TOAST_MAX_CHUNK_SIZE).
    pub fn chunk_count(&self, max_chunk_size: u32) -> u32 {
        if self.extsize == 0 {
            0
        } else {
            (self.extsize - 1) / max_chunk_size.max(1) + 1
        }
    }
}

/// amcheck's pointer checks (`check_tuple_attribute`) plus the size rules `toast_save_datum`
/// always follows. The predicted server error follows `detoast_attr`'s order: allocate
/// extsize plus 4 bytes, open va_toastrelid, fetch the chunks, then decompress when extsize is
/// below va_rawsize - 4 (verified on PostgreSQL 15 by damaging each field).
pub(super) fn check_pointer(
    ptr: &ToastPointer,
    a: &AttrDesc,
    header: &HeapTupleHeaderData,
    rel: &RelDesc,
    w: &mut Walk,
) {
    let mut reasons = Vec::new();
    size_and_place_reasons(ptr, rel, &mut reasons);
    compression_reasons(ptr, &mut reasons);
    // All the reasons are listed; the server error is the one the fetch meets first.
    if let Some(first) = reasons.iter().min_by_key(|r| r.order) {
        let pg_error = first.pg_error.clone();
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::ToastPointerBad,
            message: format!(
                "{}: TOAST pointer for value {} (va_rawsize {}, va_extinfo 0x{:08x}, va_toastrelid {}): {}",
                attr_label(a),
                ptr.va_valueid,
                ptr.va_rawsize,
                ptr.va_extinfo,
                ptr.va_toastrelid,
                reasons.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join("; ")
            ),
            pg_error,
        });
    }
    flag_problems(ptr, a, header, rel, w);
}

/// One thing wrong with a pointer's fields.
struct Reason {
    /// What is wrong, with the values.
    text: String,
    /// Where in `detoast_attr`'s order the server meets it (lower is earlier).
    order: u8,
    /// What the server then raises.
    pg_error: String,
}

impl Reason {
    fn new(text: String, order: u8, pg_error: String) -> Reason {
        Reason { text, order, pg_error }
    }
}

/// The sizes and the value's address: extsize, va_valueid, va_toastrelid and va_rawsize.
fn size_and_place_reasons(ptr: &ToastPointer, rel: &RelDesc, reasons: &mut Vec<Reason>) {
    let v = ptr.va_valueid;
    let raw = i64::from(ptr.va_rawsize);
    let ext = u64::from(ptr.extsize);
    let as_compressed = "the fetched bytes are decompressed as if compressed (extsize < va_rawsize - 4): invalid \
compression method id N, compressed pglz data is corrupt, or invalid memory alloc request size N";
    if ext + VARHDRSZ as u64 > MAX_ALLOC_SIZE {
        reasons.push(Reason::new(
            format!("extsize {ext} is too large to fetch"),
            1,
            format!("invalid memory alloc request size {}", ext + VARHDRSZ as u64),
        ));
    }
    if ext == 0 {
        let pg = if ptr.is_compressed {
            "compressed pglz data is corrupt, or another decompression error (an empty value is decompressed)"
        } else {
            "none: the value reads as empty (a wrong value)"
        };
        reasons.push(Reason::new("va_extinfo says 0 bytes are stored".into(), 2, pg.into()));
    }
    if v == 0 {
        reasons.push(Reason::new(
            "va_valueid is 0 (InvalidOid)".into(),
            3,
            "missing chunk number 0 for toast value 0 in pg_toast_R".into(),
        ));
    }
    if rel.has_toast && rel.toast_relid != 0 && ptr.va_toastrelid != rel.toast_relid {
        reasons.push(Reason::new(
            format!("va_toastrelid {} is not the table's TOAST table {}", ptr.va_toastrelid, rel.toast_relid),
            3,
            format!(
                "could not open relation with OID {}, or missing chunk number 0 for toast value {v} in another \
TOAST table",
                ptr.va_toastrelid
            ),
        ));
    }
    if raw > MAX_ALLOC_SIZE as i64 {
        reasons.push(Reason::new(
            format!("va_rawsize {raw} exceeds the limit {MAX_ALLOC_SIZE} (amcheck: toast value {v} rawsize {raw} exceeds limit {MAX_ALLOC_SIZE})"),
            5,
            as_compressed.into(),
        ));
    }
}

/// The compression information: a compressed value's method id; an uncompressed value's size
/// relation and stray method bits.
fn compression_reasons(ptr: &ToastPointer, reasons: &mut Vec<Reason>) {
    let v = ptr.va_valueid;
    let raw = i64::from(ptr.va_rawsize);
    let ext = u64::from(ptr.extsize);
    if ptr.is_compressed {
        if ptr.compression_method >= TOAST_INVALID_COMPRESSION_ID {
            reasons.push(Reason::new(
                format!("compressed value with invalid compression method id {}", ptr.compression_method),
                7,
                format!(
                    "none on a full read (the stored bytes carry their own method id); pg_column_compression() \
is wrong; amcheck: toast value {v} has invalid compression method id {}",
                    ptr.compression_method
                ),
            ));
        }
        return;
    }
    if ext as i64 != raw - VARHDRSZ as i64 {
        reasons.push(Reason::new(
            format!(
                "uncompressed value (extsize {ext} >= va_rawsize {raw} - 4) whose extsize is not va_rawsize - 4 \
= {}",
                raw - VARHDRSZ as i64
            ),
            6,
            format!(
                "unexpected chunk size N (expected M) … for toast value {v} when extsize is wrong; none on a \
full read when only va_rawsize is (length() is wrong)"
            ),
        ));
    }
    if ptr.compression_method != 0 {
        reasons.push(Reason::new(
            format!("uncompressed value carries compression method bits {}", ptr.compression_method),
            8,
            "none: the bits are ignored for an uncompressed value".into(),
        ));
    }
}

/// The header and the relation must know the tuple has external values: HEAP_HASEXTERNAL, and a
/// TOAST table to fetch them from.
fn flag_problems(ptr: &ToastPointer, a: &AttrDesc, header: &HeapTupleHeaderData, rel: &RelDesc, w: &mut Walk) {
    let v = ptr.va_valueid;
    if header.t_infomask & HEAP_HASEXTERNAL == 0 {
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::ToastFlagMissing,
            message: format!(
                "{}: toast value {v} is external but tuple header flag HEAP_HASEXTERNAL \
is not set",
                attr_label(a)
            ),
            pg_error: "none on read; DELETE/UPDATE skip this row's TOAST cleanup (the value \
leaks)"
                .into(),
        });
    }
    if !rel.has_toast {
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::ToastFlagMissing,
            message: format!("{}: toast value {v} is external but the relation has no TOAST table", attr_label(a)),
            pg_error: format!(
                "could not open relation with OID {}, or missing chunk number 0 for toast value \
{v}",
                ptr.va_toastrelid
            ),
        });
    }
}
