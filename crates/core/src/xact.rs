//! Transaction status from `pg_xact` (`access/transam/clog.c`, `access/clog.h`) and the
//! visibility of a heap tuple to a new snapshot, decided without a snapshot: the latest committed
//! version of a row is visible, as `HeapTupleSatisfiesMVCC` decides for a snapshot taken when no
//! transaction is running (`access/heap/heapam_visibility.c`).
//!
//! pg_xact keeps 2 bits per XID, 4 XIDs a byte, BLCKSZ bytes a page and 32 pages a segment file
//! named by its number in hex (`%04X`). Status 1 committed, 2 aborted, 3 sub-committed, 0 in
//! progress (or never finished: a crashed transaction stays 0).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::checks::{xid_precedes, Horizons, FIRST_NORMAL_TRANSACTION_ID};
use crate::heap::{
    HeapTupleHeaderData, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK, HEAP_XMIN_COMMITTED, HEAP_XMIN_FROZEN, HEAP_XMIN_INVALID,
};

/// `SLRU_PAGES_PER_SEGMENT` (access/slru.h).
pub const SLRU_PAGES_PER_SEGMENT: u32 = 32;

/// A transaction's fate as pg_xact records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum XidStatus {
    InProgress,
    Committed,
    Aborted,
    SubCommitted,
}

impl XidStatus {
    pub fn from_bits(b: u8) -> XidStatus {
        match b & 3 {
            1 => XidStatus::Committed,
            2 => XidStatus::Aborted,
            3 => XidStatus::SubCommitted,
            _ => XidStatus::InProgress,
        }
    }

    /// The words `pg_xact_status()` answers with.
    pub fn parse(s: &str) -> Option<XidStatus> {
        match s {
            "committed" => Some(XidStatus::Committed),
            "aborted" => Some(XidStatus::Aborted),
            "in progress" | "in_progress" => Some(XidStatus::InProgress),
            "subcommitted" | "sub_committed" => Some(XidStatus::SubCommitted),
            _ => None,
        }
    }
}

/// pg_xact of one cluster, read segment by segment on first use.
#[derive(Debug)]
pub struct Clog {
    dir: Option<PathBuf>,
    blcksz: u32,
    segments: Mutex<HashMap<u32, Option<std::sync::Arc<Vec<u8>>>>>,
}

impl Clog {
    /// `dir` is `<pgdata>/pg_xact`; `None` for no on-disk status at all.
    pub fn new(dir: Option<&Path>, blcksz: u32) -> Clog {
        Clog { dir: dir.map(Path::to_path_buf), blcksz: blcksz.max(1024), segments: Mutex::new(HashMap::new()) }
    }

    fn xids_per_page(&self) -> u32 {
        self.blcksz * 4
    }

    /// The status bits on disk; `None` when the segment file or the page is not there.
    pub fn status(&self, xid: u32) -> Option<XidStatus> {
        let dir = self.dir.as_ref()?;
        let per_page = self.xids_per_page();
        let per_seg = per_page * SLRU_PAGES_PER_SEGMENT;
        let segno = xid / per_seg;
        let seg = {
            let mut map = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(segno)
                .or_insert_with(|| std::fs::read(dir.join(format!("{segno:04X}"))).ok().map(std::sync::Arc::new))
                .clone()
        }?;
        let in_seg = xid % per_seg;
        let byte = (in_seg / 4) as usize;
        let shift = (in_seg % 4) * 2;
        let b = *seg.get(byte)?;
        Some(XidStatus::from_bits(b >> shift))
    }
}

/// What a carved tuple is to a new snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The latest committed version of its row: a new snapshot sees it.
    Live,
    /// Deleted or updated by a committed transaction, inserted by an aborted one, or not yet
    /// committed: a new snapshot does not see it.
    Invisible,
    /// The header does not let us decide (damaged, contradictory, or its XIDs' status is lost).
    Uncertain,
}

/// Where the status of an XID came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusSource {
    Hint,
    Frozen,
    Clog,
    Server,
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
    /// XIDs whose status could not be read (pg_xact page missing, or only "in progress" on disk
    /// while the server may know better): ask the server and judge again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub need_xids: Vec<u32>,
    /// MultiXactIds whose updating member is needed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub need_multis: Vec<u32>,
}

/// What the judge may consult besides the tuple header.
pub struct StatusSources<'a> {
    pub clog: &'a Clog,
    /// Answers from the server (`pg_xact_status`), preferred over the disk.
    pub server: &'a HashMap<u32, XidStatus>,
    /// Whether the server can still be asked (then unknown XIDs are requested, not judged).
    pub can_ask: bool,
    /// MultiXactId -> its updating XID (None: lockers only), from `pg_get_multixact_members`.
    pub multis: &'a HashMap<u32, Option<u32>>,
    pub horizons: Option<&'a Horizons>,
}

enum Status {
    Known(XidStatus),
    /// Not known yet: ask for it.
    Ask,
    /// Cannot be known.
    Lost(String),
}

impl StatusSources<'_> {
    fn lookup(&self, xid: u32) -> Status {
        if xid == 1 || xid == 2 {
            return Status::Known(XidStatus::Committed); // Bootstrap / Frozen
        }
        if xid == 0 {
            return Status::Lost("transaction id 0 (invalid)".into());
        }
        if let Some(h) = self.horizons {
            if !xid_precedes(xid, h.next_xid) && xid >= FIRST_NORMAL_TRANSACTION_ID {
                return Status::Lost(format!("transaction {xid} is in the future (next is {})", h.next_xid));
            }
        }
        if let Some(s) = self.server.get(&xid) {
            return Status::Known(*s);
        }
        match self.clog.status(xid) {
            // Committed and aborted are final on disk; "in progress" may be stale (the clog page
            // is in shared memory until a checkpoint), so ask the server when we can.
            Some(s @ (XidStatus::Committed | XidStatus::Aborted)) => Status::Known(s),
            Some(s) if !self.can_ask => Status::Known(s),
            None if !self.can_ask => Status::Lost(format!("the status of transaction {xid} is not in pg_xact")),
            _ => Status::Ask,
        }
    }
}

/// `HEAP_XMAX_IS_LOCKED_ONLY` (htup_details.h).
pub fn xmax_locked_only(infomask: u16) -> bool {
    infomask & HEAP_XMAX_LOCK_ONLY != 0 || infomask & (HEAP_XMAX_IS_MULTI | HEAP_XMAX_SHR_LOCK) == HEAP_XMAX_EXCL_LOCK
}

/// Is this tuple the latest committed version of its row?
pub fn judge(h: &HeapTupleHeaderData, src: &StatusSources<'_>) -> Judgement {
    let m = h.t_infomask;
    let mut j =
        Judgement { verdict: Verdict::Uncertain, reason: String::new(), need_xids: vec![], need_multis: vec![] };
    let done = |mut j: Judgement, v: Verdict, r: String| {
        j.verdict = v;
        j.reason = r;
        j
    };
    // --- xmin ---
    if m & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN {
        // frozen: committed, visible to all
    } else if m & HEAP_XMIN_INVALID != 0 {
        // The hint says aborted; believe pg_xact if it disagrees loudly.
        if let Status::Known(XidStatus::Committed) = src.lookup(h.t_xmin) {
            return done(
                j,
                Verdict::Uncertain,
                format!("xmin {} is hinted aborted but committed in pg_xact", h.t_xmin),
            );
        }
        return done(j, Verdict::Invisible, "inserted by an aborted transaction (hint)".into());
    } else {
        let hinted = m & HEAP_XMIN_COMMITTED != 0;
        match src.lookup(h.t_xmin) {
            Status::Known(XidStatus::Committed) => {}
            Status::Known(XidStatus::Aborted) if hinted => {
                return done(j, Verdict::Uncertain, format!("xmin {} is hinted committed but aborted", h.t_xmin));
            }
            Status::Known(XidStatus::Aborted) => {
                return done(j, Verdict::Invisible, format!("inserted by aborted transaction {}", h.t_xmin));
            }
            _ if hinted && h.t_xmin != 0 => {} // the hint is enough when pg_xact cannot confirm
            Status::Known(XidStatus::InProgress) => {
                return done(j, Verdict::Invisible, format!("inserting transaction {} has not committed", h.t_xmin));
            }
            Status::Known(XidStatus::SubCommitted) => {
                return done(j, Verdict::Uncertain, format!("inserting transaction {} is sub-committed", h.t_xmin));
            }
            Status::Ask => {
                j.need_xids.push(h.t_xmin);
                return done(j, Verdict::Uncertain, format!("status of inserting transaction {} unknown", h.t_xmin));
            }
            Status::Lost(why) => return done(j, Verdict::Uncertain, format!("xmin: {why}")),
        }
    }
    // --- xmax ---
    if m & HEAP_XMAX_INVALID != 0 || h.t_xmax == 0 {
        return done(j, Verdict::Live, "inserted by a committed transaction, not deleted".into());
    }
    if xmax_locked_only(m) {
        return done(j, Verdict::Live, "committed; xmax only locks the row".into());
    }
    let updater = if m & HEAP_XMAX_IS_MULTI != 0 {
        if m & HEAP_XMAX_COMMITTED != 0 {
            return done(j, Verdict::Uncertain, "a MultiXactId xmax marked committed".into());
        }
        match src.multis.get(&h.t_xmax) {
            Some(None) => return done(j, Verdict::Live, "committed; its MultiXact only locks the row".into()),
            Some(Some(x)) => *x,
            None => {
                j.need_multis.push(h.t_xmax);
                return done(j, Verdict::Uncertain, format!("updater in MultiXact {} unknown", h.t_xmax));
            }
        }
    } else {
        h.t_xmax
    };
    let hinted = m & HEAP_XMAX_COMMITTED != 0;
    match src.lookup(updater) {
        Status::Known(XidStatus::Committed) => {
            done(j, Verdict::Invisible, format!("deleted or updated by committed transaction {updater}"))
        }
        Status::Known(XidStatus::Aborted) if hinted => {
            done(j, Verdict::Uncertain, format!("xmax {updater} is hinted committed but aborted in pg_xact"))
        }
        Status::Known(XidStatus::Aborted) => {
            done(j, Verdict::Live, format!("committed; deleting transaction {updater} aborted"))
        }
        _ if hinted => done(j, Verdict::Invisible, format!("deleted or updated by transaction {updater} (hint)")),
        Status::Known(XidStatus::InProgress) => {
            done(j, Verdict::Live, format!("committed; deleting transaction {updater} still in progress"))
        }
        Status::Known(XidStatus::SubCommitted) => {
            done(j, Verdict::Uncertain, format!("deleting transaction {updater} is sub-committed"))
        }
        Status::Ask => {
            j.need_xids.push(updater);
            done(j, Verdict::Uncertain, format!("status of deleting transaction {updater} unknown"))
        }
        Status::Lost(why) => done(j, Verdict::Uncertain, format!("xmax: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(xmin: u32, xmax: u32, infomask: u16) -> HeapTupleHeaderData {
        let mut h = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
        h.t_xmin = xmin;
        h.t_xmax = xmax;
        h.t_infomask = infomask;
        h
    }

    #[test]
    fn clog_bits() {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-clog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut seg = vec![0u8; 8192 * 32];
        // xid 5: byte 1, shift 2 -> committed; xid 6: shift 4 -> aborted
        seg[1] = (1 << 2) | (2 << 4);
        std::fs::write(dir.join("0000"), &seg).unwrap();
        let clog = Clog::new(Some(&dir), 8192);
        assert_eq!(clog.status(5), Some(XidStatus::Committed));
        assert_eq!(clog.status(6), Some(XidStatus::Aborted));
        assert_eq!(clog.status(7), Some(XidStatus::InProgress));
        assert_eq!(clog.status(2_000_000), None);
        let server = HashMap::new();
        let multis = HashMap::new();
        let src = StatusSources { clog: &clog, server: &server, can_ask: false, multis: &multis, horizons: None };
        assert_eq!(judge(&header(5, 0, HEAP_XMAX_INVALID), &src).verdict, Verdict::Live);
        assert_eq!(judge(&header(6, 0, HEAP_XMAX_INVALID), &src).verdict, Verdict::Invisible);
        assert_eq!(judge(&header(5, 5, 0), &src).verdict, Verdict::Invisible);
        assert_eq!(judge(&header(5, 6, 0), &src).verdict, Verdict::Live);
        assert_eq!(judge(&header(5, 7, 0), &src).verdict, Verdict::Live);
        assert_eq!(judge(&header(5, 7, HEAP_XMAX_LOCK_ONLY), &src).verdict, Verdict::Live);
        assert_eq!(judge(&header(6, 0, HEAP_XMIN_COMMITTED), &src).verdict, Verdict::Uncertain);
        let src = StatusSources { clog: &clog, server: &server, can_ask: true, multis: &multis, horizons: None };
        let j = judge(&header(7, 0, 0), &src);
        assert_eq!((j.verdict, j.need_xids.clone()), (Verdict::Uncertain, vec![7]));
        std::fs::remove_dir_all(&dir).ok();
    }
}
