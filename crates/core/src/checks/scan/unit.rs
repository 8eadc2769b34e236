//! One work unit: a chunk of consecutive blocks of one segment file, read in one go and every page through the
//! page checks, with what the relation-wide checks need from it kept in a [`ChunkSummary`].
//!
//! This is the scan's hot loop: per page it only reads from the chunk's buffer and pushes to the summary's vectors.
//! No allocation or lock per page (a page read again in a live scan is the exception).

use crate::error::io_reason;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::heapmap::{for_each_index_tid, HeapMap, LpRun, TidTarget};
use super::{Progress, RelMeta, ScanOptions};
use crate::checks::page::gin::GinKeyKind;
use crate::checks::page::{check_page_in, check_page_tids, HeapContext};
use crate::finding::{Code, Finding};
use crate::format::btree::BTPageOpaqueData;
use crate::format::heap::ItemPointerData;
use crate::format::page::{Page, PageKind};
use crate::sources::backup::vfs::VFile;
use crate::sources::mapped::Mapped;
use crate::sources::relfile::Relation;
use crate::sources::relpath::Fork;

/// What every unit of one scan shares.
pub(super) struct Ctx<'a> {
    pub(super) root: &'a Path,
    pub(super) opts: &'a ScanOptions,
    /// Page kind per relation fork (index into the relation list); None: guess page by page.
    pub(super) kinds: Vec<Option<PageKind>>,
    /// Attribute count per relation fork, from the catalog.
    pub(super) natts: Vec<Option<u16>>,
    /// Catalog knowledge per relation fork (main forks only).
    pub(super) metas: Vec<Option<&'a RelMeta>>,
    pub(super) progress: &'a Progress,
    /// With health figures asked for: how to count them.
    pub(super) health: Option<crate::health::Counting<'a>>,
    /// With a whole data directory scanned: its pg_xact and pg_multixact, for the tuples.
    pub(super) book: Option<&'a super::bookkeeping::Bookkeeping>,
    /// Per relation fork (main forks only): its visibility map and free space map forks, read beside its pages.
    pub(super) maps: Vec<super::maps::MapForks<'a>>,
    /// The data directory's transaction status, for the tuples of pages the visibility map marks.
    pub(super) vis: Option<&'a crate::visibility::service::Visibility>,
}

/// One chunk of one segment file.
pub(super) struct Unit<'a> {
    pub(super) rel: &'a Relation,
    pub(super) seg_index: usize,
    pub(super) first_block_in_file: u64,
    pub(super) nblocks: u64,
}

/// A btree page's links: (block, prev, next, level, flags).
pub(super) type BtLink = (u64, u32, u32, u32, u16);

/// What a chunk tells the relation-wide checks.
#[derive(Default)]
pub(super) struct ChunkSummary {
    pub(super) findings: Vec<Finding>,
    /// Relation block numbers of all-zero pages.
    pub(super) zero_blocks: Vec<u64>,
    /// Highest relation block that is initialised and not empty.
    pub(super) last_nonempty: Option<u64>,
    /// Visibility map pages: (vm block, all-visible heap blocks on it).
    pub(super) vm_all_visible: Vec<u64>,
    /// Btree pages: (block, prev, next, level, flags).
    pub(super) btree_links: Vec<BtLink>,
    /// GIN pages' links, and the metapage's data.
    pub(super) gin_links: Vec<super::gin::GinLink>,
    pub(super) gin_meta: Option<crate::format::gin::GinMetaPageData>,
    pub(super) zero_pages: u64,
    /// Pages not judged, as (block, LSN): newer than [`ScanOptions::judged_up_to`] (written after a live scan's redo
    /// point, or while a backup copied them). No check of another page may lean on them.
    pub(super) skipped: Vec<(u64, u64)>,
    /// Heap pages' line pointer states, when an index of this heap will be checked.
    pub(super) lp: LpRun,
    /// Index entries into all-zero heap pages: (heap block, entries).
    pub(super) zero_refs: Vec<(u64, u32)>,
    /// TOAST pointers found in a table's tuples: (block, line pointer, pointer).
    pub(super) toast_ptrs: Vec<(u64, u16, crate::format::tuple::ToastPointer)>,
    /// The chunks found in a TOAST table's pages.
    pub(super) toast_inv: Option<crate::format::toast::ChunkInventory>,
    /// With health figures asked for: this chunk's share.
    pub(super) health: crate::health::HealthAcc,
    /// With the bookkeeping judged: this chunk's counts.
    pub(super) book: super::bookkeeping::BookAcc,
    /// Hash and BRIN pages: what the relation-wide checks of those indexes need.
    pub(super) am: super::hashbrin::AmPages,
    /// GiST and SP-GiST pages: their links, for the relation-wide checks.
    pub(super) gist: super::gist::GistAcc,
    /// Heap pages whose free space map leaf records more free space than they have (stale: information).
    pub(super) fsm_stale: u64,
    /// Free space map pages: (FSM block, its root node), for the check across levels.
    pub(super) fsm_roots: Vec<(u64, u8)>,
}

/// Reads up to `len` bytes at `offset` into the front of `buf` (grown, never shrunk or cleared: the bytes past
/// the count returned are stale).
pub(super) fn read_chunk(path: &Path, offset: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<usize> {
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

/// A unit's bytes: mapped where they lie, else (a tar member, a pass again after the file was shortened under its
/// mapping) read into this thread's buffer.
enum UnitBytes {
    Read(ChunkBuf, usize),
    Mapped(Mapped),
}

/// Units under this many bytes are read, not mapped.
const MAP_MIN: usize = 256 << 10;

impl UnitBytes {
    fn read(path: &Path, offset: u64, len: usize, map: bool) -> std::io::Result<UnitBytes> {
        // a small range is cheaper read than mapped (mmap, populate and munmap cost more than copying a few pages:
        // a schema of 80,000 one-page relations spent a tenth of its scan on them)
        if map && len >= MAP_MIN {
            // a file that cannot be mapped (a tar member, an empty range, mmap refused) is read as before
            if let Ok(Some(m)) = Mapped::open(path, offset, len) {
                return Ok(UnitBytes::Mapped(m));
            }
        }
        let mut chunk = ChunkBuf::take();
        let got = read_chunk(path, offset, len, &mut chunk.0)?;
        Ok(UnitBytes::Read(chunk, got))
    }
}

impl std::ops::Deref for UnitBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            UnitBytes::Read(chunk, got) => &chunk.0[..*got],
            UnitBytes::Mapped(m) => m,
        }
    }
}

pub(super) fn reread_page(path: &Path, offset: u64, blcksz: usize) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    match read_chunk(path, offset, blcksz, &mut buf) {
        Ok(n) if n == blcksz => Some(buf),
        _ => None,
    }
}

/// What every page of one unit is checked with, worked out once for the unit.
struct UnitPages<'a> {
    opts: &'a ScanOptions,
    fork: Fork,
    /// The relation fork's page kind; None: guessed page by page.
    kind: Option<PageKind>,
    heap_ctx: HeapContext<'a>,
    meta: Option<&'a RelMeta>,
    /// Record heap pages' line pointers (an index of this heap will be checked against them).
    collect_lp: bool,
    /// For a btree whose heap was scanned: that heap's line pointers.
    heap: Option<&'a HeapMap>,
    health: Option<&'a crate::health::Counting<'a>>,
    book: Option<&'a super::bookkeeping::Bookkeeping>,
    /// For a main fork: the map pages covering the unit.
    maps: Option<super::maps::MapWindow>,
    vis: Option<&'a crate::visibility::service::Visibility>,
}

/// One unit to scan and what its relation brings to it.
pub(super) struct UnitTask<'a> {
    /// The relation fork's index in the relation list.
    pub(super) rel_index: usize,
    pub(super) unit: &'a Unit<'a>,
    pub(super) rel_nblocks: u64,
    /// Record heap pages' line pointers (an index of this heap will be checked against them).
    pub(super) collect_lp: bool,
    /// For an index whose heap was scanned: that heap's line pointers.
    pub(super) heap: Option<&'a HeapMap>,
}

pub(super) fn scan_unit(ctx: &Ctx<'_>, task: &UnitTask<'_>) -> ChunkSummary {
    // mapped first; a file shortened under the mapping (a running server's VACUUM) gave zeros for the lost part, not
    // its pages: the chunk is read again, and comes back short as it should
    let (out, got) = scan_unit_from(ctx, task, true).or_else(|| scan_unit_from(ctx, task, false)).unwrap_or_default();
    let blcksz = ctx.opts.blcksz as usize;
    ctx.progress.bytes_done.fetch_add(got as u64, Ordering::Relaxed);
    ctx.progress.pages_done.fetch_add((got / blcksz) as u64, Ordering::Relaxed);
    out
}

/// One pass over a unit, its bytes mapped (`map`) or read: the summary and the bytes got; None when the mapped file
/// was shortened during the pass.
fn scan_unit_from(ctx: &Ctx<'_>, task: &UnitTask<'_>, map: bool) -> Option<(ChunkSummary, usize)> {
    let &UnitTask { rel_index, unit, rel_nblocks, collect_lp, heap } = task;
    let opts = ctx.opts;
    let blcksz = opts.blcksz as usize;
    let seg = &unit.rel.segments[unit.seg_index];
    let path = ctx.root.join(&seg.path);
    let mut out = ChunkSummary::default();
    let offset = unit.first_block_in_file * blcksz as u64;
    let want = unit.nblocks as usize * blcksz;
    let base_block = u64::from(seg.segno) * u64::from(opts.relseg_size) + unit.first_block_in_file;
    let reading = crate::profile::timer("worker.read");
    let read = UnitBytes::read(&path, offset, want, map);
    drop(reading);
    let _checking = crate::profile::timer("worker.check");
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            out.findings.push(Finding::new(
                Code::FileUnreadable,
                Some(base_block),
                None,
                format!("cannot read {}: {}", seg.path, io_reason(&e)),
            ));
            return Some((out, 0));
        }
    };
    let is_main_heap = unit.rel.fork == Fork::Main || unit.rel.fork == Fork::Init;
    let pages = UnitPages {
        opts,
        fork: unit.rel.fork,
        kind: ctx.kinds[rel_index],
        heap_ctx: if is_main_heap {
            HeapContext {
                nblocks: Some(rel_nblocks),
                horizons: opts.horizons.as_ref(),
                relnatts: ctx.natts[rel_index],
                gin_key: ctx.metas[rel_index].and_then(|m| m.gin_key.as_deref()).and_then(GinKeyKind::parse),
            }
        } else {
            HeapContext::default()
        },
        meta: ctx.metas[rel_index],
        collect_lp,
        heap,
        health: ctx.health.as_ref(),
        book: if unit.rel.fork == Fork::Main { ctx.book } else { None },
        maps: (unit.rel.fork == Fork::Main
            && opts.checks
            && matches!(ctx.kinds[rel_index], Some(PageKind::Heap) | None))
        .then(|| super::maps::MapWindow::read(ctx.root, ctx.maps[rel_index], base_block, unit.nblocks, opts)),
        vis: ctx.vis,
    };
    let got = bytes.len();
    let all = &bytes[..got - got % blcksz];
    // A running server's page under a mapping changes while it is judged (every write of its buffer lands in the
    // mapped page cache): a page whose LSN was read before a write and whose tuples after it mixes two moments (a
    // tuple's new xmax under an LSN older than the redo point, against map bits read before). A live scan judges a
    // copy, taken once, as pread would give it: a copy torn by a write is what the checksum and LSN rules catch.
    let snapshot = opts.live_redo_lsn.is_some() && matches!(bytes, UnitBytes::Mapped(_));
    let mut copy = Vec::with_capacity(if snapshot { blcksz } else { 0 });
    for (i, mapped) in all.chunks_exact(blcksz).enumerate() {
        if ctx.progress.cancelled.load(Ordering::Relaxed) {
            break;
        }
        let bytes = if snapshot {
            copy.clear();
            copy.extend_from_slice(mapped);
            &copy[..]
        } else {
            mapped
        };
        let block = base_block + i as u64;
        let Some(page) = Page::new(bytes) else {
            continue;
        };
        let again = || reread_page(&path, offset + (i * blcksz) as u64, blcksz);
        let (reread, checksum_verified) = match opts.live_redo_lsn {
            Some(redo) => live_recheck(&page, bytes, block, redo, opts, again),
            None => (None, false),
        };
        let page = reread.as_deref().and_then(Page::new).unwrap_or(page);
        if let Some(lsn) = newer_than_judged(&page, opts) {
            out.skipped.push((block, lsn));
            continue;
        }
        let verify = opts.checksums && !(checksum_verified && reread.is_none());
        let at = out.findings.len();
        scan_page(&pages, block, bytes, &page, verify, &mut out);
        if opts.live_redo_lsn.is_some() {
            let judged = reread.as_deref().unwrap_or(bytes);
            live_vm_verdict(&pages, block, judged, at, again, &mut out.findings);
        }
        if unit.rel.fork == Fork::Fsm && opts.checks && opts.live_redo_lsn.is_some() {
            super::maps::live_fsm_page(reread.as_deref().unwrap_or(bytes), block, opts, again, &mut out);
        }
    }
    match &bytes {
        UnitBytes::Mapped(m) if m.shortened() => None,
        _ => Some((out, got)),
    }
}

/// A live scan's map-bit findings of one heap page (those pushed from `at` on) replaced by the verdict on a copy
/// read alike twice ([`super::maps::MapWindow::live_vm_findings`]). They are the findings nothing re-reads later:
/// a page's other findings are compared with the server's copy of the page, but map bits are not in it.
fn live_vm_verdict(
    pages: &UnitPages<'_>,
    block: u64,
    judged: &[u8],
    at: usize,
    reread: impl Fn() -> Option<Vec<u8>>,
    findings: &mut Vec<Finding>,
) {
    let is_vm = |f: &Finding| matches!(f.code, Code::VmAllVisibleWrong | Code::VmAllFrozenWrong);
    if !findings[at..].iter().any(is_vm) {
        return;
    }
    let kept: Vec<Finding> = findings.drain(at..).filter(|f| !is_vm(f)).collect();
    findings.extend(kept);
    if let (Some(w), Some(vis)) = (&pages.maps, pages.vis) {
        findings.extend(w.live_vm_findings(judged, block, vis, pages.opts, reread));
    }
}

/// The LSN of a page not to judge: newer than [`ScanOptions::judged_up_to`], with a sane header. Such a page may be
/// mid-write in a live scan's read or torn in a backup's copy, and the server (or replay) has the good one. A damaged
/// header's LSN is as damaged as the rest of it, and must not hide the page; an all-zero page has no LSN.
fn newer_than_judged(page: &Page<'_>, opts: &ScanOptions) -> Option<u64> {
    let lsn = page.header().pd_lsn.lsn();
    (lsn > opts.judged_up_to()? && page.header_is_sane(opts.blcksz as usize)).then_some(lsn)
}

/// A live scan's look at a page as first read: (the page read again, whether this copy's checksum is verified
/// already). Read again when written since the redo point or torn in our copy by a concurrent write (a checksum
/// mismatch, an insane header); `None` when not needed or the read fails. A verified checksum spares the page
/// checks from doing it again.
fn live_recheck(
    page: &Page<'_>,
    bytes: &[u8],
    block: u64,
    redo: u64,
    opts: &ScanOptions,
    reread: impl FnOnce() -> Option<Vec<u8>>,
) -> (Option<Vec<u8>>, bool) {
    let newer = page.header().pd_lsn.lsn() > redo;
    let mismatch = opts.checksums
        && !page.header().is_new()
        && crate::format::checksum::pg_checksum_page(bytes, block as u32) != Some(page.header().pd_checksum);
    if newer || mismatch || !page.header_is_sane(opts.blcksz as usize) {
        (reread(), false)
    } else {
        (None, opts.checksums && !page.header().is_new())
    }
}

/// One page of a unit (the copy to judge, after a live scan's second read): the page checks, and what the
/// relation-wide checks need from it. `bytes` is the page as the unit read it.
fn scan_page(s: &UnitPages<'_>, block: u64, bytes: &[u8], page: &Page<'_>, verify: bool, out: &mut ChunkSummary) {
    let opts = s.opts;
    let blcksz = opts.blcksz as usize;
    if !opts.checks {
        return count_only(s, block, page, out);
    }
    if page.is_all_zero() {
        if let (Some(c), Fork::Main) = (s.health, s.fork) {
            out.health.new_page(c, s.kind, block, page);
        }
        out.zero_blocks.push(block);
        out.zero_pages += 1;
        if s.collect_lp {
            out.lp.zero(block);
        }
        return;
    }
    let page_kind = match s.kind {
        Some(PageKind::Btree) if block == 0 => PageKind::BtreeMeta,
        Some(k) => k,
        None => PageKind::guess(page),
    };
    let page_kind = if page.header().is_new() { PageKind::Uninitialized } else { page_kind };
    let sane = page.header_is_sane(blcksz);
    let tid_heap = s.heap.filter(|_| sane);
    match (page_kind, tid_heap) {
        // a GIN page's TIDs are checked as its page check decodes its posting lists, not decoded a second time
        (PageKind::Gin, Some(h)) => {
            let at = out.findings.len();
            let mut check = TidCheck::new(h, block);
            let found = check_page_tids(
                page,
                page_kind,
                Some(block),
                verify,
                &s.heap_ctx,
                Some(&mut |off, tid| check.tid(out, off, tid)),
            );
            check.finish(out);
            out.findings.splice(at..at, found);
        }
        _ => out.findings.extend(check_page_in(page, page_kind, Some(block), verify, &s.heap_ctx)),
    }
    if let Some(c) = s.health {
        match page_kind {
            PageKind::Uninitialized if s.fork == Fork::Main => out.health.new_page(c, s.kind, block, page),
            k => out.health.page(c, s.fork, k, block, page),
        }
    }
    if s.collect_lp && sane && page_kind == PageKind::Heap {
        out.lp.page(block, page);
    }
    if let (Some(h), PageKind::Btree | PageKind::Hash | PageKind::Gist | PageKind::SpGist) = (tid_heap, page_kind) {
        check_leaf_tids(page, page_kind, block, h, out);
    }
    index_links(page_kind, block, bytes, page, sane, s.fork == Fork::Main, out);
    if let (Some(b), PageKind::Heap, true) = (s.book, page_kind, sane) {
        b.tally(page, &mut out.book);
    }
    if page_kind == PageKind::Heap && sane {
        if let Some(meta) = s.meta {
            check_tuple_data(page, block, meta, opts.toast_max_chunk_size, out);
        }
        if let Some(w) = &s.maps {
            out.fsm_stale += u64::from(w.heap_page(page, block, s.vis, opts.blcksz, &mut out.findings));
        }
    }
    match page_kind {
        PageKind::Map if s.fork == Fork::Vm && sane => record_all_visible(bytes, block, opts.blcksz, out),
        PageKind::Map if s.fork == Fork::Fsm && sane => super::maps::fsm_page(bytes, block, opts, out),
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
    if in_use(page, page_kind) {
        out.last_nonempty = Some(block);
    }
}

/// In use: a heap page with items, or any initialised page of another kind.
pub(super) fn in_use(page: &Page<'_>, kind: PageKind) -> bool {
    !page.header().is_new() && (page.header().max_offset_number() > 0 || kind != PageKind::Heap)
}

/// What the relation-wide checks of an index need from one of its pages: btree and GIN links, GiST and SP-GiST
/// downlinks and chains, hash and BRIN pages (of a main fork). `sane`: the page header is; only btree links are
/// taken from a page whose header is not (the sibling check reports what the page check cannot).
pub(super) fn index_links(
    kind: PageKind,
    block: u64,
    bytes: &[u8],
    page: &Page<'_>,
    sane: bool,
    main: bool,
    out: &mut ChunkSummary,
) {
    if sane && main {
        out.am.page(kind, block, page);
    }
    match kind {
        PageKind::Btree | PageKind::BtreeMeta => {
            if let Some(o) = BTPageOpaqueData::from_page(page) {
                out.btree_links.push((block, o.btpo_prev, o.btpo_next, o.btpo_level, o.btpo_flags));
            }
        }
        PageKind::Gin if sane => {
            if let Some(o) = crate::format::gin::GinPageOpaqueData::from_page(page) {
                out.gin_links.push((block, o.rightlink, o.flags, o.maxoff));
                if o.has(crate::format::gin::GIN_META) {
                    out.gin_meta = crate::format::gin::GinMetaPageData::parse(bytes);
                }
            }
        }
        PageKind::Gist | PageKind::SpGist if sane => out.gist.page(kind, block, page),
        _ => {}
    }
}

/// A scan without checks: the page's health figures only.
fn count_only(s: &UnitPages<'_>, block: u64, page: &Page<'_>, out: &mut ChunkSummary) {
    let Some(c) = s.health else { return };
    if page.header().is_new() {
        if s.fork == Fork::Main {
            out.health.new_page(c, s.kind, block, page);
        }
        return;
    }
    let kind = match s.kind {
        Some(PageKind::Btree) if block == 0 => PageKind::BtreeMeta,
        Some(k) => k,
        None => PageKind::guess(page),
    };
    out.health.page(c, s.fork, kind, block, page);
}

/// Record the all-visible heap blocks a visibility map page (VM block `block`, its bytes) claims.
fn record_all_visible(bytes: &[u8], block: u64, blcksz: u32, out: &mut ChunkSummary) {
    let per_page = crate::format::vm::heapblocks_per_page(blcksz);
    let first = block * per_page;
    for (byte_i, b) in bytes[24..].iter().enumerate() {
        if *b == 0 {
            continue;
        }
        for slot in 0..4 {
            if (b >> (slot * 2)) & crate::format::vm::VISIBILITYMAP_ALL_VISIBLE != 0 {
                out.vm_all_visible.push(first + (byte_i * 4 + slot) as u64);
            }
        }
    }
}

/// Every heap TID on an index page (btree, GiST, SP-GiST leaf; hash bucket or overflow; GIN) against the heap's line
/// pointers: past the heap's end ("could not read block" on an index scan), at an unused or missing item (the row is
/// gone but the index still finds it), or into an all-zero page (counted: evidence that rows were there).
fn check_leaf_tids(page: &Page<'_>, kind: PageKind, block: u64, heap: &HeapMap, out: &mut ChunkSummary) {
    let mut check = TidCheck::new(heap, block);
    for_each_index_tid(page, kind, |off, tid| check.tid(out, off, tid));
    check.finish(out);
}

/// The TID check of one index page, fed a TID at a time: at most 16 findings, then one that counts the rest. An index
/// page's TIDs mostly come in runs into one heap block (posting lists, and leaves in the order of a correlated key):
/// the last block looked up is kept. A TID into a block whose line pointers are all in use is judged inline; the
/// rest (rare on a sound index) take the full look-up.
struct TidCheck<'h> {
    heap: &'h HeapMap,
    block: u64,
    reported: usize,
    summary_code: Code,
    /// The last heap block looked up, and its line pointer count when all of them are in use (else 0).
    last: (u32, u16),
}

impl<'h> TidCheck<'h> {
    fn new(heap: &'h HeapMap, block: u64) -> Self {
        // InvalidBlockNumber is no heap block: the first TID looks its block up
        TidCheck { heap, block, reported: 0, summary_code: Code::IndexTidUnused, last: (u32::MAX, 0) }
    }

    /// `off`: the index entry's line pointer, 0 on a GIN posting tree leaf (whose items have none).
    #[inline(always)]
    fn tid(&mut self, out: &mut ChunkSummary, off: u16, tid: &ItemPointerData) {
        if tid.block != self.last.0 {
            self.last = (tid.block, self.heap.all_used(tid.block));
        }
        if tid.offset != 0 && tid.offset <= self.last.1 {
            return;
        }
        self.look_up(out, off, tid);
    }

    #[inline(never)]
    fn look_up(&mut self, out: &mut ChunkSummary, off: u16, tid: &ItemPointerData) {
        match self.heap.block(tid.block).target(tid.offset) {
            TidTarget::PastEnd => self.report(out, Code::IndexTidBeyondHeap, off, || {
                format!("points to heap {tid}, past the heap's {} blocks", self.heap.nblocks)
            }),
            TidTarget::Zero => {
                let hb = u64::from(tid.block);
                match out.zero_refs.last_mut() {
                    Some((b, n)) if *b == hb => *n += 1,
                    _ => out.zero_refs.push((hb, 1)),
                }
            }
            TidTarget::Unused => self.report(out, Code::IndexTidUnused, off, || {
                format!("points to heap {tid}, an unused or missing line pointer")
            }),
            TidTarget::Unknown | TidTarget::Used => {}
        }
    }

    fn report(&mut self, out: &mut ChunkSummary, code: Code, item: u16, msg: impl FnOnce() -> String) {
        if self.reported < 16 {
            out.findings.push(Finding::new(code, Some(self.block), (item != 0).then_some(item), msg()));
        } else {
            self.summary_code = code;
        }
        self.reported += 1;
    }

    fn finish(self, out: &mut ChunkSummary) {
        if self.reported > 16 {
            out.findings.push(Finding::new(
                self.summary_code,
                Some(self.block),
                None,
                format!(
                    "{} index entries on this page point to missing heap rows ({} not listed)",
                    self.reported,
                    self.reported - 16
                ),
            ));
        }
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use crate::checks::cluster::testutil::Dir;
    use crate::checks::scan::{relations_for_files, scan, Progress, ScanOptions};
    use crate::finding::Code;
    use crate::format::checksum::set_checksum;
    use crate::format::heap::{HeapTupleHeaderData, HEAP_XMAX_INVALID, HEAP_XMIN_FROZEN};
    use crate::format::itemid::{ItemIdData, LP_NORMAL};
    use crate::format::page::{PageHeaderData, PageXLogRecPtr, BLCKSZ};

    const REDO: u32 = 0x2000;

    /// A page of nothing but its header, written at `lsn`.
    fn empty_page(lsn: u32, lower: u16, upper: u16) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        PageHeaderData {
            pd_lsn: PageXLogRecPtr { xlogid: 0, xrecoff: lsn },
            pd_lower: lower,
            pd_upper: upper,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: 0x2004,
            ..Default::default()
        }
        .write(&mut p);
        p
    }

    /// Heap block `blk` holding one frozen tuple, its page written at `lsn`: with `xmax` 0 its map bits
    /// (all-visible, all-frozen) are right; with a normal `xmax` the all-frozen bit is wrong, unless the page is
    /// newer than the redo point (an UPDATE since: not judged).
    fn heap(blk: u32, xmax: u32, lsn: u32, checksums: bool) -> Vec<u8> {
        let at = BLCKSZ - 32;
        let mut p = empty_page(lsn, 28, at as u16);
        p[24..28].copy_from_slice(&ItemIdData::new(at as u16, LP_NORMAL, 32).0.to_le_bytes());
        let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
        let mask = HEAP_XMIN_FROZEN | if xmax == 0 { HEAP_XMAX_INVALID } else { 0 };
        (t.t_xmin, t.t_xmax, t.t_infomask, t.t_infomask2, t.t_hoff) = (700, xmax, mask, 1, 24);
        t.write(&mut p[at..]);
        if checksums {
            set_checksum(&mut p, blk);
        }
        p
    }

    /// The one map page: every heap block all-visible and all-frozen, set before the redo point.
    fn vm(checksums: bool) -> Vec<u8> {
        let mut p = empty_page(REDO - 0x200, 24, BLCKSZ as u16);
        p[24..].fill(0xff);
        if checksums {
            set_checksum(&mut p, 0);
        }
        p
    }

    /// A server rewriting block 5 while a live scan reads the file (mapped): the old copy, right under its map
    /// bits, and the new one, an xmax set after the redo point (not judged). Block 9 holds the same xmax under an
    /// LSN before the redo point: its all-frozen bit is wrong. Judged from the mapping, block 5's old LSN and new
    /// tuple met in one page; judged from one read, a copy torn by the write did (unseen without checksums).
    fn live_scan_under_a_writer(checksums: bool) {
        const BUSY: u32 = 5;
        const WRONG: u32 = 9;
        const SCANS: usize = 1000;
        let (old_lsn, new_lsn) = (REDO - 0x100, REDO + 0x100);
        let dir = Dir::new();
        let db = dir.path().join("base/1");
        std::fs::create_dir_all(&db).unwrap();
        let file: Vec<u8> =
            (0..64).flat_map(|b| heap(b, if b == WRONG { 1000 } else { 0 }, old_lsn, checksums)).collect();
        std::fs::write(db.join("16384"), file).unwrap();
        std::fs::write(db.join("16384_vm"), vm(checksums)).unwrap();
        let (old, new) = (heap(BUSY, 0, old_lsn, checksums), heap(BUSY, 1000, new_lsn, checksums));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (stop, f) = (stop.clone(), std::fs::OpenOptions::new().write(true).open(db.join("16384")).unwrap());
            std::thread::spawn(move || {
                let at = u64::from(BUSY) * BLCKSZ as u64;
                // A pause after each write: a server writes one page out now and then, not back to back. Rewritten
                // without a pause, two reads in a row can be torn alike (the two copies differ only in their first
                // and last bytes), which no server's writes do.
                let pause = std::time::Duration::from_micros(20);
                while !stop.load(Ordering::Relaxed) {
                    f.write_at(&new, at).unwrap();
                    std::thread::sleep(pause);
                    f.write_at(&old, at).unwrap();
                    std::thread::sleep(pause);
                }
            })
        };
        let rels = relations_for_files(dir.path(), &[db.join("16384"), db.join("16384_vm")]).unwrap();
        let opts = ScanOptions { checksums, live_redo_lsn: Some(u64::from(REDO)), jobs: Some(1), ..Default::default() };
        let mut blocks = Vec::new();
        for _ in 0..SCANS {
            let out = scan(dir.path(), &rels, &opts, &Progress::default()).unwrap();
            let vm = out.findings.iter().filter(|f| f.finding.code == Code::VmAllFrozenWrong);
            blocks.push(vm.map(|f| f.finding.block).collect::<Vec<_>>());
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let bad: Vec<_> = blocks.iter().filter(|b| **b != [Some(u64::from(WRONG))]).collect();
        assert!(bad.is_empty(), "{} of {SCANS} scans: {:?}", bad.len(), bad.first());
    }

    #[test]
    fn a_live_scan_judges_map_bits_on_a_page_read_alike_twice() {
        live_scan_under_a_writer(true);
    }

    #[test]
    fn a_live_scan_without_checksums_judges_map_bits_on_a_page_read_alike_twice() {
        live_scan_under_a_writer(false);
    }
}
