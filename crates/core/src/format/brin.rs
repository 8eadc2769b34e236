//! BRIN pages (`src/include/access/brin_page.h`, `brin_tuple.h`; the revmap arithmetic of
//! `access/brin/brin_revmap.c`).

use crate::format::bytes::{u16_at, u32_at, u8_at};
use crate::format::heap::ItemPointerData;
use crate::format::page::SIZE_OF_PAGE_HEADER_DATA;

pub use crate::format::page::{BRIN_PAGETYPE_META, BRIN_PAGETYPE_REGULAR};
pub const BRIN_PAGETYPE_REVMAP: u16 = 0xF092;
/// MAXALIGN(sizeof(BrinSpecialSpace)): the flags word and the page type in its last two u16s.
pub const BRIN_SPECIAL_SIZE: usize = 8;
/// `BRIN_EVACUATE_PAGE`, the only flag of BrinSpecialSpace.
pub const BRIN_EVACUATE_PAGE: u16 = 1 << 0;
/// `BRIN_META_MAGIC`, `BRIN_CURRENT_VERSION`.
pub const BRIN_META_MAGIC: u32 = 0xA810_9CFA;
pub const BRIN_CURRENT_VERSION: u32 = 1;
/// The largest pages_per_range the server accepts (access/common/reloptions.c, the "pages_per_range" option).
pub const BRIN_MAX_PAGES_PER_RANGE: u32 = 131_072;
/// `REVMAP_PAGE_MAXITEMS` for 8 KB pages: (8192 - 24 - 8) / 6.
pub const REVMAP_PAGE_MAXITEMS: u64 = 1360;
/// `SizeOfBrinTuple`: bt_blkno and bt_info.
pub const SIZE_OF_BRIN_TUPLE: usize = 5;
// bt_info bits (brin_tuple.h).
pub const BRIN_OFFSET_MASK: u8 = 0x1F;
pub const BRIN_EMPTY_RANGE_MASK: u8 = 0x20;
pub const BRIN_PLACEHOLDER_MASK: u8 = 0x40;
pub const BRIN_NULLS_MASK: u8 = 0x80;

/// The special space's (flags, page type); `None` unless the special space is BRIN's size.
pub fn brin_special(page: &[u8], pd_special: usize) -> Option<(u16, u16)> {
    if pd_special.checked_add(BRIN_SPECIAL_SIZE)? != page.len() {
        return None;
    }
    Some((u16_at(page, pd_special + 4)?, u16_at(page, pd_special + 6)?))
}

/// `BrinMetaPageData`, at the start of the metapage's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrinMetaPageData {
    pub brin_magic: u32,
    pub brin_version: u32,
    pub pages_per_range: u32,
    pub last_revmap_page: u32,
}

impl BrinMetaPageData {
    pub const OFFSET_MAGIC: usize = SIZE_OF_PAGE_HEADER_DATA;
    pub const OFFSET_VERSION: usize = SIZE_OF_PAGE_HEADER_DATA + 4;
    pub const OFFSET_PAGES_PER_RANGE: usize = SIZE_OF_PAGE_HEADER_DATA + 8;
    pub const OFFSET_LAST_REVMAP_PAGE: usize = SIZE_OF_PAGE_HEADER_DATA + 12;

    pub fn parse(page: &[u8]) -> Option<Self> {
        Some(BrinMetaPageData {
            brin_magic: u32_at(page, Self::OFFSET_MAGIC)?,
            brin_version: u32_at(page, Self::OFFSET_VERSION)?,
            pages_per_range: u32_at(page, Self::OFFSET_PAGES_PER_RANGE)?,
            last_revmap_page: u32_at(page, Self::OFFSET_LAST_REVMAP_PAGE)?,
        })
    }
}

/// The TIDs of a revmap page (`RevmapContents.rm_tids`), from the page contents on: entry `i` of revmap page `r`
/// (the `r`-th revmap page, from block 1) is the range starting at heap block
/// `((r - 1) * REVMAP_PAGE_MAXITEMS + i) * pagesPerRange` (`HEAPBLK_TO_REVMAP_BLK`, `HEAPBLK_TO_REVMAP_INDEX`).
pub fn revmap_tids(page: &[u8]) -> impl Iterator<Item = (u64, ItemPointerData)> + '_ {
    (0..REVMAP_PAGE_MAXITEMS).filter_map(move |i| {
        let t = ItemPointerData::parse(page, SIZE_OF_PAGE_HEADER_DATA + 6 * i as usize)?;
        // ItemPointerIsValid: offset 0 is an unsummarized range
        (t.offset != 0).then_some((i, t))
    })
}

/// `BrinTuple`'s header: the range's first heap block and bt_info.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrinTuple {
    pub bt_blkno: u32,
    pub bt_info: u8,
}

impl BrinTuple {
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        Some(BrinTuple { bt_blkno: u32_at(tuple, 0)?, bt_info: u8_at(tuple, 4)? })
    }
    /// `BrinTupleDataOffset`.
    pub fn data_offset(&self) -> usize {
        usize::from(self.bt_info & BRIN_OFFSET_MASK)
    }
    pub fn has_nulls(&self) -> bool {
        self.bt_info & BRIN_NULLS_MASK != 0
    }
    pub fn is_placeholder(&self) -> bool {
        self.bt_info & BRIN_PLACEHOLDER_MASK != 0
    }
}
