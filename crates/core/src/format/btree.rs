//! B-tree pages (`src/include/access/nbtree.h`, `src/include/access/itup.h`).

use serde::Serialize;

use crate::format::bytes::{hex_spaced, maxalign, u16_at, u32_at, u64_at, u8_at};
use crate::format::heap::ItemPointerData;
use crate::format::page::{Page, BTP_META};

/// MAXALIGN(sizeof(BTPageOpaqueData)) (nbtree.h).
pub const BT_SPECIAL_SIZE: usize = 16;
/// `BTREE_MAGIC` (nbtree.h), in btm_magic of the metapage.
pub const BTREE_MAGIC: u32 = 0x053162;
/// `BTREE_VERSION` / `BTREE_MIN_VERSION` (nbtree.h).
pub const BTREE_VERSION: u32 = 4;
pub const BTREE_MIN_VERSION: u32 = 2;
/// `P_NONE` (nbtree.h): no sibling.
pub const P_NONE: u32 = 0;
/// `P_HIKEY` (nbtree.h): offset of the high key on non-rightmost pages.
pub const P_HIKEY: u16 = 1;

// btpo_flags bits (nbtree.h).
pub const BTP_LEAF: u16 = 1 << 0;
pub const BTP_ROOT: u16 = 1 << 1;
pub const BTP_DELETED: u16 = 1 << 2;
// BTP_META (1 << 3) is in page.rs, which needs it to tell page kinds apart.
pub const BTP_HALF_DEAD: u16 = 1 << 4;
pub const BTP_SPLIT_END: u16 = 1 << 5;
pub const BTP_HAS_GARBAGE: u16 = 1 << 6;
pub const BTP_INCOMPLETE_SPLIT: u16 = 1 << 7;
pub const BTP_HAS_FULLXID: u16 = 1 << 8;

const FLAG_NAMES: [(u16, &str); 9] = [
    (BTP_LEAF, "BTP_LEAF"),
    (BTP_ROOT, "BTP_ROOT"),
    (BTP_DELETED, "BTP_DELETED"),
    (BTP_META, "BTP_META"),
    (BTP_HALF_DEAD, "BTP_HALF_DEAD"),
    (BTP_SPLIT_END, "BTP_SPLIT_END"),
    (BTP_HAS_GARBAGE, "BTP_HAS_GARBAGE"),
    (BTP_INCOMPLETE_SPLIT, "BTP_INCOMPLETE_SPLIT"),
    (BTP_HAS_FULLXID, "BTP_HAS_FULLXID"),
];

// IndexTupleData.t_info (itup.h).
pub const INDEX_SIZE_MASK: u16 = 0x1FFF;
/// `INDEX_AM_RESERVED_BIT`, which nbtree uses as `INDEX_ALT_TID_MASK`.
pub const INDEX_ALT_TID_MASK: u16 = 0x2000;
pub const INDEX_VAR_MASK: u16 = 0x4000;
pub const INDEX_NULL_MASK: u16 = 0x8000;
// The t_tid offset field of pivot and posting tuples (nbtree.h).
pub const BT_OFFSET_MASK: u16 = 0x0FFF;
pub const BT_PIVOT_HEAP_TID_ATTR: u16 = 0x1000;
pub const BT_IS_POSTING: u16 = 0x2000;
/// sizeof(ItemPointerData).
pub const SIZE_OF_ITEM_POINTER: usize = 6;

/// `BTPageOpaqueData` (nbtree.h): the 16-byte special space of every btree page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BTPageOpaqueData {
    /// `btpo_prev`: left sibling, P_NONE if leftmost.
    pub btpo_prev: u32,
    /// `btpo_next`: right sibling, P_NONE if rightmost.
    pub btpo_next: u32,
    /// `btpo_level`: 0 for leaves.
    pub btpo_level: u32,
    /// `btpo_flags`: BTP_* bits.
    pub btpo_flags: u16,
    /// `btpo_cycleid`: vacuum cycle id of the latest split.
    pub btpo_cycleid: u16,
}

impl BTPageOpaqueData {
    pub fn parse(special: &[u8]) -> Option<Self> {
        Some(BTPageOpaqueData {
            btpo_prev: u32_at(special, 0)?,
            btpo_next: u32_at(special, 4)?,
            btpo_level: u32_at(special, 8)?,
            btpo_flags: u16_at(special, 12)?,
            btpo_cycleid: u16_at(special, 14)?,
        })
    }

    pub fn from_page(page: &Page<'_>) -> Option<Self> {
        if page.special_size() != BT_SPECIAL_SIZE {
            return None;
        }
        Self::parse(page.special()?)
    }

    pub fn is_leaf(&self) -> bool {
        self.btpo_flags & BTP_LEAF != 0
    }
    pub fn is_rightmost(&self) -> bool {
        self.btpo_next == P_NONE
    }
    pub fn is_meta(&self) -> bool {
        self.btpo_flags & BTP_META != 0
    }
    pub fn is_deleted(&self) -> bool {
        self.btpo_flags & BTP_DELETED != 0
    }
    pub fn flag_names(&self) -> Vec<&'static str> {
        FLAG_NAMES.iter().filter(|(b, _)| self.btpo_flags & b != 0).map(|(_, n)| *n).collect()
    }
}

/// `BTMetaPageData` (nbtree.h), at offset 24 of block 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BTMetaPageData {
    pub btm_magic: u32,
    pub btm_version: u32,
    pub btm_root: u32,
    pub btm_level: u32,
    pub btm_fastroot: u32,
    pub btm_fastlevel: u32,
    pub btm_last_cleanup_num_delpages: u32,
    pub btm_last_cleanup_num_heap_tuples: f64,
    pub btm_allequalimage: bool,
}

impl BTMetaPageData {
    pub fn parse(page: &[u8]) -> Option<Self> {
        Some(BTMetaPageData {
            btm_magic: u32_at(page, 24)?,
            btm_version: u32_at(page, 28)?,
            btm_root: u32_at(page, 32)?,
            btm_level: u32_at(page, 36)?,
            btm_fastroot: u32_at(page, 40)?,
            btm_fastlevel: u32_at(page, 44)?,
            btm_last_cleanup_num_delpages: u32_at(page, 48)?,
            btm_last_cleanup_num_heap_tuples: f64::from_bits(u64_at(page, 56)?),
            btm_allequalimage: u8_at(page, 64)? != 0,
        })
    }
}

/// `IndexTupleData` (itup.h): heap TID (or pivot/posting metadata) and t_info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexTupleData {
    pub t_tid: ItemPointerData,
    pub t_info: u16,
}

impl IndexTupleData {
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        Some(IndexTupleData { t_tid: ItemPointerData::parse(tuple, 0)?, t_info: u16_at(tuple, 6)? })
    }
    /// `IndexTupleSize`.
    pub fn size(&self) -> usize {
        usize::from(self.t_info & INDEX_SIZE_MASK)
    }
    pub fn has_nulls(&self) -> bool {
        self.t_info & INDEX_NULL_MASK != 0
    }
    pub fn has_varwidths(&self) -> bool {
        self.t_info & INDEX_VAR_MASK != 0
    }
    /// `IndexInfoFindDataOffset`: 8, or 16 with the fixed 4-byte null bitmap.
    pub fn data_offset(&self) -> usize {
        if self.has_nulls() {
            maxalign(8 + 4)
        } else {
            8
        }
    }
    /// `BTreeTupleIsPivot`.
    pub fn is_pivot(&self) -> bool {
        self.t_info & INDEX_ALT_TID_MASK != 0 && self.t_tid.offset & BT_IS_POSTING == 0
    }
    /// `BTreeTupleIsPosting`.
    pub fn is_posting(&self) -> bool {
        self.t_info & INDEX_ALT_TID_MASK != 0 && self.t_tid.offset & BT_IS_POSTING != 0
    }
    /// `BTreeTupleGetNPosting` / the pivot's key attribute count.
    pub fn alt_count(&self) -> u16 {
        self.t_tid.offset & BT_OFFSET_MASK
    }
    /// `BTreeTupleGetPostingOffset`: where the TID list starts inside the tuple.
    pub fn posting_offset(&self) -> usize {
        self.t_tid.block as usize
    }
}

/// A btree item as pageinspect's bt_page_items shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BtItem {
    pub itemoffset: u16,
    pub ctid: ItemPointerData,
    pub itemlen: usize,
    pub nulls: bool,
    pub vars: bool,
    /// Key bytes as spaced hex (no posting list, no pivot heap TID).
    pub data: String,
    /// LP_DEAD, for non-pivot tuples.
    pub dead: Option<bool>,
    pub htid: Option<ItemPointerData>,
    pub tids: Option<Vec<ItemPointerData>>,
    pub is_pivot: bool,
    pub is_posting: bool,
}

/// Decode one btree item the way bt_page_print_tuples does. `None` when the item's bytes lie
/// outside the page or are too short to hold what its header claims.
pub fn decode_item(itemoffset: u16, tuple: &[u8], dead: bool, opaque: &BTPageOpaqueData) -> Option<BtItem> {
    let it = IndexTupleData::parse(tuple)?;
    let size = it.size();
    let body = tuple.get(..size)?;
    let doff = it.data_offset();
    let mut dlen = size.checked_sub(doff)? as isize;
    let pivot_htid = it.is_pivot() && it.t_tid.offset & BT_PIVOT_HEAP_TID_ATTR != 0;
    if it.is_posting() {
        dlen -= (size as isize) - (it.posting_offset() as isize);
    } else if pivot_htid {
        dlen -= maxalign(SIZE_OF_ITEM_POINTER) as isize;
    }
    if dlen < 0 {
        return None;
    }
    let data = body.get(doff..doff + dlen as usize)?;
    let ispivottuple = !opaque.is_leaf() || (!opaque.is_rightmost() && itemoffset == P_HIKEY);
    let mut tids = None;
    let mut htid = if it.is_pivot() {
        if pivot_htid {
            ItemPointerData::parse(body, size - SIZE_OF_ITEM_POINTER)
        } else {
            None
        }
    } else if it.is_posting() {
        let n = usize::from(it.alt_count());
        let start = it.posting_offset();
        let list: Option<Vec<_>> =
            (0..n).map(|i| ItemPointerData::parse(body, start + i * SIZE_OF_ITEM_POINTER)).collect();
        let list = list?;
        let first = list.first().copied();
        tids = Some(list);
        first
    } else {
        Some(it.t_tid)
    };
    if ispivottuple && !it.is_pivot() {
        htid = None;
    }
    Some(BtItem {
        itemoffset,
        ctid: it.t_tid,
        itemlen: size,
        nulls: it.has_nulls(),
        vars: it.has_varwidths(),
        data: hex_spaced(data),
        dead: if ispivottuple { None } else { Some(dead) },
        htid,
        tids,
        is_pivot: it.is_pivot(),
        is_posting: it.is_posting(),
    })
}

/// The key bytes of a leaf tuple as [`decode_item`] gives them: after the header (and null bitmap), before a
/// posting list. `None` when the tuple is shorter than its header claims.
pub fn leaf_key(tuple: &[u8]) -> Option<&[u8]> {
    let it = IndexTupleData::parse(tuple)?;
    let end = if it.is_posting() { it.posting_offset() } else { it.size() };
    tuple.get(..it.size())?.get(it.data_offset()..end)
}

/// The heap TIDs a leaf tuple points to: its t_tid, or every TID of a posting list. Pivot tuples
/// (high keys) point nowhere. `false` when the tuple is too damaged to say.
pub fn leaf_heap_tids(tuple: &[u8], out: &mut Vec<ItemPointerData>) -> bool {
    out.clear();
    let Some(it) = IndexTupleData::parse(tuple) else { return false };
    if it.is_pivot() {
        return true;
    }
    if it.is_posting() {
        let start = it.posting_offset();
        for i in 0..usize::from(it.alt_count()) {
            match ItemPointerData::parse(tuple, start + i * SIZE_OF_ITEM_POINTER) {
                Some(t) => out.push(t),
                None => return false,
            }
        }
        return true;
    }
    out.push(it.t_tid);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index tuple: t_tid, t_info (size, plus the ALT_TID bit for a posting list), then `body`.
    fn tuple(tid: ItemPointerData, alt: bool, body: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 8];
        tid.write(&mut t, 0);
        let info = (8 + body.len()) as u16 | if alt { INDEX_ALT_TID_MASK } else { 0 };
        t[6..8].copy_from_slice(&info.to_le_bytes());
        t.extend_from_slice(body);
        t
    }

    fn leaf() -> BTPageOpaqueData {
        BTPageOpaqueData { btpo_prev: 0, btpo_next: 0, btpo_level: 0, btpo_flags: BTP_LEAF, btpo_cycleid: 0 }
    }

    fn hex_data(t: &[u8]) -> String {
        decode_item(1, t, false, &leaf()).expect("decodes").data
    }

    #[test]
    fn leaf_key_is_the_data_bt_page_items_shows() {
        let key = 42i64.to_le_bytes();
        let plain = tuple(ItemPointerData { block: 7, offset: 3 }, false, &key);
        assert_eq!(leaf_key(&plain), Some(&key[..]));
        assert_eq!(hex_spaced(leaf_key(&plain).unwrap()), hex_data(&plain));
        // a posting list: t_tid.block is where the TIDs start, t_tid.offset their count with BT_IS_POSTING
        let mut body = key.to_vec();
        for (b, o) in [(1u32, 1u16), (1, 2)] {
            let mut tid = [0u8; 6];
            ItemPointerData { block: b, offset: o }.write(&mut tid, 0);
            body.extend_from_slice(&tid);
        }
        let posting = tuple(ItemPointerData { block: 16, offset: 2 | BT_IS_POSTING }, true, &body);
        assert_eq!(leaf_key(&posting), Some(&key[..]));
        assert_eq!(hex_spaced(leaf_key(&posting).unwrap()), hex_data(&posting));
        // a header claiming more bytes than the tuple has
        let mut short = plain.clone();
        short.truncate(12);
        assert_eq!(leaf_key(&short), None);
    }
}
