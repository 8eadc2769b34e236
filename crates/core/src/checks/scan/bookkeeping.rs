//! Heap tuples against the cluster's bookkeeping (a whole data directory scanned): the rows whose fate hangs on a
//! commit status or a MultiXact that is not on disk, and hint bits that contradict pg_xact. Counted per lost run of
//! XIDs or MultiXacts and per pg_xact page, never per tuple, so memory stays bounded however large the table.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;

use crate::checks::cluster::{multixact::multixact_checks, xact_gaps};
use crate::finding::{Code, Finding};
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI, HEAP_XMAX_LOCK_ONLY,
    HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID,
};
use crate::format::heap::{HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_KEYSHR_LOCK};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;
use crate::visibility::multixact::MultiXactFiles;
use crate::visibility::transam::{multi_precedes, xid_precedes, FIRST_NORMAL_TRANSACTION_ID};
use crate::visibility::xact::{Clog, XidStatus};

/// A run of XIDs or MultiXacts whose status is not on disk, and why (the file).
#[derive(Debug)]
struct Lost {
    lo: u32,
    hi: u32,
    what: String,
}

/// What the tuples are judged against, read once per scan.
#[derive(Debug)]
pub(crate) struct Bookkeeping {
    xids: Vec<Lost>,
    multis: Vec<Lost>,
    clog: Clog,
    oldest_xid: u32,
    next_xid: u32,
    /// Shut down cleanly: an "in progress" status is final, so a committed hint on it contradicts pg_xact.
    clean: bool,
    per_page: u32,
    members: MultiXactFiles,
    oldest_multi: u32,
    next_multi: u32,
    /// Whether each MultiXact read so far names a plausible updater (read once per MultiXact, not per tuple).
    updaters: Mutex<HashMap<u32, bool>>,
}

/// One chunk's (then one table's) counts.
#[derive(Debug, Default)]
pub(crate) struct BookAcc {
    /// Rows depending on any lost status.
    rows: u64,
    /// Rows per lost run: XID runs first, then MultiXact runs.
    per_lost: Vec<u64>,
    /// Tuples whose xmin hint contradicts pg_xact, per pg_xact page.
    contradictions: BTreeMap<u32, u64>,
    /// Updated tuples whose xmax MultiXact names no plausible updater, and the MultiXacts' range.
    no_updater: u64,
    no_updater_range: Option<(u32, u32)>,
}

impl BookAcc {
    pub(crate) fn absorb(&mut self, other: &mut BookAcc) {
        self.rows += other.rows;
        if self.per_lost.len() < other.per_lost.len() {
            self.per_lost.resize(other.per_lost.len(), 0);
        }
        for (a, b) in self.per_lost.iter_mut().zip(other.per_lost.drain(..)) {
            *a += b;
        }
        for (p, n) in std::mem::take(&mut other.contradictions) {
            *self.contradictions.entry(p).or_default() += n;
        }
        self.no_updater += std::mem::take(&mut other.no_updater);
        if let Some((lo, hi)) = other.no_updater_range.take() {
            self.note_multi(lo);
            self.note_multi(hi);
        }
    }

    fn note_multi(&mut self, m: u32) {
        let (lo, hi) = self.no_updater_range.unwrap_or((m, m));
        self.no_updater_range = Some((lo.min(m), hi.max(m)));
    }
}

/// HEAP_XMAX_IS_LOCKED_ONLY (htup_details.h): the xmax only locks the row.
fn xmax_lock_only(m: u16) -> bool {
    m & HEAP_XMAX_LOCK_ONLY != 0
        || m & (HEAP_XMAX_IS_MULTI | HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK) == HEAP_XMAX_EXCL_LOCK
}

fn find(runs: &[Lost], x: u32) -> Option<usize> {
    let i = runs.partition_point(|r| r.hi < x);
    runs.get(i).filter(|r| r.lo <= x).map(|_| i)
}

impl Bookkeeping {
    /// From the data directory's pg_control (nothing when it cannot be read or its CRC fails: then the scan's
    /// cluster findings say so, and no horizon can be trusted).
    pub(crate) fn open(root: &Path, blcksz: u32) -> Option<Bookkeeping> {
        let c = crate::sources::pgdata::read_control_file(root).ok().filter(|c| c.crc_ok)?;
        if c.blcksz != blcksz {
            return None;
        }
        let mut xids: Vec<Lost> = xact_gaps(root, &c)
            .into_iter()
            .map(|g| Lost {
                lo: g.lo,
                hi: g.hi,
                what: format!("{} {}", g.path, if g.missing { "missing" } else { "short" }),
            })
            .collect();
        xids.sort_by_key(|l| l.lo);
        let (_, mut lost_multis) = multixact_checks(root, &c);
        lost_multis.sort_unstable();
        let multis = lost_multis
            .into_iter()
            .map(|(lo, hi)| Lost { lo, hi, what: "pg_multixact offsets or members lost".to_string() })
            .collect();
        Some(Bookkeeping {
            xids,
            multis,
            clog: Clog::bare(Some(&root.join("pg_xact")), blcksz, c.state.is_clean_shutdown()),
            oldest_xid: c.oldest_xid,
            next_xid: (c.next_xid.0 & 0xFFFF_FFFF) as u32,
            clean: c.state.is_clean_shutdown(),
            per_page: blcksz * 4,
            members: MultiXactFiles::new(&root.join("pg_multixact"), blcksz, Some((c.next_multi, c.next_multi_offset))),
            oldest_multi: c.oldest_multi,
            next_multi: c.next_multi,
            updaters: Mutex::new(HashMap::new()),
        })
    }

    /// The heap page's tuples: which lost run each one's xmin or xmax falls in, and hint bits against pg_xact.
    pub(crate) fn tally(&self, page: &Page<'_>, acc: &mut BookAcc) {
        let runs = self.xids.len() + self.multis.len();
        if acc.per_lost.len() < runs {
            acc.per_lost.resize(runs, 0);
        }
        for (_, id) in page.item_ids() {
            if id.lp_flags() != LP_NORMAL {
                continue;
            }
            let Some(h) = page.item_bytes(id).and_then(HeapTupleHeaderData::parse) else { continue };
            let m = h.t_infomask;
            let normal = |x: u32| x >= FIRST_NORMAL_TRANSACTION_ID;
            // the xmin's fate is read from pg_xact unless a hint (or freezing: both bits) settles it
            let xmin_hinted = m & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID) != 0;
            let mut hit = None;
            if !xmin_hinted && normal(h.t_xmin) {
                hit = find(&self.xids, h.t_xmin);
            }
            // an xmax that is no lock alone and not hinted. A lock-only MultiXact is never read once the server has
            // restarted: every one is then older than any backend's oldest visible MultiXact, which lockers and
            // VACUUM check before reading members (GetMultiXactIdMembers, FreezeMultiXactId in multixact.c, heapam.c)
            if hit.is_none() && m & (HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED) == 0 && h.t_xmax != 0 {
                if m & HEAP_XMAX_IS_MULTI != 0 && !xmax_lock_only(m) {
                    hit = find(&self.multis, h.t_xmax).map(|i| self.xids.len() + i);
                } else if m & HEAP_XMAX_LOCK_ONLY == 0 && normal(h.t_xmax) {
                    hit = find(&self.xids, h.t_xmax);
                }
            }
            if let Some(i) = hit {
                acc.rows += 1;
                acc.per_lost[i] += 1;
            } else if self.updater_lost(&h) {
                acc.no_updater += 1;
                acc.note_multi(h.t_xmax);
            }
            self.contradiction(&h, acc);
        }
    }

    /// An updated tuple (xmax a MultiXact that is not only a lock, not hinted invalid) whose MultiXact's members name
    /// no updater, or one that is no transaction of this cluster: the members were zeroed or garbled, and the server
    /// shows the old version again or fails on the garbage (`MultiXactIdGetUpdateXid`, multixact.c).
    fn updater_lost(&self, h: &HeapTupleHeaderData) -> bool {
        let m = h.t_infomask;
        let multi = h.t_xmax;
        if m & HEAP_XMAX_IS_MULTI == 0
            || m & HEAP_XMAX_INVALID != 0
            || xmax_lock_only(m)
            || multi_precedes(multi, self.oldest_multi)
            || !multi_precedes(multi, self.next_multi)
            || find(&self.multis, multi).is_some()
        {
            return false;
        }
        let mut seen = self.updaters.lock().unwrap_or_else(|e| e.into_inner());
        let ok = *seen.entry(multi).or_insert_with(|| match self.members.updater(multi) {
            Ok(Some(x)) => {
                x >= FIRST_NORMAL_TRANSACTION_ID && !xid_precedes(x, self.oldest_xid) && xid_precedes(x, self.next_xid)
            }
            _ => false,
        });
        !ok
    }

    /// HEAP_XMIN_COMMITTED with pg_xact saying aborted (or, after a clean shutdown, never ended), or HEAP_XMIN_INVALID
    /// with pg_xact saying committed: the status page was garbled (the hint was set from what it said then).
    fn contradiction(&self, h: &HeapTupleHeaderData, acc: &mut BookAcc) {
        let hints = h.t_infomask & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID);
        let x = h.t_xmin;
        if hints == 0
            || hints == HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID
            || x < FIRST_NORMAL_TRANSACTION_ID
            || xid_precedes(x, self.oldest_xid)
            || !xid_precedes(x, self.next_xid)
        {
            return;
        }
        let Some(status) = self.clog.status(x) else { return };
        let wrong = match status {
            XidStatus::Aborted => hints == HEAP_XMIN_COMMITTED,
            XidStatus::InProgress => hints == HEAP_XMIN_COMMITTED && self.clean,
            XidStatus::Committed => hints == HEAP_XMIN_INVALID,
            XidStatus::SubCommitted => false,
        };
        if wrong {
            *acc.contradictions.entry(x / self.per_page).or_default() += 1;
        }
    }

    /// The table's findings from its counts.
    pub(crate) fn findings(&self, acc: &BookAcc) -> Vec<Finding> {
        let mut out = Vec::new();
        if acc.rows > 0 {
            let runs: Vec<String> = acc
                .per_lost
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| {
                    let (kind, l) = match i.checked_sub(self.xids.len()) {
                        None => ("XIDs", &self.xids[i]),
                        Some(j) => ("MultiXacts", &self.multis[j]),
                    };
                    format!("{kind} {}..{} ({}): {n} rows", l.lo, l.hi, l.what)
                })
                .collect();
            out.push(Finding::new(
                Code::TupleHeaderStatusLost,
                None,
                None,
                format!(
                    "{} rows' fate depends on a transaction status that is not on disk: {}",
                    acc.rows,
                    runs.join("; ")
                ),
            ));
        }
        if let (n @ 1.., Some((lo, hi))) = (acc.no_updater, acc.no_updater_range) {
            out.push(Finding::new(
                Code::TupleHeaderMultiUpdater,
                None,
                None,
                format!(
                    "{n} updated rows' xmax MultiXact (MultiXacts {lo}..{hi}) names no updater in pg_multixact/members, \
                     or one that is no transaction of this cluster: the members were zeroed or garbled, and the old \
                     versions show again"
                ),
            ));
        }
        if !acc.contradictions.is_empty() {
            let total: u64 = acc.contradictions.values().sum();
            let pages: Vec<String> = acc
                .contradictions
                .iter()
                .take(8)
                .map(|(p, n)| {
                    let lo = p * self.per_page;
                    format!("pg_xact page {p} (XIDs {lo}..{}): {n}", lo + (self.per_page - 1))
                })
                .collect();
            out.push(Finding::new(
                Code::TupleHeaderHintContradiction,
                None,
                None,
                format!(
                    "{total} tuples' xmin hint bits contradict pg_xact, a sign of a garbled status page: {}{}",
                    pages.join("; "),
                    if acc.contradictions.len() > 8 { "; …" } else { "" }
                ),
            ));
        }
        out
    }
}
