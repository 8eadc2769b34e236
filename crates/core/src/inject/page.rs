//! Page-level injectors: the page header, the line pointer array, and whole pages (checksum, torn writes).

use super::fields::{no_value, pick, random_bytes, scalar, set_uint};
use super::{invalid, DamageSpec, Rng, SECTOR_SIZE};
use crate::error::Result;
use crate::format::bytes::u16_at;
use crate::format::checksum::{pg_checksum_page, PD_CHECKSUM_OFFSET};
use crate::format::itemid::{ItemIdData, LP_NORMAL, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{format_lsn, PageHeaderData, SIZE_OF_PAGE_HEADER_DATA};

// ------------------------------------------------------------------------------ page header

pub(super) fn header(page: &mut [u8], field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (at, width) = match field {
        "random" => {
            no_value(spec, "a random header")?;
            random_bytes(&mut page[..SIZE_OF_PAGE_HEADER_DATA], rng);
            return Ok("all 24 header bytes random".to_string());
        }
        "pd_lsn" => {
            let old = PageHeaderData::parse(page).unwrap_or_default().pd_lsn.lsn();
            let v = pick(spec, field, 64, old, rng)?;
            set_uint(page, 0, 4, v >> 32);
            set_uint(page, 4, 4, v & 0xFFFF_FFFF);
            return Ok(format!("pd_lsn {} -> {}", format_lsn(old), format_lsn(v)));
        }
        "pd_flags" => (10, 2),
        "pd_lower" => (12, 2),
        "pd_upper" => (14, 2),
        "pd_special" => (16, 2),
        "pd_pagesize_version" => (18, 2),
        "pd_prune_xid" => (20, 4),
        _ => return Err(invalid(format!("unknown header field {field}"))),
    };
    scalar(page, at, width, field, spec, rng)
}

// ------------------------------------------------------------------------------ line pointers

pub(super) fn item_ids(page: &mut [u8], rng: &mut Rng) -> Result<String> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let n = usize::from(h.max_offset_number());
    let end = (SIZE_OF_PAGE_HEADER_DATA + n * SIZE_OF_ITEM_ID_DATA).min(page.len());
    if end <= SIZE_OF_PAGE_HEADER_DATA {
        return Err(invalid(format!("the page has no line pointers (pd_lower {})", h.pd_lower)));
    }
    random_bytes(&mut page[SIZE_OF_PAGE_HEADER_DATA..end], rng);
    Ok(format!("all {n} line pointers (bytes {SIZE_OF_PAGE_HEADER_DATA}..{end}) random"))
}

/// Offset of line pointer `item` in the page.
pub(super) fn lp_at(page: &[u8], item: u16) -> Result<usize> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let max = h.max_offset_number();
    let at = SIZE_OF_PAGE_HEADER_DATA + usize::from(item.saturating_sub(1)) * SIZE_OF_ITEM_ID_DATA;
    if item == 0 || item > max || at + SIZE_OF_ITEM_ID_DATA > page.len() {
        return Err(invalid(format!("item {item} does not exist: the page has {max} line pointers")));
    }
    Ok(at)
}

/// Start and length of the storage of normal item `item`, checked to lie inside the page and to
/// hold at least `min_len` bytes.
pub(super) fn normal_item(page: &[u8], item: u16, min_len: usize) -> Result<(usize, usize)> {
    let at = lp_at(page, item)?;
    let id = ItemIdData::parse(page, at).unwrap_or(ItemIdData(0));
    let (off, len) = (usize::from(id.lp_off()), usize::from(id.lp_len()));
    if id.lp_flags() != LP_NORMAL {
        return Err(invalid(format!("item {item} is {}, not a tuple", id.flags_name())));
    }
    if len < min_len || off < SIZE_OF_PAGE_HEADER_DATA || off + len > page.len() {
        return Err(invalid(format!("item {item} (lp_off {off}, lp_len {len}) is not a usable tuple")));
    }
    Ok((off, len))
}

pub(super) fn item_id(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let at = lp_at(page, item)?;
    let old = ItemIdData::parse(page, at).unwrap_or(ItemIdData(0));
    let new = match field {
        "random" => ItemIdData(pick(spec, "the line pointer", 32, u64::from(old.0), rng)? as u32),
        "lp_off" => {
            let v = pick(spec, field, 15, u64::from(old.lp_off()), rng)? as u16;
            ItemIdData::new(v, old.lp_flags(), old.lp_len())
        }
        "lp_flags" => {
            let v = pick(spec, field, 2, u64::from(old.lp_flags()), rng)? as u8;
            ItemIdData::new(old.lp_off(), v, old.lp_len())
        }
        "lp_len" => {
            let v = pick(spec, field, 15, u64::from(old.lp_len()), rng)? as u16;
            ItemIdData::new(old.lp_off(), old.lp_flags(), v)
        }
        _ => return Err(invalid(format!("unknown line pointer field {field}"))),
    };
    set_uint(page, at, 4, u64::from(new.0));
    let show = |id: ItemIdData| format!("({}, {}, {})", id.lp_off(), id.flags_name(), id.lp_len());
    Ok(format!("item {item} line pointer {} -> {}", show(old), show(new)))
}

// ------------------------------------------------------------------------------ whole pages

pub(super) fn checksum(page: &mut [u8], blkno: u32, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let cur = u16_at(page, PD_CHECKSUM_OFFSET).unwrap_or(0);
    let right = pg_checksum_page(page, blkno);
    let v = match spec.value {
        Some(v) if v > 0xFFFF => return Err(invalid(format!("value {v} does not fit pd_checksum (16 bits)"))),
        Some(v) => v as u16,
        None => loop {
            let v = rng.other_than(16, u64::from(cur)) as u16;
            if Some(v) != right {
                break v;
            }
        },
    };
    set_uint(page, PD_CHECKSUM_OFFSET, 2, u64::from(v));
    let right = right.map_or("none".to_string(), |c| c.to_string());
    Ok(format!("pd_checksum {cur} -> {v} (right for block {blkno}: {right})"))
}

pub(super) fn torn(page: &mut [u8], source: &[u8], spec: &DamageSpec) -> Result<String> {
    let len = page.len();
    let at = spec.tear_at.unwrap_or(len / 2);
    if at == 0 || at >= len || !at.is_multiple_of(SECTOR_SIZE) {
        return Err(invalid(format!(
            "a page tears at a multiple of {SECTOR_SIZE} bytes inside it (1..{}), got {at}",
            len - 1
        )));
    }
    page[at..].copy_from_slice(&source[at..]);
    Ok(format!("torn at byte {at}: bytes 0..{at} kept, {at}..{len} from the source page"))
}
