//! Composite values (`utils/adt/rowtypes.c` record_out): a heap tuple inside the datum
//! (`access/htup_details.h` HeapTupleHeaderData, the DatumTupleFields variant).

use super::{format_value, read_att, DatumResult, OutputOptions, TypeDesc};
use crate::format::bytes::{u16_at, u8_at};

/// HEAP_HASNULL, HEAP_NATTS_MASK (`access/htup_details.h`).
const HEAP_HASNULL: u16 = 0x0001;
const HEAP_NATTS_MASK: u16 = 0x07FF;

/// record_out's quoting: empty values and values with `"\(),` or white space are quoted, `"`
/// and `\` doubled.
fn push_field(v: &[u8], out: &mut Vec<u8>) {
    let special = |c: u8| matches!(c, b'"' | b'\\' | b'(' | b')' | b',') || super::is_c_space(c);
    if !v.is_empty() && !v.iter().any(|c| special(*c)) {
        out.extend_from_slice(v);
        return;
    }
    out.push(b'"');
    for &c in v {
        if c == b'"' || c == b'\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push(b'"');
}

/// The payload starts after the 4-byte length word: typmod, typeid, t_ctid (6), t_infomask2,
/// t_infomask, t_hoff, the null bitmap; the attributes from t_hoff (struct offsets).
pub(super) fn format_record(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    if t.fields.is_empty() {
        return Err(format!("composite type {} without its attributes", t.name));
    }
    let infomask2 = u16_at(data, 14).ok_or("composite value shorter than a tuple header")?;
    let infomask = u16_at(data, 16).ok_or("composite value shorter than a tuple header")?;
    let hoff = usize::from(u8_at(data, 18).ok_or("composite value shorter than a tuple header")?);
    let natts = usize::from(infomask2 & HEAP_NATTS_MASK);
    if natts > t.fields.len() {
        return Err(format!("composite value has {natts} attributes, its type {}", t.fields.len()));
    }
    let has_nulls = infomask & HEAP_HASNULL != 0;
    if hoff < 23 + if has_nulls { natts.div_ceil(8) } else { 0 } || hoff > data.len() + 4 {
        return Err(format!("composite value header size {hoff} is wrong"));
    }
    let is_null = |i: usize| has_nulls && data.get(19 + i / 8).is_none_or(|b| b & (1 << (i % 8)) == 0);
    let mut p = hoff;
    let mut first = true;
    out.push(b'(');
    for (i, f) in t.fields.iter().enumerate() {
        let value = if i < natts && !is_null(i) {
            let (v, next) = read_att(data, 4, p, f.attlen, f.attalign, true)?;
            p = next;
            Some(v)
        } else {
            None
        };
        if f.dropped {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        if let Some(v) = value {
            let ft = f.r#type.as_ref().ok_or_else(|| format!("attribute {} of {} has no type", f.name, t.name))?;
            let mut text = Vec::new();
            format_value(&v, ft, opts, &mut text)?;
            push_field(&text, out);
        } else if let (true, Some(m)) = (i >= natts, &f.missing) {
            // heap_deform_tuple fills attributes past the value's natts from the row type's missing values
            push_field(m.as_bytes(), out);
        }
    }
    out.push(b')');
    Ok(())
}
