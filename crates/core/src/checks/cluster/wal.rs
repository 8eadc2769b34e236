//! The checkpoint record pg_control points at, read as the startup process reads it (xlogrecovery.c
//! `ReadCheckpointRecord` through xlogreader.c): the long page header at the start of its segment (the reader checks it
//! before any other page of a segment), the header of every page the record lies on, the record's header, CRC and
//! checkpoint payload. No other record is decoded: this is what decides whether the server starts.

use crate::error::io_reason;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::ClusterFinding;
use crate::finding::{Code, Finding};
use crate::format::bytes::{u16_at, u32_at, u64_at, u8_at};
use crate::format::control::{wal_file_name, ControlFile, Lsn};

/// `XLOG_PAGE_MAGIC` of each major (src/include/access/xlog_internal.h of 14.13, 15.15, 16.2, 17.4, 18.3): the WAL
/// format version, bumped whenever a record's layout changes, so a page of another major reads as foreign.
pub fn xlog_page_magic(major: u32) -> Option<u16> {
    match major {
        14 => Some(0xD10D),
        15 => Some(0xD110),
        16 => Some(0xD113),
        17 => Some(0xD116),
        18 => Some(0xD118),
        _ => None,
    }
}

// src/include/access/xlog_internal.h: the flag bits of xlp_info.
const XLP_FIRST_IS_CONTRECORD: u16 = 0x0001;
const XLP_LONG_HEADER: u16 = 0x0002;
const XLP_ALL_FLAGS: u16 = 0x000F;
/// `SizeOfXLogShortPHD` and `SizeOfXLogLongPHD` (xlog_internal.h, MAXALIGNed: 20 -> 24, 36 -> 40 bytes).
const SHORT_PHD: usize = 24;
const LONG_PHD: usize = 40;
/// `SizeOfXLogRecord`: offsetof(XLogRecord, xl_crc) + 4 (src/include/access/xlogrecord.h).
const SIZE_OF_XLOG_RECORD: usize = 24;
const XL_CRC_OFFSET: usize = 20;
/// `RM_XLOG_ID` (src/include/access/rmgrlist.h: the first resource manager).
const RM_XLOG_ID: u8 = 0;
/// `XLOG_CHECKPOINT_SHUTDOWN`, `XLOG_CHECKPOINT_ONLINE` (src/include/catalog/pg_control.h); `XLR_INFO_MASK`
/// (xlogrecord.h) masks the bits that are not the resource manager's.
const XLOG_CHECKPOINT_SHUTDOWN: u8 = 0x00;
const XLOG_CHECKPOINT_ONLINE: u8 = 0x10;
const XLR_INFO_MASK: u8 = 0x0F;
/// `XLR_BLOCK_ID_DATA_SHORT` (xlogrecord.h): the main data follows with a one-byte length.
const XLR_BLOCK_ID_DATA_SHORT: u8 = 255;
/// `sizeof(CheckPoint)` (pg_control.h) is 88 bytes in 14 to 18 (17 put wal_level into what was padding), so
/// `ReadCheckpointRecord` (xlogrecovery.c) accepts only records of SizeOfXLogRecord + 2 + 88 bytes.
const SIZEOF_CHECKPOINT: usize = 88;
const CHECKPOINT_RECORD_LEN: usize = SIZE_OF_XLOG_RECORD + 2 + SIZEOF_CHECKPOINT;

/// Where the reading stopped: a page header the reader refuses, or the record itself.
enum Stop {
    Page(ClusterFinding),
    Record(String),
}

struct Wal<'a> {
    pgdata: &'a Path,
    c: &'a ControlFile,
    magic: u16,
    blcksz: u64,
    seg_size: u64,
}

impl Wal<'_> {
    fn path(&self, lsn: u64) -> Option<String> {
        wal_file_name(self.c.this_timeline_id, Lsn(lsn), self.c.xlog_seg_size).map(|n| format!("pg_wal/{n}"))
    }

    /// The WAL page starting at `page` (a multiple of the WAL block size), its header checked as
    /// `XLogReaderValidatePageHeader` (xlogreader.c) checks it; `rem`: the continuation length it must announce.
    fn page(&self, page: u64, rem: Option<u64>) -> Result<Vec<u8>, Stop> {
        let path = self.path(page).unwrap_or_default();
        let at = page % self.seg_size;
        let mut buf = vec![0u8; self.blcksz as usize];
        let read = File::open(self.pgdata.join(&path))
            .and_then(|mut f| f.seek(SeekFrom::Start(at)).and_then(|_| f.read_exact(&mut buf)));
        if let Err(e) = read {
            let message =
                format!("{path}: the WAL page at {} (offset {at}) cannot be read: {}", Lsn(page), io_reason(&e));
            return Err(Stop::Page(page_finding(message, path)));
        }
        let mut bad = Vec::new();
        let magic = u16_at(&buf, 0).unwrap_or(0);
        if magic != self.magic {
            bad.push(format!(
                "xlp_magic {magic:04X}, not the {:04X} of PostgreSQL {}",
                self.magic, self.c.major_version
            ));
        }
        let info = u16_at(&buf, 2).unwrap_or(0);
        if info & !XLP_ALL_FLAGS != 0 {
            bad.push(format!("xlp_info {info:04X} has unknown bits"));
        }
        let tli = u32_at(&buf, 4).unwrap_or(0);
        if tli == 0 || tli > self.c.this_timeline_id {
            bad.push(format!("xlp_tli {tli}, pg_control's timeline is {}", self.c.this_timeline_id));
        }
        let addr = u64_at(&buf, 8).unwrap_or(0);
        if addr != page {
            bad.push(format!("xlp_pageaddr {} instead of {}", Lsn(addr), Lsn(page)));
        }
        if at == 0 {
            if info & XLP_LONG_HEADER == 0 {
                bad.push("the first page of the segment has no long header (XLP_LONG_HEADER)".to_string());
            } else {
                let sysid = u64_at(&buf, 24).unwrap_or(0);
                if sysid != self.c.system_identifier {
                    bad.push(format!(
                        "xlp_sysid {sysid}, pg_control's system identifier is {}",
                        self.c.system_identifier
                    ));
                }
                let seg = u32_at(&buf, 32).unwrap_or(0);
                if u64::from(seg) != self.seg_size {
                    bad.push(format!("xlp_seg_size {seg}, pg_control's is {}", self.seg_size));
                }
                let blck = u32_at(&buf, 36).unwrap_or(0);
                if u64::from(blck) != self.blcksz {
                    bad.push(format!("xlp_xlog_blcksz {blck}, pg_control's is {}", self.blcksz));
                }
            }
        }
        if let Some(rem) = rem {
            let got = u32_at(&buf, 16).unwrap_or(0);
            if info & XLP_FIRST_IS_CONTRECORD == 0 {
                bad.push("the checkpoint record continues here but XLP_FIRST_IS_CONTRECORD is not set".to_string());
            } else if u64::from(got) != rem {
                bad.push(format!("xlp_rem_len {got}, the record has {rem} bytes left"));
            }
        }
        if bad.is_empty() {
            return Ok(buf);
        }
        let message = format!(
            "{path}: the WAL page at {} (offset {at}), read for the checkpoint record at {}: {}; the server cannot \
             read the checkpoint record and does not start",
            Lsn(page),
            self.c.checkpoint,
            bad.join("; ")
        );
        Err(Stop::Page(page_finding(message, path)))
    }

    /// The record at `lsn`, following it over page (and segment) boundaries.
    fn record(&self, lsn: u64) -> Result<Vec<u8>, Stop> {
        let first = lsn - lsn % self.blcksz;
        let seg_start = lsn - lsn % self.seg_size;
        if first != seg_start {
            // xlogreader.c ReadPageInternal reads a segment's first page before any other of it
            self.page(seg_start, None)?;
        }
        let page = self.page(first, None)?;
        let off = (lsn - first) as usize;
        let hdr = if u16_at(&page, 2).unwrap_or(0) & XLP_LONG_HEADER != 0 { LONG_PHD } else { SHORT_PHD };
        if off < hdr {
            // XRecOffIsValid (xlog_internal.h) wants at least a short header before a record
            return Err(Stop::Record(format!("the location points into the page header (offset {off} on its page)")));
        }
        let Some(total) = u32_at(&page, off) else {
            return Err(Stop::Record("no room for xl_tot_len on its page".to_string()));
        };
        let total = total as usize;
        if total != CHECKPOINT_RECORD_LEN {
            return Err(Stop::Record(format!(
                "xl_tot_len {total}, a checkpoint record is {CHECKPOINT_RECORD_LEN} bytes"
            )));
        }
        let mut rec = Vec::with_capacity(total);
        let (mut page, mut off, mut page_at) = (page, off, first);
        loop {
            let take = (self.blcksz as usize - off).min(total - rec.len());
            rec.extend_from_slice(page.get(off..off + take).unwrap_or_default());
            if rec.len() >= total {
                return Ok(rec);
            }
            page_at += self.blcksz;
            page = self.page(page_at, Some((total - rec.len()) as u64))?;
            off = if u16_at(&page, 2).unwrap_or(0) & XLP_LONG_HEADER != 0 { LONG_PHD } else { SHORT_PHD };
        }
    }
}

fn page_finding(message: String, path: String) -> ClusterFinding {
    ClusterFinding { finding: Finding::new(Code::FileWalPageHeader, None, None, message), path }
}

/// The record's own checks: `ValidXLogRecordHeader` and `ValidXLogRecord` (xlogreader.c, random access), then
/// `ReadCheckpointRecord` (xlogrecovery.c), then the payload against pg_control's copy of it.
fn record_problems(rec: &[u8], c: &ControlFile) -> Vec<String> {
    let mut bad = Vec::new();
    let prev = u64_at(rec, 8).unwrap_or(0);
    if prev >= c.checkpoint.0 {
        bad.push(format!("xl_prev {} is not before the record", Lsn(prev)));
    }
    let stored = u32_at(rec, XL_CRC_OFFSET).unwrap_or(0);
    let body = rec.get(SIZE_OF_XLOG_RECORD..).unwrap_or_default();
    let head = rec.get(..XL_CRC_OFFSET).unwrap_or_default();
    // the CRC covers the data first and the header (up to xl_crc) last
    let crc = crc32c::crc32c_append(crc32c::crc32c(body), head);
    if crc != stored {
        bad.push(format!("CRC mismatch: stored {stored:08X}, computed {crc:08X}"));
    }
    let info = u8_at(rec, 16).unwrap_or(0);
    let rmid = u8_at(rec, 17).unwrap_or(0);
    if rmid != RM_XLOG_ID {
        bad.push(format!("xl_rmid {rmid}, not RM_XLOG_ID"));
    }
    let kind = info & !XLR_INFO_MASK;
    if kind != XLOG_CHECKPOINT_SHUTDOWN && kind != XLOG_CHECKPOINT_ONLINE {
        bad.push(format!("xl_info {info:02X} is not a checkpoint (SHUTDOWN 00 or ONLINE 10)"));
    }
    let (id, len) = (u8_at(rec, 24).unwrap_or(0), u8_at(rec, 25).unwrap_or(0));
    if id != XLR_BLOCK_ID_DATA_SHORT || usize::from(len) != SIZEOF_CHECKPOINT {
        bad.push(format!("main data header {id}/{len}, not a short data header of {SIZEOF_CHECKPOINT} bytes"));
    } else if bad.is_empty() {
        // CheckPoint.redo is its first field; a payload that passed the CRC and names another redo than pg_control
        // means pg_control was written apart from this record
        let redo = u64_at(rec, 26).unwrap_or(0);
        if redo != c.redo.0 {
            bad.push(format!("its redo is {}, pg_control's is {}", Lsn(redo), c.redo));
        }
        if redo > c.checkpoint.0 {
            bad.push("its redo lies after the record (invalid redo in checkpoint record)".to_string());
        }
    }
    bad
}

/// The checkpoint record and the pages it lies on, when its segment is there and whole (else the caller already
/// reported it missing or short).
pub(super) fn checkpoint_record(pgdata: &Path, c: &ControlFile) -> Vec<ClusterFinding> {
    let (blcksz, seg_size) = (u64::from(c.xlog_blcksz), u64::from(c.xlog_seg_size));
    // implausible sizes are pg_control's own anomalies: nothing to read the WAL with
    let Some(magic) = xlog_page_magic(c.major_version) else { return Vec::new() };
    if !blcksz.is_power_of_two() || !(1024..=65536).contains(&blcksz) || seg_size < blcksz {
        return Vec::new();
    }
    let wal = Wal { pgdata, c, magic, blcksz, seg_size };
    let Some(path) = wal.path(c.checkpoint.0) else { return Vec::new() };
    let problems = match wal.record(c.checkpoint.0) {
        Ok(rec) => record_problems(&rec, c),
        Err(Stop::Page(f)) => return vec![f],
        Err(Stop::Record(why)) => vec![why],
    };
    if problems.is_empty() {
        return Vec::new();
    }
    let message = format!(
        "{path}: the checkpoint record at {} that pg_control names: {}; the server does not start",
        c.checkpoint,
        problems.join("; ")
    );
    vec![ClusterFinding { finding: Finding::new(Code::FileWalCheckpointRecord, None, None, message), path }]
}

#[cfg(test)]
mod tests {
    use super::super::testutil;
    use super::*;

    /// A segment of 1 MB whose checkpoint record at `at` may cross into the next page; returns (pgdata, control).
    fn cluster(at: u64) -> (testutil::Dir, ControlFile) {
        let dir = testutil::Dir::new();
        let mut c = testutil::control(15);
        c.xlog_seg_size = 1 << 20;
        c.xlog_blcksz = 8192;
        c.this_timeline_id = 1;
        c.system_identifier = 7;
        c.checkpoint = Lsn((1 << 20) + at);
        c.redo = Lsn((1 << 20) + 40);
        let mut seg = vec![0u8; 1 << 20];
        for p in 0..(1usize << 20) / 8192 {
            let b = &mut seg[p * 8192..];
            b[0..2].copy_from_slice(&0xD110u16.to_le_bytes());
            b[4..8].copy_from_slice(&1u32.to_le_bytes());
            b[8..16].copy_from_slice(&((1u64 << 20) + (p as u64) * 8192).to_le_bytes());
        }
        seg[2] = XLP_LONG_HEADER as u8;
        seg[24..32].copy_from_slice(&7u64.to_le_bytes());
        seg[32..36].copy_from_slice(&(1u32 << 20).to_le_bytes());
        seg[36..40].copy_from_slice(&8192u32.to_le_bytes());
        let mut rec = [0u8; CHECKPOINT_RECORD_LEN];
        rec[0..4].copy_from_slice(&(CHECKPOINT_RECORD_LEN as u32).to_le_bytes());
        rec[8..16].copy_from_slice(&((1u64 << 20) - 64).to_le_bytes());
        rec[24] = XLR_BLOCK_ID_DATA_SHORT;
        rec[25] = SIZEOF_CHECKPOINT as u8;
        rec[26..34].copy_from_slice(&c.redo.0.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&rec[24..]), &rec[..20]);
        rec[20..24].copy_from_slice(&crc.to_le_bytes());
        // lay the record out over pages as the server does: a continuation goes after the next page's header
        let (mut pos, mut done) = (at as usize, 0);
        while done < rec.len() {
            let take = (8192 - pos % 8192).min(rec.len() - done);
            seg[pos..pos + take].copy_from_slice(&rec[done..done + take]);
            done += take;
            if done < rec.len() {
                let page = pos - pos % 8192 + 8192;
                seg[page + 2] |= XLP_FIRST_IS_CONTRECORD as u8;
                seg[page + 16..page + 20].copy_from_slice(&((rec.len() - done) as u32).to_le_bytes());
                pos = page + SHORT_PHD;
            }
        }
        std::fs::create_dir_all(dir.path().join("pg_wal")).unwrap();
        std::fs::write(dir.path().join("pg_wal/000000010000000000000001"), &seg).unwrap();
        (dir, c)
    }

    fn codes(dir: &testutil::Dir, c: &ControlFile) -> Vec<(Code, String)> {
        checkpoint_record(dir.path(), c).into_iter().map(|f| (f.finding.code, f.finding.message)).collect()
    }

    #[test]
    fn a_sound_record_on_one_page_and_across_two() {
        for at in [40, 8192 * 3 + 8120] {
            let (dir, c) = cluster(at);
            assert!(codes(&dir, &c).is_empty(), "{at}: {:?}", codes(&dir, &c));
        }
    }

    #[test]
    fn damage_is_named() {
        let seg = |d: &testutil::Dir| d.path().join("pg_wal/000000010000000000000001");
        let flip = |d: &testutil::Dir, at: usize| {
            let mut b = std::fs::read(seg(d)).unwrap();
            b[at] ^= 0x40;
            std::fs::write(seg(d), b).unwrap();
        };
        let (dir, c) = cluster(8192 * 3 + 8120);
        flip(&dir, 8192 * 4 + SHORT_PHD + 10); // in the continuation: the CRC
        let found = codes(&dir, &c);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, Code::FileWalCheckpointRecord);
        assert!(found[0].1.contains("CRC mismatch") && found[0].1.contains("0/107FB8"), "{found:?}");
        let (dir, c) = cluster(8192 * 3 + 8120);
        flip(&dir, 8192 * 4 + 2); // an unknown xlp_info bit on the continuation page
        let found = codes(&dir, &c);
        assert_eq!(found[0].0, Code::FileWalPageHeader, "{found:?}");
        let (dir, c) = cluster(40);
        flip(&dir, 1); // the segment's magic
        let found = codes(&dir, &c);
        assert_eq!(found[0].0, Code::FileWalPageHeader);
        assert!(found[0].1.contains("xlp_magic"), "{found:?}");
        let (dir, mut c) = cluster(40);
        c.system_identifier = 8;
        assert!(codes(&dir, &c)[0].1.contains("xlp_sysid 7"));
        let (dir, mut c) = cluster(40);
        c.redo = Lsn(5);
        assert!(codes(&dir, &c)[0].1.contains("its redo is 0/100028"), "{:?}", codes(&dir, &c));
        let (dir, c) = cluster(40);
        std::fs::write(seg(&dir), [0u8; 100]).unwrap();
        assert_eq!(codes(&dir, &c)[0].0, Code::FileWalPageHeader);
    }
}
