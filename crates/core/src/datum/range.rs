//! Ranges and multiranges (`utils/adt/rangetypes.c` range_out/range_deserialize,
//! `utils/adt/multirangetypes.c` multirange_out, layouts from `utils/rangetypes.h` and
//! `utils/multirangetypes.h`).

use super::{format_value, read_att, DatumResult, OutputOptions, TypeDesc};
use crate::format::bytes::u32_at;

/// Range flag bits (`utils/rangetypes.h`).
const RANGE_EMPTY: u8 = 0x01;
const RANGE_LB_INC: u8 = 0x02;
const RANGE_UB_INC: u8 = 0x04;
const RANGE_LB_INF: u8 = 0x08;
const RANGE_UB_INF: u8 = 0x10;
const RANGE_LB_NULL: u8 = 0x20;
const RANGE_UB_NULL: u8 = 0x40;

/// Multirange item words (`utils/adt/multirangetypes.c`): an offset when the high bit is set,
/// else the length of the previous range's bounds.
const MULTIRANGE_ITEM_OFF_BIT: u32 = 0x8000_0000;

/// range_bound_escape: quoted when empty or holding `"\()[],` or white space; `"` and `\` doubled.
fn push_bound(v: &[u8], out: &mut Vec<u8>) {
    let special = |c: u8| matches!(c, b'"' | b'\\' | b'(' | b')' | b'[' | b']' | b',') || super::is_c_space(c);
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

/// range_deparse from the flags and the bounds' bytes. `bounds` starts at virtual offset `virt`
/// (offsets from the start of the datum, varlena header included, which alignment is relative to).
fn deparse(
    flags: u8,
    bounds: &[u8],
    virt: usize,
    sub: &TypeDesc,
    opts: &OutputOptions,
    out: &mut Vec<u8>,
) -> DatumResult {
    if flags & RANGE_EMPTY != 0 {
        out.extend_from_slice(b"empty");
        return Ok(());
    }
    let mut p = virt;
    let mut bound = |has: bool, out: &mut Vec<u8>| -> DatumResult {
        if !has {
            return Ok(());
        }
        let (v, next) = read_att(bounds, virt, p, sub.typlen, sub.typalign, true)?;
        p = next;
        let mut text = Vec::new();
        format_value(&v, sub, opts, &mut text)?;
        push_bound(&text, out);
        Ok(())
    };
    out.push(if flags & RANGE_LB_INC != 0 { b'[' } else { b'(' });
    bound(flags & (RANGE_LB_INF | RANGE_LB_NULL) == 0, out)?;
    out.push(b',');
    bound(flags & (RANGE_UB_INF | RANGE_UB_NULL) == 0, out)?;
    out.push(if flags & RANGE_UB_INC != 0 { b']' } else { b')' });
    Ok(())
}

/// RangeType: rangetypid, the bounds from struct offset 8, the flags in the last byte.
pub(super) fn format_range(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    let sub = t.subtype.as_deref().ok_or_else(|| format!("range type {} without its subtype", t.name))?;
    if data.len() < 5 {
        return Err(format!("range value has {} bytes", data.len()));
    }
    let flags = data[data.len() - 1];
    deparse(flags, &data[4..data.len() - 1], 8, sub, opts, out)
}

/// MultirangeType: multirangetypid, rangeCount, rangeCount-1 item words, rangeCount flag bytes,
/// then (aligned for the subtype) each range's bounds.
pub(super) fn format_multirange(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    let rng = t.subtype.as_deref().ok_or_else(|| format!("multirange type {} without its range type", t.name))?;
    let sub = rng.subtype.as_deref().ok_or_else(|| format!("range type {} without its subtype", rng.name))?;
    let count = u32_at(data, 4).ok_or("multirange without its range count")? as usize;
    out.push(b'{');
    if count == 0 {
        out.push(b'}');
        return Ok(());
    }
    let items_at = 8usize;
    let flags_at = count
        .checked_sub(1)
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| n.checked_add(items_at))
        .ok_or("multirange count overflows")?;
    let flags = data
        .get(flags_at..flags_at.saturating_add(count))
        .ok_or_else(|| format!("multirange of {count} ranges has only {} bytes", data.len()))?;
    // virtual offsets count the 4-byte varlena header
    let bounds_virt = super::align_to(4 + flags_at + count, sub.typalign);
    let bounds = data.get(bounds_virt - 4..).ok_or("multirange bounds start past the value")?;
    let offset = |i: usize| -> usize {
        let mut off = 0usize;
        let mut i = i;
        while i > 0 {
            let item = u32_at(data, items_at + 4 * (i - 1)).unwrap_or(0);
            off = off.wrapping_add((item & !MULTIRANGE_ITEM_OFF_BIT) as usize);
            if item & MULTIRANGE_ITEM_OFF_BIT != 0 {
                break;
            }
            i -= 1;
        }
        off
    };
    for (i, &f) in flags.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = offset(i);
        let end = if i + 1 == count { bounds.len() } else { offset(i + 1) };
        let b = bounds.get(start..end).ok_or_else(|| format!("multirange range {i} lies outside the value"))?;
        deparse(f, b, bounds_virt + start, sub, opts, out)?;
    }
    out.push(b'}');
    Ok(())
}
