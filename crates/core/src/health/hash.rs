//! A hash index's share of the health figures: what `pgstathashindex` gives (pgstatindex.c: pgstathashindex,
//! GetHashPageStats) and what `pgstattuple` gives of it (pgstattuple.c: pgstat_hash_page), page by page.
//!
//! The two count free space differently: pgstathashindex always takes `PageGetExactFreeSpace`, pgstattuple its
//! version's index definition (one line pointer less up to 17, exact from 18).

use serde::Serialize;

use super::pages::{exact_free, index_items, Definitions, TupleFigures};
use crate::format::bytes::u16_at;
use crate::format::itemid::LP_DEAD;
use crate::format::page::Page;

pub use crate::format::hash::{
    HashMetaPageData, HASH_MAGIC, HASH_SPECIAL_SIZE, LH_BITMAP_PAGE, LH_BUCKET_PAGE, LH_META_PAGE, LH_OVERFLOW_PAGE,
    LH_PAGE_TYPE, LH_UNUSED_PAGE,
};
/// Where `hasho_flag` lies in the special space (access/hash.h, HashPageOpaqueData).
const HASHO_FLAG_OFFSET: usize = 12;

/// pgstathashindex's figures (`HashIndexStat`, pgstatindex.c) before its last arithmetic, and pgstattuple's of
/// the index. free_percent = 100.0 * (free_space + unused_pages * space_per_page) / ((blocks - (bitmap_pages + 1))
/// * space_per_page), 0 when that space is 0: the caller knows the blocks.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct HashFigures {
    /// The metapage's hashm_version and hashm_bsize (0: no metapage read).
    pub version: u32,
    pub space_per_page: u64,
    pub bucket_pages: u64,
    pub overflow_pages: u64,
    pub bitmap_pages: u64,
    /// Unused pages, and never-initialised ones (which pgstathashindex counts with them).
    pub unused_pages: u64,
    pub live_items: u64,
    pub dead_items: u64,
    /// The exact free space of bucket and overflow pages (unused pages not in it).
    pub free_space: u64,
    /// Pages pgstathashindex stops at with an error (a special space of another size, a page type it does not
    /// know): not one of its figures, but what makes it fail.
    pub corrupt_pages: u64,
    /// pgstattuple of the index: the items of bucket and overflow pages, LP_DEAD ones dead.
    pub tuples: TupleFigures,
}

impl HashFigures {
    pub fn add(&mut self, o: &HashFigures) {
        if o.version != 0 {
            (self.version, self.space_per_page) = (o.version, o.space_per_page);
        }
        self.bucket_pages += o.bucket_pages;
        self.overflow_pages += o.overflow_pages;
        self.bitmap_pages += o.bitmap_pages;
        self.unused_pages += o.unused_pages;
        self.live_items += o.live_items;
        self.dead_items += o.dead_items;
        self.free_space += o.free_space;
        self.corrupt_pages += o.corrupt_pages;
        self.tuples.add(&o.tuples);
    }
}

/// One page (`block` of the index) into `f`. Block 0 is the metapage, which both functions skip but for
/// pgstathashindex's version and page size.
pub fn hash_page(page: &Page<'_>, block: u64, defs: Definitions, f: &mut HashFigures) {
    if block == 0 {
        if let Some(m) = HashMetaPageData::parse(page.bytes()) {
            (f.version, f.space_per_page) = (m.hashm_version, u64::from(m.hashm_bsize));
        }
        return;
    }
    let blcksz = page.len() as u64;
    if page.header().is_new() {
        f.unused_pages += 1;
        f.tuples.free_space += blcksz;
        return;
    }
    let flag = match page.special() {
        Some(s) if page.special_size() == HASH_SPECIAL_SIZE => u16_at(s, HASHO_FLAG_OFFSET).unwrap_or(0),
        // pgstattuple takes such a page for damaged and counts nothing of it
        _ => {
            f.corrupt_pages += 1;
            return;
        }
    };
    match flag & LH_PAGE_TYPE {
        LH_UNUSED_PAGE => {
            f.unused_pages += 1;
            f.tuples.free_space += blcksz;
        }
        t @ (LH_BUCKET_PAGE | LH_OVERFLOW_PAGE) => {
            if t == LH_BUCKET_PAGE {
                f.bucket_pages += 1;
            } else {
                f.overflow_pages += 1;
            }
            // GetHashPageStats: every item from the first, exact free space in every version
            for (_, id) in page.item_ids() {
                let dead = id.lp_flags() == LP_DEAD;
                f.dead_items += u64::from(dead);
                f.live_items += u64::from(!dead);
            }
            f.free_space += exact_free(page);
            index_items(page, 1, defs, &mut f.tuples);
        }
        LH_BITMAP_PAGE => f.bitmap_pages += 1,
        // a metapage after block 0, or two types at once: pgstattuple passes over it, pgstathashindex fails
        _ => f.corrupt_pages += 1,
    }
}

/// A page that is all zeros or was never initialised, at `block`: pgstathashindex counts it unused, pgstattuple
/// counts all its space free. (At block 0 both functions would fail reading the metapage.)
pub fn new_hash_page(block: u64, blcksz: u64, f: &mut HashFigures) {
    if block > 0 {
        f.unused_pages += 1;
        f.tuples.free_space += blcksz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::tests::index_page_bytes;

    /// A hash page of type `flag` with items of `lens` bytes (those at `dead` LP_DEAD).
    fn hash_page_bytes(flag: u16, lens: &[u16], dead: &[usize]) -> Vec<u8> {
        let mut special = [0u8; HASH_SPECIAL_SIZE];
        special[12..14].copy_from_slice(&flag.to_le_bytes());
        special[14..16].copy_from_slice(&crate::format::page::HASHO_PAGE_ID.to_le_bytes());
        index_page_bytes(&special, lens, dead)
    }

    #[test]
    fn bucket_and_overflow_pages_count_items_and_exact_free_space() {
        let bucket = hash_page_bytes(LH_BUCKET_PAGE | (1 << 7), &[16, 16, 16], &[1]);
        let overflow = hash_page_bytes(LH_OVERFLOW_PAGE, &[16], &[]);
        let mut f = HashFigures::default();
        for (i, b) in [&bucket, &overflow].into_iter().enumerate() {
            hash_page(&Page::new(b).unwrap(), 1 + i as u64, Definitions::for_major(15), &mut f);
        }
        let gap = |items: usize| (8192 - 16 - 16 * items - 24 - 4 * items) as u64;
        assert_eq!((f.bucket_pages, f.overflow_pages, f.live_items, f.dead_items), (1, 1, 3, 1));
        assert_eq!(f.free_space, gap(3) + gap(1));
        // pgstattuple of a 15 server: a line pointer less per page
        assert_eq!(f.tuples.free_space, gap(3) + gap(1) - 8);
        assert_eq!((f.tuples.tuple_count, f.tuples.dead_tuple_count, f.tuples.dead_tuple_len), (3, 1, 16));
    }

    #[test]
    fn unused_bitmap_new_and_strange_pages() {
        let mut f = HashFigures::default();
        let defs = Definitions::for_major(18);
        hash_page(&Page::new(&hash_page_bytes(LH_UNUSED_PAGE, &[], &[])).unwrap(), 1, defs, &mut f);
        hash_page(&Page::new(&hash_page_bytes(LH_BITMAP_PAGE, &[], &[])).unwrap(), 2, defs, &mut f);
        hash_page(&Page::new(&hash_page_bytes(LH_META_PAGE, &[], &[])).unwrap(), 3, defs, &mut f);
        new_hash_page(4, 8192, &mut f);
        let mut heapish = hash_page_bytes(LH_BUCKET_PAGE, &[], &[]);
        heapish[16..18].copy_from_slice(&8192u16.to_le_bytes()); // no special space
        hash_page(&Page::new(&heapish).unwrap(), 5, defs, &mut f);
        assert_eq!((f.unused_pages, f.bitmap_pages, f.corrupt_pages, f.bucket_pages), (2, 1, 2, 0));
        assert_eq!((f.free_space, f.tuples.free_space), (0, 2 * 8192));
    }

    #[test]
    fn the_metapage_gives_version_and_page_size_only_with_its_magic() {
        let mut meta = hash_page_bytes(LH_META_PAGE, &[], &[]);
        meta[24..28].copy_from_slice(&HASH_MAGIC.to_le_bytes());
        meta[28..32].copy_from_slice(&4u32.to_le_bytes());
        meta[42..44].copy_from_slice(&8152u16.to_le_bytes());
        let mut f = HashFigures::default();
        hash_page(&Page::new(&meta).unwrap(), 0, Definitions::for_major(15), &mut f);
        assert_eq!((f.version, f.space_per_page, f.tuples), (4, 8152, TupleFigures::default()));
        meta[24] ^= 1;
        assert_eq!(HashMetaPageData::parse(&meta), None);
        assert_eq!(HashMetaPageData::parse(&meta[..30]), None);
    }
}
