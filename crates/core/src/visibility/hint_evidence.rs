//! What the heap pages say about transactions' fates when pg_xact cannot: the hint bits the server left on tuple
//! headers after looking a transaction up (`SetHintBits` in `access/heap/heapam_visibility.c`), and the rows whose
//! visibility still depends on a status nobody recorded. Read for one range of XIDs (a lost pg_xact segment), over
//! every heap page of every database, to rebuild that segment from evidence.
//!
//! What each hint proves, for a plain (non-multi) XID:
//! - `HEAP_XMIN_COMMITTED` (or frozen: both xmin bits): the inserting transaction committed;
//! - `HEAP_XMIN_INVALID` alone: it did not commit (aborted, or never finished before a crash);
//! - `HEAP_XMAX_COMMITTED`: the deleting or updating transaction committed;
//! - `HEAP_XMAX_INVALID` on an xmax that is not only a lock: the deleter did not commit. On a lock-only xmax it is
//!   set whenever the locker is gone, committed or not, so it proves nothing there.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_LOCK_ONLY, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID,
};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;
use crate::sources::blocks::{BlockReader, SegFile};
use crate::sources::relfile::{discover, Relation};
use crate::sources::relpath::Fork;

/// Rows kept per XID to show the DBA (the counts stay exact).
const ROWS_PER_XID: usize = 3;
/// Blocks read at once.
const CHUNK_BLOCKS: u64 = 64;

/// One row whose visibility depends on an XID's status, as the DBA finds it: the file and the TID.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RowRef {
    pub path: String,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub block: u32,
    pub offset: u16,
    /// `inserted` (the XID is the row's xmin) or `deleted` (its xmax).
    pub role: &'static str,
}

/// What the heap says about one XID.
#[derive(Debug, Clone, Default, Serialize)]
pub struct XidEvidence {
    pub xid: u32,
    /// Tuples whose hint bits say it committed.
    pub committed_hints: u64,
    /// Tuples whose hint bits say it did not.
    pub aborted_hints: u64,
    /// Rows it inserted with no hint: visible only if it committed.
    pub inserted_unhinted: u64,
    /// Rows it deleted or updated with no hint: gone only if it committed.
    pub deleted_unhinted: u64,
    /// A few of those rows.
    pub rows: Vec<RowRef>,
}

/// One relation's main fork being walked: its file and a reader for blocks the visitor wants to look at again.
pub struct HeapRel<'a> {
    pub rel: &'a Relation,
    pub reader: BlockReader,
    pub blcksz: u32,
}

impl HeapRel<'_> {
    /// Block `block` of the relation, when it can be read whole.
    pub fn block(&self, block: u32) -> Option<Vec<u8>> {
        let data = self.reader.read(u64::from(block), 1).ok()?;
        (data.len() == self.blcksz as usize).then_some(data)
    }

    /// The row at `offset` of `block`, named for the DBA.
    pub fn row_at(&self, block: u32, offset: u16, role: &'static str) -> RowRef {
        self.at(block).row(offset, role)
    }

    fn at(&self, block: u32) -> Where<'_> {
        Where { path: &self.rel.path, db: self.rel.database_oid, node: self.rel.relfilenode, block }
    }
}

/// What a walk over every heap page does with each page, and with each relation once its pages are done.
pub trait HeapVisitor {
    fn page(&mut self, rel: &HeapRel<'_>, block: u32, page: &Page<'_>);
    fn relation_done(&mut self, _rel: &HeapRel<'_>) {}
}

/// Every heap page of every database's relation main forks (pages with a special space, or whose header is not
/// sane, are no heap pages to read tuples from); returns the number of heap pages visited.
pub fn walk_heap_pages(pgdata: &Path, blcksz: u32, relseg_size: u32, visitor: &mut impl HeapVisitor) -> Result<u64> {
    let mut pages = 0u64;
    for rel in discover(pgdata)?.iter().filter(|r| r.fork == Fork::Main && !r.temp) {
        let segs: Vec<SegFile> =
            rel.segments.iter().map(|s| SegFile { segno: s.segno, path: pgdata.join(&s.path) }).collect();
        let heap = HeapRel { rel, reader: BlockReader::new(&segs, blcksz, relseg_size), blcksz };
        let n = heap.reader.nblocks_now();
        let mut buf = Vec::new();
        let mut first = 0u64;
        while first < n {
            let count = CHUNK_BLOCKS.min(n - first);
            if heap.reader.read_into(first, count, &mut buf).is_err() {
                first += count; // an unreadable stretch: scan reports it; the rest still counts
                continue;
            }
            for (i, bytes) in buf.chunks(blcksz as usize).enumerate() {
                let Some(page) = Page::new(bytes) else { continue };
                if page.special_size() != 0 || !page.header_is_sane(blcksz as usize) {
                    continue;
                }
                pages += 1;
                visitor.page(&heap, (first + i as u64) as u32, &page);
            }
            first += count;
        }
        visitor.relation_done(&heap);
    }
    Ok(pages)
}

struct XidWalk {
    lo: u32,
    hi: u32,
    acc: BTreeMap<u32, XidEvidence>,
}

impl HeapVisitor for XidWalk {
    fn page(&mut self, rel: &HeapRel<'_>, block: u32, page: &Page<'_>) {
        page_evidence(page, self.lo, self.hi, &rel.at(block), &mut self.acc);
    }
}

/// The evidence for every XID in `lo..=hi` that some heap tuple names, in XID order; with the number of heap pages
/// read.
pub fn hint_evidence(
    pgdata: &Path,
    blcksz: u32,
    relseg_size: u32,
    lo: u32,
    hi: u32,
) -> Result<(Vec<XidEvidence>, u64)> {
    let mut walk = XidWalk { lo, hi, acc: BTreeMap::new() };
    let pages = walk_heap_pages(pgdata, blcksz, relseg_size, &mut walk)?;
    Ok((walk.acc.into_values().collect(), pages))
}

/// Where a tuple lies, to name its row.
pub(crate) struct Where<'a> {
    path: &'a str,
    db: u32,
    node: u32,
    block: u32,
}

pub(crate) fn page_evidence(page: &Page<'_>, lo: u32, hi: u32, at: &Where<'_>, acc: &mut BTreeMap<u32, XidEvidence>) {
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(h) = page.item_bytes(id).and_then(HeapTupleHeaderData::parse) else { continue };
        let mask = h.t_infomask;
        if (lo..=hi).contains(&h.t_xmin) {
            let e = entry(acc, h.t_xmin);
            if mask & HEAP_XMIN_COMMITTED != 0 {
                e.committed_hints += 1; // committed, or frozen (both bits): only committed rows are frozen
            } else if mask & HEAP_XMIN_INVALID != 0 {
                e.aborted_hints += 1;
            } else {
                e.inserted_unhinted += 1;
                note_row(e, at, off, "inserted");
            }
        }
        if mask & HEAP_XMAX_IS_MULTI != 0 || !(lo..=hi).contains(&h.t_xmax) {
            continue;
        }
        let lock_only = mask & HEAP_XMAX_LOCK_ONLY != 0
            || mask & (HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK) == HEAP_XMAX_EXCL_LOCK;
        let e = entry(acc, h.t_xmax);
        if mask & HEAP_XMAX_COMMITTED != 0 {
            e.committed_hints += 1;
        } else if mask & HEAP_XMAX_INVALID != 0 {
            e.aborted_hints += u64::from(!lock_only);
        } else if !lock_only {
            e.deleted_unhinted += 1;
            note_row(e, at, off, "deleted");
        }
    }
}

fn entry(acc: &mut BTreeMap<u32, XidEvidence>, xid: u32) -> &mut XidEvidence {
    acc.entry(xid).or_insert_with(|| XidEvidence { xid, ..XidEvidence::default() })
}

fn note_row(e: &mut XidEvidence, at: &Where<'_>, offset: u16, role: &'static str) {
    if e.rows.len() < ROWS_PER_XID {
        e.rows.push(at.row(offset, role));
    }
}

impl Where<'_> {
    pub(crate) fn row(&self, offset: u16, role: &'static str) -> RowRef {
        RowRef {
            path: self.path.to_string(),
            database_oid: self.db,
            relfilenode: self.node,
            block: self.block,
            offset,
            role,
        }
    }
}
