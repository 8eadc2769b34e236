//! GiST pages (`src/include/access/gist.h`, `src/include/access/gist_private.h`): the special space and what the
//! tuples' TIDs mean. The tuples themselves are plain `IndexTupleData` (access/itup.h), shared with btree.

use crate::format::bytes::{u16_at, u32_at};
use crate::format::page::{Page, GIST_PAGE_ID};

/// MAXALIGN(sizeof(GISTPageOpaqueData)) (access/gist.h): nsn, rightlink, flags, page id.
pub const GIST_SPECIAL_SIZE: usize = 16;
/// Where `flags` lies in the special space (access/gist.h, GISTPageOpaqueData).
pub const GIST_FLAGS_OFFSET: usize = 12;
/// Where `rightlink` lies in the special space.
pub const GIST_RIGHTLINK_OFFSET: usize = 8;

// GISTPageOpaqueData.flags bits (access/gist.h).
pub const F_LEAF: u16 = 1 << 0;
pub const F_DELETED: u16 = 1 << 1;
pub const F_TUPLES_DELETED: u16 = 1 << 2;
pub const F_FOLLOW_RIGHT: u16 = 1 << 3;
pub const F_HAS_GARBAGE: u16 = 1 << 4;
/// Every flag bit gist.h defines; any other bit was never written by the server.
pub const F_VALID_BITS: u16 = F_LEAF | F_DELETED | F_TUPLES_DELETED | F_FOLLOW_RIGHT | F_HAS_GARBAGE;

/// `GIST_ROOT_BLKNO` (access/gist_private.h): the root never moves.
pub const GIST_ROOT_BLKNO: u64 = 0;
/// `InvalidBlockNumber` (storage/block.h): a rightlink to no page.
pub const INVALID_BLOCK_NUMBER: u32 = 0xFFFF_FFFF;
/// `TUPLE_IS_VALID` / `TUPLE_IS_INVALID` (access/gist_private.h): the offset field of an inner tuple's downlink. An
/// invalid one is left by a crash in a pre-9.1 split; gistdoinsert refuses it ("contains an inner tuple marked as
/// invalid").
pub const TUPLE_IS_VALID: u16 = 0xFFFF;
pub const TUPLE_IS_INVALID: u16 = 0xFFFE;
/// `GistBuildLSN` (access/gist.h): the fake LSN and NSN of pages written by an index build.
pub const GIST_BUILD_LSN: u64 = 1;

/// `GISTPageOpaqueData` (access/gist.h): the 16-byte special space of every GiST page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GISTPageOpaqueData {
    /// `nsn`: the LSN of the split that last moved tuples right of this page (two 32-bit halves on disk, like
    /// pd_lsn).
    pub nsn: u64,
    /// `rightlink`: the page split off to the right, InvalidBlockNumber if none.
    pub rightlink: u32,
    pub flags: u16,
    pub gist_page_id: u16,
}

impl GISTPageOpaqueData {
    pub fn parse(special: &[u8]) -> Option<Self> {
        let hi = u32_at(special, 0)?;
        let lo = u32_at(special, 4)?;
        Some(GISTPageOpaqueData {
            nsn: (u64::from(hi) << 32) | u64::from(lo),
            rightlink: u32_at(special, GIST_RIGHTLINK_OFFSET)?,
            flags: u16_at(special, GIST_FLAGS_OFFSET)?,
            gist_page_id: u16_at(special, 14)?,
        })
    }

    /// The special space of a GiST page: 16 bytes ending in GIST_PAGE_ID; None otherwise.
    pub fn from_page(page: &Page<'_>) -> Option<Self> {
        if page.special_size() != GIST_SPECIAL_SIZE {
            return None;
        }
        Self::parse(page.special()?).filter(|o| o.gist_page_id == GIST_PAGE_ID)
    }

    pub fn is_leaf(&self) -> bool {
        self.flags & F_LEAF != 0
    }

    pub fn is_deleted(&self) -> bool {
        self.flags & F_DELETED != 0
    }

    pub fn has_rightlink(&self) -> bool {
        self.rightlink != INVALID_BLOCK_NUMBER
    }
}

/// The flag names set in `flags`, `|`-joined (`F_LEAF|F_TUPLES_DELETED`), `0` for none.
pub fn flag_names(flags: u16) -> String {
    const NAMES: [(u16, &str); 5] = [
        (F_LEAF, "F_LEAF"),
        (F_DELETED, "F_DELETED"),
        (F_TUPLES_DELETED, "F_TUPLES_DELETED"),
        (F_FOLLOW_RIGHT, "F_FOLLOW_RIGHT"),
        (F_HAS_GARBAGE, "F_HAS_GARBAGE"),
    ];
    let mut parts: Vec<String> = NAMES.iter().filter(|(b, _)| flags & b != 0).map(|(_, n)| n.to_string()).collect();
    let rest = flags & !F_VALID_BITS;
    if rest != 0 {
        parts.push(format!("0x{rest:04x}"));
    }
    if parts.is_empty() {
        "0".to_string()
    } else {
        parts.join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_parses_and_names_flags() {
        let mut s = [0u8; 16];
        s[0..4].copy_from_slice(&1u32.to_le_bytes());
        s[4..8].copy_from_slice(&0x20u32.to_le_bytes());
        s[8..12].copy_from_slice(&INVALID_BLOCK_NUMBER.to_le_bytes());
        s[12..14].copy_from_slice(&(F_LEAF | 0x40).to_le_bytes());
        s[14..16].copy_from_slice(&GIST_PAGE_ID.to_le_bytes());
        let o = GISTPageOpaqueData::parse(&s).unwrap();
        assert_eq!(o.nsn, 0x1_0000_0020);
        assert!(o.is_leaf() && !o.has_rightlink());
        assert_eq!(flag_names(o.flags), "F_LEAF|0x0040");
        assert_eq!(flag_names(0), "0");
        assert!(GISTPageOpaqueData::parse(&s[..10]).is_none());
    }
}
