//! Walking a heap tuple's attributes when the column types are known, the way
//! `heap_deform_tuple` (`access/common/heaptuple.c`) and amcheck's `check_tuple_attribute`
//! (`contrib/amcheck/verify_heapam.c`) do, with the varlena rules of `varatt.h` and the
//! alignment macros of `access/tupmacs.h`.
//!
//! The walk never trusts a length: every attribute start and end is checked against the tuple
//! before it is read, and damage is returned as [`AttrProblem`]s instead of a panic. External
//! TOAST pointers met on the way are returned as [`ToastPointer`]s for [`crate::format::toast`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::finding::{Code, Finding};
use crate::format::bytes::{maxalign, u32_at, u8_at};
use crate::format::compress::{TOAST_INVALID_COMPRESSION_ID, TOAST_LZ4_COMPRESSION_ID};
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_HASEXTERNAL, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID, SIZEOF_HEAP_TUPLE_HEADER,
};

/// `MaxAllocSize` (utils/memutils.h): 1 GB - 1. palloc refuses anything larger.
pub const MAX_ALLOC_SIZE: u64 = 0x3FFF_FFFF;
/// `VARHDRSZ` (varatt.h).
pub const VARHDRSZ: usize = 4;
/// `VARHDRSZ_SHORT` (varatt.h).
pub const VARHDRSZ_SHORT: usize = 1;
/// `VARHDRSZ_EXTERNAL` (varatt.h): va_header + va_tag.
pub const VARHDRSZ_EXTERNAL: usize = 2;
/// `VARHDRSZ_COMPRESSED` (varatt.h): length word + va_tcinfo.
pub const VARHDRSZ_COMPRESSED: usize = 8;
/// `vartag_external` values (varatt.h). Only `VARTAG_ONDISK` may appear on disk.
pub const VARTAG_INDIRECT: u8 = 1;
pub const VARTAG_EXPANDED_RO: u8 = 2;
pub const VARTAG_EXPANDED_RW: u8 = 3;
pub const VARTAG_ONDISK: u8 = 18;
/// sizeof(varatt_external): va_rawsize, va_extinfo, va_valueid, va_toastrelid.
pub const SIZEOF_VARATT_EXTERNAL: usize = 16;
/// An on-disk TOAST pointer: 2 header bytes + varatt_external.
pub const TOAST_POINTER_SIZE: usize = VARHDRSZ_EXTERNAL + SIZEOF_VARATT_EXTERNAL;
/// `VARLENA_EXTSIZE_BITS` / `VARLENA_EXTSIZE_MASK` (varatt.h).
pub const VARLENA_EXTSIZE_BITS: u32 = 30;
pub const VARLENA_EXTSIZE_MASK: u32 = (1 << VARLENA_EXTSIZE_BITS) - 1;

/// One pg_attribute row, as much of it as the walk needs (`attlen`, `attalign`, `attbyval`,
/// `attstorage` are pg_attribute's own copies, so dropped columns keep them).
///
/// In JSON, `attalign` and `attstorage` may be one-character strings (`"i"`, as SQL returns
/// them) or byte values (`105`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttrDesc {
    pub attnum: i16,
    /// > 0 fixed length, -1 varlena, -2 cstring.
    pub attlen: i16,
    /// b'c', b's', b'i' or b'd'.
    #[serde(serialize_with = "ser_char", deserialize_with = "de_char")]
    pub attalign: u8,
    #[serde(default)]
    pub attbyval: bool,
    #[serde(default)]
    pub attisdropped: bool,
    /// Type name, for messages only.
    #[serde(default)]
    pub typname: String,
    /// b'p', b'e', b'm' or b'x'.
    #[serde(default = "default_storage", serialize_with = "ser_char", deserialize_with = "de_char")]
    pub attstorage: u8,
}

fn default_storage() -> u8 {
    b'p'
}

fn ser_char<S: Serializer>(v: &u8, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&char::from(*v).to_string())
}

/// A catalog "char" code (`attalign`, `typtype`…) given as a one-character string, as SQL returns it, or a byte.
pub(crate) fn de_char<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum CharOrByte {
        Byte(u8),
        Str(String),
    }
    match CharOrByte::deserialize(d)? {
        CharOrByte::Byte(b) => Ok(b),
        CharOrByte::Str(s) if s.len() == 1 => Ok(s.as_bytes()[0]),
        CharOrByte::Str(s) => Err(serde::de::Error::custom(format!("expected a one-character code, got {s:?}"))),
    }
}

fn de_oid<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrStr {
        Num(u32),
        Str(String),
    }
    match NumOrStr::deserialize(d)? {
        NumOrStr::Num(n) => Ok(n),
        NumOrStr::Str(s) => s.parse().map_err(|_| serde::de::Error::custom(format!("expected an OID, got {s:?}"))),
    }
}

/// A relation's tuple descriptor: `attrs` in attnum order (1..=natts, dropped columns included).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelDesc {
    /// pg_class.relnatts.
    pub natts: u16,
    pub attrs: Vec<AttrDesc>,
    /// reltoastrelid != 0.
    #[serde(default)]
    pub has_toast: bool,
    /// pg_class.reltoastrelid (the TOAST table's OID, which is what pointers carry). JSON may
    /// give it as a number or, as json_build_object does for `oid`, a numeric string.
    #[serde(default, deserialize_with = "de_oid")]
    pub toast_relid: u32,
}

impl RelDesc {
    /// The descriptor every TOAST table has (`catalog/toasting.c`): chunk_id oid, chunk_seq int4,
    /// chunk_data bytea, all with plain storage.
    pub fn toast_table() -> RelDesc {
        let att = |attnum: i16, attlen: i16, typname: &str| AttrDesc {
            attnum,
            attlen,
            attalign: b'i',
            attbyval: attlen > 0,
            attisdropped: false,
            typname: typname.to_string(),
            attstorage: b'p',
        };
        RelDesc {
            natts: 3,
            attrs: vec![att(1, 4, "oid"), att(2, 4, "int4"), att(3, -1, "bytea")],
            has_toast: false,
            toast_relid: 0,
        }
    }
}

/// What a varlena's first byte(s) say it is (varatt.h, little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VarlenaKind {
    /// 1-byte header, inline and uncompressed (`VARATT_IS_1B`).
    Short,
    /// 4-byte header, inline and uncompressed (`VARATT_IS_4B_U`).
    Plain,
    /// 4-byte header, compressed inline (`VARATT_IS_4B_C`): va_tcinfo's raw size (without
    /// header) and compression method id.
    Compressed { rawsize: u32, method: u8 },
    /// 1-byte header 0x01: a TOAST pointer with this `va_tag` (`VARATT_IS_1B_E`).
    External { tag: u8 },
}

impl VarlenaKind {
    /// Header bytes before the payload.
    pub fn header_len(&self) -> usize {
        match self {
            VarlenaKind::Short => VARHDRSZ_SHORT,
            VarlenaKind::Plain => VARHDRSZ,
            VarlenaKind::Compressed { .. } => VARHDRSZ_COMPRESSED,
            VarlenaKind::External { .. } => VARHDRSZ_EXTERNAL,
        }
    }
}

/// Where one attribute's value lies in the tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AttrSpan {
    pub attnum: i16,
    /// Byte offset from the start of the tuple (not from t_hoff); for NULL and missing
    /// attributes, where the walk stood.
    pub offset: usize,
    /// Stored bytes including any varlena header (0 for NULL and missing).
    pub len: usize,
    pub is_null: bool,
    /// attnum > the tuple's natts: not stored; the value is attmissingval or NULL.
    pub missing: bool,
    pub varlena: Option<VarlenaKind>,
}

impl AttrSpan {
    /// The stored bytes (header included), when inside `tuple`.
    pub fn bytes<'a>(&self, tuple: &'a [u8]) -> Option<&'a [u8]> {
        if self.is_null || self.missing {
            return None;
        }
        tuple.get(self.offset..self.offset.checked_add(self.len)?)
    }

    /// The payload after the varlena header (the whole value for fixed-length types).
    pub fn payload<'a>(&self, tuple: &'a [u8]) -> Option<&'a [u8]> {
        let b = self.bytes(tuple)?;
        b.get(self.varlena.map_or(0, |k| k.header_len())..)
    }
}

/// Something wrong with one attribute (attnum 0: the tuple as a whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttrProblem {
    pub attnum: i16,
    /// A finding code (`tuple_data.*`, `toast.*`), described in [`crate::finding::describe`].
    pub code: Code,
    /// What is wrong, with the values seen.
    pub message: String,
    /// What the server does with it, with the values filled in.
    pub pg_error: String,
}

impl AttrProblem {
    /// As a finding for the tuple at (`block`, `item`).
    pub fn to_finding(&self, block: Option<u64>, item: Option<u16>) -> Finding {
        Finding::with_server_error(self.code, block, item, &self.message, &self.pg_error)
    }
}

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

/// The result of walking one tuple.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Walk {
    /// One span per attribute up to the relation's natts (stored, NULL or missing), until the
    /// walk had to stop.
    pub spans: Vec<AttrSpan>,
    pub problems: Vec<AttrProblem>,
    /// Valid-tagged external pointers met (they may still have `toast.pointer_bad` problems).
    pub toast_pointers: Vec<ToastPointer>,
    /// Offset (from the tuple start) just past the last stored attribute the walk reached.
    pub data_end: usize,
    /// The walk could not find where an attribute ends and stopped early.
    pub stopped: bool,
}

/// Knobs for [`walk_attributes_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// Decompress compressed inline values (pglz/lz4) to prove they decode to their recorded raw
    /// size, as detoasting would. Costs time proportional to the compressed data.
    pub verify_compressed: bool,
    /// Fill [`Walk::spans`]; a caller that only wants the problems and TOAST pointers saves the stores.
    pub record_spans: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions { verify_compressed: true, record_spans: true }
    }
}

/// `att_align_nominal` (tupmacs.h): unknown codes align like 's', as the macro does.
#[inline]
pub fn align_nominal(off: usize, attalign: u8) -> usize {
    let a = match attalign {
        b'c' => 1,
        b'i' => 4,
        b'd' => 8,
        _ => 2,
    };
    off.saturating_add(a - 1) & !(a - 1)
}

/// `att_isnull` on the bitmap after the fixed header. Bits beyond the tuple read as "not null",
/// so the attribute itself then runs past the end and is reported.
#[inline]
fn att_isnull(tuple: &[u8], attidx: usize) -> bool {
    match tuple.get(SIZEOF_HEAP_TUPLE_HEADER + (attidx >> 3)) {
        Some(b) => b & (1 << (attidx & 7)) == 0,
        None => false,
    }
}

fn attr_label(a: &AttrDesc) -> String {
    if a.attisdropped {
        format!("attribute {} (dropped)", a.attnum)
    } else if a.typname.is_empty() {
        format!("attribute {}", a.attnum)
    } else {
        format!("attribute {} ({})", a.attnum, a.typname)
    }
}

/// Walk `tuple` (the lp_len bytes of a heap item) with the relation's descriptor, checking every
/// attribute, and decompressing compressed inline values. See [`walk_attributes_with`].
pub fn walk_attributes(tuple: &[u8], header: &HeapTupleHeaderData, rel: &RelDesc) -> Walk {
    walk_attributes_with(tuple, header, rel, &WalkOptions::default())
}

/// Walk `tuple` following heap_deform_tuple: attributes 1..=min(tuple natts, relation natts) in
/// order; NULLs (HEAP_HASNULL and a clear bitmap bit) take no space; fixed-length values are
/// aligned with `att_align_nominal`; varlenas with `att_align_pointer` (no alignment when the
/// byte at the unaligned position is nonzero, i.e. a 1-byte header or a TOAST pointer); cstrings
/// run to their NUL. Never panics; stops at the first attribute whose end cannot be known.
pub fn walk_attributes_with(tuple: &[u8], header: &HeapTupleHeaderData, rel: &RelDesc, opts: &WalkOptions) -> Walk {
    let mut w = Walk::default();
    walk_attributes_into(tuple, header, rel, opts, &mut w);
    w
}

/// [`walk_attributes_with`] into `w`, reusing its vectors (a caller walking many tuples allocates once).
pub fn walk_attributes_into(
    tuple: &[u8],
    header: &HeapTupleHeaderData,
    rel: &RelDesc,
    opts: &WalkOptions,
    w: &mut Walk,
) {
    w.spans.clear();
    w.problems.clear();
    w.toast_pointers.clear();
    w.stopped = false;
    let len = tuple.len();
    let tup_natts = usize::from(header.natts());
    let rel_natts = usize::from(rel.natts);
    if tup_natts > rel_natts {
        w.problems.push(AttrProblem {
            attnum: 0,
            code: Code::TupleDataNattsGtRelation,
            message: format!("the tuple has {tup_natts} attributes, the relation only {rel_natts}"),
            pg_error: format!(
                "none on read (attributes beyond {rel_natts} are ignored); amcheck: number of \
attributes {tup_natts} exceeds maximum expected for table {rel_natts}"
            ),
        });
    }
    let walk_n = tup_natts.min(rel_natts).min(rel.attrs.len());
    let hasnull = header.has_nulls();
    let mut off = usize::from(header.t_hoff);
    w.data_end = off;

    for (i, a) in rel.attrs.iter().take(walk_n).enumerate() {
        if off > len {
            w.problems
                .push(past_end(a, format!("{} starts at offset {off}, beyond the tuple length {len}", attr_label(a))));
            w.stopped = true;
            break;
        }
        if hasnull && att_isnull(tuple, i) {
            if !opts.record_spans {
                continue;
            }
            w.spans.push(AttrSpan {
                attnum: a.attnum,
                offset: off,
                len: 0,
                is_null: true,
                missing: false,
                varlena: None,
            });
            continue;
        }
        let step = if a.attlen > 0 {
            fixed_attr(tuple, off, a)
        } else if a.attlen == -1 {
            varlena_attr(tuple, off, a, header, rel, opts, w)
        } else {
            cstring_attr(tuple, off, a)
        };
        match step {
            Ok(span) => {
                off = span.offset + span.len;
                w.data_end = off;
                if opts.record_spans {
                    w.spans.push(span);
                }
            }
            Err(p) => {
                if let Some(p) = p {
                    w.problems.push(p);
                }
                w.stopped = true;
                break;
            }
        }
    }

    if !w.stopped {
        let missing = if opts.record_spans { rel_natts.min(rel.attrs.len()) } else { 0 };
        for a in rel.attrs.iter().take(missing).skip(walk_n) {
            w.spans.push(AttrSpan {
                attnum: a.attnum,
                offset: off,
                len: 0,
                is_null: false,
                missing: true,
                varlena: None,
            });
        }
        // Tuples are exactly as long as their data (t_len); allow the MAXALIGN padding a
        // caller may include. Extra attributes beyond the relation explain extra bytes.
        if tup_natts <= rel_natts && walk_n == tup_natts && len > maxalign(off) {
            w.problems.push(AttrProblem {
                attnum: 0,
                code: Code::TupleDataTrailingBytes,
                message: format!(
                    "{} bytes follow the last attribute (data ends at offset {off}, the tuple is \
{len} bytes long): a length or alignment before them is wrong",
                    len - off
                ),
                pg_error: "none on read: the extra bytes are ignored, but the values before \
them were likely read wrong"
                    .to_string(),
            });
        }
    }
}

fn past_end(a: &AttrDesc, message: String) -> AttrProblem {
    AttrProblem {
        attnum: a.attnum,
        code: Code::TupleDataAttrPastEnd,
        message,
        pg_error: "wrong values, invalid memory alloc request size, or a crashed backend".into(),
    }
}

type Step = Result<AttrSpan, Option<AttrProblem>>;

fn fixed_attr(tuple: &[u8], off: usize, a: &AttrDesc) -> Step {
    let start = align_nominal(off, a.attalign);
    let n = a.attlen as usize;
    let end = start + n;
    if end > tuple.len() {
        return Err(Some(past_end(
            a,
            format!(
                "{} with length {n} at offset {start} ends at {end}, beyond the tuple length {}",
                attr_label(a),
                tuple.len()
            ),
        )));
    }
    Ok(AttrSpan { attnum: a.attnum, offset: start, len: n, is_null: false, missing: false, varlena: None })
}

fn cstring_attr(tuple: &[u8], off: usize, a: &AttrDesc) -> Step {
    let start = align_nominal(off, a.attalign);
    match tuple.get(start..).and_then(|s| s.iter().position(|b| *b == 0)) {
        Some(nul) => Ok(AttrSpan {
            attnum: a.attnum,
            offset: start,
            len: nul + 1,
            is_null: false,
            missing: false,
            varlena: None,
        }),
        None => Err(Some(past_end(
            a,
            format!(
                "{} (cstring) at offset {start} has no terminating NUL before the tuple ends at {}",
                attr_label(a),
                tuple.len()
            ),
        ))),
    }
}

fn varlena_attr(
    tuple: &[u8],
    off: usize,
    a: &AttrDesc,
    header: &HeapTupleHeaderData,
    rel: &RelDesc,
    opts: &WalkOptions,
    w: &mut Walk,
) -> Step {
    let len = tuple.len();
    // att_align_pointer: VARATT_NOT_PAD_BYTE at the unaligned position means "no alignment".
    let Some(first) = u8_at(tuple, off) else {
        return Err(Some(past_end(
            a,
            format!("{} (varlena) starts at offset {off}, the end of the {len}-byte tuple", attr_label(a)),
        )));
    };
    let start = if first != 0 { off } else { align_nominal(off, a.attalign) };
    let Some(b0) = u8_at(tuple, start) else {
        return Err(Some(past_end(
            a,
            format!("{} (varlena) aligned to offset {start}, beyond the tuple length {len}", attr_label(a)),
        )));
    };
    let span = |n: usize, kind: VarlenaKind| AttrSpan {
        attnum: a.attnum,
        offset: start,
        len: n,
        is_null: false,
        missing: false,
        varlena: Some(kind),
    };
    let runs_past = |n: u64, what: &str| {
        past_end(
            a,
            format!(
                "{} {what} at offset {start} claims {n} bytes, ending at {}, beyond the tuple \
length {len}",
                attr_label(a),
                start as u64 + n
            ),
        )
    };

    if b0 == 0x01 {
        // VARATT_IS_1B_E: a TOAST pointer; its size depends on the tag.
        let Some(tag) = u8_at(tuple, start + 1) else {
            return Err(Some(runs_past(2, "TOAST pointer")));
        };
        if tag != VARTAG_ONDISK {
            let (what, pg_error) = match tag {
                VARTAG_INDIRECT | VARTAG_EXPANDED_RO | VARTAG_EXPANDED_RW => (
                    "an in-memory TOAST pointer tag",
                    "a crashed backend (the server follows a memory address stored on disk)",
                ),
                _ => (
                    "an unknown TOAST tag",
                    "wrong values for this and later columns (the pointer's size is unknown), or \
a crashed backend; amcheck: toasted attribute has unexpected TOAST tag",
                ),
            };
            return Err(Some(AttrProblem {
                attnum: a.attnum,
                code: Code::TupleDataVarlenaBadHeader,
                message: format!(
                    "{} at offset {start} is a TOAST pointer with {what} {tag} (only 18, \
VARTAG_ONDISK, is valid on disk)",
                    attr_label(a)
                ),
                pg_error: pg_error.to_string(),
            }));
        }
        if start + TOAST_POINTER_SIZE > len {
            return Err(Some(runs_past(TOAST_POINTER_SIZE as u64, "TOAST pointer")));
        }
        if let Some(ptr) = ToastPointer::parse(tuple, start, a.attnum, header) {
            check_pointer(&ptr, a, header, rel, w);
            w.toast_pointers.push(ptr);
        }
        return Ok(span(TOAST_POINTER_SIZE, VarlenaKind::External { tag }));
    }

    if b0 & 0x01 == 0x01 {
        // VARATT_IS_1B: total length (header included) in the upper 7 bits.
        let n = usize::from(b0 >> 1);
        if start + n > len {
            return Err(Some(runs_past(n as u64, "short varlena")));
        }
        return Ok(span(n, VarlenaKind::Short));
    }

    // 4-byte header: low bits 00 plain, 10 compressed.
    let Some(word) = u32_at(tuple, start) else {
        return Err(Some(runs_past(4, "4-byte varlena header")));
    };
    let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
    let compressed = b0 & 0x03 == 0x02;
    if start != align_nominal(start, a.attalign) {
        // fill_val aligns every 4-byte-header varlena; padding is zero, so a reader only lands
        // on one unaligned when a length before it is wrong.
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::TupleDataVarlenaBadHeader,
            message: format!(
                "{} has a 4-byte varlena header (0x{word:08x}) at unaligned offset {start} \
(attalign '{}'): heap_form_tuple always aligns those, so a length before it is wrong",
                attr_label(a),
                char::from(a.attalign)
            ),
            pg_error: "wrong values, invalid memory alloc request size, or a crashed backend".into(),
        });
    }
    let min = if compressed { VARHDRSZ_COMPRESSED } else { VARHDRSZ };
    if n < min {
        return Err(Some(AttrProblem {
            attnum: a.attnum,
            code: Code::TupleDataVarlenaBadHeader,
            message: format!(
                "{} at offset {start}: {} varlena header 0x{word:08x} gives length {n}, less than \
its own {min}-byte header",
                attr_label(a),
                if compressed { "compressed" } else { "4-byte" }
            ),
            pg_error: format!(
                "invalid memory alloc request size {} (the data length {n} - {VARHDRSZ} is \
negative), wrong values, or a crashed backend",
                (n as i64 - VARHDRSZ as i64) as u64
            ),
        }));
    }
    if start + n > len {
        return Err(Some(runs_past(n as u64, if compressed { "compressed varlena" } else { "varlena" })));
    }
    if !compressed {
        return Ok(span(n, VarlenaKind::Plain));
    }
    let tcinfo = u32_at(tuple, start + 4).unwrap_or(0);
    let rawsize = tcinfo & VARLENA_EXTSIZE_MASK;
    let method = (tcinfo >> VARLENA_EXTSIZE_BITS) as u8;
    let label = attr_label(a);
    if method >= TOAST_INVALID_COMPRESSION_ID {
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{label}: compressed inline value (va_tcinfo 0x{tcinfo:08x}) has compression \
method id {method} (0 pglz and 1 lz4 are valid)"
            ),
            pg_error: format!("invalid compression method id {method}"),
        });
    } else if u64::from(rawsize) + VARHDRSZ as u64 > MAX_ALLOC_SIZE {
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{label}: compressed inline value claims a raw size of {rawsize} bytes \
(va_tcinfo 0x{tcinfo:08x}), more than palloc allows"
            ),
            pg_error: format!("invalid memory alloc request size {}", u64::from(rawsize) + VARHDRSZ as u64),
        });
    } else if opts.verify_compressed {
        let data = &tuple[start + VARHDRSZ_COMPRESSED..start + n];
        let name = if method == TOAST_LZ4_COMPRESSION_ID { "lz4" } else { "pglz" };
        match crate::format::compress::decompress(method, data, rawsize as usize) {
            Ok(out) if out.len() == rawsize as usize => {}
            Ok(out) => w.problems.push(AttrProblem {
                attnum: a.attnum,
                code: Code::TupleDataCompressedBad,
                message: format!(
                    "{label}: {name} data ({} bytes) decompresses to {} bytes, va_tcinfo says \
{rawsize}",
                    data.len(),
                    out.len()
                ),
                pg_error: format!(
                    "none: the value is silently {} bytes long instead of {rawsize} (lz4 accepts \
a short result)",
                    out.len()
                ),
            }),
            Err(e) => w.problems.push(AttrProblem {
                attnum: a.attnum,
                code: Code::TupleDataCompressedBad,
                message: format!(
                    "{label}: {name} data ({} bytes, raw size {rawsize}) does not decompress: {e}",
                    data.len()
                ),
                pg_error: format!("compressed {name} data is corrupt"),
            }),
        }
    }
    Ok(span(n, VarlenaKind::Compressed { rawsize, method }))
}

/// amcheck's pointer checks (`check_tuple_attribute`) plus the size rules `toast_save_datum`
/// always follows. The predicted server error follows `detoast_attr`'s order: allocate
/// extsize plus 4 bytes, open va_toastrelid, fetch the chunks, then decompress when extsize is
/// below va_rawsize - 4 (verified on PostgreSQL 15 by damaging each field).
fn check_pointer(ptr: &ToastPointer, a: &AttrDesc, header: &HeapTupleHeaderData, rel: &RelDesc, w: &mut Walk) {
    let v = ptr.va_valueid;
    let label = attr_label(a);
    // (reason, server-order priority, predicted error)
    let mut reasons: Vec<(String, u8, String)> = Vec::new();
    let raw = i64::from(ptr.va_rawsize);
    let ext = u64::from(ptr.extsize);
    let as_compressed = "the fetched bytes are decompressed as if compressed (extsize < va_rawsize - 4): invalid \
compression method id N, compressed pglz data is corrupt, or invalid memory alloc request size N";
    if ext + VARHDRSZ as u64 > MAX_ALLOC_SIZE {
        reasons.push((
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
        reasons.push(("va_extinfo says 0 bytes are stored".into(), 2, pg.into()));
    }
    if v == 0 {
        reasons.push((
            "va_valueid is 0 (InvalidOid)".into(),
            3,
            "missing chunk number 0 for toast value 0 in pg_toast_R".into(),
        ));
    }
    if rel.has_toast && rel.toast_relid != 0 && ptr.va_toastrelid != rel.toast_relid {
        reasons.push((
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
        reasons.push((
            format!("va_rawsize {raw} exceeds the limit {MAX_ALLOC_SIZE} (amcheck: toast value {v} rawsize {raw} exceeds limit {MAX_ALLOC_SIZE})"),
            5,
            as_compressed.into(),
        ));
    }
    if ptr.is_compressed {
        if ptr.compression_method >= TOAST_INVALID_COMPRESSION_ID {
            reasons.push((
                format!("compressed value with invalid compression method id {}", ptr.compression_method),
                7,
                format!(
                    "none on a full read (the stored bytes carry their own method id); pg_column_compression() \
is wrong; amcheck: toast value {v} has invalid compression method id {}",
                    ptr.compression_method
                ),
            ));
        }
    } else {
        if ext as i64 != raw - VARHDRSZ as i64 {
            reasons.push((
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
            reasons.push((
                format!("uncompressed value carries compression method bits {}", ptr.compression_method),
                8,
                "none: the bits are ignored for an uncompressed value".into(),
            ));
        }
    }
    if let Some((_, _, pg_error)) = reasons.iter().min_by_key(|r| r.1) {
        let pg_error = pg_error.clone();
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::ToastPointerBad,
            message: format!(
                "{label}: TOAST pointer for value {v} (va_rawsize {}, va_extinfo 0x{:08x}, va_toastrelid {}): {}",
                ptr.va_rawsize,
                ptr.va_extinfo,
                ptr.va_toastrelid,
                reasons.iter().map(|r| r.0.as_str()).collect::<Vec<_>>().join("; ")
            ),
            pg_error,
        });
    }
    if header.t_infomask & HEAP_HASEXTERNAL == 0 {
        w.problems.push(AttrProblem {
            attnum: a.attnum,
            code: Code::ToastFlagMissing,
            message: format!(
                "{label}: toast value {v} is external but tuple header flag HEAP_HASEXTERNAL \
is not set"
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
            message: format!("{label}: toast value {v} is external but the relation has no TOAST table"),
            pg_error: format!(
                "could not open relation with OID {}, or missing chunk number 0 for toast value \
{v}",
                ptr.va_toastrelid
            ),
        });
    }
}

/// The valid-tagged on-disk TOAST pointers of a tuple (those the walk reaches), for
/// [`crate::format::toast::ChunkInventory::check_value`].
pub fn toast_pointers(tuple: &[u8], header: &HeapTupleHeaderData, rel: &RelDesc) -> Vec<ToastPointer> {
    walk_attributes_with(tuple, header, rel, &WalkOptions { verify_compressed: false, ..WalkOptions::default() })
        .toast_pointers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_macros() {
        assert_eq!(align_nominal(5, b'c'), 5);
        assert_eq!(align_nominal(5, b's'), 6);
        assert_eq!(align_nominal(5, b'i'), 8);
        assert_eq!(align_nominal(9, b'd'), 16);
        assert_eq!(align_nominal(9, b'?'), 10);
        assert_eq!(align_nominal(usize::MAX, b'd'), usize::MAX & !7);
    }

    #[test]
    fn reldesc_json_accepts_chars_and_bytes() {
        let j = r#"{"natts":2,"has_toast":true,"toast_relid":"5","attrs":[
            {"attnum":1,"attlen":4,"attalign":"i","attbyval":true,"attisdropped":false,"typname":"int4","attstorage":"p"},
            {"attnum":2,"attlen":-1,"attalign":105,"typname":"text"}]}"#;
        let r: RelDesc = serde_json::from_str(j).unwrap();
        assert_eq!(r.attrs[0].attalign, b'i');
        assert_eq!(r.attrs[1].attalign, b'i');
        assert_eq!(r.attrs[1].attstorage, b'p');
        let back = serde_json::to_string(&r).unwrap();
        assert!(back.contains(r#""attalign":"i""#));
        let again: RelDesc = serde_json::from_str(&back).unwrap();
        assert_eq!(again, r);
    }
}
