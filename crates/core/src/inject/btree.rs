//! B-tree page injectors: the special space (sibling links, level, flags), an item's TID, the high key.

use super::fields::{no_value, random_bytes, scalar, set_uint};
use super::heap::random_tid;
use super::page::normal_item;
use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::btree::{IndexTupleData, BT_PIVOT_HEAP_TID_ATTR, BT_SPECIAL_SIZE, P_HIKEY, P_NONE};
use crate::format::bytes::u32_at;
use crate::format::heap::ItemPointerData;
use crate::format::page::PageHeaderData;

pub(super) fn btree(
    page: &mut [u8],
    item: Option<u16>,
    field: &str,
    spec: &DamageSpec,
    rng: &mut Rng,
) -> Result<String> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let special = usize::from(h.pd_special);
    if special + BT_SPECIAL_SIZE != page.len() {
        return Err(invalid(format!(
            "not a btree page: special space is {} bytes, not {BT_SPECIAL_SIZE}",
            page.len().saturating_sub(special)
        )));
    }
    let random_link = |rng: &mut Rng, cur: u64| -> u64 {
        match spec.nblocks {
            Some(n) if n > 2 => rng.other_between(1, u64::from(n - 1), cur),
            _ => rng.other_than(32, cur),
        }
    };
    let link = |page: &mut [u8], at: usize, name: &str, rng: &mut Rng| -> Result<String> {
        let cur = u64::from(u32_at(page, at).unwrap_or(0));
        let v = match spec.value {
            Some(v) if v > u64::from(u32::MAX) => {
                return Err(invalid(format!("value {v} does not fit {name} (32 bits)")))
            }
            Some(v) => v,
            None => random_link(rng, cur),
        };
        set_uint(page, at, 4, v);
        Ok(format!("{name} {cur} -> {v}"))
    };
    match field {
        "special" => {
            no_value(spec, "a random special space")?;
            random_bytes(&mut page[special..], rng);
            Ok("all 16 bytes of BTPageOpaqueData random".to_string())
        }
        "btpo_prev" => link(page, special, field, rng),
        "btpo_next" => link(page, special + 4, field, rng),
        "siblings" => {
            let a = link(page, special, "btpo_prev", rng)?;
            let b = link(page, special + 4, "btpo_next", rng)?;
            Ok(format!("{a}, {b}"))
        }
        "btpo_level" => scalar(page, special + 8, 4, field, spec, rng),
        "btpo_flags" => scalar(page, special + 12, 2, field, spec, rng),
        "item" => btree_item(page, item.unwrap_or(0), spec, rng),
        "high_key" => {
            no_value(spec, "a high key")?;
            if u32_at(page, special + 4) == Some(P_NONE) {
                return Err(invalid("the page is rightmost on its level: it has no high key"));
            }
            let (off, len) = normal_item(page, P_HIKEY, 8)?;
            let it =
                IndexTupleData::parse(&page[off..off + len]).ok_or_else(|| invalid("the high key is too short"))?;
            let size = it.size().min(len);
            let doff = it.data_offset();
            let tail = if it.is_pivot() && it.t_tid.offset & BT_PIVOT_HEAP_TID_ATTR != 0 { 8 } else { 0 };
            if size < doff + tail + 1 {
                return Err(invalid("the high key holds no key data"));
            }
            let (start, end) = (off + doff, off + size - tail);
            let n = spec.length.unwrap_or(end - start).clamp(1, end - start);
            let at = start + rng.below((end - start - n + 1) as u64) as usize;
            random_bytes(&mut page[at..at + n], rng);
            Ok(format!("high key: {n} random byte(s) of its {} key bytes", end - start))
        }
        _ => Err(invalid(format!("unknown btree field {field}"))),
    }
}

fn btree_item(page: &mut [u8], item: u16, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, len) = normal_item(page, item, 8)?;
    let it = IndexTupleData::parse(&page[off..off + len])
        .ok_or_else(|| invalid(format!("item {item} is too short for an index tuple")))?;
    if spec.value.is_some() {
        return Err(invalid("the btree item field takes a tid (block,offset), not a number"));
    }
    let (at, what) = if it.is_posting() {
        let n = u64::from(it.alt_count().max(1));
        let k = rng.below(n) as usize;
        (off + it.posting_offset() + 6 * k, format!("posting list TID {k}"))
    } else if it.is_pivot() {
        (off, "downlink".to_string())
    } else {
        (off, "heap TID".to_string())
    };
    if at + 6 > off + len {
        return Err(invalid(format!("item {item}: its TID lies outside the tuple")));
    }
    let cur = ItemPointerData::parse(page, at).unwrap_or(ItemPointerData { block: 0, offset: 0 });
    let mut tid = random_tid(spec, cur, rng);
    if it.is_pivot() && spec.tid.is_none() {
        // A pivot's offset field holds its attribute count: change only the downlink.
        tid.offset = cur.offset;
        if tid.block == cur.block {
            tid.block = rng.other_than(32, u64::from(cur.block)) as u32;
        }
    }
    tid.write(page, at);
    Ok(format!("item {item} {what} {cur} -> {tid}"))
}
