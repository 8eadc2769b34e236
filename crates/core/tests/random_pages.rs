//! Randomized robustness: hundreds of thousands of random and mutated pages through every parser
//! and check, for every page kind. Any panic fails the test. Stable Rust, deterministic seed.

use pgsurgeon_core::checks::inspect::inspect_page;
use pgsurgeon_core::checks::page::{check_page, check_page_tids, HeapContext};
use pgsurgeon_core::checks::scan::fsm_leaf_beyond_end;
use pgsurgeon_core::format::btree::{BTPageOpaqueData, BTP_LEAF};
use pgsurgeon_core::format::heap::HeapTupleHeaderData;
use pgsurgeon_core::format::itemid::{ItemIdData, LP_NORMAL};
use pgsurgeon_core::format::page::{Page, PageHeaderData, PageKind, BLCKSZ};

/// xorshift64*: enough randomness for mutation, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn heap_page(rng: &mut Rng) -> Vec<u8> {
    let mut p = vec![0u8; BLCKSZ];
    let n = 1 + rng.below(60);
    let mut upper = BLCKSZ;
    for i in 0..n {
        let len = 24 + rng.below(100);
        upper -= (len + 7) & !7;
        let id = ItemIdData::new(upper as u16, LP_NORMAL, len as u16);
        p[24 + 4 * i..28 + 4 * i].copy_from_slice(&id.0.to_le_bytes());
        let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
        t.t_xmin = 3 + rng.below(1000) as u32;
        t.t_infomask2 = 3;
        t.t_hoff = 24;
        t.write(&mut p[upper..]);
    }
    PageHeaderData {
        pd_lower: (24 + 4 * n) as u16,
        pd_upper: upper as u16,
        pd_special: BLCKSZ as u16,
        pd_pagesize_version: 0x2004,
        ..Default::default()
    }
    .write(&mut p);
    p
}

fn btree_page(rng: &mut Rng) -> Vec<u8> {
    let mut p = vec![0u8; BLCKSZ];
    let special = BLCKSZ - 16;
    let n = 1 + rng.below(100);
    let mut upper = special;
    for i in 0..n {
        upper -= 16;
        let id = ItemIdData::new(upper as u16, LP_NORMAL, 16);
        p[24 + 4 * i..28 + 4 * i].copy_from_slice(&id.0.to_le_bytes());
        p[upper + 6..upper + 8].copy_from_slice(&16u16.to_le_bytes());
    }
    PageHeaderData {
        pd_lower: (24 + 4 * n) as u16,
        pd_upper: upper as u16,
        pd_special: special as u16,
        pd_pagesize_version: 0x2004,
        ..Default::default()
    }
    .write(&mut p);
    let o = BTPageOpaqueData { btpo_prev: 0, btpo_next: 2, btpo_level: 0, btpo_flags: BTP_LEAF, btpo_cycleid: 0 };
    p[special..special + 4].copy_from_slice(&o.btpo_prev.to_le_bytes());
    p[special + 4..special + 8].copy_from_slice(&o.btpo_next.to_le_bytes());
    p[special + 12..special + 14].copy_from_slice(&o.btpo_flags.to_le_bytes());
    p
}

fn mutate(rng: &mut Rng, p: &mut [u8]) {
    match rng.below(6) {
        // a few random bytes anywhere
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(p.len());
                p[i] = rng.next() as u8;
            }
        }
        // one header field
        1 => {
            let i = 8 + 2 * rng.below(6);
            p[i..i + 2].copy_from_slice(&(rng.next() as u16).to_le_bytes());
        }
        // the item-ID array replaced by garbage (the seeds' case)
        2 => {
            let lower = usize::from(u16::from_le_bytes([p[12], p[13]])).clamp(24, p.len());
            for b in &mut p[24..lower] {
                *b = rng.next() as u8;
            }
        }
        // a tuple/index header region
        3 => {
            let start = rng.below(p.len() - 32);
            for b in &mut p[start..start + 24] {
                *b = rng.next() as u8;
            }
        }
        // bit flips
        4 => {
            for _ in 0..1 + rng.below(16) {
                let i = rng.below(p.len());
                p[i] ^= 1 << rng.below(8);
            }
        }
        // torn: tail zeroed
        _ => {
            let cut = rng.below(p.len());
            for b in &mut p[cut..] {
                *b = 0;
            }
        }
    }
}

const KINDS: [Option<PageKind>; 5] =
    [None, Some(PageKind::Heap), Some(PageKind::Btree), Some(PageKind::BtreeMeta), Some(PageKind::Gin)];

fn exercise(p: &[u8], rng: &mut Rng) -> usize {
    let kind = KINDS[rng.below(KINDS.len())];
    let checksums = rng.next() & 1 == 0;
    let block = rng.next() % (1 << 33);
    let report = inspect_page(p, block, checksums, kind).expect("a page of at least 24 bytes");
    let page = Page::new(p).unwrap();
    let guessed = PageKind::guess(&page);
    let _ = page.verify(block as u32, checksums);
    // serialisation must work for whatever came out (sampled: it dominates the run time)
    if rng.below(16) == 0 {
        serde_json::to_string(&report).expect("serialisable");
    }
    // every page is also read as a free space map leaf (file.fsm_beyond_end), with the heap's end on it
    let _ = fsm_leaf_beyond_end(p, block, block % 4, block % 8192, p.len(), checksums);
    // read as a GIN page, handing its heap TIDs over as a scan has them (decoded once, by the page check)
    let gin =
        check_page_tids(&page, PageKind::Gin, Some(block), checksums, &HeapContext::default(), Some(&mut |_, _| {}));
    check_page(&page, guessed, Some(block), checksums).len() + gin.len()
}

#[test]
fn two_hundred_thousand_pages_without_a_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut pages = 0usize;
    let mut findings = 0usize;
    // 120k mutated pages
    for i in 0..120_000 {
        let mut p = if i % 2 == 0 { heap_page(&mut rng) } else { btree_page(&mut rng) };
        for _ in 0..1 + rng.below(3) {
            mutate(&mut rng, &mut p);
        }
        findings += exercise(&p, &mut rng);
        pages += 1;
    }
    // 80k fully random pages, some with plausible headers, and odd lengths
    for i in 0..80_000 {
        let len = match i % 8 {
            0 => 24 + rng.below(200),
            1 => 4096,
            _ => BLCKSZ,
        };
        let mut p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if i % 3 == 0 && len >= 24 {
            p[18..20].copy_from_slice(&0x2004u16.to_le_bytes());
            p[16..18].copy_from_slice(&((len as u16) & !7).to_le_bytes());
        }
        findings += exercise(&p, &mut rng);
        pages += 1;
    }
    assert_eq!(pages, 200_000);
    assert!(findings > 100_000, "mutations should mostly be noticed, got {findings}");
}
