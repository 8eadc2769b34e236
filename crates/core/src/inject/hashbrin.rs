//! Hash and BRIN page injectors: each field damages one page type (a page of another type is refused, so the
//! planner moves on to the next block).
//!
//! hash: `metapage` (hashm_magic), `bucket` (a primary bucket page's type turned to overflow), `overflow` (an
//! overflow page's hasho_nextblkno), `bitmap` (one set bit of a bitmap page cleared), `hash_code` (an item's code),
//! `heap_tid` (an item's heap TID).
//! BRIN: `metapage` (pagesPerRange), `revmap` (an entry pointed at another range's summary), `regular` (a summary
//! tuple's bt_blkno).

use super::fields::{pick, scalar, set_uint};
use super::page::normal_item;
use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::brin::{
    brin_special, BrinMetaPageData, BRIN_PAGETYPE_META, BRIN_PAGETYPE_REGULAR, BRIN_PAGETYPE_REVMAP,
};
use crate::format::bytes::u32_at;
use crate::format::hash::{
    page_type_name, HashMetaPageData, HashPageOpaqueData, LH_BITMAP_PAGE, LH_BUCKET_PAGE, LH_META_PAGE,
    LH_OVERFLOW_PAGE, LH_PAGE_TYPE,
};
use crate::format::heap::ItemPointerData;
use crate::format::page::{PageHeaderData, SIZE_OF_PAGE_HEADER_DATA};

/// The hash page's special space and where it lies, when the page is of type `want`.
fn hash_page_of(page: &[u8], want: u16) -> Result<(usize, HashPageOpaqueData)> {
    let special = usize::from(PageHeaderData::parse(page).unwrap_or_default().pd_special);
    let o =
        HashPageOpaqueData::parse(page, special).ok_or_else(|| invalid("not a hash page: no hash special space"))?;
    if o.page_type() != want {
        return Err(invalid(format!("not a {} page: a {} page", page_type_name(want), page_type_name(o.page_type()))));
    }
    Ok((special, o))
}

pub(super) fn hash(
    page: &mut [u8],
    item: Option<u16>,
    field: &str,
    spec: &DamageSpec,
    rng: &mut Rng,
) -> Result<String> {
    match field {
        "metapage" => {
            hash_page_of(page, LH_META_PAGE)?;
            scalar(page, HashMetaPageData::OFFSET_MAGIC, 4, "hashm_magic", spec, rng)
        }
        "bucket" => {
            let (special, o) = hash_page_of(page, LH_BUCKET_PAGE)?;
            let new = match spec.value {
                Some(_) => pick(spec, "hasho_flag", 16, u64::from(o.hasho_flag), rng)?,
                None => u64::from((o.hasho_flag & !LH_PAGE_TYPE) | LH_OVERFLOW_PAGE),
            };
            set_uint(page, special + 12, 2, new);
            Ok(format!("bucket {} hasho_flag 0x{:04x} -> 0x{new:04x}", o.hasho_bucket, o.hasho_flag))
        }
        "overflow" => {
            let (special, o) = hash_page_of(page, LH_OVERFLOW_PAGE)?;
            let cur = u64::from(o.hasho_nextblkno);
            let v = match (spec.value, spec.nblocks) {
                (Some(_), _) => pick(spec, "hasho_nextblkno", 32, cur, rng)?,
                (None, Some(n)) if n > 1 => rng.other_between(0, u64::from(n - 1), cur),
                (None, _) => rng.other_than(32, cur),
            };
            set_uint(page, special + 4, 4, v);
            Ok(format!("overflow page of bucket {}: hasho_nextblkno {cur} -> {v}", o.hasho_bucket))
        }
        "bitmap" => {
            let (special, _) = hash_page_of(page, LH_BITMAP_PAGE)?;
            super::fields::no_value(spec, "a bitmap page's bit")?;
            // A new bitmap is all ones (_hash_initbitmapbuffer): only the bits below the overflow pages
            // allocated so far (the planner's hint, hashm_spares[hashm_ovflpoint]) name pages in use.
            let words = (special - SIZE_OF_PAGE_HEADER_DATA) / 4;
            let limit = spec.nblocks.map_or(words * 32, |n| (n as usize).min(words * 32));
            let set: Vec<usize> = (0..limit)
                .filter(|b| {
                    u32_at(page, SIZE_OF_PAGE_HEADER_DATA + b / 32 * 4).is_some_and(|w| w & (1 << (b % 32)) != 0)
                })
                .collect();
            if set.is_empty() {
                return Err(invalid("the bitmap page has no bit of a page in use set"));
            }
            let bit = set[rng.below(set.len() as u64) as usize];
            page[SIZE_OF_PAGE_HEADER_DATA + bit / 8] &= !(1u8 << (bit % 8));
            Ok(format!("bitmap bit {bit} cleared (an overflow page in use now counts as free)"))
        }
        "hash_code" => {
            hash_page_of(page, LH_BUCKET_PAGE).or_else(|_| hash_page_of(page, LH_OVERFLOW_PAGE))?;
            let item = item.unwrap_or(0);
            let (off, _) = normal_item(page, item, 12)?;
            scalar(page, off + 8, 4, &format!("item {item} hash code"), spec, rng)
        }
        "heap_tid" => {
            hash_page_of(page, LH_BUCKET_PAGE).or_else(|_| hash_page_of(page, LH_OVERFLOW_PAGE))?;
            if spec.value.is_some() {
                return Err(invalid("the hash heap_tid field takes a tid (block,offset), not a number"));
            }
            let item = item.unwrap_or(0);
            let (off, _) = normal_item(page, item, 12)?;
            let cur = ItemPointerData::parse(page, off).unwrap_or(ItemPointerData { block: 0, offset: 0 });
            let tid = super::heap::random_tid(spec, cur, rng);
            tid.write(page, off);
            Ok(format!("item {item} heap TID {cur} -> {tid}"))
        }
        _ => Err(invalid(format!("unknown hash field {field}"))),
    }
}

/// The BRIN page's type, when it is `want`.
fn brin_page_of(page: &[u8], want: u16) -> Result<()> {
    let special = usize::from(PageHeaderData::parse(page).unwrap_or_default().pd_special);
    let (_, t) = brin_special(page, special).ok_or_else(|| invalid("not a BRIN page: no BRIN special space"))?;
    if t != want {
        return Err(invalid(format!("not the BRIN page type 0x{want:04X}: 0x{t:04X}")));
    }
    Ok(())
}

pub(super) fn brin(page: &mut [u8], field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    match field {
        "metapage" => {
            brin_page_of(page, BRIN_PAGETYPE_META)?;
            let at = BrinMetaPageData::OFFSET_PAGES_PER_RANGE;
            let cur = u64::from(u32_at(page, at).unwrap_or(0));
            let v = match spec.value {
                Some(_) => pick(spec, "pagesPerRange", 32, cur, rng)?,
                None => rng.other_between(1, cur.max(1) * 2, cur),
            };
            set_uint(page, at, 4, v);
            Ok(format!("pagesPerRange {cur} -> {v}"))
        }
        "revmap" => {
            brin_page_of(page, BRIN_PAGETYPE_REVMAP)?;
            let tids: Vec<(u64, ItemPointerData)> = crate::format::brin::revmap_tids(page).collect();
            if tids.len() < 2 {
                return Err(invalid("the revmap page has fewer than two summarized ranges"));
            }
            let (i, cur) = tids[rng.below(tids.len() as u64) as usize];
            let new = match spec.tid {
                Some((block, offset)) => ItemPointerData { block, offset },
                None => loop {
                    let (_, t) = tids[rng.below(tids.len() as u64) as usize];
                    if t != cur {
                        break t;
                    }
                },
            };
            new.write(page, SIZE_OF_PAGE_HEADER_DATA + 6 * i as usize);
            Ok(format!("revmap entry {i} {cur} -> {new}"))
        }
        "regular" => {
            brin_page_of(page, BRIN_PAGETYPE_REGULAR)?;
            let n = PageHeaderData::parse(page).unwrap_or_default().max_offset_number();
            let items: Vec<u16> = (1..=n).filter(|&i| normal_item(page, i, 5).is_ok()).collect();
            if items.is_empty() {
                return Err(invalid("the page holds no summary tuple"));
            }
            let item = items[rng.below(items.len() as u64) as usize];
            let (off, _) = normal_item(page, item, 5)?;
            scalar(page, off, 4, &format!("item {item} bt_blkno"), spec, rng)
        }
        _ => Err(invalid(format!("unknown brin field {field}"))),
    }
}
