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

/// Calls `each` for every heap TID a leaf entry of btree `ix` names (a posting list's every TID), reading the
/// index a batch of pages at a time; pages that are not sane leaf pages are passed over.
pub(crate) fn walk_leaves(
    ix: &IndexFiles,
    blcksz: u32,
    relseg_size: u32,
    mut each: impl FnMut(LeafEntry<'_>),
) -> Result<()> {
    use crate::format::btree::{leaf_heap_tids, leaf_key, BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD};
    use crate::format::itemid::LP_DEAD;
    let reader = BlockReader::new(&ix.files, blcksz, relseg_size);
    let size = blcksz as usize;
    let mut tids = Vec::new();
    let mut first = 1u64; // block 0 is the metapage
    while first < ix.nblocks {
        let count = 256u64.min(ix.nblocks - first);
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
                if !leaf_heap_tids(t, &mut tids) {
                    continue;
                }
                let key = leaf_key(t).unwrap_or(&[]);
                let dead = id.lp_flags() == LP_DEAD;
                for tid in &tids {
                    each(LeafEntry { block: u64::from(tid.block), lp: tid.offset, dead, key });
                }
            }
        }
        first += count;
    }
    Ok(())
}

/// Every heap TID in `blocks` that a live leaf entry of the given btree indexes points to.
pub fn index_evidence(cfg: &IndexEvidenceConfig) -> Result<Vec<IndexTid>> {
    let want: HashSet<u64> = cfg.blocks.iter().copied().collect();
    let mut out: HashSet<IndexTid> = HashSet::new();
    for ix in &cfg.indexes {
        walk_leaves(ix, cfg.blcksz, cfg.relseg_size, |e| {
            if !e.dead && (want.contains(&e.block) || cfg.beyond.is_some_and(|end| e.block >= end)) {
                out.insert(IndexTid { block: e.block, lp: e.lp, index: ix.name.clone() });
            }
        })?;
    }
    let mut v: Vec<IndexTid> = out.into_iter().collect();
    v.sort();
    Ok(v)
}
