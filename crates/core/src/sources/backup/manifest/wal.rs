//! The WAL a backup needs, from its manifest's WAL-Ranges. pg_verifybackup runs pg_waldump over each range
//! (`parse_required_wal`); pgsurgeon does not decode the records. It checks instead that every segment each range
//! spans is in the backup's `pg_wal`, whole (the segment size of pg_control), and that its first page is that
//! segment's: the long page header (`XLogLongPageHeaderData`, src/include/access/xlog_internal.h) names its address,
//! timeline and cluster. A segment present but damaged inside passes here and fails pg_waldump.

use std::path::Path;

use super::{ManifestProblem, WalRange};
use crate::finding::Code;
use crate::format::bytes::{u16_at, u32_at, u64_at};
use crate::sources::backup::vfs;

/// `XLP_LONG_HEADER` (xlog_internal.h).
const XLP_LONG_HEADER: u16 = 0x0002;
/// `SizeOfXLogLongPHD` unaligned: through xlp_xlog_blcksz.
const LONG_PHD: usize = 40;
/// A range spanning more segments than this is no backup's (16 MB segments: 1.6 TB of WAL): not walked one by one.
const MAX_SEGMENTS: u64 = 100_000;

/// The segment names a range spans on its timeline: from its start's segment to the one holding its last byte
/// (`XLByteToSeg`, `XLByteToPrevSeg`).
fn segments(r: &WalRange, seg_size: u64) -> Option<std::ops::RangeInclusive<u64>> {
    let first = r.start_lsn / seg_size;
    let last = r.end_lsn.max(r.start_lsn + 1).saturating_sub(1) / seg_size;
    (last - first < MAX_SEGMENTS).then_some(first..=last)
}

fn name(tli: u32, segno: u64, seg_size: u64) -> String {
    let per_id = 0x1_0000_0000u64 / seg_size;
    format!("{:08X}{:08X}{:08X}", tli, segno / per_id, segno % per_id)
}

/// Check the segments every range needs under `root/pg_wal` (read through [`vfs`], so a tar backup's `pg_wal.tar`
/// too). `seg_size` and `system` are pg_control's. Returns the segments found sound.
pub fn check(root: &Path, ranges: &[WalRange], seg_size: u32, system: u64, problems: &mut Vec<ManifestProblem>) -> u64 {
    let seg_size = u64::from(seg_size);
    if !seg_size.is_power_of_two() || seg_size < 1 << 20 {
        return 0;
    }
    let mut sound = 0;
    for r in ranges {
        let Some(segs) = segments(r, seg_size) else { continue };
        for segno in segs {
            let rel = format!("pg_wal/{}", name(r.timeline, segno, seg_size));
            match segment_problem(root, &rel, r, segno, seg_size, system) {
                None => sound += 1,
                Some(why) => problems.push(ManifestProblem {
                    code: Code::FileManifestWal,
                    message: format!(
                        "{rel} {why}: the manifest's WAL range on timeline {} from {} to {} needs it",
                        r.timeline,
                        lsn(r.start_lsn),
                        lsn(r.end_lsn)
                    ),
                    path: rel,
                }),
            }
        }
    }
    sound
}

fn lsn(v: u64) -> String {
    format!("{:X}/{:X}", v >> 32, v & 0xffff_ffff)
}

/// What is wrong with one segment, if anything.
fn segment_problem(root: &Path, rel: &str, r: &WalRange, segno: u64, seg_size: u64, system: u64) -> Option<String> {
    let path = root.join(rel);
    let meta = match vfs::metadata(&path) {
        Ok(m) if m.is_file() => m,
        Ok(_) | Err(_) => return Some("is not in the backup".into()),
    };
    if meta.len() != seg_size {
        return Some(format!("has {} bytes, not the {seg_size} of a WAL segment", meta.len()));
    }
    let mut page = [0u8; LONG_PHD];
    let read = vfs::VFile::open(&path).and_then(|f| f.read_full_at(&mut page, 0));
    if !matches!(read, Ok(n) if n == LONG_PHD) {
        return Some("cannot be read".into());
    }
    let (info, tli) = (u16_at(&page, 2).unwrap_or(0), u32_at(&page, 4).unwrap_or(0));
    let (addr, sysid) = (u64_at(&page, 8).unwrap_or(0), u64_at(&page, 24).unwrap_or(0));
    if info & XLP_LONG_HEADER == 0 || addr != segno * seg_size {
        return Some(format!("does not begin with its own page (page address {})", lsn(addr)));
    }
    if sysid != system {
        return Some(format!("is of database system {sysid}, the backup's pg_control of {system}"));
    }
    // A segment begun on the previous timeline keeps that timeline in its first page (the switch comes later).
    if tli > r.timeline {
        return Some(format!("begins on timeline {tli}, after the range's {}", r.timeline));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_spans_the_segments_holding_its_bytes() {
        let seg = 16u64 << 20;
        let r = WalRange { timeline: 1, start_lsn: 0x2000028, end_lsn: 0x2000138 };
        assert_eq!(segments(&r, seg), Some(2..=2));
        let r = WalRange { timeline: 1, start_lsn: 0x2000028, end_lsn: 0x4000000 };
        assert_eq!(segments(&r, seg), Some(2..=3));
        assert_eq!(name(1, 2, seg), "000000010000000000000002");
        assert_eq!(name(3, 0x1_05, seg), "000000030000000100000005");
    }
}
