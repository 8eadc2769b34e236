//! Index evidence: which rows were on a block, from the heap TIDs the leaf entries of the table's btree indexes
//! point to.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{io_reason, CoreError, Result};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;
use crate::sources::blocks::{default_blcksz, default_relseg, BlockReader, SegFile};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFiles {
    pub name: String,
    pub files: Vec<SegFile>,
    pub nblocks: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEvidenceConfig {
    pub indexes: Vec<IndexFiles>,
    pub blocks: Vec<u64>,
    /// Also every TID at or past this block (the heap's end: rows a truncated file lost).
    #[serde(default)]
    pub beyond: Option<u64>,
    #[serde(default = "default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "default_relseg")]
    pub relseg_size: u32,
    /// Threads reading each index.
    #[serde(default = "one")]
    pub jobs: usize,
}

fn one() -> usize {
    1
}

/// A heap TID an index entry points to.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexTid {
    pub block: u64,
    pub lp: u16,
    pub index: String,
}

/// One leaf entry as [`walk_leaves`] gives it: the heap TID it names, whether it is marked dead (LP_DEAD), its key
/// bytes (after the header, before a posting list).
pub(crate) struct LeafEntry<'a> {
    pub block: u64,
    pub lp: u16,
    pub dead: bool,
    pub key: &'a [u8],
}

/// Leaf pages read a batch at a time.
const LEAF_BATCH: u64 = 256;

/// Calls `each` for every heap TID a leaf entry of btree `ix` names (a posting list's every TID), reading the
/// index a batch of pages at a time; pages that are not sane leaf pages are passed over.
pub(crate) fn walk_leaves(
    ix: &IndexFiles,
    blcksz: u32,
    relseg_size: u32,
    mut each: impl FnMut(LeafEntry<'_>),
) -> Result<()> {
    let reader = BlockReader::new(&ix.files, blcksz, relseg_size);
    let mut tids = Vec::new();
    let mut first = 1u64; // block 0 is the metapage
    while first < ix.nblocks {
        let count = LEAF_BATCH.min(ix.nblocks - first);
        leaves_in(ix, &reader, first, count, blcksz, &mut tids, &mut each)?;
        first += count;
    }
    Ok(())
}

/// [`walk_leaves`] on the threads of `pool`, a batch of pages per task: what `keep` takes of each batch's entries,
/// in index order.
pub(crate) fn par_walk_leaves<T: Send>(
    ix: &IndexFiles,
    blcksz: u32,
    relseg_size: u32,
    pool: &rayon::ThreadPool,
    keep: impl Fn(LeafEntry<'_>, &mut Vec<T>) + Sync,
) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let reader = BlockReader::new(&ix.files, blcksz, relseg_size);
    let batches: Vec<u64> = (1..ix.nblocks).step_by(LEAF_BATCH as usize).collect();
    let parts: Vec<Vec<T>> = pool.install(|| {
        batches
            .par_iter()
            .map(|&first| {
                let _walking = crate::profile::timer("worker.evidence");
                let (mut tids, mut out) = (Vec::new(), Vec::new());
                let count = LEAF_BATCH.min(ix.nblocks - first);
                leaves_in(ix, &reader, first, count, blcksz, &mut tids, &mut |e| keep(e, &mut out))?;
                Ok(out)
            })
            .collect::<Result<_>>()
    })?;
    Ok(parts.into_iter().flatten().collect())
}

/// The leaf entries of blocks `first..first + count` of `ix`.
fn leaves_in(
    ix: &IndexFiles,
    reader: &BlockReader,
    first: u64,
    count: u64,
    blcksz: u32,
    tids: &mut Vec<crate::format::heap::ItemPointerData>,
    each: &mut impl FnMut(LeafEntry<'_>),
) -> Result<()> {
    use crate::format::btree::{leaf_heap_tids, leaf_key, BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD};
    use crate::format::itemid::LP_DEAD;
    let size = blcksz as usize;
    let data = reader
        .read(first, count)
        .map_err(|e| CoreError::Invalid(format!("cannot read {}: {}", ix.name, io_reason(&e))))?;
    for bytes in data.chunks_exact(size) {
        let Some(page) = Page::new(bytes) else { continue };
        if !page.header_is_sane(size) {
            continue;
        }
        let Some(o) = BTPageOpaqueData::from_page(&page) else { continue };
        if !o.is_leaf() || o.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
            continue;
        }
        let first_item = if o.is_rightmost() { 1 } else { 2 };
        for (off, id) in page.item_ids() {
            if off < first_item || !matches!(id.lp_flags(), LP_NORMAL | LP_DEAD) {
                continue;
            }
            let Some(t) = page.item_bytes(id) else { continue };
            if !leaf_heap_tids(t, tids) {
                continue;
            }
            let key = leaf_key(t).unwrap_or(&[]);
            let dead = id.lp_flags() == LP_DEAD;
            for tid in tids.iter() {
                each(LeafEntry { block: u64::from(tid.block), lp: tid.offset, dead, key });
            }
        }
    }
    Ok(())
}

/// Every heap TID in `blocks` that a live leaf entry of the given btree indexes points to, each index read by
/// `jobs` threads at once (a 10 GB table's primary key is not one thread's work).
pub fn index_evidence(cfg: &IndexEvidenceConfig) -> Result<Vec<IndexTid>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.jobs.max(1))
        .build()
        .map_err(|e| CoreError::Invalid(format!("cannot start worker threads: {e}")))?;
    let want: HashSet<u64> = cfg.blocks.iter().copied().collect();
    let mut out: HashSet<IndexTid> = HashSet::new();
    for ix in &cfg.indexes {
        let found = par_walk_leaves(ix, cfg.blcksz, cfg.relseg_size, &pool, |e, out: &mut Vec<(u64, u16)>| {
            if !e.dead && (want.contains(&e.block) || cfg.beyond.is_some_and(|end| e.block >= end)) {
                out.push((e.block, e.lp));
            }
        })?;
        out.extend(found.into_iter().map(|(block, lp)| IndexTid { block, lp, index: ix.name.clone() }));
    }
    let mut v: Vec<IndexTid> = out.into_iter().collect();
    v.sort();
    Ok(v)
}
