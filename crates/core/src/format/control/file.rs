//! [`ControlFile`]: pg_control normalized across versions, as the rest of the kit and the binding see it.

use serde::Serialize;

use super::data::{hex, ControlFileData};
use super::layout::ControlLayout;
use super::values::{DBState, FullTransactionId, Lsn, WalLevel};
use super::wal_file_name;

/// pg_control of one cluster, normalized across versions: the fields `pg_controldata` prints,
/// plus the CRC verdict and notes about implausible values.
#[derive(Debug, Clone, Serialize)]
pub struct ControlFile {
    /// Major version (14..=18) whose layout was used.
    pub major_version: u32,
    /// Layout used to decode.
    pub layout: ControlLayout,
    /// Length of the file (8192 when intact).
    pub file_size: usize,
    /// `system_identifier`.
    pub system_identifier: u64,
    /// `pg_control_version`.
    pub pg_control_version: u32,
    /// `catalog_version_no`.
    pub catalog_version_no: u32,
    /// `state`, serialized as pg_controldata's words ("in production", …).
    pub state: DBState,
    /// `state` as the stored number.
    pub state_code: i32,
    /// `time`: pg_control last modified (Unix seconds).
    pub time: i64,
    /// `checkPoint`: latest checkpoint location.
    pub checkpoint: Lsn,
    /// `checkPointCopy.redo`.
    pub redo: Lsn,
    /// Name of the WAL segment holding `redo` (`None` when `xlog_seg_size` is unusable).
    pub redo_wal_file: Option<String>,
    /// `checkPointCopy.ThisTimeLineID`.
    pub this_timeline_id: u32,
    /// `checkPointCopy.PrevTimeLineID`.
    pub prev_timeline_id: u32,
    /// `checkPointCopy.fullPageWrites`.
    pub full_page_writes: bool,
    /// `checkPointCopy.wal_level` (17+).
    pub checkpoint_wal_level: Option<WalLevel>,
    /// `checkPointCopy.nextXid` (epoch and xid).
    pub next_xid: FullTransactionId,
    /// `checkPointCopy.nextOid`.
    pub next_oid: u32,
    /// `checkPointCopy.nextMulti`.
    pub next_multi: u32,
    /// `checkPointCopy.nextMultiOffset`.
    pub next_multi_offset: u32,
    /// `checkPointCopy.oldestXid`.
    pub oldest_xid: u32,
    /// `checkPointCopy.oldestXidDB`.
    pub oldest_xid_db: u32,
    /// `checkPointCopy.oldestActiveXid`.
    pub oldest_active_xid: u32,
    /// `checkPointCopy.oldestMulti`.
    pub oldest_multi: u32,
    /// `checkPointCopy.oldestMultiDB`.
    pub oldest_multi_db: u32,
    /// `checkPointCopy.oldestCommitTsXid`.
    pub oldest_commit_ts_xid: u32,
    /// `checkPointCopy.newestCommitTsXid`.
    pub newest_commit_ts_xid: u32,
    /// `checkPointCopy.time`: time of the latest checkpoint (Unix seconds).
    pub checkpoint_time: i64,
    /// `unloggedLSN`.
    pub unlogged_lsn: Lsn,
    /// `minRecoveryPoint`.
    pub min_recovery_point: Lsn,
    /// `minRecoveryPointTLI`.
    pub min_recovery_point_tli: u32,
    /// `backupStartPoint`.
    pub backup_start_point: Lsn,
    /// `backupEndPoint`.
    pub backup_end_point: Lsn,
    /// `backupEndRequired`.
    pub backup_end_required: bool,
    /// `wal_level`.
    pub wal_level: WalLevel,
    /// `wal_log_hints`.
    pub wal_log_hints: bool,
    /// `MaxConnections`.
    pub max_connections: i32,
    /// `max_worker_processes`.
    pub max_worker_processes: i32,
    /// `max_wal_senders`.
    pub max_wal_senders: i32,
    /// `max_prepared_xacts`.
    pub max_prepared_xacts: i32,
    /// `max_locks_per_xact`.
    pub max_locks_per_xact: i32,
    /// `track_commit_timestamp`.
    pub track_commit_timestamp: bool,
    /// `maxAlign`.
    pub max_align: u32,
    /// `floatFormat`.
    pub float_format: f64,
    /// `blcksz`.
    pub blcksz: u32,
    /// `relseg_size`.
    pub relseg_size: u32,
    /// `xlog_blcksz`.
    pub xlog_blcksz: u32,
    /// `xlog_seg_size`.
    pub xlog_seg_size: u32,
    /// `nameDataLen`.
    pub name_data_len: u32,
    /// `indexMaxKeys`.
    pub index_max_keys: u32,
    /// `toast_max_chunk_size`.
    pub toast_max_chunk_size: u32,
    /// `loblksize`.
    pub loblksize: u32,
    /// `float8ByVal`.
    pub float8_by_val: bool,
    /// `data_checksum_version` (0 off, 1 on).
    pub data_checksum_version: u32,
    /// `default_char_signedness` (18 only; `true` = signed).
    pub default_char_signedness: Option<bool>,
    /// `mock_authentication_nonce` as lower-case hex, as pg_controldata prints it.
    pub mock_authentication_nonce: String,
    /// `crc` as stored in the file.
    pub crc_stored: u32,
    /// CRC-32C computed over the bytes before `crc`.
    pub crc_computed: u32,
    /// `crc_stored == crc_computed`.
    pub crc_ok: bool,
    /// Things a healthy file would not show (bad CRC, implausible sizes, unknown enum values…),
    /// one sentence each. Empty for an intact file.
    pub anomalies: Vec<String>,
}

impl ControlFile {
    /// True when page checksums are enabled in this cluster.
    pub fn data_checksums_enabled(&self) -> bool {
        self.data_checksum_version != 0
    }

    /// Bytes in one relation segment file (`relseg_size * blcksz`).
    pub fn segment_bytes(&self) -> u64 {
        u64::from(self.relseg_size) * u64::from(self.blcksz)
    }

    /// The normalized view of `d` (decoded with `layout` as PostgreSQL `major` from a file of
    /// `file_size` bytes), with the CRC verdict and the anomalies found.
    pub(super) fn from_data(
        d: &ControlFileData,
        layout: ControlLayout,
        major: u32,
        file_size: usize,
        crc_computed: u32,
        anomalies: Vec<String>,
    ) -> ControlFile {
        let c = &d.check_point_copy;
        ControlFile {
            major_version: major,
            layout,
            file_size,
            system_identifier: d.system_identifier,
            pg_control_version: d.pg_control_version,
            catalog_version_no: d.catalog_version_no,
            state: DBState::from_code(d.state),
            state_code: d.state,
            time: d.time,
            checkpoint: d.check_point,
            redo: c.redo,
            redo_wal_file: wal_file_name(c.this_timeline_id, c.redo, d.xlog_seg_size),
            this_timeline_id: c.this_timeline_id,
            prev_timeline_id: c.prev_timeline_id,
            full_page_writes: c.full_page_writes,
            checkpoint_wal_level: c.wal_level,
            next_xid: c.next_xid,
            next_oid: c.next_oid,
            next_multi: c.next_multi,
            next_multi_offset: c.next_multi_offset,
            oldest_xid: c.oldest_xid,
            oldest_xid_db: c.oldest_xid_db,
            oldest_active_xid: c.oldest_active_xid,
            oldest_multi: c.oldest_multi,
            oldest_multi_db: c.oldest_multi_db,
            oldest_commit_ts_xid: c.oldest_commit_ts_xid,
            newest_commit_ts_xid: c.newest_commit_ts_xid,
            checkpoint_time: c.time,
            unlogged_lsn: d.unlogged_lsn,
            min_recovery_point: d.min_recovery_point,
            min_recovery_point_tli: d.min_recovery_point_tli,
            backup_start_point: d.backup_start_point,
            backup_end_point: d.backup_end_point,
            backup_end_required: d.backup_end_required,
            wal_level: WalLevel::from_code(d.wal_level),
            wal_log_hints: d.wal_log_hints,
            max_connections: d.max_connections,
            max_worker_processes: d.max_worker_processes,
            max_wal_senders: d.max_wal_senders,
            max_prepared_xacts: d.max_prepared_xacts,
            max_locks_per_xact: d.max_locks_per_xact,
            track_commit_timestamp: d.track_commit_timestamp,
            max_align: d.max_align,
            float_format: d.float_format,
            blcksz: d.blcksz,
            relseg_size: d.relseg_size,
            xlog_blcksz: d.xlog_blcksz,
            xlog_seg_size: d.xlog_seg_size,
            name_data_len: d.name_data_len,
            index_max_keys: d.index_max_keys,
            toast_max_chunk_size: d.toast_max_chunk_size,
            loblksize: d.loblksize,
            float8_by_val: d.float8_by_val,
            data_checksum_version: d.data_checksum_version,
            default_char_signedness: d.default_char_signedness,
            mock_authentication_nonce: hex(&d.mock_authentication_nonce),
            crc_stored: d.crc,
            crc_computed,
            crc_ok: crc_computed == d.crc,
            anomalies,
        }
    }
}
