//! Numbers: integers (`utils/adt/int.c`, `int8.c`, `oid.c`), float4/float8 (`utils/adt/float.c`, with the
//! shortest digits of `common/d2s.c`/`f2s.c`) and numeric (`utils/adt/numeric.c`).

use std::fmt::Write as _;

use super::{DatumResult, Str};
use crate::format::bytes::u16_at;

/// Two decimal digits of every number below 100, as pg_ultoa_n (utils/adt/numutils.c) writes them.
const DIGIT_PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// Decimal digits of `v`, without going through `core::fmt` (integers are most of the values a table holds): two
/// at a time from the right (one division per pair), written where they go in `out`. Not through a stack buffer:
/// copying it out reads back as one word what was stored byte by byte, a store-forwarding stall on every value.
pub(super) fn push_uint(out: &mut Vec<u8>, mut v: u64) {
    let len = v.checked_ilog10().map_or(1, |l| l as usize + 1);
    let n = out.len();
    out.extend_from_slice(&[b'0'; 20]);
    let digits = &mut out[n..n + len];
    let mut at = len;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        digits[..2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        digits[0] = b'0' + v as u8;
    }
    out.truncate(n + len);
}

pub(super) fn push_int(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_uint(out, v.unsigned_abs());
}

// ---------------------------------------------------------------------------------------------
// Floats: the shortest round-trip digits (Ryu in d2s.c/f2s.c; Rust's `{:e}` gives the same
// digits), laid out as PostgreSQL does: fixed notation when the decimal exponent is in
// [-4, 15) for float8 and [-4, 6) for float4, else d.ddde+XX.
// ---------------------------------------------------------------------------------------------

/// float8out with extra_float_digits > 0 (the default 1).
pub fn format_float8(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        float_layout(&format!("{v:e}"), 15, out);
    }
}

/// float4out with extra_float_digits > 0.
pub fn format_float4(v: f32, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        float_layout(&format!("{v:e}"), 6, out);
    }
}

/// `sci` is Rust's `{:e}` text: `-1.2345e-7`, `0e0`.
fn float_layout(sci: &str, fixed_below: i32, out: &mut Vec<u8>) {
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    if neg {
        out.push(b'-');
    }
    if digits.iter().all(|d| *d == b'0') {
        out.push(b'0');
        return;
    }
    if (-4..fixed_below).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            out.extend_from_slice(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend_from_slice(&digits);
        } else if exp + 1 >= n {
            out.extend_from_slice(&digits);
            for _ in 0..(exp + 1 - n) {
                out.push(b'0');
            }
        } else {
            let point = (exp + 1) as usize;
            out.extend_from_slice(&digits[..point]);
            out.push(b'.');
            out.extend_from_slice(&digits[point..]);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let _ = write!(Str(out), "{:02}", exp.unsigned_abs());
    }
}

// ---------------------------------------------------------------------------------------------
// numeric (utils/adt/numeric.c)
// ---------------------------------------------------------------------------------------------

const NUMERIC_SIGN_MASK: u16 = 0xC000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_SHORT: u16 = 0x8000;
const NUMERIC_SPECIAL: u16 = 0xC000;
const NUMERIC_EXT_SIGN_MASK: u16 = 0xF000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;
const NUMERIC_SHORT_SIGN_MASK: u16 = 0x2000;
const NUMERIC_SHORT_DSCALE_MASK: u16 = 0x1F80;
const NUMERIC_SHORT_DSCALE_SHIFT: u16 = 7;
const NUMERIC_SHORT_WEIGHT_SIGN_MASK: u16 = 0x0040;
const NUMERIC_SHORT_WEIGHT_MASK: u16 = 0x003F;
const NUMERIC_DSCALE_MASK: u16 = 0x3FFF;
const NBASE: u16 = 10000;

/// Whether a numeric payload is well formed (what [`format_numeric`] checks), without printing it.
pub fn validate_numeric(data: &[u8]) -> DatumResult {
    let h = u16_at(data, 0).ok_or("numeric value without a header word")?;
    let at = match h & NUMERIC_SIGN_MASK {
        NUMERIC_SPECIAL => {
            return match h & NUMERIC_EXT_SIGN_MASK {
                NUMERIC_NAN | NUMERIC_PINF | NUMERIC_NINF => Ok(()),
                _ => Err(format!("numeric special value 0x{h:04x} is unknown")),
            };
        }
        NUMERIC_SHORT => 2usize,
        _ => {
            u16_at(data, 2).ok_or("numeric value without its weight")?;
            4
        }
    };
    let body = data.get(at..).unwrap_or(&[]);
    if body.len() % 2 != 0 {
        return Err(format!("numeric digits take an odd number of bytes ({})", body.len()));
    }
    match body.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).find(|d| *d >= NBASE) {
        Some(d) => Err(format!("numeric digit {d} is not below 10000")),
        None => Ok(()),
    }
}

/// numeric_out (get_str_from_var) on a numeric's varlena payload.
pub fn format_numeric(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let h = u16_at(data, 0).ok_or("numeric value without a header word")?;
    let (neg, weight, dscale, digits_at) = match h & NUMERIC_SIGN_MASK {
        NUMERIC_SPECIAL => {
            out.extend_from_slice(match h & NUMERIC_EXT_SIGN_MASK {
                NUMERIC_NAN => b"NaN".as_slice(),
                NUMERIC_PINF => b"Infinity",
                NUMERIC_NINF => b"-Infinity",
                _ => return Err(format!("numeric special value 0x{h:04x} is unknown")),
            });
            return Ok(());
        }
        NUMERIC_SHORT => {
            let neg = h & NUMERIC_SHORT_SIGN_MASK != 0;
            let dscale = (h & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT;
            let w = h & NUMERIC_SHORT_WEIGHT_MASK;
            let weight = if h & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 { i32::from(w) - 64 } else { i32::from(w) };
            (neg, weight, dscale, 2usize)
        }
        sign => {
            let weight = i32::from(u16_at(data, 2).ok_or("numeric value without its weight")? as i16);
            (sign == NUMERIC_NEG, weight, h & NUMERIC_DSCALE_MASK, 4usize)
        }
    };
    let body = data.get(digits_at..).unwrap_or(&[]);
    if body.len() % 2 != 0 {
        return Err(format!("numeric digits take an odd number of bytes ({})", body.len()));
    }
    let digits: Vec<u16> = body.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    if let Some(d) = digits.iter().find(|d| **d >= NBASE) {
        return Err(format!("numeric digit {d} is not below 10000"));
    }
    if weight.unsigned_abs() > 0x7FFF || digits.len() > 0x8000 {
        return Err(format!("numeric weight {weight} is out of range"));
    }
    let digit = |i: i32| -> u16 {
        if i >= 0 && (i as usize) < digits.len() {
            digits[i as usize]
        } else {
            0
        }
    };
    if neg {
        out.push(b'-');
    }
    let four = |v: u16| -> [u8; 4] {
        [b'0' + (v / 1000) as u8, b'0' + (v / 100 % 10) as u8, b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8]
    };
    if weight < 0 {
        out.push(b'0');
    } else {
        for d in 0..=weight {
            let f = four(digit(d));
            if d == 0 {
                let skip = f.iter().take(3).take_while(|c| **c == b'0').count();
                out.extend_from_slice(&f[skip..]);
            } else {
                out.extend_from_slice(&f);
            }
        }
    }
    if dscale > 0 {
        out.push(b'.');
        let mut written = 0usize;
        let mut d = weight + 1;
        let want = usize::from(dscale);
        while written < want {
            let f = four(digit(d));
            let take = (want - written).min(4);
            out.extend_from_slice(&f[..take]);
            written += take;
            d += 1;
        }
    }
    Ok(())
}
