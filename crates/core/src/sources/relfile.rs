//! Relation files in a data directory: discovery and segment-level sanity. Their names are built and
//! parsed in relpath.rs.
//!
//! File names follow `GetRelationPath` (`src/common/relpath.c`):
//!
//! * shared catalogs: `global/<relfilenode>[_<fork>][.<segno>]` (tablespace pg_global, database 0)
//! * default tablespace: `base/<dboid>/<relfilenode>[_<fork>][.<segno>]`
//! * other tablespaces: `pg_tblspc/<spcoid>/PG_<major>_<catversion>/<dboid>/…` where
//!   `pg_tblspc/<spcoid>` is a symlink (or a directory for in-place tablespaces)
//! * temporary relations: the same directories, file `t<backend>_<relfilenode>[_<fork>][.<segno>]`
//!
//! Segment 0 has no suffix; segment *n* is `.n` (`src/backend/storage/smgr/md.c`). Every segment but
//! the last active one holds exactly `relseg_size` blocks; after a truncation, md.c leaves later
//! segments in place at length zero ("inactive"), so empty trailing segments are normal.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::error::{CoreError, Result};
use crate::sources::backup::vfs;
use crate::sources::relpath::{
    parse_number, parse_relation_file_name, Fork, DEFAULTTABLESPACE_OID, GLOBALTABLESPACE_OID, PG_TBLSPC_DIR,
};

/// One segment file of one fork of one relation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelationFile {
    /// Path relative to the data directory, `/`-separated (`base/5/16384.1`).
    pub path: String,
    /// Tablespace OID: 1663 pg_default, 1664 pg_global, or the `pg_tblspc` link's name.
    pub tablespace_oid: u32,
    /// Database OID (0 for shared relations in `global/`).
    pub database_oid: u32,
    /// Relfilenode (file number).
    pub relfilenode: u32,
    /// Fork.
    pub fork: Fork,
    /// Segment number.
    pub segno: u32,
    /// File size in bytes.
    pub size: u64,
    /// True for a temporary relation's file (`t<backend>_…`).
    pub temp: bool,
    /// Backend/proc number of a temporary relation.
    pub temp_backend: Option<u32>,
}

/// All segments of one fork of one relation, sorted by `segno`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Relation {
    /// Path of segment 0 (whether or not it exists): what identifies the fork on disk.
    pub path: String,
    /// Tablespace OID.
    pub tablespace_oid: u32,
    /// Database OID (0 for shared relations).
    pub database_oid: u32,
    /// Relfilenode.
    pub relfilenode: u32,
    /// Fork.
    pub fork: Fork,
    /// True for a temporary relation.
    pub temp: bool,
    /// Backend/proc number of a temporary relation.
    pub temp_backend: Option<u32>,
    /// Segment files present, ascending by segment number.
    pub segments: Vec<RelationFile>,
}

impl Relation {
    /// Sum of the segment sizes in bytes.
    pub fn total_size(&self) -> u64 {
        self.segments.iter().map(|s| s.size).sum()
    }

    /// Number of blocks PostgreSQL would see (`mdnblocks`): full segments are counted while they
    /// are consecutive from 0; the first segment that is short (or missing) ends the fork.
    pub fn md_nblocks(&self, blcksz: u32, relseg_size: u32) -> u64 {
        if blcksz == 0 {
            return 0;
        }
        let mut blocks = 0u64;
        for (expected, seg) in (0u32..).zip(&self.segments) {
            if seg.segno != expected {
                break;
            }
            let seg_blocks = seg.size / u64::from(blcksz);
            blocks += seg_blocks;
            if seg_blocks < u64::from(relseg_size) {
                break;
            }
        }
        blocks
    }

    /// Segment-level problems of this fork; see [`segment_problems`].
    pub fn segment_problems(&self, blcksz: u32, relseg_size: u32) -> Vec<SegmentProblem> {
        let mut out = Vec::new();
        let segment_bytes = u64::from(relseg_size) * u64::from(blcksz);
        let max_segno = self.segments.last().map_or(0, |s| s.segno);
        let present: Vec<u32> = self.segments.iter().map(|s| s.segno).collect();

        // Gaps: every number below the highest present segment must exist.
        let mut next = 0u32;
        for &segno in &present {
            if segno > next {
                let data_after = self.segments.iter().any(|s| s.segno > next && s.size > 0);
                for missing in next..segno {
                    out.push(SegmentProblem {
                        kind: SegmentProblemKind::MissingSegment,
                        path: self.segment_path(missing),
                        detail: format!(
                            "segment {missing} is missing but segment {max_segno} exists{}",
                            if data_after {
                                " and later segments hold data"
                            } else {
                                " (later segments are all empty)"
                            }
                        ),
                    });
                }
            }
            next = segno.saturating_add(1);
        }

        for (i, seg) in self.segments.iter().enumerate() {
            if blcksz > 0 && seg.size % u64::from(blcksz) != 0 {
                out.push(SegmentProblem {
                    kind: SegmentProblemKind::PartialPage,
                    path: seg.path.clone(),
                    detail: format!(
                        "size {} is not a multiple of the {blcksz}-byte block size ({} trailing bytes)",
                        seg.size,
                        seg.size % u64::from(blcksz)
                    ),
                });
            }
            if segment_bytes == 0 {
                continue;
            }
            if seg.size > segment_bytes {
                out.push(SegmentProblem {
                    kind: SegmentProblemKind::OversizedSegment,
                    path: seg.path.clone(),
                    detail: format!(
                        "size {} exceeds a full segment ({relseg_size} blocks = {segment_bytes} bytes); \
                         blocks past the segment end are never read",
                        seg.size
                    ),
                });
            }
            // A short segment is fine if it is the last one holding data: zero-length segments
            // after it are md.c's inactive leftovers of a truncation.
            if seg.size < segment_bytes {
                if let Some(later) = self.segments[i + 1..].iter().find(|s| s.size > 0) {
                    let blocks = if blcksz > 0 { seg.size / u64::from(blcksz) } else { 0 };
                    out.push(SegmentProblem {
                        kind: SegmentProblemKind::ShortSegment,
                        path: seg.path.clone(),
                        detail: format!(
                            "segment {} has only {blocks} of {relseg_size} blocks but segment {} \
                             holds {} bytes; PostgreSQL cannot reach blocks beyond the short segment",
                            seg.segno, later.segno, later.size
                        ),
                    });
                }
            }
        }
        out
    }

    /// Path of segment `segno` of this fork (present or not).
    pub fn segment_path(&self, segno: u32) -> String {
        if segno == 0 {
            self.path.clone()
        } else {
            format!("{}.{segno}", self.path)
        }
    }
}

/// What is wrong with a fork's set of segment files, judged from names and sizes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentProblemKind {
    /// A segment number below the highest present one has no file.
    MissingSegment,
    /// A segment shorter than `relseg_size` blocks is followed by a segment holding data.
    ShortSegment,
    /// A segment larger than `relseg_size` blocks.
    OversizedSegment,
    /// A size that is not a whole number of blocks (a torn trailing page).
    PartialPage,
}

/// One segment-level problem; `path` is relative to the data directory (for a missing segment,
/// the path it should have).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentProblem {
    /// What kind of problem.
    pub kind: SegmentProblemKind,
    /// File concerned.
    pub path: String,
    /// One sentence with the numbers.
    pub detail: String,
}

/// Segment-level problems of all given forks, without reading any page: gaps in segment numbers,
/// short non-last segments (when a later one holds data), oversized segments, sizes that are not
/// whole blocks. `blcksz` and `relseg_size` come from pg_control; a zero disables the checks that
/// need it.
pub fn segment_problems(relations: &[Relation], blcksz: u32, relseg_size: u32) -> Vec<SegmentProblem> {
    relations.iter().flat_map(|r| r.segment_problems(blcksz, relseg_size)).collect()
}

/// Where a directory of relation files sits.
struct DirContext<'a> {
    rel_dir: &'a str,
    tablespace_oid: u32,
    database_oid: u32,
    allow_temp: bool,
}

fn io_err(path: &Path, err: io::Error) -> CoreError {
    CoreError::io(path, err)
}

/// Directory entries as (name, path) sorted by name; `Ok(None)` if the directory does not exist.
fn list_dir(dir: &Path) -> Result<Option<Vec<(String, std::path::PathBuf)>>> {
    let entries = match vfs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(dir, e)),
    };
    // Names that are not UTF-8 cannot be relation files (vfs::read_dir leaves them out).
    let mut out = entries;
    out.sort();
    Ok(Some(out))
}

/// Metadata following symlinks; `None` for dangling links and vanished entries.
fn stat(path: &Path) -> Result<Option<vfs::Meta>> {
    match vfs::metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, e)),
    }
}

fn scan_relation_dir(dir: &Path, ctx: &DirContext<'_>, out: &mut Vec<RelationFile>) -> Result<()> {
    let Some(entries) = list_dir(dir)? else {
        return Ok(());
    };
    for (name, path) in entries {
        let Some(parsed) = parse_relation_file_name(&name) else {
            continue;
        };
        if parsed.temp_backend.is_some() && !ctx.allow_temp {
            continue;
        }
        let Some(meta) = stat(&path)? else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        out.push(RelationFile {
            path: format!("{}/{name}", ctx.rel_dir),
            tablespace_oid: ctx.tablespace_oid,
            database_oid: ctx.database_oid,
            relfilenode: parsed.relfilenode,
            fork: parsed.fork,
            segno: parsed.segno,
            size: meta.len(),
            temp: parsed.temp_backend.is_some(),
            temp_backend: parsed.temp_backend,
        });
    }
    Ok(())
}

/// Scans `<parent>/<dboid>/` database directories (numeric names only; `pgsql_tmp` and the like
/// are skipped).
fn scan_database_dirs(parent: &Path, rel_parent: &str, tablespace_oid: u32, out: &mut Vec<RelationFile>) -> Result<()> {
    let Some(entries) = list_dir(parent)? else {
        return Ok(());
    };
    for (name, path) in entries {
        let Some(database_oid) = parse_number(&name) else {
            continue;
        };
        if !stat(&path)?.is_some_and(|m| m.is_dir()) {
            continue;
        }
        let rel_dir = format!("{rel_parent}/{name}");
        let ctx = DirContext { rel_dir: &rel_dir, tablespace_oid, database_oid, allow_temp: true };
        scan_relation_dir(&path, &ctx, out)?;
    }
    Ok(())
}

/// True for `PG_<digits>_<digits>`, and, when the cluster's major is known, only that major's.
fn is_version_dir(name: &str, major: Option<u32>) -> bool {
    let Some(rest) = name.strip_prefix("PG_") else {
        return false;
    };
    let Some((maj, cat)) = rest.split_once('_') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(maj) || !digits(cat) {
        return false;
    }
    match major {
        Some(m) => maj.parse::<u32>().ok() == Some(m),
        None => true,
    }
}

/// Finds every relation segment file of a data directory: `global/`, `base/<db>/` and
/// `pg_tblspc/<spc>/PG_<major>_<catversion>/<db>/` (links followed). Files that do not match the
/// naming grammar (maps, `PG_VERSION`, `pg_internal.init`, `*.tmp`, `pgsql_tmp/`, strays) are
/// ignored. When `PG_VERSION` is readable only that major's tablespace subdirectories are used,
/// so the leftovers of an old major after pg_upgrade are not mixed in.
///
/// Output is deterministic: relations sorted by (tablespace, database, relfilenode, fork, temp
/// backend, path), segments by number. A missing `base/`, `global/` or `pg_tblspc/` and dangling
/// tablespace links are skipped; other I/O errors are returned.
pub fn discover(pgdata: &Path) -> Result<Vec<Relation>> {
    // An unreadable data directory is an error, not an empty cluster.
    vfs::read_dir(pgdata).map_err(|e| io_err(pgdata, e))?;
    let major = vfs::read_to_string(&pgdata.join("PG_VERSION")).ok().and_then(|s| s.trim().parse::<u32>().ok());

    let mut files = Vec::new();
    scan_relation_dir(
        &pgdata.join("global"),
        &DirContext {
            rel_dir: "global",
            tablespace_oid: GLOBALTABLESPACE_OID,
            database_oid: 0,
            // Temporary relations never live in pg_global.
            allow_temp: false,
        },
        &mut files,
    )?;
    scan_database_dirs(&pgdata.join("base"), "base", DEFAULTTABLESPACE_OID, &mut files)?;
    let tblspc = pgdata.join(PG_TBLSPC_DIR);
    if let Some(links) = list_dir(&tblspc)? {
        for (name, link) in links {
            let Some(spc) = parse_number(&name) else {
                continue;
            };
            if !stat(&link)?.is_some_and(|m| m.is_dir()) {
                continue;
            }
            let Some(version_dirs) = list_dir(&link)? else {
                continue;
            };
            for (vname, vpath) in version_dirs {
                if !is_version_dir(&vname, major) {
                    continue;
                }
                let rel_parent = format!("{PG_TBLSPC_DIR}/{name}/{vname}");
                scan_database_dirs(&vpath, &rel_parent, spc, &mut files)?;
            }
        }
    }
    Ok(group(files))
}

/// Groups segment files into forks, sorted.
pub fn group(files: Vec<RelationFile>) -> Vec<Relation> {
    type Key = (u32, u32, u32, Fork, Option<u32>, String);
    let mut groups: BTreeMap<Key, Relation> = BTreeMap::new();
    for file in files {
        let base = segment_zero_path(&file.path, file.segno);
        let key =
            (file.tablespace_oid, file.database_oid, file.relfilenode, file.fork, file.temp_backend, base.clone());
        groups
            .entry(key)
            .or_insert_with(|| Relation {
                path: base,
                tablespace_oid: file.tablespace_oid,
                database_oid: file.database_oid,
                relfilenode: file.relfilenode,
                fork: file.fork,
                temp: file.temp,
                temp_backend: file.temp_backend,
                segments: Vec::new(),
            })
            .segments
            .push(file);
    }
    groups
        .into_values()
        .map(|mut r| {
            r.segments.sort_by_key(|s| s.segno);
            r
        })
        .collect()
}

/// Strips a `.N` suffix for segment N > 0.
fn segment_zero_path(path: &str, segno: u32) -> String {
    if segno == 0 {
        return path.to_string();
    }
    let suffix = format!(".{segno}");
    path.strip_suffix(&suffix).unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::relpath::{database_dir, tablespace_version_directory};

    #[test]
    fn version_dirs() {
        assert!(is_version_dir("PG_15_202209061", Some(15)));
        assert!(is_version_dir("PG_15_202209061", None));
        assert!(!is_version_dir("PG_14_202107181", Some(15)));
        assert!(!is_version_dir("PG_15_", None));
        assert!(!is_version_dir("PG__1", None));
        assert!(!is_version_dir("pg_15_1", None));
        assert!(!is_version_dir("PG_15_2022x", None));
    }

    #[test]
    fn segment_zero_paths() {
        assert_eq!(segment_zero_path("base/1/16384.12", 12), "base/1/16384");
        assert_eq!(segment_zero_path("base/1/16384", 0), "base/1/16384");
        assert_eq!(tablespace_version_directory(17, 202406281), "PG_17_202406281");
        assert_eq!(database_dir(1664, 7, 17, 1), "global");
    }
}
