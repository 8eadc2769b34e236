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
    assert_eq!(judge(&header(50, 103, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED), &src).verdict, Verdict::Invisible);
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
        let src = StatusSources { clog: &lab.clog, server: &server, can_ask: true, multis: &multis, horizons: None };
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
