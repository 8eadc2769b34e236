//! `pg_commit_ts` (access/transam/commit_ts.c): the commit time of each transaction, kept when
//! `track_commit_timestamp` is on. Entries are `SizeOfCommitTimestampEntry` = 10 bytes (a TimestampTz and a
//! RepOriginId), `COMMIT_TS_XACTS_PER_PAGE` = BLCKSZ / 10 to a page, pages grouped in SLRU segments. A zero time
//! means none was recorded.

use std::path::Path;

use crate::visibility::slru::SlruDir;

/// `SizeOfCommitTimestampEntry` (commit_ts.c).
pub const SIZE_OF_COMMIT_TIMESTAMP_ENTRY: u32 = 10;

#[derive(Debug)]
pub struct CommitTs {
    slru: SlruDir,
    per_page: u32,
}

impl CommitTs {
    /// `<pgdata>/pg_commit_ts`, when it holds any segment.
    pub fn open(pgdata: &Path, blcksz: u32) -> Option<CommitTs> {
        let dir = pgdata.join("pg_commit_ts");
        let any = std::fs::read_dir(&dir).ok()?.flatten().any(|e| e.file_type().is_ok_and(|t| t.is_file()));
        any.then(|| CommitTs { slru: SlruDir::new(&dir, blcksz), per_page: blcksz / SIZE_OF_COMMIT_TIMESTAMP_ENTRY })
    }

    /// Commit time of `xid` in microseconds since 2000-01-01 (TimestampTz), when recorded.
    pub fn time(&self, xid: u32) -> Option<i64> {
        if xid < 3 || self.per_page == 0 {
            return None;
        }
        let page = xid / self.per_page;
        let at = (xid % self.per_page) * SIZE_OF_COMMIT_TIMESTAMP_ENTRY;
        let lo = self.slru.u32(page, at)?;
        let hi = self.slru.u32(page, at + 4)?;
        let t = (i64::from(hi) << 32) | i64::from(lo);
        (t != 0).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entries() {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-cts-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pg_commit_ts")).unwrap();
        let mut seg = vec![0u8; 8192 * 32];
        let per_page = 8192 / 10;
        let xid = per_page + 5; // page 1, entry 5
        let at = 8192 + 5 * 10;
        seg[at..at + 8].copy_from_slice(&123_456_789i64.to_le_bytes());
        std::fs::write(dir.join("pg_commit_ts").join("0000"), &seg).unwrap();
        let c = CommitTs::open(&dir, 8192).unwrap();
        assert_eq!(c.time(xid), Some(123_456_789));
        assert_eq!(c.time(xid + 1), None);
        assert_eq!(c.time(per_page * 32 * 3), None); // segment not on disk
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
