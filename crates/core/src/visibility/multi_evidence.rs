//! What the heap pages say about MultiXacts whose members are lost: which tuples name each one, whether only as a
//! lock, and the updater of the ones that updated a row, read from the update chain (a tuple's `t_ctid` points to its
//! newer version, whose `t_xmin` is the transaction that updated it: `heap_update` in `access/heap/heapam.c`).
//!
//! A lock-only MultiXact needs no members once its lockers are gone, which they all are when the server is down:
//! `HEAP_XMAX_IS_LOCKED_ONLY` tuples are visible whatever the members say. A MultiXact that deleted a row in place
//! (`t_ctid` pointing at the tuple itself) leaves no trace of its deleter: it is counted as unknown.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_KEYS_UPDATED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_IS_MULTI, HEAP_XMAX_KEYSHR_LOCK,
    HEAP_XMAX_LOCK_ONLY,
};
use crate::format::itemid::{LP_NORMAL, LP_REDIRECT};
use crate::format::page::Page;
use crate::visibility::hint_evidence::{walk_heap_pages, HeapRel, HeapVisitor, RowRef};

/// Rows kept per MultiXact to show the DBA.
const ROWS_PER_MULTI: usize = 3;

/// What the heap says about one MultiXact.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MultiEvidence {
    pub multi: u32,
    /// Tuples naming it as a lock only.
    pub locked: u64,
    /// Tuples it updated (their newer version found through `t_ctid`).
    pub updated: u64,
    /// The updating transaction, from the newer versions' xmin.
    pub updater: Option<u32>,
    /// The update changed a key column (`HEAP_KEYS_UPDATED`): `MultiXactStatusUpdate`, else `NoKeyUpdate`.
    pub key_update: bool,
    /// Newer versions naming different updaters: the chain is damaged, the updater is not trusted.
    pub conflicting: bool,
    /// Tuples it deleted in place or whose newer version is gone: the deleter is unknown.
    pub deleted_unknown: u64,
    pub rows: Vec<RowRef>,
}

struct Pending {
    block: u32,
    offset: u16,
    multi: u32,
}

struct MultiWalk {
    lo: u32,
    hi: u32,
    acc: BTreeMap<u32, MultiEvidence>,
    pending: Vec<Pending>,
    /// The row of each pending tuple, in case its newer version cannot be found.
    pending_rows: Vec<RowRef>,
}

impl MultiWalk {
    fn entry(&mut self, multi: u32) -> &mut MultiEvidence {
        self.acc.entry(multi).or_insert_with(|| MultiEvidence { multi, ..MultiEvidence::default() })
    }

    fn unknown(&mut self, multi: u32, row: RowRef) {
        let e = self.entry(multi);
        e.deleted_unknown += 1;
        if e.rows.len() < ROWS_PER_MULTI {
            e.rows.push(row);
        }
    }
}

impl HeapVisitor for MultiWalk {
    fn page(&mut self, rel: &HeapRel<'_>, block: u32, page: &Page<'_>) {
        for (off, id) in page.item_ids() {
            if id.lp_flags() != LP_NORMAL {
                continue;
            }
            let Some(h) = page.item_bytes(id).and_then(HeapTupleHeaderData::parse) else { continue };
            let mask = h.t_infomask;
            if mask & HEAP_XMAX_IS_MULTI == 0 || !(self.lo..=self.hi).contains(&h.t_xmax) {
                continue;
            }
            // HEAP_XMAX_IS_LOCKED_ONLY (htup_details.h)
            if mask & HEAP_XMAX_LOCK_ONLY != 0
                || mask & (HEAP_XMAX_IS_MULTI | HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK) == HEAP_XMAX_EXCL_LOCK
            {
                self.entry(h.t_xmax).locked += 1;
                continue;
            }
            let (tblock, toff) = (h.t_ctid.block, h.t_ctid.offset);
            let row = rel.row_at(block, off, "deleted");
            if (tblock, toff) == (block, off) {
                self.unknown(h.t_xmax, row);
                continue;
            }
            if h.t_infomask2 & HEAP_KEYS_UPDATED != 0 {
                self.entry(h.t_xmax).key_update = true;
            }
            self.pending.push(Pending { block: tblock, offset: toff, multi: h.t_xmax });
            self.pending_rows.push(row);
        }
    }

    /// The newer versions of this relation's updated tuples, read block by block.
    fn relation_done(&mut self, rel: &HeapRel<'_>) {
        let pending = std::mem::take(&mut self.pending);
        let rows = std::mem::take(&mut self.pending_rows);
        let mut by_block: HashMap<u32, Vec<(usize, &Pending)>> = HashMap::new();
        for (i, p) in pending.iter().enumerate() {
            by_block.entry(p.block).or_default().push((i, p));
        }
        let mut found: Vec<Option<u32>> = vec![None; pending.len()];
        for (block, items) in by_block {
            let Some(bytes) = rel.block(block) else { continue };
            let Some(page) = Page::new(&bytes) else { continue };
            for (i, p) in items {
                found[i] = newer_xmin(&page, p.offset);
            }
        }
        for ((p, row), xmin) in pending.iter().zip(rows).zip(found) {
            match xmin {
                Some(x) => {
                    let e = self.entry(p.multi);
                    e.updated += 1;
                    match e.updater {
                        Some(u) if u != x => e.conflicting = true,
                        _ => e.updater = Some(x),
                    }
                }
                None => self.unknown(p.multi, row),
            }
        }
    }
}

/// The xmin of the tuple at `offset` (through one redirect, as a pruned HOT chain leaves it).
fn newer_xmin(page: &Page<'_>, offset: u16) -> Option<u32> {
    let mut id = page.item_id(offset)?;
    if id.lp_flags() == LP_REDIRECT {
        id = page.item_id(id.lp_off())?;
    }
    if id.lp_flags() != LP_NORMAL {
        return None;
    }
    HeapTupleHeaderData::parse(page.item_bytes(id)?).map(|h| h.t_xmin)
}

/// The evidence for every MultiXact in `lo..=hi` that some heap tuple names, in MultiXact order; with the number
/// of heap pages read.
pub fn multi_evidence(
    pgdata: &Path,
    blcksz: u32,
    relseg_size: u32,
    lo: u32,
    hi: u32,
) -> Result<(Vec<MultiEvidence>, u64)> {
    let mut walk = MultiWalk { lo, hi, acc: BTreeMap::new(), pending: Vec::new(), pending_rows: Vec::new() };
    let pages = walk_heap_pages(pgdata, blcksz, relseg_size, &mut walk)?;
    Ok((walk.acc.into_values().collect(), pages))
}
