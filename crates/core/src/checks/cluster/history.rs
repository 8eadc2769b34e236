//! The timeline history pg_control's timeline needs: from timeline 2 on, `pg_wal/%08X.history` lists the timelines
//! it branched from. Parsed as timeline.c `readTimeLineHistory` parses it: blank and `#` lines skipped, then
//! `tli<TAB>X/X`, timelines increasing and below the file's own. A missing file the server takes as "no parents",
//! and then refuses the WAL pages of the parent timeline that a new timeline's first segment holds ("unexpected
//! timeline ID", as the test on 15 and 18 shows): the checkpoint record is not found and the server does not start.
//! A malformed one is FATAL wherever it is read.

use crate::error::io_reason;
use std::path::Path;

use super::ClusterFinding;
use crate::finding::{Code, Finding};
use crate::format::control::ControlFile;

pub(super) fn history_checks(pgdata: &Path, c: &ControlFile) -> Vec<ClusterFinding> {
    let tli = c.this_timeline_id;
    if tli <= 1 {
        return Vec::new();
    }
    let path = format!("pg_wal/{tli:08X}.history");
    let (code, why) = match std::fs::read(pgdata.join(&path)) {
        Err(e) => (
            Code::FileTimelineHistoryMissing,
            format!(
                "{path} cannot be read ({}): pg_control's timeline {tli} has no record of the timelines it came from; \
                 the server refuses WAL pages of those (unexpected timeline ID) and does not start while the \
                 checkpoint's segment holds any; archive recovery, standbys and pg_rewind need it too",
                io_reason(&e)
            ),
        ),
        Ok(bytes) => match problems(&String::from_utf8_lossy(&bytes), tli) {
            None => return Vec::new(),
            Some(why) => (
                Code::FileTimelineHistory,
                format!("{path}: {why}; the server stops (FATAL) wherever it reads the file"),
            ),
        },
    };
    vec![ClusterFinding { finding: Finding::new(code, None, None, why), path }]
}

/// The first line `readTimeLineHistory` refuses, or a timeline at or past `tli`.
fn problems(text: &str, tli: u32) -> Option<String> {
    let mut last: Option<u32> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        // sscanf("%u\t%X/%X"): digits, any whitespace (the tab of the format matches any), hex, '/', hex
        let digits = t.len() - t.trim_start_matches(|ch: char| ch.is_ascii_digit()).len();
        let Some(parent) = t[..digits].parse::<u32>().ok() else {
            return Some(format!("syntax error in line {line:?}: no timeline ID"));
        };
        let hex = |x: &str| x.len() - x.trim_start_matches(|ch: char| ch.is_ascii_hexdigit()).len();
        let rest = t[digits..].trim_start();
        let lsn_ok = hex(rest) > 0 && rest[hex(rest)..].strip_prefix('/').is_some_and(|lo| hex(lo) > 0);
        if !lsn_ok {
            return Some(format!("syntax error in line {line:?}: no switchpoint location"));
        }
        if last.is_some_and(|l| parent <= l) {
            return Some(format!("timeline {parent} after {}: timelines must increase", last.unwrap_or(0)));
        }
        last = Some(parent);
    }
    match last {
        Some(l) if l >= tli => Some(format!("it names timeline {l}, not earlier than its own {tli}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_as_the_server_parses() {
        assert_eq!(problems("1\t0/3000000\tno recovery target specified\n\n# c\n2\t0/5000000\tx\n", 3), None);
        assert!(problems("1\t0/3000000\n", 1).unwrap().contains("not earlier"));
        assert!(problems("2\t0/3000000\n1\t0/4000000\n", 3).unwrap().contains("must increase"));
        assert!(problems("x\t0/3000000\n", 3).unwrap().contains("no timeline ID"));
        assert_eq!(problems("1 0/3000000\n", 3), None); // sscanf's tab matches a space
        assert!(problems("1\t3000000\n", 3).unwrap().contains("no switchpoint"));
    }

    #[test]
    fn missing_file_of_timeline_two() {
        let dir = super::super::testutil::Dir::new();
        let mut c = super::super::testutil::control(15);
        c.this_timeline_id = 2;
        let found = history_checks(dir.path(), &c);
        assert_eq!(found[0].path, "pg_wal/00000002.history");
        assert_eq!(found[0].finding.code, Code::FileTimelineHistoryMissing);
        std::fs::create_dir_all(dir.path().join("pg_wal")).unwrap();
        std::fs::write(dir.path().join("pg_wal/00000002.history"), "1\t0/3000000\treason\n").unwrap();
        assert!(history_checks(dir.path(), &c).is_empty());
    }
}
