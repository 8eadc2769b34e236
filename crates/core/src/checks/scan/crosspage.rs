//! The relation-wide checks of an index whose pages come through the server (diagnose without the files, pages from
//! `get_raw_page`): the pages arrive a batch at a time and in any order, each batch summarised as a scan's chunk is,
//! and once every page is in, the scan's own relation-wide checks run over the summaries. Memory: what the scan keeps
//! per index page (a few links), nothing per tuple.

use super::relation::relation_checks;
use super::unit::{in_use, index_links, ChunkSummary};
use crate::finding::Finding;
use crate::format::page::{Page, PageKind};
use crate::sources::relpath::Fork;

/// One index's pages, summarised batch by batch.
pub struct CrossPages {
    kind: PageKind,
    blcksz: usize,
    chunks: Vec<ChunkSummary>,
}

impl CrossPages {
    /// For the index kinds with checks across pages here: GIN, GiST, SP-GiST, hash and BRIN. None for a btree, whose
    /// links bt_index_check follows, and for a heap, whose checks across forks need the files.
    pub fn new(kind: PageKind, blcksz: usize) -> Option<Self> {
        matches!(kind, PageKind::Gin | PageKind::Gist | PageKind::SpGist | PageKind::Hash | PageKind::Brin)
            .then(|| CrossPages { kind, blcksz, chunks: Vec::new() })
    }

    /// The pages of `data`, block `first` onwards (whole pages; a short tail is ignored).
    pub fn add(&mut self, data: &[u8], first: u64) {
        if self.blcksz == 0 {
            return;
        }
        let mut out = ChunkSummary::default();
        for (i, bytes) in data.chunks_exact(self.blcksz).enumerate() {
            let block = first + i as u64;
            let Some(page) = Page::new(bytes) else { continue };
            if page.is_all_zero() {
                out.zero_blocks.push(block);
                continue;
            }
            let kind = if page.header().is_new() { PageKind::Uninitialized } else { self.kind };
            index_links(kind, block, bytes, &page, page.header_is_sane(self.blcksz), true, &mut out);
            if in_use(&page, kind) {
                out.last_nonempty = out.last_nonempty.max(Some(block));
            }
        }
        self.chunks.push(out);
    }

    /// The relation-wide findings of an index of `nblocks` blocks, every page of which went through [`Self::add`].
    pub fn finish(&mut self, nblocks: u64) -> Vec<Finding> {
        let mut inside = Vec::new();
        relation_checks(&mut inside, Fork::Main, &[], nblocks, Some(self.kind), &mut self.chunks, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::page::gist::tests::page as gist_page;
    use crate::finding::Code;
    use crate::format::gist::{F_LEAF, TUPLE_IS_VALID};

    /// A root (block 0) with downlinks to `children`, and leaves at blocks 1 and 2, added as the server hands
    /// them over: in batches, out of order.
    fn two_level(children: &[u32]) -> Vec<Finding> {
        let downlinks: Vec<(u32, u16)> = children.iter().map(|&c| (c, TUPLE_IS_VALID)).collect();
        let mut acc = CrossPages::new(PageKind::Gist, 8192).expect("gist has checks across pages");
        acc.add(&gist_page(F_LEAF, &[(5, 1)]), 2);
        let mut first = gist_page(0, &downlinks);
        first.extend(gist_page(F_LEAF, &[(5, 2)]));
        acc.add(&first, 0);
        acc.finish(3)
    }

    #[test]
    fn pages_in_batches_out_of_order_are_judged_as_the_scan_judges_them() {
        assert!(two_level(&[1, 2]).is_empty(), "{:?}", two_level(&[1, 2]));
        let codes: Vec<(Code, Option<u64>)> = two_level(&[1, 1]).iter().map(|f| (f.code, f.block)).collect();
        assert_eq!(codes, [(Code::IndexGistDownlink, Some(0)), (Code::IndexGistUnreachable, Some(2))]);
    }

    #[test]
    fn btrees_and_heaps_have_none_here() {
        assert!(CrossPages::new(PageKind::Btree, 8192).is_none());
        assert!(CrossPages::new(PageKind::Heap, 8192).is_none());
    }
}
