//! What carving produces: the rows (COPY text or CSV lines) with their certainty and provenance, the items that
//! were lost, the counts, and what to ask the server before carving again.

use std::collections::HashSet;
use std::io::Write as _;

use serde::Serialize;

use super::encode::{copy_csv_escape, copy_text_escape};
use crate::visibility::xact::Verdict;

use super::find::{Found, PageInfo, Placement, Via};
use crate::format::tuple::Walk;

/// How sure the carver is that a row is a live row of the table with these values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// Found through its line pointer, well formed, visibility decided, every value decoded.
    Sure,
    /// Found by its header in the page body (line pointers lost), otherwise like `sure`.
    Likely,
    /// Something does not add up: visibility undecidable, a value missing, a stale or misplaced
    /// copy, a page that failed its checksum. Kept apart.
    Uncertain,
}

impl Certainty {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Certainty::Sure => "sure",
            Certainty::Likely => "likely",
            Certainty::Uncertain => "uncertain",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CarvedRow {
    pub block: u64,
    /// The line pointer: the one that pointed at it, or (found in the body) the one its own
    /// t_ctid names.
    pub lp: Option<u16>,
    /// Byte offset of the tuple in the page.
    pub offset: u16,
    pub len: u16,
    pub via: Via,
    pub placement: Placement,
    pub certainty: Certainty,
    pub verdict: Verdict,
    pub reason: String,
    pub notes: Vec<String>,
    pub xmin: u32,
    pub xmax: u32,
    pub infomask: u16,
    pub infomask2: u16,
    /// The page failed its checksum (the row is uncertain for that reason).
    pub checksum_failed: bool,
    /// The certainty the row would have if its page had passed its checksum.
    pub certainty_besides_checksum: Certainty,
    /// The formatted line in the data blob.
    pub data_start: usize,
    pub data_end: usize,
}

/// A row known to have been there that could not be carved.
#[derive(Debug, Clone, Serialize)]
pub struct LostItem {
    pub block: u64,
    pub lp: Option<u16>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CarveCounts {
    pub pages: u64,
    pub tuples_found: u64,
    pub live: u64,
    pub invisible: u64,
    pub uncertain: u64,
    pub duplicates: u64,
    /// Rows written to the main output / kept apart.
    pub main_rows: u64,
    pub apart_rows: u64,
    /// Pages that failed their checksum.
    pub checksum_failures: u64,
    /// Pages of a base backup that failed their checksum because they were written while the backup copied them
    /// (LSN after its start): torn in the copy, rewritten by WAL replay. Not in `checksum_failures`.
    pub torn_after_backup_start: u64,
}

impl CarveCounts {
    pub fn add(&mut self, o: &CarveCounts) {
        self.pages += o.pages;
        self.tuples_found += o.tuples_found;
        self.live += o.live;
        self.invisible += o.invisible;
        self.uncertain += o.uncertain;
        self.duplicates += o.duplicates;
        self.main_rows += o.main_rows;
        self.apart_rows += o.apart_rows;
        self.checksum_failures += o.checksum_failures;
        self.torn_after_backup_start += o.torn_after_backup_start;
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CarveResult {
    pub rows: Vec<CarvedRow>,
    pub pages: Vec<PageInfo>,
    pub lost: Vec<LostItem>,
    pub counts: CarveCounts,
    /// Ask the server for these and carve again.
    pub need_xids: Vec<u32>,
    pub need_multis: Vec<u32>,
    pub need_toast: Vec<u32>,
}

/// Append `v` to `out` with every byte sequence that is not valid UTF-8 written as `\xHH` text, so the value
/// loads and still shows what was there.
pub(super) fn escape_invalid_utf8(mut v: &[u8], out: &mut Vec<u8>) {
    loop {
        match std::str::from_utf8(v) {
            Ok(s) => {
                out.extend_from_slice(s.as_bytes());
                return;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.extend_from_slice(&v[..good]);
                let bad = e.error_len().unwrap_or(v.len() - good);
                for b in &v[good..good + bad] {
                    let _ = write!(out, "\\x{b:02x}");
                }
                v = &v[good + bad..];
            }
        }
    }
}

/// What carving a run of pages produced: the formatted rows and the account of the pages.
#[derive(Debug, Default)]
pub struct Batch {
    /// Rows for the main output (COPY text or CSV lines). In collecting mode: every carved row, each
    /// described by an entry of `rows`.
    pub main: Vec<u8>,
    /// Rows kept apart, each line starting with the provenance columns.
    pub apart: Vec<u8>,
    /// Provenance of the rows of `main`, when asked for: (block, lp, offset, via, certainty, note, rows) lines in
    /// output order; a page's rows read plainly through their line pointers share one line (lp and offset NULL,
    /// `rows` their count), every other row has its own.
    pub prov: Vec<u8>,
    pub rows: Vec<CarvedRow>,
    pub lost: Vec<LostItem>,
    /// Pages that need accounting (all-zero, line pointer array destroyed, copies of another block, body
    /// searched); in collecting mode every page.
    pub pages: Vec<PageInfo>,
    pub counts: CarveCounts,
    pub need_xids: Vec<u32>,
    pub need_multis: Vec<u32>,
    pub need_toast: Vec<u32>,
    /// XIDs whose commit time undelete needs and pg_commit_ts on disk does not hold (yet).
    pub need_commit_ts: Vec<u32>,
    /// Undelete: a removal `deleted_by` may have made in a subtransaction pg_subtrans does not name, to be told by
    /// the commit record of `deleted_by` (read once, then the page is carved again).
    pub need_subxacts: bool,
    /// Keep every row in `main` with a `rows` entry (small page sets: repair), instead of splitting main/apart.
    pub collect: bool,
    /// Write `prov`.
    pub provenance: bool,
    pub(super) line: Vec<u8>,
    pub(super) text: Vec<u8>,
    /// The tuples of the page being carved, and the walks of the last page's, reused page after page.
    pub(super) found: Vec<Found>,
    pub(super) walks: Vec<Walk>,
}

impl Batch {
    pub fn collecting() -> Batch {
        Batch { collect: true, ..Default::default() }
    }

    pub fn streaming(provenance: bool) -> Batch {
        Batch { provenance, ..Default::default() }
    }

    /// Whether the carve asked for something the caller may answer (then carve the pages again).
    pub fn needs(&self) -> bool {
        !self.need_xids.is_empty()
            || !self.need_multis.is_empty()
            || !self.need_toast.is_empty()
            || !self.need_commit_ts.is_empty()
            || self.need_subxacts
    }

    /// Append `other` (carved after `self`).
    pub fn append(&mut self, mut other: Batch) {
        let base = self.main.len();
        for r in &mut other.rows {
            r.data_start += base;
            r.data_end += base;
        }
        self.main.extend_from_slice(&other.main);
        self.apart.extend_from_slice(&other.apart);
        self.prov.extend_from_slice(&other.prov);
        self.rows.append(&mut other.rows);
        self.lost.append(&mut other.lost);
        self.pages.append(&mut other.pages);
        self.counts.add(&other.counts);
        self.need_xids.append(&mut other.need_xids);
        self.need_multis.append(&mut other.need_multis);
        self.need_toast.append(&mut other.need_toast);
        self.need_commit_ts.append(&mut other.need_commit_ts);
        self.need_subxacts |= other.need_subxacts;
    }
}

/// One provenance line for the `run` rows of `block` read plainly through their line pointers (if any).
pub(super) fn write_plain_run(out: &mut Vec<u8>, block: u64, run: &mut u64, csv: bool) {
    if *run == 0 {
        return;
    }
    if csv {
        let _ = writeln!(out, "{block},,,line_pointer,sure,,{run}");
    } else {
        let _ = writeln!(out, "{block}\t\\N\t\\N\tline_pointer\tsure\t\t{run}");
    }
    *run = 0;
}

/// How many of an undecodable value's stored bytes its row's note shows (hex).
pub(super) const RAW_NOTE_BYTES: usize = 4096;

/// The provenance columns of a carved row: block, line pointer, offset, how found, certainty, note.
pub(super) fn write_provenance(out: &mut Vec<u8>, block: u64, f: &Found, certainty: Certainty, note: &str, csv: bool) {
    let sep = if csv { ',' } else { '\t' };
    let _ = write!(out, "{block}{sep}");
    match f.lp {
        Some(lp) => {
            let _ = write!(out, "{lp}");
        }
        None if !csv => out.extend_from_slice(b"\\N"),
        None => {}
    }
    let _ = write!(out, "{sep}{}{sep}{}{sep}{}{sep}", f.off, f.via.as_str(), certainty.as_str());
    if csv {
        copy_csv_escape(note.as_bytes(), false, out);
    } else {
        copy_text_escape(note.as_bytes(), out);
    }
}

/// The items of the page lost: line pointers to bytes that are not a readable tuple, line pointers asked for
/// (`restrict`) that gave no row, and the rows a torn or misdirected write overwrote; then the page's account.
pub(super) fn account_lost(
    block: u64,
    found: &[Found],
    info: PageInfo,
    restrict: Option<&HashSet<u16>>,
    recovered_lps: &[bool],
    foreign: Option<(bool, usize, u64)>,
    out: &mut Batch,
) {
    let recovered = |lp: u16| recovered_lps.get(usize::from(lp)).copied().unwrap_or(false);
    // Line pointers to tuples that could not be read (and were not found in the body).
    for lp in &info.lp_bad {
        if info.lp_array_destroyed
            || recovered(*lp)
            || info.claimed_lps.contains(lp)
            || restrict.is_some_and(|r| !r.contains(lp))
        {
            continue;
        }
        out.lost.push(LostItem {
            block,
            lp: Some(*lp),
            reason: "its line pointer points at bytes that are not a readable tuple, and no tuple naming it was \
found in the page"
                .into(),
        });
    }
    if let Some(r) = restrict {
        let mut r: Vec<u16> = r.iter().copied().collect();
        r.sort_unstable();
        for lp in r {
            if !recovered(lp) && !info.lp_bad.contains(&lp) && !found.iter().any(|f| f.lp == Some(lp)) {
                out.lost.push(LostItem {
                    block,
                    lp: Some(lp),
                    reason: "no readable tuple at this line pointer".into(),
                });
            }
        }
    }
    // An all-zero page is not a loss by itself (relation extension leaves them): the caller decides with the
    // evidence that rows were there (index entries).
    let mut info = info;
    if let Some((whole, first, from)) = foreign {
        info.copies_from = Some(from);
        info.copies_at = Some(if whole { 0 } else { first });
        out.lost.push(LostItem {
            block,
            lp: None,
            reason: if whole {
                format!("the page holds a copy of block {from} (a misdirected write): this block's own rows are gone")
            } else {
                format!(
                    "from offset {first} up the page holds bytes of block {from} (a torn page): this block's rows \
stored there are gone"
                )
            },
        });
    }
    if out.collect || info.all_zero || info.body_scanned || info.copies_from.is_some() {
        out.pages.push(info);
    }
}
