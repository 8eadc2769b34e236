//! Values stored inside other values: a composite's or a range's attributes ([`read_att`]), a varlena in an
//! array or a jsonb ([`varlena_any`]), and the alignment they share (`access/tupmacs.h`).

use std::borrow::Cow;

use crate::format::bytes::u32_at;

/// One attribute inside a composite or range value: `data` holds the value's bytes from virtual
/// offset `base` (offsets counted from the start of the datum, varlena header included, which is
/// what alignment is relative to); the attribute starts at virtual offset `p`, before alignment.
/// With `packed`, a varlena starting with a non-zero byte is a short one and not aligned
/// (att_align_pointer, `access/tupmacs.h`). Returns the attribute's payload (a compressed inline
/// varlena decompressed) and the virtual offset after it.
pub(super) fn read_att(
    data: &[u8],
    base: usize,
    p: usize,
    typlen: i16,
    typalign: u8,
    packed: bool,
) -> Result<(Cow<'_, [u8]>, usize), String> {
    let rel = |v: usize| v.checked_sub(base).ok_or_else(|| format!("attribute offset {v} before the value"));
    if typlen > 0 {
        let at = align_to(p, typalign);
        let n = typlen as usize;
        let s = data.get(rel(at)?..).and_then(|r| r.get(..n)).ok_or("attribute runs past the value")?;
        return Ok((Cow::Borrowed(s), at + n));
    }
    if typlen == -2 {
        let at = align_to(p, typalign);
        let rest = data.get(rel(at)?..).ok_or("attribute starts past the value")?;
        let nul = rest.iter().position(|b| *b == 0).ok_or("cstring attribute without NUL")?;
        return Ok((Cow::Borrowed(&rest[..nul]), at + nul + 1));
    }
    if typlen != -1 {
        return Err(format!("attribute length {typlen} is invalid"));
    }
    let short = packed && data.get(rel(p)?).is_some_and(|b| *b != 0);
    let at = if short { p } else { align_to(p, typalign) };
    let rest = data.get(rel(at)?..).ok_or("attribute starts past the value")?;
    let b0 = *rest.first().ok_or("attribute starts past the value")?;
    if b0 == 0x01 {
        return Err("a TOAST pointer inside a value cannot be followed".into());
    }
    if b0 & 0x01 == 0x01 {
        let n = usize::from(b0 >> 1);
        let s = rest.get(1..n).ok_or("short varlena attribute runs past the value")?;
        return Ok((Cow::Borrowed(s), at + n));
    }
    let word = u32_at(rest, 0).ok_or("varlena attribute header runs past the value")?;
    let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
    let body = rest.get(4..n.max(4)).filter(|_| n >= 4).ok_or("varlena attribute runs past the value")?;
    if b0 & 0x03 == 0x02 {
        // compressed inline: va_tcinfo (raw size, method in the top 2 bits), then the data
        let tcinfo = u32_at(body, 0).ok_or("compressed attribute without its size")?;
        let raw =
            crate::format::compress::decompress((tcinfo >> 30) as u8, &body[4..], (tcinfo & 0x3FFF_FFFF) as usize)
                .map_err(|e| format!("compressed attribute: {e}"))?;
        return Ok((Cow::Owned(raw), at + n));
    }
    Ok((Cow::Borrowed(body), at + n))
}

/// A varlena value found inside another value (array element, jsonb numeric): its payload and
/// total size (header included). Only 1-byte and plain 4-byte headers; `None` for anything else.
pub fn varlena_any(v: &[u8]) -> Option<(&[u8], usize)> {
    let b0 = *v.first()?;
    if b0 == 0x01 {
        return None; // an external pointer inside a value cannot be followed
    }
    if b0 & 0x01 == 0x01 {
        let n = usize::from(b0 >> 1);
        if n == 0 {
            return None;
        }
        return Some((v.get(1..n)?, n));
    }
    let word = u32_at(v, 0)?;
    if b0 & 0x03 != 0 {
        return None; // compressed inside a value: not produced by the server
    }
    let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
    if n < 4 {
        return None;
    }
    Some((v.get(4..n)?, n))
}

/// TYPEALIGN by a typalign letter (`c`, `s`, `i`, `d`).
pub(super) fn align_to(off: usize, align: u8) -> usize {
    let a = match align {
        b'c' => 1,
        b's' => 2,
        b'i' => 4,
        b'd' => 8,
        _ => 1,
    };
    (off + a - 1) & !(a - 1)
}
