//! The scan's driver on the thread pool: the relation list cut into work units, the units run in two phases
//! (heaps and everything else first, then the btrees checked against their heaps' line pointers), the chunk
//! summaries handed to the assembly.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::heapmap::HeapMap;
use super::unit::{read_chunk, scan_unit, ChunkSummary, Ctx, Unit, UnitTask};
use super::{key_of, CheckedChunk, Progress, RelKey, RelMeta, ScanOptions, ScanResult};
use crate::error::{CoreError, Result};
use crate::format::page::{Page, PageKind};
use crate::sources::backup::vfs::VFile;
use crate::sources::relfile::Relation;
use crate::sources::relpath::Fork;

/// What the scan works out about the relation list before reading it, by index into the list.
pub(super) struct Plan {
    /// Each relation fork's length in blocks.
    pub(super) nblocks: Vec<u64>,
    /// The main forks, by file key.
    pub(super) main_index: HashMap<RelKey, usize>,
    /// For a btree or GIN index whose heap is scanned too: that heap. Its TIDs are checked against the heap's line
    /// pointers in a second phase, after the first collected them.
    pub(super) heap_of: Vec<Option<usize>>,
    /// Whether to collect a relation's line pointers (a heap of one of those btrees).
    pub(super) collect_lp: Vec<bool>,
}

impl Plan {
    fn new(relations: &[Relation], opts: &ScanOptions, meta: &HashMap<RelKey, &RelMeta>, ctx: &Ctx<'_>) -> Plan {
        let nblocks = relations.iter().map(|r| relation_nblocks(r, opts.blcksz, opts.relseg_size)).collect();
        let main_index: HashMap<RelKey, usize> =
            relations.iter().enumerate().filter(|(_, r)| r.fork == Fork::Main).map(|(i, r)| (key_of(r), i)).collect();
        let heap_of: Vec<Option<usize>> = relations
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let heap = meta.get(&key_of(r)).and_then(|m| m.heap)?;
                let hi = *main_index.get(&heap)?;
                (r.fork == Fork::Main
                    && matches!(
                        ctx.kinds[i],
                        Some(PageKind::Btree | PageKind::Hash | PageKind::Gin | PageKind::Gist | PageKind::SpGist)
                    ))
                .then_some(hi)
            })
            .collect();
        let mut collect_lp = vec![false; relations.len()];
        for hi in heap_of.iter().flatten() {
            collect_lp[*hi] = true;
        }
        Plan { nblocks, main_index, heap_of, collect_lp }
    }
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

fn relation_nblocks(rel: &Relation, blcksz: u32, relseg_size: u32) -> u64 {
    rel.md_nblocks(blcksz, relseg_size)
}

/// Where a block of a segment file lies in a sequential source (a compressed backup): (member position, block);
/// `None` for a file read at random.
fn seg_order(root: &Path, path: &str, block: u64) -> Option<(usize, u64)> {
    crate::sources::backup::vfs::read_order(&root.join(path)).map(|o| (o, block))
}

/// `f` over `items` on the pool, handed out one at a time in order to whichever thread is free: in storage order
/// (`key`: member position, block) when some items are read from a sequential source (a compressed backup), so
/// the source's stream moves forward; else in the items' order, so that what a caller waits on (a table's first
/// chunks for verify_heapam, an index the server checks once all its pages are sound) is done first, and no
/// thread is left alone with a run of units at the end. The results come back in the items' order either way.
fn in_read_order<T: Sync, R: Send>(
    items: &[T],
    key: impl Fn(&T) -> Option<(usize, u64)>,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    let keys: Vec<Option<(usize, u64)>> = items.iter().map(key).collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    if keys.iter().any(|k| k.is_some()) {
        order.sort_by_key(|&i| keys[i].unwrap_or((usize::MAX, 0)));
    }
    let mut out: Vec<(usize, R)> = order.into_iter().par_bridge().map(|i| (i, f(&items[i]))).collect();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
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

/// What every unit shares: the catalog's word per relation fork, and each fork's page kind (read from its first
/// pages when the catalog does not say).
fn context<'a>(
    root: &'a Path,
    relations: &'a [Relation],
    opts: &'a ScanOptions,
    progress: &'a Progress,
    meta: &HashMap<RelKey, &'a RelMeta>,
    vis: Option<&'a crate::visibility::service::Visibility>,
    book: Option<&'a super::bookkeeping::Bookkeeping>,
) -> Ctx<'a> {
    let kinds = in_read_order(
        relations,
        |r| r.segments.first().and_then(|s| seg_order(root, &s.path, 0)),
        |r| detect_kind(root, r, meta.get(&key_of(r)).copied(), opts.blcksz),
    );
    let natts = relations.iter().map(|r| meta.get(&key_of(r)).and_then(|m| m.natts)).collect();
    let metas =
        relations.iter().map(|r| if r.fork == Fork::Main { meta.get(&key_of(r)).copied() } else { None }).collect();
    let health = opts.health_major.zip(vis).map(|(major, vis)| crate::health::Counting {
        defs: crate::health::Definitions::for_major(major),
        vis,
        next_xid: opts.horizons.map(|h| h.next_xid),
    });
    let maps = super::maps::map_forks(relations);
    Ctx { root, opts, kinds, natts, metas, progress, health, book, maps, vis: vis.filter(|_| opts.checks) }
}

/// The work units: each segment file cut into chunks of `opts.chunk_blocks` blocks, with their relation's index,
/// in relation order.
fn work_units<'a>(relations: &'a [Relation], opts: &ScanOptions) -> Vec<(usize, Unit<'a>)> {
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
    units
}

/// Every unit through [`scan_unit`]: the first phase, then the heaps' line pointers gathered, then the btrees
/// checked against them. The summaries of each phase come back in unit order.
fn run_units(ctx: &Ctx<'_>, relations: &[Relation], plan: &Plan) -> Vec<(usize, ChunkSummary)> {
    let units = work_units(relations, ctx.opts);
    let (mut phase2, phase1): (Vec<_>, Vec<_>) = units.iter().partition(|(ri, _)| plan.heap_of[*ri].is_some());
    // GIN indexes first among the indexes: diagnose asks the server's gin_index_check about one only once every page
    // of it is found sound here, and by then the server has nothing else to do beside this phase (a stable sort:
    // each index's chunks stay in block order)
    phase2.sort_by_key(|(ri, _)| ctx.kinds[*ri] != Some(PageKind::Gin));
    let unit_order =
        |(_, u): &&(usize, Unit<'_>)| seg_order(ctx.root, &u.rel.segments[u.seg_index].path, u.first_block_in_file);
    let mut chunks: Vec<(usize, ChunkSummary)> = in_read_order(&phase1, unit_order, |(ri, u)| {
        let task = UnitTask {
            rel_index: *ri,
            unit: u,
            rel_nblocks: plan.nblocks[*ri],
            collect_lp: plan.collect_lp[*ri],
            heap: None,
        };
        let summary = scan_unit(ctx, &task);
        publish_checked(ctx, u, &summary);
        (*ri, summary)
    });
    let gathering = crate::profile::timer("scan.heapmap");
    let mut heaps: HashMap<usize, HeapMap> = HashMap::new();
    for (ri, c) in chunks.iter_mut() {
        if plan.collect_lp[*ri] {
            let map = heaps.entry(*ri).or_insert_with(|| HeapMap::new(plan.nblocks[*ri]));
            map.absorb(&mut c.lp);
        }
    }
    drop(gathering);
    let second: Vec<(usize, ChunkSummary)> = in_read_order(&phase2, unit_order, |(ri, u)| {
        let heap = plan.heap_of[*ri].and_then(|hi| heaps.get(&hi));
        let task = UnitTask { rel_index: *ri, unit: u, rel_nblocks: plan.nblocks[*ri], collect_lp: false, heap };
        let summary = scan_unit(ctx, &task);
        publish_checked(ctx, u, &summary);
        (*ri, summary)
    });
    chunks.extend(second);
    chunks
}

/// A chunk of a main fork, checked (a table's in the first phase, an index's in the second): its blocks with a
/// finding and those skipped, for [`Progress::checked`].
fn publish_checked(ctx: &Ctx<'_>, u: &Unit<'_>, c: &ChunkSummary) {
    if u.rel.fork != Fork::Main || !ctx.progress.checked_wanted.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let seg = &u.rel.segments[u.seg_index];
    let first = u64::from(seg.segno) * u64::from(ctx.opts.relseg_size) + u.first_block_in_file;
    let mut blocks_found: Vec<u64> = c.findings.iter().filter_map(|x| x.block).collect();
    blocks_found.sort_unstable();
    blocks_found.dedup();
    let chunk = CheckedChunk {
        tablespace_oid: u.rel.tablespace_oid,
        database_oid: u.rel.database_oid,
        relfilenode: u.rel.relfilenode,
        first,
        count: u.nblocks,
        blocks_found,
        blocks_skipped: c.skipped.iter().map(|(b, _)| *b).collect(),
    };
    if let Ok(mut taken) = ctx.progress.checked.lock() {
        taken.push(chunk);
    }
}

pub(super) fn scan_on_pool(
    root: &Path,
    relations: &[Relation],
    opts: &ScanOptions,
    progress: &Progress,
) -> Result<ScanResult> {
    if opts.blcksz == 0 || !opts.blcksz.is_multiple_of(128) || opts.relseg_size == 0 {
        return Err(CoreError::Invalid(format!(
            "unusable geometry: block size {} and segment size {}",
            opts.blcksz, opts.relseg_size
        )));
    }
    let preparing = crate::profile::timer("scan.prepare");
    refuse_unreadable(root, relations)?;
    let meta: HashMap<RelKey, &RelMeta> = opts.relations.iter().map(|(k, m)| (*k, m)).collect();
    // Health figures judge each heap tuple live or dead, and the visibility map check the tuples of the pages it
    // marks: by their hint bits, else by the data directory's pg_xact.
    let vis = (opts.health_major.is_some() || opts.checks).then(|| {
        let clog = crate::visibility::xact::Clog::open(root, opts.blcksz);
        crate::visibility::service::Visibility::new(clog, HashMap::new(), HashMap::new(), opts.horizons)
    });
    let book =
        if opts.bookkeeping && opts.checks { super::bookkeeping::Bookkeeping::open(root, opts.blcksz) } else { None };
    let ctx = context(root, relations, opts, progress, &meta, vis.as_ref(), book.as_ref());
    let plan = Plan::new(relations, opts, &meta, &ctx);
    drop(preparing);
    let chunks = run_units(&ctx, relations, &plan);
    if progress.cancelled.load(Ordering::Relaxed) {
        return Err(CoreError::Invalid("scan cancelled".to_string()));
    }
    let _assembling = crate::profile::timer("scan.assemble");
    Ok(super::result::assemble(&ctx, relations, &plan, chunks))
}
