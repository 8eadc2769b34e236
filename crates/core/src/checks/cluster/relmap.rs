//! `pg_filenode.map` of `global/` and of each database in `base/`: the file numbers of the mapped catalogs. A backend
//! loads the shared map and its database's map when it connects (relmapper.c `load_relmap_file`) and refuses the
//! connection (FATAL) when the file is missing, has the wrong size or magic, or fails its CRC.

use crate::error::io_reason;
use std::path::Path;

use super::ClusterFinding;
use crate::finding::{Code, Finding};
use crate::format::relmap::{RelMap, RELMAPPER_FILENAME};

/// The map files to check: `global/`'s and those of the database directories under `base/` (a directory with
/// `PG_VERSION`, so that a half-copied database of an interrupted CREATE DATABASE is not taken for one).
pub(super) fn relmap_checks(pgdata: &Path) -> Vec<ClusterFinding> {
    let mut dirs = vec![("global".to_string(), "every connection".to_string())];
    let mut dbs: Vec<u32> = std::fs::read_dir(pgdata.join("base"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
                .filter(|oid| pgdata.join(format!("base/{oid}/PG_VERSION")).is_file())
                .collect()
        })
        .unwrap_or_default();
    dbs.sort_unstable();
    dirs.extend(dbs.into_iter().map(|oid| (format!("base/{oid}"), format!("every connection to database {oid}"))));
    dirs.into_iter().filter_map(|(dir, who)| check(pgdata, &dir, &who)).collect()
}

fn check(pgdata: &Path, dir: &str, who: &str) -> Option<ClusterFinding> {
    let path = format!("{dir}/{RELMAPPER_FILENAME}");
    let why = match std::fs::read(pgdata.join(&path)) {
        Err(e) => format!("cannot be read ({})", io_reason(&e)),
        Ok(bytes) => match RelMap::parse(&bytes) {
            Err(e) => format!("contains invalid data: {}", e.to_string().trim_start_matches("pg_filenode.map: ")),
            Ok(m) if !m.crc_ok => "contains an incorrect checksum".to_string(),
            Ok(_) => return None,
        },
    };
    let message = format!("{path} {why}: {who} fails (FATAL) before it can read a catalog");
    Some(ClusterFinding { finding: Finding::new(Code::FileRelmap, None, None, message), path })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::Dir;
    use super::*;

    #[test]
    fn missing_damaged_and_sound_maps() {
        let dir = Dir::new();
        let p = dir.path();
        std::fs::create_dir_all(p.join("global")).unwrap();
        std::fs::create_dir_all(p.join("base/5")).unwrap();
        std::fs::create_dir_all(p.join("base/7")).unwrap();
        std::fs::write(p.join("base/5/PG_VERSION"), "15\n").unwrap();
        let mut image = vec![0u8; 512];
        image[0..4].copy_from_slice(&crate::format::relmap::RELMAPPER_FILEMAGIC.to_le_bytes());
        let crc = crc32c::crc32c(&image[..8 + 8 * 62]);
        image[8 + 8 * 62..12 + 8 * 62].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(p.join("global/pg_filenode.map"), &image).unwrap();
        let found = relmap_checks(p);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "base/5/pg_filenode.map");
        assert!(found[0].finding.message.contains("database 5"));
        image[20] ^= 1;
        std::fs::write(p.join("base/5/pg_filenode.map"), &image).unwrap();
        let found = relmap_checks(p);
        assert_eq!(found.len(), 1);
        assert!(found[0].finding.message.contains("incorrect checksum"), "{found:?}");
        image[0] ^= 1;
        std::fs::write(p.join("global/pg_filenode.map"), &image).unwrap();
        let found = relmap_checks(p);
        assert!(found[0].finding.message.contains("invalid data: magic"), "{found:?}");
    }
}
