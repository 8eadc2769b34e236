//! Bounds-checked little-endian reads. Every on-disk integer goes through here, so a short or
//! damaged buffer yields `None` instead of a panic.

#[inline]
pub fn u8_at(buf: &[u8], off: usize) -> Option<u8> {
    buf.get(off).copied()
}

#[inline]
pub fn u16_at(buf: &[u8], off: usize) -> Option<u16> {
    let b = buf.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

#[inline]
pub fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    let b = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline]
pub fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    let b = buf.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// MAXALIGN for x86-64/aarch64 builds: MAXIMUM_ALIGNOF is 8 (`pg_config.h`, from the alignment of double).
pub const MAXIMUM_ALIGNOF: usize = 8;

#[inline]
pub const fn maxalign(len: usize) -> usize {
    (len + (MAXIMUM_ALIGNOF - 1)) & !(MAXIMUM_ALIGNOF - 1)
}

/// Lowercase hex with a space between bytes, as pageinspect prints index tuple data.
pub fn hex_spaced(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 3);
    for (i, b) in data.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        push_hex(&mut s, *b);
    }
    s
}

/// Plain lowercase hex, as bytea's hex output without the `\x` prefix.
pub fn hex(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        push_hex(&mut s, *b);
    }
    s
}

#[inline]
fn push_hex(s: &mut String, b: u8) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    s.push(char::from(DIGITS[usize::from(b >> 4)]));
    s.push(char::from(DIGITS[usize::from(b & 0xF)]));
}
