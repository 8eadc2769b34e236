//! GIN page injectors (access/ginblock.h), one per page type: the metapage's pending list head, an entry leaf
//! tuple's item count, an entry internal page's downlink, a posting tree leaf's first item, an entry tuple's
//! posting list, a pending list tuple's heap TID. Each refuses a page of another type (the planner tries others).

use super::fields::set_uint;
use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::gin::{
    GinEntryTuple, GinMetaPageData, GinPageOpaqueData, GIN_COMPRESSED, GIN_DATA, GIN_DATA_START, GIN_DELETED, GIN_LEAF,
    GIN_LIST, GIN_META, GIN_POSTING_LIST_HEADER, INVALID_BLOCK_NUMBER,
};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, SIZE_OF_PAGE_HEADER_DATA};

pub(super) const FIELDS: &[&str] =
    &["posting-list", "entry-leaf", "entry-internal", "posting-tree", "pending-list", "metapage"];

pub(super) fn gin(page: &mut [u8], field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let o = {
        let p = Page::new(page).ok_or_else(|| invalid("the page is too short"))?;
        GinPageOpaqueData::from_page(&p).ok_or_else(|| invalid("not a GIN page: its special space is not 8 bytes"))?
    };
    if o.has(GIN_DELETED) {
        return Err(invalid("a deleted GIN page: nothing on it is read"));
    }
    let entry = !o.has(GIN_DATA) && !o.has(GIN_LIST) && !o.has(GIN_META);
    match field {
        "metapage" if o.has(GIN_META) => metapage(page, spec, rng),
        "entry-leaf" if entry && o.has(GIN_LEAF) => entry_leaf(page, spec, rng),
        "posting-list" if entry && o.has(GIN_LEAF) => posting_list(page, rng),
        "entry-internal" if entry && !o.has(GIN_LEAF) => entry_internal(page, spec, rng),
        "posting-tree" if o.has(GIN_DATA) && o.has(GIN_LEAF) && o.has(GIN_COMPRESSED) => posting_tree(page, rng),
        "pending-list" if o.has(GIN_LIST) => pending_list(page, rng),
        "metapage" | "entry-leaf" | "posting-list" | "entry-internal" | "posting-tree" | "pending-list" => {
            Err(invalid(format!("field {field} does not fit this page, a GIN {}", o.role())))
        }
        _ => Err(invalid(format!("unknown gin field {field}"))),
    }
}

/// The pending list's head pointed at another page (`--value` or a random block of the index).
fn metapage(page: &mut [u8], spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let m = GinMetaPageData::parse(page).ok_or_else(|| invalid("the metapage is too short"))?;
    let cur = u64::from(m.head);
    let v = match (spec.value, spec.nblocks) {
        (Some(v), _) if v > u64::from(u32::MAX) => return Err(invalid(format!("value {v} does not fit head"))),
        (Some(v), _) => v,
        (None, Some(n)) if n > 2 => rng.other_between(1, u64::from(n - 1), cur),
        (None, _) => 1,
    };
    set_uint(page, SIZE_OF_PAGE_HEADER_DATA, 4, v);
    let show = |b: u64| if b == u64::from(INVALID_BLOCK_NUMBER) { "none".to_string() } else { b.to_string() };
    Ok(format!("metapage: pending list head {} -> {}", show(cur), show(v)))
}

/// The entry tuples of an entry page: (line pointer, offset, length).
fn entry_items(page: &[u8]) -> Vec<(u16, usize, usize)> {
    let Some(p) = Page::new(page) else { return Vec::new() };
    p.item_ids()
        .filter(|(_, id)| id.lp_flags() == LP_NORMAL && id.lp_len() >= 8)
        .map(|(off, id)| (off, usize::from(id.lp_off()), usize::from(id.lp_len())))
        .filter(|(_, at, len)| at + len <= page.len())
        .collect()
}

/// A random leaf entry tuple with a compressed posting list of at least one item.
fn pick_list_tuple(page: &[u8], rng: &mut Rng) -> Result<(u16, usize, GinEntryTuple)> {
    let lists: Vec<(u16, usize, GinEntryTuple)> = entry_items(page)
        .into_iter()
        .filter_map(|(off, at, len)| GinEntryTuple::parse(&page[at..at + len]).map(|e| (off, at, e)))
        .filter(|(_, _, e)| !e.is_posting_tree() && e.is_compressed() && e.n_posting() > 0)
        .filter(|(_, _, e)| e.posting_offset() + GIN_POSTING_LIST_HEADER <= e.itup.size())
        .collect();
    if lists.is_empty() {
        return Err(invalid("no entry tuple on this page holds a posting list"));
    }
    Ok(lists[rng.below(lists.len() as u64) as usize])
}

/// An entry tuple's item count (`GinGetNPosting`, its t_tid offset) changed: `--value` or one more or less.
fn entry_leaf(page: &mut [u8], spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, at, e) = pick_list_tuple(page, rng)?;
    let cur = e.n_posting();
    let v = match spec.value {
        Some(v) if v >= 0xFFFF => return Err(invalid(format!("value {v} is not an item count (below 65535)"))),
        Some(v) => v as u16,
        None if cur > 1 && rng.below(2) == 0 => cur - 1,
        None => cur + 1,
    };
    set_uint(page, at + 4, 2, u64::from(v));
    Ok(format!("entry leaf item {off}: item count {cur} -> {v}"))
}

/// The first item of an entry tuple's posting list given offset number 0, an invalid heap TID.
fn posting_list(page: &mut [u8], rng: &mut Rng) -> Result<String> {
    let (off, at, e) = pick_list_tuple(page, rng)?;
    let first = at + e.posting_offset();
    let cur = ItemPointerData::parse(page, first).ok_or_else(|| invalid("the posting list lies outside the page"))?;
    set_uint(page, first + 4, 2, 0);
    Ok(format!("entry leaf item {off}: posting list's first item {cur} -> ({},0)", cur.block))
}

/// An entry internal page's downlink pointed past the index's end (`--value`, or a random block past it).
fn entry_internal(page: &mut [u8], spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let items = entry_items(page);
    if items.is_empty() {
        return Err(invalid("the entry internal page has no tuples"));
    }
    let (off, at, _) = items[rng.below(items.len() as u64) as usize];
    let cur = ItemPointerData::parse(page, at).map(|t| t.block).unwrap_or(0);
    let v = match spec.value {
        Some(v) if v >= u64::from(INVALID_BLOCK_NUMBER) => return Err(invalid(format!("value {v} is no block"))),
        Some(v) => v as u32,
        None => spec.nblocks.unwrap_or(1000).saturating_add(rng.between(1, 1000) as u32),
    };
    ItemPointerData { block: v, offset: 0 }.write(page, at);
    Ok(format!("entry internal item {off}: downlink {cur} -> {v}"))
}

/// A posting tree leaf's first segment given offset number 0 in its first item.
fn posting_tree(page: &mut [u8], _rng: &mut Rng) -> Result<String> {
    let lower = Page::new(page).map(|p| usize::from(p.header().pd_lower)).unwrap_or(0);
    if lower < GIN_DATA_START + GIN_POSTING_LIST_HEADER {
        return Err(invalid("the posting tree leaf holds no items"));
    }
    let cur = ItemPointerData::parse(page, GIN_DATA_START).ok_or_else(|| invalid("the page is too short"))?;
    set_uint(page, GIN_DATA_START + 4, 2, 0);
    Ok(format!("posting tree leaf: first item {cur} -> ({},0)", cur.block))
}

/// A pending list tuple's heap TID given offset number 0.
fn pending_list(page: &mut [u8], rng: &mut Rng) -> Result<String> {
    let items = entry_items(page);
    if items.is_empty() {
        return Err(invalid("the pending list page has no tuples"));
    }
    let (off, at, _) = items[rng.below(items.len() as u64) as usize];
    let cur = ItemPointerData::parse(page, at).unwrap_or(ItemPointerData { block: 0, offset: 0 });
    set_uint(page, at + 4, 2, 0);
    Ok(format!("pending list item {off}: heap TID {cur} -> ({},0)", cur.block))
}
