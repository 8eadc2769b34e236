//! Undelete (`deleted` in [`CarveConfig`](super::carve::CarveConfig)): which removed row versions are output, who
//! removed them and when, and the columns each of their lines starts with.
//!
//! A version removed inside a subtransaction (`SAVEPOINT s; DELETE …; RELEASE s`) carries the subtransaction's XID
//! in its xmax, which the user never saw: lines name the top-level transaction (what `txid_current()` gave) and the
//! subtransaction beside it. pg_subtrans maps each subtransaction to its parent (access/transam/subtrans.c), but
//! only for XIDs since the oldest one running at the last checkpoint or startup (StartupSUBTRANS zeroes the pages
//! from there, TruncateSUBTRANS removes the segments before), and a running server writes its pages at checkpoints
//! only. Where it names no parent, the transaction `deleted_by` asks for takes in only the subtransactions its own
//! commit record lists (`xl_xact_subxacts`, every committed descendant: xactGetCommittedChildren and
//! XactLogCommitRecord in access/transam/xact.c), which the engine's oracle reads from WAL once, when a removal
//! needs it. Without that record such removals are not attributed: a later transaction is no subtransaction.

use std::collections::HashSet;
use std::io::Write as _;

use crate::format::heap::HEAP_XMAX_INVALID;
use crate::visibility::transam::{xid_precedes, FIRST_NORMAL_TRANSACTION_ID};
use crate::visibility::xact::{xmax_locked_only, Judgement, Verdict, MAX_SUBXACT_DEPTH};

use super::carve::Carver;
use super::find::Found;
use super::output::Batch;

/// What the commit record of `deleted_by` says of its subtransactions.
#[derive(Debug, Default)]
pub enum CommitRecord {
    /// Not read yet: asked of the oracle when a removal needs it.
    #[default]
    Unread,
    /// The subtransactions it lists (none: it had none that committed).
    Listed(HashSet<u32>),
    /// Not to be had (WAL recycled, no tool to read it): subtransactions pg_subtrans does not name stay unattributed.
    Missing,
}

/// Who removed a row version, and when.
pub(super) struct Removal {
    /// The top-level transaction.
    deleter: u32,
    /// The subtransaction whose XID the version carries, when it is not the top-level one.
    sub: Option<u32>,
    /// The subtransaction was tied to `deleter` by its commit record in WAL, pg_subtrans naming no parent.
    from_wal: bool,
    xmin_at: Option<i64>,
    deleted_at: Option<i64>,
}

impl Carver {
    /// What the commit record of `deleted_by` lists (None: it could not be read).
    pub fn set_subxacts(&mut self, subxacts: Option<Vec<u32>>) {
        self.commit_record = match subxacts {
            Some(v) => CommitRecord::Listed(v.into_iter().collect()),
            None => CommitRecord::Missing,
        };
    }

    /// The commit time of `xid`: pg_commit_ts on disk, else the server's answer. When neither has it yet and the
    /// server may be asked, `xid` goes to `need` (the caller asks and carves the page again).
    fn commit_time(&self, xid: u32, ask: bool, need: &mut Vec<u32>) -> Option<i64> {
        if xid < FIRST_NORMAL_TRANSACTION_ID {
            return None;
        }
        if let Some(t) = self.commit_ts.as_ref().and_then(|c| c.time(xid)) {
            return Some(t);
        }
        match self.server_times.get(&xid) {
            Some(t) => *t,
            None => {
                if ask {
                    need.push(xid);
                }
                None
            }
        }
    }

    /// The top of `xid`'s chain of parents in pg_subtrans (SubTransGetTopmostTransaction, subtrans.c); `xid`
    /// itself when pg_subtrans names no parent (a top-level transaction, or the entry is gone).
    fn topmost(&self, xid: u32) -> u32 {
        let Some(st) = self.vis.clog().subtrans() else { return xid };
        let mut top = xid;
        for _ in 0..MAX_SUBXACT_DEPTH {
            match st.parent(top) {
                // a parent is older than its children (AssignTransactionId gives the parent its XID first)
                Some(p) if xid_precedes(p, top) => top = p,
                _ => break,
            }
        }
        top
    }

    /// The verdict a tuple is carved with, and for undelete who removed it; `None` when undelete skips the tuple
    /// (it was not removed, or by another transaction than the one asked for). `ask`: commit times the files do
    /// not hold go to `out.need_commit_ts`; `ask_wal`: a removal that needs the commit record sets
    /// `out.need_subxacts` (the page is carved again once it is read).
    pub(super) fn undelete_verdict(
        &self,
        f: &Found,
        j: &Judgement,
        ask: bool,
        ask_wal: bool,
        out: &mut Batch,
    ) -> Option<(Verdict, Option<Removal>)> {
        let cfg = &self.cfg;
        if !cfg.deleted {
            return Some((j.verdict, None));
        }
        match j.deleted_by {
            Some(x) => self.removal(f, x, ask, ask_wal, out).map(|r| (Verdict::Live, Some(r))),
            // a removed version whose deleter cannot be decided stays in the kept-apart output
            None if j.verdict == Verdict::Uncertain
                && cfg.deleted_by.is_none()
                && f.header.t_xmax != 0
                && f.header.t_infomask & HEAP_XMAX_INVALID == 0
                && !xmax_locked_only(f.header.t_infomask) =>
            {
                Some((j.verdict, None))
            }
            None => None,
        }
    }

    /// Who removed the version `f` whose xmax (or updating member) is the committed `x`, and when; `None` when
    /// `deleted_by` asks for another transaction, or for one whose commit record is still to be read.
    fn removal(&self, f: &Found, x: u32, ask: bool, ask_wal: bool, out: &mut Batch) -> Option<Removal> {
        let top = self.topmost(x);
        let (deleter, from_wal) = match self.cfg.deleted_by {
            None => (top, false),
            Some(w) if w == top => (w, false),
            // pg_subtrans names no parent of `top`, younger than `w`: one of w's subtransactions only if w's
            // commit record lists it (it lists nested ones too, so `top` or `x`)
            Some(w) if xid_precedes(w, top) => match &self.commit_record {
                CommitRecord::Listed(s) if s.contains(&top) || s.contains(&x) => (w, true),
                CommitRecord::Unread if ask_wal => {
                    out.need_subxacts = true;
                    return None;
                }
                _ => return None,
            },
            Some(_) => return None,
        };
        let need = &mut out.need_commit_ts;
        Some(Removal {
            deleter,
            sub: (x != deleter).then_some(x),
            from_wal,
            xmin_at: self.commit_time(f.header.t_xmin, ask, need),
            deleted_at: self.commit_time(x, ask, need),
        })
    }
}

/// Undelete's leading columns: block, lp, xmin, its commit time, the (top-level) deleter, its commit time, and
/// `how`: `delete`, or `update` when the version's t_ctid names another tuple; followed by ` in subtransaction
/// XID` when the removal was made in one (and ` (from the commit record in WAL)` when pg_subtrans did not name the
/// parent).
pub(super) fn write_deleted_prefix(out: &mut Vec<u8>, block: u64, f: &Found, r: &Removal, csv: bool) {
    let sep = if csv { b',' } else { b'\t' };
    let null: &[u8] = if csv { b"" } else { b"\\N" };
    let time = |out: &mut Vec<u8>, t: Option<i64>| match t {
        Some(t) => crate::datum::format_timestamp(t, true, out),
        None => out.extend_from_slice(null),
    };
    let _ = write!(out, "{block}");
    out.push(sep);
    match f.lp {
        Some(lp) => {
            let _ = write!(out, "{lp}");
        }
        None => out.extend_from_slice(null),
    }
    out.push(sep);
    let _ = write!(out, "{}", f.header.t_xmin);
    out.push(sep);
    time(out, r.xmin_at);
    out.push(sep);
    let _ = write!(out, "{}", r.deleter);
    out.push(sep);
    time(out, r.deleted_at);
    out.push(sep);
    let ctid = f.header.t_ctid;
    let moved = u64::from(ctid.block) != block || Some(ctid.offset) != f.lp;
    out.extend_from_slice(if moved { b"update" } else { b"delete" });
    if let Some(s) = r.sub {
        let _ = write!(out, " in subtransaction {s}");
        if r.from_wal {
            out.extend_from_slice(b" (from the commit record in WAL)");
        }
    }
    out.push(sep);
}
