//! SP-GiST pages (`src/include/access/spgist_private.h`): the special space, the metapage, inner tuples with their
//! nodes, leaf tuples with their chains, and the dead (redirect, placeholder) tuples. Bit fields are read as a
//! little-endian build lays them out: the first declared field in the lowest bits.

use crate::format::bytes::{u16_at, u32_at};
use crate::format::heap::ItemPointerData;
use crate::format::page::{Page, SPGIST_PAGE_ID};

/// MAXALIGN(sizeof(SpGistPageOpaqueData)): flags, nRedirection, nPlaceholder, page id.
pub const SPGIST_SPECIAL_SIZE: usize = 8;

// SpGistPageOpaqueData.flags bits.
pub const SPGIST_META: u16 = 1 << 0;
/// Never set since 9.2 (kept by the server for compatibility).
pub const SPGIST_DELETED: u16 = 1 << 1;
pub const SPGIST_LEAF: u16 = 1 << 2;
pub const SPGIST_NULLS: u16 = 1 << 3;
pub const SPGIST_VALID_BITS: u16 = SPGIST_META | SPGIST_DELETED | SPGIST_LEAF | SPGIST_NULLS;

/// `SPGIST_MAGIC_NUMBER`, the metapage's first word; spgGetCache refuses another ("is not an SP-GiST index").
pub const SPGIST_MAGIC_NUMBER: u32 = 0xBA0B_ABEE;
/// `SPGIST_METAPAGE_BLKNO`, `SPGIST_ROOT_BLKNO`, `SPGIST_NULL_BLKNO`.
pub const SPGIST_METAPAGE_BLKNO: u64 = 0;
pub const SPGIST_ROOT_BLKNO: u64 = 1;
pub const SPGIST_NULL_BLKNO: u64 = 2;

// tupstate values.
pub const SPGIST_LIVE: u8 = 0;
pub const SPGIST_REDIRECT: u8 = 1;
pub const SPGIST_DEAD: u8 = 2;
pub const SPGIST_PLACEHOLDER: u8 = 3;

/// `SGITHDRSZ`: MAXALIGN(sizeof(SpGistInnerTupleData)).
pub const SGITHDRSZ: usize = 8;
/// `SGNTHDRSZ`: MAXALIGN(sizeof(IndexTupleData)), a node tuple's header.
pub const SGNTHDRSZ: usize = 8;
/// `SGDTSIZE`: MAXALIGN(sizeof(SpGistDeadTupleData)), the size of redirect and placeholder tuples and the least
/// size of a leaf tuple.
pub const SGDTSIZE: usize = 16;
/// `SGLT_GET_NEXTOFFSET`'s mask over t_info.
pub const SGLT_NEXTOFFSET_MASK: u16 = 0x3FFF;
/// `InvalidBlockNumber`: a node with no child.
pub const INVALID_BLOCK_NUMBER: u32 = 0xFFFF_FFFF;

/// `SpGistPageOpaqueData`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpGistPageOpaqueData {
    pub flags: u16,
    /// `nRedirection`: redirect tuples on the page.
    pub n_redirection: u16,
    /// `nPlaceholder`: placeholder tuples on the page (insertion reuses them, trusting this count).
    pub n_placeholder: u16,
    pub spgist_page_id: u16,
}

impl SpGistPageOpaqueData {
    pub fn parse(special: &[u8]) -> Option<Self> {
        Some(SpGistPageOpaqueData {
            flags: u16_at(special, 0)?,
            n_redirection: u16_at(special, 2)?,
            n_placeholder: u16_at(special, 4)?,
            spgist_page_id: u16_at(special, 6)?,
        })
    }

    /// The special space of an SP-GiST page: 8 bytes ending in SPGIST_PAGE_ID; None otherwise.
    pub fn from_page(page: &Page<'_>) -> Option<Self> {
        if page.special_size() != SPGIST_SPECIAL_SIZE {
            return None;
        }
        Self::parse(page.special()?).filter(|o| o.spgist_page_id == SPGIST_PAGE_ID)
    }

    pub fn is_meta(&self) -> bool {
        self.flags & SPGIST_META != 0
    }
    pub fn is_leaf(&self) -> bool {
        self.flags & SPGIST_LEAF != 0
    }
    pub fn stores_nulls(&self) -> bool {
        self.flags & SPGIST_NULLS != 0
    }
}

/// The tupstate of any SP-GiST tuple: the low two bits of its first word.
pub fn tupstate(tuple: &[u8]) -> Option<u8> {
    Some((u32_at(tuple, 0)? & 3) as u8)
}

/// `SpGistInnerTupleData`: tupstate:2, allTheSame:1, nNodes:13, prefixSize:16, then size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpGistInnerTupleData {
    pub tupstate: u8,
    pub all_the_same: bool,
    pub n_nodes: u16,
    pub prefix_size: u16,
    pub size: u16,
}

impl SpGistInnerTupleData {
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        let w = u32_at(tuple, 0)?;
        Some(SpGistInnerTupleData {
            tupstate: (w & 3) as u8,
            all_the_same: w & 4 != 0,
            n_nodes: ((w >> 3) & 0x1FFF) as u16,
            prefix_size: (w >> 16) as u16,
            size: u16_at(tuple, 4)?,
        })
    }
}

/// `SpGistLeafTupleData`: tupstate:2, size:30, t_info (nextOffset and the null-mask flag), heapPtr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpGistLeafTupleData {
    pub tupstate: u8,
    pub size: u32,
    pub t_info: u16,
    pub heap_ptr: ItemPointerData,
}

impl SpGistLeafTupleData {
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        let w = u32_at(tuple, 0)?;
        Some(SpGistLeafTupleData {
            tupstate: (w & 3) as u8,
            size: w >> 2,
            t_info: u16_at(tuple, 4)?,
            heap_ptr: ItemPointerData::parse(tuple, 6)?,
        })
    }

    /// `SGLT_GET_NEXTOFFSET`: the next tuple of the chain on this page, 0 at its end.
    pub fn next_offset(&self) -> u16 {
        self.t_info & SGLT_NEXTOFFSET_MASK
    }
}

/// `SpGistDeadTupleData`: a redirect's `pointer` (block, offset) sits where a leaf tuple's heapPtr is; then `xid`.
pub fn dead_tuple_pointer(tuple: &[u8]) -> Option<ItemPointerData> {
    ItemPointerData::parse(tuple, 6)
}

/// The node tuples of an inner tuple: (offset of the node inside the tuple, its downlink). `None` when a node's size
/// runs past the tuple (then the nodes after it cannot be found).
pub fn inner_nodes(tuple: &[u8], t: &SpGistInnerTupleData) -> Option<Vec<(usize, ItemPointerData)>> {
    let end = usize::from(t.size).min(tuple.len());
    let mut at = SGITHDRSZ + usize::from(t.prefix_size);
    let mut out = Vec::with_capacity(usize::from(t.n_nodes));
    for _ in 0..t.n_nodes {
        let info = u16_at(tuple, at + 6)?;
        let size = usize::from(info & crate::format::btree::INDEX_SIZE_MASK);
        if size < SGNTHDRSZ || at + size > end {
            return None;
        }
        out.push((at, ItemPointerData::parse(tuple, at)?));
        at += size;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_tuple_bits_and_nodes() {
        // LIVE, not allTheSame, 2 nodes, no prefix, size 8 + 2 * 8
        let mut t = vec![0u8; 24];
        t[0..4].copy_from_slice(&(2u32 << 3).to_le_bytes());
        t[4..6].copy_from_slice(&24u16.to_le_bytes());
        for (i, blk) in [(0usize, 5u32), (1, INVALID_BLOCK_NUMBER)] {
            let at = 8 + i * 8;
            ItemPointerData { block: blk, offset: 3 }.write(&mut t, at);
            t[at + 6..at + 8].copy_from_slice(&8u16.to_le_bytes());
        }
        let h = SpGistInnerTupleData::parse(&t).unwrap();
        assert_eq!((h.tupstate, h.n_nodes, h.prefix_size, h.size), (SPGIST_LIVE, 2, 0, 24));
        let nodes = inner_nodes(&t, &h).unwrap();
        assert_eq!(nodes.iter().map(|n| n.1.block).collect::<Vec<_>>(), [5, INVALID_BLOCK_NUMBER]);
        t[14..16].copy_from_slice(&200u16.to_le_bytes());
        assert!(inner_nodes(&t, &h).is_none());
    }

    #[test]
    fn leaf_tuple_next_offset() {
        let mut t = vec![0u8; 16];
        t[0..4].copy_from_slice(&(16u32 << 2).to_le_bytes());
        t[4..6].copy_from_slice(&(0x8000u16 | 7).to_le_bytes());
        let l = SpGistLeafTupleData::parse(&t).unwrap();
        assert_eq!((l.tupstate, l.size, l.next_offset()), (SPGIST_LIVE, 16, 7));
    }
}
