//! Reading blocks of one relation fork from its segment files (`storage/smgr/md.c`'s numbering: block `b` is
//! block `b % RELSEG_SIZE` of segment `b / RELSEG_SIZE`), through the backup file system so a mounted backup
//! reads like a data directory. The row engine, the catalog and the index checks all read pages through here.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::sources::backup::vfs::VFile;

/// `BLCKSZ` and `RELSEG_SIZE` as PostgreSQL builds them by default (pg_config.h): what configurations that do
/// not name them assume.
pub(crate) fn default_blcksz() -> u32 {
    8192
}
pub(crate) fn default_relseg() -> u32 {
    131072
}

/// One segment file of a relation fork.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegFile {
    pub segno: u32,
    pub path: PathBuf,
}

/// Reads blocks of one relation fork from its segment files, opened once (read-only) and read with pread, so
/// threads share one reader.
#[derive(Debug, Clone)]
pub struct BlockReader {
    segments: HashMap<u32, PathBuf>,
    open: std::sync::Arc<std::sync::Mutex<HashMap<u32, std::sync::Arc<VFile>>>>,
    blcksz: usize,
    relseg_size: u64,
}

impl BlockReader {
    pub fn new(segments: &[SegFile], blcksz: u32, relseg_size: u32) -> BlockReader {
        BlockReader {
            segments: segments.iter().map(|s| (s.segno, s.path.clone())).collect(),
            open: Default::default(),
            blcksz: blcksz as usize,
            relseg_size: u64::from(relseg_size.max(1)),
        }
    }

    fn file(&self, segno: u32) -> std::io::Result<Option<std::sync::Arc<VFile>>> {
        let Some(path) = self.segments.get(&segno) else { return Ok(None) };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = open.get(&segno) {
            return Ok(Some(f.clone()));
        }
        let f = std::sync::Arc::new(VFile::open(path)?);
        open.insert(segno, f.clone());
        Ok(Some(f))
    }

    /// Blocks `first..first + count` (fewer when the relation ends): the bytes read, which may
    /// end inside a page.
    pub fn read(&self, first: u64, count: u64) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(first, count, &mut out)?;
        Ok(out)
    }

    /// Like [`BlockReader::read`], into `out` (its contents replaced, its allocation reused).
    pub fn read_into(&self, first: u64, count: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        out.resize((count as usize) * self.blcksz, 0);
        let mut filled = 0usize;
        let mut block = first;
        let end = first + count;
        while block < end {
            let segno = (block / self.relseg_size) as u32;
            let in_seg = block % self.relseg_size;
            let n = (end - block).min(self.relseg_size - in_seg);
            let Some(f) = self.file(segno)? else { break };
            let want = n as usize * self.blcksz;
            let mut got = 0usize;
            while got < want {
                let r = f.read_at(&mut out[filled + got..filled + want], in_seg * self.blcksz as u64 + got as u64)?;
                if r == 0 {
                    break;
                }
                got += r;
            }
            filled += got;
            if got < want {
                break;
            }
            block += n;
        }
        out.truncate(filled);
        Ok(())
    }

    /// The relation's length in blocks as its files are now (the highest segment's size counts; a segment that
    /// cannot be read counts as empty).
    pub fn nblocks_now(&self) -> u64 {
        self.segments
            .keys()
            .filter_map(|&segno| {
                let size = self.file(segno).ok().flatten()?.size().ok()?;
                Some(u64::from(segno) * self.relseg_size + size / self.blcksz as u64)
            })
            .max()
            .unwrap_or(0)
    }
}
