//! One page's share of the storage-health figures, as PostgreSQL's own statistics functions count them
//! (contrib/pgstattuple: pgstattuple.c for heaps and index tuples, pgstatindex.c for btrees).
//!
//! Free space changed definition in PostgreSQL 18: up to 17 it is `PageGetHeapFreeSpace` (heaps) and
//! `PageGetFreeSpace` (indexes), one line pointer less than the gap between `pd_lower` and `pd_upper`; from 18 it is
//! `PageGetExactFreeSpace`, the gap itself (storage/page/bufpage.c). The caller says which to count.

use serde::Serialize;

use crate::format::btree::{leaf_heap_tids, BTMetaPageData, BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD, BTP_LEAF};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::{LP_DEAD, LP_UNUSED, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{Page, PD_HAS_FREE_LINES, SIZE_OF_PAGE_HEADER_DATA};

/// The server major version whose definitions are counted with: the free space of PostgreSQL 18 and later is exact.
#[derive(Debug, Clone, Copy)]
pub struct Definitions {
    pub exact_free_space: bool,
}

impl Definitions {
    pub fn for_major(major: u32) -> Definitions {
        Definitions { exact_free_space: major >= 18 }
    }
}

/// pgstattuple's figures (`pgstattuple_type`, pgstattuple.c), summed over pages.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct TupleFigures {
    pub tuple_count: u64,
    pub tuple_len: u64,
    pub dead_tuple_count: u64,
    pub dead_tuple_len: u64,
    pub free_space: u64,
    /// Heap tuples whose fate the status files could not settle (counted as live, as the server's dirty
    /// snapshot counts a running transaction's): not a pgstattuple figure.
    pub undecided: u64,
}

impl TupleFigures {
    pub fn add(&mut self, o: &TupleFigures) {
        self.tuple_count += o.tuple_count;
        self.tuple_len += o.tuple_len;
        self.dead_tuple_count += o.dead_tuple_count;
        self.dead_tuple_len += o.dead_tuple_len;
        self.free_space += o.free_space;
        self.undecided += o.undecided;
    }
}

/// `PageGetExactFreeSpace`: the gap between the line pointers and the tuples, never negative.
pub(super) fn exact_free(page: &Page<'_>) -> u64 {
    let h = page.header();
    u64::from(h.pd_upper.saturating_sub(h.pd_lower))
}

/// `PageGetFreeSpace`: the gap less the line pointer a new tuple needs; 0 when it does not fit one.
pub(super) fn free_less_one_pointer(page: &Page<'_>) -> u64 {
    exact_free(page).saturating_sub(SIZE_OF_ITEM_ID_DATA as u64)
}

/// `MaxHeapTuplesPerPage` (access/htup_details.h): line pointers with a minimal tuple each.
fn max_heap_tuples_per_page(blcksz: usize) -> usize {
    (blcksz - SIZE_OF_PAGE_HEADER_DATA) / (24 + SIZE_OF_ITEM_ID_DATA)
}

/// `PageGetHeapFreeSpace`: as `PageGetFreeSpace`, but 0 on a page whose line pointer array is full with none unused.
pub(super) fn heap_free(page: &Page<'_>) -> u64 {
    let space = free_less_one_pointer(page);
    let nline = usize::from(page.header().max_offset_number());
    if space > 0 && nline >= max_heap_tuples_per_page(page.len()) {
        let has_unused = page.header().pd_flags & PD_HAS_FREE_LINES != 0
            && page.item_ids().any(|(_, id)| id.lp_flags() == LP_UNUSED);
        if !has_unused {
            return 0;
        }
    }
    space
}

/// pgstatindex's figures for a btree (`BTIndexStat`, pgstatindex.c) and pgstattuple's for its tuples, summed over
/// the pages after the metapage; the metapage's version, level and root.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BtreeFigures {
    pub version: u32,
    pub tree_level: u32,
    pub root_block_no: u32,
    pub internal_pages: u64,
    pub leaf_pages: u64,
    pub empty_pages: u64,
    pub deleted_pages: u64,
    /// Space leaves can hold, and of it free: avg_leaf_density = 100 - 100 * free / max_avail.
    pub max_avail: u64,
    pub leaf_free_space: u64,
    /// Leaves whose right sibling lies at an earlier block: leaf_fragmentation = 100 * fragments / leaf_pages.
    pub fragments: u64,
    /// Leaves whose right sibling is the very next block (read in order by a scan of the index).
    pub next_adjacent: u64,
    /// Leaf pages by the number of items after the high key: (items, pages), ascending.
    pub leaf_items: Vec<(u32, u64)>,
    /// Index order against heap order, leaf by leaf: the heap TIDs the leaves hold, the distinct heap blocks each
    /// leaf points into (summed), and of the TIDs following one another in key order, those whose heap block does not
    /// go back. An index in heap order points each leaf into a few blocks, in order; a random key into as many
    /// blocks as it has entries, half of them backwards.
    pub heap_tids: u64,
    pub heap_blocks: u64,
    pub tid_pairs: u64,
    pub tid_pairs_in_order: u64,
    /// pgstattuple of the index: leaf items (a posting list is one), LP_DEAD ones dead.
    pub tuples: TupleFigures,
}

impl BtreeFigures {
    pub fn add(&mut self, o: &BtreeFigures) {
        if o.version != 0 {
            (self.version, self.tree_level, self.root_block_no) = (o.version, o.tree_level, o.root_block_no);
        }
        self.internal_pages += o.internal_pages;
        self.leaf_pages += o.leaf_pages;
        self.empty_pages += o.empty_pages;
        self.deleted_pages += o.deleted_pages;
        self.max_avail += o.max_avail;
        self.leaf_free_space += o.leaf_free_space;
        self.fragments += o.fragments;
        self.next_adjacent += o.next_adjacent;
        self.heap_tids += o.heap_tids;
        self.heap_blocks += o.heap_blocks;
        self.tid_pairs += o.tid_pairs;
        self.tid_pairs_in_order += o.tid_pairs_in_order;
        self.tuples.add(&o.tuples);
        for &(items, pages) in &o.leaf_items {
            match self.leaf_items.binary_search_by_key(&items, |(i, _)| *i) {
                Ok(at) => self.leaf_items[at].1 += pages,
                Err(at) => self.leaf_items.insert(at, (items, pages)),
            }
        }
    }
}

/// One btree page (`block` of the index) into `f`.
pub fn btree_page(page: &Page<'_>, block: u64, defs: Definitions, f: &mut BtreeFigures) {
    let blcksz = page.len() as u64;
    if block == 0 {
        if let Some(m) = BTMetaPageData::parse(page.bytes()) {
            (f.version, f.tree_level, f.root_block_no) = (m.btm_version, m.btm_level, m.btm_root);
        }
        return;
    }
    let opaque = BTPageOpaqueData::from_page(page);
    pgstatindex_page(page, block, opaque.as_ref(), defs, f);
    // pgstattuple's pass over the same page (pgstat_btree_page)
    if page.header().is_new() {
        f.tuples.free_space += blcksz;
    } else if let Some(o) = opaque {
        if o.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
            f.tuples.free_space += blcksz;
        } else if o.btpo_flags & BTP_LEAF != 0 {
            index_items(page, first_data_key(&o), defs, &mut f.tuples);
        }
    }
}

/// pgstatindex's look at a page: the opaque data wherever pd_special says it is, so an all-zero page reads as
/// flags 0, an internal page.
fn pgstatindex_page(
    page: &Page<'_>,
    block: u64,
    opaque: Option<&BTPageOpaqueData>,
    defs: Definitions,
    f: &mut BtreeFigures,
) {
    let flags = opaque.map_or(0, |o| o.btpo_flags);
    if flags & BTP_DELETED != 0 {
        f.deleted_pages += 1;
    } else if flags & BTP_HALF_DEAD != 0 {
        f.empty_pages += 1;
    } else if flags & BTP_LEAF != 0 {
        let special = u64::from(page.header().pd_special);
        f.max_avail += special.saturating_sub(SIZE_OF_PAGE_HEADER_DATA as u64);
        f.leaf_free_space += if defs.exact_free_space { exact_free(page) } else { free_less_one_pointer(page) };
        f.leaf_pages += 1;
        let next = opaque.map_or(0, |o| o.btpo_next);
        f.fragments += u64::from(next != 0 && u64::from(next) < block);
        f.next_adjacent += u64::from(next != 0 && u64::from(next) == block + 1);
        let first = opaque.map_or(1, first_data_key);
        let items = u32::from(page.header().max_offset_number()).saturating_sub(u32::from(first) - 1);
        match f.leaf_items.binary_search_by_key(&items, |(i, _)| *i) {
            Ok(at) => f.leaf_items[at].1 += 1,
            Err(at) => f.leaf_items.insert(at, (items, 1)),
        }
        heap_order(page, first, f);
    } else {
        f.internal_pages += 1;
    }
}

/// The heap blocks a leaf's entries point into, in key order (see [`BtreeFigures::heap_blocks`]).
fn heap_order(page: &Page<'_>, first: u16, f: &mut BtreeFigures) {
    SCRATCH.with_borrow_mut(|(tids, blocks)| heap_order_in(page, first, f, tids, blocks));
}

thread_local! {
    /// Each worker's buffers for [`heap_order`], reused leaf after leaf.
    static SCRATCH: std::cell::RefCell<(Vec<ItemPointerData>, Vec<u32>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

fn heap_order_in(
    page: &Page<'_>,
    first: u16,
    f: &mut BtreeFigures,
    tids: &mut Vec<ItemPointerData>,
    blocks: &mut Vec<u32>,
) {
    blocks.clear();
    for (off, id) in page.item_ids() {
        if off < first || id.lp_flags() == LP_UNUSED {
            continue;
        }
        if let Some(t) = page.item_bytes(id) {
            if leaf_heap_tids(t, tids) {
                blocks.extend(tids.iter().map(|t| t.block));
            }
        }
    }
    f.heap_tids += blocks.len() as u64;
    f.tid_pairs += blocks.len().saturating_sub(1) as u64;
    f.tid_pairs_in_order += blocks.windows(2).filter(|w| w[1] >= w[0]).count() as u64;
    blocks.sort_unstable();
    blocks.dedup();
    f.heap_blocks += blocks.len() as u64;
}

/// `P_FIRSTDATAKEY`: item 1 is the high key except on the rightmost page of a level.
fn first_data_key(o: &BTPageOpaqueData) -> u16 {
    if o.btpo_next == 0 {
        1
    } else {
        2
    }
}

/// `pgstat_index_page`: the page's free space and its items from `first`, LP_DEAD ones counted dead.
pub(super) fn index_items(page: &Page<'_>, first: u16, defs: Definitions, f: &mut TupleFigures) {
    f.free_space += if defs.exact_free_space { exact_free(page) } else { free_less_one_pointer(page) };
    for (off, id) in page.item_ids() {
        if off < first {
            continue;
        }
        let len = u64::from(id.lp_len());
        if id.lp_flags() == LP_DEAD {
            f.dead_tuple_count += 1;
            f.dead_tuple_len += len;
        } else {
            f.tuple_count += 1;
            f.tuple_len += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_all_zero_btree_page_is_internal_with_all_its_space_free() {
        let zero = vec![0u8; 8192];
        let mut f = BtreeFigures::default();
        btree_page(&Page::new(&zero).unwrap(), 3, Definitions::for_major(18), &mut f);
        assert_eq!((f.internal_pages, f.leaf_pages, f.tuples.free_space), (1, 0, 8192));
    }
}
