//! What a manifest says, kept compactly: a first reading ([`Census`]) keeps only counts and the few top-level values,
//! so a manifest is judged (parsed whole, its checksum checked) in constant memory; the per-file table ([`Table`]) is
//! built by a second reading only once the first found the manifest sound and not larger than the backup warrants.
//! The table is one byte arena for paths and checksums and 24 bytes per file, sorted for lookup.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::parse::Sink;
use super::{is_incremental_name, Algorithm};

/// One WAL range the backup needs (`manifest_wal_range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WalRange {
    pub timeline: u32,
    pub start_lsn: u64,
    pub end_lsn: u64,
}

/// More WAL ranges than this is no manifest pg_basebackup wrote (one per timeline the backup crossed).
const MAX_WAL_RANGES: usize = 10_000;

/// The first reading: counts, no table.
#[derive(Debug, Clone, Default)]
pub struct Census {
    pub version: u32,
    pub system_identifier: Option<u64>,
    pub files: u64,
    pub incremental_files: u64,
    /// Bytes of the paths and checksums the table would hold.
    pub payload_bytes: u64,
    pub algorithms: Vec<Algorithm>,
    pub wal_ranges: Vec<WalRange>,
    /// A 64-bit hash of each path, so a path named twice is refused where pg_verifybackup refuses it (at the
    /// second, before anything later in the manifest), for 8 bytes a file rather than the path.
    path_hashes: HashSet<u64>,
}

impl Sink for Census {
    fn version(&mut self, version: u32) {
        self.version = version;
    }

    fn system_identifier(&mut self, id: u64) {
        self.system_identifier = Some(id);
    }

    fn file(&mut self, path: &[u8], _size: u64, algorithm: Algorithm, checksum: &[u8]) -> Result<(), String> {
        let mut h = DefaultHasher::new();
        path.hash(&mut h);
        if !self.path_hashes.insert(h.finish()) {
            return Err(format!("duplicate path name in backup manifest: \"{}\"", String::from_utf8_lossy(path)));
        }
        self.files += 1;
        self.payload_bytes += (path.len() + checksum.len()) as u64;
        if is_incremental_name(&String::from_utf8_lossy(path)) {
            self.incremental_files += 1;
        }
        if !self.algorithms.contains(&algorithm) {
            self.algorithms.push(algorithm);
        }
        Ok(())
    }

    fn wal_range(&mut self, timeline: u32, start_lsn: u64, end_lsn: u64) -> Result<(), String> {
        if self.wal_ranges.len() >= MAX_WAL_RANGES {
            return Err(format!("more than {MAX_WAL_RANGES} WAL ranges in backup manifest"));
        }
        self.wal_ranges.push(WalRange { timeline, start_lsn, end_lsn });
        Ok(())
    }
}

/// One file of the table (`manifest_file`): offsets into the arena.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    path_at: u32,
    path_len: u32,
    pub size: u64,
    sum_at: u32,
    sum_len: u8,
    pub algorithm: Algorithm,
    /// Seen in the backup (`matched`).
    pub matched: bool,
    /// Its size differs: its checksum is not computed (`bad`).
    pub bad: bool,
}

/// The per-file table, built by the second reading.
#[derive(Default)]
pub struct Table {
    arena: Vec<u8>,
    entries: Vec<Entry>,
}

impl Sink for Table {
    fn version(&mut self, _: u32) {}
    fn system_identifier(&mut self, _: u64) {}

    fn file(&mut self, path: &[u8], size: u64, algorithm: Algorithm, checksum: &[u8]) -> Result<(), String> {
        let too_big = || "backup manifest holds more than 4 GB of paths and checksums".to_string();
        let path_at = u32::try_from(self.arena.len()).map_err(|_| too_big())?;
        self.arena.extend_from_slice(path);
        let sum_at = u32::try_from(self.arena.len()).map_err(|_| too_big())?;
        // pg_checksum_final's longest is SHA-512's 64 bytes: a longer claimed checksum cannot match, keep 255
        let sum = &checksum[..checksum.len().min(255)];
        self.arena.extend_from_slice(sum);
        let path_len = u32::try_from(path.len()).map_err(|_| too_big())?;
        let sum_len = sum.len() as u8;
        self.entries.push(Entry { path_at, path_len, size, sum_at, sum_len, algorithm, matched: false, bad: false });
        Ok(())
    }

    fn wal_range(&mut self, _: u32, _: u64, _: u64) -> Result<(), String> {
        Ok(())
    }
}

impl Table {
    pub fn with_capacity(files: u64, payload_bytes: u64) -> Table {
        Table {
            arena: Vec::with_capacity(usize::try_from(payload_bytes).unwrap_or(0)),
            entries: Vec::with_capacity(usize::try_from(files).unwrap_or(0)),
        }
    }

    pub fn path(&self, e: &Entry) -> &[u8] {
        &self.arena[e.path_at as usize..(e.path_at as usize + e.path_len as usize)]
    }

    pub fn checksum(&self, e: &Entry) -> &[u8] {
        &self.arena[e.sum_at as usize..(e.sum_at as usize + usize::from(e.sum_len))]
    }

    /// Sort for lookup; the first path named twice, as pg_verifybackup's duplicate check refuses it.
    pub fn seal(&mut self) -> Result<(), String> {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| self.path(a).cmp(self.path(b)));
        let dup = entries.windows(2).find(|w| self.path(&w[0]) == self.path(&w[1]));
        if let Some(w) = dup {
            let p = String::from_utf8_lossy(self.path(&w[0])).into_owned();
            return Err(format!("duplicate path name in backup manifest: \"{p}\""));
        }
        self.entries = entries;
        Ok(())
    }

    pub fn find(&self, path: &str) -> Option<usize> {
        self.entries.binary_search_by(|e| self.path(e).cmp(path.as_bytes())).ok()
    }

    pub fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }

    pub fn entry_mut(&mut self, i: usize) -> &mut Entry {
        &mut self.entries[i]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
