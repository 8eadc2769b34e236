//! Read-only access to one SLRU directory of a data directory (`access/transam/slru.c`):
//! `pg_xact`, `pg_subtrans`, `pg_multixact/offsets`, `pg_multixact/members`.
//!
//! An SLRU is a sequence of BLCKSZ pages stored `SLRU_PAGES_PER_SEGMENT` to a segment file whose
//! name is the segment number in hex: at least four digits (`%04X`) for the short names all of
//! the above use up to PostgreSQL 18, fifteen digits (`%015llX`) for the long names `slru.c`
//! offers since 17. Both are tried. Segment files are read whole on first use and kept; a page
//! the file does not (yet) hold reads as absent, never as zeroes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::format::bytes::u32_at;

/// `SLRU_PAGES_PER_SEGMENT` (access/slru.h).
pub const SLRU_PAGES_PER_SEGMENT: u32 = 32;

/// One SLRU directory, read lazily; shareable between threads.
#[derive(Debug)]
pub struct SlruDir {
    dir: PathBuf,
    blcksz: u32,
    segments: RwLock<HashMap<u32, Option<Arc<Vec<u8>>>>>,
}

impl SlruDir {
    pub fn new(dir: &Path, blcksz: u32) -> SlruDir {
        SlruDir { dir: dir.to_path_buf(), blcksz: blcksz.max(1024), segments: RwLock::new(HashMap::new()) }
    }

    pub fn blcksz(&self) -> u32 {
        self.blcksz
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn segment(&self, segno: u32) -> Option<Arc<Vec<u8>>> {
        if let Some(seg) = self.segments.read().unwrap_or_else(|e| e.into_inner()).get(&segno) {
            return seg.clone();
        }
        let mut map = self.segments.write().unwrap_or_else(|e| e.into_inner());
        map.entry(segno)
            .or_insert_with(|| {
                crate::sources::backup::vfs::read(&self.dir.join(format!("{segno:04X}")))
                    .or_else(|_| crate::sources::backup::vfs::read(&self.dir.join(format!("{segno:015X}"))))
                    .ok()
                    .map(Arc::new)
            })
            .clone()
    }

    /// The byte at `byte` of page `pageno`; `None` when that page is not on disk.
    pub fn byte(&self, pageno: u32, byte: u32) -> Option<u8> {
        let seg = self.segment(pageno / SLRU_PAGES_PER_SEGMENT)?;
        let at = (pageno % SLRU_PAGES_PER_SEGMENT) as usize * self.blcksz as usize + byte as usize;
        seg.get(at).copied()
    }

    /// The little-endian u32 at `byte` of page `pageno`; `None` when that page is not on disk.
    pub fn u32(&self, pageno: u32, byte: u32) -> Option<u32> {
        let seg = self.segment(pageno / SLRU_PAGES_PER_SEGMENT)?;
        let at = (pageno % SLRU_PAGES_PER_SEGMENT) as usize * self.blcksz as usize + byte as usize;
        u32_at(&seg, at)
    }
}

/// `pg_subtrans` (access/transam/subtrans.c): the parent XID of each subtransaction, one
/// TransactionId per XID, `BLCKSZ / 4` to a page. 0 means no parent recorded. Not crash-safe:
/// PostgreSQL zeroes it at startup, so only a running (or not restarted) cluster's file helps.
#[derive(Debug)]
pub struct SubTrans {
    slru: SlruDir,
}

impl SubTrans {
    pub fn new(dir: &Path, blcksz: u32) -> SubTrans {
        SubTrans { slru: SlruDir::new(dir, blcksz) }
    }

    /// `SubTransGetParent`: the recorded parent, `None` when the page is absent or holds 0.
    pub fn parent(&self, xid: u32) -> Option<u32> {
        // SUBTRANS_XACTS_PER_PAGE = BLCKSZ / sizeof(TransactionId) (subtrans.c)
        let per_page = self.slru.blcksz() / 4;
        let p = self.slru.u32(xid / per_page, (xid % per_page) * 4)?;
        (p != 0).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_segment_names() {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-slru-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut seg = vec![0u8; 1024 * 32];
        seg[1024 * 3 + 8..1024 * 3 + 12].copy_from_slice(&77u32.to_le_bytes());
        std::fs::write(dir.join("0001"), &seg).unwrap();
        std::fs::write(dir.join(format!("{:015X}", 0x12345)), &seg).unwrap();
        let s = SlruDir::new(&dir, 1024);
        assert_eq!(s.u32(32 + 3, 8), Some(77));
        assert_eq!(s.u32(0x12345 * 32 + 3, 8), Some(77));
        assert_eq!(s.u32(3, 8), None, "segment 0 is not there");
        assert_eq!(s.byte(32 + 31, 1023), Some(0));
        assert_eq!(s.byte(32 + 32, 0), None);
        let st = SubTrans::new(&dir, 1024);
        // page 35 entry 2 -> xid 35 * 256 + 2
        assert_eq!(st.parent(35 * 256 + 2), Some(77));
        assert_eq!(st.parent(35 * 256 + 3), None);
        std::fs::remove_dir_all(&dir).ok();
    }
}
