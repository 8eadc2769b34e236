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
    /// Index order against heap order, leaf by leaf: the heap TIDs the leaves hold, the runs of TIDs in one heap
    /// block each leaf holds in key order (summed: the heap pages a scan of the leaf visits, a page again for every
    /// run), and of the TIDs following one another in key order, those whose heap block does not go back. An index
    /// in heap order points each leaf into a few blocks, in order; a random key into as many blocks as it has
    /// entries, half of them backwards.
    pub heap_tids: u64,
    pub heap_runs: u64,
    pub tid_pairs: u64,
    pub tid_pairs_in_order: u64,
    /// The physical order of the leaves: (position of the leaf in key order, its block), for at most
    /// [`LEAF_ORDER_SAMPLES`] leaves evenly spaced along the right-links, the first and the last leaf included. An
    /// index filled in key order draws a rising line; one filled at random places (UUIDv4) a cloud.
    pub leaf_order: Vec<(u32, u32)>,
    /// Each leaf's (block, right sibling's block), gathered page by page until the relation is summed (8 bytes a
    /// leaf: 1 MB for a 1 GB index) and then reduced to `leaf_order` by [`BtreeFigures::order_leaves`].
    #[serde(skip)]
    pub leaf_links: Vec<(u32, u32)>,
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
        self.heap_runs += o.heap_runs;
        self.tid_pairs += o.tid_pairs;
        self.tid_pairs_in_order += o.tid_pairs_in_order;
        self.tuples.add(&o.tuples);
        self.leaf_links.extend_from_slice(&o.leaf_links);
        for &(items, pages) in &o.leaf_items {
            match self.leaf_items.binary_search_by_key(&items, |(i, _)| *i) {
                Ok(at) => self.leaf_items[at].1 += pages,
                Err(at) => self.leaf_items.insert(at, (items, pages)),
            }
        }
    }

    /// Walks the leaves along their right-links and keeps every so many as `leaf_order`; `leaf_links` is emptied.
    ///
    /// The walk starts at each leaf no other leaf links to, lowest block first: in a sound index that is only the
    /// leftmost leaf. A leaf the scan did not count (a half-dead one, a page a live scan skipped, damage) ends a
    /// chain, and the leaves after it are walked as a chain of their own; leaves only a cycle reaches (damage) come
    /// last, in block order. Each leaf is walked once, so a damaged chain cannot loop.
    pub fn order_leaves(&mut self) {
        let mut links = std::mem::take(&mut self.leaf_links);
        links.sort_unstable();
        // a block counted twice (it should not be) is one leaf
        links.dedup_by_key(|l| l.0);
        let n = links.len();
        self.leaf_order.clear();
        if n == 0 {
            return;
        }
        let index_of = |block: u32| links.binary_search_by_key(&block, |l| l.0).ok();
        let mut linked_to = vec![false; n];
        for &(_, next) in &links {
            // btpo_next 0 is the rightmost leaf's: block 0 is the metapage, never a leaf
            if let Some(i) = index_of(next).filter(|_| next != 0) {
                linked_to[i] = true;
            }
        }
        let samples = n.min(LEAF_ORDER_SAMPLES);
        // the k-th sample is the leaf at position k * (n - 1) / (samples - 1): evenly spaced, both ends included
        let wanted =
            |k: usize| if samples < 2 { 0 } else { (k as u64 * (n as u64 - 1) / (samples as u64 - 1)) as usize };
        let (mut walked, mut pos, mut k) = (vec![false; n], 0usize, 0usize);
        for head in (0..n).filter(|&i| !linked_to[i]).chain(0..n) {
            let mut i = head;
            while !walked[i] {
                walked[i] = true;
                if k < samples && pos == wanted(k) {
                    self.leaf_order.push((pos as u32, links[i].0));
                    k += 1;
                }
                pos += 1;
                match index_of(links[i].1).filter(|_| links[i].1 != 0) {
                    Some(j) => i = j,
                    None => break,
                }
            }
        }
    }
}

/// At most this many leaves are kept in `leaf_order`: enough to draw the order of any index, small at any size.
pub const LEAF_ORDER_SAMPLES: usize = 512;

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
        // block numbers are 32-bit in PostgreSQL (BlockNumber), so a block of a scanned fork fits
        f.leaf_links.push((block as u32, next));
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

/// The heap blocks a leaf's entries point into, in key order (see [`BtreeFigures::heap_runs`]).
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
    // one pass, no sort: a leaf's runs are its distinct blocks when the index follows the heap, its entries when not
    f.heap_runs += blocks.first().map_or(0, |_| 1 + blocks.windows(2).filter(|w| w[1] != w[0]).count() as u64);
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

    fn ordered(links: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut f = BtreeFigures { leaf_links: links.to_vec(), ..Default::default() };
        f.order_leaves();
        assert!(f.leaf_links.is_empty());
        f.leaf_order
    }

    #[test]
    fn leaves_are_ordered_along_their_right_links() {
        // key order 5, 2, 9, 3: the leftmost leaf is the one no leaf links to
        assert_eq!(ordered(&[(9, 3), (2, 9), (3, 0), (5, 2)]), vec![(0, 5), (1, 2), (2, 9), (3, 3)]);
        // a leaf missing from the count (block 7) splits the chain in two, walked lowest head first; a cycle last
        assert_eq!(
            ordered(&[(4, 7), (1, 4), (8, 0), (6, 8), (11, 12), (12, 11)]),
            vec![(0, 1), (1, 4), (2, 6), (3, 8), (4, 11), (5, 12)]
        );
        assert!(ordered(&[]).is_empty());
    }

    #[test]
    fn a_large_index_keeps_evenly_spaced_samples_with_both_ends() {
        // 100,000 leaves in reverse block order along the chain
        let n = 100_000u32;
        let links: Vec<(u32, u32)> = (1..=n).map(|b| (b, b - 1)).collect();
        let order = ordered(&links);
        assert_eq!(order.len(), LEAF_ORDER_SAMPLES);
        assert_eq!((order[0], order[order.len() - 1]), ((0, n), (n - 1, 1)));
        assert!(order.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1));
    }
}
