//! What a healthy pg_control would not show, one sentence each: a file or version that does not fit the
//! layout it was read with, a CRC mismatch, unknown enum values and implausible build settings.

use super::data::{u32_at, ControlFileData};
use super::layout::ControlLayout;
use super::values::{DBState, WalLevel};
use super::{
    compute_crc, major_from_catversion, valid_wal_seg_size, FLOATFORMAT_VALUE, PG_CONTROL_FILE_SIZE,
    PG_DATA_CHECKSUM_VERSION,
};

/// The anomalies of `d`, decoded from `bytes` with `layout` as PostgreSQL `major`, in the order
/// they are reported: the file's identity first, then its values.
pub(super) fn anomalies(
    bytes: &[u8],
    d: &ControlFileData,
    layout: ControlLayout,
    major: u32,
    crc_computed: u32,
) -> Vec<String> {
    let mut anomalies = Vec::new();
    identity_anomalies(bytes, d, layout, major, crc_computed, &mut anomalies);
    value_anomalies(d, &mut anomalies);
    anomalies
}

/// Size, version fields and CRC: does the file look like a pg_control of this layout and major?
fn identity_anomalies(
    bytes: &[u8],
    d: &ControlFileData,
    layout: ControlLayout,
    major: u32,
    crc_computed: u32,
    anomalies: &mut Vec<String>,
) {
    if bytes.len() != PG_CONTROL_FILE_SIZE {
        anomalies.push(format!("file is {} bytes, expected {PG_CONTROL_FILE_SIZE}", bytes.len()));
    }
    if d.pg_control_version != layout.pg_control_version() {
        anomalies.push(format!(
            "pg_control_version is {}, but the file was read with the {} layout of PostgreSQL {major}",
            d.pg_control_version,
            layout.pg_control_version()
        ));
    }
    if major_from_catversion(d.catalog_version_no) != Some(major) {
        anomalies
            .push(format!("catalog_version_no {} is not a PostgreSQL {major} catalog version", d.catalog_version_no));
    }
    if crc_computed != d.crc {
        anomalies.push(crc_note(bytes, d.crc, layout, crc_computed));
    }
}

/// The CRC mismatch, and which other layout's CRC does match, if any: that means a version mix-up
/// rather than damage.
fn crc_note(bytes: &[u8], stored: u32, layout: ControlLayout, crc_computed: u32) -> String {
    let mut note = format!("CRC mismatch: stored {stored:08x}, computed {crc_computed:08x}");
    for other in ControlLayout::ALL {
        if other == layout || other.crc_offset() == layout.crc_offset() {
            continue;
        }
        let stored = u32_at(bytes, other.crc_offset()).ok();
        if stored.is_some() && stored == compute_crc(bytes, other).ok() {
            note.push_str(&format!(
                "; the CRC does match the layout of pg_control_version {}",
                other.pg_control_version()
            ));
        }
    }
    note
}

/// Enum values the server does not know and build settings no configure run can produce.
fn value_anomalies(d: &ControlFileData, anomalies: &mut Vec<String>) {
    if let DBState::Unknown(code) = DBState::from_code(d.state) {
        anomalies.push(format!("unknown cluster state {code}"));
    }
    if let WalLevel::Unknown(code) = WalLevel::from_code(d.wal_level) {
        anomalies.push(format!("unknown wal_level {code}"));
    }
    if let Some(WalLevel::Unknown(code)) = d.check_point_copy.wal_level {
        anomalies.push(format!("unknown checkpoint wal_level {code}"));
    }
    if d.max_align != 4 && d.max_align != 8 {
        anomalies.push(format!("maxAlign is {}, expected 8 (or 4)", d.max_align));
    }
    if d.float_format != FLOATFORMAT_VALUE {
        anomalies.push(format!("floatFormat is {}, expected {FLOATFORMAT_VALUE}", d.float_format));
    }
    // configure/meson accept block sizes of 1..32 kB (powers of two).
    if !d.blcksz.is_power_of_two() || !(1024..=32768).contains(&d.blcksz) {
        anomalies.push(format!("blcksz {} is not a power of two in 1..32 kB", d.blcksz));
    }
    if d.relseg_size == 0 {
        anomalies.push("relseg_size is 0".to_string());
    }
    // XLOG_BLCKSZ is configurable in 1..64 kB (powers of two).
    if !d.xlog_blcksz.is_power_of_two() || !(1024..=65536).contains(&d.xlog_blcksz) {
        anomalies.push(format!("xlog_blcksz {} is not a power of two in 1..64 kB", d.xlog_blcksz));
    }
    if !valid_wal_seg_size(d.xlog_seg_size) {
        anomalies.push(format!("xlog_seg_size {} is not a power of two between 1 MB and 1 GB", d.xlog_seg_size));
    }
    if d.name_data_len == 0 || d.index_max_keys == 0 || d.toast_max_chunk_size == 0 {
        anomalies.push("nameDataLen, indexMaxKeys or toast_max_chunk_size is 0".to_string());
    }
    if d.data_checksum_version > PG_DATA_CHECKSUM_VERSION {
        anomalies.push(format!("data_checksum_version {} is unknown (0 or 1 expected)", d.data_checksum_version));
    }
}
