//! Offline scan of relation files: every page of every fork through the page checks, in parallel,
//! plus what needs more than one page (zeroed pages with evidence that rows were there, btree
//! sibling links, segment gaps). Findings come back as data with their file context.
//!
//! Work is split into chunks of consecutive blocks of one segment file; rayon spreads the chunks
//! over the threads. Each chunk returns its findings and a small summary of the pages that matter
//! to relation-wide checks, which run once every chunk is in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::checks::page::{check_page_in, HeapContext};
use crate::error::{CoreError, Result};
use crate::finding::{Code, Finding};
use crate::format::btree::{BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD, BTP_LEAF, P_NONE};
use crate::format::page::BTP_META;
use crate::format::page::{Page, PageKind};
use crate::sources::backup::vfs::VFile;
use crate::sources::relfile::{Relation, SegmentProblemKind};
use crate::sources::relpath::Fork;
use crate::visibility::transam::Horizons;

/// Blocks read per work unit (2 MB with 8 KB pages): large sequential reads, many units to share.
pub const DEFAULT_CHUNK_BLOCKS: u32 = 256;

/// What the caller knows about a relation beyond its files (from the catalog, via a DSN).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelMeta {
    /// Page kind of the main fork (from pg_am): "heap", "btree", …; guessed per page when absent.
    pub kind: Option<String>,
    /// Attribute count of the relation (pg_class.relnatts), for heaps.
    pub natts: Option<u16>,
    /// For a btree index: its table's file key, so leaf TIDs can be checked against the heap.
    #[serde(default)]
    pub heap: Option<RelKey>,
    /// For a table: its columns, so each tuple's attributes can be walked.
    #[serde(default)]
    pub desc: Option<crate::format::tuple::RelDesc>,
    /// For a table with a TOAST table: that table's file key, to check every pointer's chunks.
    #[serde(default)]
    pub toast: Option<RelKey>,
    /// For a TOAST table: its name (pg_toast_N), as the server names it in errors.
    #[serde(default)]
    pub toast_name: Option<String>,
}

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
        let hb = u64::from(tid.block);
        if hb >= self.nblocks {
            return TidTarget::PastEnd;
        }
        let n = self.counts.get(hb as usize).copied().unwrap_or(LP_UNKNOWN);
        match n {
            LP_UNKNOWN => TidTarget::Unknown,
            LP_ZERO => TidTarget::Zero,
            _ if tid.offset == 0 || tid.offset > n => TidTarget::Unused,
            _ if self.has_holes.get((hb / 64) as usize).is_none_or(|w| w & (1 << (hb % 64)) == 0) => TidTarget::Used,
            _ => {
                let i = usize::from(tid.offset - 1);
                let in_use = self.holes.get(&hb).map(|used| used.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0));
                if in_use == Some(false) {
                    TidTarget::Unused
                } else {
                    TidTarget::Used
                }
            }
        }
    }
}

/// Every heap TID of a btree leaf page's live entries, with the line pointer of its entry; nothing for other
/// pages. The high key is skipped, and LP_DEAD entries may point at rows vacuum already removed.
pub(crate) fn for_each_leaf_tid(page: &Page<'_>, mut f: impl FnMut(u16, &crate::format::heap::ItemPointerData)) {
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
            f(off, tid);
        }
    }
}

/// (tablespace oid, database oid, relfilenode).
pub type RelKey = (u32, u32, u32);

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanOptions {
    /// Whether the cluster has data checksums (resolved by the caller from pg_control or a flag).
    pub checksums: bool,
    pub blcksz: u32,
    pub relseg_size: u32,
    /// XID/MultiXact horizons from pg_control; tuple XID checks are skipped without them.
    pub horizons: Option<Horizons>,
    /// When the cluster was shut down cleanly: the shutdown checkpoint's location. No page may
    /// carry a newer LSN.
    pub clean_shutdown_lsn: Option<u64>,
    /// Scanning a running server's files: pages newer than this redo LSN are skipped (they may be
    /// mid-write), and checksum mismatches are re-read before they are reported.
    pub live_redo_lsn: Option<u64>,
    /// Catalog knowledge per relation, when a DSN was given.
    #[serde(default)]
    pub relations: Vec<(RelKey, RelMeta)>,
    /// Blocks per work unit.
    pub chunk_blocks: u32,
    /// Worker threads; all cores when absent.
    #[serde(default)]
    pub jobs: Option<usize>,
    /// TOAST_MAX_CHUNK_SIZE from pg_control.
    #[serde(default = "default_toast_chunk")]
    pub toast_max_chunk_size: u32,
    /// Scanning a base backup: backup_label's START WAL LOCATION. A page with a newer LSN was written while the
    /// backup copied it, may be torn in the copy, and is rewritten by WAL replay (full-page image): not damage,
    /// noted as information and not checked.
    #[serde(default)]
    pub backup_start_lsn: Option<u64>,
}

fn default_toast_chunk() -> u32 {
    crate::format::toast::TOAST_MAX_CHUNK_SIZE_8K
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            checksums: false,
            blcksz: 8192,
            relseg_size: 131072,
            horizons: None,
            clean_shutdown_lsn: None,
            live_redo_lsn: None,
            relations: Vec::new(),
            chunk_blocks: DEFAULT_CHUNK_BLOCKS,
            jobs: None,
            toast_max_chunk_size: default_toast_chunk(),
            backup_start_lsn: None,
        }
    }
}

/// A finding with the file it was found in.
#[derive(Debug, Clone, Serialize)]
pub struct FileFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// Path of the segment file, relative to the data directory.
    pub path: String,
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub fork: Fork,
}

/// Counters shared with a progress display while the scan runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub pages_done: AtomicU64,
    pub cancelled: AtomicBool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ScanSummary {
    pub files: u64,
    pub relations: u64,
    pub blocks: u64,
    pub bytes: u64,
    /// All-zero pages seen (valid to the server; flagged only with evidence of lost rows).
    pub zero_pages: u64,
    /// Of those, the ones before in-use pages of their relation: normal after concurrent relation
    /// extension, lost rows when something else says rows were there.
    pub zero_pages_inside: u64,
    /// Pages skipped in a live scan because they changed after the scan began.
    pub skipped_live: u64,
    /// Pages of a base backup newer than its start (replay rewrites them): information, not checked.
    pub after_backup_start: u64,
    pub findings: u64,
    pub errors: u64,
    pub warnings: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScanResult {
    pub summary: ScanSummary,
    pub findings: Vec<FileFinding>,
    /// Runs of blocks a live scan skipped (written after its redo point): the server's copy is the one to check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRange>,
    /// The first [`MAX_NOTES`] pages newer than a backup's start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_backup_start: Vec<PageNote>,
}

/// Pages listed one by one in [`ScanResult::after_backup_start`]; the summary counts them all.
pub const MAX_NOTES: usize = 1000;

/// A page worth mentioning that is not damage.
#[derive(Debug, Clone, Serialize)]
pub struct PageNote {
    pub path: String,
    pub block: u64,
    pub lsn: String,
}

/// Blocks `first..=last` of one relation fork that a live scan did not check.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedRange {
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub fork: Fork,
    pub first: u64,
    pub last: u64,
}

/// One chunk of one segment file.
struct Unit<'a> {
    rel: &'a Relation,
    seg_index: usize,
    first_block_in_file: u64,
    nblocks: u64,
}

/// What a chunk tells the relation-wide checks.
#[derive(Default)]
struct ChunkSummary {
    findings: Vec<Finding>,
    /// Relation block numbers of all-zero pages.
    zero_blocks: Vec<u64>,
    /// Highest relation block that is initialised and not empty.
    last_nonempty: Option<u64>,
    /// Visibility map pages: (vm block, all-visible heap blocks on it).
    vm_all_visible: Vec<u64>,
    /// Btree pages: (block, prev, next, level, flags).
    btree_links: Vec<(u64, u32, u32, u32, u16)>,
    zero_pages: u64,
    skipped_live: u64,
    /// Blocks skipped for being written after the scan began (live scans).
    skipped: Vec<u64>,
    /// Pages newer than the backup's start: (block, LSN).
    after_start: Vec<(u64, u64)>,
    /// Heap pages' line pointer states, when an index of this heap will be checked.
    lp: LpRun,
    /// Index entries into all-zero heap pages: (heap block, entries).
    zero_refs: Vec<(u64, u32)>,
    /// TOAST pointers found in a table's tuples: (block, line pointer, pointer).
    toast_ptrs: Vec<(u64, u16, crate::format::tuple::ToastPointer)>,
    /// The chunks found in a TOAST table's pages.
    toast_inv: Option<crate::format::toast::ChunkInventory>,
}

/// Heap blocks one visibility map page covers: (BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) bytes,
/// four heap blocks a byte (`HEAPBLOCKS_PER_PAGE`, access/heap/visibilitymap.c).
fn heapblocks_per_vm_page(blcksz: u32) -> u64 {
    u64::from(blcksz - 24) * 4
}
/// `VISIBILITYMAP_ALL_VISIBLE` (access/visibilitymapdefs.h).
const VISIBILITYMAP_ALL_VISIBLE: u8 = 0x01;

/// `file.fsm_beyond_end`: the heap blocks at or past `heap_nblocks` (the main fork's length) to which the free
/// space map still gives free space. Only the leaf pages covering those blocks are read, through `read` (FSM fork
/// block -> its page image; `None` past the fork's end or unreadable). A leaf page the server would not accept is
/// skipped: it reads the FSM with RBM_ZERO_ON_ERROR (freespace.c, fsm_readbuf), so such a page records nothing.
pub fn fsm_beyond_end(
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
    read: impl FnMut(u64) -> Option<Vec<u8>>,
) -> Option<Finding> {
    fsm_beyond_end_finding(&fsm_blocks_beyond_end(heap_nblocks, blcksz, checksums, read), heap_nblocks)
}

/// The heap blocks of [`fsm_beyond_end`], in order.
pub fn fsm_blocks_beyond_end(
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
    mut read: impl FnMut(u64) -> Option<Vec<u8>>,
) -> Vec<u64> {
    use crate::format::fsm::{fsm_get_location, fsm_logical_to_physical, SlotsPerFSMPage};
    let mut beyond: Vec<u64> = Vec::new();
    if blcksz < 1024 {
        return beyond;
    }
    let slots = SlotsPerFSMPage(blcksz) as u64;
    let (first, _) = fsm_get_location(heap_nblocks, blcksz);
    // A leaf page covers SlotsPerFSMPage heap blocks; 2^32 heap blocks at most (BlockNumber), so the walk ends
    // there even when every page reads.
    let last_leaf = u64::from(u32::MAX) / slots;
    for leafno in first.logpageno..=last_leaf {
        let addr = crate::format::fsm::FSMAddress { level: 0, logpageno: leafno };
        let fsm_block = fsm_logical_to_physical(addr, blcksz);
        let Some(bytes) = read(fsm_block) else {
            break;
        };
        beyond.extend(fsm_leaf_beyond_end(&bytes, fsm_block, leafno, heap_nblocks, blcksz, checksums));
    }
    beyond
}

/// One finding for the heap blocks `beyond` (in order) past `heap_nblocks`: the first one, their count and runs.
fn fsm_beyond_end_finding(beyond: &[u64], heap_nblocks: u64) -> Option<Finding> {
    let first = *beyond.first()?;
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < beyond.len() && runs.len() < 8 {
        let start = beyond[i];
        while i + 1 < beyond.len() && beyond[i + 1] == beyond[i] + 1 {
            i += 1;
        }
        runs.push(if beyond[i] == start { start.to_string() } else { format!("{start}-{}", beyond[i]) });
        i += 1;
    }
    if i < beyond.len() {
        runs.push("…".to_string());
    }
    Some(Finding::new(
        Code::FileFsmBeyondEnd,
        Some(first),
        None,
        format!(
            "the free space map records free space for {} block(s) at or past the relation's end (block {heap_nblocks}): \
             {}",
            beyond.len(),
            runs.join(", ")
        ),
    ))
}

/// The heap blocks at or past `heap_nblocks` with a nonzero category on one FSM leaf page (logical leaf `leafno`,
/// stored at `fsm_block` of the fork). Nothing for a page the server would zero instead of reading (a bad header
/// or checksum), or for an all-zero one (PageInit'ed: no free space).
pub fn fsm_leaf_beyond_end(
    page: &[u8],
    fsm_block: u64,
    leafno: u64,
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
) -> Vec<u64> {
    use crate::format::fsm::{fsm_get_avail, fsm_get_heap_blk, FSMAddress, SlotsPerFSMPage};
    use crate::format::page::Verification;
    let mut out = Vec::new();
    if page.len() != blcksz || blcksz < 1024 {
        return out;
    }
    let Some(p) = Page::new(page) else {
        return out;
    };
    if !matches!(p.verify(fsm_block as u32, checksums), Verification::Valid) {
        return out;
    }
    let addr = FSMAddress { level: 0, logpageno: leafno };
    for slot in 0..SlotsPerFSMPage(blcksz) {
        let heap_blk = fsm_get_heap_blk(addr, slot, blcksz);
        if heap_blk < heap_nblocks {
            continue;
        }
        if fsm_get_avail(page, slot, blcksz).is_some_and(|cat| cat != 0) {
            out.push(heap_blk);
        }
    }
    out
}

struct Ctx<'a> {
    root: &'a Path,
    opts: &'a ScanOptions,
    /// Page kind per relation fork (index into the relation list); None: guess page by page.
    kinds: Vec<Option<PageKind>>,
    /// Attribute count per relation fork, from the catalog.
    natts: Vec<Option<u16>>,
    /// Catalog knowledge per relation fork (main forks only).
    metas: Vec<Option<&'a RelMeta>>,
    progress: &'a Progress,
}

/// The page kind of a relation fork: the catalog's word when we have it; otherwise judged from
/// its first pages, so one damaged page is not mistaken for another access method's.
fn detect_kind(root: &Path, rel: &Relation, meta: Option<&RelMeta>, blcksz: u32) -> Option<PageKind> {
    if matches!(rel.fork, Fork::Fsm | Fork::Vm) {
        return Some(PageKind::Map);
    }
    if let Some(k) = meta.and_then(|m| m.kind.as_deref()).and_then(PageKind::parse) {
        return Some(k);
    }
    let first = rel.segments.first().filter(|s| s.segno == 0)?;
    let mut buf = Vec::new();
    let blcksz = blcksz as usize;
    let n = read_chunk(&root.join(&first.path), 0, 4 * blcksz, &mut buf).ok()?;
    let mut votes: HashMap<PageKind, u32> = HashMap::new();
    for bytes in buf[..n].chunks_exact(blcksz) {
        let Some(page) = Page::new(bytes) else {
            continue;
        };
        match PageKind::guess(&page) {
            PageKind::BtreeMeta => return Some(PageKind::Btree),
            PageKind::Zero | PageKind::Uninitialized | PageKind::Unknown => {}
            k => *votes.entry(k).or_default() += 1,
        }
    }
    votes.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k)
}

fn kind_of(ctx: &Ctx<'_>, rel_index: usize) -> Option<PageKind> {
    ctx.kinds[rel_index]
}

fn relation_nblocks(rel: &Relation, blcksz: u32, relseg_size: u32) -> u64 {
    rel.md_nblocks(blcksz, relseg_size)
}

/// Reads up to `len` bytes at `offset` into the front of `buf` (grown, never shrunk or cleared: the bytes past
/// the count returned are stale).
fn read_chunk(path: &Path, offset: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let f = VFile::open(path)?;
    if buf.len() < len {
        buf.resize(len, 0);
    }
    f.read_full_at(&mut buf[..len], offset)
}

thread_local! {
    /// Each worker's read buffer, reused chunk after chunk: a fresh buffer per chunk cost a memset and a page fault
    /// for every page read (about a tenth of the scan's time).
    static CHUNK_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// This thread's read buffer, taken for one chunk and put back when dropped (on every return). Taken, not borrowed:
/// a nested call on this thread (rayon may run another chunk while this one waits) gets an empty buffer instead of a
/// conflict.
struct ChunkBuf(Vec<u8>);

impl ChunkBuf {
    fn take() -> Self {
        ChunkBuf(CHUNK_BUF.take())
    }
}

impl Drop for ChunkBuf {
    fn drop(&mut self) {
        CHUNK_BUF.set(std::mem::take(&mut self.0));
    }
}

fn reread_page(path: &Path, offset: u64, blcksz: usize) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    match read_chunk(path, offset, blcksz, &mut buf) {
        Ok(n) if n == blcksz => Some(buf),
        _ => None,
    }
}

fn scan_unit(
    ctx: &Ctx<'_>,
    rel_index: usize,
    unit: &Unit<'_>,
    rel_nblocks: u64,
    collect_lp: bool,
    heap: Option<&HeapMap>,
) -> ChunkSummary {
    let mut chunk = ChunkBuf::take();
    let buf = &mut chunk.0;
    let opts = ctx.opts;
    let blcksz = opts.blcksz as usize;
    let seg = &unit.rel.segments[unit.seg_index];
    let path = ctx.root.join(&seg.path);
    let mut out = ChunkSummary::default();
    let offset = unit.first_block_in_file * blcksz as u64;
    let want = unit.nblocks as usize * blcksz;
    let got = match read_chunk(&path, offset, want, buf) {
        Ok(n) => n,
        Err(e) => {
            out.findings.push(Finding::new(
                Code::FileUnreadable,
                Some(u64::from(seg.segno) * u64::from(opts.relseg_size) + unit.first_block_in_file),
                None,
                format!("cannot read {}: {e}", seg.path),
            ));
            return out;
        }
    };
    let kind = kind_of(ctx, rel_index);
    let ctx_natts = ctx.natts[rel_index];
    let is_main_heap = unit.rel.fork == Fork::Main || unit.rel.fork == Fork::Init;
    let base_block = u64::from(seg.segno) * u64::from(opts.relseg_size) + unit.first_block_in_file;
    for (i, bytes) in buf[..got - got % blcksz].chunks_exact(blcksz).enumerate() {
        if ctx.progress.cancelled.load(Ordering::Relaxed) {
            break;
        }
        let block = base_block + i as u64;
        let Some(mut page) = Page::new(bytes) else {
            continue;
        };
        let mut reread: Option<Vec<u8>> = None;
        // The live check below already verified this copy's checksum: the page checks need not do it again.
        let mut checksum_verified = false;
        if let Some(redo) = opts.live_redo_lsn {
            let newer = page.header().pd_lsn.lsn() > redo;
            let mismatch = opts.checksums
                && !page.header().is_new()
                && crate::format::checksum::pg_checksum_page(bytes, block as u32) != Some(page.header().pd_checksum);
            if newer || mismatch || !page.header_is_sane(blcksz) {
                // Written while we read it, or torn in our copy by a concurrent write: read it again.
                reread = reread_page(&path, offset + (i * blcksz) as u64, blcksz);
            } else {
                checksum_verified = opts.checksums && !page.header().is_new();
            }
        }
        if let Some(again) = reread.as_deref() {
            if let Some(p) = Page::new(again) {
                // Skip a page only if it really is newer than the scan: a sane header with a later LSN. A
                // damaged header's LSN is as damaged as the rest of it, and must not hide the page.
                if p.header().pd_lsn.lsn() > opts.live_redo_lsn.unwrap_or(u64::MAX) && p.header_is_sane(blcksz) {
                    out.skipped_live += 1;
                    out.skipped.push(block);
                    continue;
                }
                page = p;
            }
        }
        if page.is_all_zero() {
            out.zero_blocks.push(block);
            out.zero_pages += 1;
            if collect_lp {
                out.lp.zero(block);
            }
            continue;
        }
        if let Some(start) = opts.backup_start_lsn {
            let lsn = page.header().pd_lsn.lsn();
            if lsn > start && page.header_is_sane(blcksz) {
                out.after_start.push((block, lsn));
                continue;
            }
        }
        let page_kind = match kind {
            Some(PageKind::Btree) if block == 0 => PageKind::BtreeMeta,
            Some(k) => k,
            None => PageKind::guess(&page),
        };
        let page_kind = if page.header().is_new() { PageKind::Uninitialized } else { page_kind };
        let heap_ctx = if is_main_heap {
            HeapContext { nblocks: Some(rel_nblocks), horizons: opts.horizons.as_ref(), relnatts: ctx_natts }
        } else {
            HeapContext::default()
        };
        let verify = opts.checksums && !(checksum_verified && reread.is_none());
        out.findings.extend(check_page_in(&page, page_kind, Some(block), verify, &heap_ctx));
        let sane = page.header_is_sane(blcksz);
        if collect_lp && sane && page_kind == PageKind::Heap {
            out.lp.page(block, &page);
        }
        if let (Some(h), PageKind::Btree, true) = (heap, page_kind, sane) {
            check_leaf_tids(&page, block, h, &mut out);
        }
        if page_kind == PageKind::Heap && sane {
            if let Some(meta) = ctx.metas[rel_index] {
                check_tuple_data(&page, block, meta, opts.toast_max_chunk_size, &mut out);
            }
        }
        match page_kind {
            PageKind::Map if unit.rel.fork == Fork::Vm && sane => {
                // Record the all-visible heap blocks this map page claims.
                let per_page = heapblocks_per_vm_page(opts.blcksz);
                let first = block * per_page;
                for (byte_i, b) in bytes[24..].iter().enumerate() {
                    if *b == 0 {
                        continue;
                    }
                    for slot in 0..4 {
                        if (b >> (slot * 2)) & VISIBILITYMAP_ALL_VISIBLE != 0 {
                            out.vm_all_visible.push(first + (byte_i * 4 + slot) as u64);
                        }
                    }
                }
            }
            PageKind::Btree | PageKind::BtreeMeta => {
                if let Some(o) = BTPageOpaqueData::from_page(&page) {
                    out.btree_links.push((block, o.btpo_prev, o.btpo_next, o.btpo_level, o.btpo_flags));
                }
            }
            _ => {}
        }
        if let Some(lsn) = opts.clean_shutdown_lsn {
            let page_lsn = page.header().pd_lsn.lsn();
            if page_lsn > lsn {
                out.findings.push(Finding::new(
                    Code::PageHeaderLsnFuture,
                    Some(block),
                    None,
                    format!(
                        "page LSN {} is newer than the clean shutdown checkpoint {}",
                        crate::format::page::format_lsn(page_lsn),
                        crate::format::page::format_lsn(lsn)
                    ),
                ));
            }
        }
        // In use: a heap page with items, or any initialised page of another kind.
        if !page.header().is_new() && (page.header().max_offset_number() > 0 || page_kind != PageKind::Heap) {
            out.last_nonempty = Some(block);
        }
    }
    ctx.progress.bytes_done.fetch_add(got as u64, Ordering::Relaxed);
    ctx.progress.pages_done.fetch_add((got / blcksz) as u64, Ordering::Relaxed);
    out
}

/// Every heap TID on a btree leaf page against the heap's line pointers: past the heap's end
/// ("could not read block" on an index scan), at an unused or missing item (the row is gone but
/// the index still finds it), or into an all-zero page (counted: evidence that rows were there).
fn check_leaf_tids(page: &Page<'_>, block: u64, heap: &HeapMap, out: &mut ChunkSummary) {
    let mut reported = 0usize;
    let mut summary_code = Code::IndexTidUnused;
    let mut report = |out: &mut ChunkSummary, code: Code, item: u16, msg: String| {
        if reported < 16 {
            out.findings.push(Finding::new(code, Some(block), Some(item), msg));
        } else {
            summary_code = code;
        }
        reported += 1;
    };
    for_each_leaf_tid(page, |off, tid| match heap.target(tid) {
        TidTarget::PastEnd => report(
            out,
            Code::IndexTidBeyondHeap,
            off,
            format!("points to heap {tid}, past the heap's {} blocks", heap.nblocks),
        ),
        TidTarget::Zero => {
            let hb = u64::from(tid.block);
            match out.zero_refs.last_mut() {
                Some((b, n)) if *b == hb => *n += 1,
                _ => out.zero_refs.push((hb, 1)),
            }
        }
        TidTarget::Unused => {
            report(out, Code::IndexTidUnused, off, format!("points to heap {tid}, an unused or missing line pointer"))
        }
        TidTarget::Unknown | TidTarget::Used => {}
    });
    if reported > 16 {
        out.findings.push(Finding::new(
            summary_code,
            Some(block),
            None,
            format!("{reported} index entries on this page point to missing heap rows ({} not listed)", reported - 16),
        ));
    }
}

/// With the catalog's column types: each tuple's attributes walked (lengths, varlena headers,
/// compression, TOAST pointers), the TOAST pointers kept for checking against their TOAST table,
/// and a TOAST table's chunks added to its inventory.
fn check_tuple_data(page: &Page<'_>, block: u64, meta: &RelMeta, max_chunk: u32, out: &mut ChunkSummary) {
    let toast_name = meta.toast_name.as_deref();
    if meta.desc.is_none() && toast_name.is_none() {
        return;
    }
    let mut kept = 0usize;
    let mut walk = crate::format::tuple::Walk::default();
    // only the problems and TOAST pointers are used here
    let walk_opts = crate::format::tuple::WalkOptions { record_spans: false, ..Default::default() };
    for (off, id) in page.item_ids() {
        if id.lp_flags() != crate::format::itemid::LP_NORMAL {
            continue;
        }
        let Some(tuple) = page.item_bytes(id) else { continue };
        let Some(header) = crate::format::heap::HeapTupleHeaderData::parse(tuple) else { continue };
        if let Some(name) = toast_name {
            let inv = out.toast_inv.get_or_insert_with(|| crate::format::toast::ChunkInventory::new(name, max_chunk));
            for p in inv.add_tuple(block as u32, off, tuple, &header) {
                if kept < 16 {
                    out.findings.push(p.to_finding(Some(block), Some(off)));
                }
                kept += 1;
            }
        } else if let Some(desc) = &meta.desc {
            crate::format::tuple::walk_attributes_into(tuple, &header, desc, &walk_opts, &mut walk);
            for p in &walk.problems {
                if kept < 16 {
                    out.findings.push(p.to_finding(Some(block), Some(off)));
                }
                kept += 1;
            }
            if meta.toast.is_some() {
                out.toast_ptrs.extend(walk.toast_pointers.drain(..).map(|ptr| (block, off, ptr)));
            }
        }
    }
}

/// Relation-wide checks once every chunk of the relation is in.
fn relation_checks(
    inside: &mut Vec<u64>,
    rel: &Relation,
    live: bool,
    rel_nblocks: u64,
    kind: Option<PageKind>,
    chunks: &mut [ChunkSummary],
    vm_all_visible: Option<&[u64]>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let last_nonempty = chunks.iter().filter_map(|c| c.last_nonempty).max();
    let is_index = matches!(kind, Some(PageKind::Btree));
    for c in chunks.iter() {
        for &zb in &c.zero_blocks {
            if rel.fork != Fork::Main {
                continue;
            }
            let vm_set = vm_all_visible.is_some_and(|v| v.binary_search(&zb).is_ok());
            if vm_set {
                out.push(Finding::new(
                    Code::PageHeaderZeroedAllVisible,
                    Some(zb),
                    None,
                    "all-zero page, but the visibility map marks this block all-visible: rows were here".to_string(),
                ));
            } else if is_index && last_nonempty.is_some_and(|l| l > zb) {
                out.push(Finding::new(
                    Code::IndexZeroPage,
                    Some(zb),
                    None,
                    "all-zero page inside the index, before pages that are in use".to_string(),
                ));
            } else if last_nonempty.is_some_and(|l| l > zb) {
                // Concurrent inserts extend a relation several pages at a time (since 9.6), leaving
                // all-zero pages before used ones in healthy clusters: alone this is no evidence.
                inside.push(zb);
            }
        }
    }
    // The visibility map marks blocks past the end of the fork: the file lost its tail.
    if rel.fork == Fork::Main {
        if let Some(vm) = vm_all_visible {
            let nblocks = rel_nblocks;
            let beyond: Vec<u64> = vm.iter().copied().filter(|b| *b >= nblocks).collect();
            if let Some(first) = beyond.first() {
                out.push(Finding::new(
                    Code::FileVmBeyondEnd,
                    Some(*first),
                    None,
                    format!(
                        "the visibility map marks {} block(s) from {first} on all-visible, but the relation ends at \
                         block {nblocks}",
                        beyond.len()
                    ),
                ));
            }
        }
    }
    // Btree sibling links, levels and flags, across pages.
    let mut links: Vec<(u64, u32, u32, u32, u16)> =
        chunks.iter_mut().flat_map(|c| std::mem::take(&mut c.btree_links)).collect();
    if !links.is_empty() {
        links.sort_unstable_by_key(|l| l.0);
        let find = |blk: u32| links.binary_search_by_key(&u64::from(blk), |l| l.0).ok().map(|i| links[i]);
        for &(block, prev, next, level, flags) in &links {
            let dead = flags & (BTP_DELETED | BTP_HALF_DEAD) != 0;
            if flags & BTP_META != 0 {
                if block != 0 {
                    out.push(Finding::new(
                        Code::IndexBtreeFlags,
                        Some(block),
                        None,
                        "a metapage flag on a block other than 0".to_string(),
                    ));
                }
                continue;
            }
            if block == 0 {
                out.push(Finding::new(
                    Code::IndexBtreeFlags,
                    Some(block),
                    None,
                    format!("block 0 of a btree must be the metapage, flags are 0x{flags:04x}"),
                ));
                continue;
            }
            let leaf = flags & BTP_LEAF != 0;
            if !dead && leaf != (level == 0) {
                out.push(Finding::new(
                    Code::IndexBtreeFlags,
                    Some(block),
                    None,
                    format!("level {level} disagrees with the leaf flag (flags 0x{flags:04x})"),
                ));
            }
            if dead || next == P_NONE {
                continue;
            }
            match find(next) {
                // In a live scan the neighbour may have been skipped for being written after the
                // scan began: only pages both read as stable are compared.
                None if live => {}
                None => out.push(Finding::new(
                    Code::IndexSiblingLink,
                    Some(block),
                    None,
                    format!("right sibling {next} is not a btree page of this index"),
                )),
                Some((_, nprev, _, nlevel, nflags)) => {
                    if nflags & (BTP_DELETED | BTP_HALF_DEAD) == 0 && (nprev as u64 != block || nlevel != level) {
                        out.push(Finding::new(
                            Code::IndexSiblingLink,
                            Some(block),
                            None,
                            format!(
                                "right sibling {next} points back to {nprev} (level {nlevel}), not to this page \
                                 (level {level})"
                            ),
                        ));
                    }
                }
            }
            if prev != P_NONE && !live && find(prev).is_none() {
                out.push(Finding::new(
                    Code::IndexSiblingLink,
                    Some(block),
                    None,
                    format!("left sibling {prev} is not a btree page of this index"),
                ));
            }
        }
    }
    out
}

/// `f` over `items` on the pool. When some items are read from a sequential source (a compressed backup), they
/// are handed out in storage order (`key`: member position, block) so the source's stream moves forward; the
/// results come back in the items' order either way.
fn in_read_order<T: Sync, R: Send>(
    items: &[T],
    key: impl Fn(&T) -> Option<(usize, u64)>,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    let keys: Vec<Option<(usize, u64)>> = items.iter().map(key).collect();
    if keys.iter().all(|k| k.is_none()) {
        return items.par_iter().map(f).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| keys[i].unwrap_or((usize::MAX, 0)));
    let mut out: Vec<(usize, R)> = order.into_iter().par_bridge().map(|i| (i, f(&items[i]))).collect();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Scan `relations` (from [`crate::sources::relfile::discover`] or built from explicit files) under `root`,
/// on `opts.jobs` threads (all cores by default).
pub fn scan(root: &Path, relations: &[Relation], opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    match opts.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| CoreError::Invalid(format!("cannot start {n} scan threads: {e}")))?
            .install(|| scan_on_pool(root, relations, opts, progress)),
        None => scan_on_pool(root, relations, opts, progress),
    }
}

/// A file we are not allowed to read says nothing about the data in it: stop with the permission error before
/// reading anything, instead of reporting it as damage (`file.unreadable` is for the storage failing to return
/// bytes). Opening each segment once is cheap next to reading it.
fn refuse_unreadable(root: &Path, relations: &[Relation]) -> Result<()> {
    for seg in relations.iter().flat_map(|r| r.segments.iter()) {
        let path = root.join(&seg.path);
        if let Err(e) = VFile::open(&path) {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                return Err(CoreError::io(path, e));
            }
        }
    }
    Ok(())
}

fn scan_on_pool(root: &Path, relations: &[Relation], opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    if opts.blcksz == 0 || !opts.blcksz.is_multiple_of(128) || opts.relseg_size == 0 {
        return Err(CoreError::Invalid(format!(
            "unusable geometry: block size {} and segment size {}",
            opts.blcksz, opts.relseg_size
        )));
    }
    refuse_unreadable(root, relations)?;
    let meta: HashMap<RelKey, &RelMeta> = opts.relations.iter().map(|(k, m)| (*k, m)).collect();
    let seg_order =
        |path: &str, block: u64| crate::sources::backup::vfs::read_order(&root.join(path)).map(|o| (o, block));
    let kinds = in_read_order(
        relations,
        |r| r.segments.first().and_then(|s| seg_order(&s.path, 0)),
        |r| detect_kind(root, r, meta.get(&(r.tablespace_oid, r.database_oid, r.relfilenode)).copied(), opts.blcksz),
    );
    let natts = relations
        .iter()
        .map(|r| meta.get(&(r.tablespace_oid, r.database_oid, r.relfilenode)).and_then(|m| m.natts))
        .collect();
    let metas = relations
        .iter()
        .map(|r| {
            if r.fork == Fork::Main {
                meta.get(&(r.tablespace_oid, r.database_oid, r.relfilenode)).copied()
            } else {
                None
            }
        })
        .collect();
    let ctx = Ctx { root, opts, kinds, natts, metas, progress };
    let chunk = u64::from(opts.chunk_blocks.max(1));
    let mut units = Vec::new();
    for (ri, rel) in relations.iter().enumerate() {
        for (si, seg) in rel.segments.iter().enumerate() {
            let blocks = seg.size / u64::from(opts.blcksz);
            let mut first = 0;
            while first < blocks {
                let n = chunk.min(blocks - first);
                units.push((ri, Unit { rel, seg_index: si, first_block_in_file: first, nblocks: n }));
                first += n;
            }
        }
    }
    let nblocks: Vec<u64> = relations.iter().map(|r| relation_nblocks(r, opts.blcksz, opts.relseg_size)).collect();
    let key_of = |r: &Relation| (r.tablespace_oid, r.database_oid, r.relfilenode);
    // Btree indexes whose heap is scanned too get a second phase: their leaf TIDs are checked
    // against the heap's line pointers, collected in the first.
    let main_index: HashMap<RelKey, usize> =
        relations.iter().enumerate().filter(|(_, r)| r.fork == Fork::Main).map(|(i, r)| (key_of(r), i)).collect();
    let heap_of: Vec<Option<usize>> = relations
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let heap = meta.get(&key_of(r)).and_then(|m| m.heap)?;
            let hi = *main_index.get(&heap)?;
            (r.fork == Fork::Main && ctx.kinds[i] == Some(PageKind::Btree)).then_some(hi)
        })
        .collect();
    let mut collect_lp = vec![false; relations.len()];
    for hi in heap_of.iter().flatten() {
        collect_lp[*hi] = true;
    }
    let (phase2, phase1): (Vec<_>, Vec<_>) = units.iter().partition(|(ri, _)| heap_of[*ri].is_some());
    let unit_order = |(_, u): &&(usize, Unit<'_>)| seg_order(&u.rel.segments[u.seg_index].path, u.first_block_in_file);
    let mut chunks: Vec<(usize, ChunkSummary)> = in_read_order(&phase1, unit_order, |(ri, u)| {
        (*ri, scan_unit(&ctx, *ri, u, nblocks[*ri], collect_lp[*ri], None))
    });
    let mut heaps: HashMap<usize, HeapMap> = HashMap::new();
    for (ri, c) in chunks.iter_mut() {
        if collect_lp[*ri] {
            let map = heaps.entry(*ri).or_insert_with(|| HeapMap::new(nblocks[*ri]));
            map.absorb(&mut c.lp);
        }
    }
    let second: Vec<(usize, ChunkSummary)> = in_read_order(&phase2, unit_order, |(ri, u)| {
        let heap = heap_of[*ri].and_then(|hi| heaps.get(&hi));
        (*ri, scan_unit(&ctx, *ri, u, nblocks[*ri], false, heap))
    });
    chunks.extend(second);
    if progress.cancelled.load(Ordering::Relaxed) {
        return Err(CoreError::Invalid("scan cancelled".to_string()));
    }
    // TOAST: one inventory per TOAST table, then every pointer of its table checked against it.
    let mut inventories: HashMap<usize, crate::format::toast::ChunkInventory> = HashMap::new();
    for (ri, c) in chunks.iter_mut() {
        if let Some(inv) = c.toast_inv.take() {
            match inventories.get_mut(ri) {
                Some(all) => all.merge(inv),
                None => {
                    inventories.insert(*ri, inv);
                }
            }
        }
    }
    let toast_of: Vec<Option<usize>> = relations
        .iter()
        .enumerate()
        .map(|(i, _)| ctx.metas[i].and_then(|m| m.toast).and_then(|k| main_index.get(&k).copied()))
        .collect();
    for (ri, c) in chunks.iter_mut() {
        let Some(ti) = toast_of[*ri] else {
            c.toast_ptrs.clear();
            continue;
        };
        let empty;
        let inv = match inventories.get(&ti) {
            Some(inv) => inv,
            None => {
                let name = ctx.metas[ti].and_then(|m| m.toast_name.clone()).unwrap_or_default();
                empty = crate::format::toast::ChunkInventory::new(name, opts.toast_max_chunk_size);
                &empty
            }
        };
        for (block, lp, ptr) in c.toast_ptrs.drain(..) {
            for p in inv.check_value(&ptr, opts.toast_max_chunk_size) {
                c.findings.push(p.to_finding(Some(block), Some(lp)));
            }
        }
    }
    // Index entries into all-zero heap pages, counted per heap block.
    let mut zero_refs: HashMap<(usize, u64), u32> = HashMap::new();
    for (ri, c) in chunks.iter_mut() {
        if let Some(hi) = heap_of[*ri] {
            for (b, n) in c.zero_refs.drain(..) {
                *zero_refs.entry((hi, b)).or_default() += n;
            }
        }
    }
    // Group chunk summaries by relation (units were generated in relation order, par_iter keeps order).
    let mut per_rel: Vec<Vec<ChunkSummary>> = relations.iter().map(|_| Vec::new()).collect();
    for (ri, c) in chunks.drain(..) {
        per_rel[ri].push(c);
    }
    // All-visible heap blocks per relation, from the VM forks.
    let mut vm: HashMap<RelKey, Vec<u64>> = HashMap::new();
    for (rel, cs) in relations.iter().zip(per_rel.iter_mut()) {
        if rel.fork == Fork::Vm {
            let v = vm.entry((rel.tablespace_oid, rel.database_oid, rel.relfilenode)).or_default();
            for c in cs.iter_mut() {
                v.append(&mut c.vm_all_visible);
            }
            v.sort_unstable();
        }
    }
    // The FSM fork of each relation, for its main fork's check. Not in a base backup: its main fork may have been
    // copied before an extension the FSM copy already records (replay makes the blocks), so there the FSM can
    // lead the main fork without damage.
    let fsm_of: HashMap<RelKey, usize> = relations
        .iter()
        .enumerate()
        .filter(|(_, r)| r.fork == Fork::Fsm && opts.backup_start_lsn.is_none())
        .map(|(i, r)| (key_of(r), i))
        .collect();
    let mut summary = ScanSummary { relations: relations.len() as u64, ..Default::default() };
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    let mut after_backup_start = Vec::new();
    for (ri, (rel, cs)) in relations.iter().zip(per_rel.iter_mut()).enumerate() {
        let key = (rel.tablespace_oid, rel.database_oid, rel.relfilenode);
        let kind = kind_of(&ctx, ri);
        let mut inside = Vec::new();
        let mut rel_findings: Vec<Finding> = relation_checks(
            &mut inside,
            rel,
            opts.live_redo_lsn.is_some(),
            nblocks[ri],
            kind,
            cs,
            vm.get(&key).map(|v| v.as_slice()),
        );
        if let Some(&fi) = fsm_of.get(&key).filter(|_| rel.fork == Fork::Main) {
            let fsm = &relations[fi];
            let read = |fsm_block: u64| {
                let segno = fsm_block / u64::from(opts.relseg_size);
                let seg = fsm.segments.iter().find(|s| u64::from(s.segno) == segno)?;
                let offset = (fsm_block % u64::from(opts.relseg_size)) * u64::from(opts.blcksz);
                reread_page(&root.join(&seg.path), offset, opts.blcksz as usize)
            };
            let mut beyond = fsm_blocks_beyond_end(nblocks[ri], opts.blcksz as usize, opts.checksums, read);
            let mut end = nblocks[ri];
            if opts.live_redo_lsn.is_some() && !beyond.is_empty() {
                // A running server extends the main fork before it records the new blocks' space (hio.c), and the
                // FSM carries no LSN to tell a page written since the scan began: measure the file again, now that
                // the map is read, and keep only the blocks still missing.
                end = end.max(main_fork_nblocks_now(root, rel, opts.blcksz, opts.relseg_size));
                beyond.retain(|b| *b >= end);
            }
            rel_findings.extend(fsm_beyond_end_finding(&beyond, end));
        }
        let mut referenced: Vec<(u64, u32)> =
            zero_refs.iter().filter(|((hi, _), _)| *hi == ri).map(|((_, b), n)| (*b, *n)).collect();
        referenced.sort_unstable();
        for (b, n) in referenced {
            rel_findings.retain(|f| {
                !(f.block == Some(b)
                    && matches!(f.code, Code::PageHeaderZeroedReferenced | Code::PageHeaderZeroedAllVisible))
            });
            rel_findings.push(Finding::new(
                Code::PageHeaderZeroedReferenced,
                Some(b),
                None,
                format!("all-zero page, but {n} index entries point into it: its rows were lost"),
            ));
        }
        summary.zero_pages_inside += inside.len() as u64;
        let mut run: Option<(u64, u64)> = None;
        for c in cs.iter_mut() {
            for b in c.skipped.drain(..) {
                run = match run {
                    Some((first, last)) if last + 1 == b => Some((first, b)),
                    Some((first, last)) => {
                        skipped.push(SkippedRange {
                            tablespace_oid: rel.tablespace_oid,
                            database_oid: rel.database_oid,
                            relfilenode: rel.relfilenode,
                            fork: rel.fork,
                            first,
                            last,
                        });
                        Some((b, b))
                    }
                    None => Some((b, b)),
                };
            }
        }
        if let Some((first, last)) = run {
            skipped.push(SkippedRange {
                tablespace_oid: rel.tablespace_oid,
                database_oid: rel.database_oid,
                relfilenode: rel.relfilenode,
                fork: rel.fork,
                first,
                last,
            });
        }
        for c in cs.iter_mut() {
            summary.zero_pages += c.zero_pages;
            summary.skipped_live += c.skipped_live;
            summary.after_backup_start += c.after_start.len() as u64;
            for &(block, lsn) in &c.after_start {
                if after_backup_start.len() < MAX_NOTES {
                    let segno = (block / u64::from(opts.relseg_size)) as u32;
                    let path = rel
                        .segments
                        .iter()
                        .find(|s| s.segno == segno)
                        .map_or_else(|| rel.segment_path(segno), |s| s.path.clone());
                    after_backup_start.push(PageNote { path, block, lsn: crate::format::page::format_lsn(lsn) });
                }
            }
            rel_findings.append(&mut c.findings);
        }
        for sp in rel.segment_problems(opts.blcksz, opts.relseg_size) {
            let code = match sp.kind {
                SegmentProblemKind::MissingSegment => Code::FileMissingSegment,
                SegmentProblemKind::ShortSegment => Code::FileShortSegment,
                SegmentProblemKind::OversizedSegment => Code::FileOversizedSegment,
                SegmentProblemKind::PartialPage => Code::FilePartialPage,
            };
            findings.push(FileFinding {
                finding: Finding::new(code, None, None, sp.detail),
                path: sp.path,
                tablespace_oid: rel.tablespace_oid,
                database_oid: rel.database_oid,
                relfilenode: rel.relfilenode,
                fork: rel.fork,
            });
        }
        summary.files += rel.segments.len() as u64;
        summary.bytes += rel.total_size();
        summary.blocks += rel.segments.iter().map(|s| s.size / u64::from(opts.blcksz)).sum::<u64>();
        rel_findings.sort_by_key(|f| (f.block, f.item));
        for f in rel_findings {
            let segno = f.block.map_or(0, |b| (b / u64::from(opts.relseg_size)) as u32);
            let path = rel
                .segments
                .iter()
                .find(|s| s.segno == segno)
                .map_or_else(|| rel.segment_path(segno), |s| s.path.clone());
            findings.push(FileFinding {
                finding: f,
                path,
                tablespace_oid: rel.tablespace_oid,
                database_oid: rel.database_oid,
                relfilenode: rel.relfilenode,
                fork: rel.fork,
            });
        }
    }
    summary.findings = findings.len() as u64;
    summary.errors = findings.iter().filter(|f| f.finding.severity == crate::finding::Severity::Error).count() as u64;
    summary.warnings = summary.findings - summary.errors;
    Ok(ScanResult { summary, findings, skipped, after_backup_start })
}

/// The length of `rel`'s fork as the files are now (segment by segment, up to the first short or missing one).
fn main_fork_nblocks_now(root: &Path, rel: &Relation, blcksz: u32, relseg_size: u32) -> u64 {
    let mut blocks = 0u64;
    for segno in 0u32.. {
        let Ok(meta) = std::fs::metadata(root.join(rel.segment_path(segno))) else {
            break;
        };
        let n = meta.len() / u64::from(blcksz);
        blocks += n;
        if n < u64::from(relseg_size) {
            break;
        }
    }
    blocks
}

/// The relations to scan when the caller names files instead of a data directory: each path is
/// grouped with the other segments of its fork found next to it.
pub fn relations_for_files(root: &Path, files: &[PathBuf]) -> Result<Vec<Relation>> {
    let all = crate::sources::relfile::discover(root)?;
    let mut wanted = Vec::new();
    for file in files {
        let rel_path = file.strip_prefix(root).unwrap_or(file);
        let text = rel_path.to_string_lossy().replace('\\', "/");
        let hit = all.iter().find(|r| r.segments.iter().any(|s| s.path == text) || r.path == text);
        match hit {
            Some(r) => {
                if !wanted.iter().any(|w: &Relation| w.path == r.path) {
                    wanted.push(r.clone());
                }
            }
            None => {
                return Err(CoreError::Invalid(format!("{} is not a relation file under {}", text, root.display())))
            }
        }
    }
    Ok(wanted)
}

/// Keep the relations of the given databases (OIDs; shared catalogs count as database 0) and
/// relfilenodes; an empty filter keeps everything.
pub fn filter_relations(relations: Vec<Relation>, databases: &[u32], relfilenodes: &[u32]) -> Vec<Relation> {
    relations
        .into_iter()
        .filter(|r| databases.is_empty() || databases.contains(&r.database_oid))
        .filter(|r| relfilenodes.is_empty() || relfilenodes.contains(&r.relfilenode))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::checksum::set_checksum;
    use crate::format::fsm::{NonLeafNodesPerPage, FSM_PAGE_DATA_FP_NODES};
    use crate::format::page::{PageHeaderData, BLCKSZ, SIZE_OF_PAGE_HEADER_DATA};

    /// An FSM leaf page as PageInit(page, BLCKSZ, 0) leaves it, with the given (slot, category) leaves set.
    fn fsm_leaf(slots: &[(usize, u8)]) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        PageHeaderData {
            pd_lower: SIZE_OF_PAGE_HEADER_DATA as u16,
            pd_upper: BLCKSZ as u16,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: 0x2004,
            ..Default::default()
        }
        .write(&mut p);
        for &(slot, cat) in slots {
            p[SIZE_OF_PAGE_HEADER_DATA + FSM_PAGE_DATA_FP_NODES + NonLeafNodesPerPage(BLCKSZ) + slot] = cat;
        }
        p
    }

    #[test]
    fn fsm_slots_past_the_end_are_reported() {
        // heap of 40 blocks: slot 10 is inside, 39 is the last block; 40, 41 and 50 are past the end, 45 is zero.
        let page = fsm_leaf(&[(10, 5), (39, 200), (40, 127), (41, 127), (45, 0), (50, 3)]);
        let mut asked = Vec::new();
        let f = fsm_beyond_end(40, BLCKSZ, false, |b| {
            asked.push(b);
            (b == 2).then(|| page.clone())
        })
        .expect("a finding");
        assert_eq!(f.code, Code::FileFsmBeyondEnd);
        assert_eq!(f.block, Some(40));
        assert!(f.message.contains("3 block(s)") && f.message.ends_with("40-41, 50"), "{}", f.message);
        // leaf 0 is FSM block 2 (after the root and the first level-1 page); the walk stops where the fork ends.
        assert_eq!(asked, vec![2, 3]);
        // the same page with the heap 51 blocks long: nothing past the end
        assert!(fsm_beyond_end(51, BLCKSZ, false, |b| (b == 2).then(|| page.clone())).is_none());
    }

    #[test]
    fn fsm_reads_only_the_leaves_past_the_end() {
        // heap of 4069 + 10 blocks: leaf 0 is all inside, leaf 1 (FSM block 3) covers 4069.. and is the first read.
        let page = fsm_leaf(&[(3, 1), (12, 9)]);
        let mut asked = Vec::new();
        let f = fsm_beyond_end(4079, BLCKSZ, false, |b| {
            asked.push(b);
            (b == 3).then(|| page.clone())
        })
        .expect("a finding");
        assert_eq!(f.block, Some(4069 + 12));
        assert_eq!(asked, vec![3, 4]);
    }

    #[test]
    fn fsm_pages_the_server_would_zero_count_for_nothing() {
        let good = fsm_leaf(&[(7, 255)]);
        // a header PageIsVerified refuses: fsm_readbuf reads with RBM_ZERO_ON_ERROR
        let mut bad = good.clone();
        bad[12..14].copy_from_slice(&9000u16.to_le_bytes()); // pd_lower past pd_upper
        assert!(fsm_leaf_beyond_end(&bad, 2, 0, 0, BLCKSZ, false).is_empty());
        // a wrong checksum with checksums on; right once it is set for FSM block 2
        let mut summed = good.clone();
        assert!(fsm_leaf_beyond_end(&summed, 2, 0, 0, BLCKSZ, true).is_empty());
        set_checksum(&mut summed, 2);
        assert_eq!(fsm_leaf_beyond_end(&summed, 2, 0, 0, BLCKSZ, true), vec![7]);
        // all-zero, short and empty images: nothing, no panic
        assert!(fsm_leaf_beyond_end(&[0u8; BLCKSZ], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_leaf_beyond_end(&good[..4096], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_leaf_beyond_end(&[], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_beyond_end(0, 100, false, |_| Some(good.clone())).is_none());
        // a heap at the largest block number: the walk ends there
        assert!(fsm_beyond_end(u64::from(u32::MAX), BLCKSZ, false, |_| Some(good.clone())).is_none());
    }
}
