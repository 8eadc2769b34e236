//! GIN pages under PostgreSQL's names (access/ginblock.h): the special space, the metapage, posting tree items,
//! entry tuples, and the compressed posting lists of access/gin/ginpostinglist.c. Parsing only: nothing here
//! judges.

use super::btree::IndexTupleData;
use super::bytes::{maxalign, u16_at, u32_at, u64_at};
use super::heap::ItemPointerData;
use super::page::{Page, SIZE_OF_PAGE_HEADER_DATA};

/// `GinPageOpaqueData`'s flag bits (access/ginblock.h).
pub const GIN_DATA: u16 = 1 << 0;
pub const GIN_LEAF: u16 = 1 << 1;
pub const GIN_DELETED: u16 = 1 << 2;
pub const GIN_META: u16 = 1 << 3;
pub const GIN_LIST: u16 = 1 << 4;
pub const GIN_LIST_FULLROW: u16 = 1 << 5;
pub const GIN_INCOMPLETE_SPLIT: u16 = 1 << 6;
pub const GIN_COMPRESSED: u16 = 1 << 7;
/// Every flag bit the server defines; the others are never written.
pub const GIN_VALID_FLAGS: u16 = (1 << 8) - 1;

/// `GIN_METAPAGE_BLKNO`, `GIN_ROOT_BLKNO` (access/ginblock.h): the fixed pages.
pub const GIN_METAPAGE_BLKNO: u64 = 0;
pub const GIN_ROOT_BLKNO: u64 = 1;
/// `GIN_CURRENT_VERSION` (access/ginblock.h); versions 0 and 1 are read too (pre-9.4 indexes).
pub const GIN_CURRENT_VERSION: i32 = 2;
/// `InvalidBlockNumber` (storage/block.h): no right sibling, no pending list.
pub const INVALID_BLOCK_NUMBER: u32 = u32::MAX;
/// `MAXALIGN(sizeof(GinPageOpaqueData))`: GIN's special space.
pub const GIN_SPECIAL_SIZE: usize = 8;
/// `GIN_TREE_POSTING` (access/ginblock.h): an entry tuple's item count saying "a posting tree, not a list".
pub const GIN_TREE_POSTING: u16 = 0xFFFF;
/// `GIN_ITUP_COMPRESSED` (access/ginblock.h): the posting offset's flag for a compressed list.
pub const GIN_ITUP_COMPRESSED: u32 = 1 << 31;
/// `MaxHeapTuplesPerPageBits` (access/gin/ginpostinglist.c): offset bits of a packed item pointer.
pub const MAX_HEAP_TUPLES_PER_PAGE_BITS: u32 = 11;
/// `sizeof(PostingItem)`: a BlockIdData and an ItemPointerData.
pub const SIZE_OF_POSTING_ITEM: usize = 10;
/// `offsetof(GinPostingList, bytes)`: the first item (6 bytes) and nbytes (2 bytes).
pub const GIN_POSTING_LIST_HEADER: usize = 8;
/// Where a data page's data begins: `PageGetContents + MAXALIGN(sizeof(ItemPointerData))` (the right bound).
pub const GIN_DATA_START: usize = maxalign(SIZE_OF_PAGE_HEADER_DATA) + maxalign(6);

/// `GinPageOpaqueData` (access/ginblock.h): the 8 bytes of special space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GinPageOpaqueData {
    pub rightlink: u32,
    /// PostingItems on a posting tree internal page; heap tuples on a pending list page.
    pub maxoff: u16,
    pub flags: u16,
}

impl GinPageOpaqueData {
    /// The special space of `page`, when it is GIN's size.
    pub fn from_page(page: &Page<'_>) -> Option<Self> {
        let s = page.special().filter(|s| s.len() == GIN_SPECIAL_SIZE)?;
        Some(GinPageOpaqueData { rightlink: u32_at(s, 0)?, maxoff: u16_at(s, 4)?, flags: u16_at(s, 6)? })
    }
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
    pub fn is_rightmost(&self) -> bool {
        self.rightlink == INVALID_BLOCK_NUMBER
    }
    /// The page's role in words, for messages.
    pub fn role(&self) -> &'static str {
        match (self.has(GIN_META), self.has(GIN_LIST), self.has(GIN_DATA), self.has(GIN_LEAF)) {
            (true, _, _, _) => "metapage",
            (_, true, _, _) => "pending list page",
            (_, _, true, true) => "posting tree leaf",
            (_, _, true, false) => "posting tree internal page",
            (_, _, false, true) => "entry tree leaf",
            (_, _, false, false) => "entry tree internal page",
        }
    }
}

/// `GinMetaPageData` (access/ginblock.h), at the start of the metapage's contents (after the page header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GinMetaPageData {
    pub head: u32,
    pub tail: u32,
    pub tail_free_size: u32,
    pub n_pending_pages: u32,
    pub n_pending_heap_tuples: i64,
    pub n_total_pages: u32,
    pub n_entry_pages: u32,
    pub n_data_pages: u32,
    pub n_entries: i64,
    pub gin_version: i32,
}

impl GinMetaPageData {
    pub fn parse(page: &[u8]) -> Option<Self> {
        let at = SIZE_OF_PAGE_HEADER_DATA;
        Some(GinMetaPageData {
            head: u32_at(page, at)?,
            tail: u32_at(page, at + 4)?,
            tail_free_size: u32_at(page, at + 8)?,
            n_pending_pages: u32_at(page, at + 12)?,
            n_pending_heap_tuples: u64_at(page, at + 16)? as i64,
            n_total_pages: u32_at(page, at + 24)?,
            n_entry_pages: u32_at(page, at + 28)?,
            n_data_pages: u32_at(page, at + 32)?,
            n_entries: u64_at(page, at + 40)? as i64,
            gin_version: u32_at(page, at + 48)? as i32,
        })
    }
}

/// `PostingItem` (access/ginblock.h): a posting tree internal page's downlink and the child's high key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostingItem {
    pub child_blkno: u32,
    pub key: ItemPointerData,
}

impl PostingItem {
    /// Item `i` (1-based) of a posting tree internal page (`GinDataPageGetPostingItem`).
    pub fn nth(page: &[u8], i: u16) -> Option<Self> {
        let at = GIN_DATA_START + usize::from(i.checked_sub(1)?) * SIZE_OF_POSTING_ITEM;
        let hi = u16_at(page, at)?;
        let lo = u16_at(page, at + 2)?;
        Some(PostingItem {
            child_blkno: (u32::from(hi) << 16) | u32::from(lo),
            key: ItemPointerData::parse(page, at + 4)?,
        })
    }
}

/// `GinDataPageGetRightBound`: a data page's high key, right after the page header.
pub fn data_page_right_bound(page: &[u8]) -> Option<ItemPointerData> {
    ItemPointerData::parse(page, maxalign(SIZE_OF_PAGE_HEADER_DATA))
}

/// Item pointers in GIN's order (`ginCompareItemPointers`): block, then offset.
pub fn tid_key(t: &ItemPointerData) -> u64 {
    (u64::from(t.block) << 16) | u64::from(t.offset)
}

/// Why a compressed posting list cannot be read as the server would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostingProblem {
    /// The segment header or its bytes run past the space it lies in.
    Truncated { at: usize },
    /// A varbyte integer still continues after its 7th byte, or runs past the segment's end.
    BadVarbyte { at: usize },
    /// An item is not above the one before it (a zero delta, or a segment starting at or below the last item).
    NotAscending { index: usize, item: ItemPointerData, prev: ItemPointerData },
    /// An item with offset number 0 or a block past what 32 bits hold.
    InvalidItem { index: usize, item: ItemPointerData },
}

impl std::fmt::Display for PostingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostingProblem::Truncated { at } => {
                write!(f, "a posting list segment at byte {at} runs past the end of the list")
            }
            PostingProblem::BadVarbyte { at } => write!(f, "the varbyte-encoded item at byte {at} does not end"),
            PostingProblem::NotAscending { index, item, prev } => {
                write!(f, "item {index} {item} does not follow {prev}: items must ascend strictly")
            }
            PostingProblem::InvalidItem { index, item } => write!(f, "item {index} {item} is not a valid heap TID"),
        }
    }
}

/// `decode_varbyte` (ginpostinglist.c) bounded by `end`: the value and the position after it.
fn decode_varbyte(b: &[u8], mut at: usize, end: usize) -> Option<(u64, usize)> {
    let mut val = 0u64;
    for i in 0..7 {
        if at >= end {
            return None;
        }
        let c = u64::from(*b.get(at)?);
        at += 1;
        if i == 6 {
            // the 7th byte carries no continuation bit
            return (c & 0x80 == 0).then_some((val | (c << 42), at));
        }
        val |= (c & 0x7F) << (7 * i);
        if c & 0x80 == 0 {
            return Some((val, at));
        }
    }
    None
}

/// `uint64_to_itemptr` (ginpostinglist.c); `None` when the block does not fit 32 bits.
fn uint64_to_itemptr(val: u64) -> Option<ItemPointerData> {
    let offset = (val & ((1 << MAX_HEAP_TUPLES_PER_PAGE_BITS) - 1)) as u16;
    let block = u32::try_from(val >> MAX_HEAP_TUPLES_PER_PAGE_BITS).ok()?;
    Some(ItemPointerData { block, offset })
}

fn itemptr_to_uint64(t: &ItemPointerData) -> u64 {
    (u64::from(t.block) << MAX_HEAP_TUPLES_PER_PAGE_BITS) | u64::from(t.offset)
}

/// Every item of the compressed posting list segments in `b[start..end]` (`ginPostingListDecodeAllSegments`),
/// each passed to `f`; stops at the first problem. `prev`: the item before the first (the list's lower bound).
/// Returns the number of items decoded.
pub fn decode_segments(
    b: &[u8],
    start: usize,
    end: usize,
    mut prev: Option<ItemPointerData>,
    mut f: impl FnMut(&ItemPointerData),
) -> Result<usize, PostingProblem> {
    let mut at = start;
    let mut n = 0usize;
    let mut check = |item: ItemPointerData, prev: &mut Option<ItemPointerData>, n: &mut usize| {
        if item.offset == 0 {
            return Err(PostingProblem::InvalidItem { index: *n + 1, item });
        }
        if let Some(p) = *prev {
            if tid_key(&item) <= tid_key(&p) {
                return Err(PostingProblem::NotAscending { index: *n + 1, item, prev: p });
            }
        }
        *n += 1;
        *prev = Some(item);
        f(&item);
        Ok(())
    };
    while at < end {
        if at + GIN_POSTING_LIST_HEADER > end {
            return Err(PostingProblem::Truncated { at });
        }
        let first = ItemPointerData::parse(b, at).ok_or(PostingProblem::Truncated { at })?;
        let nbytes = usize::from(u16_at(b, at + 6).ok_or(PostingProblem::Truncated { at })?);
        let seg_end = at + GIN_POSTING_LIST_HEADER + nbytes;
        if seg_end > end {
            return Err(PostingProblem::Truncated { at });
        }
        check(first, &mut prev, &mut n)?;
        let mut val = itemptr_to_uint64(&first);
        let mut p = at + GIN_POSTING_LIST_HEADER;
        while p < seg_end {
            let (delta, next) = decode_varbyte(b, p, seg_end).ok_or(PostingProblem::BadVarbyte { at: p })?;
            val = val.checked_add(delta).ok_or(PostingProblem::BadVarbyte { at: p })?;
            let item = uint64_to_itemptr(val)
                .ok_or(PostingProblem::InvalidItem { index: n + 1, item: ItemPointerData { block: 0, offset: 0 } })?;
            check(item, &mut prev, &mut n)?;
            p = next;
        }
        // SizeOfGinPostingList: nbytes is SHORTALIGNed
        at += GIN_POSTING_LIST_HEADER + nbytes + (nbytes & 1);
    }
    Ok(n)
}

/// A GIN entry tuple's header (`IndexTupleData` with GIN's meaning of t_tid, access/ginblock.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GinEntryTuple {
    pub itup: IndexTupleData,
}

impl GinEntryTuple {
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        Some(GinEntryTuple { itup: IndexTupleData::parse(tuple)? })
    }
    /// `GinIsPostingTree`.
    pub fn is_posting_tree(&self) -> bool {
        self.itup.t_tid.offset == GIN_TREE_POSTING
    }
    /// `GinGetPostingTree`, `GinGetDownlink`: the block t_tid names.
    pub fn block(&self) -> u32 {
        self.itup.t_tid.block
    }
    /// `GinGetNPosting`.
    pub fn n_posting(&self) -> u16 {
        self.itup.t_tid.offset
    }
    /// `GinItupIsCompressed`.
    pub fn is_compressed(&self) -> bool {
        self.itup.t_tid.block & GIN_ITUP_COMPRESSED != 0
    }
    /// `GinGetPostingOffset`.
    pub fn posting_offset(&self) -> usize {
        (self.itup.t_tid.block & !GIN_ITUP_COMPRESSED) as usize
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `encode_varbyte` (ginpostinglist.c), for building lists.
    pub fn encode_varbyte(mut val: u64, out: &mut Vec<u8>) {
        while val > 0x7F {
            out.push(0x80 | (val & 0x7F) as u8);
            val >>= 7;
        }
        out.push(val as u8);
    }

    /// One segment holding `tids`.
    pub fn segment(tids: &[(u32, u16)]) -> Vec<u8> {
        let mut body = Vec::new();
        let first = ItemPointerData { block: tids[0].0, offset: tids[0].1 };
        let mut prev = itemptr_to_uint64(&first);
        for &(b, o) in &tids[1..] {
            let v = itemptr_to_uint64(&ItemPointerData { block: b, offset: o });
            encode_varbyte(v - prev, &mut body);
            prev = v;
        }
        let mut seg = vec![0u8; 8];
        first.write(&mut seg, 0);
        seg[6..8].copy_from_slice(&(body.len() as u16).to_le_bytes());
        seg.extend(&body);
        if seg.len() % 2 == 1 {
            seg.push(0);
        }
        seg
    }

    #[test]
    fn segments_decode_in_order() {
        let mut b = segment(&[(0, 1), (0, 2), (5, 7), (4000, 1)]);
        b.extend(segment(&[(4000, 3), (70000, 200)]));
        let mut seen = Vec::new();
        let n = decode_segments(&b, 0, b.len(), None, |t| seen.push((t.block, t.offset))).unwrap();
        assert_eq!(n, 6);
        assert_eq!(seen, [(0, 1), (0, 2), (5, 7), (4000, 1), (4000, 3), (70000, 200)]);
    }

    #[test]
    fn damaged_segments_are_named() {
        let mut b = segment(&[(3, 1), (3, 2)]);
        b.extend(segment(&[(3, 2), (9, 1)]));
        let err = decode_segments(&b, 0, b.len(), None, |_| {}).unwrap_err();
        assert!(matches!(err, PostingProblem::NotAscending { index: 3, .. }), "{err}");
        let mut z = segment(&[(3, 1), (3, 2)]);
        z[8] = 0; // a zero delta
        assert!(matches!(decode_segments(&z, 0, z.len(), None, |_| {}), Err(PostingProblem::NotAscending { .. })));
        let mut v = segment(&[(3, 1), (3, 2)]);
        v[8] = 0x81; // continues past the segment
        assert!(matches!(decode_segments(&v, 0, v.len(), None, |_| {}), Err(PostingProblem::BadVarbyte { .. })));
        let mut t = segment(&[(3, 1), (3, 2)]);
        t[6] = 200; // nbytes past the end
        assert!(matches!(decode_segments(&t, 0, t.len(), None, |_| {}), Err(PostingProblem::Truncated { at: 0 })));
        let o = segment(&[(3, 0)]);
        assert!(matches!(decode_segments(&o, 0, o.len(), None, |_| {}), Err(PostingProblem::InvalidItem { .. })));
    }
}
