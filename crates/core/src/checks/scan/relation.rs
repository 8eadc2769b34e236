//! Relation-wide checks, once every chunk of a relation is in: all-zero pages with evidence that rows were there,
//! the visibility map and the free space map past the fork's end, btree sibling links, levels and flags.

use std::collections::HashMap;
use std::path::Path;

use super::fsm::{fsm_beyond_end_finding, fsm_blocks_beyond_end};
use super::unit::{reread_page, BtLink, ChunkSummary};
use super::ScanOptions;
use crate::finding::{Code, Finding};
use crate::format::btree::{BTP_DELETED, BTP_HALF_DEAD, BTP_LEAF, P_NONE};
use crate::format::page::{PageKind, BTP_META};
use crate::sources::relfile::Relation;
use crate::sources::relpath::Fork;

/// Relation-wide checks once every chunk of the relation is in.
pub(super) fn relation_checks(
    inside: &mut Vec<u64>,
    fork: Fork,
    skipped: &[u64],
    rel_nblocks: u64,
    kind: Option<PageKind>,
    chunks: &mut [ChunkSummary],
    vm_all_visible: Option<&[u64]>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if fork == Fork::Main {
        zero_page_checks(&mut out, inside, kind, chunks, vm_all_visible);
        // The visibility map marks blocks past the end of the fork: the file lost its tail.
        if let Some(vm) = vm_all_visible {
            out.extend(vm_beyond_end(vm, rel_nblocks));
        }
    }
    // Btree sibling links, levels and flags, across pages.
    let mut links: Vec<BtLink> = chunks.iter_mut().flat_map(|c| std::mem::take(&mut c.btree_links)).collect();
    if !links.is_empty() {
        links.sort_unstable_by_key(|l| l.0);
        btree_checks(&mut out, &links, skipped);
    }
    if matches!(kind, Some(PageKind::Hash | PageKind::Brin)) && fork == Fork::Main {
        let mut zero: Vec<u64> = chunks.iter().flat_map(|c| c.zero_blocks.iter().copied()).collect();
        zero.sort_unstable();
        out.extend(super::hashbrin::checks(
            chunks.iter_mut().map(|c| std::mem::take(&mut c.am)),
            &zero,
            skipped,
            rel_nblocks,
        ));
    }
    let mut gin: Vec<super::gin::GinLink> = chunks.iter_mut().flat_map(|c| std::mem::take(&mut c.gin_links)).collect();
    if !gin.is_empty() {
        gin.sort_unstable_by_key(|l| l.0);
        let meta = chunks.iter().find_map(|c| c.gin_meta);
        super::gin::gin_checks(&mut out, &gin, meta.as_ref(), skipped);
    }
    if matches!(kind, Some(PageKind::Gist | PageKind::SpGist)) && fork == Fork::Main {
        super::gist::relation_checks(&mut out, chunks, rel_nblocks, skipped);
    }
    out
}

/// The all-zero pages of a main fork: findings for those with evidence that rows were there (the visibility map
/// says all-visible; inside an index), and in `inside` the rest of those before in-use pages.
fn zero_page_checks(
    out: &mut Vec<Finding>,
    inside: &mut Vec<u64>,
    kind: Option<PageKind>,
    chunks: &[ChunkSummary],
    vm_all_visible: Option<&[u64]>,
) {
    let last_nonempty = chunks.iter().filter_map(|c| c.last_nonempty).max();
    let is_index = matches!(kind, Some(PageKind::Btree | PageKind::Gin));
    for c in chunks.iter() {
        for &zb in &c.zero_blocks {
            let vm_set = vm_all_visible.is_some_and(|v| v.binary_search(&zb).is_ok());
            if vm_set {
                out.push(Finding::new(
                    Code::PageHeaderZeroedAllVisible,
                    Some(zb),
                    None,
                    "all-zero page, but the visibility map marks this block all-visible: rows were here".to_string(),
                ));
            } else if is_index && last_nonempty.is_some_and(|l| l > zb) {
                out.push(Finding::new(
                    Code::IndexZeroPage,
                    Some(zb),
                    None,
                    "all-zero page inside the index, before pages that are in use".to_string(),
                ));
            } else if last_nonempty.is_some_and(|l| l > zb) {
                // Concurrent inserts extend a relation several pages at a time (since 9.6), leaving
                // all-zero pages before used ones in healthy clusters: alone this is no evidence.
                inside.push(zb);
            }
        }
    }
}

/// `file.vm_beyond_end`: the all-visible blocks `vm` (sorted) at or past the fork's `nblocks`.
fn vm_beyond_end(vm: &[u64], nblocks: u64) -> Option<Finding> {
    let beyond: Vec<u64> = vm.iter().copied().filter(|b| *b >= nblocks).collect();
    let first = beyond.first()?;
    Some(Finding::new(
        Code::FileVmBeyondEnd,
        Some(*first),
        None,
        format!(
            "the visibility map marks {} block(s) from {first} on all-visible, but the relation ends at block \
             {nblocks}",
            beyond.len()
        ),
    ))
}

/// Every btree page's flags against its level, and its sibling links against its neighbours' (`links` sorted by
/// block). A neighbour in `skipped` (sorted) was not judged: written after a live scan's redo point, or while a
/// backup copied it, so it may be newer than the page that links to it (a split or a deletion since). Only pages
/// both judged are compared.
fn btree_checks(out: &mut Vec<Finding>, links: &[BtLink], skipped: &[u64]) {
    let find = |blk: u32| links.binary_search_by_key(&u64::from(blk), |l| l.0).ok().map(|i| links[i]);
    let judged = |blk: u32| skipped.binary_search(&u64::from(blk)).is_err();
    for &(block, prev, next, level, flags) in links {
        let dead = flags & (BTP_DELETED | BTP_HALF_DEAD) != 0;
        if !btree_flag_checks(out, block, level, flags, dead) || dead || next == P_NONE {
            continue;
        }
        match find(next) {
            None if !judged(next) => {}
            None => out.push(Finding::new(
                Code::IndexSiblingLink,
                Some(block),
                None,
                format!("right sibling {next} is not a btree page of this index"),
            )),
            Some((_, nprev, _, nlevel, nflags)) => {
                if nflags & (BTP_DELETED | BTP_HALF_DEAD) == 0 && (nprev as u64 != block || nlevel != level) {
                    out.push(Finding::new(
                        Code::IndexSiblingLink,
                        Some(block),
                        None,
                        format!(
                            "right sibling {next} points back to {nprev} (level {nlevel}), not to this page (level \
                             {level})"
                        ),
                    ));
                }
            }
        }
        if prev != P_NONE && judged(prev) && find(prev).is_none() {
            out.push(Finding::new(
                Code::IndexSiblingLink,
                Some(block),
                None,
                format!("left sibling {prev} is not a btree page of this index"),
            ));
        }
    }
}

/// One btree page's flags: the metapage flag only on block 0 and block 0 only the metapage, the leaf flag as the
/// level says. False for the metapage and block 0, whose sibling links mean nothing.
fn btree_flag_checks(out: &mut Vec<Finding>, block: u64, level: u32, flags: u16, dead: bool) -> bool {
    if flags & BTP_META != 0 {
        if block != 0 {
            out.push(Finding::new(
                Code::IndexBtreeFlags,
                Some(block),
                None,
                "a metapage flag on a block other than 0".to_string(),
            ));
        }
        return false;
    }
    if block == 0 {
        out.push(Finding::new(
            Code::IndexBtreeFlags,
            Some(block),
            None,
            format!("block 0 of a btree must be the metapage, flags are 0x{flags:04x}"),
        ));
        return false;
    }
    let leaf = flags & BTP_LEAF != 0;
    if !dead && leaf != (level == 0) {
        out.push(Finding::new(
            Code::IndexBtreeFlags,
            Some(block),
            None,
            format!("level {level} disagrees with the leaf flag (flags 0x{flags:04x})"),
        ));
    }
    true
}

/// `file.fsm_beyond_end` for a main fork of `nblocks` blocks, from its FSM fork `fsm`.
pub(super) fn fsm_check(root: &Path, fsm: &Relation, nblocks: u64, opts: &ScanOptions) -> Option<Finding> {
    let read = |fsm_block: u64| {
        let segno = fsm_block / u64::from(opts.relseg_size);
        let seg = fsm.segments.iter().find(|s| u64::from(s.segno) == segno)?;
        let offset = (fsm_block % u64::from(opts.relseg_size)) * u64::from(opts.blcksz);
        reread_page(&root.join(&seg.path), offset, opts.blcksz as usize)
    };
    if opts.live_redo_lsn.is_some() {
        // A running server's map on disk is not the map it follows, either way: it extends the main fork
        // before it records the new blocks' space (hio.c), and when VACUUM truncates the table it clears the
        // map's slots in shared buffers and cuts the main fork's file at once (freespace.c,
        // FreeSpaceMapPrepareTruncateRel; storage.c, RelationTruncate), so until the next checkpoint writes
        // that page the file still offers the blocks that are gone. The map carries no LSN to tell either case
        // from damage: it is judged offline only.
        return None;
    }
    let beyond = fsm_blocks_beyond_end(nblocks, opts.blcksz as usize, opts.checksums, read);
    fsm_beyond_end_finding(&beyond, nblocks)
}

/// Index entries into the all-zero pages of heap `ri` (`zero_refs`: (heap, block) -> entries): each such page had
/// rows, lost. Its finding replaces any other all-zero finding of the block in `rel_findings`.
pub(super) fn zero_ref_checks(rel_findings: &mut Vec<Finding>, zero_refs: &HashMap<(usize, u64), u32>, ri: usize) {
    let mut referenced: Vec<(u64, u32)> =
        zero_refs.iter().filter(|((hi, _), _)| *hi == ri).map(|((_, b), n)| (*b, *n)).collect();
    referenced.sort_unstable();
    for (b, n) in referenced {
        rel_findings.retain(|f| {
            !(f.block == Some(b)
                && matches!(f.code, Code::PageHeaderZeroedReferenced | Code::PageHeaderZeroedAllVisible))
        });
        rel_findings.push(Finding::new(
            Code::PageHeaderZeroedReferenced,
            Some(b),
            None,
            format!("all-zero page, but {n} index entries point into it: its rows were lost"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves 1 to 4 linked left to right; the metapage at 0.
    fn leaves() -> Vec<BtLink> {
        let mut links = vec![(0, 0, 0, 0, BTP_META)];
        for b in 1..=4u32 {
            links.push((
                u64::from(b),
                if b == 1 { P_NONE } else { b - 1 },
                if b == 4 { P_NONE } else { b + 1 },
                0,
                BTP_LEAF,
            ));
        }
        links
    }

    #[test]
    fn a_sibling_not_judged_is_no_damage_but_a_missing_one_is() {
        let mut links = leaves();
        links.remove(2); // block 2 not among the btree pages read
        let mut out = Vec::new();
        btree_checks(&mut out, &links, &[2]);
        assert!(out.is_empty(), "{out:?}");
        btree_checks(&mut out, &links, &[]);
        let blocks: Vec<Option<u64>> = out.iter().map(|f| f.block).collect();
        assert_eq!(blocks, [Some(1), Some(3)]);
        assert!(out.iter().all(|f| f.code == Code::IndexSiblingLink));
    }

    #[test]
    fn two_judged_pages_that_disagree_are_damage() {
        let mut links = leaves();
        links[3].1 = 1; // block 3 points back to 1, not to 2: the finding is on 2, whose right sibling disagrees
        let mut out = Vec::new();
        btree_checks(&mut out, &links, &[]);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].code, out[0].block), (Code::IndexSiblingLink, Some(2)));
    }
}
