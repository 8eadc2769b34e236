//! The line pointers of a heap as its index entries see them, gathered while the heap is scanned so that a
//! btree's leaf TIDs can be checked against them afterwards: a few bytes a block.

use std::collections::HashMap;

use crate::format::btree::{BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD};
use crate::format::page::Page;

/// Line pointer count of a heap page whose line pointers are unknown (not read, or too damaged to say).
const LP_UNKNOWN: u16 = u16::MAX;
/// ... of an all-zero page: every row that was here is gone.
const LP_ZERO: u16 = u16::MAX - 1;

/// The line pointers of consecutive heap pages, as index entries see them: a count per page (2 bytes), and for
/// the few pages with unused line pointers among them a bitmap of the used ones (bit i: item i+1 is normal,
/// redirect or dead, a possible target of an index entry).
#[derive(Debug, Default)]
pub(crate) struct LpRun {
    first: u64,
    counts: Vec<u16>,
    holes: Vec<(u64, Box<[u8]>)>,
}

impl LpRun {
    fn slot(&mut self, block: u64) -> Option<&mut u16> {
        if self.counts.is_empty() {
            self.first = block;
        }
        let i = usize::try_from(block.checked_sub(self.first)?).ok()?;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, LP_UNKNOWN);
        }
        self.counts.get_mut(i)
    }

    pub(crate) fn zero(&mut self, block: u64) {
        if let Some(s) = self.slot(block) {
            *s = LP_ZERO;
        }
    }

    pub(crate) fn page(&mut self, block: u64, page: &Page<'_>) {
        let n = page.readable_item_count();
        // Most pages have no unused line pointer: their bitmap is never built.
        let holes = page.item_ids().any(|(_, id)| id.lp_flags() == crate::format::itemid::LP_UNUSED);
        if let Some(s) = self.slot(block) {
            *s = n.min(LP_ZERO - 1);
            if holes {
                let mut used = vec![0u8; usize::from(n).div_ceil(8)];
                for (off, id) in page.item_ids() {
                    if id.lp_flags() != crate::format::itemid::LP_UNUSED {
                        let i = usize::from(off - 1);
                        used[i / 8] |= 1 << (i % 8);
                    }
                }
                self.holes.push((block, used.into_boxed_slice()));
            }
        }
    }
}

/// Line pointer states of one heap, for the index TID checks: a few bytes a block.
pub(crate) struct HeapMap {
    pub(crate) nblocks: u64,
    counts: Vec<u16>,
    holes: HashMap<u64, Box<[u8]>>,
    /// A bit per block: it is in `holes` (every index entry asks; a bit test spares the hash lookup).
    has_holes: Vec<u64>,
}

/// Where an index entry's heap TID lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TidTarget {
    /// Past the heap's last block.
    PastEnd,
    /// The heap page was not read or is too damaged to say.
    Unknown,
    /// An all-zero heap page.
    Zero,
    /// An unused or missing line pointer.
    Unused,
    /// A line pointer in use (normal, redirect or dead).
    Used,
}

impl HeapMap {
    pub(crate) fn new(nblocks: u64) -> Self {
        let words = usize::try_from(nblocks.div_ceil(64)).unwrap_or(0);
        HeapMap {
            nblocks,
            counts: vec![LP_UNKNOWN; nblocks as usize],
            holes: HashMap::new(),
            has_holes: vec![0; words],
        }
    }

    fn mark_holes(&mut self, block: u64, on: bool) {
        if let Some(w) = self.has_holes.get_mut((block / 64) as usize) {
            let bit = 1u64 << (block % 64);
            if on {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
    }

    /// Take what a run of pages recorded (later runs win).
    pub(crate) fn absorb(&mut self, run: &mut LpRun) {
        for (i, &n) in run.counts.iter().enumerate() {
            let block = run.first + i as u64;
            if n == LP_UNKNOWN {
                continue;
            }
            if let Some(slot) = self.counts.get_mut(block as usize) {
                *slot = n;
                if self.holes.remove(&block).is_some() {
                    self.mark_holes(block, false);
                }
            }
        }
        for (block, used) in std::mem::take(&mut run.holes) {
            if (block as usize) < self.counts.len() {
                self.holes.insert(block, used);
                self.mark_holes(block, true);
            }
        }
        run.counts = Vec::new();
    }

    pub(crate) fn target(&self, tid: &crate::format::heap::ItemPointerData) -> TidTarget {
        self.block(tid.block).target(tid.offset)
    }

    /// Heap block `hb`'s line pointer count when every one of them is in use; 0 otherwise (past the end, not read,
    /// all-zero, or with unused ones among them): the TID check's common case, inlined into its loop.
    #[inline(always)]
    pub(crate) fn all_used(&self, hb: u32) -> u16 {
        let i = hb as usize;
        match self.counts.get(i) {
            Some(&n) if n < LP_ZERO && self.has_holes.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) == 0) => n,
            _ => 0,
        }
    }

    /// What heap block `hb`'s line pointers say about the TIDs into it.
    pub(crate) fn block(&self, hb: u32) -> BlockLps<'_> {
        let hb = u64::from(hb);
        if hb >= self.nblocks {
            return BlockLps::PastEnd;
        }
        match self.counts.get(hb as usize).copied().unwrap_or(LP_UNKNOWN) {
            LP_UNKNOWN => BlockLps::Unknown,
            LP_ZERO => BlockLps::Zero,
            n if self.has_holes.get((hb / 64) as usize).is_none_or(|w| w & (1 << (hb % 64)) == 0) => BlockLps::Count(n),
            n => BlockLps::Holes(n, self.holes.get(&hb).map_or(&[][..], |u| &u[..])),
        }
    }
}

/// One heap block's line pointers as index entries see them: looked up once for a run of TIDs into that block (an
/// index page's TIDs mostly come in such runs: posting lists and leaves in key order of a correlated column).
#[derive(Debug, Clone, Copy)]
pub(crate) enum BlockLps<'a> {
    PastEnd,
    Unknown,
    Zero,
    /// Items 1..=n, all in use.
    Count(u16),
    /// Items 1..=n, bit i of the bitmap set when item i+1 is in use.
    Holes(u16, &'a [u8]),
}

impl BlockLps<'_> {
    pub(crate) fn target(self, offset: u16) -> TidTarget {
        match self {
            BlockLps::PastEnd => TidTarget::PastEnd,
            BlockLps::Unknown => TidTarget::Unknown,
            BlockLps::Zero => TidTarget::Zero,
            BlockLps::Count(n) | BlockLps::Holes(n, _) if offset == 0 || offset > n => TidTarget::Unused,
            BlockLps::Count(_) => TidTarget::Used,
            BlockLps::Holes(_, used) => {
                let i = usize::from(offset - 1);
                if used.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0) {
                    TidTarget::Used
                } else {
                    TidTarget::Unused
                }
            }
        }
    }
}

/// Every heap TID of a btree leaf page's live entries, with the line pointer and the bytes of its entry; nothing
/// for other pages. The high key is skipped, and LP_DEAD entries may point at rows vacuum already removed.
pub(crate) fn for_each_leaf_tid<'a>(
    page: &Page<'a>,
    mut f: impl FnMut(u16, &'a [u8], &crate::format::heap::ItemPointerData),
) {
    let Some(o) = BTPageOpaqueData::from_page(page) else { return };
    if !o.is_leaf() || o.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
        return;
    }
    let first = if o.is_rightmost() { 1 } else { 2 };
    let mut tids = Vec::new();
    for (off, id) in page.item_ids() {
        if off < first || id.lp_flags() != crate::format::itemid::LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        if !crate::format::btree::leaf_heap_tids(t, &mut tids) {
            continue;
        }
        for tid in &tids {
            f(off, t, tid);
        }
    }
}

/// The heap TIDs of the live entries of an index page of `kind` (btree, GiST and SP-GiST leaves, hash bucket and
/// overflow pages, GIN postings and pending tuples), with the line pointer of each entry (0 on a GIN posting tree
/// leaf, whose items have none); nothing for other kinds and for inner pages.
pub(crate) fn for_each_index_tid(
    page: &Page<'_>,
    kind: crate::format::page::PageKind,
    mut f: impl FnMut(u16, &crate::format::heap::ItemPointerData),
) {
    use crate::checks::page::{gist::for_each_gist_leaf_tid, spgist::for_each_spgist_leaf_tid};
    use crate::format::page::PageKind;
    match kind {
        PageKind::Btree => for_each_leaf_tid(page, |off, _, tid| f(off, tid)),
        PageKind::Gist => for_each_gist_leaf_tid(page, f),
        PageKind::SpGist => for_each_spgist_leaf_tid(page, f),
        PageKind::Hash => super::hashbrin::for_each_hash_tid(page, f),
        PageKind::Gin => super::gin::for_each_gin_tid(page, f),
        _ => {}
    }
}
