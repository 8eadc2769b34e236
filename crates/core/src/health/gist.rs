//! A GiST index's share of the health figures: what `pgstattuple` gives of it (pgstattuple.c: pgstat_gist_page),
//! page by page. pgstatindex has no function for GiST.

use serde::Serialize;

use super::pages::{index_items, Definitions, TupleFigures};
use crate::format::bytes::u16_at;
use crate::format::page::Page;

pub use crate::format::gist::{F_LEAF, GIST_FLAGS_OFFSET, GIST_SPECIAL_SIZE};
/// `GIST_ROOT_BLKNO` (access/gist_private.h): pgstattuple starts after it, so the root is never counted, not
/// even when it is the only leaf.
pub const GIST_ROOT_BLKNO: u64 = 0;

/// pgstattuple's figures of a GiST index.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct GistFigures {
    /// The items of leaf pages after the root, LP_DEAD ones dead; all of a never-initialised page's space free.
    pub tuples: TupleFigures,
}

impl GistFigures {
    pub fn add(&mut self, o: &GistFigures) {
        self.tuples.add(&o.tuples);
    }
}

/// One page (`block` of the index) into `f`. A leaf counts as a leaf whatever else its flags say (a deleted page
/// keeps F_LEAF: pgstattuple counts what its line pointer array then claims); an internal page counts nothing.
pub fn gist_page(page: &Page<'_>, block: u64, defs: Definitions, f: &mut GistFigures) {
    if block == GIST_ROOT_BLKNO {
        return;
    }
    if page.header().is_new() {
        f.tuples.free_space += page.len() as u64;
        return;
    }
    let leaf = match page.special() {
        Some(s) if page.special_size() == GIST_SPECIAL_SIZE => u16_at(s, GIST_FLAGS_OFFSET).unwrap_or(0) & F_LEAF != 0,
        _ => false,
    };
    if leaf {
        index_items(page, 1, defs, &mut f.tuples);
    }
}

/// A page that is all zeros or was never initialised: all its space free (after the root).
pub fn new_gist_page(block: u64, blcksz: u64, f: &mut GistFigures) {
    if block != GIST_ROOT_BLKNO {
        f.tuples.free_space += blcksz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::tests::index_page_bytes;

    fn gist_page_bytes(flags: u16, lens: &[u16], dead: &[usize]) -> Vec<u8> {
        let mut special = [0u8; GIST_SPECIAL_SIZE];
        special[12..14].copy_from_slice(&flags.to_le_bytes());
        special[14..16].copy_from_slice(&crate::format::page::GIST_PAGE_ID.to_le_bytes());
        index_page_bytes(&special, lens, dead)
    }

    #[test]
    fn leaves_after_the_root_count_internal_pages_do_not() {
        let leaf = gist_page_bytes(F_LEAF, &[40, 40], &[0]);
        let internal = gist_page_bytes(0, &[40, 40, 40], &[]);
        let (mut old, mut new) = (GistFigures::default(), GistFigures::default());
        for (block, bytes) in [(0, &leaf), (1, &leaf), (2, &internal)] {
            let p = Page::new(bytes).unwrap();
            gist_page(&p, block, Definitions::for_major(15), &mut old);
            gist_page(&p, block, Definitions::for_major(18), &mut new);
        }
        let gap = (8192 - 16 - 80 - 24 - 8) as u64;
        assert_eq!((new.tuples.tuple_count, new.tuples.tuple_len, new.tuples.dead_tuple_count), (1, 40, 1));
        assert_eq!((old.tuples.free_space, new.tuples.free_space), (gap - 4, gap));
        new_gist_page(0, 8192, &mut new);
        new_gist_page(3, 8192, &mut new);
        assert_eq!(new.tuples.free_space, gap + 8192);
    }
}
