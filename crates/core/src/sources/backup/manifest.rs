//! `backup_manifest` (PostgreSQL 13+, written by pg_basebackup; format in `src/common/parse_manifest.c` and
//! `src/backend/backup/backup_manifest.c`): every file with its size and a checksum in the algorithm the manifest
//! names, and a SHA-256 of the manifest itself. Checked like pg_verifybackup: missing files, extra files, sizes,
//! checksums.

use crate::finding::Code;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read};

use serde::Serialize;
use sha2::Digest;

use crate::error::{CoreError, Result};

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

    /// Lowercase hex as the manifest writes it. The CRC32C is the value's bytes in memory order
    /// (`pg_checksum_final` copies the `pg_crc32c`), little-endian on the machines PostgreSQL builds for.
    pub fn hex(self) -> String {
        let bytes: Vec<u8> = match self {
            Hasher::None => Vec::new(),
            Hasher::Crc32c(c) => c.to_le_bytes().to_vec(),
            Hasher::Sha224(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        };
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// One file of the manifest.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    pub algorithm: Algorithm,
    pub checksum: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    pub version: u64,
    pub system_identifier: Option<u64>,
    pub files: BTreeMap<String, ManifestFile>,
    /// The manifest's own SHA-256 matches its text.
    pub self_checksum_ok: bool,
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 == 1 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

impl Manifest {
    pub fn parse(text: &[u8]) -> Result<Manifest> {
        let bad = |detail: String| CoreError::Format { what: "backup_manifest", detail };
        let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| bad(e.to_string()))?;
        let version = v.get("PostgreSQL-Backup-Manifest-Version").and_then(|x| x.as_u64()).unwrap_or(0);
        if version == 0 {
            return Err(bad("no PostgreSQL-Backup-Manifest-Version".into()));
        }
        let mut files = BTreeMap::new();
        for f in v.get("Files").and_then(|x| x.as_array()).ok_or_else(|| bad("no Files list".into()))? {
            let path = match (f.get("Path").and_then(|x| x.as_str()), f.get("Encoded-Path").and_then(|x| x.as_str())) {
                (Some(p), _) => p.to_string(),
                (None, Some(e)) => {
                    String::from_utf8_lossy(&decode_hex(e).ok_or_else(|| bad(format!("bad Encoded-Path {e}")))?)
                        .into_owned()
                }
                _ => return Err(bad("a file without a path".into())),
            };
            let size = f.get("Size").and_then(|x| x.as_u64()).ok_or_else(|| bad(format!("{path}: no Size")))?;
            let alg_name = f.get("Checksum-Algorithm").and_then(|x| x.as_str()).unwrap_or("NONE");
            let algorithm = Algorithm::parse(alg_name)
                .ok_or_else(|| bad(format!("{path}: unknown checksum algorithm {alg_name}")))?;
            let checksum = f.get("Checksum").and_then(|x| x.as_str()).map(|s| s.to_ascii_lowercase());
            files.insert(path.clone(), ManifestFile { path, size, algorithm, checksum });
        }
        // The manifest's checksum covers the text up to and including the newline before its own line.
        let self_checksum_ok = match v.get("Manifest-Checksum").and_then(|x| x.as_str()) {
            Some(want) => {
                let key = b"\"Manifest-Checksum\"";
                let at = text.windows(key.len()).rposition(|w| w == key).unwrap_or(0);
                let mut h = Hasher::new(Algorithm::Sha256);
                h.update(&text[..at]);
                h.hex() == want.to_ascii_lowercase()
            }
            None => false,
        };
        Ok(Manifest {
            version,
            system_identifier: v.get("System-Identifier").and_then(|x| x.as_u64()),
            files,
            self_checksum_ok,
        })
    }

    /// Files whose name says they are incremental (`INCREMENTAL.<relfilenode>`, PostgreSQL 17).
    pub fn incremental_files(&self) -> usize {
        self.files.keys().filter(|p| is_incremental_name(p)).count()
    }

    /// Checksum `data` as the manifest says for `path` (NONE when the path is not in it): (size, checksum).
    pub fn digest(&self, path: &str, data: &mut dyn Read) -> io::Result<(u64, Option<String>)> {
        let alg = self.files.get(path).map_or(Algorithm::None, |f| f.algorithm);
        let mut h = Hasher::new(alg);
        let mut buf = vec![0u8; 256 << 10];
        let mut size = 0u64;
        loop {
            let n = data.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            size += n as u64;
        }
        Ok((size, (alg != Algorithm::None).then(|| h.hex())))
    }
}

pub fn is_incremental_name(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|n| n.starts_with("INCREMENTAL."))
}

/// One difference between the backup and its manifest.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestProblem {
    /// `file.manifest_missing`, `file.manifest_extra`, `file.manifest_size`, `file.manifest_checksum`.
    pub code: Code,
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ManifestReport {
    pub present: bool,
    /// The cluster the manifest says it belongs to (version 2 manifests, PostgreSQL 17+).
    pub system_identifier: Option<u64>,
    pub files_checked: u64,
    pub bytes_checked: u64,
    pub algorithms: Vec<String>,
    pub self_checksum_ok: bool,
    pub problems: Vec<ManifestProblem>,
}

/// Files pg_verifybackup does not expect in the manifest (its default ignore list, pg_verifybackup.c): the
/// manifest itself, WAL (checked against WAL-Ranges, not file by file) and what `-R` writes.
fn ignored(path: &str) -> bool {
    matches!(path, "backup_manifest" | "postgresql.auto.conf" | "recovery.signal" | "standby.signal")
        || path == "pg_wal"
        || path.starts_with("pg_wal/")
}

/// Compare what the backup holds (`seen`: path → size and checksum in the manifest's algorithm) with the manifest.
pub fn compare(m: &Manifest, seen: &HashMap<String, (u64, Option<String>)>) -> ManifestReport {
    let mut rep = ManifestReport {
        present: true,
        system_identifier: m.system_identifier,
        self_checksum_ok: m.self_checksum_ok,
        ..Default::default()
    };
    let mut algs: Vec<String> = m.files.values().map(|f| format!("{:?}", f.algorithm).to_uppercase()).collect();
    algs.sort();
    algs.dedup();
    rep.algorithms = algs;
    if !m.self_checksum_ok {
        rep.problems.push(ManifestProblem {
            code: Code::FileManifestChecksum,
            path: "backup_manifest".into(),
            message: "the manifest's own checksum does not match its contents".into(),
        });
    }
    for (path, f) in &m.files {
        let Some((size, sum)) = seen.get(path) else {
            rep.problems.push(ManifestProblem {
                code: Code::FileManifestMissing,
                path: path.clone(),
                message: format!("{path} is in the manifest ({} bytes) but not in the backup", f.size),
            });
            continue;
        };
        rep.files_checked += 1;
        rep.bytes_checked += size;
        if *size != f.size {
            rep.problems.push(ManifestProblem {
                code: Code::FileManifestSize,
                path: path.clone(),
                message: format!("{path} has {size} bytes, the manifest says {}", f.size),
            });
            continue;
        }
        if let (Some(want), Some(got)) = (&f.checksum, sum) {
            if want != got {
                rep.problems.push(ManifestProblem {
                    code: Code::FileManifestChecksum,
                    path: path.clone(),
                    message: format!(
                        "{path}: {:?} checksum {got}, the manifest says {want}: the file changed after the backup",
                        f.algorithm
                    )
                    .replace("Crc32c", "CRC32C"),
                });
            }
        }
    }
    let mut extra: Vec<&String> = seen.keys().filter(|p| !m.files.contains_key(*p) && !ignored(p)).collect();
    extra.sort();
    for path in extra {
        rep.problems.push(ManifestProblem {
            code: Code::FileManifestExtra,
            path: path.clone(),
            message: format!("{path} is in the backup but not in the manifest"),
        });
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_and_sha_hex() {
        let mut h = Hasher::new(Algorithm::Crc32c);
        h.update(b"123456789");
        // CRC-32C check value 0xe3069283, in memory order.
        assert_eq!(h.hex(), "839206e3");
        let mut h = Hasher::new(Algorithm::Sha256);
        h.update(b"abc");
        assert_eq!(h.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn compare_reports_each_kind() {
        let text = br#"{ "PostgreSQL-Backup-Manifest-Version": 1,
"Files": [
{ "Path": "a", "Size": 3, "Last-Modified": "x", "Checksum-Algorithm": "SHA256", "Checksum": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
{ "Path": "b", "Size": 1, "Last-Modified": "x" },
{ "Encoded-Path": "63", "Size": 2, "Last-Modified": "x" }
],
"Manifest-Checksum": "00"}
"#;
        let m = Manifest::parse(text).unwrap();
        assert!(m.files.contains_key("c"));
        let mut seen = HashMap::new();
        seen.insert("a".to_string(), m.digest("a", &mut &b"abd"[..]).unwrap());
        seen.insert("c".to_string(), (3, None));
        seen.insert("d".to_string(), (3, None));
        seen.insert("pg_wal/000000010000000000000001".to_string(), (3, None));
        let rep = compare(&m, &seen);
        let codes: Vec<(Code, &str)> = rep.problems.iter().map(|p| (p.code, p.path.as_str())).collect();
        assert_eq!(
            codes,
            vec![
                (Code::FileManifestChecksum, "backup_manifest"),
                (Code::FileManifestChecksum, "a"),
                (Code::FileManifestMissing, "b"),
                (Code::FileManifestSize, "c"),
                (Code::FileManifestExtra, "d"),
            ]
        );
    }
}
