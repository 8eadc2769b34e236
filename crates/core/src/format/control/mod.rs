//! `pg_control`: the cluster's control file (`$PGDATA/global/pg_control`), for PostgreSQL 14 to 18.
//!
//! The file is a C struct (`ControlFileData`, `src/include/catalog/pg_control.h`) written in native
//! byte order and padded with zeros to 8 KB. Three layouts occur in 14–18:
//!
//! | majors   | `pg_control_version` | difference                                              |
//! |----------|---------------------:|---------------------------------------------------------|
//! | 14,15,16 | 1300                 | base layout; bytes 57..64 of the file are padding        |
//! | 17       | 1700                 | `CheckPoint.wal_level` lives in that former padding      |
//! | 18       | 1800                 | adds `default_char_signedness` before the nonce; CRC at 292 |
//!
//! 14, 15 and 16 share `pg_control_version`, so the major is told apart by `catalog_version_no`
//! (or, when that is damaged, by `PG_VERSION`; see `sources::pgdata::read_control_file`).
//!
//! A CRC mismatch is not an error here: a damaged control file is exactly what a rescue tool must be
//! able to show, so the mismatch is reported in [`ControlFile::crc_ok`] and parsing goes on, as
//! `pg_controldata` does.
//!
//! Verified against real files (x86-64, little-endian): every field of `ControlFileData` was
//! compared with `pg_controldata` output of PostgreSQL 15.18 and 18.6 (checksums on and off, in
//! production, shut down, archive recovery, after `pg_resetwal -e`), and with the
//! `pg_control_*()` SQL functions of 14.23, 16.14 and 17.10. The fixtures live in `tests/data/`.
//!
//! The parts: `layout` (field offsets and the three layouts), `values` (LSNs, xids, the state and
//! `wal_level` enums), `data` (the raw struct, decoded and encoded), `file` (the normalized
//! [`ControlFile`]) and `anomalies` (what a healthy file would not show). This module chooses the
//! layout and computes the CRC.

mod anomalies;
mod data;
mod file;
mod layout;
mod values;

pub use data::{CheckPoint, ControlFileData};
pub use file::ControlFile;
pub use layout::{off, ControlLayout};
pub use values::{DBState, FullTransactionId, Lsn, WalLevel};

use crate::error::{CoreError, Result};
use data::{put, too_short, u32_at};

/// Physical size of the file; only the first `sizeof(ControlFileData)` bytes carry data.
// src/include/catalog/pg_control.h (PG_CONTROL_FILE_SIZE)
pub const PG_CONTROL_FILE_SIZE: usize = 8192;

/// Length of `mock_authentication_nonce`.
// src/include/catalog/pg_control.h (MOCK_AUTH_NONCE_LEN)
pub const MOCK_AUTH_NONCE_LEN: usize = 32;

/// The double every cluster stores so a server can detect a foreign float format.
// src/include/catalog/pg_control.h (FLOATFORMAT_VALUE)
pub const FLOATFORMAT_VALUE: f64 = 1234567.0;

/// `data_checksum_version` of a cluster with checksums on (0 means off).
// src/include/storage/bufpage.h (PG_DATA_CHECKSUM_VERSION)
pub const PG_DATA_CHECKSUM_VERSION: u32 = 1;

/// Release catalog versions: the value of `CATALOG_VERSION_NO` in each major's release.
/// A major's catversions lie in (previous release, this release], because development of a major
/// starts from the previous release's number and only ever bumps it. 13 is listed only as the lower
/// bound of 14 (all five values were confirmed by running each version's `initdb`).
// src/include/catalog/catversion.h (CATALOG_VERSION_NO) of 13.x, 14.x, 15.x, 16.x, 17.x, 18.x
pub const CATALOG_VERSION_RELEASES: [(u32, u32); 6] =
    [(13, 202007201), (14, 202107181), (15, 202209061), (16, 202307071), (17, 202406281), (18, 202506291)];

/// Major version implied by a catalog version, from the release table. `None` outside 14..=18
/// (13 and older, or development snapshots newer than 18.0).
pub fn major_from_catversion(catversion: u32) -> Option<u32> {
    CATALOG_VERSION_RELEASES.windows(2).find(|w| catversion > w[0].1 && catversion <= w[1].1).map(|w| w[1].0)
}

/// CRC-32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF — PostgreSQL's `pg_crc32c`,
/// `src/include/port/pg_crc32c.h`) over the bytes before `layout`'s `crc` field.
pub fn compute_crc(bytes: &[u8], layout: ControlLayout) -> Result<u32> {
    let covered = bytes.get(..layout.crc_offset()).ok_or_else(|| too_short(bytes.len(), layout.size()))?;
    Ok(crc32c::crc32c(covered))
}

/// Recomputes the CRC of a pg_control image in place (layout from its own `pg_control_version`)
/// and returns it: what a fault injector does after editing a field so the server accepts the file.
pub fn rewrite_crc(bytes: &mut [u8]) -> Result<u32> {
    let version = read_version(bytes)?;
    let layout = ControlLayout::for_pg_control_version(version).ok_or_else(|| unknown_version(version))?;
    let crc = compute_crc(bytes, layout)?;
    put(bytes, layout.crc_offset(), &crc.to_le_bytes());
    Ok(crc)
}

/// Where the CRC of a pg_control image is (`offsetof(ControlFileData, crc)`), for the layout its own
/// `pg_control_version` names.
pub fn crc_offset(bytes: &[u8]) -> Result<usize> {
    let version = read_version(bytes)?;
    let layout = ControlLayout::for_pg_control_version(version).ok_or_else(|| unknown_version(version))?;
    Ok(layout.crc_offset())
}

fn read_version(bytes: &[u8]) -> Result<u32> {
    u32_at(bytes, off::PG_CONTROL_VERSION).map_err(|_| CoreError::Format {
        what: "pg_control",
        detail: format!("file has {} bytes; too short to hold pg_control_version", bytes.len()),
    })
}

fn unknown_version(version: u32) -> CoreError {
    // A version that looks byte-swapped points at a cluster from the other endianness
    // (the same hint the server gives in xlog.c ReadControlFile).
    let detail = if version & 0xFFFF == 0 && version >> 16 != 0 {
        format!(
            "pg_control_version {version} (0x{version:08x}) looks byte-swapped: \
             the file was probably written on a machine of the other endianness"
        )
    } else {
        format!("unknown pg_control_version {version}; known: 1300 (PostgreSQL 14-16), 1700 (17), 1800 (18)")
    };
    CoreError::Format { what: "pg_control", detail }
}

/// Parses a pg_control image, choosing the layout from `pg_control_version` and, for 1300, the
/// major from `catalog_version_no`. Errors (`CoreError::Format`) only when the file is too short
/// or its version is unknown; a bad CRC or odd values are reported inside the result.
pub fn parse_control(bytes: &[u8]) -> Result<ControlFile> {
    let version = read_version(bytes)?;
    let layout = ControlLayout::for_pg_control_version(version).ok_or_else(|| unknown_version(version))?;
    let catversion = u32_at(bytes, off::CATALOG_VERSION_NO).map_err(|_| too_short(bytes.len(), layout.size()))?;
    let major = match layout {
        ControlLayout::V1300 => match major_from_catversion(catversion) {
            Some(m @ 14..=16) => m,
            _ => {
                return Err(CoreError::Format {
                    what: "pg_control",
                    detail: format!(
                        "pg_control_version 1300 is used by PostgreSQL 13-16, and catalog_version_no \
                         {catversion} is not one of 14-16 (13 ends at {}, 16 at {})",
                        CATALOG_VERSION_RELEASES[0].1, CATALOG_VERSION_RELEASES[3].1
                    ),
                })
            }
        },
        ControlLayout::V1700 => 17,
        ControlLayout::V1800 => 18,
    };
    build(bytes, layout, major)
}

/// Parses a pg_control image with the layout of `major_version` (14..=18), whatever its version
/// fields say. For files whose `pg_control_version` or `catalog_version_no` is itself damaged,
/// when the major is known from elsewhere (`PG_VERSION`). Disagreements become anomalies.
pub fn parse_control_as(bytes: &[u8], major_version: u32) -> Result<ControlFile> {
    let layout = ControlLayout::for_major(major_version)
        .ok_or_else(|| CoreError::Invalid(format!("PostgreSQL {major_version} is not supported (14 to 18 are)")))?;
    build(bytes, layout, major_version)
}

/// WAL file name as `XLogFileName` builds it (`src/include/access/xlog_internal.h`): timeline,
/// then the segment number split into "log" and "seg" parts, 8 hex digits each.
pub fn wal_file_name(tli: u32, lsn: Lsn, seg_size: u32) -> Option<String> {
    if !valid_wal_seg_size(seg_size) {
        return None;
    }
    let segno = lsn.0 / u64::from(seg_size);
    let per_id = 0x1_0000_0000u64 / u64::from(seg_size);
    Some(format!("{:08X}{:08X}{:08X}", tli, segno / per_id, segno % per_id))
}

/// `IsValidWalSegSize`: a power of two from 1 MB to 1 GB (`src/include/access/xlog_internal.h`).
fn valid_wal_seg_size(size: u32) -> bool {
    size.is_power_of_two() && (1 << 20..=1 << 30).contains(&size)
}

/// Decodes `bytes` with `layout`, checks the CRC and the values, and normalizes the result.
fn build(bytes: &[u8], layout: ControlLayout, major: u32) -> Result<ControlFile> {
    let d = ControlFileData::decode(bytes, layout)?;
    let crc_computed = compute_crc(bytes, layout)?;
    let anomalies = anomalies::anomalies(bytes, &d, layout, major, crc_computed);
    Ok(ControlFile::from_data(&d, layout, major, bytes.len(), crc_computed, anomalies))
}

#[cfg(test)]
mod tests;
