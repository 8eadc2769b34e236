//! Walking a heap tuple's attributes when the column types are known, the way
//! `heap_deform_tuple` (`access/common/heaptuple.c`) and amcheck's `check_tuple_attribute`
//! (`contrib/amcheck/verify_heapam.c`) do, with the varlena rules of `varatt.h` and the
//! alignment macros of `access/tupmacs.h`.
//!
//! The walk never trusts a length: every attribute start and end is checked against the tuple
//! before it is read, and damage is returned as [`AttrProblem`]s instead of a panic. External
//! TOAST pointers met on the way are returned as [`ToastPointer`]s for [`crate::format::toast`].
//!
//! The parts: `desc` (the tuple descriptor), `varlena` (varlena headers and their checks) and
//! `pointer` (on-disk TOAST pointers and their checks); this module walks the attributes. None of
//! them may use `format::toast`, which is built on them (tests/layering.rs).

mod desc;
mod pointer;
mod varlena;

pub(crate) use desc::de_char;
pub use desc::{AttrDesc, RelDesc};
pub(crate) use pointer::xmax_is_live;
pub use pointer::{Referrer, ToastPointer};
pub use varlena::{
    VarlenaKind, MAX_ALLOC_SIZE, SIZEOF_VARATT_EXTERNAL, TOAST_POINTER_SIZE, VARHDRSZ, VARHDRSZ_COMPRESSED,
    VARHDRSZ_EXTERNAL, VARHDRSZ_SHORT, VARLENA_EXTSIZE_BITS, VARLENA_EXTSIZE_MASK, VARTAG_EXPANDED_RO,
    VARTAG_EXPANDED_RW, VARTAG_INDIRECT, VARTAG_ONDISK,
};

use serde::Serialize;

use crate::finding::{Code, Finding};
use crate::format::bytes::maxalign;
use crate::format::heap::{HeapTupleHeaderData, SIZEOF_HEAP_TUPLE_HEADER};
use varlena::varlena_attr;

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
    if !opts.record_spans {
        if let Some(end) = sound_data_end(tuple, header, rel) {
            w.data_end = end;
            return;
        }
    }
    let tup_natts = usize::from(header.natts());
    let rel_natts = usize::from(rel.natts);
    if tup_natts > rel_natts {
        w.problems.push(natts_exceed(tup_natts, rel_natts));
    }
    let walk_n = tup_natts.min(rel_natts).min(rel.attrs.len());
    let off = walk_stored(tuple, header, rel, opts, walk_n, w);
    if w.stopped {
        return;
    }
    if opts.record_spans {
        for a in rel.attrs.iter().take(rel_natts.min(rel.attrs.len())).skip(walk_n) {
            w.spans.push(AttrSpan {
                attnum: a.attnum,
                offset: off,
                len: 0,
                is_null: false,
                missing: true,
                varlena: None,
            });
        }
    }
    // Tuples are exactly as long as their data (t_len); allow the MAXALIGN padding a
    // caller may include. Extra attributes beyond the relation explain extra bytes.
    if tup_natts <= rel_natts && walk_n == tup_natts && tuple.len() > maxalign(off) {
        w.problems.push(trailing_bytes(tuple.len(), off));
    }
}

/// Where a tuple's data ends when the full walk would find nothing to say: every stored attribute NULL, fixed-length,
/// a cstring, or a varlena with a 1-byte header or an aligned plain 4-byte one, all inside the tuple, no more
/// attributes than the relation and no bytes after the last. `None` for anything else (compressed values, TOAST
/// pointers, any problem): the full walk then decides. The walk of a sound table is almost all such tuples, and this
/// path builds no spans and no problem values for them (the full walk's per-attribute results are large).
fn sound_data_end(tuple: &[u8], header: &HeapTupleHeaderData, rel: &RelDesc) -> Option<usize> {
    let len = tuple.len();
    let tup_natts = usize::from(header.natts());
    if tup_natts > usize::from(rel.natts) {
        return None;
    }
    let walk_n = tup_natts.min(rel.attrs.len());
    let hasnull = header.has_nulls();
    let mut off = usize::from(header.t_hoff);
    if off > len {
        return None;
    }
    for (i, a) in rel.attrs.iter().take(walk_n).enumerate() {
        if hasnull && att_isnull(tuple, i) {
            continue;
        }
        let (start, n) = if a.attlen > 0 {
            (align_nominal(off, a.attalign), a.attlen as usize)
        } else if a.attlen == -1 {
            let first = *tuple.get(off)?;
            let start = if first != 0 { off } else { align_nominal(off, a.attalign) };
            let b0 = *tuple.get(start)?;
            if b0 & 0x01 == 0x01 {
                // 0x01 alone is a TOAST pointer (VARATT_IS_1B_E): the full walk checks those
                (b0 != 0x01).then_some((start, usize::from(b0 >> 1)))?
            } else {
                let word = crate::format::bytes::u32_at(tuple, start)?;
                let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
                // compressed (VARATT_IS_4B_C), unaligned or shorter than its header: the full walk's
                let plain = b0 & 0x03 == 0 && start == align_nominal(start, a.attalign) && n >= varlena::VARHDRSZ;
                plain.then_some((start, n))?
            }
        } else {
            let start = align_nominal(off, a.attalign);
            (start, tuple.get(start..)?.iter().position(|b| *b == 0)? + 1)
        };
        off = start.checked_add(n).filter(|end| *end <= len)?;
    }
    (walk_n == tup_natts && len <= maxalign(off)).then_some(off)
}

/// The stored attributes, the first `walk_n` of the relation's: each NULL, fixed-length, varlena or
/// cstring value in turn, until one's end cannot be known (`w.stopped`). Returns the offset just past
/// the last one reached.
fn walk_stored(
    tuple: &[u8],
    header: &HeapTupleHeaderData,
    rel: &RelDesc,
    opts: &WalkOptions,
    walk_n: usize,
    w: &mut Walk,
) -> usize {
    let len = tuple.len();
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
        // The common cases first, each span built where it is stored: a span handed back through memory (a
        // Result) is written field by field and read back whole, a store-forwarding stall on every attribute.
        if let Some(span) = plain_span(tuple, off, a) {
            off = span.offset + span.len;
            w.data_end = off;
            if opts.record_spans {
                w.spans.push(span);
            }
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
    off
}

/// The tuple says it has more attributes than the relation.
fn natts_exceed(tup_natts: usize, rel_natts: usize) -> AttrProblem {
    AttrProblem {
        attnum: 0,
        code: Code::TupleDataNattsGtRelation,
        message: format!("the tuple has {tup_natts} attributes, the relation only {rel_natts}"),
        pg_error: format!(
            "none on read (attributes beyond {rel_natts} are ignored); amcheck: number of \
attributes {tup_natts} exceeds maximum expected for table {rel_natts}"
        ),
    }
}

/// Bytes after the last attribute, which ends at `off` in a tuple of `len` bytes.
fn trailing_bytes(len: usize, off: usize) -> AttrProblem {
    AttrProblem {
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
    }
}

/// The span of a fixed-length value, or of a short varlena (1-byte header) at an offset needing no alignment, that
/// lies inside the tuple; None for anything else (the full checks then decide).
#[inline(always)]
fn plain_span(tuple: &[u8], off: usize, a: &AttrDesc) -> Option<AttrSpan> {
    let (start, len, varlena) = if a.attlen > 0 {
        (align_nominal(off, a.attalign), a.attlen as usize, None)
    } else if a.attlen == -1 {
        let b0 = *tuple.get(off)?;
        // VARATT_IS_1B and not a TOAST pointer (0x01); a nonzero first byte means no alignment (att_align_pointer)
        if b0 & 0x01 == 0 || b0 == 0x01 {
            return None;
        }
        (off, usize::from(b0 >> 1), Some(VarlenaKind::Short))
    } else {
        return None;
    };
    (start + len <= tuple.len()).then_some(AttrSpan {
        attnum: a.attnum,
        offset: start,
        len,
        is_null: false,
        missing: false,
        varlena,
    })
}

#[cold]
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

/// The valid-tagged on-disk TOAST pointers of a tuple (those the walk reaches), for
/// [`crate::format::toast::ChunkInventory::check_value`].
pub fn toast_pointers(tuple: &[u8], header: &HeapTupleHeaderData, rel: &RelDesc) -> Vec<ToastPointer> {
    walk_attributes_with(tuple, header, rel, &WalkOptions { verify_compressed: false, ..WalkOptions::default() })
        .toast_pointers
}

#[cfg(test)]
mod tests;
