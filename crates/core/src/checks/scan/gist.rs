//! GiST and SP-GiST checks across pages, once every chunk of the index is in: downlinks lead to pages of the
//! index that exist, are no metapage or deleted page, and sit at the right level; right-links lead to pages that
//! exist; every leaf page (GiST) and every leaf chain (SP-GiST) is reached from the root. What is kept per page is
//! a few words, and per downlink one entry: bounded by the index's own size, a small fraction of it.

use crate::checks::page::spgist::{spgist_downlinks, spgist_link_targets};
use crate::finding::{Code, Finding};
use crate::format::gist::{GISTPageOpaqueData, F_DELETED, F_FOLLOW_RIGHT, F_LEAF, INVALID_BLOCK_NUMBER};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind};
use crate::format::spgist::{SpGistPageOpaqueData, SPGIST_NULL_BLKNO, SPGIST_ROOT_BLKNO};

/// Unreachable pages or chains listed one by one; past this many, one finding counts the rest.
const MAX_LISTED: usize = 16;

/// What the chunks of one GiST or SP-GiST index tell the relation-wide checks.
#[derive(Default)]
pub(crate) struct GistAcc {
    /// GiST pages: (block, flags, rightlink).
    gist_pages: Vec<(u64, u16, u32)>,
    /// GiST downlinks: (parent block, item, child block).
    gist_down: Vec<(u64, u16, u32)>,
    /// SP-GiST pages: (block, flags).
    sp_pages: Vec<(u64, u16)>,
    /// SP-GiST tuples a downlink may point at: chain heads, inner tuples, redirects.
    sp_targets: Vec<(u64, u16)>,
    /// SP-GiST chain heads of non-root leaf pages, which some downlink must reach.
    sp_heads: Vec<(u64, u16)>,
    /// SP-GiST downlinks and redirects: (block, item, target).
    sp_links: Vec<(u64, u16, ItemPointerData)>,
}

impl GistAcc {
    /// Record one page (`kind` Gist or SpGist, sane header) of the index.
    pub(crate) fn page(&mut self, kind: PageKind, block: u64, page: &Page<'_>) {
        match kind {
            PageKind::Gist => self.gist_page(block, page),
            PageKind::SpGist => self.spgist_page(block, page),
            _ => {}
        }
    }

    fn gist_page(&mut self, block: u64, page: &Page<'_>) {
        let Some(o) = GISTPageOpaqueData::from_page(page) else { return };
        self.gist_pages.push((block, o.flags, o.rightlink));
        if o.is_leaf() || o.is_deleted() {
            return;
        }
        for (off, id) in page.item_ids() {
            if id.lp_flags() != LP_NORMAL {
                continue;
            }
            // a tuple without the valid mark is reported by the page checks; its "downlink" may be anything
            if let Some(t) = page.item_bytes(id).and_then(crate::format::btree::IndexTupleData::parse) {
                if t.t_tid.offset == crate::format::gist::TUPLE_IS_VALID {
                    self.gist_down.push((block, off, t.t_tid.block));
                }
            }
        }
    }

    fn spgist_page(&mut self, block: u64, page: &Page<'_>) {
        let Some(s) = SpGistPageOpaqueData::from_page(page) else { return };
        if s.is_meta() {
            return;
        }
        self.sp_pages.push((block, s.flags));
        let root = block == SPGIST_ROOT_BLKNO || block == SPGIST_NULL_BLKNO;
        spgist_link_targets(page, &s, |off, head| {
            self.sp_targets.push((block, off));
            if head && !root {
                self.sp_heads.push((block, off));
            }
        });
        spgist_downlinks(page, &s, |off, p| self.sp_links.push((block, off, p)));
    }

    pub(crate) fn absorb(&mut self, o: &mut GistAcc) {
        self.gist_pages.append(&mut o.gist_pages);
        self.gist_down.append(&mut o.gist_down);
        self.sp_pages.append(&mut o.sp_pages);
        self.sp_targets.append(&mut o.sp_targets);
        self.sp_heads.append(&mut o.sp_heads);
        self.sp_links.append(&mut o.sp_links);
    }
}

/// Where the relation-wide checks of one index look: its length, its all-zero pages and the pages not judged
/// (sorted), which no finding may lean on.
pub(crate) struct Extent<'a> {
    pub(crate) nblocks: u64,
    pub(crate) zero: &'a [u64],
    pub(crate) skipped: &'a [u64],
}

impl Extent<'_> {
    fn judged(&self, b: u64) -> bool {
        self.skipped.binary_search(&b).is_err()
    }
    fn is_zero(&self, b: u64) -> bool {
        self.zero.binary_search(&b).is_ok()
    }
}

/// The GiST and SP-GiST relation-wide findings of one index's main fork from its chunk summaries.
pub(super) fn relation_checks(
    out: &mut Vec<Finding>,
    chunks: &mut [super::unit::ChunkSummary],
    nblocks: u64,
    skipped: &[u64],
) {
    let mut acc = GistAcc::default();
    let mut zero: Vec<u64> = Vec::new();
    for c in chunks.iter_mut() {
        acc.absorb(&mut c.gist);
        zero.extend_from_slice(&c.zero_blocks);
    }
    zero.sort_unstable();
    gist_relation_checks(out, acc, &Extent { nblocks, zero: &zero, skipped });
}

/// The GiST and SP-GiST relation-wide findings of `acc`.
pub(crate) fn gist_relation_checks(out: &mut Vec<Finding>, mut acc: GistAcc, ext: &Extent<'_>) {
    if !acc.gist_pages.is_empty() {
        acc.gist_pages.sort_unstable();
        acc.gist_down.sort_unstable();
        gist_downlink_checks(out, &acc, ext);
        gist_rightlink_checks(out, &acc, ext);
        gist_level_checks(out, &acc, ext);
    }
    if !acc.sp_pages.is_empty() {
        acc.sp_pages.sort_unstable();
        acc.sp_targets.sort_unstable();
        spgist_link_checks(out, &acc, ext);
    }
}

fn gist_find(acc: &GistAcc, b: u64) -> Option<(u64, u16, u32)> {
    acc.gist_pages.binary_search_by_key(&b, |p| p.0).ok().map(|i| acc.gist_pages[i])
}

/// Each downlink leads to a live GiST page of the index, and no page has two.
fn gist_downlink_checks(out: &mut Vec<Finding>, acc: &GistAcc, ext: &Extent<'_>) {
    for &(parent, item, child) in &acc.gist_down {
        let c = u64::from(child);
        let msg = if c >= ext.nblocks {
            format!("downlink to block {child}, past the index's {} blocks", ext.nblocks)
        } else if ext.is_zero(c) {
            out.push(Finding::new(
                Code::IndexZeroPage,
                Some(c),
                None,
                format!("all-zero page, yet item {item} of inner page {parent} leads to it"),
            ));
            continue;
        } else if !ext.judged(c) {
            continue;
        } else {
            match gist_find(acc, c) {
                None => format!("downlink to block {child}, which is not a GiST page"),
                Some((_, f, _)) if f & F_DELETED != 0 => format!("downlink to block {child}, a deleted page"),
                Some(_) => continue,
            }
        };
        out.push(Finding::new(Code::IndexGistDownlink, Some(parent), Some(item), msg));
    }
    let mut by_child: Vec<(u32, u64, u16)> = acc.gist_down.iter().map(|&(p, i, c)| (c, p, i)).collect();
    by_child.sort_unstable();
    for w in by_child.windows(2) {
        let ((c, p1, i1), (c2, p2, i2)) = (w[0], w[1]);
        if c == c2 {
            out.push(Finding::new(
                Code::IndexGistDownlink,
                Some(p2),
                Some(i2),
                format!("downlink to block {c}, which item {i1} of block {p1} leads to as well: scans read it twice"),
            ));
        }
    }
}

/// A right-link leads to a page of the index: past the end, to itself or to a page that is no GiST page, it sends
/// a scan that follows it (after a split it believes concurrent) astray. Whether the page it names is at the same
/// level is judged only while the split is incomplete (F_FOLLOW_RIGHT): an old right-link may name a page deleted
/// and reused since.
fn gist_rightlink_checks(out: &mut Vec<Finding>, acc: &GistAcc, ext: &Extent<'_>) {
    for &(block, flags, rl) in &acc.gist_pages {
        if rl == INVALID_BLOCK_NUMBER || flags & F_DELETED != 0 {
            continue;
        }
        let r = u64::from(rl);
        let msg = if r >= ext.nblocks {
            format!("right-link to block {rl}, past the index's {} blocks", ext.nblocks)
        } else if r == block {
            "right-link to the page itself".to_string()
        } else if ext.is_zero(r) {
            format!("right-link to block {rl}, an all-zero page")
        } else if !ext.judged(r) {
            continue;
        } else {
            match gist_find(acc, r) {
                None => format!("right-link to block {rl}, which is not a GiST page"),
                Some((_, rf, _)) if flags & F_FOLLOW_RIGHT != 0 && (rf & F_LEAF) != (flags & F_LEAF) => {
                    format!("right-link of an incomplete split to block {rl}, a page of another level")
                }
                Some(_) => continue,
            }
        };
        out.push(Finding::new(Code::IndexGistRightlink, Some(block), None, msg));
    }
}

/// Levels from the root down: every leaf at the same depth, no inner page there; every live page reached from the
/// root (or, after a split left incomplete by a crash, by the right-link of an F_FOLLOW_RIGHT page).
fn gist_level_checks(out: &mut Vec<Finding>, acc: &GistAcc, ext: &Extent<'_>) {
    let Some(root) = gist_find(acc, 0) else { return };
    let n = acc.gist_pages.len();
    // depth and parent (as (block, item)) by index into gist_pages
    let mut depth: Vec<Option<u32>> = vec![None; n];
    let mut parent: Vec<(u64, u16)> = vec![(0, 0); n];
    let idx = |b: u64| acc.gist_pages.binary_search_by_key(&b, |p| p.0).ok();
    depth[0] = Some(0).filter(|_| root.0 == 0);
    let mut queue = std::collections::VecDeque::from([0usize]);
    while let Some(i) = queue.pop_front() {
        let (b, _, _) = acc.gist_pages[i];
        let d = depth[i].unwrap_or(0);
        let from = acc.gist_down.partition_point(|l| l.0 < b);
        for &(_, item, child) in acc.gist_down[from..].iter().take_while(|l| l.0 == b) {
            if let Some(ci) = idx(u64::from(child)).filter(|&ci| depth[ci].is_none() && ci != 0) {
                depth[ci] = Some(d + 1);
                parent[ci] = (b, item);
                queue.push_back(ci);
            }
        }
    }
    // the leaves' depth: the one most leaves are at
    let mut leaf_depths: Vec<u32> =
        (0..n).filter(|&i| acc.gist_pages[i].1 & (F_LEAF | F_DELETED) == F_LEAF).filter_map(|i| depth[i]).collect();
    leaf_depths.sort_unstable();
    let Some(expect) = mode(&leaf_depths) else { return };
    for i in 0..n {
        let (b, f, _) = acc.gist_pages[i];
        let Some(d) = depth[i] else { continue };
        let leaf = f & F_LEAF != 0;
        if (leaf && d != expect) || (!leaf && d >= expect) {
            let (p, item) = parent[i];
            let what = if leaf { "a leaf" } else { "an inner page" };
            out.push(Finding::new(
                Code::IndexGistDownlink,
                Some(p),
                Some(item),
                format!("downlink to block {b}, {what} at depth {d}, where the index's leaves are at depth {expect}"),
            ));
        }
    }
    if !ext.skipped.is_empty() {
        return;
    }
    let follow: Vec<u32> = acc.gist_pages.iter().filter(|p| p.1 & F_FOLLOW_RIGHT != 0).map(|p| p.2).collect();
    let lost: Vec<u64> = (1..n)
        .filter(|&i| depth[i].is_none() && acc.gist_pages[i].1 & F_DELETED == 0)
        .map(|i| acc.gist_pages[i].0)
        .filter(|b| !follow.contains(&(*b as u32)))
        .collect();
    for &b in lost.iter().take(MAX_LISTED) {
        out.push(Finding::new(
            Code::IndexGistUnreachable,
            Some(b),
            None,
            "no downlink leads here from the root: index scans never read this page".to_string(),
        ));
    }
    if lost.len() > MAX_LISTED {
        out.push(Finding::new(
            Code::IndexGistUnreachable,
            lost.get(MAX_LISTED).copied(),
            None,
            format!(
                "{} pages in all are reached from no downlink ({} not listed)",
                lost.len(),
                lost.len() - MAX_LISTED
            ),
        ));
    }
}

/// The most frequent value of a sorted slice (the smallest of equals).
fn mode(sorted: &[u32]) -> Option<u32> {
    let mut best: Option<(u32, usize)> = None;
    for chunk in sorted.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(_, n)| chunk.len() > n) {
            best = Some((chunk[0], chunk.len()));
        }
    }
    best.map(|(v, _)| v)
}

/// The tuples reached from the two roots' inner tuples (spgWalk starts at item 1 of block 1, and of block 2 for
/// nulls) by downlinks and redirects: a chain whose head only an orphaned inner tuple points at is lost as well.
fn spgist_reached(acc: &GistAcc) -> std::collections::HashSet<(u64, u16)> {
    let mut links: Vec<(u64, u16, ItemPointerData)> = acc.sp_links.clone();
    links.sort_unstable_by_key(|l| (l.0, l.1));
    let mut seen = std::collections::HashSet::new();
    let mut queue: Vec<(u64, u16)> = vec![(SPGIST_ROOT_BLKNO, 1), (SPGIST_NULL_BLKNO, 1)];
    while let Some(at) = queue.pop() {
        if !seen.insert(at) {
            continue;
        }
        let from = links.partition_point(|l| (l.0, l.1) < at);
        for l in links[from..].iter().take_while(|l| (l.0, l.1) == at) {
            queue.push((u64::from(l.2.block), l.2.offset));
        }
    }
    seen
}

/// SP-GiST downlinks and redirects lead to a chain head, inner tuple or redirect of a page of the same tree (nulls
/// or not), never the metapage; every chain head of a non-root leaf page is reached by one.
fn spgist_link_checks(out: &mut Vec<Finding>, acc: &GistAcc, ext: &Extent<'_>) {
    let page_flags = |b: u64| acc.sp_pages.binary_search_by_key(&b, |p| p.0).ok().map(|i| acc.sp_pages[i].1);
    for &(block, item, t) in &acc.sp_links {
        let tb = u64::from(t.block);
        let msg = if tb >= ext.nblocks {
            format!("points to {t}, past the index's {} blocks", ext.nblocks)
        } else if ext.is_zero(tb) {
            format!("points to {t}, on an all-zero page")
        } else if !ext.judged(tb) {
            continue;
        } else {
            match page_flags(tb) {
                None => format!("points to {t}, on a page that is no SP-GiST page of the tree"),
                Some(tf) => {
                    let nulls = |f: u16| f & crate::format::spgist::SPGIST_NULLS != 0;
                    if page_flags(block).is_some_and(|f| nulls(f) != nulls(tf)) {
                        format!("points to {t}, across the trees of null and non-null keys")
                    } else if acc.sp_targets.binary_search(&(tb, t.offset)).is_err() {
                        format!("points to {t}, which is no chain head, inner tuple or redirect")
                    } else {
                        continue;
                    }
                }
            }
        };
        out.push(Finding::new(Code::IndexSpgistDownlink, Some(block), Some(item), msg));
    }
    if !ext.skipped.is_empty() {
        return;
    }
    let reached = spgist_reached(acc);
    let lost: Vec<(u64, u16)> = acc.sp_heads.iter().copied().filter(|h| !reached.contains(h)).collect();
    for &(b, off) in lost.iter().take(MAX_LISTED) {
        out.push(Finding::new(
            Code::IndexSpgistUnreachable,
            Some(b),
            Some(off),
            "no downlink or redirect leads to this leaf chain: index scans never return its rows".to_string(),
        ));
    }
    if let Some(&(b, _)) = lost.get(MAX_LISTED) {
        out.push(Finding::new(
            Code::IndexSpgistUnreachable,
            Some(b),
            None,
            format!(
                "{} leaf chains in all are reached from no downlink ({} not listed)",
                lost.len(),
                lost.len() - MAX_LISTED
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext<'a>(nblocks: u64, zero: &'a [u64]) -> Extent<'a> {
        Extent { nblocks, zero, skipped: &[] }
    }

    /// Root 0 over leaves 1 and 2.
    fn two_level() -> GistAcc {
        GistAcc {
            gist_pages: vec![(0, 0, INVALID_BLOCK_NUMBER), (1, F_LEAF, 2), (2, F_LEAF, INVALID_BLOCK_NUMBER)],
            gist_down: vec![(0, 1, 1), (0, 2, 2)],
            ..Default::default()
        }
    }

    #[test]
    fn a_healthy_tree_has_no_findings() {
        let mut out = Vec::new();
        gist_relation_checks(&mut out, two_level(), &ext(3, &[]));
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_downlink_moved_to_a_sibling_is_found_twice_over() {
        let mut acc = two_level();
        acc.gist_down[1].2 = 1; // both downlinks to block 1: block 2 unreachable
        let mut out = Vec::new();
        gist_relation_checks(&mut out, acc, &ext(3, &[]));
        let codes: Vec<(Code, Option<u64>)> = out.iter().map(|f| (f.code, f.block)).collect();
        assert_eq!(codes, [(Code::IndexGistDownlink, Some(0)), (Code::IndexGistUnreachable, Some(2))]);
    }

    #[test]
    fn downlinks_past_the_end_to_zero_pages_and_wrong_levels() {
        let mut acc = two_level();
        acc.gist_pages.push((3, 0, INVALID_BLOCK_NUMBER)); // an inner page at the leaves' depth
        acc.gist_down.push((0, 3, 3));
        acc.gist_down.push((0, 4, 9));
        acc.gist_down.push((0, 5, 4));
        acc.gist_down.sort_unstable();
        let mut out = Vec::new();
        gist_relation_checks(&mut out, acc, &ext(5, &[4]));
        let codes: Vec<(Code, Option<u64>)> = out.iter().map(|f| (f.code, f.block)).collect();
        assert!(codes.contains(&(Code::IndexGistDownlink, Some(0))), "{out:?}");
        assert!(codes.contains(&(Code::IndexZeroPage, Some(4))), "{out:?}");
        assert_eq!(out.iter().filter(|f| f.message.contains("depth")).count(), 1, "{out:?}");
    }

    #[test]
    fn right_links_past_the_end() {
        let mut acc = two_level();
        acc.gist_pages[1].2 = 40;
        let mut out = Vec::new();
        gist_relation_checks(&mut out, acc, &ext(3, &[]));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].code, out[0].block), (Code::IndexGistRightlink, Some(1)));
    }

    #[test]
    fn spgist_heads_must_be_reached() {
        let acc = GistAcc {
            sp_pages: vec![(1, 0), (3, crate::format::spgist::SPGIST_LEAF)],
            sp_targets: vec![(1, 1), (3, 1), (3, 2)],
            sp_heads: vec![(3, 1), (3, 2)],
            sp_links: vec![(1, 1, ItemPointerData { block: 3, offset: 1 })],
            ..Default::default()
        };
        let mut out = Vec::new();
        gist_relation_checks(&mut out, acc, &ext(4, &[]));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].code, out[0].block, out[0].item), (Code::IndexSpgistUnreachable, Some(3), Some(2)));
    }

    #[test]
    fn spgist_chains_under_an_orphaned_inner_tuple_are_lost() {
        let tid = |block, offset| ItemPointerData { block, offset };
        let leaf = crate::format::spgist::SPGIST_LEAF;
        let acc = GistAcc {
            sp_pages: vec![(1, 0), (3, 0), (4, leaf)],
            sp_targets: vec![(1, 1), (3, 1), (3, 2), (4, 1), (4, 2)],
            sp_heads: vec![(4, 1), (4, 2)],
            sp_links: vec![(1, 1, tid(3, 1)), (3, 1, tid(4, 1)), (3, 2, tid(4, 2))],
            ..Default::default()
        };
        let mut out = Vec::new();
        gist_relation_checks(&mut out, acc, &ext(5, &[]));
        let found: Vec<_> = out.iter().map(|f| (f.code, f.block, f.item)).collect();
        assert_eq!(found, [(Code::IndexSpgistUnreachable, Some(4), Some(2))]);
    }
}
