//! Heap tuple injectors: the tuple header's fields and the tuple's data (random bytes, bit flips, a varlena
//! column's length word).

use super::fields::{flip_bits, no_value, pick, random_bytes, scalar, set_uint};
use super::page::normal_item;
use super::{invalid, AttrLayout, DamageSpec, Rng, MAX_HEAP_TUPLES_PER_PAGE};
use crate::error::Result;
use crate::format::bytes::{u16_at, u32_at, u8_at};
use crate::format::heap::{
    bitmaplen, HeapTupleHeaderData, ItemPointerData, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID, SIZEOF_HEAP_TUPLE_HEADER,
};

/// `VARTAG_ONDISK` (varatt.h): the tag of an on-disk external TOAST pointer.
const VARTAG_ONDISK: u8 = 18;

pub(super) fn random_tid(spec: &DamageSpec, current: ItemPointerData, rng: &mut Rng) -> ItemPointerData {
    if let Some((block, offset)) = spec.tid {
        return ItemPointerData { block, offset };
    }
    loop {
        let block = match spec.nblocks {
            Some(n) if n > 0 => rng.below(u64::from(n)) as u32,
            _ => rng.next_u64() as u32,
        };
        let offset = rng.between(1, u64::from(MAX_HEAP_TUPLES_PER_PAGE)) as u16;
        let tid = ItemPointerData { block, offset };
        if tid != current {
            return tid;
        }
    }
}

pub(super) fn tuple_header(
    page: &mut [u8],
    item: u16,
    field: &str,
    spec: &DamageSpec,
    rng: &mut Rng,
) -> Result<String> {
    let (off, len) = normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
    let prefix = format!("item {item} ");
    let note = match field {
        "random" => {
            no_value(spec, "a random tuple header")?;
            random_bytes(&mut page[off..off + SIZEOF_HEAP_TUPLE_HEADER], rng);
            "all 23 tuple header bytes random".to_string()
        }
        "t_xmin" | "t_xmax" => {
            let at = off + if field == "t_xmin" { 0 } else { 4 };
            let mut note = scalar(page, at, 4, field, spec, rng)?;
            if spec.clear_hints {
                let hints = if field == "t_xmin" {
                    HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID
                } else {
                    HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID
                };
                let mask = u16_at(page, off + 20).unwrap_or(0);
                set_uint(page, off + 20, 2, u64::from(mask & !hints));
                note.push_str(&format!(", hint bits cleared (t_infomask 0x{mask:04x} -> 0x{:04x})", mask & !hints));
            }
            note
        }
        "t_field3" => scalar(page, off + 8, 4, field, spec, rng)?,
        "t_ctid" => {
            let cur = ItemPointerData::parse(page, off + 12).unwrap_or(ItemPointerData { block: 0, offset: 0 });
            if spec.value.is_some() {
                return Err(invalid("t_ctid takes a tid (block,offset), not a number"));
            }
            let tid = random_tid(spec, cur, rng);
            tid.write(page, off + 12);
            format!("t_ctid {cur} -> {tid}")
        }
        "t_infomask2" => scalar(page, off + 18, 2, field, spec, rng)?,
        "t_infomask" => scalar(page, off + 20, 2, field, spec, rng)?,
        "t_hoff" => scalar(page, off + 22, 1, field, spec, rng)?,
        "t_bits" => {
            no_value(spec, "t_bits")?;
            let h = HeapTupleHeaderData::parse(&page[off..off + len])
                .ok_or_else(|| invalid(format!("item {item} is too short for a tuple header")))?;
            let hoff = usize::from(h.t_hoff);
            if !h.has_nulls() {
                return Err(invalid(format!("item {item} has no null bitmap (HEAP_HASNULL is not set)")));
            }
            let end = (SIZEOF_HEAP_TUPLE_HEADER + bitmaplen(h.natts())).min(hoff).min(len);
            if end <= SIZEOF_HEAP_TUPLE_HEADER {
                return Err(invalid(format!("item {item} has no room for a null bitmap (t_hoff {hoff})")));
            }
            let bits = &mut page[off + SIZEOF_HEAP_TUPLE_HEADER..off + end];
            let before = crate::format::heap::bits_to_text(bits);
            random_bytes(bits, rng);
            format!(
                "t_bits {before} -> {}",
                crate::format::heap::bits_to_text(&page[off + SIZEOF_HEAP_TUPLE_HEADER..off + end])
            )
        }
        _ => return Err(invalid(format!("unknown tuple header field {field}"))),
    };
    Ok(prefix + &note)
}

/// The data area of a heap tuple: (start, end) absolute in the page.
pub(super) fn tuple_data_area(page: &[u8], item: u16) -> Result<(usize, usize, usize)> {
    let (off, len) = normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
    let hoff = usize::from(u8_at(page, off + 22).unwrap_or(0));
    if hoff < SIZEOF_HEAP_TUPLE_HEADER || hoff >= len {
        return Err(invalid(format!("item {item} has no data area (t_hoff {hoff}, lp_len {len})")));
    }
    Ok((off, off + hoff, off + len))
}

pub(super) fn tuple_data(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, start, end) = tuple_data_area(page, item)?;
    let note = match field {
        "random" => {
            no_value(spec, "random tuple data")?;
            let n = spec.length.unwrap_or(8).clamp(1, end - start);
            let at = start + rng.below((end - start - n + 1) as u64) as usize;
            random_bytes(&mut page[at..at + n], rng);
            format!("{n} random byte(s) at page offset {at} (tuple data {}..{})", start - off, end - off)
        }
        "bitflip" => {
            no_value(spec, "bitflip")?;
            let flips = spec.flips.unwrap_or(1);
            format!("flipped {}", flip_bits(page, start, end, flips, rng)?)
        }
        "varlena" => varlena(page, off, end, spec, rng)?,
        _ => return Err(invalid(format!("unknown tuple data field {field}"))),
    };
    Ok(format!("item {item} {note}"))
}

/// A varlena datum found in a tuple: column number, offset in the page, its header kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Varlena {
    pub(super) attnum: u16,
    pub(super) at: usize,
    pub(super) kind: VarlenaKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VarlenaKind {
    /// 1-byte header, short inline.
    Short,
    /// 4-byte header (uncompressed or compressed inline).
    Long,
    /// 1-byte header, external TOAST pointer with tag `VARTAG_ONDISK`.
    External,
    /// 1-byte header, another external tag (never on disk).
    OtherExternal,
}

fn align_to(off: usize, attalign: char) -> usize {
    let a = match attalign {
        's' => 2,
        'i' => 4,
        'd' => 8,
        _ => 1,
    };
    off.div_ceil(a) * a
}

/// Walk the tuple at `tuple_off..tuple_end` the way heap_deform_tuple does and list its
/// non-null varlena columns. Stops quietly where the data stops making sense.
pub(super) fn varlena_columns(page: &[u8], tuple_off: usize, tuple_end: usize, attrs: &[AttrLayout]) -> Vec<Varlena> {
    let mut out = Vec::new();
    let tuple = &page[tuple_off..tuple_end];
    let Some(h) = HeapTupleHeaderData::parse(tuple) else {
        return out;
    };
    let natts = usize::from(h.natts()).min(attrs.len());
    let mut off = usize::from(h.t_hoff);
    for (i, a) in attrs.iter().enumerate().take(natts) {
        if h.has_nulls() {
            let byte = u8_at(tuple, SIZEOF_HEAP_TUPLE_HEADER + i / 8).unwrap_or(0);
            if byte & (1 << (i % 8)) == 0 {
                continue;
            }
        }
        if a.attlen == -1 {
            // att_align_pointer: a non-zero byte here starts a short varlena, which is not aligned.
            if u8_at(tuple, off).unwrap_or(0) == 0 {
                off = align_to(off, a.attalign);
            }
            let Some(b0) = u8_at(tuple, off) else { break };
            let (kind, size) = if b0 == 0x01 {
                let tag = u8_at(tuple, off + 1).unwrap_or(0);
                let payload = match tag {
                    VARTAG_ONDISK => 16,
                    _ => 8,
                };
                let kind = if tag == VARTAG_ONDISK { VarlenaKind::External } else { VarlenaKind::OtherExternal };
                (kind, 2 + payload)
            } else if b0 & 0x01 == 1 {
                (VarlenaKind::Short, usize::from(b0 >> 1))
            } else {
                let Some(h4) = u32_at(tuple, off) else { break };
                (VarlenaKind::Long, ((h4 >> 2) & 0x3FFF_FFFF) as usize)
            };
            if size == 0 || off + size > tuple.len() {
                break;
            }
            if kind != VarlenaKind::OtherExternal {
                out.push(Varlena { attnum: (i + 1) as u16, at: tuple_off + off, kind });
            }
            off += size;
        } else if a.attlen == -2 {
            let Some(nul) = tuple[off.min(tuple.len())..].iter().position(|b| *b == 0) else {
                break;
            };
            off += nul + 1;
        } else if a.attlen > 0 {
            off = align_to(off, a.attalign) + a.attlen as usize;
        } else {
            break;
        }
        if off > tuple.len() {
            break;
        }
    }
    out
}

fn varlena(page: &mut [u8], off: usize, end: usize, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let attrs = spec.attrs.as_deref().ok_or_else(|| invalid("the varlena field needs the relation's column layout"))?;
    let cols = varlena_columns(page, off, end, attrs);
    let col = match spec.attnum {
        Some(n) => *cols
            .iter()
            .find(|c| c.attnum == n)
            .ok_or_else(|| invalid(format!("column {n} is not a non-null varlena in this tuple")))?,
        None if cols.is_empty() => {
            return Err(invalid("the tuple has no non-null varlena column"));
        }
        None => cols[rng.below(cols.len() as u64) as usize],
    };
    let at = col.at;
    let n = col.attnum;
    match col.kind {
        VarlenaKind::Short => {
            let cur = u64::from(page[at] >> 1);
            let v = match spec.value {
                Some(v) if !(2..=127).contains(&v) => {
                    return Err(invalid(format!(
                        "column {n} has a 1-byte varlena header: its length must be 2..127, got {v}"
                    )))
                }
                Some(v) => v,
                None => rng.other_between(2, 127, cur),
            };
            page[at] = ((v as u8) << 1) | 1;
            Ok(format!("column {n} short varlena length {cur} -> {v}"))
        }
        VarlenaKind::Long => {
            let h = u32_at(page, at).unwrap_or(0);
            let cur = u64::from((h >> 2) & 0x3FFF_FFFF);
            let v = pick(spec, "a 4-byte varlena length", 30, cur, rng)?;
            set_uint(page, at, 4, (v << 2) | u64::from(h & 3));
            let what = if h & 3 == 2 { "compressed" } else { "plain" };
            Ok(format!("column {n} {what} varlena length {cur} -> {v}"))
        }
        VarlenaKind::External | VarlenaKind::OtherExternal => {
            let ext = at + 6;
            let h = u32_at(page, ext).unwrap_or(0);
            let cur = u64::from(h & 0x3FFF_FFFF);
            let v = pick(spec, "a TOAST pointer's size", 30, cur, rng)?;
            set_uint(page, ext, 4, v | u64::from(h & 0xC000_0000));
            Ok(format!("column {n} TOAST pointer va_extinfo size {cur} -> {v}"))
        }
    }
}
