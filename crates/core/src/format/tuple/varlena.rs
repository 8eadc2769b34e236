//! Varlena headers as `varatt.h` lays them out (little-endian): how long a variable-length value is,
//! whether it is inline, compressed inline or a TOAST pointer, and the checks reading one makes.

use serde::Serialize;

use super::pointer::{check_pointer, ToastPointer};
use super::{align_nominal, attr_label, past_end, AttrDesc, AttrProblem, AttrSpan, RelDesc, Step, Walk, WalkOptions};
use crate::finding::Code;
use crate::format::bytes::{u32_at, u8_at};
use crate::format::compress::{TOAST_INVALID_COMPRESSION_ID, TOAST_LZ4_COMPRESSION_ID};
use crate::format::heap::HeapTupleHeaderData;

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

/// A varlena attribute whose walk stands at `off`: aligned with `att_align_pointer`, then its first
/// byte says what it is: a TOAST pointer, a value with a 1-byte header, or one with a 4-byte header
/// (plain or compressed inline).
pub(super) fn varlena_attr(
    tuple: &[u8],
    off: usize,
    a: &AttrDesc,
    header: &HeapTupleHeaderData,
    rel: &RelDesc,
    opts: &WalkOptions,
    w: &mut Walk,
) -> Step {
    let (at, b0) = varlena_start(tuple, off, a)?;
    if b0 == 0x01 {
        // VARATT_IS_1B_E: a TOAST pointer; its size depends on the tag.
        return external_attr(at, header, rel, w);
    }
    if b0 & 0x01 == 0x01 {
        // VARATT_IS_1B: total length (header included) in the upper 7 bits.
        let n = usize::from(b0 >> 1);
        if at.start + n > tuple.len() {
            return Err(Some(at.runs_past(n as u64, "short varlena")));
        }
        return Ok(at.span(n, VarlenaKind::Short));
    }
    four_byte_attr(at, b0, opts, w)
}

/// A varlena being read: the tuple, where the value starts and whose it is.
#[derive(Clone, Copy)]
struct At<'a> {
    tuple: &'a [u8],
    start: usize,
    a: &'a AttrDesc,
}

impl At<'_> {
    /// The span of the value when it is `n` bytes long, header included.
    fn span(self, n: usize, kind: VarlenaKind) -> AttrSpan {
        AttrSpan {
            attnum: self.a.attnum,
            offset: self.start,
            len: n,
            is_null: false,
            missing: false,
            varlena: Some(kind),
        }
    }

    /// The value (`what`) claims `n` bytes, more than the tuple has after its start.
    #[cold]
    fn runs_past(self, n: u64, what: &str) -> AttrProblem {
        past_end(
            self.a,
            format!(
                "{} {what} at offset {} claims {n} bytes, ending at {}, beyond the tuple \
length {}",
                attr_label(self.a),
                self.start,
                self.start as u64 + n,
                self.tuple.len()
            ),
        )
    }
}

/// `att_align_pointer`: a nonzero byte at the unaligned position (VARATT_NOT_PAD_BYTE) means "no
/// alignment". The value's start and its first byte, or the problem when the tuple ends first.
fn varlena_start<'a>(tuple: &'a [u8], off: usize, a: &'a AttrDesc) -> Result<(At<'a>, u8), Option<AttrProblem>> {
    let len = tuple.len();
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
    Ok((At { tuple, start, a }, b0))
}

/// A TOAST pointer (first byte 0x01): only `VARTAG_ONDISK` belongs on disk; its fields are checked
/// and the pointer is kept for the TOAST checks.
fn external_attr(at: At<'_>, header: &HeapTupleHeaderData, rel: &RelDesc, w: &mut Walk) -> Step {
    let Some(tag) = u8_at(at.tuple, at.start + 1) else {
        return Err(Some(at.runs_past(2, "TOAST pointer")));
    };
    if tag != VARTAG_ONDISK {
        return Err(Some(bad_tag(at, tag)));
    }
    if at.start + TOAST_POINTER_SIZE > at.tuple.len() {
        return Err(Some(at.runs_past(TOAST_POINTER_SIZE as u64, "TOAST pointer")));
    }
    if let Some(ptr) = ToastPointer::parse(at.tuple, at.start, at.a.attnum, header) {
        check_pointer(&ptr, at.a, header, rel, w);
        w.toast_pointers.push(ptr);
    }
    Ok(at.span(TOAST_POINTER_SIZE, VarlenaKind::External { tag }))
}

/// A TOAST pointer with a tag other than `VARTAG_ONDISK`: its size is unknown, so the walk stops.
fn bad_tag(at: At<'_>, tag: u8) -> AttrProblem {
    let (what, pg_error) = match tag {
        VARTAG_INDIRECT | VARTAG_EXPANDED_RO | VARTAG_EXPANDED_RW => {
            ("an in-memory TOAST pointer tag", "a crashed backend (the server follows a memory address stored on disk)")
        }
        _ => (
            "an unknown TOAST tag",
            "wrong values for this and later columns (the pointer's size is unknown), or \
a crashed backend; amcheck: toasted attribute has unexpected TOAST tag",
        ),
    };
    AttrProblem {
        attnum: at.a.attnum,
        code: Code::TupleDataVarlenaBadHeader,
        message: format!(
            "{} at offset {} is a TOAST pointer with {what} {tag} (only 18, \
VARTAG_ONDISK, is valid on disk)",
            attr_label(at.a),
            at.start
        ),
        pg_error: pg_error.to_string(),
    }
}

/// A value with a 4-byte header (first byte's low bits 00 plain, 10 compressed): its length word
/// must cover at least its own header and stay inside the tuple.
fn four_byte_attr(at: At<'_>, b0: u8, opts: &WalkOptions, w: &mut Walk) -> Step {
    let start = at.start;
    let a = at.a;
    let Some(word) = u32_at(at.tuple, start) else {
        return Err(Some(at.runs_past(4, "4-byte varlena header")));
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
    if start + n > at.tuple.len() {
        return Err(Some(at.runs_past(n as u64, if compressed { "compressed varlena" } else { "varlena" })));
    }
    if !compressed {
        return Ok(at.span(n, VarlenaKind::Plain));
    }
    let (rawsize, method) = check_compressed(at, n, opts, w);
    Ok(at.span(n, VarlenaKind::Compressed { rawsize, method }))
}

/// A value compressed inline, `n` bytes long: va_tcinfo's method and raw size must be usable, and
/// with [`WalkOptions::verify_compressed`] the data must decompress to that size. Returns the raw
/// size and method id.
fn check_compressed(at: At<'_>, n: usize, opts: &WalkOptions, w: &mut Walk) -> (u32, u8) {
    let tcinfo = u32_at(at.tuple, at.start + 4).unwrap_or(0);
    let rawsize = tcinfo & VARLENA_EXTSIZE_MASK;
    let method = (tcinfo >> VARLENA_EXTSIZE_BITS) as u8;
    if method >= TOAST_INVALID_COMPRESSION_ID {
        w.problems.push(AttrProblem {
            attnum: at.a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{}: compressed inline value (va_tcinfo 0x{tcinfo:08x}) has compression \
method id {method} (0 pglz and 1 lz4 are valid)",
                attr_label(at.a)
            ),
            pg_error: format!("invalid compression method id {method}"),
        });
    } else if u64::from(rawsize) + VARHDRSZ as u64 > MAX_ALLOC_SIZE {
        w.problems.push(AttrProblem {
            attnum: at.a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{}: compressed inline value claims a raw size of {rawsize} bytes \
(va_tcinfo 0x{tcinfo:08x}), more than palloc allows",
                attr_label(at.a)
            ),
            pg_error: format!("invalid memory alloc request size {}", u64::from(rawsize) + VARHDRSZ as u64),
        });
    } else if opts.verify_compressed {
        verify_decompression(at, n, rawsize, method, w);
    }
    (rawsize, method)
}

/// Decompress the value as detoasting would and compare the result with its recorded raw size.
fn verify_decompression(at: At<'_>, n: usize, rawsize: u32, method: u8, w: &mut Walk) {
    let data = &at.tuple[at.start + VARHDRSZ_COMPRESSED..at.start + n];
    let name = if method == TOAST_LZ4_COMPRESSION_ID { "lz4" } else { "pglz" };
    match crate::format::compress::decompress(method, data, rawsize as usize) {
        Ok(out) if out.len() == rawsize as usize => {}
        Ok(out) => w.problems.push(AttrProblem {
            attnum: at.a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{}: {name} data ({} bytes) decompresses to {} bytes, va_tcinfo says \
{rawsize}",
                attr_label(at.a),
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
            attnum: at.a.attnum,
            code: Code::TupleDataCompressedBad,
            message: format!(
                "{}: {name} data ({} bytes, raw size {rawsize}) does not decompress: {e}",
                attr_label(at.a),
                data.len()
            ),
            pg_error: format!("compressed {name} data is corrupt"),
        }),
    }
}
