//! Arrays (`utils/adt/arrayfuncs.c` array_out, `utils/array.h`).

use std::fmt::Write as _;

use super::{align_to, format_value, varlena_any, DatumResult, OutputOptions, Str, TypeDesc};
use crate::format::bytes::u32_at;

/// MAXDIM (utils/array.h).
const MAXDIM: usize = 6;

/// The elements of an array value as text (None for NULL), at most `limit` of them, with its dimensions and lower
/// bounds; None for an empty array.
type ArrayItems = (Vec<i32>, Vec<i32>, Vec<Option<Vec<u8>>>);
fn array_items(data: &[u8], elem: &TypeDesc, opts: &OutputOptions, limit: usize) -> Result<Option<ArrayItems>, String> {
    let ndim = u32_at(data, 0).ok_or("array without ndim")? as usize;
    let dataoffset = u32_at(data, 4).ok_or("array without dataoffset")? as usize;
    if ndim == 0 {
        return Ok(None);
    }
    if ndim > MAXDIM {
        return Err(format!("array has {ndim} dimensions, more than {MAXDIM}"));
    }
    let mut dims = Vec::with_capacity(ndim);
    let mut lbs = Vec::with_capacity(ndim);
    for i in 0..ndim {
        dims.push(u32_at(data, 12 + 4 * i).ok_or("array dimensions run past the value")? as i32);
        lbs.push(u32_at(data, 12 + 4 * ndim + 4 * i).ok_or("array bounds run past the value")? as i32);
    }
    let mut nitems: usize = 1;
    for d in &dims {
        if *d < 0 {
            return Err(format!("array dimension {d} is negative"));
        }
        nitems = nitems.checked_mul(*d as usize).ok_or("array size overflows")?;
    }
    if nitems == 0 {
        return Ok(None);
    }
    if nitems > data.len() * 8 + 8 {
        return Err(format!("array claims {nitems} elements, more than its {} bytes can hold", data.len()));
    }
    // Header sizes counted from the 4-byte varlena header, as ARR_OVERHEAD_* do.
    let bitmap_at = 16 + 8 * ndim; // sizeof(ArrayType) + dims + lbounds, from the header
    let has_nulls = dataoffset != 0;
    let data_start = if has_nulls { dataoffset } else { crate::format::bytes::maxalign(bitmap_at) };
    let to_payload = |virt: usize| virt.checked_sub(4);
    let bitmap = if has_nulls {
        let from = to_payload(bitmap_at).ok_or("array header is short")?;
        Some(data.get(from..from + nitems.div_ceil(8)).ok_or("array null bitmap runs past the value")?)
    } else {
        None
    };
    // Elements, as text (None for NULL).
    let mut items: Vec<Option<Vec<u8>>> = Vec::with_capacity(nitems);
    let mut p = data_start; // virtual offset
    for i in 0..nitems.min(limit) {
        if let Some(bm) = bitmap {
            if bm[i / 8] & (1 << (i % 8)) == 0 {
                items.push(None);
                continue;
            }
        }
        let at = to_payload(p).ok_or("array element before the value start")?;
        let rest = data.get(at..).ok_or_else(|| format!("array element {i} starts past the value"))?;
        let (payload, size): (&[u8], usize) = if elem.typlen > 0 {
            let n = elem.typlen as usize;
            (rest.get(..n).ok_or_else(|| format!("array element {i} runs past the value"))?, n)
        } else if elem.typlen == -1 {
            varlena_any(rest).ok_or_else(|| format!("array element {i} has a bad varlena header"))?
        } else {
            let nul = rest.iter().position(|b| *b == 0).ok_or("array cstring element without NUL")?;
            (&rest[..nul], nul + 1)
        };
        let mut text = Vec::new();
        format_value(payload, elem, opts, &mut text)?;
        items.push(Some(text));
        p = align_to(p + size, elem.typalign);
    }
    Ok(Some((dims, lbs, items)))
}

/// The first element of an array value as text (`attmissingval`'s one value), None when it is NULL or absent.
pub fn array_first_item(data: &[u8], elem: &TypeDesc, opts: &OutputOptions) -> Result<Option<Vec<u8>>, String> {
    Ok(array_items(data, elem, opts, 1)?.and_then(|(_, _, items)| items.into_iter().next().flatten()))
}

/// array_out. `data` is the payload after the varlena header; offsets inside an array are
/// relative to its (4-byte) header, so position p in `data` is p + 4 in the array's terms.
pub fn format_array(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    let elem = t.elem.as_deref().ok_or("array without an element type")?;
    let Some((dims, lbs, items)) = array_items(data, elem, opts, usize::MAX)? else {
        // array_out prints any empty array as {}, whatever its dimensions say
        out.extend_from_slice(b"{}");
        return Ok(());
    };
    if lbs.iter().any(|lb| *lb != 1) {
        for (d, lb) in dims.iter().zip(&lbs) {
            let _ = write!(Str(out), "[{}:{}]", lb, i64::from(*lb) + i64::from(*d) - 1);
        }
        out.push(b'=');
    }
    let delim = if elem.typdelim == 0 { b',' } else { elem.typdelim };
    let mut idx = 0usize;
    write_dim(&dims, 0, &items, &mut idx, delim, out);
    Ok(())
}

fn write_dim(dims: &[i32], level: usize, items: &[Option<Vec<u8>>], idx: &mut usize, delim: u8, out: &mut Vec<u8>) {
    out.push(b'{');
    for k in 0..dims[level] {
        if k > 0 {
            out.push(delim);
        }
        if level + 1 < dims.len() {
            write_dim(dims, level + 1, items, idx, delim, out);
        } else {
            match items.get(*idx) {
                Some(Some(v)) => push_array_item(v, delim, out),
                _ => out.extend_from_slice(b"NULL"),
            }
            *idx += 1;
        }
    }
    out.push(b'}');
}

fn push_array_item(v: &[u8], delim: u8, out: &mut Vec<u8>) {
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let needquote = v.is_empty()
        || v.eq_ignore_ascii_case(b"NULL")
        || v.iter().any(|&c| c == b'"' || c == b'\\' || c == b'{' || c == b'}' || c == delim || is_space(c));
    if !needquote {
        out.extend_from_slice(v);
        return;
    }
    out.push(b'"');
    for &c in v {
        if c == b'"' || c == b'\\' {
            out.push(b'\\');
        }
        out.push(c);
    }
    out.push(b'"');
}
