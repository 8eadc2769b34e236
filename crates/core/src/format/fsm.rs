//! The free space map fork (`src/include/storage/fsm_internals.h`, `src/backend/storage/freespace/freespace.c`,
//! `fsmpage.c`): a tree of FSM pages, each holding a binary tree of one-byte free space categories whose leaves
//! are the slots of heap blocks. The sizes depend on the block size, so they are functions of `blcksz` here where
//! PostgreSQL has compile-time macros; the names are PostgreSQL's.
#![allow(non_snake_case)]

use crate::format::bytes::{maxalign, u8_at};
use crate::format::page::SIZE_OF_PAGE_HEADER_DATA;

/// `offsetof(FSMPageData, fp_nodes)` (fsm_internals.h): `fp_next_slot` is an `int`, then the node bytes.
pub const FSM_PAGE_DATA_FP_NODES: usize = 4;

/// `NodesPerPage` (fsm_internals.h): BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - offsetof(FSMPageData, fp_nodes).
pub const fn NodesPerPage(blcksz: usize) -> usize {
    blcksz - maxalign(SIZE_OF_PAGE_HEADER_DATA) - FSM_PAGE_DATA_FP_NODES
}

/// `NonLeafNodesPerPage` (fsm_internals.h): BLCKSZ / 2 - 1.
pub const fn NonLeafNodesPerPage(blcksz: usize) -> usize {
    blcksz / 2 - 1
}

/// `LeafNodesPerPage` (fsm_internals.h): NodesPerPage - NonLeafNodesPerPage.
pub const fn LeafNodesPerPage(blcksz: usize) -> usize {
    NodesPerPage(blcksz) - NonLeafNodesPerPage(blcksz)
}

/// `SlotsPerFSMPage` (fsm_internals.h): the leaves, one heap block each (4069 with 8 KB pages).
pub const fn SlotsPerFSMPage(blcksz: usize) -> usize {
    LeafNodesPerPage(blcksz)
}

/// `FSM_TREE_DEPTH` (freespace.c): levels needed to address 2^32-1 heap blocks, 3 when a page has at least 1626
/// slots (8 KB pages), else 4.
pub const fn FSM_TREE_DEPTH(blcksz: usize) -> u32 {
    if SlotsPerFSMPage(blcksz) >= 1626 {
        3
    } else {
        4
    }
}

/// `FSM_BOTTOM_LEVEL` (freespace.c): the leaf level, whose slots are heap blocks.
pub const FSM_BOTTOM_LEVEL: u32 = 0;

/// `FSMAddress` (freespace.c): an FSM page by its level and its number within that level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FSMAddress {
    pub level: u32,
    pub logpageno: u64,
}

/// `fsm_get_location` (freespace.c): the leaf page and slot of heap block `heapblk`.
pub fn fsm_get_location(heapblk: u64, blcksz: usize) -> (FSMAddress, usize) {
    let slots = SlotsPerFSMPage(blcksz) as u64;
    (FSMAddress { level: FSM_BOTTOM_LEVEL, logpageno: heapblk / slots }, (heapblk % slots) as usize)
}

/// `fsm_get_heap_blk` (freespace.c): the heap block of `slot` on leaf page `addr`.
pub fn fsm_get_heap_blk(addr: FSMAddress, slot: usize, blcksz: usize) -> u64 {
    addr.logpageno * SlotsPerFSMPage(blcksz) as u64 + slot as u64
}

/// `fsm_logical_to_physical` (freespace.c): the block of the FSM fork holding page `addr`. The tree is stored
/// depth-first: every leaf page is preceded by the upper pages on its path that have not appeared yet.
pub fn fsm_logical_to_physical(addr: FSMAddress, blcksz: usize) -> u64 {
    let slots = SlotsPerFSMPage(blcksz) as u64;
    // The logical number of the first leaf page below `addr`.
    let mut leafno = addr.logpageno;
    for _ in 0..addr.level {
        leafno = leafno.saturating_mul(slots);
    }
    // Count the upper level pages needed to address that leaf page.
    let mut pages: u64 = 0;
    for _ in 0..FSM_TREE_DEPTH(blcksz) {
        pages = pages.saturating_add(leafno + 1);
        leafno /= slots;
    }
    // A page above the bottom level comes before its first leaf, not after it.
    pages - u64::from(addr.level) - 1
}

/// `fsm_get_avail` (fsmpage.c) of a leaf slot: the category byte of `slot` on an FSM page image (the page header
/// included). `None` when the page is too short to hold it.
pub fn fsm_get_avail(page: &[u8], slot: usize, blcksz: usize) -> Option<u8> {
    if slot >= SlotsPerFSMPage(blcksz) {
        return None;
    }
    // PageGetContents: the FSMPageData starts after the MAXALIGNed page header.
    let fp_nodes = maxalign(SIZE_OF_PAGE_HEADER_DATA) + FSM_PAGE_DATA_FP_NODES;
    u8_at(page, fp_nodes + NonLeafNodesPerPage(blcksz) + slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: usize = 8192;

    #[test]
    fn sizes_of_8k_pages() {
        assert_eq!(NodesPerPage(B), 8164);
        assert_eq!(NonLeafNodesPerPage(B), 4095);
        assert_eq!(SlotsPerFSMPage(B), 4069);
        assert_eq!(FSM_TREE_DEPTH(B), 3);
        assert_eq!(FSM_TREE_DEPTH(1024), 4);
    }

    #[test]
    fn leaf_pages_sit_after_their_parents() {
        let leaf = |n| fsm_logical_to_physical(FSMAddress { level: 0, logpageno: n }, B);
        // root 0, first level-1 page 1, leaves 2, 3, ... up to the 4069th; then the next level-1 page.
        assert_eq!(leaf(0), 2);
        assert_eq!(leaf(1), 3);
        assert_eq!(leaf(4068), 4070);
        assert_eq!(leaf(4069), 4072);
        assert_eq!(fsm_logical_to_physical(FSMAddress { level: 2, logpageno: 0 }, B), 0);
        assert_eq!(fsm_logical_to_physical(FSMAddress { level: 1, logpageno: 1 }, B), 4071);
        let (addr, slot) = fsm_get_location(4069 + 5, B);
        assert_eq!((addr.logpageno, slot), (1, 5));
        assert_eq!(fsm_get_heap_blk(addr, slot, B), 4074);
    }
}
