//! The scan's result put together from the chunk summaries: what crosses relations first (TOAST pointers against
//! their TOAST table, index entries into all-zero heap pages, the visibility and free space maps), then relation by
//! relation its relation-wide checks and its findings with their file context, in block order.

use std::collections::HashMap;

use super::pool::Plan;
use super::relation::{fsm_check, relation_checks, zero_ref_checks};
use super::unit::{ChunkSummary, Ctx};
use super::{
    key_of, FileFinding, PageNote, RelKey, ScanResult, ScanSummary, SkippedRange, ZeroPagesNote, MAX_NOTES,
    ZERO_BLOCKS_LISTED,
};
use crate::finding::{Code, Finding};
use crate::format::page::PageKind;
use crate::sources::relfile::{Relation, SegmentProblemKind};
use crate::sources::relpath::Fork;

/// What a relation's checks need from the other relations.
struct CrossRefs {
    /// All-visible heap blocks per relation, from the VM forks (sorted).
    vm: HashMap<RelKey, Vec<u64>>,
    /// The FSM fork of each relation, for its main fork's check.
    fsm_of: HashMap<RelKey, usize>,
    /// Index entries into all-zero heap pages: (heap, block) -> entries.
    zero_refs: HashMap<(usize, u64), u32>,
}

/// The result as it is put together, relation by relation.
#[derive(Default)]
struct Assembly {
    summary: ScanSummary,
    findings: Vec<FileFinding>,
    skipped: Vec<SkippedRange>,
    after_backup_start: Vec<PageNote>,
    health: Vec<crate::health::RelationHealth>,
    zero_inside: Vec<ZeroPagesNote>,
}

pub(super) fn assemble(
    ctx: &Ctx<'_>,
    relations: &[Relation],
    plan: &Plan,
    mut chunks: Vec<(usize, ChunkSummary)>,
) -> ScanResult {
    let opts = ctx.opts;
    check_toast_pointers(ctx, relations, plan, &mut chunks);
    // Index entries into all-zero heap pages, counted per heap block.
    let mut zero_refs: HashMap<(usize, u64), u32> = HashMap::new();
    for (ri, c) in chunks.iter_mut() {
        if let Some(hi) = plan.heap_of[*ri] {
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
            let v = vm.entry(key_of(rel)).or_default();
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
    let cross = CrossRefs { vm, fsm_of, zero_refs };
    let mut out = Assembly {
        summary: ScanSummary { relations: relations.len() as u64, ..Default::default() },
        health: health_of(ctx, relations, plan, &mut per_rel),
        ..Default::default()
    };
    for (ri, cs) in per_rel.iter_mut().enumerate() {
        out.relation(ctx, relations, plan, &cross, ri, cs);
    }
    out.finish()
}

/// TOAST: one inventory per TOAST table, then every pointer of its table checked against it (findings of the
/// table's chunk). Pointers of tables whose TOAST table is not scanned are dropped.
fn check_toast_pointers(ctx: &Ctx<'_>, relations: &[Relation], plan: &Plan, chunks: &mut [(usize, ChunkSummary)]) {
    let opts = ctx.opts;
    let mut inventories: HashMap<usize, crate::format::toast::ChunkInventory> = HashMap::new();
    let new_inventory = |ti: usize| {
        let name = ctx.metas[ti].and_then(|m| m.toast_name.clone()).unwrap_or_default();
        crate::format::toast::ChunkInventory::new(name, opts.toast_max_chunk_size)
    };
    for (ri, c) in chunks.iter_mut() {
        if !c.skipped.is_empty() && ctx.metas[*ri].is_some_and(|m| m.toast_name.is_some()) {
            // a page not read may hold the chunks a pointer finds absent
            inventories.entry(*ri).or_insert_with(|| new_inventory(*ri)).mark_incomplete();
        }
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
        .map(|(i, _)| ctx.metas[i].and_then(|m| m.toast).and_then(|k| plan.main_index.get(&k).copied()))
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
                empty = new_inventory(ti);
                &empty
            }
        };
        for (block, lp, ptr) in c.toast_ptrs.drain(..) {
            for p in inv.check_value(&ptr, opts.toast_max_chunk_size) {
                c.findings.push(p.to_finding(Some(block), Some(lp)));
            }
        }
    }
}

/// The path, relative to the data directory, of the segment file of `rel` that holds `block`.
fn segment_path_of(rel: &Relation, block: u64, relseg_size: u32) -> String {
    let segno = (block / u64::from(relseg_size)) as u32;
    rel.segments.iter().find(|s| s.segno == segno).map_or_else(|| rel.segment_path(segno), |s| s.path.clone())
}

impl Assembly {
    /// Relation `ri` with its chunk summaries `cs`: its relation-wide checks, its skipped runs and notes, its
    /// segment problems, its findings in block order.
    fn relation(
        &mut self,
        ctx: &Ctx<'_>,
        relations: &[Relation],
        plan: &Plan,
        cross: &CrossRefs,
        ri: usize,
        cs: &mut [ChunkSummary],
    ) {
        let opts = ctx.opts;
        let rel = &relations[ri];
        let key = key_of(rel);
        let mut inside = Vec::new();
        let skipped = skipped_blocks(cs);
        let mut rel_findings: Vec<Finding> = relation_checks(
            &mut inside,
            rel.fork,
            &skipped,
            plan.nblocks[ri],
            ctx.kinds[ri],
            cs,
            cross.vm.get(&key).map(|v| v.as_slice()),
        );
        if let Some(&fi) = cross.fsm_of.get(&key).filter(|_| rel.fork == Fork::Main) {
            rel_findings.extend(fsm_check(ctx.root, &relations[fi], plan.nblocks[ri], opts));
        }
        zero_ref_checks(&mut rel_findings, &cross.zero_refs, ri);
        if rel.fork == Fork::Fsm {
            let mut roots: Vec<(u64, u8)> = cs.iter_mut().flat_map(|c| std::mem::take(&mut c.fsm_roots)).collect();
            roots.sort_unstable();
            self.summary.fsm_stale_upper += super::maps::fsm_upper_stale(ctx.root, rel, plan.nblocks[ri], &roots, opts);
        }
        if let (Some(book), Fork::Main) = (ctx.book, rel.fork) {
            let mut acc = super::bookkeeping::BookAcc::default();
            for c in cs.iter_mut() {
                acc.absorb(&mut c.book);
            }
            rel_findings.extend(book.findings(&acc));
        }
        // those index entries name rows on are findings already
        inside.retain(|&b| {
            !rel_findings.iter().any(|f| f.block == Some(b) && f.code == Code::PageHeaderZeroedReferenced)
        });
        self.zero_inside_note(rel, ctx.kinds[ri], &mut inside, opts.relseg_size);
        self.skipped_pages(rel, cs, opts);
        for c in cs.iter_mut() {
            self.summary.zero_pages += c.zero_pages;
            self.summary.fsm_stale_leaves += c.fsm_stale;
            rel_findings.append(&mut c.findings);
        }
        self.segment_problems(rel, opts.blcksz, opts.relseg_size);
        self.summary.files += rel.segments.len() as u64;
        self.summary.bytes += rel.total_size();
        self.summary.blocks += rel.segments.iter().map(|s| s.size / u64::from(opts.blcksz)).sum::<u64>();
        rel_findings.sort_by_key(|f| (f.block, f.item));
        for f in rel_findings {
            let path = segment_path_of(rel, f.block.unwrap_or(0), opts.relseg_size);
            self.findings.push(file_finding(rel, f, path));
        }
    }

    /// The pages of `rel` not judged: in a live scan counted and listed as runs of consecutive blocks, in a backup
    /// counted and the first [`MAX_NOTES`] listed with their LSN.
    fn skipped_pages(&mut self, rel: &Relation, cs: &mut [ChunkSummary], opts: &super::ScanOptions) {
        let pages = cs.iter().map(|c| c.skipped.len() as u64).sum::<u64>();
        if opts.live_redo_lsn.is_none() {
            self.summary.after_backup_start += pages;
            for &(block, lsn) in cs.iter().flat_map(|c| c.skipped.iter()) {
                if self.after_backup_start.len() >= MAX_NOTES {
                    break;
                }
                let path = segment_path_of(rel, block, opts.relseg_size);
                self.after_backup_start.push(PageNote { path, block, lsn: crate::format::page::format_lsn(lsn) });
            }
            return;
        }
        self.summary.skipped_live += pages;
        let range = |first, last| SkippedRange {
            tablespace_oid: rel.tablespace_oid,
            database_oid: rel.database_oid,
            relfilenode: rel.relfilenode,
            fork: rel.fork,
            first,
            last,
        };
        let mut run: Option<(u64, u64)> = None;
        for &(b, _) in cs.iter().flat_map(|c| c.skipped.iter()) {
            run = match run {
                Some((first, last)) if last + 1 == b => Some((first, b)),
                Some((first, last)) => {
                    self.skipped.push(range(first, last));
                    Some((b, b))
                }
                None => Some((b, b)),
            };
        }
        if let Some((first, last)) = run {
            self.skipped.push(range(first, last));
        }
    }

    /// Missing, short and oversized segment files of `rel`, and partial pages.
    fn segment_problems(&mut self, rel: &Relation, blcksz: u32, relseg_size: u32) {
        for sp in rel.segment_problems(blcksz, relseg_size) {
            let code = match sp.kind {
                SegmentProblemKind::MissingSegment => Code::FileMissingSegment,
                SegmentProblemKind::ShortSegment => Code::FileShortSegment,
                SegmentProblemKind::OversizedSegment => Code::FileOversizedSegment,
                SegmentProblemKind::PartialPage => Code::FilePartialPage,
            };
            self.findings.push(file_finding(rel, Finding::new(code, None, None, sp.detail), sp.path));
        }
    }

    fn finish(mut self) -> ScanResult {
        let summary = &mut self.summary;
        summary.findings = self.findings.len() as u64;
        summary.errors =
            self.findings.iter().filter(|f| f.finding.severity == crate::finding::Severity::Error).count() as u64;
        summary.warnings = summary.findings - summary.errors;
        ScanResult {
            summary: self.summary,
            findings: self.findings,
            skipped: self.skipped,
            after_backup_start: self.after_backup_start,
            health: self.health,
            zero_inside: self.zero_inside,
        }
    }

    /// Counts the all-zero pages `inside` a main fork that nothing names rows on, and lists them per table (a hash
    /// index allocates bucket pages ahead of use: its zero pages say nothing).
    fn zero_inside_note(&mut self, rel: &Relation, kind: Option<PageKind>, inside: &mut [u64], relseg_size: u32) {
        self.summary.zero_pages_inside += inside.len() as u64;
        let table = rel.fork == Fork::Main && matches!(kind, None | Some(PageKind::Heap));
        if inside.is_empty() || !table || self.zero_inside.len() >= MAX_NOTES {
            return;
        }
        inside.sort_unstable();
        self.zero_inside.push(ZeroPagesNote {
            tablespace_oid: rel.tablespace_oid,
            database_oid: rel.database_oid,
            relfilenode: rel.relfilenode,
            path: segment_path_of(rel, 0, relseg_size),
            count: inside.len() as u64,
            blocks: inside.iter().copied().take(ZERO_BLOCKS_LISTED).collect(),
        });
    }
}

/// Each main fork's health figures, summed over its chunks, with its visibility map's counts.
fn health_of(
    ctx: &Ctx<'_>,
    relations: &[Relation],
    plan: &Plan,
    per_rel: &mut [Vec<ChunkSummary>],
) -> Vec<crate::health::RelationHealth> {
    if ctx.opts.health_major.is_none() {
        return Vec::new();
    }
    let mut accs: Vec<crate::health::HealthAcc> = per_rel
        .iter_mut()
        .map(|cs| {
            let mut acc = crate::health::HealthAcc::default();
            for c in cs.iter_mut() {
                acc.merge(std::mem::take(&mut c.health));
            }
            acc
        })
        .collect();
    let vm: HashMap<RelKey, (u64, u64)> = relations
        .iter()
        .zip(&accs)
        .filter(|(r, _)| r.fork == Fork::Vm)
        .map(|(r, a)| (key_of(r), a.vm_counts()))
        .collect();
    let mut out = Vec::new();
    for (ri, rel) in relations.iter().enumerate().filter(|(_, r)| r.fork == Fork::Main) {
        let acc = std::mem::take(&mut accs[ri]);
        let mut h = acc.finish(key_of(rel), ctx.kinds[ri], plan.nblocks[ri]);
        (h.vm_all_visible, h.vm_all_frozen) = vm.get(&key_of(rel)).copied().unwrap_or_default();
        out.push(h);
    }
    out
}

/// The blocks of one relation fork that were not judged, sorted: the checks across pages leave their pairs alone.
fn skipped_blocks(cs: &[ChunkSummary]) -> Vec<u64> {
    let mut blocks: Vec<u64> = cs.iter().flat_map(|c| c.skipped.iter().map(|&(b, _)| b)).collect();
    blocks.sort_unstable();
    blocks
}

fn file_finding(rel: &Relation, finding: Finding, path: String) -> FileFinding {
    FileFinding {
        finding,
        path,
        tablespace_oid: rel.tablespace_oid,
        database_oid: rel.database_oid,
        relfilenode: rel.relfilenode,
        fork: rel.fork,
    }
}
