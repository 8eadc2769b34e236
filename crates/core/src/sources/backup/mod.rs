//! Base backups read in place: a plain directory (`pg_basebackup -Fp`) or tar archives (`-Ft`), compressed or not
//! ([`archive`]). Opening a backup mounts it ([`vfs`]) at its directory, so the scanner, the catalog and the row
//! engine read it by path as they read a data directory. The manifest is checked like pg_verifybackup
//! ([`manifest`]); `backup_label` gives the start of WAL replay, after which pages may legitimately be torn.

pub mod archive;
pub mod bounds;
pub mod manifest;
mod spill;
pub mod vfs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::{CoreError, Result};
use archive::{ArchiveFile, Compression, TarSource};
use manifest::verify::{Contents, Held};
use manifest::{Algorithm, Manifest, ManifestReport};
use vfs::FileSource;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Plain,
    Tar,
}

/// What `backup_label` says (written by `do_pg_backup_stop`, read by `read_backup_label` in xlogrecovery.c).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BackupLabel {
    pub start_lsn: Option<u64>,
    pub checkpoint_lsn: Option<u64>,
    pub timeline: Option<u32>,
    pub method: Option<String>,
    pub from: Option<String>,
    pub start_time: Option<String>,
    pub label: Option<String>,
    /// `INCREMENTAL FROM LSN` (PostgreSQL 17): the backup only holds what changed since.
    pub incremental_from: Option<u64>,
}

fn parse_lsn(s: &str) -> Option<u64> {
    let (hi, lo) = s.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

impl BackupLabel {
    pub fn parse(text: &str) -> BackupLabel {
        let mut b = BackupLabel::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(": ") else { continue };
            let first = value.split_whitespace().next().unwrap_or("");
            match key {
                "START WAL LOCATION" => b.start_lsn = parse_lsn(first),
                "CHECKPOINT LOCATION" => b.checkpoint_lsn = parse_lsn(first),
                "START TIMELINE" => b.timeline = first.parse().ok(),
                "BACKUP METHOD" => b.method = Some(value.to_string()),
                "BACKUP FROM" => b.from = Some(value.to_string()),
                "START TIME" => b.start_time = Some(value.to_string()),
                "LABEL" => b.label = Some(value.to_string()),
                "INCREMENTAL FROM LSN" => b.incremental_from = parse_lsn(first),
                _ => {}
            }
        }
        b
    }
}

/// What the backup is, for reports.
#[derive(Debug, Clone, Serialize)]
pub struct BackupInfo {
    pub root: PathBuf,
    pub format: Format,
    pub archives: Vec<ArchiveFile>,
    pub label: Option<BackupLabel>,
    pub manifest: bool,
    /// Files in the archives (tar format).
    pub files: usize,
}

/// Checksums of the files of compressed archives, computed while they were listed, in each algorithm the manifest
/// uses (pg_basebackup uses one).
type Seen = HashMap<String, Sums>;
/// A file's checksum in each algorithm.
type Sums = Vec<(Algorithm, Vec<u8>)>;

/// An opened base backup. While it lives, its files are readable under [`Backup::root`].
pub struct Backup {
    pub root: PathBuf,
    pub format: Format,
    pub archives: Vec<ArchiveFile>,
    pub label: Option<BackupLabel>,
    pub manifest: Option<Manifest>,
    /// Files in a tar backup's directory that are neither an archive nor the manifest.
    strays: Vec<String>,
    source: Option<Arc<TarSource>>,
    /// Checksums computed while the compressed archives were listed.
    seen: Option<Seen>,
    _mount: Option<vfs::Mount>,
}

/// Archive file names pg_basebackup writes: `base.tar`, `<oid>.tar`, `pg_wal.tar`, with `.gz`, `.lz4` or `.zst`.
fn archive_prefix(name: &str) -> Option<String> {
    let stem = ["", ".gz", ".lz4", ".zst"].iter().find_map(|ext| name.strip_suffix(&format!(".tar{ext}")))?;
    match stem {
        "base" => Some(String::new()),
        "pg_wal" => Some("pg_wal/".to_string()),
        s if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => Some(format!("pg_tblspc/{s}/")),
        _ => None,
    }
}

/// Whether `path` looks like a base backup (and not an ordinary data directory).
pub fn is_backup(path: &Path) -> bool {
    if path.is_file() {
        // Only the archive itself stands for its directory (a file inside a plain backup is a file).
        return path.file_name().and_then(|n| n.to_str()).and_then(archive_prefix).as_deref() == Some("");
    }
    let dir = path;
    dir.join("backup_label").is_file()
        || dir.join("backup_manifest").is_file()
        || std::fs::read_dir(dir)
            .map(|d| d.flatten().any(|e| e.file_name().to_str().and_then(archive_prefix).as_deref() == Some("")))
            .unwrap_or(false)
}

fn incremental_refusal(root: &Path) -> CoreError {
    CoreError::Invalid(format!(
        "{} is an incremental backup: it holds only the blocks changed since an earlier backup\nhint: rebuild a \
         full backup with pg_combinebackup (pg_combinebackup FULL INCREMENTAL... -o DIR), then give that directory",
        root.display()
    ))
}

impl Backup {
    /// Open a backup: a directory written by `pg_basebackup -Fp`, a directory holding `base.tar[.gz|.lz4|.zst]`,
    /// or that `base.tar*` file itself. A compressed archive is read through once here (listing, checksums).
    pub fn open(path: &Path) -> Result<Backup> {
        let root =
            if path.is_file() { path.parent().unwrap_or(Path::new(".")).to_path_buf() } else { path.to_path_buf() };
        let root = std::fs::canonicalize(&root).map_err(|e| CoreError::io(&root, e))?;
        // Judged whole (streaming, constant memory) before anything in it is used.
        let manifest = Manifest::open(&root.join("backup_manifest"))
            .map_err(|e| CoreError::io(root.join("backup_manifest"), e))?;
        if manifest.as_ref().is_some_and(|m| m.census.incremental_files > 0) {
            return Err(incremental_refusal(&root));
        }
        // Checksums are computed while compressed archives are listed only for a manifest that will be believed.
        let algorithms: Vec<Algorithm> = match &manifest {
            Some(m) if m.refusal.is_none() => {
                m.census.algorithms.iter().copied().filter(|a| *a != Algorithm::None).collect()
            }
            _ => Vec::new(),
        };
        let mut archives = Vec::new();
        let mut strays = Vec::new();
        for e in std::fs::read_dir(&root).map_err(|e| CoreError::io(&root, e))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(prefix) = archive_prefix(&name) {
                let compression = Compression::sniff(&e.path()).map_err(|err| CoreError::io(e.path(), err))?;
                archives.push(ArchiveFile { path: e.path(), compression, prefix });
            } else if !manifest::verify::ignored(&name) {
                strays.push(name);
            }
        }
        // base.tar first, so the data directory's own files come before tablespaces and WAL.
        archives.sort_by_key(|a| (!a.prefix.is_empty(), a.prefix.starts_with("pg_wal"), a.path.clone()));
        let (format, source, seen, mount) = if archives.iter().any(|a| a.prefix.is_empty()) {
            let mut seen = Seen::new();
            let src = TarSource::open(archives.clone(), |p, data| {
                if let Some(sums) = digests(&algorithms, data)? {
                    seen.insert(p.to_string(), sums);
                }
                Ok(())
            })?;
            if src.members().iter().any(|m| manifest::is_incremental_name(&m.path)) {
                return Err(incremental_refusal(&root));
            }
            let src = Arc::new(src);
            let mount = vfs::mount(&root, src.clone());
            check_segment_sizes(&root, &src)?;
            let any_compressed = archives.iter().any(|a| a.compression != Compression::None);
            (Format::Tar, Some(src), any_compressed.then_some(seen), Some(mount))
        } else if root.join("PG_VERSION").is_file() {
            strays.clear(); // a plain backup's own files
            (Format::Plain, None, None, None)
        } else {
            return Err(CoreError::Invalid(format!(
                "{} is neither a data directory nor a base backup (no PG_VERSION, no base.tar)\nhint: give the \
                 directory pg_basebackup wrote (-D)",
                root.display()
            )));
        };
        let label = vfs::read_to_string(&root.join("backup_label")).ok().map(|t| BackupLabel::parse(&t));
        if label.as_ref().is_some_and(|l| l.incremental_from.is_some()) {
            return Err(incremental_refusal(&root));
        }
        Ok(Backup { root, format, archives, label, manifest, strays, source, seen, _mount: mount })
    }

    /// Passes over compressed archives beyond the first ones, so far (reads that came out of order).
    pub fn restarts(&self) -> u64 {
        self.source.as_ref().map_or(0, |s| s.restarts.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Keep a file (path relative to the data directory) at hand, in a temporary file, until released; see
    /// [`TarSource::hold`].
    pub fn hold(&self, rel: &str) -> Result<()> {
        if let Some(src) = &self.source {
            if let Some(i) = src.index_of(rel) {
                src.hold(i).map_err(|e| CoreError::io(self.root.join(rel), e))?;
            }
        }
        Ok(())
    }

    pub fn release(&self, rel: &str) {
        if let Some(src) = &self.source {
            if let Some(i) = src.index_of(rel) {
                src.release(i);
            }
        }
    }

    /// What the backup is, for reports.
    pub fn info(&self) -> BackupInfo {
        BackupInfo {
            root: self.root.clone(),
            format: self.format,
            archives: self.archives.clone(),
            label: self.label.clone(),
            manifest: self.manifest.is_some(),
            files: self.source.as_ref().map_or(0, |s| s.members().iter().filter(|m| !m.is_dir).count()),
        }
    }

    /// Check the backup against its manifest, as pg_verifybackup does ([`manifest::verify`]).
    pub fn verify(&self) -> Result<ManifestReport> {
        let Some(m) = &self.manifest else { return Ok(ManifestReport::default()) };
        let held = match &self.source {
            Some(src) => src
                .members()
                .iter()
                .filter(|m| !m.is_dir && !m.path.is_empty())
                .map(|m| Held { path: m.path.clone(), size: m.size })
                .collect(),
            None => {
                let mut held = Vec::new();
                walk_dir(&self.root, &mut held)?;
                held
            }
        };
        let root = self.root.clone();
        let seen = self.seen.as_ref();
        let mut digest = |path: &str, alg: Algorithm| -> std::io::Result<Vec<u8>> {
            if let Some(sum) = seen.and_then(|s| s.get(path)).and_then(|v| v.iter().find(|(a, _)| *a == alg)) {
                return Ok(sum.1.clone());
            }
            let f = vfs::VFile::open(&root.join(path))?;
            Ok(manifest::digest(alg, &mut VRead { f, at: 0 })?.1)
        };
        let contents = Contents { root: &self.root, held, strays: self.strays.clone(), digest: &mut digest };
        Ok(manifest::verify::verify(m, contents))
    }
}

/// A [`vfs::VFile`] read from start to end.
struct VRead {
    f: vfs::VFile,
    at: u64,
}

impl std::io::Read for VRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.f.read_full_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The checksums of one file in each algorithm (None without any to compute).
fn digests(algorithms: &[Algorithm], data: &mut dyn std::io::Read) -> std::io::Result<Option<Sums>> {
    if algorithms.is_empty() {
        return Ok(None);
    }
    let mut hashers: Vec<manifest::Hasher> = algorithms.iter().map(|a| manifest::Hasher::new(*a)).collect();
    let mut buf = vec![0u8; 128 << 10];
    loop {
        let n = match data.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        hashers.iter_mut().for_each(|h| h.update(&buf[..n]));
    }
    Ok(Some(algorithms.iter().copied().zip(hashers.into_iter().map(manifest::Hasher::finish)).collect()))
}

/// A relation segment longer than pg_control's RELSEG_SIZE blocks is refused: PostgreSQL never writes one (md.c
/// starts a new segment), and reading it would take as long as its header says. Without a readable pg_control the
/// scan says what is wrong with it.
fn check_segment_sizes(root: &Path, src: &TarSource) -> Result<()> {
    let Ok(cf) = crate::sources::pgdata::read_control_file(root) else { return Ok(()) };
    let max = u64::from(cf.relseg_size) * u64::from(cf.blcksz);
    let over = src.members().iter().position(|m| !m.is_dir && m.size > max && archive::is_relation_file(&m.path));
    match over {
        Some(i) if max > 0 => Err(CoreError::io(
            &src.archive_of(i).path,
            bounds::damaged(format!(
                "member {} claims {}, more than a segment file can hold ({} blocks of {} bytes, from pg_control)",
                src.members()[i].path,
                bounds::human(src.members()[i].size),
                cf.relseg_size,
                cf.blcksz
            )),
        )),
        _ => Ok(()),
    }
}

/// Every regular file under `root`, with its size. Iterative, so depth costs no stack; symlinks are followed
/// (tablespaces), but a directory reached twice (a link loop such as `pg_tblspc/16385 -> ..`) or a tree deeper than
/// [`MAX_DEPTH`] ends the walk with an error.
fn walk_dir(root: &Path, held: &mut Vec<Held>) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let top = std::fs::metadata(root).map_err(|e| CoreError::io(root, e))?;
    let mut visited = std::collections::HashSet::from([(top.dev(), top.ino())]);
    let mut todo = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = todo.pop() {
        for e in std::fs::read_dir(&dir).map_err(|e| CoreError::io(&dir, e))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let md = match std::fs::metadata(e.path()) {
                Ok(md) => md,
                // A link to itself or round a loop: the kernel gives up (ELOOP) before we would.
                Err(err) if err.raw_os_error() == Some(ELOOP) => {
                    return Err(tree_error(root, &path, "is a symbolic link loop"));
                }
                Err(err) => return Err(CoreError::io(e.path(), err)),
            };
            if md.is_dir() {
                if !visited.insert((md.dev(), md.ino())) {
                    return Err(tree_error(root, &path, "leads to a directory already walked (a symbolic link loop)"));
                }
                if path.split('/').count() > MAX_DEPTH {
                    return Err(tree_error(root, &path, &format!("is more than {MAX_DEPTH} directories deep")));
                }
                todo.push((e.path(), path));
            } else if md.is_file() {
                held.push(Held { path, size: md.len() });
            }
        }
    }
    Ok(())
}

/// Too many levels of symbolic links (Linux asm-generic/errno.h); io::ErrorKind::FilesystemLoop is not stable.
const ELOOP: i32 = 40;

/// Deepest directory of a data directory walked: PostgreSQL's own go five deep
/// (`pg_tblspc/<oid>/PG_<major>_<catversion>/<db>/…`).
const MAX_DEPTH: usize = 32;

fn tree_error(root: &Path, path: &str, what: &str) -> CoreError {
    CoreError::Invalid(format!(
        "{}: {path} {what}\nhint: a data directory or backup has no such directories; remove the link or move the \
         tree aside, then try again",
        root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_fields() {
        let l = BackupLabel::parse(
            "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\nCHECKPOINT LOCATION: 0/2000060\n\
             BACKUP METHOD: streamed\nSTART TIMELINE: 1\nINCREMENTAL FROM LSN: 0/1000028\n",
        );
        assert_eq!(l.start_lsn, Some(0x2000028));
        assert_eq!(l.checkpoint_lsn, Some(0x2000060));
        assert_eq!(l.timeline, Some(1));
        assert_eq!(l.incremental_from, Some(0x1000028));
    }

    #[test]
    fn archive_names() {
        assert_eq!(archive_prefix("base.tar.zst").as_deref(), Some(""));
        assert_eq!(archive_prefix("16385.tar.gz").as_deref(), Some("pg_tblspc/16385/"));
        assert_eq!(archive_prefix("pg_wal.tar.lz4").as_deref(), Some("pg_wal/"));
        assert_eq!(archive_prefix("base.tgz"), None);
    }
}
