//! TOAST chunk injectors: a chunk's id, sequence number, size or data, or the whole chunk gone.

use super::fields::{no_value, pick, random_bytes, scalar, set_uint};
use super::heap::tuple_data_area;
use super::page::{lp_at, normal_item};
use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::bytes::u32_at;
use crate::format::heap::SIZEOF_HEAP_TUPLE_HEADER;

pub(super) fn toast(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    if field == "missing" {
        no_value(spec, "a missing chunk")?;
        let at = lp_at(page, item)?;
        normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
        set_uint(page, at, 4, 0);
        return Ok(format!("item {item} line pointer set LP_UNUSED (chunk gone)"));
    }
    let (_, start, end) = tuple_data_area(page, item)?;
    // chunk_id oid, chunk_seq int4, chunk_data bytea (heaptoast.h); never null.
    if end < start + 9 {
        return Err(invalid(format!("item {item} is too short for a TOAST chunk")));
    }
    let note = match field {
        "chunk_id" => scalar(page, start, 4, field, spec, rng)?,
        "chunk_seq" => {
            let cur = u64::from(u32_at(page, start + 4).unwrap_or(0));
            let v = pick(spec, field, 32, cur, rng)?;
            set_uint(page, start + 4, 4, v);
            format!("chunk_seq {} -> {}", cur as u32 as i32, v as u32 as i32)
        }
        "chunk_data" | "chunk_size" => {
            let d = start + 8;
            let b0 = page[d];
            if b0 & 0x01 == 0 && d + 4 > end {
                return Err(invalid(format!("item {item}: its chunk_data header lies outside the tuple")));
            }
            let (hdr, size) = if b0 & 0x01 == 1 {
                (1usize, usize::from(b0 >> 1))
            } else {
                (4usize, ((u32_at(page, d).unwrap_or(0) >> 2) & 0x3FFF_FFFF) as usize)
            };
            if field == "chunk_size" {
                if hdr == 1 {
                    let v = match spec.value {
                        Some(v) if !(1..=127).contains(&v) => {
                            return Err(invalid("a short chunk header holds sizes 1..127"))
                        }
                        Some(v) => v,
                        None => rng.other_between(1, 127, size as u64),
                    };
                    page[d] = ((v as u8) << 1) | 1;
                    format!("chunk_data length {size} -> {v}")
                } else {
                    let h = u32_at(page, d).unwrap_or(0);
                    let v = pick(spec, field, 30, size as u64, rng)?;
                    set_uint(page, d, 4, (v << 2) | u64::from(h & 3));
                    format!("chunk_data length {size} -> {v}")
                }
            } else {
                no_value(spec, "chunk_data")?;
                let payload_end = (d + size).min(end);
                let payload = d + hdr;
                if payload_end <= payload {
                    return Err(invalid(format!("item {item} has an empty chunk")));
                }
                let n = spec.length.unwrap_or(16).clamp(1, payload_end - payload);
                let at = payload + rng.below((payload_end - payload - n + 1) as u64) as usize;
                random_bytes(&mut page[at..at + n], rng);
                format!("{n} random byte(s) in chunk_data at chunk byte {}", at - payload)
            }
        }
        _ => return Err(invalid(format!("unknown TOAST field {field}"))),
    };
    Ok(format!("item {item} {note}"))
}
