//! Offline scan of relation files: every page of every fork through the page checks, in parallel,
//! plus what needs more than one page (zeroed pages with evidence that rows were there, btree
//! sibling links, segment gaps). Findings come back as data with their file context.
//!
//! Work is split into chunks of consecutive blocks of one segment file; rayon spreads the chunks
//! over the threads. Each chunk returns its findings and a small summary of the pages that matter
//! to relation-wide checks, which run once every chunk is in.
//!
//! The parts: `unit` reads and checks one chunk, `pool` cuts the relation list into chunks and runs them,
//! `relation` holds the relation-wide checks, `result` puts the result together; `heapmap` keeps a heap's line
//! pointers for the index TID checks and `fsm` reads the free space map past a fork's end.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::finding::Finding;
use crate::sources::relfile::Relation;
use crate::sources::relpath::Fork;
use crate::visibility::transam::Horizons;

mod bookkeeping;
mod crosspage;
mod fsm;
mod gin;
mod gist;
mod hashbrin;
mod heapmap;
mod maps;
mod pool;
mod relation;
mod result;
mod unit;

pub use crosspage::CrossPages;
pub use fsm::{fsm_beyond_end, fsm_blocks_beyond_end, fsm_leaf_beyond_end};
pub(crate) use heapmap::{for_each_index_tid, for_each_leaf_tid, HeapMap, LpRun, TidTarget};
use pool::scan_on_pool;

/// Blocks read per work unit (2 MB with 8 KB pages): large sequential reads, many units to share.
pub const DEFAULT_CHUNK_BLOCKS: u32 = 256;

/// What the caller knows about a relation beyond its files (from the catalog, via a DSN).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelMeta {
    /// Page kind of the main fork (from pg_am): "heap", "btree", …; guessed per page when absent.
    pub kind: Option<String>,
    /// Attribute count of the relation (pg_class.relnatts), for heaps.
    pub natts: Option<u16>,
    /// For an index: its table's file key. The heap TIDs of the kinds that carry them (not BRIN) are checked against
    /// that heap's line pointers.
    #[serde(default)]
    pub heap: Option<RelKey>,
    /// For a single-column GIN index whose opclass compares a plain type: "int4" or "bytes"
    /// ([`crate::checks::page::gin::GinKeyKind`]); its entry keys' order is checked then.
    #[serde(default)]
    pub gin_key: Option<String>,
    /// For a table: its columns, so each tuple's attributes can be walked.
    #[serde(default)]
    pub desc: Option<crate::format::tuple::RelDesc>,
    /// For a table whose columns are in the data directory's own catalog: (database OID, relation OID), for the
    /// caller to fill `desc` from it ([`crate::catalog::ClusterFiles::table_desc`]) before the scan.
    #[serde(default)]
    pub desc_in_catalog: Option<(u32, u32)>,
    /// For a table with a TOAST table: that table's file key, to check every pointer's chunks.
    #[serde(default)]
    pub toast: Option<RelKey>,
    /// For a TOAST table: its name (pg_toast_N), as the server names it in errors.
    #[serde(default)]
    pub toast_name: Option<String>,
}

/// (tablespace oid, database oid, relfilenode).
pub type RelKey = (u32, u32, u32);

fn key_of(r: &Relation) -> RelKey {
    (r.tablespace_oid, r.database_oid, r.relfilenode)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanOptions {
    /// Whether the cluster has data checksums (resolved by the caller from pg_control or a flag).
    pub checksums: bool,
    pub blcksz: u32,
    pub relseg_size: u32,
    /// XID/MultiXact horizons from pg_control; tuple XID checks are skipped without them.
    pub horizons: Option<Horizons>,
    /// When the cluster was shut down cleanly: the shutdown checkpoint's location. No page may
    /// carry a newer LSN.
    pub clean_shutdown_lsn: Option<u64>,
    /// Scanning a running server's files: pages newer than this redo LSN are skipped (they may be
    /// mid-write), and checksum mismatches are re-read before they are reported.
    pub live_redo_lsn: Option<u64>,
    /// Catalog knowledge per relation, when a DSN was given.
    #[serde(default)]
    pub relations: Vec<(RelKey, RelMeta)>,
    /// Blocks per work unit.
    pub chunk_blocks: u32,
    /// Worker threads; all cores when absent.
    #[serde(default)]
    pub jobs: Option<usize>,
    /// TOAST_MAX_CHUNK_SIZE from pg_control.
    #[serde(default = "default_toast_chunk")]
    pub toast_max_chunk_size: u32,
    /// Scanning a base backup: backup_label's START WAL LOCATION. A page with a newer LSN was written while the
    /// backup copied it, may be torn in the copy, and is rewritten by WAL replay (full-page image): not damage,
    /// noted as information and not checked.
    #[serde(default)]
    pub backup_start_lsn: Option<u64>,
    /// Count storage-health figures too ([`crate::health`]), with the definitions of this server major version.
    #[serde(default)]
    pub health_major: Option<u32>,
    /// Check the pages for damage (the default). Off, a scan only counts its health figures: as fast as the pages
    /// can be read, and nothing said about damage.
    #[serde(default = "yes")]
    pub checks: bool,
    /// Judge heap tuples against the data directory's pg_xact and pg_multixact too (a whole cluster scanned): rows
    /// whose status is not on disk, hint bits that contradict pg_xact.
    #[serde(default)]
    pub bookkeeping: bool,
}

impl ScanOptions {
    /// The newest LSN a page may carry to be judged: a live scan's redo point, a base backup's start. A newer page
    /// changed while it was read (or copied); every check of another page skips its pairs with it.
    pub(crate) fn judged_up_to(&self) -> Option<u64> {
        self.live_redo_lsn.or(self.backup_start_lsn)
    }
}

fn yes() -> bool {
    true
}

fn default_toast_chunk() -> u32 {
    crate::format::toast::TOAST_MAX_CHUNK_SIZE_8K
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            checksums: false,
            blcksz: 8192,
            relseg_size: 131072,
            horizons: None,
            clean_shutdown_lsn: None,
            live_redo_lsn: None,
            relations: Vec::new(),
            chunk_blocks: DEFAULT_CHUNK_BLOCKS,
            jobs: None,
            toast_max_chunk_size: default_toast_chunk(),
            backup_start_lsn: None,
            health_major: None,
            checks: true,
            bookkeeping: false,
        }
    }
}

/// A finding with the file it was found in.
#[derive(Debug, Clone, Serialize)]
pub struct FileFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// Path of the segment file, relative to the data directory.
    pub path: String,
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub fork: Fork,
}

/// Counters shared with a progress display while the scan runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub pages_done: AtomicU64,
    pub cancelled: AtomicBool,
    /// The chunks of main forks checked so far and not yet taken (the tables' in the first phase, the indexes checked
    /// against a table's line pointers in the second): diagnose starts the server's checks of a table's blocks, and of
    /// a GIN index whose every page is checked, as the scan goes, on what its files vouched for (the server never
    /// reads a page before the core has).
    pub checked: std::sync::Mutex<Vec<CheckedChunk>>,
    /// Someone takes [`Progress::checked`]: only then are chunks kept there (a scan nobody asks grows no list).
    pub checked_wanted: AtomicBool,
}

/// Blocks `first..first + count` of a main fork, every page through the page checks: the blocks with a finding on
/// their page and those a live scan skipped (written since its redo point: not checked yet).
#[derive(Debug, Clone, Serialize)]
pub struct CheckedChunk {
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub first: u64,
    pub count: u64,
    pub blocks_found: Vec<u64>,
    pub blocks_skipped: Vec<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ScanSummary {
    pub files: u64,
    pub relations: u64,
    pub blocks: u64,
    pub bytes: u64,
    /// All-zero pages seen (valid to the server; flagged only with evidence of lost rows).
    pub zero_pages: u64,
    /// Of those, the ones before in-use pages of their relation: normal after concurrent relation
    /// extension, lost rows when something else says rows were there.
    pub zero_pages_inside: u64,
    /// Pages skipped in a live scan because they changed after the scan began.
    pub skipped_live: u64,
    /// Pages of a base backup newer than its start (replay rewrites them): information, not checked.
    pub after_backup_start: u64,
    pub findings: u64,
    pub errors: u64,
    pub warnings: u64,
    /// Heap pages whose free space map leaf records more free space than the page has: the map is a hint, updated
    /// lazily, and the server corrects such a leaf when an insert meets it. Information, not damage.
    pub fsm_stale_leaves: u64,
    /// Slots of upper free space map pages that differ from the page below them: brought up to date by VACUUM
    /// (FreeSpaceMapVacuum), corrected by searches meanwhile. Information, not damage.
    pub fsm_stale_upper: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScanResult {
    pub summary: ScanSummary,
    pub findings: Vec<FileFinding>,
    /// Runs of blocks a live scan skipped (written after its redo point): the server's copy is the one to check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRange>,
    /// The first [`MAX_NOTES`] pages newer than a backup's start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_backup_start: Vec<PageNote>,
    /// With [`ScanOptions::health_major`]: each main fork's storage-health figures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<crate::health::RelationHealth>,
    /// The tables with all-zero pages before in-use pages and nothing that names rows there (the first
    /// [`MAX_NOTES`] tables): no finding, since concurrent inserts leave such pages in healthy tables, but the one
    /// lead to rows lost from a table that has no usable index and no all-visible bit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zero_inside: Vec<ZeroPagesNote>,
}

/// The all-zero pages before in-use pages of one table's main fork ([`ScanResult::zero_inside`]).
#[derive(Debug, Clone, Serialize)]
pub struct ZeroPagesNote {
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    /// The first segment's path, as findings name files.
    pub path: String,
    /// How many such pages the table has.
    pub count: u64,
    /// The first [`ZERO_BLOCKS_LISTED`] of them.
    pub blocks: Vec<u64>,
}

/// Blocks listed per table in a [`ZeroPagesNote`]; `count` says how many there are.
pub const ZERO_BLOCKS_LISTED: usize = 16;

/// Pages listed one by one in [`ScanResult::after_backup_start`]; the summary counts them all.
pub const MAX_NOTES: usize = 1000;

/// A page worth mentioning that is not damage.
#[derive(Debug, Clone, Serialize)]
pub struct PageNote {
    pub path: String,
    pub block: u64,
    pub lsn: String,
}

/// Blocks `first..=last` of one relation fork that a live scan did not check.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedRange {
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    pub fork: Fork,
    pub first: u64,
    pub last: u64,
}

/// Scan `relations` (from [`crate::sources::relfile::discover`] or built from explicit files) under `root`,
/// on `opts.jobs` threads (all cores by default).
pub fn scan(root: &Path, relations: &[Relation], opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    match opts.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| CoreError::Invalid(format!("cannot start {n} scan threads: {e}")))?
            .install(|| scan_on_pool(root, relations, opts, progress)),
        None => scan_on_pool(root, relations, opts, progress),
    }
}

/// The relations to scan when the caller names files instead of a data directory: each path is
/// grouped with the other segments of its fork found next to it.
pub fn relations_for_files(root: &Path, files: &[PathBuf]) -> Result<Vec<Relation>> {
    let all = crate::sources::relfile::discover(root)?;
    let mut wanted = Vec::new();
    for file in files {
        let rel_path = file.strip_prefix(root).unwrap_or(file);
        let text = rel_path.to_string_lossy().replace('\\', "/");
        let hit = all.iter().find(|r| r.segments.iter().any(|s| s.path == text) || r.path == text);
        match hit {
            Some(r) => {
                if !wanted.iter().any(|w: &Relation| w.path == r.path) {
                    wanted.push(r.clone());
                }
            }
            None => {
                return Err(CoreError::Invalid(format!("{} is not a relation file under {}", text, root.display())))
            }
        }
    }
    Ok(wanted)
}

/// Keep the relations of the given databases (OIDs; shared catalogs count as database 0) and
/// relfilenodes; an empty filter keeps everything.
pub fn filter_relations(relations: Vec<Relation>, databases: &[u32], relfilenodes: &[u32]) -> Vec<Relation> {
    relations
        .into_iter()
        .filter(|r| databases.is_empty() || databases.contains(&r.database_oid))
        .filter(|r| relfilenodes.is_empty() || relfilenodes.contains(&r.relfilenode))
        .collect()
}
