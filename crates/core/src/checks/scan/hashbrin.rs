//! Hash and BRIN indexes across pages: what each page tells (gathered chunk by chunk in [`AmPages`]), then once the
//! relation is in, hash bucket pages where the metapage puts them, overflow chains, bitmap bits against the overflow
//! pages in use; BRIN revmap entries against the regular pages' summary tuples.
//!
//! A page not judged (`skipped`: newer than a live scan's redo point) is never taken for damage: a link into it or a
//! chain through it is left unjudged.

use std::collections::{HashMap, HashSet};

use crate::finding::{Code, Finding};
use crate::format::brin::{
    brin_special, revmap_tids, BrinMetaPageData, BrinTuple, BRIN_CURRENT_VERSION, BRIN_META_MAGIC,
    BRIN_PAGETYPE_REGULAR, BRIN_PAGETYPE_REVMAP, REVMAP_PAGE_MAXITEMS,
};
use crate::format::hash::{
    a_page_of_type, HashMetaPageData, HashPageOpaqueData, INVALID_BLOCK_NUMBER, LH_BITMAP_PAGE, LH_BUCKET_PAGE,
    LH_OVERFLOW_PAGE,
};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind, SIZE_OF_PAGE_HEADER_DATA};

/// At most this many findings of one kind per relation; one more counts the rest.
const MAX_PER_KIND: usize = 16;

/// What hash and BRIN pages of one chunk tell the relation-wide checks.
#[derive(Default)]
pub(crate) struct AmPages {
    hash_meta: Option<HashMetaPageData>,
    /// Every hash page but the metapage: (block, special space).
    hash: Vec<(u64, HashPageOpaqueData)>,
    /// Bitmap pages: (block, their contents after the header).
    hash_bitmaps: Vec<(u64, Vec<u8>)>,
    brin_meta: Option<BrinMetaPageData>,
    /// BRIN pages by type: (block, page type, line pointer count).
    brin_pages: Vec<(u64, u16, u16)>,
    /// Revmap entries: (revmap block, entry, TID).
    brin_revmap: Vec<(u64, u64, ItemPointerData)>,
    /// Summary tuples: (block, line pointer, bt_blkno).
    brin_tuples: Vec<(u64, u16, u32)>,
}

impl AmPages {
    /// Record what `page` (of `kind`, at `block`, its header sane) tells.
    pub(crate) fn page(&mut self, kind: PageKind, block: u64, page: &Page<'_>) {
        match kind {
            PageKind::Hash => self.hash_page(block, page),
            PageKind::Brin => self.brin_page(block, page),
            _ => {}
        }
    }

    fn hash_page(&mut self, block: u64, page: &Page<'_>) {
        let bytes = page.bytes();
        let special = usize::from(page.header().pd_special);
        let Some(o) = HashPageOpaqueData::parse(bytes, special) else { return };
        if block == 0 {
            self.hash_meta = HashMetaPageData::parse(bytes);
            return;
        }
        if o.page_type() == LH_BITMAP_PAGE {
            self.hash_bitmaps.push((block, bytes.get(SIZE_OF_PAGE_HEADER_DATA..special).unwrap_or_default().to_vec()));
        }
        self.hash.push((block, o));
    }

    fn brin_page(&mut self, block: u64, page: &Page<'_>) {
        let bytes = page.bytes();
        let Some((_, kind)) = brin_special(bytes, usize::from(page.header().pd_special)) else { return };
        if block == 0 {
            self.brin_meta = BrinMetaPageData::parse(bytes);
            return;
        }
        self.brin_pages.push((block, kind, page.readable_item_count()));
        match kind {
            BRIN_PAGETYPE_REVMAP => self.brin_revmap.extend(revmap_tids(bytes).map(|(i, t)| (block, i, t))),
            BRIN_PAGETYPE_REGULAR => {
                for (off, id) in page.item_ids() {
                    let t = page.item_bytes(id).filter(|_| id.lp_flags() == LP_NORMAL).and_then(BrinTuple::parse);
                    if let Some(t) = t {
                        self.brin_tuples.push((block, off, t.bt_blkno));
                    }
                }
            }
            _ => {}
        }
    }

    fn absorb(&mut self, o: &mut AmPages) {
        self.hash_meta = self.hash_meta.take().or(o.hash_meta.take());
        self.brin_meta = self.brin_meta.take().or(o.brin_meta.take());
        self.hash.append(&mut o.hash);
        self.hash_bitmaps.append(&mut o.hash_bitmaps);
        self.brin_pages.append(&mut o.brin_pages);
        self.brin_revmap.append(&mut o.brin_revmap);
        self.brin_tuples.append(&mut o.brin_tuples);
    }
}

/// The relation-wide hash and BRIN checks over the chunks' [`AmPages`] (`zero`: all-zero blocks, `skipped` sorted).
pub(crate) fn checks(
    parts: impl Iterator<Item = AmPages>,
    zero: &[u64],
    skipped: &[u64],
    nblocks: u64,
) -> Vec<Finding> {
    let mut all = AmPages::default();
    for mut p in parts {
        all.absorb(&mut p);
    }
    let mut out = Capped::default();
    if let Some(m) = all.hash_meta.take() {
        all.hash.sort_unstable_by_key(|p| p.0);
        hash_checks(&mut out, &m, &all, zero, skipped, nblocks);
    }
    if let Some(m) = all
        .brin_meta
        .filter(|m| m.brin_magic == BRIN_META_MAGIC && m.brin_version == BRIN_CURRENT_VERSION && m.pages_per_range > 0)
    {
        brin_checks(&mut out, &m, &mut all, skipped);
    }
    out.finish()
}

/// Findings capped per code: a wrecked metapage or bitmap would otherwise name every page.
#[derive(Default)]
struct Capped {
    out: Vec<Finding>,
    more: HashMap<Code, (usize, Option<u64>)>,
}

impl Capped {
    fn push(&mut self, code: Code, block: Option<u64>, item: Option<u16>, msg: impl FnOnce() -> String) {
        if self.out.iter().filter(|f| f.code == code).count() < MAX_PER_KIND {
            self.out.push(Finding::new(code, block, item, msg()));
        } else {
            self.more.entry(code).or_insert((0, block)).0 += 1;
        }
    }

    fn finish(mut self) -> Vec<Finding> {
        let mut more: Vec<_> = self.more.into_iter().collect();
        more.sort_unstable_by_key(|(c, _)| c.as_str());
        for (code, (n, block)) in more {
            self.out.push(Finding::new(code, block, None, format!("{n} more such problems in this index")));
        }
        self.out
    }
}

/// Hash: bucket pages where the metapage puts them, the chains from them, and the bitmaps.
fn hash_checks(out: &mut Capped, m: &HashMetaPageData, all: &AmPages, zero: &[u64], skipped: &[u64], n: u64) {
    let pages = &all.hash;
    let find = |b: u64| pages.binary_search_by_key(&b, |p| p.0).ok().map(|i| pages[i].1);
    let unjudged = |b: u64| skipped.binary_search(&b).is_ok();
    let mut in_chain: HashSet<u64> = HashSet::new();
    // buckets whose primary page is not where it should be: their overflow pages are unreachable for that reason
    let mut broken: HashSet<u32> = HashSet::new();
    for bucket in 0..=m.hashm_maxbucket {
        let Some(blk) = m.bucket_to_blkno(bucket).filter(|b| *b < n) else {
            out.push(Code::IndexHashMetapage, Some(0), None, || {
                format!("bucket {bucket}'s primary page lies past the index's {n} blocks (hashm_spares)")
            });
            continue;
        };
        if unjudged(blk) {
            continue;
        }
        let Some(o) = find(blk) else {
            if zero.binary_search(&blk).is_ok() {
                out.push(Code::IndexZeroPage, Some(blk), None, || {
                    format!("all-zero page where bucket {bucket} begins")
                });
            }
            continue;
        };
        if o.page_type() != LH_BUCKET_PAGE || o.hasho_bucket != bucket {
            out.push(Code::IndexHashPageType, Some(blk), None, || {
                format!(
                    "the metapage puts bucket {bucket}'s primary page here, but this is {} of bucket {}",
                    a_page_of_type(o.page_type()),
                    o.hasho_bucket
                )
            });
            broken.insert(bucket);
            continue;
        }
        follow_chain(out, &find, &unjudged, &mut in_chain, blk, bucket);
    }
    for &(blk, o) in pages {
        let reported = broken.contains(&o.hasho_bucket) || m.bucket_to_blkno(o.hasho_bucket) == Some(blk);
        if o.page_type() == LH_OVERFLOW_PAGE && !in_chain.contains(&blk) && skipped.is_empty() && !reported {
            out.push(Code::IndexHashUnreachable, Some(blk), None, || {
                format!("overflow page of bucket {} that no bucket's chain reaches", o.hasho_bucket)
            });
        }
    }
    bitmap_checks(out, m, all, &in_chain, &unjudged);
}

/// One bucket's chain from its primary page `first`: each next page an overflow page of the bucket that links back,
/// no page twice. The overflow pages reached go into `in_chain`.
fn follow_chain(
    out: &mut Capped,
    find: &impl Fn(u64) -> Option<HashPageOpaqueData>,
    unjudged: &impl Fn(u64) -> bool,
    in_chain: &mut HashSet<u64>,
    first: u64,
    bucket: u32,
) {
    let mut cur = first;
    let Some(mut o) = find(first) else { return };
    while o.hasho_nextblkno != INVALID_BLOCK_NUMBER {
        let next = u64::from(o.hasho_nextblkno);
        if unjudged(next) {
            return;
        }
        let Some(no) = find(next) else {
            out.push(Code::IndexHashChain, Some(cur), None, || {
                format!("bucket {bucket}: hasho_nextblkno {next} is not a hash page of this index")
            });
            return;
        };
        let problem = if no.page_type() != LH_OVERFLOW_PAGE {
            Some(format!("hasho_nextblkno {next} is {}, not an overflow page", a_page_of_type(no.page_type())))
        } else if no.hasho_bucket != bucket {
            Some(format!("hasho_nextblkno {next} is an overflow page of bucket {}", no.hasho_bucket))
        } else if u64::from(no.hasho_prevblkno) != cur {
            Some(format!(
                "hasho_nextblkno {next}, whose hasho_prevblkno {} does not lead back here",
                no.hasho_prevblkno
            ))
        } else if !in_chain.insert(next) {
            // checked last: a wrong link into another chain is blamed on the page that has it, not on the chain's
            // rightful owner, whichever bucket is followed first
            Some(format!("hasho_nextblkno {next} leads to a page already in a chain (a loop or two chains joined)"))
        } else {
            None
        };
        if let Some(p) = problem {
            out.push(Code::IndexHashChain, Some(cur), None, || format!("bucket {bucket}: {p}"));
            return;
        }
        (cur, o) = (next, no);
    }
}

/// The metapage's bitmap pages, and each overflow page in a chain (and each bitmap page) marked in use.
fn bitmap_checks(
    out: &mut Capped,
    m: &HashMetaPageData,
    all: &AmPages,
    in_chain: &HashSet<u64>,
    unjudged: &impl Fn(u64) -> bool,
) {
    let maps: Vec<u32> = m.hashm_mapp.iter().take(m.hashm_nmaps as usize).copied().collect();
    let contents = |blk: u64| all.hash_bitmaps.iter().find(|(b, _)| *b == blk).map(|(_, c)| c.as_slice());
    for (i, &mb) in maps.iter().enumerate() {
        if !unjudged(u64::from(mb)) && contents(u64::from(mb)).is_none() {
            out.push(Code::IndexHashMetapage, Some(0), None, || format!("hashm_mapp[{i}] {mb} is not a bitmap page"));
        }
    }
    let per_page = u64::from(m.bits_per_bitmap_page().max(1));
    let mut used: Vec<u64> = in_chain.iter().copied().chain(all.hash_bitmaps.iter().map(|(b, _)| *b)).collect();
    used.sort_unstable();
    for blk in used {
        let Some(bit) = m.ovflblkno_to_bitno(blk).map(u64::from) else {
            out.push(Code::IndexHashChain, Some(blk), None, || {
                "an overflow page where the metapage's hashm_spares allow none".to_string()
            });
            continue;
        };
        let Some(&mb) = maps.get((bit / per_page) as usize) else { continue };
        if unjudged(u64::from(mb)) {
            continue;
        }
        let Some(c) = contents(u64::from(mb)) else { continue };
        let b = bit % per_page;
        // the bitmap is an array of uint32 words, bit N in word N/32 (hash.h ISSET)
        let word = crate::format::bytes::u32_at(c, (b / 32) as usize * 4).unwrap_or(0);
        if word & (1 << (b % 32)) == 0 {
            out.push(Code::IndexHashBitmap, Some(blk), None, || {
                format!("this page is in use but its bit {bit} in bitmap page {mb} is clear: it counts as free")
            });
        }
    }
}

/// BRIN: the revmap pages where the metapage says, and every revmap entry against the summary tuple it names.
fn brin_checks(out: &mut Capped, m: &BrinMetaPageData, all: &mut AmPages, skipped: &[u64]) {
    let unjudged = |b: u64| skipped.binary_search(&b).is_ok();
    all.brin_pages.sort_unstable();
    all.brin_tuples.sort_unstable();
    let page = |b: u64| all.brin_pages.binary_search_by_key(&b, |p| p.0).ok().map(|i| all.brin_pages[i]);
    for b in 1..=u64::from(m.last_revmap_page) {
        match page(b) {
            Some((_, t, _)) if t != BRIN_PAGETYPE_REVMAP => out.push(Code::IndexBrinPageType, Some(b), None, || {
                format!("lastRevmapPage is {} but this page's type is 0x{t:04X}, not a revmap page", m.last_revmap_page)
            }),
            _ => {}
        }
    }
    let ppr = u64::from(m.pages_per_range);
    let off_range = all.brin_tuples.iter().filter(|t| u64::from(t.2) % ppr != 0).count();
    if off_range >= 2 && off_range * 2 > all.brin_tuples.len() {
        // most ranges disagree with the metapage: one finding about pagesPerRange, not one per range
        out.push(Code::IndexBrinMetapage, Some(0), None, || {
            format!(
                "pagesPerRange {ppr}, but {off_range} of {} summary tuples start their range elsewhere",
                all.brin_tuples.len()
            )
        });
        return;
    }
    let mut referenced: HashSet<(u64, u16)> = HashSet::new();
    for &(rb, i, tid) in &all.brin_revmap {
        let range = ((rb - 1) * REVMAP_PAGE_MAXITEMS + i) * ppr;
        let (tb, off) = (u64::from(tid.block), tid.offset);
        referenced.insert((tb, off));
        if unjudged(tb) {
            continue;
        }
        let problem = match page(tb) {
            None => format!("points to {tid}, which is no BRIN page of this index"),
            Some((_, t, _)) if t != BRIN_PAGETYPE_REGULAR => format!("points to {tid}, on a page of type 0x{t:04X}"),
            Some((_, _, maxoff)) if off > maxoff => format!("points to {tid}, past the page's {maxoff} items"),
            Some(_) => match all.brin_tuples.binary_search_by_key(&(tb, off), |t| (t.0, t.1)) {
                Err(_) => format!("points to {tid}, an unused item"),
                Ok(k) if u64::from(all.brin_tuples[k].2) != range => {
                    format!("points to {tid}, the summary of heap block {}", all.brin_tuples[k].2)
                }
                Ok(_) => continue,
            },
        };
        out.push(Code::IndexBrinRevmap, Some(rb), None, || {
            format!("entry {i} (the range from heap block {range}) {problem}")
        });
    }
    for &(b, off, blkno) in &all.brin_tuples {
        if u64::from(blkno) % ppr != 0 {
            out.push(Code::IndexBrinTuple, Some(b), Some(off), || {
                format!("item {off}: bt_blkno {blkno} is not the start of a range of {ppr} pages")
            });
        } else if skipped.is_empty() && !referenced.contains(&(b, off)) {
            out.push(Code::IndexBrinUnreferenced, Some(b), Some(off), || {
                format!("item {off}: the summary of heap block {blkno}, which no revmap entry names")
            });
        }
    }
}

/// Every heap TID of a hash bucket or overflow page's live entries (LP_DEAD ones may point at rows vacuum already
/// removed), with its line pointer; nothing for other pages.
pub(crate) fn for_each_hash_tid(page: &Page<'_>, mut f: impl FnMut(u16, &ItemPointerData)) {
    let Some(o) = HashPageOpaqueData::parse(page.bytes(), usize::from(page.header().pd_special)) else { return };
    if !matches!(o.page_type(), LH_BUCKET_PAGE | LH_OVERFLOW_PAGE) {
        return;
    }
    for (off, id) in page.item_ids() {
        if !crate::checks::page::index_entry_in_use(&id) {
            continue;
        }
        if let Some((tid, _, _)) = page.item_bytes(id).and_then(crate::format::hash::hash_tuple) {
            f(off, &tid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opaque(prev: u32, next: u32, bucket: u32, flag: u16) -> HashPageOpaqueData {
        HashPageOpaqueData {
            hasho_prevblkno: prev,
            hasho_nextblkno: next,
            hasho_bucket: bucket,
            hasho_flag: flag,
            hasho_page_id: crate::format::page::HASHO_PAGE_ID,
        }
    }

    /// Two buckets (blocks 1, 2), a bitmap page at 3 (bit 0) and an overflow page of bucket 1 at 4 (bit 1).
    fn two_buckets() -> AmPages {
        let mut page = vec![0u8; 8192];
        page[24..28].copy_from_slice(&crate::format::hash::HASH_MAGIC.to_le_bytes());
        let put = |p: &mut Vec<u8>, at: usize, v: u32| p[24 + at..24 + at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut page, 20, 4096 | (15 << 16)); // hashm_bmsize, hashm_bmshift
        put(&mut page, 24, 1); // maxbucket
        put(&mut page, 28, 3);
        put(&mut page, 32, 1);
        put(&mut page, 36, 1); // ovflpoint
        put(&mut page, 44, 1); // nmaps
        put(&mut page, 52 + 4, 2); // spares[1]: the bitmap page and one overflow page
        put(&mut page, HashMetaPageData::OFFSET_MAPP - 24, 3);
        let mut bitmap = vec![0u8; 8192 - 24 - 16];
        bitmap[0] = 0b11;
        AmPages {
            hash_meta: HashMetaPageData::parse(&page),
            hash: vec![
                (1, opaque(1, 4, 0, LH_BUCKET_PAGE)),
                (2, opaque(1, INVALID_BLOCK_NUMBER, 1, LH_BUCKET_PAGE)),
                (3, opaque(INVALID_BLOCK_NUMBER, INVALID_BLOCK_NUMBER, 0, LH_BITMAP_PAGE)),
                (4, opaque(1, INVALID_BLOCK_NUMBER, 0, LH_OVERFLOW_PAGE)),
            ],
            hash_bitmaps: vec![(3, bitmap)],
            ..AmPages::default()
        }
    }

    fn run(p: AmPages) -> Vec<(Code, Option<u64>)> {
        checks(std::iter::once(p), &[], &[], 5).into_iter().map(|f| (f.code, f.block)).collect()
    }

    #[test]
    fn a_healthy_hash_index_has_no_findings() {
        assert_eq!(run(two_buckets()), []);
    }

    #[test]
    fn a_link_into_another_chain_is_blamed_on_the_page_that_has_it() {
        let mut p = two_buckets();
        p.hash[1].1.hasho_nextblkno = 4; // bucket 1 now leads into bucket 0's chain
        assert_eq!(run(p), [(Code::IndexHashChain, Some(2))]);
    }

    #[test]
    fn an_overflow_page_in_use_with_its_bit_clear() {
        let mut p = two_buckets();
        p.hash_bitmaps[0].1[0] = 0b01;
        assert_eq!(run(p), [(Code::IndexHashBitmap, Some(4))]);
    }

    /// A BRIN index of 4-page ranges: revmap page 1 with `entries` (entry, item on block 2), regular page 2 with
    /// the summaries of heap blocks 0 and 4.
    fn brin(entries: &[(u64, u16)]) -> AmPages {
        AmPages {
            brin_meta: Some(BrinMetaPageData {
                brin_magic: BRIN_META_MAGIC,
                brin_version: BRIN_CURRENT_VERSION,
                pages_per_range: 4,
                last_revmap_page: 1,
            }),
            brin_pages: vec![(1, BRIN_PAGETYPE_REVMAP, 0), (2, BRIN_PAGETYPE_REGULAR, 2)],
            brin_revmap: entries.iter().map(|&(i, off)| (1, i, ItemPointerData { block: 2, offset: off })).collect(),
            brin_tuples: vec![(2, 1, 0), (2, 2, 4)],
            ..AmPages::default()
        }
    }

    #[test]
    fn a_revmap_entry_naming_another_range() {
        assert_eq!(run(brin(&[(0, 1), (1, 2)])), []);
        // entry 1 (heap blocks 4..7) names the summary of block 0; the summary of 4 is named by nobody
        assert_eq!(
            run(brin(&[(0, 1), (1, 1)])),
            [(Code::IndexBrinRevmap, Some(1)), (Code::IndexBrinUnreferenced, Some(2))]
        );
        // an entry past the page's items
        assert_eq!(run(brin(&[(0, 1), (1, 3)]))[0], (Code::IndexBrinRevmap, Some(1)));
    }
}
