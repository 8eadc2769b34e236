//! Geometric types (`utils/adt/geo_ops.c`, `utils/geo_decls.h`): every coordinate prints as
//! float8out does, so the same shortest round-trip digits as a float8 column.

use super::{fixed, format_float8, oid, DatumResult};
use crate::format::bytes::u32_at;

fn f8(data: &[u8], i: usize) -> f64 {
    let mut a = [0u8; 8];
    if let Some(s) = data.get(i * 8..i * 8 + 8) {
        a.copy_from_slice(s);
    }
    f64::from_le_bytes(a)
}

fn point(data: &[u8], i: usize, out: &mut Vec<u8>) {
    out.push(b'(');
    format_float8(f8(data, i), out);
    out.push(b',');
    format_float8(f8(data, i + 1), out);
    out.push(b')');
}

/// `(x,y)` pairs joined by ','; `data` holds 2·n float8.
fn points(data: &[u8], n: usize, out: &mut Vec<u8>) {
    for k in 0..n {
        if k > 0 {
            out.push(b',');
        }
        point(data, 2 * k, out);
    }
}

/// A varlena's points: `count` read at `count_at`, points from `points_at` (payload offsets).
fn point_list<'a>(data: &'a [u8], count_at: usize, points_at: usize, what: &str) -> Result<(&'a [u8], usize), String> {
    let n = u32_at(data, count_at).ok_or_else(|| format!("{what} without its point count"))? as i32;
    if n < 0 {
        return Err(format!("{what} has a negative point count {n}"));
    }
    let n = n as usize;
    let need = n.checked_mul(16).and_then(|b| b.checked_add(points_at)).ok_or("point count overflows")?;
    if data.len() < need {
        return Err(format!("{what} of {n} points has only {} bytes", data.len()));
    }
    Ok((&data[points_at..need], n))
}

pub(super) fn format_geo(type_oid: u32, data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    match type_oid {
        oid::POINT => point(&fixed::<16>(data, "point")?, 0, out),
        oid::LSEG => {
            let v = fixed::<32>(data, "lseg")?;
            out.push(b'[');
            points(&v, 2, out);
            out.push(b']');
        }
        // stored high corner first, printed in that order
        oid::BOX => points(&fixed::<32>(data, "box")?, 2, out),
        oid::LINE => {
            let v = fixed::<24>(data, "line")?;
            out.push(b'{');
            for i in 0..3 {
                if i > 0 {
                    out.push(b',');
                }
                format_float8(f8(&v, i), out);
            }
            out.push(b'}');
        }
        oid::CIRCLE => {
            let v = fixed::<24>(data, "circle")?;
            out.push(b'<');
            point(&v, 0, out);
            out.push(b',');
            format_float8(f8(&v, 2), out);
            out.push(b'>');
        }
        oid::PATH => {
            // PATH: npts, closed, dummy (pads p[] to a double boundary), p[] at struct offset 16
            let closed = u32_at(data, 4).ok_or("path without its closed flag")? != 0;
            let (p, n) = point_list(data, 0, 12, "path")?;
            out.push(if closed { b'(' } else { b'[' });
            points(p, n, out);
            out.push(if closed { b')' } else { b']' });
        }
        oid::POLYGON => {
            // POLYGON: npts, boundbox (32 bytes at struct offset 8), p[] at struct offset 40
            let (p, n) = point_list(data, 0, 36, "polygon")?;
            out.push(b'(');
            points(p, n, out);
            out.push(b')');
        }
        o => return Err(format!("type oid {o} is not geometric")),
    }
    Ok(())
}
