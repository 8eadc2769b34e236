//! The cluster's own bookkeeping beside its relation files: the WAL segment holding the checkpoint record and the
//! redo point pg_control names, and the checkpoint record itself (without them the server does not start), and the
//! commit-status segments of pg_xact every transaction between pg_control's oldest and next XID needs.

use std::path::Path;

use serde::Serialize;

use crate::finding::{Code, Finding};
use crate::format::control::{wal_file_name, ControlFile};
use crate::visibility::slru::SLRU_PAGES_PER_SEGMENT;

mod history;
pub mod multixact;
mod relmap;
mod wal;

pub use wal::xlog_page_magic;

/// A finding about one file of the cluster's bookkeeping (its path relative to the data directory).
#[derive(Debug, Clone, Serialize)]
pub struct ClusterFinding {
    #[serde(flatten)]
    pub finding: Finding,
    pub path: String,
}

/// pg_control itself cannot be decoded (cut short, or no layout of a known version): the one finding there is, as
/// nothing else can be checked without its values.
pub fn unreadable_control(reason: &str) -> ClusterFinding {
    ClusterFinding {
        finding: Finding::new(
            Code::FileControlUnreadable,
            None,
            None,
            format!(
                "global/pg_control cannot be read ({reason}): the server does not start, and nothing else is checked"
            ),
        ),
        path: "global/pg_control".to_string(),
    }
}

/// The checks of `pgdata` against its pg_control `c`. pg_control first: a CRC mismatch is the only finding then (its
/// values are not to be trusted, so nothing is checked against them); its anomalies (control/anomalies.rs) with a
/// sound CRC are findings too, as the server refuses most of them (xlog.c ReadControlFile). `wal`: check pg_wal too
/// (not in a base backup, whose WAL comes with it or from the archive); without it the files are a base backup's,
/// whose status files replay completes (see [`xact_checks`]).
pub fn cluster_checks(pgdata: &Path, c: &ControlFile, wal: bool) -> Vec<ClusterFinding> {
    let control = |code, message| ClusterFinding {
        finding: Finding::new(code, None, None, message),
        path: "global/pg_control".to_string(),
    };
    if !c.crc_ok {
        let why = c.anomalies.iter().find(|a| a.starts_with("CRC mismatch")).cloned().unwrap_or_default();
        return vec![control(
            Code::FileControlCrc,
            format!(
                "global/pg_control: {why}; the server refuses to start (incorrect checksum in control file), and \
                 no other file is checked against values that may be damaged"
            ),
        )];
    }
    let mut out: Vec<ClusterFinding> = c
        .anomalies
        .iter()
        .map(|a| {
            control(
                Code::FileControlAnomaly,
                format!("global/pg_control: {a}, although its CRC matches (written so, not damaged on disk)"),
            )
        })
        .collect();
    if wal {
        out.extend(wal_checks(pgdata, c));
        out.extend(history::history_checks(pgdata, c));
    }
    out.extend(xact_checks(pgdata, c, !wal));
    out.extend(multixact::multixact_checks(pgdata, c).0);
    out.extend(relmap::relmap_checks(pgdata));
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
    if !out.iter().any(|f| f.finding.message.contains("checkpoint record")) {
        out.extend(wal::checkpoint_record(pgdata, c));
    }
    out
}

/// A run of transactions whose commit status is not on disk: a pg_xact segment missing, or short of their pages.
#[derive(Debug, Clone)]
pub struct XactGap {
    /// The segment file, relative to the data directory.
    pub path: String,
    /// First and last XID of the run (one segment's share: no wrap inside).
    pub lo: u32,
    pub hi: u32,
    /// The file is absent (else short).
    pub missing: bool,
    /// The run includes the next XID's page, which the startup process reads (clog.c TrimCLOG).
    pub holds_next: bool,
}

/// pg_xact: `CLOG_XACTS_PER_PAGE` (clog.c) transactions a page, `SLRU_PAGES_PER_SEGMENT` pages a segment file; the
/// segments from the oldest XID's to the next XID's (around the wrap), and the pages of each that the transactions
/// between need (the next XID's page included).
pub fn xact_gaps(pgdata: &Path, c: &ControlFile) -> Vec<XactGap> {
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
        let (path, bytes) = multixact::read_segment(pgdata, "pg_xact", seg as u32);
        let lo = (seg * per_seg).max(u64::from(oldest) * u64::from(seg == first));
        // statuses up to the last XID handed out: the next XID's page is read at startup only when that XID is
        // not the first of its page (TrimCLOG in clog.c), and then the page also holds the XID before it
        let hi = if seg == end { u64::from(next).saturating_sub(1) } else { (seg + 1) * per_seg - 1 };
        let pages = bytes.as_ref().map_or(0, |b| b.len() as u64 / u64::from(c.blcksz));
        let from = lo.max(seg * per_seg + pages * per_page);
        if from <= hi {
            out.push(XactGap {
                path,
                lo: from as u32,
                hi: hi as u32,
                missing: bytes.is_none(),
                holds_next: seg == end,
            });
        }
    }
    out
}

/// pg_xact's gaps as findings. In a base backup (`backup`) pg_xact is copied before pg_control (pg_basebackup sends
/// pg_control last): transactions begun while the backup ran can lie past the copy's end up to pg_control's next XID.
/// Replay makes those pages (clog.c: ExtendCLOG logs CLOG_ZEROPAGE, clog_redo replays it), so the gap that reaches
/// the next XID is no damage there; one before it still is.
fn xact_checks(pgdata: &Path, c: &ControlFile, backup: bool) -> Vec<ClusterFinding> {
    let (next, oldest) = ((c.next_xid.0 & 0xFFFF_FFFF) as u32, c.oldest_xid);
    xact_gaps(pgdata, c)
        .into_iter()
        .filter(|g| !(backup && g.holds_next))
        .map(|g| {
            let XactGap { path, lo, hi, .. } = &g;
            let startup =
                if g.holds_next { "; the server reads the next XID's page at startup and does not start" } else { "" };
            let message = if g.missing {
                format!(
                    "{path} is missing: the commit status of transactions {lo}..{hi} (between pg_control's oldest \
                     XID {oldest} and next XID {next}) is lost{startup}"
                )
            } else {
                format!("{path} is short: the commit status of transactions {lo}..{hi} is not in it{startup}")
            };
            ClusterFinding { finding: Finding::new(Code::FileXactMissing, None, None, message), path: g.path }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod testutil {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::format::control::{parse_control, ControlFile};

    /// A scratch data directory, removed when dropped.
    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("pgsurgeon-cluster-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A real pg_control of `major` (15 or 18) from the fixtures, to edit.
    pub fn control(major: u32) -> ControlFile {
        let p = format!("{}/tests/data/vis/pg{major}/global/pg_control", env!("CARGO_MANIFEST_DIR"));
        parse_control(&std::fs::read(p).unwrap()).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{control, Dir};
    use super::*;
    use crate::format::control::FullTransactionId;

    fn gaps_with(next: u32, files: &[(&str, usize)]) -> Vec<XactGap> {
        let dir = Dir::new();
        std::fs::create_dir_all(dir.path().join("pg_xact")).unwrap();
        for (name, len) in files {
            std::fs::write(dir.path().join("pg_xact").join(name), vec![0u8; *len]).unwrap();
        }
        let mut c = control(15);
        c.next_xid = FullTransactionId::from_epoch_and_xid(0, next);
        c.oldest_xid = 3;
        xact_gaps(dir.path(), &c)
    }

    #[test]
    fn the_next_xids_page_is_needed_only_when_it_holds_an_xid_handed_out() {
        let per_page = 8192 * 4;
        let per_seg = per_page * 32;
        // next XID the first of a new segment (pg_resetwal -x by its documentation): that segment needs no file
        assert!(gaps_with(per_seg, &[("0000", 8192 * 32)]).is_empty());
        // next XID the first of a page: the pages before it must be there, not its own
        assert!(gaps_with(per_page * 3, &[("0000", 8192 * 3)]).is_empty());
        let short = gaps_with(per_page * 3 + 1, &[("0000", 8192 * 3)]);
        assert_eq!(short.len(), 1);
        assert_eq!((short[0].lo, short[0].hi, short[0].missing), (per_page * 3, per_page * 3, false));
        // the segment gone: every XID from the oldest to the last handed out
        let gone = gaps_with(100, &[]);
        assert_eq!((gone[0].lo, gone[0].hi, gone[0].missing, gone[0].holds_next), (3, 99, true, true));
    }
}
