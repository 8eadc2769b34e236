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
