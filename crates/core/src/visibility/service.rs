//! Visibility as a service: what the judge consults besides a tuple header (the status files, the server's
//! answers, the horizons), held once per relation, answering for each tuple of a heap page what it is to a new
//! snapshot. The carver asks it instead of assembling the judge's sources itself; the judging is
//! [`crate::visibility::xact::judge`]'s.

use std::collections::HashMap;

use crate::format::heap::HeapTupleHeaderData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;
use crate::visibility::transam::Horizons;
use crate::visibility::xact::{judge, Clog, Judgement, StatusSources, TupleState, XidStatus};

/// The sources of transaction status for one relation, and the questions they answer.
pub struct Visibility {
    clog: Clog,
    /// Answers from the server (`pg_xact_status`), preferred over the disk.
    server: HashMap<u32, XidStatus>,
    /// MultiXactId -> its updating XID (None: lockers only), from the server.
    multis: HashMap<u32, Option<u32>>,
    horizons: Option<Horizons>,
}

impl Visibility {
    /// `server` and `multis`: what the server already answered (more can be added as it answers).
    pub fn new(
        clog: Clog,
        server: HashMap<u32, XidStatus>,
        multis: HashMap<u32, Option<u32>>,
        horizons: Option<Horizons>,
    ) -> Visibility {
        Visibility { clog, server, multis, horizons }
    }

    /// The status files (pg_xact, pg_subtrans, pg_multixact) the judge reads.
    pub fn clog(&self) -> &Clog {
        &self.clog
    }

    /// The server's status of `xid`.
    pub fn add_xid_status(&mut self, xid: u32, status: XidStatus) {
        self.server.insert(xid, status);
    }

    /// The server's updating member of MultiXact `multi` (None: lockers only).
    pub fn add_multi(&mut self, multi: u32, updater: Option<u32>) {
        self.multis.insert(multi, updater);
    }

    /// The verdict on one tuple header and why. `can_ask`: statuses the files do not settle are listed in the
    /// judgement's `need_*` (to ask the server and judge again) instead of being judged uncertain.
    pub fn judge(&self, h: &HeapTupleHeaderData, can_ask: bool) -> Judgement {
        let src = StatusSources {
            clog: &self.clog,
            server: &self.server,
            can_ask,
            multis: &self.multis,
            horizons: self.horizons.as_ref(),
        };
        judge(h, &src)
    }

    /// What one tuple is to a new snapshot: live, dead, recently dead, in progress, or unknown.
    pub fn state(&self, h: &HeapTupleHeaderData, can_ask: bool) -> TupleState {
        self.judge(h, can_ask).state
    }

    /// The state of every tuple of a heap page reached through a normal line pointer whose header parses, by
    /// item number. Tuples a damaged page hides from its line pointers are the carver's to find.
    pub fn page_states(&self, page: &Page<'_>, can_ask: bool) -> Vec<(u16, TupleState)> {
        page.item_ids()
            .filter(|(_, id)| id.lp_flags() == LP_NORMAL)
            .filter_map(|(off, id)| {
                let h = HeapTupleHeaderData::parse(page.item_bytes(id)?)?;
                Some((off, self.state(&h, can_ask)))
            })
            .collect()
    }
}
