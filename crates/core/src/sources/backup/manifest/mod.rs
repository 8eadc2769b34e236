//! `backup_manifest` (PostgreSQL 13+, written by pg_basebackup; format in `src/common/parse_manifest.c` and
//! `src/backend/backup/backup_manifest.c`): every file with its size and a checksum in the algorithm the manifest
//! names, the WAL ranges the backup needs, and a SHA-256 of the manifest itself. Read streaming ([`json`],
//! [`parse`]) and judged whole before anything in it is believed; then checked like pg_verifybackup
//! (src/bin/pg_verifybackup/pg_verifybackup.c) does ([`verify`]).

pub mod json;
pub mod parse;
pub mod table;
pub mod verify;
pub mod wal;

use std::io::{self, Read};
use std::path::Path;

use serde::Serialize;
use sha2::Digest;

use crate::finding::Code;
pub use parse::Refusal;
pub use table::{Census, Table, WalRange};

/// Checksum algorithms a manifest may name (`pg_checksum_type`, src/include/common/checksum_helper.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Algorithm {
    None,
    Crc32c,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    /// The name the manifest writes (`pg_checksum_type_name`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::None => "NONE",
            Algorithm::Crc32c => "CRC32C",
            Algorithm::Sha224 => "SHA224",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha384 => "SHA384",
            Algorithm::Sha512 => "SHA512",
        }
    }

    /// The length of its checksum (`pg_checksum_final`'s result).
    pub fn length(self) -> usize {
        match self {
            Algorithm::None => 0,
            Algorithm::Crc32c => 4,
            Algorithm::Sha224 => 28,
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
        }
    }

    pub fn parse(name: &str) -> Option<Algorithm> {
        Some(match name.to_ascii_uppercase().as_str() {
            "NONE" => Algorithm::None,
            "CRC32C" => Algorithm::Crc32c,
            "SHA224" => Algorithm::Sha224,
            "SHA256" => Algorithm::Sha256,
            "SHA384" => Algorithm::Sha384,
            "SHA512" => Algorithm::Sha512,
            _ => return None,
        })
    }
}

/// A running checksum.
pub enum Hasher {
    None,
    Crc32c(u32),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    pub fn new(a: Algorithm) -> Hasher {
        match a {
            Algorithm::None => Hasher::None,
            Algorithm::Crc32c => Hasher::Crc32c(0),
            Algorithm::Sha224 => Hasher::Sha224(sha2::Sha224::new()),
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            Algorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::None => {}
            Hasher::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
            Hasher::Sha224(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha384(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
        }
    }

    /// The checksum's bytes as the manifest writes them in hex. The CRC32C is the value's bytes in memory order
    /// (`pg_checksum_final` copies the `pg_crc32c`), little-endian on the machines PostgreSQL builds for.
    pub fn finish(self) -> Vec<u8> {
        match self {
            Hasher::None => Vec::new(),
            Hasher::Crc32c(c) => c.to_le_bytes().to_vec(),
            Hasher::Sha224(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checksum `data` in `algorithm`: (size, checksum bytes).
pub fn digest(algorithm: Algorithm, data: &mut dyn Read) -> io::Result<(u64, Vec<u8>)> {
    let mut h = Hasher::new(algorithm);
    let mut buf = vec![0u8; 128 << 10];
    let mut size = 0u64;
    loop {
        let n = match data.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, h.finish()))
}

/// A manifest read once through and judged: what it says (counts, top-level values), or why it cannot be used.
/// Nothing per file is kept: [`Manifest::table`] reads it again for that.
pub struct Manifest {
    path: std::path::PathBuf,
    pub census: Census,
    pub refusal: Option<Refusal>,
}

impl Manifest {
    /// Read and judge `path` (streaming, constant memory). `None` when there is no such file.
    pub fn open(path: &Path) -> io::Result<Option<Manifest>> {
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut census = Census::default();
        let refusal = parse::parse(f, &mut census).err();
        Ok(Some(Manifest { path: path.to_path_buf(), census, refusal }))
    }

    /// The per-file table (the manifest read again, now that it is known sound).
    pub fn table(&self) -> Result<Table, Refusal> {
        let f = std::fs::File::open(&self.path)
            .map_err(|e| Refusal::Invalid(format!("could not open file \"backup_manifest\": {e}")))?;
        let mut table = Table::with_capacity(self.census.files, self.census.payload_bytes);
        parse::parse(f, &mut table)?;
        table.seal().map_err(Refusal::Invalid)?;
        Ok(table)
    }
}

pub fn is_incremental_name(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|n| n.starts_with("INCREMENTAL."))
}

/// One problem the manifest shows: a file that differs from it, or the manifest itself.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestProblem {
    pub code: Code,
    /// The file it is about (`backup_manifest` for the manifest itself).
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ManifestReport {
    pub present: bool,
    /// `PostgreSQL-Backup-Manifest-Version` (2 from PostgreSQL 17, naming the cluster).
    pub version: u32,
    /// The cluster the manifest says it belongs to (version 2 manifests).
    pub system_identifier: Option<u64>,
    /// Files compared with the manifest.
    pub files_checked: u64,
    pub bytes_checked: u64,
    pub algorithms: Vec<String>,
    /// The manifest parses and its own SHA-256 matches its text: what it says is believed.
    pub self_checksum_ok: bool,
    pub wal_ranges: Vec<WalRange>,
    /// WAL segments the WAL ranges need that were found (their first page read).
    pub wal_segments_checked: u64,
    pub problems: Vec<ManifestProblem>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_and_sha_hex() {
        let mut h = Hasher::new(Algorithm::Crc32c);
        h.update(b"123456789");
        // CRC-32C check value 0xe3069283, in memory order.
        assert_eq!(hex(&h.finish()), "839206e3");
        let mut h = Hasher::new(Algorithm::Sha256);
        h.update(b"abc");
        assert_eq!(hex(&h.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
