//! GiST and SP-GiST page injectors: a GiST inner page's downlink, a leaf's heap TID, the right-link, the NSN and
//! the flags; an SP-GiST metapage's magic number, an inner tuple's node downlink, a leaf chain's nextOffset. Each
//! picks its tuple on the page with the seeded generator and refuses a page that has none to damage (the caller
//! then tries another block).

use super::fields::{scalar, set_uint};
use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::btree::IndexTupleData;
use crate::format::bytes::{u16_at, u32_at};
use crate::format::gist::{GISTPageOpaqueData, GIST_FLAGS_OFFSET, GIST_RIGHTLINK_OFFSET, GIST_SPECIAL_SIZE};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::{ItemIdData, LP_NORMAL};
use crate::format::page::{Page, SIZE_OF_PAGE_HEADER_DATA};
use crate::format::spgist::{
    inner_nodes, tupstate, SpGistInnerTupleData, SpGistLeafTupleData, SpGistPageOpaqueData, INVALID_BLOCK_NUMBER,
    SGLT_NEXTOFFSET_MASK, SPGIST_LIVE, SPGIST_MAGIC_NUMBER, SPGIST_NULL_BLKNO, SPGIST_ROOT_BLKNO,
};

/// `MaxHeapTuplesPerPage` for 8 KB pages: a heap item number no real page reaches, so a TID there is a row the
/// heap does not have.
const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;

/// The (offset, length) of each LP_NORMAL item of `page` for which `keep(bytes)` holds.
fn items_where(page: &[u8], keep: impl Fn(&[u8]) -> bool) -> Vec<(u16, usize, usize)> {
    let Some(p) = Page::new(page) else { return Vec::new() };
    p.item_ids()
        .filter(|(_, id)| id.lp_flags() == LP_NORMAL)
        .filter_map(|(off, id): (u16, ItemIdData)| {
            let b = p.item_bytes(id)?;
            keep(b).then_some((off, usize::from(id.lp_off()), b.len()))
        })
        .collect()
}

pub(super) fn gist(page: &mut [u8], field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let o = Page::new(page).and_then(|p| GISTPageOpaqueData::from_page(&p)).ok_or_else(|| {
        invalid(format!("not a GiST page: its special space is not the {GIST_SPECIAL_SIZE}-byte GiST one"))
    })?;
    let special = page.len() - GIST_SPECIAL_SIZE;
    match field {
        "downlink" => gist_downlink(page, &o, spec, rng),
        "leaf_tid" => gist_leaf_tid(page, &o, spec, rng),
        "rightlink" => {
            let at = special + GIST_RIGHTLINK_OFFSET;
            let cur = u32_at(page, at).unwrap_or(0);
            let v = match spec.value {
                Some(v) if v > u64::from(u32::MAX) => {
                    return Err(invalid(format!("value {v} does not fit rightlink (32 bits)")))
                }
                Some(v) => v,
                // past the index's end: a scan that follows it cannot read the block
                None => u64::from(spec.nblocks.unwrap_or(1000)) + rng.between(1, 1000),
            };
            set_uint(page, at, 4, v);
            Ok(format!("rightlink {cur} -> {v}"))
        }
        "nsn" => {
            let lsn = Page::new(page).map_or(0, |p| p.header().pd_lsn.lsn());
            let v = match spec.value {
                Some(v) => v,
                // newer than the page itself and than any parent's LSN: every scan takes the page for one split
                // while it came down
                None => lsn.saturating_add(1 << 32).saturating_add(rng.below(1 << 20)),
            };
            let cur = o.nsn;
            set_uint(page, special, 4, v >> 32);
            set_uint(page, special + 4, 4, v & 0xFFFF_FFFF);
            Ok(format!("nsn {:X}/{:X} -> {:X}/{:X}", cur >> 32, cur as u32, v >> 32, v as u32))
        }
        "flags" => scalar(page, special + GIST_FLAGS_OFFSET, 2, "flags", spec, rng),
        _ => Err(invalid(format!("unknown gist field {field}"))),
    }
}

/// An inner page's downlink moved to a sibling's child (that child is then read twice, the lost one never), or
/// to `--value` BLOCK.
fn gist_downlink(page: &mut [u8], o: &GISTPageOpaqueData, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    if o.is_leaf() || o.is_deleted() {
        return Err(invalid("a GiST leaf or deleted page has no downlinks"));
    }
    let items = items_where(page, |b| IndexTupleData::parse(b).is_some());
    if items.is_empty() || (items.len() < 2 && spec.value.is_none()) {
        return Err(invalid("the inner page has fewer than two downlinks to swap"));
    }
    let (item, at, _) = items[rng.below(items.len() as u64) as usize];
    let cur = ItemPointerData::parse(page, at).unwrap_or(ItemPointerData { block: 0, offset: 0 });
    let block = match spec.value {
        Some(v) if v > u64::from(u32::MAX) => return Err(invalid(format!("value {v} does not fit a block number"))),
        Some(v) => v as u32,
        None => {
            let others: Vec<u32> = items
                .iter()
                .filter_map(|&(_, a, _)| ItemPointerData::parse(page, a).map(|t| t.block))
                .filter(|b| *b != cur.block)
                .collect();
            *others
                .get(rng.below(others.len() as u64) as usize)
                .ok_or_else(|| invalid("every downlink leads to one page"))?
        }
    };
    ItemPointerData { block, offset: cur.offset }.write(page, at);
    Ok(format!("item {item} downlink block {} -> {block}", cur.block))
}

/// A leaf's heap TID moved to `--value BLOCK,OFFSET`, or by default to an item number its heap page has not.
fn gist_leaf_tid(page: &mut [u8], o: &GISTPageOpaqueData, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    if !o.is_leaf() || o.is_deleted() {
        return Err(invalid("not a live GiST leaf page"));
    }
    let items = items_where(page, |b| IndexTupleData::parse(b).is_some());
    if items.is_empty() {
        return Err(invalid("the leaf page holds no tuples"));
    }
    let (item, at, _) = items[rng.below(items.len() as u64) as usize];
    let cur = ItemPointerData::parse(page, at).unwrap_or(ItemPointerData { block: 0, offset: 0 });
    let tid = match spec.tid {
        Some((block, offset)) => ItemPointerData { block, offset },
        None => ItemPointerData { block: cur.block, offset: MAX_HEAP_TUPLES_PER_PAGE },
    };
    tid.write(page, at);
    Ok(format!("item {item} heap TID {cur} -> {tid}"))
}

pub(super) fn spgist(page: &mut [u8], blkno: u32, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let s = Page::new(page)
        .and_then(|p| SpGistPageOpaqueData::from_page(&p))
        .ok_or_else(|| invalid("not an SP-GiST page: its special space is not the 8-byte SP-GiST one"))?;
    match field {
        "meta" => {
            if !s.is_meta() {
                return Err(invalid("not the SP-GiST metapage (block 0)"));
            }
            let cur = u32_at(page, SIZE_OF_PAGE_HEADER_DATA).unwrap_or(0);
            let v = match spec.value {
                Some(v) if v > u64::from(u32::MAX) => {
                    return Err(invalid(format!("value {v} does not fit magicNumber (32 bits)")))
                }
                Some(v) => v as u32,
                None => rng.other_than(32, u64::from(SPGIST_MAGIC_NUMBER)) as u32,
            };
            set_uint(page, SIZE_OF_PAGE_HEADER_DATA, 4, u64::from(v));
            Ok(format!("magicNumber 0x{cur:08x} -> 0x{v:08x}"))
        }
        "inner" => spgist_inner(page, &s, spec, rng),
        "leaf_chain" => spgist_leaf_chain(page, blkno, &s, spec, rng),
        _ => Err(invalid(format!("unknown spgist field {field}"))),
    }
}

/// One node of a live inner tuple sent to another node's child (whose chain or subtree it then shares; its own is
/// lost), or to `--value BLOCK,OFFSET`.
fn spgist_inner(page: &mut [u8], s: &SpGistPageOpaqueData, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    if s.is_leaf() || s.is_meta() {
        return Err(invalid("not an SP-GiST inner page"));
    }
    let live_nodes = |b: &[u8]| -> Vec<(usize, ItemPointerData)> {
        let Some(h) = SpGistInnerTupleData::parse(b).filter(|h| h.tupstate == SPGIST_LIVE) else { return Vec::new() };
        inner_nodes(b, &h).unwrap_or_default().into_iter().filter(|(_, p)| p.block != INVALID_BLOCK_NUMBER).collect()
    };
    let need = if spec.tid.is_some() { 1 } else { 2 };
    let items = items_where(page, |b| live_nodes(b).len() >= need);
    if items.is_empty() {
        return Err(invalid(format!("no live inner tuple on the page has {need} node(s) with a child")));
    }
    let (item, at, len) = items[rng.below(items.len() as u64) as usize];
    let nodes = live_nodes(&page[at..at + len]);
    let i = rng.below(nodes.len() as u64) as usize;
    let (node_at, cur) = nodes[i];
    let new = match spec.tid {
        Some((block, offset)) => ItemPointerData { block, offset },
        None => {
            let others: Vec<ItemPointerData> = nodes.iter().map(|n| n.1).filter(|p| *p != cur).collect();
            *others
                .get(rng.below(others.len() as u64) as usize)
                .ok_or_else(|| invalid("every node leads to one tuple"))?
        }
    };
    new.write(page, at + node_at);
    Ok(format!("item {item} node {i} downlink {cur} -> {new}"))
}

/// A live leaf tuple's nextOffset: by default 0, which cuts its chain there (the rest of the chain is lost to
/// scans); or `--value N`.
fn spgist_leaf_chain(
    page: &mut [u8],
    blkno: u32,
    s: &SpGistPageOpaqueData,
    spec: &DamageSpec,
    rng: &mut Rng,
) -> Result<String> {
    if !s.is_leaf() || s.is_meta() {
        return Err(invalid("not an SP-GiST leaf page"));
    }
    if u64::from(blkno) == SPGIST_ROOT_BLKNO || u64::from(blkno) == SPGIST_NULL_BLKNO {
        return Err(invalid("a root leaf page does not chain its tuples"));
    }
    let items = items_where(page, |b| {
        tupstate(b) == Some(SPGIST_LIVE) && SpGistLeafTupleData::parse(b).is_some_and(|l| l.next_offset() != 0)
    });
    if items.is_empty() {
        return Err(invalid("no leaf tuple on the page continues a chain"));
    }
    if spec.tid.is_some() {
        return Err(invalid("leaf_chain takes a number (--value N), not a tid"));
    }
    let (item, at, _) = items[rng.below(items.len() as u64) as usize];
    let info = u16_at(page, at + 4).unwrap_or(0);
    let cur = info & SGLT_NEXTOFFSET_MASK;
    let v = match spec.value {
        Some(v) if v > u64::from(SGLT_NEXTOFFSET_MASK) => {
            return Err(invalid(format!("value {v} does not fit nextOffset (14 bits)")))
        }
        Some(v) => v as u16,
        None => 0,
    };
    set_uint(page, at + 4, 2, u64::from((info & !SGLT_NEXTOFFSET_MASK) | v));
    Ok(format!("item {item} nextOffset {cur} -> {v}"))
}
