//! The backup against its manifest, check by check as pg_verifybackup (src/bin/pg_verifybackup/pg_verifybackup.c
//! and astreamer_verify.c of PostgreSQL 18) makes them: the manifest judged whole first (it parses, its checksum
//! matches; nothing in it is believed otherwise), then files not in the manifest, sizes, files missing, checksums,
//! the system identifier against pg_control (version 2 manifests), and the WAL the WAL ranges need ([`super::wal`]).

use std::io;
use std::path::Path;

use super::{hex, Algorithm, Manifest, ManifestProblem, ManifestReport, Refusal, Table};
use crate::finding::Code;
use crate::format::control::parse_control;
use crate::sources::backup::vfs;

/// A regular file the backup holds: its path relative to the data directory, and size.
pub struct Held {
    pub path: String,
    pub size: u64,
}

/// What the backup holds, and how to checksum one of its files.
pub struct Contents<'a> {
    pub root: &'a Path,
    pub held: Vec<Held>,
    /// Files in a tar backup's directory that are no archive pg_basebackup writes.
    pub strays: Vec<String>,
    pub digest: &'a mut dyn FnMut(&str, Algorithm) -> io::Result<Vec<u8>>,
}

/// pg_verifybackup's default ignore list (its `main`): the manifest itself, WAL (checked against the WAL ranges,
/// not file by file) and what `pg_basebackup -R` writes. A path is ignored when it is one of these or below one.
pub fn ignored(path: &str) -> bool {
    ["backup_manifest", "pg_wal", "postgresql.auto.conf", "recovery.signal", "standby.signal"]
        .iter()
        .any(|i| path.strip_prefix(i).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// Entries a manifest may name per file the backup holds before it is refused unread: a manifest naming far more
/// files than the backup has explains nothing about it, and its table would cost memory for nothing (pg_verifybackup
/// would list every one as missing).
fn entry_budget(held: usize) -> u64 {
    (held as u64).saturating_mul(4).max(held as u64 + 100_000)
}

fn problem(code: Code, path: &str, message: String) -> ManifestProblem {
    ManifestProblem { code, path: path.to_string(), message }
}

/// Check the backup against `m`.
pub fn verify(m: &Manifest, mut c: Contents<'_>) -> ManifestReport {
    let census = &m.census;
    let mut rep = ManifestReport {
        present: true,
        version: census.version,
        system_identifier: census.system_identifier,
        algorithms: census.algorithms.iter().map(|a| a.name().to_string()).collect(),
        wal_ranges: census.wal_ranges.clone(),
        ..Default::default()
    };
    rep.algorithms.sort();
    if let Some(refusal) = &m.refusal {
        rep.problems.push(refused(refusal));
        return rep;
    }
    let budget = entry_budget(c.held.len());
    if census.files > budget || census.payload_bytes > budget.saturating_mul(2048) {
        let message = format!(
            "backup_manifest names {} files, the backup holds {}: the manifest is not this backup's, and is not \
             compared file by file",
            census.files,
            c.held.len()
        );
        rep.problems.push(problem(Code::FileManifestOversized, "backup_manifest", message));
        return rep;
    }
    let mut table = match m.table() {
        Ok(t) => t,
        Err(refusal) => {
            rep.problems.push(refused(&refusal));
            return rep;
        }
    };
    rep.self_checksum_ok = true;
    c.held.sort_by(|a, b| a.path.cmp(&b.path));
    files_against_manifest(&mut table, &c, &mut rep);
    missing_files(&table, &mut rep);
    checksums(&table, &mut c, &mut rep);
    let control = vfs::read(&c.root.join("global/pg_control")).ok().and_then(|b| parse_control(&b).ok());
    if census.version >= 2 && c.held.iter().any(|h| h.path == "global/pg_control") {
        system_identifier(census.system_identifier.unwrap_or(0), control.as_ref(), &mut rep);
    }
    if let Some(ctl) = control.filter(|ctl| ctl.crc_ok) {
        rep.wal_segments_checked =
            super::wal::check(c.root, &census.wal_ranges, ctl.xlog_seg_size, ctl.system_identifier, &mut rep.problems);
    }
    rep
}

fn refused(r: &Refusal) -> ManifestProblem {
    match r {
        Refusal::Invalid(m) => problem(Code::FileManifestInvalid, "backup_manifest", m.clone()),
        Refusal::Checksum => problem(
            Code::FileManifestOwnChecksum,
            "backup_manifest",
            "manifest checksum mismatch: backup_manifest was changed after pg_basebackup wrote it, so nothing in it \
             is believed and no file is checked against it"
                .into(),
        ),
    }
}

/// Every file of the backup looked up (`verify_plain_backup_file`, `member_verify_header`): not in the manifest,
/// or of another size.
fn files_against_manifest(table: &mut Table, c: &Contents<'_>, rep: &mut ManifestReport) {
    for h in c.held.iter().filter(|h| !ignored(&h.path)) {
        let Some(i) = table.find(&h.path) else {
            let msg = format!("{} is in the backup but not in the manifest", h.path);
            rep.problems.push(problem(Code::FileManifestExtra, &h.path, msg));
            continue;
        };
        let e = table.entry_mut(i);
        e.matched = true;
        rep.files_checked += 1;
        rep.bytes_checked += h.size;
        if e.size != h.size {
            e.bad = true;
            let msg = format!("{} has {} bytes, the manifest says {}", h.path, h.size, e.size);
            rep.problems.push(problem(Code::FileManifestSize, &h.path, msg));
        }
    }
    for s in &c.strays {
        let msg = format!("{s} is not expected in a tar format backup (no archive pg_basebackup writes)");
        rep.problems.push(problem(Code::FileManifestExtra, s, msg));
    }
}

/// `report_extra_backup_files`: what the manifest names that the backup lacks.
fn missing_files(table: &Table, rep: &mut ManifestReport) {
    for i in 0..table.len() {
        let e = table.entry(i);
        let path = String::from_utf8_lossy(table.path(e));
        if !e.matched && !ignored(&path) {
            let msg = format!("{path} is in the manifest ({} bytes) but not in the backup", e.size);
            rep.problems.push(problem(Code::FileManifestMissing, &path, msg));
        }
    }
}

/// `verify_backup_checksums`: every file found at its size, in the algorithm its entry names.
fn checksums(table: &Table, c: &mut Contents<'_>, rep: &mut ManifestReport) {
    for i in 0..table.len() {
        let e = *table.entry(i);
        if !e.matched || e.bad || e.algorithm == Algorithm::None {
            continue;
        }
        let path = String::from_utf8_lossy(table.path(&e)).into_owned();
        let got = match (c.digest)(&path, e.algorithm) {
            Ok(got) => got,
            Err(err) => {
                let msg = format!("{path} cannot be read to checksum it: {err}");
                rep.problems.push(problem(Code::FileManifestChecksum, &path, msg));
                continue;
            }
        };
        let want = table.checksum(&e);
        let alg = e.algorithm.name();
        let msg = if want.len() != got.len() {
            format!("{path}: the manifest's {alg} checksum has {} bytes, a {alg} checksum {}", want.len(), got.len())
        } else if want != got.as_slice() {
            format!(
                "{path}: {alg} checksum {}, the manifest says {}: the file changed after the backup",
                hex(&got),
                hex(want)
            )
        } else {
            continue;
        };
        rep.problems.push(problem(Code::FileManifestChecksum, &path, msg));
    }
}

/// `verify_control_file`: a version 2 manifest names the cluster; pg_control must be of it.
fn system_identifier(want: u64, control: Option<&crate::format::control::ControlFile>, rep: &mut ManifestReport) {
    let path = "global/pg_control";
    let msg = match control {
        None => format!("{path} cannot be read: the manifest's system identifier {want} cannot be compared"),
        Some(c) if !c.crc_ok => {
            format!("{path}: CRC is incorrect: the manifest's system identifier {want} cannot be compared")
        }
        Some(c) if c.system_identifier != want => format!(
            "{path}: manifest system identifier is {want}, but control file has {}: the manifest is of another \
             cluster's backup",
            c.system_identifier
        ),
        Some(_) => return,
    };
    rep.problems.push(problem(Code::FileManifestSystem, path, msg));
}
