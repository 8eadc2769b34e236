//! `pg_filenode.map`: the file numbers of the mapped catalogs (pg_class, pg_attribute, pg_type, pg_proc and their
//! indexes and TOAST tables per database; pg_database, pg_authid and the other shared catalogs in `global/`), whose
//! `pg_class.relfilenode` is 0 (`src/backend/utils/cache/relmapper.c`). Parsed here; read from a data directory by
//! `catalog::relmap`.

use crate::error::{CoreError, Result};
use std::collections::HashMap;

/// `RELMAPPER_FILEMAGIC` (relmapper.c).
pub const RELMAPPER_FILEMAGIC: u32 = 0x0059_2717;
/// File name in `global/` and in each database directory (`RELMAPPER_FILENAME`, relmapper.c).
pub const RELMAPPER_FILENAME: &str = "pg_filenode.map";

/// The two layouts: up to PostgreSQL 15, `MAX_MAPPINGS` 62 and a trailing pad (512 bytes); from 16, 64 mappings and
/// no pad (`RELMAPPER_FILESIZE` 524). Both: int32 magic, int32 num_mappings, {Oid, RelFileNumber}[MAX_MAPPINGS],
/// pg_crc32c over everything before it.
fn max_mappings(file_len: usize) -> Option<usize> {
    match file_len {
        512 => Some(62),
        524 => Some(64),
        _ => None,
    }
}

/// One relation map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelMap {
    /// Relation OID -> file number.
    pub mappings: HashMap<u32, u32>,
    /// The stored CRC matched.
    pub crc_ok: bool,
}

impl RelMap {
    pub fn parse(bytes: &[u8]) -> Result<RelMap> {
        let bad = |detail: String| CoreError::Format { what: "pg_filenode.map", detail };
        let max = max_mappings(bytes.len()).ok_or_else(|| {
            bad(format!("{} bytes, expected 512 (PostgreSQL ≤ 15) or 524 (16 and later)", bytes.len()))
        })?;
        let u32_at = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let magic = u32_at(0);
        if magic != RELMAPPER_FILEMAGIC {
            return Err(bad(format!("magic {magic:#x}, expected {RELMAPPER_FILEMAGIC:#x}")));
        }
        let n = u32_at(4) as usize;
        if n > max {
            return Err(bad(format!("{n} mappings, at most {max} fit")));
        }
        let crc_at = 8 + 8 * max;
        let crc_ok = crc32c::crc32c(&bytes[..crc_at]) == u32_at(crc_at);
        let mappings = (0..n).map(|i| (u32_at(8 + 8 * i), u32_at(12 + 8 * i))).collect();
        Ok(RelMap { mappings, crc_ok })
    }

    pub fn get(&self, oid: u32) -> Option<u32> {
        self.mappings.get(&oid).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(len: usize, pairs: &[(u32, u32)]) -> Vec<u8> {
        let max = max_mappings(len).unwrap();
        let mut b = vec![0u8; len];
        b[0..4].copy_from_slice(&RELMAPPER_FILEMAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&(pairs.len() as u32).to_le_bytes());
        for (i, (o, f)) in pairs.iter().enumerate() {
            b[8 + 8 * i..12 + 8 * i].copy_from_slice(&o.to_le_bytes());
            b[12 + 8 * i..16 + 8 * i].copy_from_slice(&f.to_le_bytes());
        }
        let at = 8 + 8 * max;
        let crc = crc32c::crc32c(&b[..at]);
        b[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn both_layouts() {
        for len in [512, 524] {
            let m = RelMap::parse(&image(len, &[(1259, 16400), (1249, 1249)])).unwrap();
            assert!(m.crc_ok);
            assert_eq!(m.get(1259), Some(16400));
            assert_eq!(m.get(1247), None);
        }
    }

    #[test]
    fn damage_is_reported_not_panicked() {
        let mut b = image(524, &[(1259, 1259)]);
        b[20] ^= 0xff;
        assert!(!RelMap::parse(&b).unwrap().crc_ok);
        assert!(RelMap::parse(&b[..100]).is_err());
        let mut b = image(512, &[]);
        b[4] = 200;
        assert!(RelMap::parse(&b).is_err());
        b[0] = 0;
        assert!(RelMap::parse(&b).is_err());
    }
}
