//! The cluster's own bookkeeping beside its relation files: the WAL segment holding the checkpoint record and the
//! redo point pg_control names (without them the server does not start), and the commit-status segments of pg_xact
//! every transaction between pg_control's oldest and next XID needs. Only names and sizes are read.

use std::path::Path;

use serde::Serialize;

use crate::finding::{Code, Finding};
use crate::format::control::{wal_file_name, ControlFile};
use crate::visibility::slru::SLRU_PAGES_PER_SEGMENT;

/// A finding about one file of the cluster's bookkeeping (its path relative to the data directory).
#[derive(Debug, Clone, Serialize)]
pub struct ClusterFinding {
    #[serde(flatten)]
    pub finding: Finding,
    pub path: String,
}

/// The checks of `pgdata` against its pg_control `c` (nothing when pg_control's CRC fails: its values are not to be
/// trusted, and the control file's own report says so). `wal`: check pg_wal too (not in a base backup, whose WAL
/// comes with it or from the archive).
pub fn cluster_checks(pgdata: &Path, c: &ControlFile, wal: bool) -> Vec<ClusterFinding> {
    if !c.crc_ok {
        return Vec::new();
    }
    let mut out = if wal { wal_checks(pgdata, c) } else { Vec::new() };
    out.extend(xact_checks(pgdata, c));
    out
}

fn wal_checks(pgdata: &Path, c: &ControlFile) -> Vec<ClusterFinding> {
    let mut out: Vec<ClusterFinding> = Vec::new();
    for (what, lsn) in [("checkpoint record", c.checkpoint), ("redo point", c.redo)] {
        let Some(name) = wal_file_name(c.this_timeline_id, lsn, c.xlog_seg_size) else { continue };
        let path = format!("pg_wal/{name}");
        if let Some(seen) = out.iter_mut().find(|f| f.path == path) {
            seen.finding.message =
                seen.finding.message.replacen("checkpoint record", &format!("checkpoint record and {what}"), 1);
            continue;
        }
        let (code, message) = match std::fs::metadata(pgdata.join(&path)) {
            Err(_) => (
                Code::FileWalMissing,
                format!(
                    "{path} is missing: it holds the {what} at {lsn} that pg_control names; the server cannot start"
                ),
            ),
            Ok(m) if m.len() != u64::from(c.xlog_seg_size) => (
                Code::FileWalShort,
                format!(
                    "{path} is {} bytes, not the {} of a WAL segment: it holds the {what} at {lsn}",
                    m.len(),
                    c.xlog_seg_size
                ),
            ),
            Ok(_) => continue,
        };
        out.push(ClusterFinding { finding: Finding::new(code, None, None, message), path });
    }
    out
}

/// pg_xact: `CLOG_XACTS_PER_PAGE` (clog.c) transactions a page, `SLRU_PAGES_PER_SEGMENT` pages a segment file; the
/// segments from the oldest XID's to the next XID's (around the wrap), and the next XID's page inside its segment.
fn xact_checks(pgdata: &Path, c: &ControlFile) -> Vec<ClusterFinding> {
    let per_page = u64::from(c.blcksz) * 4;
    let per_seg = per_page * u64::from(SLRU_PAGES_PER_SEGMENT);
    if per_seg == 0 {
        return Vec::new();
    }
    let next = (c.next_xid.0 & 0xFFFF_FFFF) as u32;
    let oldest = c.oldest_xid;
    let last_seg = u64::from(u32::MAX) / per_seg;
    let (first, end) = (u64::from(oldest) / per_seg, u64::from(next) / per_seg);
    let segs: Vec<u64> =
        if first <= end { (first..=end).collect() } else { (first..=last_seg).chain(0..=end).collect() };
    let mut out = Vec::new();
    for seg in segs {
        let path = format!("pg_xact/{seg:04X}");
        let lo = (seg * per_seg).max(u64::from(oldest) * u64::from(seg == first));
        let hi = if seg == end { u64::from(next) } else { (seg + 1) * per_seg - 1 };
        let holds_next = seg == end;
        let next_end = (u64::from(next) % per_seg / per_page + 1) * u64::from(c.blcksz);
        let message = match std::fs::metadata(pgdata.join(&path)) {
            Err(_) => format!(
                "{path} is missing: the commit status of transactions {lo}..{hi} (between pg_control's oldest XID \
                 {oldest} and next XID {next}) is lost{}",
                if holds_next { "; the server reads the next XID's page at startup and does not start" } else { "" }
            ),
            Ok(m) if holds_next && m.len() < next_end => format!(
                "{path} is {} bytes, short of the next XID {next}'s page (it needs {next_end}): the server does not \
                 start",
                m.len()
            ),
            Ok(_) => continue,
        };
        out.push(ClusterFinding { finding: Finding::new(Code::FileXactMissing, None, None, message), path });
    }
    out
}
