//! `pg_multixact` against pg_control's oldest and next MultiXact and next member offset (layout of multixact.c, see
//! visibility/multixact.rs). At startup `TrimMultiXact` (multixact.c) reads the offsets page of nextMulti (unless it
//! is the first entry of its page) and the members page of nextMultiOffset (unless it starts a group): without them
//! the server does not start. Any other MultiXact's offsets and members are read only when a row locked or updated
//! by it is visited, so their loss is reported as such. Read one segment at a time: memory stays bounded however many
//! MultiXacts there are.

use std::collections::BTreeMap;
use std::path::Path;

use super::ClusterFinding;
use crate::finding::{Code, Finding};
use crate::format::bytes::u32_at;
use crate::format::control::ControlFile;
use crate::visibility::multixact::{MEMBERGROUP_SIZE, MEMBERS_PER_GROUP};
use crate::visibility::slru::SLRU_PAGES_PER_SEGMENT;

/// MultiXacts whose offsets or members are not on disk: `(first, last)` inclusive, in MultiXact order.
pub type MultiRanges = Vec<(u32, u32)>;

/// A segment file of an SLRU directory: the short name (`%04X`) all of 14..18 use, or the long one (`%015X`) slru.c
/// can also write from 17.
pub(super) fn read_segment(pgdata: &Path, dir: &str, seg: u32) -> (String, Option<Vec<u8>>) {
    let short = format!("{dir}/{seg:04X}");
    if let Ok(b) = std::fs::read(pgdata.join(&short)) {
        return (short, Some(b));
    }
    let long = format!("{dir}/{seg:015X}");
    match std::fs::read(pgdata.join(&long)) {
        Ok(b) => (long, Some(b)),
        Err(_) => (short, None),
    }
}

fn finding(code: Code, path: String, message: String) -> ClusterFinding {
    ClusterFinding { finding: Finding::new(code, None, None, message), path }
}

/// The checks, and the MultiXacts whose status cannot be read (for the relation scan to count the rows they lock).
pub fn multixact_checks(pgdata: &Path, c: &ControlFile) -> (Vec<ClusterFinding>, MultiRanges) {
    let blcksz = c.blcksz;
    if !blcksz.is_power_of_two() || !(1024..=32768).contains(&blcksz) {
        return (Vec::new(), Vec::new());
    }
    // MULTIXACT_OFFSETS_PER_PAGE, MULTIXACT_MEMBERS_PER_PAGE (multixact.c)
    let offs_per_page = u64::from(blcksz / 4);
    let offs_per_seg = offs_per_page * u64::from(SLRU_PAGES_PER_SEGMENT);
    let mem_per_page = u64::from(blcksz / MEMBERGROUP_SIZE * MEMBERS_PER_GROUP);
    let mem_per_seg = mem_per_page * u64::from(SLRU_PAGES_PER_SEGMENT);
    let (oldest, next, next_off) = (c.oldest_multi, c.next_multi, c.next_multi_offset);
    let mut out = Vec::new();
    let mut lost: MultiRanges = Vec::new();

    // the offsets, from oldest's segment to next's, around the wrap
    let last_seg = (u64::from(u32::MAX) / offs_per_seg) as u32;
    let (first_seg, next_seg) = ((u64::from(oldest) / offs_per_seg) as u32, (u64::from(next) / offs_per_seg) as u32);
    let count = u64::from(next.wrapping_sub(oldest));
    // starting multi per members segment: (first, last, how many)
    let mut starts: BTreeMap<u64, (u32, u32, u64)> = BTreeMap::new();
    let mut bad_order: Option<(u32, u32, u64, String)> = None;
    let mut prev: Option<(u32, u32)> = None;
    let mut first_off: Option<u32> = None;
    let mut seg = first_seg;
    loop {
        let seg_lo = u64::from(seg) * offs_per_seg;
        let lo = if seg == first_seg { u64::from(oldest) } else { seg_lo };
        let hi = if seg == next_seg && count < offs_per_seg * u64::from(last_seg + 1) {
            u64::from(next)
        } else {
            seg_lo + offs_per_seg
        }; // exclusive: next itself has no members yet
        let (path, bytes) = read_segment(pgdata, "pg_multixact/offsets", seg);
        let holds_next = seg == next_seg && u64::from(next) % offs_per_page != 0;
        let have = bytes.as_ref().map_or(0, |b| b.len() as u64) / 4; // entries on disk
        let next_page_end = (u64::from(next) - seg_lo) / offs_per_page * offs_per_page + offs_per_page;
        if holds_next && have < next_page_end {
            out.push(finding(
                Code::FileMultixactMissing,
                path.clone(),
                format!(
                    "{path} {}: it holds the offsets page of the next MultiXact {next}, which the server reads at \
                     startup (TrimMultiXact) and does not start without",
                    if bytes.is_none() { "is missing".to_string() } else { format!("is short ({have} entries)") }
                ),
            ));
        }
        if lo < hi && seg_lo + have < hi {
            let from = lo.max(seg_lo + have);
            let (a, b) = (from as u32, (hi - 1) as u32);
            lost.push((a, b));
            if !holds_next {
                out.push(finding(
                    Code::FileMultixactMissing,
                    path.clone(),
                    format!(
                        "{path} {}: the offsets of MultiXacts {a}..{b} (between pg_control's oldest MultiXact {oldest} \
                         and next {next}) are lost; rows locked or updated by them cannot be read",
                        if bytes.is_none() { "is missing" } else { "is short" }
                    ),
                ));
            }
        }
        if let Some(b) = &bytes {
            for m in lo..hi.min(seg_lo + have) {
                let o = u32_at(b, ((m - seg_lo) * 4) as usize).unwrap_or(0);
                if m == 0 || o == 0 {
                    continue; // MultiXact 0 does not exist; offset 0 is never handed out (GetNewMultiXactId)
                }
                let m = m as u32;
                first_off.get_or_insert(o);
                let e = starts.entry(u64::from(o) / mem_per_seg).or_insert((m, m, 0));
                e.1 = m;
                e.2 += 1;
                // offsets grow with the MultiXacts, around the wrap, and all lie before nextMultiOffset: their
                // distance back from it shrinks strictly
                let left = next_off.wrapping_sub(o);
                let wrong = match prev {
                    _ if left == 0 => Some(format!("MultiXact {m}'s offset {o} is nextMultiOffset itself")),
                    Some((pm, po)) if left >= next_off.wrapping_sub(po) => {
                        Some(format!("MultiXact {m}'s offset {o} is not after MultiXact {pm}'s {po}"))
                    }
                    _ => None,
                };
                if let Some(why) = wrong {
                    // the MultiXact before ends where this one starts: its members read wrong too
                    let e = bad_order.get_or_insert((prev.map_or(m, |p| p.0), m, 0, why));
                    e.1 = m;
                    e.2 += 1;
                }
                prev = Some((m, o));
            }
        }
        if seg == next_seg || count == 0 {
            break;
        }
        seg = if seg == last_seg { 0 } else { seg + 1 };
    }
    if let Some((a, b, n, why)) = bad_order {
        let path = format!("pg_multixact/offsets/{:04X}", (u64::from(a) / offs_per_seg));
        lost.push((a, b));
        out.push(finding(
            Code::FileMultixactOffsets,
            path,
            format!(
                "pg_multixact/offsets: {n} offset(s) out of order or past nextMultiOffset {next_off} (first: {why}): \
                 the members of MultiXacts {a}..{b} are read wrong"
            ),
        ));
    }

    // the members, from the oldest MultiXact's first member to nextMultiOffset (and its page, read at startup)
    let members_last = u64::from(u32::MAX) / mem_per_seg;
    let end_seg = u64::from(next_off) / mem_per_seg;
    let start_seg = first_off.map_or(end_seg, |o| u64::from(o) / mem_per_seg);
    let mut seg = start_seg;
    loop {
        let seg_lo = seg * mem_per_seg;
        let (path, bytes) = read_segment(pgdata, "pg_multixact/members", seg as u32);
        let have_pages = bytes.as_ref().map_or(0, |b| b.len() as u64 / u64::from(blcksz));
        let is_end = seg == end_seg;
        // the pages this segment must hold: all of them, up to nextMultiOffset's page in the last one
        let need_pages = if is_end { (u64::from(next_off) - seg_lo) / mem_per_page + 1 } else { 32 };
        let startup = is_end && u64::from(next_off) % u64::from(MEMBERS_PER_GROUP) != 0;
        let used = !(is_end && start_seg == end_seg && first_off.is_none());
        if have_pages < need_pages && (startup || used) {
            let state = if bytes.is_none() { "is missing".to_string() } else { format!("has {have_pages} pages") };
            let whose = match starts.get(&seg) {
                Some((a, b, n)) => {
                    lost.push((*a, *b));
                    format!("the members of {n} MultiXacts {a}..{b} are lost")
                }
                None => "members are lost".to_string(),
            };
            let tail = if startup {
                format!(
                    "; it holds the page of nextMultiOffset {next_off}, which the server reads at startup \
                     (TrimMultiXact) and does not start without"
                )
            } else {
                String::new()
            };
            out.push(finding(Code::FileMultixactMissing, path.clone(), format!("{path} {state}: {whose}{tail}")));
        }
        if seg == end_seg {
            break;
        }
        seg = if seg == members_last { 0 } else { seg + 1 };
    }
    lost.sort_unstable();
    (out, lost)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{control, Dir};
    use super::*;
    use crate::visibility::multixact::tests::Builder;

    /// Multis 1..=3 with two members each, next multi 4 at offset 7 (offset 0 is never handed out).
    fn cluster() -> (Dir, ControlFile, Builder) {
        let dir = Dir::new();
        let b = Builder::new(&format!("cluster-{}", dir.path().display()).replace('/', "_"), 8192);
        std::os::unix::fs::symlink(&b.dir, dir.path().join("pg_multixact")).unwrap();
        b.multi(1, 1, &[(100, 1), (101, 1)]);
        b.multi(2, 3, &[(102, 1), (103, 1)]);
        b.multi(3, 5, &[(104, 1), (105, 1)]);
        let mut c = control(15);
        c.blcksz = 8192;
        (c.oldest_multi, c.next_multi, c.next_multi_offset) = (1, 4, 7);
        (dir, c, b)
    }

    fn run(d: &Dir, c: &ControlFile) -> (Vec<ClusterFinding>, MultiRanges) {
        multixact_checks(d.path(), c)
    }

    #[test]
    fn sound_then_each_damage() {
        let (d, c, b) = cluster();
        let (found, lost) = run(&d, &c);
        assert!(found.is_empty() && lost.is_empty(), "{found:?}");
        b.offset(2, 9); // past nextMultiOffset
        let (found, lost) = run(&d, &c);
        assert_eq!(found[0].finding.code, Code::FileMultixactOffsets, "{found:?}");
        assert!(found[0].finding.message.contains("MultiXacts 1..2"), "{found:?}");
        assert_eq!(lost, vec![(1, 2)]);
        b.offset(2, 3);
        std::fs::remove_file(b.dir.join("members/0000")).unwrap();
        let (found, lost) = run(&d, &c);
        assert_eq!(found.len(), 1);
        assert!(found[0].finding.message.contains("3 MultiXacts 1..3") && found[0].finding.message.contains("startup"));
        assert_eq!(lost, vec![(1, 3)]);
        std::fs::remove_file(b.dir.join("offsets/0000")).unwrap();
        let (found, _) = run(&d, &c);
        assert!(found[0].finding.message.contains("next MultiXact 4"), "{found:?}");
    }
}
