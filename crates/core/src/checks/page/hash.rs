//! One hash index page: its special space and type, the metapage's fields against each other, and the items of
//! bucket and overflow pages (their hash codes in order and in the page's bucket). What needs other pages (chains,
//! bitmaps, bucket positions) is in checks/scan/hashbrin.rs.

use super::check_line_pointers;
use crate::finding::{Code, Finding};
use crate::format::bytes::maxalign;
use crate::format::hash::{
    bucket_low_mask, hash_spareindex, hash_tuple, page_type_name, HashMetaPageData, HashPageOpaqueData, HASH_MAGIC,
    HASH_MAX_BITMAPS, HASH_MAX_SPLITPOINTS, HASH_SPECIAL_SIZE, HASH_VERSION, LH_BITMAP_PAGE, LH_BUCKET_PAGE,
    LH_META_PAGE, LH_OVERFLOW_PAGE, LH_UNUSED_PAGE, LH_VALID_FLAG_BITS,
};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind, HASHO_PAGE_ID};

/// At most this many item findings per page, as for line pointers.
const MAX_ITEM_FINDINGS: usize = 16;

/// Every page-local check of a hash page (`block` of the index).
pub fn check_hash_page(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    if page.header().is_new() {
        return out;
    }
    let Some(o) = HashPageOpaqueData::parse(page.bytes(), usize::from(page.header().pd_special)) else {
        out.push(Finding::new(
            Code::IndexSpecialSize,
            block,
            None,
            format!("special space is {} bytes, a hash page has {HASH_SPECIAL_SIZE}", page.special_size()),
        ));
        return out;
    };
    if let Some(f) = page_type_finding(&o, block) {
        out.push(f);
        return out;
    }
    match o.page_type() {
        LH_META_PAGE => out.extend(check_hash_meta(page, block)),
        LH_BUCKET_PAGE | LH_OVERFLOW_PAGE => {
            out.extend(check_line_pointers(page, PageKind::Hash, block));
            if out.is_empty() {
                out.extend(check_hash_items(page, &o, block));
            }
        }
        _ => {}
    }
    out
}

/// The page id, flag bits and type, and the type against the block (the metapage is block 0 and only it).
fn page_type_finding(o: &HashPageOpaqueData, block: Option<u64>) -> Option<Finding> {
    let t = o.page_type();
    let msg = if o.hasho_page_id != HASHO_PAGE_ID {
        format!("hasho_page_id 0x{:04x} is not HASHO_PAGE_ID (0x{HASHO_PAGE_ID:04x})", o.hasho_page_id)
    } else if o.hasho_flag & !LH_VALID_FLAG_BITS != 0 {
        format!("hasho_flag 0x{:04x} has undefined bits", o.hasho_flag)
    } else if !matches!(t, LH_UNUSED_PAGE | LH_OVERFLOW_PAGE | LH_BUCKET_PAGE | LH_BITMAP_PAGE | LH_META_PAGE) {
        format!("hasho_flag 0x{:04x} names several page types at once", o.hasho_flag)
    } else if block == Some(0) && t != LH_META_PAGE {
        format!("block 0 of a hash index must be the metapage, it is a {} page", page_type_name(t))
    } else if block.is_some_and(|b| b != 0) && t == LH_META_PAGE {
        "a metapage on a block other than 0".to_string()
    } else {
        return None;
    };
    Some(Finding::new(Code::IndexHashPageType, block, None, msg))
}

/// The metapage's fields against each other, as `_hash_init_metabuffer` and `_hash_expandtable` keep them.
pub fn check_hash_meta(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let Some(m) = HashMetaPageData::parse_any(page.bytes()) else { return Vec::new() };
    let bad = |msg: String| vec![Finding::new(Code::IndexHashMetapage, block, None, msg)];
    if m.hashm_magic != HASH_MAGIC {
        return bad(format!("hashm_magic 0x{:08x} is not HASH_MAGIC (0x{HASH_MAGIC:08x})", m.hashm_magic));
    }
    if m.hashm_version != HASH_VERSION {
        return bad(format!("hashm_version {} (the server only opens version {HASH_VERSION})", m.hashm_version));
    }
    let bsize = page.len().saturating_sub(24 + HASH_SPECIAL_SIZE);
    let bm_ok = m.hashm_bmsize.is_power_of_two()
        && u32::from(m.hashm_bmsize) == 1u32.checked_shl(u32::from(m.hashm_bmshift).wrapping_sub(3)).unwrap_or(0)
        && usize::from(m.hashm_bmsize) <= bsize;
    if usize::from(m.hashm_bsize) != bsize || !bm_ok {
        return bad(format!(
            "hashm_bsize {}, hashm_bmsize {}, hashm_bmshift {} do not fit a {}-byte page",
            m.hashm_bsize,
            m.hashm_bmsize,
            m.hashm_bmshift,
            page.len()
        ));
    }
    let (max, high, low) = (m.hashm_maxbucket, m.hashm_highmask, m.hashm_lowmask);
    if high.wrapping_add(1) & high != 0 || high != low.wrapping_mul(2).wrapping_add(1) || max < low || max > high {
        return bad(format!(
            "hashm_maxbucket {max}, hashm_highmask 0x{high:x}, hashm_lowmask 0x{low:x} disagree: the masks must \
             be 2^n-1 and 2^(n+1)-1 around the highest bucket"
        ));
    }
    let ovflpoint = m.hashm_ovflpoint as usize;
    let need = hash_spareindex(max.saturating_add(1)) as usize;
    if ovflpoint >= HASH_MAX_SPLITPOINTS || ovflpoint < need {
        return bad(format!("hashm_ovflpoint {ovflpoint} but {} buckets need splitpoint {need}", u64::from(max) + 1));
    }
    if let Some(i) = (1..=ovflpoint).find(|&i| m.hashm_spares[i] < m.hashm_spares[i - 1]) {
        return bad(format!(
            "hashm_spares[{i}] {} is below hashm_spares[{}] {}: the overflow page counts must not decrease",
            m.hashm_spares[i],
            i - 1,
            m.hashm_spares[i - 1]
        ));
    }
    if m.hashm_nmaps as usize > HASH_MAX_BITMAPS || m.hashm_nmaps == 0 {
        return bad(format!("hashm_nmaps {} is outside 1..{HASH_MAX_BITMAPS}", m.hashm_nmaps));
    }
    if m.hashm_firstfree > m.hashm_spares[ovflpoint] {
        return bad(format!(
            "hashm_firstfree {} is past the {} overflow pages allocated",
            m.hashm_firstfree, m.hashm_spares[ovflpoint]
        ));
    }
    Vec::new()
}

/// The items of a bucket or overflow page: each a hash index tuple of its stored size, their hash codes ascending
/// (`_hash_pgaddtup` keeps them so and `_hash_binsearch` relies on it) and all of the page's bucket.
fn check_hash_items(page: &Page<'_>, o: &HashPageOpaqueData, block: Option<u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut more = 0usize;
    let mut push = |out: &mut Vec<Finding>, code: Code, off: u16, msg: String| {
        if out.len() < MAX_ITEM_FINDINGS {
            out.push(Finding::new(code, block, Some(off), msg));
        } else {
            more += 1;
        }
    };
    let mask = bucket_low_mask(o.hasho_bucket);
    let mut prev: Option<u32> = None;
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL && !id.has_storage() {
            continue;
        }
        let Some(bytes) = page.item_bytes(id) else { continue };
        let Some((_, info, code)) = hash_tuple(bytes) else {
            push(
                &mut out,
                Code::IndexHashCode,
                off,
                format!("item of {} bytes is too short for a hash tuple", bytes.len()),
            );
            continue;
        };
        let size = usize::from(info & crate::format::btree::INDEX_SIZE_MASK);
        if maxalign(size) != bytes.len() || size < 12 {
            push(
                &mut out,
                Code::IndexHashCode,
                off,
                format!("tuple size {size} in t_info, the item has {}", bytes.len()),
            );
            continue;
        }
        if code & mask != o.hasho_bucket & mask {
            push(
                &mut out,
                Code::IndexHashCode,
                off,
                format!(
                    "hash code 0x{code:08x} cannot belong to bucket {} (its low bits are not the bucket's)",
                    o.hasho_bucket
                ),
            );
        } else if let Some(p) = prev.filter(|p| *p > code) {
            push(
                &mut out,
                Code::IndexHashCode,
                off,
                format!("hash code 0x{code:08x} follows 0x{p:08x}: a page's codes must ascend"),
            );
        }
        prev = Some(code);
    }
    if more > 0 {
        out.push(Finding::new(Code::IndexHashCode, block, None, format!("{more} more damaged items on this page")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::HASH_SPECIAL_SIZE;
    use crate::health::tests::index_page_bytes;

    fn special(flag: u16, bucket: u32) -> [u8; HASH_SPECIAL_SIZE] {
        let mut s = [0u8; HASH_SPECIAL_SIZE];
        s[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        s[8..12].copy_from_slice(&bucket.to_le_bytes());
        s[12..14].copy_from_slice(&flag.to_le_bytes());
        s[14..16].copy_from_slice(&HASHO_PAGE_ID.to_le_bytes());
        s
    }

    /// A bucket page of `bucket` whose items (16 bytes each) carry `codes`, in line pointer order.
    fn bucket_page(bucket: u32, codes: &[u32]) -> Vec<u8> {
        let lens: Vec<u16> = codes.iter().map(|_| 16).collect();
        let mut p = index_page_bytes(&special(LH_BUCKET_PAGE, bucket), &lens, &[]);
        for (i, code) in codes.iter().enumerate() {
            let id = Page::new(&p).unwrap().item_id(i as u16 + 1).unwrap();
            let at = usize::from(id.lp_off());
            p[at + 6..at + 8].copy_from_slice(&16u16.to_le_bytes());
            p[at + 8..at + 12].copy_from_slice(&code.to_le_bytes());
        }
        p
    }

    fn codes(p: &[u8], block: u64) -> Vec<Code> {
        check_hash_page(&Page::new(p).unwrap(), Some(block)).into_iter().map(|f| f.code).collect()
    }

    #[test]
    fn hash_codes_must_ascend_and_belong_to_the_bucket() {
        assert!(codes(&bucket_page(5, &[0x15, 0x25, 0xfd]), 6).is_empty());
        // 0x14's low bits name bucket 4, not 5; 0x05 after 0x25 breaks the order
        assert_eq!(codes(&bucket_page(5, &[0x14]), 6), [Code::IndexHashCode]);
        assert_eq!(codes(&bucket_page(5, &[0x25, 0x05]), 6), [Code::IndexHashCode]);
    }

    #[test]
    fn page_types_against_their_block() {
        assert_eq!(codes(&bucket_page(0, &[]), 0), [Code::IndexHashPageType]);
        let meta = index_page_bytes(&special(LH_META_PAGE, 0), &[], &[]);
        assert_eq!(codes(&meta, 3), [Code::IndexHashPageType]);
        let two_types = index_page_bytes(&special(LH_BUCKET_PAGE | LH_BITMAP_PAGE, 0), &[], &[]);
        assert_eq!(codes(&two_types, 3), [Code::IndexHashPageType]);
    }

    /// A metapage as `_hash_init_metabuffer` writes it for `buckets` buckets (a power of two).
    fn metapage(buckets: u32) -> Vec<u8> {
        let mut p = index_page_bytes(&special(LH_META_PAGE, 0), &[], &[]);
        let put = |p: &mut Vec<u8>, at: usize, v: u32| p[24 + at..24 + at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut p, 0, HASH_MAGIC);
        put(&mut p, 4, HASH_VERSION);
        p[24 + 18..24 + 20].copy_from_slice(&8152u16.to_le_bytes());
        p[24 + 20..24 + 22].copy_from_slice(&4096u16.to_le_bytes());
        p[24 + 22..24 + 24].copy_from_slice(&15u16.to_le_bytes());
        let high = (buckets * 2) - 1;
        put(&mut p, 24, buckets - 1);
        put(&mut p, 28, high);
        put(&mut p, 32, high >> 1);
        let sp = hash_spareindex(buckets);
        put(&mut p, 36, sp);
        put(&mut p, 44, 1);
        put(&mut p, 52 + 4 * sp as usize, 1);
        p
    }

    #[test]
    fn the_metapage_fields_against_each_other() {
        let good = metapage(4);
        assert!(codes(&good, 0).is_empty(), "{:?}", codes(&good, 0));
        let mut bad_masks = good.clone();
        bad_masks[24 + 28] = 0x0f; // highmask 15 with lowmask 3
        assert_eq!(codes(&bad_masks, 0), [Code::IndexHashMetapage]);
        let mut bad_version = good.clone();
        bad_version[24 + 4] = 3;
        assert_eq!(codes(&bad_version, 0), [Code::IndexHashMetapage]);
        let mut no_maps = good;
        no_maps[24 + 44] = 0;
        assert_eq!(codes(&no_maps, 0), [Code::IndexHashMetapage]);
    }
}
