//! A GIN index's share of the health figures: what `pgstatginindex` gives (pgstatindex.c:
//! pgstatginindex_internal), all of it from the metapage. pgstattuple refuses GIN indexes.

use serde::Serialize;

use crate::format::gin::{GinMetaPageData, GIN_METAPAGE_BLKNO};
use crate::format::page::Page;

/// pgstatginindex's figures: three fields of `GinMetaPageData` (access/ginblock.h), which lies at the start of
/// the metapage's contents (`GinPageGetMeta`: right after the MAXALIGNed page header): head, tail, tailFreeSize,
/// nPendingPages (+12), nPendingHeapTuples (+16, an int64), nTotalPages, nEntryPages, nDataPages, nEntries (+40,
/// an int64), ginVersion (+48). The server reads them without a check of the page, and so do we.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct GinFigures {
    /// ginVersion.
    pub version: i32,
    /// nPendingPages: pages of the pending list (fastupdate's entries not yet moved into the tree).
    pub pending_pages: u32,
    /// nPendingHeapTuples: heap tuples whose entries are in the pending list.
    pub pending_tuples: i64,
}

impl GinFigures {
    /// `None` when the page is too short to hold the metapage data.
    pub fn from_metapage(page: &Page<'_>) -> Option<GinFigures> {
        let m = GinMetaPageData::parse(page.bytes())?;
        Some(GinFigures {
            version: m.gin_version,
            pending_pages: m.n_pending_pages,
            pending_tuples: m.n_pending_heap_tuples,
        })
    }
}

/// The figures of block `block` of a GIN index: only the metapage has any.
pub fn gin_page(page: &Page<'_>, block: u64) -> Option<GinFigures> {
    (block == GIN_METAPAGE_BLKNO).then(|| GinFigures::from_metapage(page)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metapage_fields_at_their_offsets() {
        let mut p = crate::health::tests::index_page_bytes(&[0u8; 8], &[], &[]);
        p[24 + 12..24 + 16].copy_from_slice(&3u32.to_le_bytes());
        p[24 + 16..24 + 24].copy_from_slice(&517i64.to_le_bytes());
        p[24 + 48..24 + 52].copy_from_slice(&2i32.to_le_bytes());
        let page = Page::new(&p).unwrap();
        let want = GinFigures { version: 2, pending_pages: 3, pending_tuples: 517 };
        assert_eq!(gin_page(&page, 0), Some(want));
        assert_eq!(gin_page(&page, 1), None);
        assert_eq!(GinFigures::from_metapage(&Page::new(&p[..70]).unwrap()), None);
    }
}
