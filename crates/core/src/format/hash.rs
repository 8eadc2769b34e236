//! Hash index pages (`src/include/access/hash.h`; the bucket arithmetic of `access/hash/hashutil.c` and
//! `hashovfl.c`).

use crate::format::bytes::{u16_at, u32_at};
use crate::format::page::SIZE_OF_PAGE_HEADER_DATA;

/// MAXALIGN(sizeof(HashPageOpaqueData)): prevblkno, nextblkno, bucket, flag, page id.
pub const HASH_SPECIAL_SIZE: usize = 16;
/// `HASH_MAGIC`, in hashm_magic of the metapage.
pub const HASH_MAGIC: u32 = 0x0644_0640;
/// `HASH_VERSION`: the only version the server opens (`_hash_checkpage`).
pub const HASH_VERSION: u32 = 4;
/// `HASH_METAPAGE`: the metapage is always block 0.
pub const HASH_METAPAGE: u64 = 0;
/// `InvalidBlockNumber` (storage/block.h): no next page in a bucket chain.
pub const INVALID_BLOCK_NUMBER: u32 = 0xFFFF_FFFF;
/// `HASH_MAX_SPLITPOINTS` ((32 - 10) * 4 + 10) and `HASH_MAX_BITMAPS` (Min(BLCKSZ / 8, 1024)) for 8 KB pages.
pub const HASH_MAX_SPLITPOINTS: usize = 98;
pub const HASH_MAX_BITMAPS: usize = 1024;
/// `HASH_SPLITPOINT_PHASE_BITS`, `HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE`.
const HASH_SPLITPOINT_PHASE_BITS: u32 = 2;
const HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE: u32 = 10;
/// `INDEX_MOVED_BY_SPLIT_MASK` (= INDEX_AM_RESERVED_BIT, access/itup.h): a tuple copied to the new bucket of a split.
pub const INDEX_MOVED_BY_SPLIT_MASK: u16 = 0x2000;

// hasho_flag's page types and transient bits.
pub const LH_UNUSED_PAGE: u16 = 0;
pub const LH_OVERFLOW_PAGE: u16 = 1 << 0;
pub const LH_BUCKET_PAGE: u16 = 1 << 1;
pub const LH_BITMAP_PAGE: u16 = 1 << 2;
pub const LH_META_PAGE: u16 = 1 << 3;
pub const LH_BUCKET_BEING_POPULATED: u16 = 1 << 4;
pub const LH_BUCKET_BEING_SPLIT: u16 = 1 << 5;
pub const LH_BUCKET_NEEDS_SPLIT_CLEANUP: u16 = 1 << 6;
pub const LH_PAGE_HAS_DEAD_TUPLES: u16 = 1 << 7;
pub const LH_PAGE_TYPE: u16 = LH_OVERFLOW_PAGE | LH_BUCKET_PAGE | LH_BITMAP_PAGE | LH_META_PAGE;
/// Every bit hasho_flag may carry.
pub const LH_VALID_FLAG_BITS: u16 = 0x00FF;

/// `HashPageOpaqueData`, the special space of every hash page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashPageOpaqueData {
    /// Overflow page: the previous page of the chain. Bucket page: hashm_maxbucket when it was last split.
    pub hasho_prevblkno: u32,
    /// The next page of the chain, or InvalidBlockNumber.
    pub hasho_nextblkno: u32,
    pub hasho_bucket: u32,
    pub hasho_flag: u16,
    pub hasho_page_id: u16,
}

impl HashPageOpaqueData {
    /// `None` unless the special space is a hash page's size.
    pub fn parse(page: &[u8], pd_special: usize) -> Option<Self> {
        if pd_special.checked_add(HASH_SPECIAL_SIZE)? != page.len() {
            return None;
        }
        let s = page.get(pd_special..)?;
        Some(HashPageOpaqueData {
            hasho_prevblkno: u32_at(s, 0)?,
            hasho_nextblkno: u32_at(s, 4)?,
            hasho_bucket: u32_at(s, 8)?,
            hasho_flag: u16_at(s, 12)?,
            hasho_page_id: u16_at(s, 14)?,
        })
    }

    pub fn page_type(&self) -> u16 {
        self.hasho_flag & LH_PAGE_TYPE
    }
}

/// A page of this type, in words ("an overflow page").
pub fn a_page_of_type(t: u16) -> &'static str {
    match t {
        LH_UNUSED_PAGE => "an unused page",
        LH_OVERFLOW_PAGE => "an overflow page",
        LH_BUCKET_PAGE => "a bucket page",
        LH_BITMAP_PAGE => "a bitmap page",
        LH_META_PAGE => "the metapage",
        _ => "a page of several types",
    }
}

/// The name of a page type, as the server's comments call it.
pub fn page_type_name(t: u16) -> &'static str {
    match t {
        LH_UNUSED_PAGE => "unused",
        LH_OVERFLOW_PAGE => "overflow",
        LH_BUCKET_PAGE => "bucket",
        LH_BITMAP_PAGE => "bitmap",
        LH_META_PAGE => "meta",
        _ => "mixed",
    }
}

/// `HashMetaPageData`, at the start of the metapage's contents (`HashPageGetMeta`: after the 24-byte header).
#[derive(Debug, Clone, PartialEq)]
pub struct HashMetaPageData {
    pub hashm_magic: u32,
    pub hashm_version: u32,
    pub hashm_ntuples: f64,
    pub hashm_ffactor: u16,
    pub hashm_bsize: u16,
    pub hashm_bmsize: u16,
    pub hashm_bmshift: u16,
    pub hashm_maxbucket: u32,
    pub hashm_highmask: u32,
    pub hashm_lowmask: u32,
    pub hashm_ovflpoint: u32,
    pub hashm_firstfree: u32,
    pub hashm_nmaps: u32,
    pub hashm_procid: u32,
    pub hashm_spares: Vec<u32>,
    pub hashm_mapp: Vec<u32>,
}

impl HashMetaPageData {
    /// `None` when the bytes are short or hashm_magic is not HASH_MAGIC (the server refuses such a metapage:
    /// `_hash_checkpage`, hashutil.c).
    pub fn parse(page: &[u8]) -> Option<Self> {
        Self::parse_any(page).filter(|m| m.hashm_magic == HASH_MAGIC)
    }

    /// The fields whatever they hold; `None` only when the bytes are short.
    pub fn parse_any(page: &[u8]) -> Option<Self> {
        let at = SIZE_OF_PAGE_HEADER_DATA;
        let u32s = |from: usize, n: usize| (0..n).map(|i| u32_at(page, from + 4 * i)).collect::<Option<Vec<u32>>>();
        let spares_at = at + 52;
        let mapp_at = spares_at + 4 * HASH_MAX_SPLITPOINTS;
        Some(HashMetaPageData {
            hashm_magic: u32_at(page, at)?,
            hashm_version: u32_at(page, at + 4)?,
            hashm_ntuples: f64::from_bits(crate::format::bytes::u64_at(page, at + 8)?),
            hashm_ffactor: u16_at(page, at + 16)?,
            hashm_bsize: u16_at(page, at + 18)?,
            hashm_bmsize: u16_at(page, at + 20)?,
            hashm_bmshift: u16_at(page, at + 22)?,
            hashm_maxbucket: u32_at(page, at + 24)?,
            hashm_highmask: u32_at(page, at + 28)?,
            hashm_lowmask: u32_at(page, at + 32)?,
            hashm_ovflpoint: u32_at(page, at + 36)?,
            hashm_firstfree: u32_at(page, at + 40)?,
            hashm_nmaps: u32_at(page, at + 44)?,
            hashm_procid: u32_at(page, at + 48)?,
            hashm_spares: u32s(spares_at, HASH_MAX_SPLITPOINTS)?,
            hashm_mapp: u32s(mapp_at, HASH_MAX_BITMAPS)?,
        })
    }

    /// Byte offsets of fields in the page, for the injector.
    pub const OFFSET_MAGIC: usize = SIZE_OF_PAGE_HEADER_DATA;
    pub const OFFSET_VERSION: usize = SIZE_OF_PAGE_HEADER_DATA + 4;
    pub const OFFSET_MAXBUCKET: usize = SIZE_OF_PAGE_HEADER_DATA + 24;
    pub const OFFSET_HIGHMASK: usize = SIZE_OF_PAGE_HEADER_DATA + 28;
    pub const OFFSET_SPARES: usize = SIZE_OF_PAGE_HEADER_DATA + 52;
    pub const OFFSET_MAPP: usize = SIZE_OF_PAGE_HEADER_DATA + 52 + 4 * HASH_MAX_SPLITPOINTS;

    /// `BUCKET_TO_BLKNO`: the block of a bucket's primary page. `None` when the spares are out of range.
    pub fn bucket_to_blkno(&self, bucket: u32) -> Option<u64> {
        let spare = if bucket == 0 {
            0
        } else {
            let i = (hash_spareindex(bucket.checked_add(1)?) as usize).checked_sub(1)?;
            *self.hashm_spares.get(i)?
        };
        Some(u64::from(bucket) + u64::from(spare) + 1)
    }

    /// `_hash_hashkey2bucket`: the bucket a hash code belongs to.
    pub fn hashkey_to_bucket(&self, hashkey: u32) -> u32 {
        let b = hashkey & self.hashm_highmask;
        if b > self.hashm_maxbucket {
            b & self.hashm_lowmask
        } else {
            b
        }
    }

    /// `_hash_ovflblkno_to_bitno`: the bit of an overflow (or bitmap) page in the bitmaps; `None` when the block
    /// is no overflow page's (the server: "invalid overflow block number").
    pub fn ovflblkno_to_bitno(&self, blkno: u64) -> Option<u32> {
        let splitnum = self.hashm_ovflpoint.min(HASH_MAX_SPLITPOINTS as u32 - 1);
        for i in 1..=splitnum {
            let total = u64::from(hash_get_totalbuckets(i));
            if blkno <= total {
                return None;
            }
            let bitnum = blkno - total;
            let lo = u64::from(*self.hashm_spares.get(i as usize - 1)?);
            let hi = u64::from(*self.hashm_spares.get(i as usize)?);
            if bitnum > lo && bitnum <= hi {
                return u32::try_from(bitnum - 1).ok();
            }
        }
        None
    }

    /// Bits one bitmap page holds (`BMPGSZ_BIT`).
    pub fn bits_per_bitmap_page(&self) -> u32 {
        u32::from(self.hashm_bmsize) << 3
    }
}

/// `_hash_spareindex`: the splitpoint phase of a bucket count.
pub fn hash_spareindex(num_bucket: u32) -> u32 {
    let group = ceil_log2(num_bucket);
    if group < HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE {
        return group;
    }
    let mut phases = HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE;
    phases += (group - HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE) << HASH_SPLITPOINT_PHASE_BITS;
    phases += ((num_bucket - 1) >> (group - (HASH_SPLITPOINT_PHASE_BITS + 1))) & 3;
    phases
}

/// `_hash_get_totalbuckets`: buckets allocated up to a splitpoint phase.
pub fn hash_get_totalbuckets(phase: u32) -> u32 {
    if phase < HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE {
        return 1u32.checked_shl(phase).unwrap_or(0);
    }
    let group = HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE + ((phase - HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE) >> 2);
    let before = 1u32.checked_shl(group - 1).unwrap_or(0);
    let within = ((phase - HASH_SPLITPOINT_GROUPS_WITH_ONE_PHASE) & 3) + 1;
    before.wrapping_add((before >> HASH_SPLITPOINT_PHASE_BITS).wrapping_mul(within))
}

/// `pg_ceil_log2_32`.
fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// The hash code a hash index tuple stores (its one attribute, after the 8-byte IndexTupleData: hash tuples
/// never have nulls), with the tuple's heap TID and t_info.
pub fn hash_tuple(tuple: &[u8]) -> Option<(crate::format::heap::ItemPointerData, u16, u32)> {
    let tid = crate::format::heap::ItemPointerData::parse(tuple, 0)?;
    Some((tid, u16_at(tuple, 6)?, u32_at(tuple, 8)?))
}

/// The bits a hash code shares with its bucket whatever the metapage says: a bucket `b` only ever receives codes
/// whose low bits, up to the next power of two above `b`, are `b` (`_hash_hashkey2bucket` with any masks that
/// ever held `b`; a split moves codes only to the bucket whose number adds the next bit).
pub fn bucket_low_mask(bucket: u32) -> u32 {
    match bucket {
        0 => 0,
        b => u32::MAX >> b.leading_zeros(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitpoint_arithmetic_matches_hashutil() {
        // the single-phase groups: 1, 2, 4 ... buckets
        assert_eq!((hash_spareindex(1), hash_spareindex(2), hash_spareindex(3), hash_spareindex(5)), (0, 1, 2, 3));
        assert_eq!((hash_get_totalbuckets(0), hash_get_totalbuckets(3), hash_get_totalbuckets(9)), (1, 8, 512));
        // group 10 has four phases of 128 buckets
        assert_eq!(hash_spareindex(513), 10);
        assert_eq!(hash_spareindex(641), 11);
        assert_eq!((hash_get_totalbuckets(10), hash_get_totalbuckets(11)), (640, 768));
        assert_eq!((bucket_low_mask(0), bucket_low_mask(1), bucket_low_mask(5), bucket_low_mask(8)), (0, 1, 7, 15));
    }

    #[test]
    fn buckets_map_to_blocks_after_the_spares() {
        let mut page = vec![0u8; 8192];
        page[24..28].copy_from_slice(&HASH_MAGIC.to_le_bytes());
        let m0 = HashMetaPageData::parse(&page).unwrap();
        assert_eq!((m0.bucket_to_blkno(0), m0.bucket_to_blkno(1), m0.bucket_to_blkno(3)), (Some(1), Some(2), Some(4)));
        // one overflow page (plus the bitmap page) allocated at splitpoint 2: buckets from 4 on move two blocks
        for i in 2..HASH_MAX_SPLITPOINTS {
            let at = HashMetaPageData::OFFSET_SPARES + 4 * i;
            page[at..at + 4].copy_from_slice(&2u32.to_le_bytes());
        }
        page[24 + 36..24 + 40].copy_from_slice(&3u32.to_le_bytes());
        let m = HashMetaPageData::parse(&page).unwrap();
        assert_eq!((m.bucket_to_blkno(3), m.bucket_to_blkno(4)), (Some(4), Some(7)));
        assert_eq!(
            (m.ovflblkno_to_bitno(5), m.ovflblkno_to_bitno(6), m.ovflblkno_to_bitno(7)),
            (Some(0), Some(1), None)
        );
    }
}
