//! Transaction status from the data directory (`pg_xact` per `access/transam/clog.c` and
//! `access/clog.h`, `pg_subtrans` per `subtrans.c`, `pg_multixact` per `multixact.c`) and the
//! visibility of a heap tuple to a new MVCC snapshot taken after the damage, decided without a
//! snapshot of our own, as `HeapTupleSatisfiesMVCC` (`access/heap/heapam_visibility.c`) decides
//! it for a snapshot in which the transactions still running (prepared ones included) are in
//! progress: the latest committed version of a row is visible.
//!
//! pg_xact keeps 2 bits per XID, 4 XIDs a byte, BLCKSZ bytes a page and 32 pages a segment file
//! named by its number in hex (`%04X`). Status 1 committed, 2 aborted, 3 sub-committed, 0 in
//! progress (or never finished: a crashed transaction stays 0).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::format::heap::{
    HeapTupleHeaderData, HEAP_MOVED, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK, HEAP_XMIN_COMMITTED, HEAP_XMIN_FROZEN,
    HEAP_XMIN_INVALID,
};
use crate::visibility::multixact::MultiXactFiles;
use crate::visibility::slru::{SlruDir, SubTrans};
use crate::visibility::transam::{multi_precedes, xid_precedes, Horizons, FIRST_NORMAL_TRANSACTION_ID};

pub use crate::visibility::slru::SLRU_PAGES_PER_SEGMENT;

/// How deep a chain of sub-committed parents is followed in pg_subtrans.
const MAX_SUBXACT_DEPTH: u32 = 64;

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

/// The transaction status files of one cluster: pg_xact, and when the data directory is at hand
/// also pg_subtrans (parents of sub-committed XIDs) and pg_multixact (members of MultiXacts).
/// Read lazily, segment by segment; `Sync`, cheap to build once per relation.
#[derive(Debug)]
pub struct Clog {
    xact: Option<SlruDir>,
    blcksz: u32,
    subtrans: Option<SubTrans>,
    multixact: Option<MultiXactFiles>,
    in_progress_final: bool,
    snapshot: Option<Snapshot>,
}

/// An MVCC snapshot (`pg_current_snapshot()`, the one the SQL connections of a salvage share): transactions it
/// sees as running count as in progress, whatever pg_xact says by now, so carved rows and rows read through SQL
/// show the table at the same moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    xmax: u32,
    xip: std::collections::HashSet<u32>,
}

impl Snapshot {
    /// `xmin:xmax:xip,...` as `pg_snapshot` prints it (64-bit IDs: the low 32 bits are what tuple headers hold).
    pub fn parse(text: &str) -> Option<Snapshot> {
        let mut parts = text.trim().splitn(3, ':');
        let _xmin: u64 = parts.next()?.parse().ok()?;
        let xmax: u64 = parts.next()?.parse().ok()?;
        let xip = parts
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|x| !x.is_empty())
            .map(|x| x.parse::<u64>().ok().map(|v| v as u32))
            .collect::<Option<_>>()?;
        Some(Snapshot { xmax: xmax as u32, xip })
    }

    /// Whether the snapshot sees `xid` (a normal XID) as still running.
    pub fn running(&self, xid: u32) -> bool {
        !xid_precedes(xid, self.xmax) || self.xip.contains(&xid)
    }
}

impl Clog {
    /// `dir` is `<pgdata>/pg_xact`; `None` for no on-disk status at all. When `dir` is a
    /// directory named `pg_xact`, its data directory is opened as by [`Clog::open`] (pg_subtrans,
    /// pg_multixact and pg_control beside it); any other directory is taken as a bare pg_xact
    /// whose "in progress" entries the caller vouches for (see [`Clog::bare`]).
    pub fn new(dir: Option<&Path>, blcksz: u32) -> Clog {
        if let Some(d) = dir {
            if d.file_name().is_some_and(|n| n == "pg_xact") {
                if let Some(pgdata) = d.parent() {
                    return Clog::open(pgdata, blcksz);
                }
            }
        }
        Clog::bare(dir, blcksz, true)
    }

    /// pg_xact alone. `in_progress_final`: whether an "in progress" entry on disk is the truth
    /// (the cluster was shut down cleanly, so no commit can be missing from the files).
    pub fn bare(dir: Option<&Path>, blcksz: u32, in_progress_final: bool) -> Clog {
        Clog {
            xact: dir.map(|d| SlruDir::new(d, blcksz)),
            blcksz: blcksz.max(1024),
            subtrans: None,
            multixact: None,
            in_progress_final,
            snapshot: None,
        }
    }

    /// The status files of the data directory `pgdata`: pg_xact, pg_subtrans, pg_multixact, and
    /// from `global/pg_control` (when its CRC holds) the newest MultiXact's end
    /// (`nextMulti`/`nextMultiOffset`) and whether the cluster was shut down cleanly (only then is
    /// "in progress" in pg_xact final: after a crash, or while it runs, a commit may be missing
    /// from the files). Nothing is read until asked for.
    pub fn open(pgdata: &Path, blcksz: u32) -> Clog {
        let control = crate::sources::pgdata::read_control_file(pgdata).ok().filter(|c| c.crc_ok);
        let final_ = control.as_ref().is_some_and(|c| c.state.is_clean_shutdown());
        let mut c = Clog::bare(Some(&pgdata.join("pg_xact")), blcksz, final_);
        let st = pgdata.join("pg_subtrans");
        if st.is_dir() {
            c.subtrans = Some(SubTrans::new(&st, c.blcksz));
        }
        let mx = pgdata.join("pg_multixact");
        if mx.is_dir() {
            let next = control.as_ref().map(|c| (c.next_multi, c.next_multi_offset));
            c.multixact = Some(MultiXactFiles::new(&mx, c.blcksz, next));
        }
        c
    }

    /// Adds a pg_multixact reader (for callers that build the parts themselves).
    pub fn with_multixact(mut self, files: MultiXactFiles) -> Clog {
        self.multixact = Some(files);
        self
    }

    /// Adds a pg_subtrans reader.
    pub fn with_subtrans(mut self, st: SubTrans) -> Clog {
        self.subtrans = Some(st);
        self
    }

    /// Judges as of this snapshot: what it sees running is in progress.
    pub fn with_snapshot(mut self, snapshot: Snapshot) -> Clog {
        self.snapshot = Some(snapshot);
        self
    }

    pub fn multixact(&self) -> Option<&MultiXactFiles> {
        self.multixact.as_ref()
    }

    pub fn subtrans(&self) -> Option<&SubTrans> {
        self.subtrans.as_ref()
    }

    /// Whether "in progress" in pg_xact is final (see [`Clog::open`]).
    pub fn in_progress_final(&self) -> bool {
        self.in_progress_final
    }

    /// The status bits on disk; `None` when the segment file or the page is not there.
    pub fn status(&self, xid: u32) -> Option<XidStatus> {
        // CLOG_XACTS_PER_PAGE = BLCKSZ * CLOG_XACTS_PER_BYTE (4), 2 bits each (clog.c)
        let per_page = self.blcksz * 4;
        let in_page = xid % per_page;
        let b = self.xact.as_ref()?.byte(xid / per_page, in_page / 4)?;
        Some(XidStatus::from_bits(b >> ((in_page % 4) * 2)))
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

/// What a heap tuple is to a new snapshot, in the terms of `HTSV_Result` (`access/heapam.h`) that
/// `HeapTupleSatisfiesVacuum` returns. Offline no oldest running snapshot tells recently dead from dead, so a
/// version deleted by a committed transaction is recently dead; one whose deleter is still running is live (the
/// server's `HEAPTUPLE_DELETE_IN_PROGRESS`), since a new snapshot sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TupleState {
    /// A new snapshot sees it.
    Live,
    /// No snapshot sees it: its inserter aborted, or the insertion was withdrawn.
    Dead,
    /// Deleted or updated by a committed transaction.
    RecentlyDead,
    /// Its inserter has not committed (or was running when the snapshot was taken).
    InProgress,
    /// The header and the status at hand do not let us decide ([`Verdict::Uncertain`]).
    Unknown,
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
    /// Why (a fixed text in the common cases: judging the rows of a healthy table allocates nothing).
    pub reason: Cow<'static, str>,
    /// XIDs whose status could not be read (pg_xact page missing, or only "in progress" on disk
    /// while the server may know better): ask the server and judge again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub need_xids: Vec<u32>,
    /// MultiXactIds whose updating member is needed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub need_multis: Vec<u32>,
    /// The committed transaction that deleted or updated this version (what undelete looks for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_by: Option<u32>,
    /// The verdict in `HTSV_Result`'s terms (not serialized: the verdict and the reason say it).
    #[serde(skip)]
    pub state: TupleState,
}

/// What the judge may consult besides the tuple header.
pub struct StatusSources<'a> {
    /// The status files on disk (pg_xact, and with [`Clog::open`] pg_subtrans and pg_multixact).
    pub clog: &'a Clog,
    /// Answers from the server (`pg_xact_status`), preferred over the disk.
    pub server: &'a HashMap<u32, XidStatus>,
    /// Whether the server can still be asked (then unknown XIDs are requested, not judged).
    pub can_ask: bool,
    /// MultiXactId -> its updating XID (None: lockers only), from `pg_get_multixact_members`;
    /// consulted when pg_multixact on disk cannot answer.
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
    /// Whether the snapshot (when there is one) saw `xid` running: its work is not visible to the snapshot, whatever
    /// hint bits were set on the page once it committed.
    fn running_in_snapshot(&self, xid: u32) -> bool {
        xid >= FIRST_NORMAL_TRANSACTION_ID && self.clog.snapshot.as_ref().is_some_and(|s| s.running(xid))
    }

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
        if xid >= FIRST_NORMAL_TRANSACTION_ID && self.clog.snapshot.as_ref().is_some_and(|s| s.running(xid)) {
            return Status::Known(XidStatus::InProgress);
        }
        self.resolve(xid, 0)
    }

    /// The server's answer, else the files: committed and aborted are final on disk; "in
    /// progress" is final only in a cleanly shut down cluster (else the pg_xact page may still be
    /// in shared memory, or the commit only in WAL); sub-committed follows pg_subtrans to the
    /// parent (`TransactionIdDidCommit`, transam.c).
    fn resolve(&self, xid: u32, depth: u32) -> Status {
        if let Some(s) = self.server.get(&xid) {
            if *s != XidStatus::SubCommitted {
                return Status::Known(*s);
            }
        }
        let unknown = |why: String| if self.can_ask { Status::Ask } else { Status::Lost(why) };
        match self.clog.status(xid) {
            Some(s @ (XidStatus::Committed | XidStatus::Aborted)) => Status::Known(s),
            Some(XidStatus::InProgress) if !self.can_ask && self.clog.in_progress_final() => {
                Status::Known(XidStatus::InProgress)
            }
            Some(XidStatus::InProgress) => unknown(format!(
                "transaction {xid} is in progress in pg_xact, but the cluster is running or was not shut down cleanly \
                 (its commit may be missing from the files)"
            )),
            Some(XidStatus::SubCommitted) => match self.clog.subtrans().and_then(|st| st.parent(xid)) {
                Some(p) if depth < MAX_SUBXACT_DEPTH && xid_precedes(p, xid) => match self.resolve(p, depth + 1) {
                    Status::Known(s) => Status::Known(s),
                    Status::Ask => Status::Ask,
                    Status::Lost(why) => Status::Lost(format!("sub-committed {xid}, parent {p}: {why}")),
                },
                _ => unknown(format!("transaction {xid} is sub-committed and pg_subtrans does not name its parent")),
            },
            None => unknown(format!("the status of transaction {xid} is not in pg_xact")),
        }
    }
}

/// `HEAP_XMAX_IS_LOCKED_ONLY` (htup_details.h): xmax only locks the row (any lock mode, a plain
/// XID or a MultiXact, including `HEAP_LOCKED_UPGRADED` and pre-9.3 exclusive locks).
pub fn xmax_locked_only(infomask: u16) -> bool {
    infomask & HEAP_XMAX_LOCK_ONLY != 0 || infomask & (HEAP_XMAX_IS_MULTI | HEAP_XMAX_SHR_LOCK) == HEAP_XMAX_EXCL_LOCK
}

/// `HEAP_LOCKED_UPGRADED` (htup_details.h): a MultiXact xmax carried over by pg_upgrade from
/// before 9.3, lock-only by construction and not to be looked up.
pub fn locked_upgraded(infomask: u16) -> bool {
    infomask & HEAP_XMAX_IS_MULTI != 0
        && infomask & HEAP_XMAX_LOCK_ONLY != 0
        && infomask & (HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK) == 0
}

/// Is this tuple the latest committed version of its row, to a new snapshot?
///
/// xmin: frozen or committed (hint, pg_xact, sub-committed with a committed parent, or the
/// server) goes on; aborted (hint or status), in progress (a prepared transaction included),
/// never-committed sub-transactions and withdrawn speculative insertions (xmin 0) are invisible.
/// xmax: none, aborted-hinted or only a locker (whatever the locker's fate) is live; otherwise
/// the updater (the plain XID, or the updating member of the MultiXact, read from pg_multixact or
/// else from the server) decides: committed means invisible, aborted or in progress means live.
/// What cannot be decided is uncertain, with the XIDs and MultiXacts to ask the server about.
pub fn judge(h: &HeapTupleHeaderData, src: &StatusSources<'_>) -> Judgement {
    let m = h.t_infomask;
    let mut j = Judgement {
        verdict: Verdict::Uncertain,
        reason: Cow::Borrowed(""),
        need_xids: vec![],
        need_multis: vec![],
        deleted_by: None,
        state: TupleState::Unknown,
    };
    let done = |mut j: Judgement, v: Verdict, r: Cow<'static, str>| {
        j.verdict = v;
        j.reason = r;
        j.state = match v {
            Verdict::Live => TupleState::Live,
            Verdict::Uncertain => TupleState::Unknown,
            Verdict::Invisible if j.deleted_by.is_some() => TupleState::RecentlyDead,
            Verdict::Invisible => TupleState::Dead,
        };
        j
    };
    // invisible because the inserter has not committed: in progress rather than dead
    let inserting = |mut j: Judgement| {
        j.state = TupleState::InProgress;
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
                format!("xmin {} is hinted aborted but committed in pg_xact", h.t_xmin).into(),
            );
        }
        return done(j, Verdict::Invisible, "inserted by an aborted transaction (hint)".into());
    } else if h.t_xmin == 0 {
        if m & HEAP_XMIN_COMMITTED != 0 {
            return done(j, Verdict::Uncertain, "xmin is 0 (invalid) but hinted committed".into());
        }
        // heap_abort_speculative clears xmin: the insertion never happened
        return done(j, Verdict::Invisible, "xmin is 0: a withdrawn speculative insertion".into());
    } else {
        let hinted = m & HEAP_XMIN_COMMITTED != 0;
        if src.running_in_snapshot(h.t_xmin) {
            // before the hint: a transaction that commits after the snapshot gets hinted pages, and its new row
            // version beside a non-hinted old one would be saved twice
            return inserting(done(
                j,
                Verdict::Invisible,
                format!("inserting transaction {} was running when the snapshot was taken", h.t_xmin).into(),
            ));
        }
        if !hinted && m & HEAP_MOVED != 0 {
            // moved by a VACUUM FULL before 9.0: the visibility depends on t_xvac's fate
            return done(j, Verdict::Uncertain, "moved by an old-style VACUUM FULL (HEAP_MOVED)".into());
        }
        match src.lookup(h.t_xmin) {
            Status::Known(XidStatus::Committed) => {}
            Status::Known(XidStatus::Aborted) if hinted => {
                return done(
                    j,
                    Verdict::Uncertain,
                    format!("xmin {} is hinted committed but aborted", h.t_xmin).into(),
                );
            }
            Status::Known(XidStatus::Aborted) => {
                return done(j, Verdict::Invisible, format!("inserted by aborted transaction {}", h.t_xmin).into());
            }
            _ if hinted => {} // the hint is enough when pg_xact cannot confirm
            Status::Known(XidStatus::InProgress) => {
                return inserting(done(
                    j,
                    Verdict::Invisible,
                    format!("inserting transaction {} has not committed", h.t_xmin).into(),
                ));
            }
            Status::Known(XidStatus::SubCommitted) => {
                return done(
                    j,
                    Verdict::Uncertain,
                    format!("inserting transaction {} is sub-committed", h.t_xmin).into(),
                );
            }
            Status::Ask => {
                j.need_xids.push(h.t_xmin);
                return done(
                    j,
                    Verdict::Uncertain,
                    format!("status of inserting transaction {} unknown", h.t_xmin).into(),
                );
            }
            Status::Lost(why) => return done(j, Verdict::Uncertain, format!("xmin: {why}").into()),
        }
    }
    // --- xmax ---
    if m & HEAP_XMAX_INVALID != 0 || h.t_xmax == 0 {
        return done(j, Verdict::Live, "inserted by a committed transaction, not deleted".into());
    }
    if xmax_locked_only(m) {
        let what = if locked_upgraded(m) { "a pre-9.3 MultiXact" } else { "xmax" };
        return done(j, Verdict::Live, format!("committed; {what} only locks the row").into());
    }
    let updater = if m & HEAP_XMAX_IS_MULTI != 0 {
        if m & HEAP_XMAX_COMMITTED != 0 {
            return done(j, Verdict::Uncertain, "a MultiXactId xmax marked committed".into());
        }
        if let Some(hz) = src.horizons {
            if !multi_precedes(h.t_xmax, hz.next_multi) {
                let why = format!("MultiXact {} is in the future (next is {})", h.t_xmax, hz.next_multi);
                return done(j, Verdict::Uncertain, why.into());
            }
        }
        let disk = match src.clog.multixact() {
            Some(f) => f.updater(h.t_xmax),
            None => Err("pg_multixact is not at hand".to_string()),
        };
        match (disk, src.multis.get(&h.t_xmax).copied()) {
            (Ok(None), _) | (Err(_), Some(None)) => {
                return done(j, Verdict::Live, "committed; its MultiXact only locks the row".into())
            }
            (Ok(Some(x)), _) | (Err(_), Some(Some(x))) => x,
            (Err(why), None) => {
                if src.can_ask {
                    j.need_multis.push(h.t_xmax);
                }
                return done(j, Verdict::Uncertain, format!("updater in MultiXact {} unknown: {why}", h.t_xmax).into());
            }
        }
    } else {
        h.t_xmax
    };
    let hinted = m & HEAP_XMAX_COMMITTED != 0;
    if src.running_in_snapshot(updater) {
        return done(
            j,
            Verdict::Live,
            format!("committed; deleting transaction {updater} was running when the snapshot was taken").into(),
        );
    }
    match src.lookup(updater) {
        Status::Known(XidStatus::Committed) => {
            j.deleted_by = Some(updater);
            done(j, Verdict::Invisible, format!("deleted or updated by committed transaction {updater}").into())
        }
        Status::Known(XidStatus::Aborted) if hinted => {
            done(j, Verdict::Uncertain, format!("xmax {updater} is hinted committed but aborted in pg_xact").into())
        }
        Status::Known(XidStatus::Aborted) => {
            done(j, Verdict::Live, format!("committed; deleting transaction {updater} aborted").into())
        }
        _ if hinted => {
            j.deleted_by = Some(updater);
            done(j, Verdict::Invisible, format!("deleted or updated by transaction {updater} (hint)").into())
        }
        Status::Known(XidStatus::InProgress) => {
            done(j, Verdict::Live, format!("committed; deleting transaction {updater} still in progress").into())
        }
        Status::Known(XidStatus::SubCommitted) => {
            done(j, Verdict::Uncertain, format!("deleting transaction {updater} is sub-committed").into())
        }
        Status::Ask => {
            j.need_xids.push(updater);
            done(j, Verdict::Uncertain, format!("status of deleting transaction {updater} unknown").into())
        }
        Status::Lost(why) => done(j, Verdict::Uncertain, format!("xmax: {why}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::heap::{HEAP_KEYS_UPDATED, HEAP_MOVED_OFF, HEAP_XMAX_KEYSHR_LOCK};
    use crate::visibility::multixact::tests::Builder;
    use std::path::PathBuf;

    fn header(xmin: u32, xmax: u32, infomask: u16) -> HeapTupleHeaderData {
        let mut h = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
        h.t_xmin = xmin;
        h.t_xmax = xmax;
        h.t_infomask = infomask;
        h
    }

    #[test]
    fn snapshot_running() {
        let s = Snapshot::parse("4294967396:4294967400:4294967397,4294967398").unwrap();
        assert!(s.running(101) && s.running(102) && s.running(104) && s.running(90_000));
        assert!(!s.running(100) && !s.running(103) && !s.running(99));
        assert_eq!(Snapshot::parse("5:9:"), Some(Snapshot { xmax: 9, xip: Default::default() }));
        assert_eq!(Snapshot::parse("x"), None);
    }

    /// A transaction the snapshot saw running committed since, and hint bits say so on the page: its new row
    /// version stays invisible and the version it replaced stays live, or the row is saved twice.
    #[test]
    fn the_snapshot_outranks_hint_bits() {
        let clog = Clog::bare(None, 8192, false).with_snapshot(Snapshot::parse("100:110:105").unwrap());
        let (server, multis) = (HashMap::new(), HashMap::new());
        let src = StatusSources { clog: &clog, server: &server, can_ask: false, multis: &multis, horizons: None };
        let new = header(105, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID);
        assert_eq!(judge(&new, &src).verdict, Verdict::Invisible);
        let old = header(50, 105, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED);
        assert_eq!(judge(&old, &src).verdict, Verdict::Live);
        // started after the snapshot (at or past its xmax): the same
        assert_eq!(judge(&header(112, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID), &src).verdict, Verdict::Invisible);
        // finished before it: the hints hold
        assert_eq!(judge(&header(103, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID), &src).verdict, Verdict::Live);
        assert_eq!(
            judge(&header(50, 103, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED), &src).verdict,
            Verdict::Invisible
        );
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

    const C: u32 = 10; // committed
    const A: u32 = 11; // aborted
    const P: u32 = 12; // in progress (or prepared)
    const SC: u32 = 13; // sub-committed, parent C
    const SP: u32 = 14; // sub-committed, parent P
    const SN: u32 = 15; // sub-committed, no parent recorded
    const SA: u32 = 16; // aborted sub-transaction (ROLLBACK TO)
    const SSC: u32 = 17; // sub-committed, parent SC (nested)

    /// A data directory with pg_xact, pg_subtrans and pg_multixact holding the XIDs above and
    /// MultiXacts 1 (lockers only: P key share, C share), 2 (P key share + C update), 3 (C key
    /// share + A no-key update), 4 (C for update + P update), 5 (A for no key update + SC update).
    struct Lab {
        clog: Clog,
        _mx: Builder,
        dir: PathBuf,
    }

    fn lab(tag: &str, in_progress_final: bool) -> Lab {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-judge-{tag}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(dir.join("pg_xact")).unwrap();
        std::fs::create_dir_all(dir.join("pg_subtrans")).unwrap();
        let mut xact = vec![0u8; 8192];
        let mut set = |x: u32, st: u8| xact[(x / 4) as usize] |= st << ((x % 4) * 2);
        set(C, 1);
        set(A, 2);
        for x in [SC, SP, SN, SSC] {
            set(x, 3);
        }
        set(SA, 2);
        std::fs::write(dir.join("pg_xact/0000"), &xact).unwrap();
        let mut st = vec![0u8; 8192];
        for (x, p) in [(SC, C), (SP, P), (SA, C), (SSC, SC)] {
            st[x as usize * 4..x as usize * 4 + 4].copy_from_slice(&p.to_le_bytes());
        }
        std::fs::write(dir.join("pg_subtrans/0000"), &st).unwrap();
        let mx = Builder::new(tag, 8192);
        mx.multi(1, 1, &[(P, 0), (C, 1)]);
        mx.multi(2, 3, &[(P, 0), (C, 5)]);
        mx.multi(3, 5, &[(C, 0), (A, 4)]);
        mx.multi(4, 7, &[(C, 3), (P, 5)]);
        mx.multi(5, 9, &[(A, 2), (SC, 5)]);
        let clog = Clog::bare(Some(&dir.join("pg_xact")), 8192, in_progress_final)
            .with_subtrans(SubTrans::new(&dir.join("pg_subtrans"), 8192))
            .with_multixact(MultiXactFiles::new(&mx.dir, 8192, Some((6, 11))));
        Lab { clog, _mx: mx, dir }
    }

    impl Drop for Lab {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }

    fn verdict(clog: &Clog, can_ask: bool, xmin: u32, xmax: u32, infomask: u16) -> Judgement {
        let server = HashMap::new();
        let multis = HashMap::new();
        let hz = Horizons { next_xid: 100_000, oldest_xid: 3, next_multi: 100, oldest_multi: 1 };
        let src = StatusSources { clog, server: &server, can_ask, multis: &multis, horizons: Some(&hz) };
        judge(&header(xmin, xmax, infomask), &src)
    }

    use Verdict::{Invisible as I, Live as L, Uncertain as U};

    /// The verdict in HTSV_Result's terms: an invisible tuple is dead, recently dead or in progress by why.
    #[test]
    fn tuple_states() {
        let lab = lab("state", true);
        let s = |xmin: u32, xmax: u32, im: u16| verdict(&lab.clog, false, xmin, xmax, im).state;
        assert_eq!(s(C, 0, HEAP_XMAX_INVALID), TupleState::Live);
        assert_eq!(s(A, 0, HEAP_XMAX_INVALID), TupleState::Dead, "aborted insert");
        assert_eq!(s(0, 0, HEAP_XMAX_INVALID), TupleState::Dead, "withdrawn speculative insertion");
        assert_eq!(s(P, 0, HEAP_XMAX_INVALID), TupleState::InProgress, "insert in progress");
        assert_eq!(s(SP, 0, HEAP_XMAX_INVALID), TupleState::InProgress, "sub-committed, parent in progress");
        assert_eq!(s(C, C, 0), TupleState::RecentlyDead, "deleted by a committed transaction");
        assert_eq!(s(C, P, 0), TupleState::Live, "deleter still in progress");
        assert_eq!(s(C, A, 0), TupleState::Live, "deleter aborted");
        assert_eq!(s(SN, 0, HEAP_XMAX_INVALID), TupleState::Unknown, "status lost");
    }

    #[test]
    fn xmin_cases() {
        let lab = lab("xmin", true);
        let v = |xmin: u32, im: u16| verdict(&lab.clog, false, xmin, 0, im | HEAP_XMAX_INVALID).verdict;
        assert_eq!(v(12345, HEAP_XMIN_FROZEN), L, "frozen needs no status");
        assert_eq!(v(2, 0), L, "FrozenTransactionId");
        assert_eq!(v(C, 0), L);
        assert_eq!(v(C, HEAP_XMIN_COMMITTED), L);
        assert_eq!(v(A, 0), I, "aborted insert");
        assert_eq!(v(A, HEAP_XMIN_INVALID), I);
        assert_eq!(v(A, HEAP_XMIN_COMMITTED), U, "hint contradicts pg_xact");
        assert_eq!(v(C, HEAP_XMIN_INVALID), U, "hint contradicts pg_xact");
        assert_eq!(v(P, 0), I, "in progress / prepared insert");
        assert_eq!(v(P, HEAP_XMIN_COMMITTED), L, "hint set after commit, pg_xact page not flushed");
        assert_eq!(v(SC, 0), L, "sub-committed, parent committed");
        assert_eq!(v(SSC, 0), L, "nested sub-committed, top committed");
        assert_eq!(v(SP, 0), I, "sub-committed, parent in progress");
        assert_eq!(v(SA, 0), I, "rolled-back sub-transaction");
        assert_eq!(v(SN, 0), U, "sub-committed, parent unknown");
        assert_eq!(v(0, 0), I, "withdrawn speculative insertion");
        assert_eq!(v(0, HEAP_XMIN_COMMITTED), U);
        assert_eq!(v(C, HEAP_MOVED_OFF), U, "old VACUUM FULL");
        assert_eq!(v(C, HEAP_MOVED_OFF | HEAP_XMIN_COMMITTED), L);
        assert_eq!(v(40_000, 0), U, "the pg_xact page of 40000 is not on disk");
        assert_eq!(v(200_000, 0), U, "xmin in the future");
        // with a server to ask: unknown and not-final statuses are requested
        let j = verdict(&lab.clog, true, SN, 0, HEAP_XMAX_INVALID);
        assert_eq!((j.verdict, j.need_xids), (U, vec![SN]));
        let j = verdict(&lab.clog, true, P, 0, HEAP_XMAX_INVALID);
        assert_eq!((j.verdict, j.need_xids), (U, vec![P]));
        let j = verdict(&lab.clog, true, SP, 0, HEAP_XMAX_INVALID);
        assert_eq!((j.verdict, j.need_xids), (U, vec![SP]), "parent's status is not final: ask about the child");
        // and answered
        let server: HashMap<u32, XidStatus> = [(P, XidStatus::InProgress), (SN, XidStatus::Committed)].into();
        let multis = HashMap::new();
        let src = StatusSources { clog: &lab.clog, server: &server, can_ask: true, multis: &multis, horizons: None };
        assert_eq!(judge(&header(P, 0, HEAP_XMAX_INVALID), &src).verdict, I);
        assert_eq!(judge(&header(SN, 0, HEAP_XMAX_INVALID), &src).verdict, L);
        assert_eq!(judge(&header(SP, 0, HEAP_XMAX_INVALID), &src).verdict, I, "parent answered in progress");
    }

    #[test]
    fn in_progress_is_not_final_after_a_crash() {
        let lab = lab("crash", false);
        let j = verdict(&lab.clog, false, P, 0, HEAP_XMAX_INVALID);
        assert_eq!(j.verdict, U, "{}", j.reason);
        assert!(j.reason.contains("not shut down cleanly"));
        assert_eq!(verdict(&lab.clog, false, P, 0, HEAP_XMAX_INVALID | HEAP_XMIN_COMMITTED).verdict, L);
        assert_eq!(verdict(&lab.clog, false, C, P, 0).verdict, U, "deleter in progress or committed unflushed");
        assert_eq!(verdict(&lab.clog, false, C, P, HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK).verdict, L);
        assert_eq!(verdict(&lab.clog, false, C, 4, HEAP_XMAX_IS_MULTI).verdict, U, "multi updater P unflushed?");
    }

    #[test]
    fn xmax_plain_cases() {
        let lab = lab("xmax", true);
        let v = |xmax: u32, im: u16| verdict(&lab.clog, false, C, xmax, im).verdict;
        assert_eq!(v(0, 0), L);
        assert_eq!(v(C, HEAP_XMAX_INVALID), L, "aborted-hinted");
        assert_eq!(v(C, 0), I, "committed delete / update");
        assert_eq!(v(C, HEAP_XMAX_COMMITTED), I);
        assert_eq!(v(A, 0), L, "aborted delete");
        assert_eq!(v(A, HEAP_XMAX_COMMITTED), U, "hint contradicts pg_xact");
        assert_eq!(v(P, 0), L, "delete in progress");
        assert_eq!(v(P, HEAP_XMAX_COMMITTED), I, "hint set after commit");
        assert_eq!(v(SC, 0), I, "deleted in a sub-transaction of a committed transaction");
        assert_eq!(v(SA, 0), L, "deleted in a rolled-back sub-transaction");
        assert_eq!(v(SP, 0), L, "deleted in a sub-transaction of a running transaction");
        assert_eq!(v(SN, 0), U);
        assert_eq!(v(200_000, 0), U, "xmax in the future");
    }

    #[test]
    fn lockers_never_hide_a_row() {
        let lab = lab("lock", true);
        // (t_infomask bits heap_lock_tuple writes for each mode, plain XID; compute_new_xmax_infomask)
        let modes = [
            ("FOR UPDATE", HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK),
            ("FOR NO KEY UPDATE", HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK),
            ("FOR SHARE", HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_SHR_LOCK),
            ("FOR KEY SHARE", HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_KEYSHR_LOCK),
            ("pre-9.3 exclusive lock", HEAP_XMAX_EXCL_LOCK),
        ];
        for (name, im) in modes {
            for x in [C, A, P, SC, SA, SN, 40_000] {
                for hint in [0, HEAP_XMAX_COMMITTED] {
                    let j = verdict(&lab.clog, false, C, x, im | hint);
                    assert_eq!(j.verdict, L, "{name} by {x}: {}", j.reason);
                }
            }
        }
        // FOR UPDATE sets HEAP_KEYS_UPDATED in t_infomask2: irrelevant to visibility
        let mut h = header(C, C, HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK);
        h.t_infomask2 |= HEAP_KEYS_UPDATED;
        let (s, m) = (HashMap::new(), HashMap::new());
        let src = StatusSources { clog: &lab.clog, server: &s, can_ask: false, multis: &m, horizons: None };
        assert_eq!(judge(&h, &src).verdict, L);
        // MultiXact lockers: lock-only bit set, no lookup needed (even of a MultiXact not on disk)
        for multi in [1, 99] {
            for bits in [HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_SHR_LOCK, HEAP_XMAX_EXCL_LOCK] {
                let j = verdict(&lab.clog, false, C, multi, HEAP_XMAX_IS_MULTI | HEAP_XMAX_LOCK_ONLY | bits);
                assert_eq!((j.verdict, j.need_multis.len()), (L, 0), "{}", j.reason);
            }
        }
        // HEAP_LOCKED_UPGRADED
        assert!(locked_upgraded(HEAP_XMAX_IS_MULTI | HEAP_XMAX_LOCK_ONLY));
        assert_eq!(verdict(&lab.clog, false, C, 4_000_000, HEAP_XMAX_IS_MULTI | HEAP_XMAX_LOCK_ONLY).verdict, L);
    }

    #[test]
    fn multixact_updaters_from_disk() {
        let lab = lab("multi", true);
        let v = |multi: u32, im: u16| verdict(&lab.clog, false, C, multi, HEAP_XMAX_IS_MULTI | im);
        assert_eq!(v(1, 0).verdict, L, "only lockers in it although not marked lock-only");
        assert_eq!(v(2, 0).verdict, I, "committed updater member");
        assert_eq!(v(3, 0).verdict, L, "aborted updater member");
        assert_eq!(v(4, 0).verdict, L, "updater member in progress");
        assert_eq!(v(5, 0).verdict, I, "updater sub-committed under a committed parent");
        assert_eq!(v(2, HEAP_XMAX_COMMITTED).verdict, U, "never set on a MultiXact");
        assert_eq!(v(500, 0).verdict, U, "beyond nextMulti");
        let j = v(50, 0);
        assert_eq!((j.verdict, j.need_multis.len()), (U, 0), "not on disk, nobody to ask");
        let j = verdict(&lab.clog, true, C, 50, HEAP_XMAX_IS_MULTI);
        assert_eq!((j.verdict, j.need_multis), (U, vec![50]), "not on disk: ask the server");
        // the server's answer is the fallback
        let server = HashMap::new();
        for (ans, want) in [(None, L), (Some(C), I), (Some(A), L)] {
            let multis: HashMap<u32, Option<u32>> = [(50, ans)].into();
            let src =
                StatusSources { clog: &lab.clog, server: &server, can_ask: true, multis: &multis, horizons: None };
            assert_eq!(judge(&header(C, 50, HEAP_XMAX_IS_MULTI), &src).verdict, want);
        }
        // with no pg_multixact at all (files not at hand), the server decides
        let bare = Clog::bare(None, 8192, true);
        let multis: HashMap<u32, Option<u32>> = [(2, Some(C))].into();
        let server: HashMap<u32, XidStatus> = [(C, XidStatus::Committed)].into();
        let src = StatusSources { clog: &bare, server: &server, can_ask: false, multis: &multis, horizons: None };
        assert_eq!(judge(&header(C, 2, HEAP_XMAX_IS_MULTI), &src).verdict, I);
        assert_eq!(judge(&header(C, 3, HEAP_XMAX_IS_MULTI), &src).verdict, U);
    }

    #[test]
    fn clog_new_opens_the_data_directory_beside_pg_xact() {
        let lab = lab("open", true);
        let c = Clog::new(Some(&lab.dir.join("pg_xact")), 8192);
        assert!(c.subtrans().is_some());
        assert!(!c.in_progress_final(), "no pg_control: in progress is not final");
        assert!(c.multixact().is_none(), "no pg_multixact directory in this lab");
        assert_eq!(c.status(C), Some(XidStatus::Committed));
    }
}
