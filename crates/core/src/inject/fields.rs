//! Writing damage into bytes: little-endian fields of any width, random bytes and bit flips, shared by every
//! injector.

use std::collections::BTreeSet;

use super::{invalid, width_mask, DamageSpec, Rng};
use crate::error::Result;

fn get_uint(buf: &[u8], at: usize, width: usize) -> Option<u64> {
    let b = buf.get(at..at + width)?;
    let mut a = [0u8; 8];
    a[..width].copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

pub(super) fn set_uint(buf: &mut [u8], at: usize, width: usize, value: u64) {
    buf[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

/// The value to write into a `bits`-wide field now holding `current`: `--value` (checked) or a
/// random different one.
pub(super) fn pick(spec: &DamageSpec, name: &str, bits: u32, current: u64, rng: &mut Rng) -> Result<u64> {
    match spec.value {
        Some(v) if v > width_mask(bits) => Err(invalid(format!("value {v} does not fit {name} ({bits} bits)"))),
        Some(v) => Ok(v),
        None => Ok(rng.other_than(bits, current)),
    }
}

/// Damage the little-endian field of `width` bytes at `at` (offsets absolute in `buf`).
pub(super) fn scalar(
    buf: &mut [u8],
    at: usize,
    width: usize,
    name: &str,
    spec: &DamageSpec,
    rng: &mut Rng,
) -> Result<String> {
    let cur = get_uint(buf, at, width).ok_or_else(|| invalid(format!("{name} lies outside the page")))?;
    let v = pick(spec, name, (width * 8) as u32, cur, rng)?;
    set_uint(buf, at, width, v);
    Ok(format!("{name} {cur} -> {v}"))
}

pub(super) fn no_value(spec: &DamageSpec, what: &str) -> Result<()> {
    if spec.value.is_some() || spec.tid.is_some() {
        return Err(invalid(format!("{what} takes no value")));
    }
    Ok(())
}

pub(super) fn random_bytes(buf: &mut [u8], rng: &mut Rng) {
    let before = buf.to_vec();
    loop {
        rng.fill(buf);
        if buf != before.as_slice() {
            return;
        }
    }
}

/// Flip `flips` distinct random bits in `buf[start..end]`; returns a description.
pub(super) fn flip_bits(buf: &mut [u8], start: usize, end: usize, flips: u32, rng: &mut Rng) -> Result<String> {
    let bits = ((end - start) * 8) as u64;
    if flips == 0 || u64::from(flips) > bits {
        return Err(invalid(format!("cannot flip {flips} bits in {} bytes", end - start)));
    }
    let mut chosen = BTreeSet::new();
    while chosen.len() < flips as usize {
        chosen.insert(rng.below(bits));
    }
    for bit in &chosen {
        buf[start + (bit / 8) as usize] ^= 1 << (bit % 8);
    }
    let shown: Vec<String> = chosen.iter().take(8).map(|b| format!("{}.{}", start as u64 + b / 8, b % 8)).collect();
    let more = if chosen.len() > 8 { ", …" } else { "" };
    Ok(format!("{} bit(s) at byte.bit {}{more}", chosen.len(), shown.join(", ")))
}
