//! Diagnosis of pages the server hands over (pageinspect's `get_raw_page`: copies of its buffers), a batch of
//! consecutive blocks at a time: every page through the page checks, the heap's line pointers kept in a
//! [`LineMap`] (a few bytes a block), and each btree leaf entry's heap TID checked against that map as the index
//! pages stream by. Nothing here keeps a list of every TID, and nothing returns a value per page or per tuple: a
//! batch answers with its findings, its suspect blocks and the index entries whose row seems to be missing
//! (candidates the caller re-reads before it believes them, since the pages of a live server keep changing).

pub mod allindexed;

use serde::Serialize;

use crate::checks::page::{check_page_in, HeapContext};
use crate::checks::scan::{for_each_index_tid, for_each_leaf_tid, HeapMap, LpRun, TidTarget};
use crate::finding::{Area, Code, Finding, Severity};
use crate::format::page::{Page, PageKind};

/// The line pointers of one heap, as index entries see them.
pub struct LineMap {
    map: HeapMap,
}

impl LineMap {
    /// A map of a heap of `nblocks` blocks, nothing known yet.
    pub fn new(nblocks: u64) -> Self {
        LineMap { map: HeapMap::new(nblocks) }
    }

    pub fn nblocks(&self) -> u64 {
        self.map.nblocks
    }

    /// Take the line pointer states a heap batch collected.
    pub fn absorb(&mut self, report: &mut BatchReport) {
        self.map.absorb(&mut report.lp);
    }
}

/// What the pages of a batch are and how to judge them.
#[derive(Debug, Clone, Copy)]
pub struct BatchConfig {
    /// The relation's page kind (from its access method); guessed per page when None.
    pub kind: Option<PageKind>,
    /// Whether a checksum mismatch is damage (the server already verified what it hands over).
    pub checksums: bool,
    pub blcksz: usize,
    /// pg_class.relnatts of a table.
    pub relnatts: Option<u16>,
    /// Whether heap pages' line pointers are collected (an index of this heap will be checked).
    pub collect_lp: bool,
    /// The relation's length, for the block numbers an index page names (links, downlinks, posting tree roots);
    /// None: not judged (the relation may grow while it is read).
    pub nblocks: Option<u64>,
}

/// An index entry whose heap row seems to be missing.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Candidate {
    pub index_block: u64,
    pub index_item: u16,
    pub heap_block: u32,
    pub heap_item: u16,
    /// Past the heap's end (else: an unused line pointer or an all-zero page).
    pub past_end: bool,
}

/// The answer for one batch.
#[derive(Debug, Default, Serialize)]
pub struct BatchReport {
    pub findings: Vec<Finding>,
    /// Blocks with structural damage: no SQL that looks at their tuples may be sent to them.
    pub suspect: Vec<u64>,
    /// All-zero blocks.
    pub zero: Vec<u64>,
    pub candidates: Vec<Candidate>,
    /// Pages checked.
    pub pages: u64,
    #[serde(skip)]
    lp: LpRun,
}

/// Areas whose damage makes a page's tuples unsafe to hand to the executor.
fn structural(f: &Finding) -> bool {
    f.severity == Severity::Error
        && matches!(f.area, Area::PageHeader | Area::LinePointer | Area::TupleHeader | Area::Checksum)
}

/// Check the pages of `data` (whole pages of `cfg.blcksz` bytes, block `first` onwards). Btree leaf and hash
/// entries are compared with `heap` when given.
pub fn check_batch(data: &[u8], first: u64, cfg: &BatchConfig, heap: Option<&LineMap>) -> BatchReport {
    let mut out = BatchReport::default();
    if cfg.blcksz == 0 {
        return out;
    }
    let ctx = HeapContext { nblocks: cfg.nblocks, horizons: None, relnatts: cfg.relnatts, gin_key: None };
    for (i, bytes) in data.chunks_exact(cfg.blcksz).enumerate() {
        let block = first + i as u64;
        let Some(page) = Page::new(bytes) else { continue };
        out.pages += 1;
        if page.is_all_zero() {
            out.zero.push(block);
            if cfg.collect_lp {
                out.lp.zero(block);
            }
            continue;
        }
        let kind = match cfg.kind {
            _ if page.header().is_new() => PageKind::Uninitialized,
            Some(PageKind::Btree) if block == 0 => PageKind::BtreeMeta,
            Some(k) => k,
            None => PageKind::guess(&page),
        };
        let found = check_page_in(&page, kind, Some(block), cfg.checksums, &ctx);
        let damaged = found.iter().any(structural);
        // A tuple no line pointer references leaves the line pointers themselves sound: index entries are still
        // checked against them (one may point at the lost row's unused pointer).
        let lps_sound = !found.iter().any(|f| structural(f) && f.code != Code::LinePointerUnreferencedTuple);
        if damaged {
            out.suspect.push(block);
        }
        out.findings.extend(found);
        if kind == PageKind::Heap && cfg.collect_lp && lps_sound {
            out.lp.page(block, &page);
        }
        if let (
            PageKind::Btree | PageKind::Hash | PageKind::Gin | PageKind::Gist | PageKind::SpGist,
            Some(map),
            false,
        ) = (kind, heap, damaged)
        {
            for_each_index_tid(&page, kind, |off, tid| {
                let past_end = match map.map.target(tid) {
                    TidTarget::PastEnd => true,
                    TidTarget::Unused | TidTarget::Zero => false,
                    TidTarget::Unknown | TidTarget::Used => return,
                };
                out.candidates.push(Candidate {
                    index_block: block,
                    index_item: off,
                    heap_block: tid.block,
                    heap_item: tid.offset,
                    past_end,
                });
            });
        }
    }
    out
}

/// The heap TIDs of an index page's live entries, the kind told by the special space (a btree leaf, GiST or SP-GiST
/// leaf, a hash bucket or overflow page, a GIN page's postings and pending tuples): (entry's line pointer, 0 on a GIN
/// posting tree leaf, heap block, heap item).
pub fn leaf_tids(data: &[u8]) -> Vec<(u16, u32, u16)> {
    let mut out = Vec::new();
    if let Some(page) = Page::new(data) {
        let kind = match PageKind::guess(&page) {
            k @ (PageKind::Gist | PageKind::SpGist | PageKind::Hash | PageKind::Gin) => k,
            _ => PageKind::Btree,
        };
        for_each_index_tid(&page, kind, |off, tid| out.push((off, tid.block, tid.offset)));
    }
    out
}

/// (heap block, heap item, key bytes) of every live entry of a btree leaf page, the key as pageinspect's
/// bt_page_items shows it (`data`): what repair names a lost row by, and a TOAST index's chunk_id.
pub fn leaf_keys(data: &[u8]) -> Vec<(u32, u16, Vec<u8>)> {
    let mut out = Vec::new();
    if let Some(page) = Page::new(data) {
        for_each_leaf_tid(&page, |_, tuple, tid| {
            if let Some(key) = crate::format::btree::leaf_key(tuple) {
                out.push((tid.block, tid.offset, key.to_vec()));
            }
        });
    }
    out
}

/// The line pointer flags of a heap page (0 unused, 1 normal, 2 redirect, 3 dead), one byte each.
pub fn lp_flags(data: &[u8]) -> Vec<u8> {
    Page::new(data).map(|p| p.item_ids().map(|(_, id)| id.lp_flags()).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frozen one-int tuple at (block, item).
    fn tuple(block: u32, item: u16) -> Vec<u8> {
        let mut t = vec![0u8; 28];
        t[0..4].copy_from_slice(&2u32.to_le_bytes()); // FrozenTransactionId
        t[12..14].copy_from_slice(&((block >> 16) as u16).to_le_bytes());
        t[14..16].copy_from_slice(&(block as u16).to_le_bytes());
        t[16..18].copy_from_slice(&item.to_le_bytes());
        t[18..20].copy_from_slice(&1u16.to_le_bytes()); // natts
        t[20..22].copy_from_slice(&0x0900u16.to_le_bytes()); // HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID
        t[22] = 24;
        t[24..28].copy_from_slice(&7i32.to_le_bytes());
        t
    }

    fn heap_page(n: usize) -> Vec<u8> {
        let tuples: Vec<Vec<u8>> = (0..n).map(|i| tuple(10, i as u16 + 1)).collect();
        let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
        crate::format::page::assemble_heap_page(&refs, 8192).expect("page")
    }

    #[test]
    fn zero_pages_and_line_maps() {
        let cfg = BatchConfig {
            kind: Some(PageKind::Heap),
            checksums: false,
            blcksz: 8192,
            relnatts: None,
            collect_lp: true,
            nblocks: None,
        };
        let mut data = heap_page(3);
        data.extend(vec![0u8; 8192]);
        let mut rep = check_batch(&data, 10, &cfg, None);
        assert_eq!(rep.pages, 2);
        assert_eq!(rep.zero, vec![11]);
        assert!(rep.suspect.is_empty(), "{:?}", rep.findings);
        let mut map = LineMap::new(12);
        map.absorb(&mut rep);
        let tid = |b, o| crate::format::heap::ItemPointerData { block: b, offset: o };
        assert_eq!(map.map.target(&tid(10, 3)), TidTarget::Used);
        assert_eq!(map.map.target(&tid(10, 4)), TidTarget::Unused);
        assert_eq!(map.map.target(&tid(11, 1)), TidTarget::Zero);
        assert_eq!(map.map.target(&tid(9, 1)), TidTarget::Unknown);
        assert_eq!(map.map.target(&tid(12, 1)), TidTarget::PastEnd);
        assert_eq!(lp_flags(&data[..8192]), vec![1, 1, 1]);
    }

    #[test]
    fn unused_line_pointers_among_used_ones() {
        let cfg = BatchConfig {
            kind: Some(PageKind::Heap),
            checksums: false,
            blcksz: 8192,
            relnatts: None,
            collect_lp: true,
            nblocks: None,
        };
        let mut data = heap_page(3);
        data[28..32].copy_from_slice(&0u32.to_le_bytes()); // item 2 unused: its tuple is left unreferenced
        let mut rep = check_batch(&data, 10, &cfg, None);
        let mut map = LineMap::new(11);
        map.absorb(&mut rep);
        let tid = |o| crate::format::heap::ItemPointerData { block: 10, offset: o };
        assert_eq!(map.map.target(&tid(1)), TidTarget::Used);
        assert_eq!(map.map.target(&tid(2)), TidTarget::Unused);
        assert_eq!(map.map.target(&tid(3)), TidTarget::Used);
        assert_eq!(map.map.target(&tid(0)), TidTarget::Unused);
    }

    #[test]
    fn a_broken_header_is_suspect_and_not_mapped() {
        let cfg = BatchConfig {
            kind: Some(PageKind::Heap),
            checksums: false,
            blcksz: 8192,
            relnatts: None,
            collect_lp: true,
            nblocks: None,
        };
        let mut data = heap_page(2);
        data[12..14].copy_from_slice(&9000u16.to_le_bytes()); // pd_lower past the page
        let mut rep = check_batch(&data, 0, &cfg, None);
        assert_eq!(rep.suspect, vec![0]);
        let mut map = LineMap::new(1);
        map.absorb(&mut rep);
        assert_eq!(map.map.target(&crate::format::heap::ItemPointerData { block: 0, offset: 1 }), TidTarget::Unknown);
        assert!(rep.findings.iter().any(|f| f.code.as_str().starts_with("page_header.")));
    }
}
