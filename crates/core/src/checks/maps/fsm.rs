//! A free space map page against itself, and a heap page's free space against its FSM leaf
//! (storage/freespace/fsmpage.c, freespace.c). Each FSM page holds a binary tree of one-byte categories in
//! `fp_nodes`: node n's children are 2n+1 and 2n+2, and `fsm_set_avail` keeps every upper node the max of its
//! children whenever a leaf changes, so within a page the tree is always consistent unless the bytes were damaged
//! (the server then rebuilds the page as a search meets it, `fsm_rebuild_page`: no error, inserts meanwhile may be
//! sent to full pages or miss free ones). Across pages and against the heap the map is only a hint, updated lazily
//! (leaves by inserts and VACUUM, upper pages by `FreeSpaceMapVacuum`): differences there are information.

use crate::finding::{Code, Finding};
use crate::format::bytes::{maxalign, u8_at};
use crate::format::fsm::{NodesPerPage, NonLeafNodesPerPage, FSM_PAGE_DATA_FP_NODES};
use crate::format::itemid::LP_UNUSED;
use crate::format::page::{Page, SIZE_OF_PAGE_HEADER_DATA};

/// `FSM_CATEGORIES` (freespace.c).
const FSM_CATEGORIES: usize = 256;
/// `sizeof(ItemIdData)` (itemid.h).
const SIZE_OF_ITEM_ID: usize = 4;
/// `MaxHeapTuplesPerPage` (htup_details.h), as a function of the block size.
fn max_heap_tuples_per_page(blcksz: usize) -> usize {
    // (BLCKSZ - SizeOfPageHeaderData) / (MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData))
    (blcksz - SIZE_OF_PAGE_HEADER_DATA) / (maxalign(23) + SIZE_OF_ITEM_ID)
}

/// Where `fp_nodes` starts on an FSM page image: after the MAXALIGNed header (PageGetContents) and `fp_next_slot`.
fn fp_nodes_at() -> usize {
    maxalign(SIZE_OF_PAGE_HEADER_DATA) + FSM_PAGE_DATA_FP_NODES
}

/// `fp_nodes[0]`, the page's root: the most free space any block below it has.
pub fn fsm_root(page: &[u8]) -> Option<u8> {
    u8_at(page, fp_nodes_at())
}

/// `fp_nodes[node]` of an FSM page image.
pub fn fsm_node(page: &[u8], node: usize) -> Option<u8> {
    u8_at(page, fp_nodes_at() + node)
}

/// The upper nodes of one FSM page that are not the max of their children (`fsm_set_avail`, `fsm_rebuild_page`,
/// fsmpage.c): (node,
/// value, max of its children), in node order. Empty for a page too short to hold the tree.
pub fn inconsistent_nodes(page: &[u8], blcksz: usize) -> Vec<(usize, u8, u8)> {
    let mut out = Vec::new();
    let base = fp_nodes_at();
    let nodes = NodesPerPage(blcksz);
    let Some(tree) = page.get(base..base + nodes) else { return out };
    for n in 0..NonLeafNodesPerPage(blcksz) {
        // as fsm_rebuild_page computes it: the last upper nodes have one child or none on the page
        let l = 2 * n + 1;
        let want = tree.get(l).copied().unwrap_or(0).max(tree.get(l + 1).copied().unwrap_or(0));
        if tree[n] != want {
            out.push((n, tree[n], want));
        }
    }
    out
}

/// `fsm.tree_inconsistent` for FSM block `fsm_block`, when some upper node is not the max of its children.
pub fn fsm_tree_finding(page: &[u8], fsm_block: u64, blcksz: usize) -> Option<Finding> {
    let bad = inconsistent_nodes(page, blcksz);
    let &(node, value, want) = bad.first()?;
    Some(Finding::new(
        Code::FsmTreeInconsistent,
        Some(fsm_block),
        None,
        format!(
            "{} upper node(s) of this free space map page are not the max of their children: node {node} holds \
             category {value}, its children at most {want}",
            bad.len()
        ),
    ))
}

/// `fsm_space_avail_to_cat` (freespace.c): the category VACUUM records for `avail` free bytes.
pub fn space_avail_to_cat(avail: usize, blcksz: usize) -> u8 {
    // MaxFSMRequestSize is MaxHeapTupleSize: BLCKSZ - MAXALIGN(SizeofHeapTupleHeader + sizeof(ItemIdData))
    let max_request = blcksz - maxalign(23 + SIZE_OF_ITEM_ID);
    if avail >= max_request {
        return 255;
    }
    (avail / (blcksz / FSM_CATEGORIES)).min(254) as u8
}

/// `PageGetHeapFreeSpace` (bufpage.c): the room for one more tuple and its line pointer on a heap page.
pub fn heap_free_space(page: &Page<'_>, blcksz: usize) -> usize {
    let h = page.header();
    let space = usize::from(h.pd_upper).saturating_sub(usize::from(h.pd_lower));
    if space < SIZE_OF_ITEM_ID {
        return 0;
    }
    let space = space - SIZE_OF_ITEM_ID;
    // a full line pointer array leaves room only where a line pointer is unused
    if usize::from(h.max_offset_number()) >= max_heap_tuples_per_page(blcksz)
        && !page.item_ids().any(|(_, id)| id.lp_flags() == LP_UNUSED)
    {
        return 0;
    }
    space
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::BLCKSZ;

    fn page_with(nodes: &[(usize, u8)]) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        for &(n, v) in nodes {
            p[fp_nodes_at() + n] = v;
        }
        p
    }

    #[test]
    fn a_tree_built_as_fsm_set_avail_builds_it_is_consistent() {
        // leaf 0 is node NonLeafNodesPerPage; set it and every node on its path to the root
        let mut n = NonLeafNodesPerPage(BLCKSZ);
        let mut nodes = vec![(n, 7u8)];
        while n > 0 {
            n = (n - 1) / 2;
            nodes.push((n, 7));
        }
        let p = page_with(&nodes);
        assert!(inconsistent_nodes(&p, BLCKSZ).is_empty());
        assert_eq!(fsm_root(&p), Some(7));
        // the root raised above its children: one node wrong
        let mut bad = p.clone();
        bad[fp_nodes_at()] = 200;
        assert_eq!(inconsistent_nodes(&bad, BLCKSZ), vec![(0, 200, 7)]);
        let f = fsm_tree_finding(&bad, 2, BLCKSZ).expect("a finding");
        assert_eq!((f.code, f.block), (Code::FsmTreeInconsistent, Some(2)));
        // short pages: nothing, no panic
        assert!(inconsistent_nodes(&bad[..100], BLCKSZ).is_empty());
    }

    #[test]
    fn categories_are_freespace_c_s() {
        assert_eq!(space_avail_to_cat(0, BLCKSZ), 0);
        assert_eq!(space_avail_to_cat(31, BLCKSZ), 0);
        assert_eq!(space_avail_to_cat(32, BLCKSZ), 1);
        assert_eq!(space_avail_to_cat(8159, BLCKSZ), 254);
        assert_eq!(space_avail_to_cat(8160, BLCKSZ), 255);
        assert_eq!(max_heap_tuples_per_page(BLCKSZ), 291);
    }
}
