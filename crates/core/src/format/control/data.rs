//! The raw `ControlFileData` struct: decoded from one layout as it is stored, and encoded back (for fault
//! injectors, which edit a field and re-stamp the CRC).

use serde::{Serialize, Serializer};

use super::layout::{off, ControlLayout};
use super::values::{FullTransactionId, Lsn, WalLevel};
use super::MOCK_AUTH_NONCE_LEN;
use crate::error::{CoreError, Result};

/// Raw `CheckPoint` (`src/include/catalog/pg_control.h`): the copy of the last checkpoint record
/// kept in pg_control.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckPoint {
    /// `redo`: where replay starts.
    pub redo: Lsn,
    /// `ThisTimeLineID`.
    pub this_timeline_id: u32,
    /// `PrevTimeLineID`.
    pub prev_timeline_id: u32,
    /// `fullPageWrites`.
    pub full_page_writes: bool,
    /// `wal_level` (17+; `None` in 14–16 where those bytes are padding).
    pub wal_level: Option<WalLevel>,
    /// `nextXid` (FullTransactionId).
    pub next_xid: FullTransactionId,
    /// `nextOid`.
    pub next_oid: u32,
    /// `nextMulti`.
    pub next_multi: u32,
    /// `nextMultiOffset`.
    pub next_multi_offset: u32,
    /// `oldestXid`: cluster-wide minimum datfrozenxid.
    pub oldest_xid: u32,
    /// `oldestXidDB`.
    pub oldest_xid_db: u32,
    /// `oldestMulti`: cluster-wide minimum datminmxid.
    pub oldest_multi: u32,
    /// `oldestMultiDB`.
    pub oldest_multi_db: u32,
    /// `time` (Unix seconds).
    pub time: i64,
    /// `oldestCommitTsXid`.
    pub oldest_commit_ts_xid: u32,
    /// `newestCommitTsXid`.
    pub newest_commit_ts_xid: u32,
    /// `oldestActiveXid` (only set by online checkpoints with wal_level >= replica).
    pub oldest_active_xid: u32,
}

/// Raw `ControlFileData` (`src/include/catalog/pg_control.h`), decoded from one layout.
/// [`ControlFileData::encode_into`] writes it back, so fault injectors can edit a field and
/// re-stamp the CRC.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControlFileData {
    /// `system_identifier`.
    pub system_identifier: u64,
    /// `pg_control_version`.
    pub pg_control_version: u32,
    /// `catalog_version_no`.
    pub catalog_version_no: u32,
    /// `state` (raw enum value; see [`DBState::from_code`](super::DBState::from_code)).
    pub state: i32,
    /// `time`: last update of pg_control (Unix seconds).
    pub time: i64,
    /// `checkPoint`: location of the last checkpoint record.
    pub check_point: Lsn,
    /// `checkPointCopy`.
    pub check_point_copy: CheckPoint,
    /// `unloggedLSN`: fake LSN counter for unlogged relations.
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
    /// `wal_level` (raw enum value).
    pub wal_level: i32,
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
    /// `floatFormat` (should be [`FLOATFORMAT_VALUE`](super::FLOATFORMAT_VALUE)).
    pub float_format: f64,
    /// `blcksz`.
    pub blcksz: u32,
    /// `relseg_size` (blocks per segment file).
    pub relseg_size: u32,
    /// `xlog_blcksz`.
    pub xlog_blcksz: u32,
    /// `xlog_seg_size` (bytes).
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
    /// `data_checksum_version`.
    pub data_checksum_version: u32,
    /// `default_char_signedness` (18 only).
    pub default_char_signedness: Option<bool>,
    /// `mock_authentication_nonce`.
    #[serde(serialize_with = "serialize_hex")]
    pub mock_authentication_nonce: [u8; MOCK_AUTH_NONCE_LEN],
    /// `crc` as stored.
    pub crc: u32,
}

fn serialize_hex<S: Serializer>(bytes: &[u8], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&hex(bytes))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Bounds-checked little-endian reads. Callers check the length once up front, but these still
/// refuse to index out of range so a wrong offset can never panic.
fn bytes_at<const N: usize>(buf: &[u8], at: usize) -> Result<[u8; N]> {
    buf.get(at..at.saturating_add(N)).and_then(|s| <[u8; N]>::try_from(s).ok()).ok_or_else(|| CoreError::Format {
        what: "pg_control",
        detail: format!("read of {N} bytes at offset {at} beyond end ({} bytes)", buf.len()),
    })
}

pub(super) fn u32_at(buf: &[u8], at: usize) -> Result<u32> {
    bytes_at::<4>(buf, at).map(u32::from_le_bytes)
}

fn i32_at(buf: &[u8], at: usize) -> Result<i32> {
    bytes_at::<4>(buf, at).map(i32::from_le_bytes)
}

fn u64_at(buf: &[u8], at: usize) -> Result<u64> {
    bytes_at::<8>(buf, at).map(u64::from_le_bytes)
}

fn i64_at(buf: &[u8], at: usize) -> Result<i64> {
    bytes_at::<8>(buf, at).map(i64::from_le_bytes)
}

fn bool_at(buf: &[u8], at: usize) -> Result<bool> {
    bytes_at::<1>(buf, at).map(|b| b[0] != 0)
}

fn lsn_at(buf: &[u8], at: usize) -> Result<Lsn> {
    u64_at(buf, at).map(Lsn)
}

pub(super) fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    // encode_into checks the length first; this guard only keeps a logic error from panicking.
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

impl ControlFileData {
    /// Decodes the struct as laid out in `layout`. Fails only if `bytes` is shorter than the
    /// layout's `sizeof(ControlFileData)`; values are taken as they are.
    pub fn decode(bytes: &[u8], layout: ControlLayout) -> Result<ControlFileData> {
        if bytes.len() < layout.size() {
            return Err(too_short(bytes.len(), layout.size()));
        }
        let b = bytes;
        let check_point_copy = CheckPoint {
            redo: lsn_at(b, off::CKPT_REDO)?,
            this_timeline_id: u32_at(b, off::CKPT_THIS_TIMELINE_ID)?,
            prev_timeline_id: u32_at(b, off::CKPT_PREV_TIMELINE_ID)?,
            full_page_writes: bool_at(b, off::CKPT_FULL_PAGE_WRITES)?,
            wal_level: if layout.has_checkpoint_wal_level() {
                Some(WalLevel::from_code(i32_at(b, off::CKPT_WAL_LEVEL)?))
            } else {
                None
            },
            next_xid: FullTransactionId(u64_at(b, off::CKPT_NEXT_XID)?),
            next_oid: u32_at(b, off::CKPT_NEXT_OID)?,
            next_multi: u32_at(b, off::CKPT_NEXT_MULTI)?,
            next_multi_offset: u32_at(b, off::CKPT_NEXT_MULTI_OFFSET)?,
            oldest_xid: u32_at(b, off::CKPT_OLDEST_XID)?,
            oldest_xid_db: u32_at(b, off::CKPT_OLDEST_XID_DB)?,
            oldest_multi: u32_at(b, off::CKPT_OLDEST_MULTI)?,
            oldest_multi_db: u32_at(b, off::CKPT_OLDEST_MULTI_DB)?,
            time: i64_at(b, off::CKPT_TIME)?,
            oldest_commit_ts_xid: u32_at(b, off::CKPT_OLDEST_COMMIT_TS_XID)?,
            newest_commit_ts_xid: u32_at(b, off::CKPT_NEWEST_COMMIT_TS_XID)?,
            oldest_active_xid: u32_at(b, off::CKPT_OLDEST_ACTIVE_XID)?,
        };
        Ok(ControlFileData {
            system_identifier: u64_at(b, off::SYSTEM_IDENTIFIER)?,
            pg_control_version: u32_at(b, off::PG_CONTROL_VERSION)?,
            catalog_version_no: u32_at(b, off::CATALOG_VERSION_NO)?,
            state: i32_at(b, off::STATE)?,
            time: i64_at(b, off::TIME)?,
            check_point: lsn_at(b, off::CHECK_POINT)?,
            check_point_copy,
            unlogged_lsn: lsn_at(b, off::UNLOGGED_LSN)?,
            min_recovery_point: lsn_at(b, off::MIN_RECOVERY_POINT)?,
            min_recovery_point_tli: u32_at(b, off::MIN_RECOVERY_POINT_TLI)?,
            backup_start_point: lsn_at(b, off::BACKUP_START_POINT)?,
            backup_end_point: lsn_at(b, off::BACKUP_END_POINT)?,
            backup_end_required: bool_at(b, off::BACKUP_END_REQUIRED)?,
            wal_level: i32_at(b, off::WAL_LEVEL)?,
            wal_log_hints: bool_at(b, off::WAL_LOG_HINTS)?,
            max_connections: i32_at(b, off::MAX_CONNECTIONS)?,
            max_worker_processes: i32_at(b, off::MAX_WORKER_PROCESSES)?,
            max_wal_senders: i32_at(b, off::MAX_WAL_SENDERS)?,
            max_prepared_xacts: i32_at(b, off::MAX_PREPARED_XACTS)?,
            max_locks_per_xact: i32_at(b, off::MAX_LOCKS_PER_XACT)?,
            track_commit_timestamp: bool_at(b, off::TRACK_COMMIT_TIMESTAMP)?,
            max_align: u32_at(b, off::MAX_ALIGN)?,
            float_format: f64::from_bits(u64_at(b, off::FLOAT_FORMAT)?),
            blcksz: u32_at(b, off::BLCKSZ)?,
            relseg_size: u32_at(b, off::RELSEG_SIZE)?,
            xlog_blcksz: u32_at(b, off::XLOG_BLCKSZ)?,
            xlog_seg_size: u32_at(b, off::XLOG_SEG_SIZE)?,
            name_data_len: u32_at(b, off::NAME_DATA_LEN)?,
            index_max_keys: u32_at(b, off::INDEX_MAX_KEYS)?,
            toast_max_chunk_size: u32_at(b, off::TOAST_MAX_CHUNK_SIZE)?,
            loblksize: u32_at(b, off::LOBLKSIZE)?,
            float8_by_val: bool_at(b, off::FLOAT8_BY_VAL)?,
            data_checksum_version: u32_at(b, off::DATA_CHECKSUM_VERSION)?,
            default_char_signedness: if layout.has_default_char_signedness() {
                Some(bool_at(b, off::DEFAULT_CHAR_SIGNEDNESS)?)
            } else {
                None
            },
            mock_authentication_nonce: bytes_at::<MOCK_AUTH_NONCE_LEN>(b, layout.mock_authentication_nonce_offset())?,
            crc: u32_at(b, layout.crc_offset())?,
        })
    }

    /// Writes every field at `layout`'s offsets into `buf` (which must hold at least
    /// `layout.size()` bytes; bytes not covered by a field, such as padding, are left alone). The
    /// stored `crc` field is written as it is; call [`rewrite_crc`](super::rewrite_crc) afterwards for a valid file.
    pub fn encode_into(&self, buf: &mut [u8], layout: ControlLayout) -> Result<()> {
        if buf.len() < layout.size() {
            return Err(too_short(buf.len(), layout.size()));
        }
        let c = &self.check_point_copy;
        let b = buf;
        put(b, off::SYSTEM_IDENTIFIER, &self.system_identifier.to_le_bytes());
        put(b, off::PG_CONTROL_VERSION, &self.pg_control_version.to_le_bytes());
        put(b, off::CATALOG_VERSION_NO, &self.catalog_version_no.to_le_bytes());
        put(b, off::STATE, &self.state.to_le_bytes());
        put(b, off::TIME, &self.time.to_le_bytes());
        put(b, off::CHECK_POINT, &self.check_point.0.to_le_bytes());
        put(b, off::CKPT_REDO, &c.redo.0.to_le_bytes());
        put(b, off::CKPT_THIS_TIMELINE_ID, &c.this_timeline_id.to_le_bytes());
        put(b, off::CKPT_PREV_TIMELINE_ID, &c.prev_timeline_id.to_le_bytes());
        put(b, off::CKPT_FULL_PAGE_WRITES, &[u8::from(c.full_page_writes)]);
        if layout.has_checkpoint_wal_level() {
            let level = c.wal_level.map_or(0, WalLevel::code);
            put(b, off::CKPT_WAL_LEVEL, &level.to_le_bytes());
        }
        put(b, off::CKPT_NEXT_XID, &c.next_xid.0.to_le_bytes());
        put(b, off::CKPT_NEXT_OID, &c.next_oid.to_le_bytes());
        put(b, off::CKPT_NEXT_MULTI, &c.next_multi.to_le_bytes());
        put(b, off::CKPT_NEXT_MULTI_OFFSET, &c.next_multi_offset.to_le_bytes());
        put(b, off::CKPT_OLDEST_XID, &c.oldest_xid.to_le_bytes());
        put(b, off::CKPT_OLDEST_XID_DB, &c.oldest_xid_db.to_le_bytes());
        put(b, off::CKPT_OLDEST_MULTI, &c.oldest_multi.to_le_bytes());
        put(b, off::CKPT_OLDEST_MULTI_DB, &c.oldest_multi_db.to_le_bytes());
        put(b, off::CKPT_TIME, &c.time.to_le_bytes());
        put(b, off::CKPT_OLDEST_COMMIT_TS_XID, &c.oldest_commit_ts_xid.to_le_bytes());
        put(b, off::CKPT_NEWEST_COMMIT_TS_XID, &c.newest_commit_ts_xid.to_le_bytes());
        put(b, off::CKPT_OLDEST_ACTIVE_XID, &c.oldest_active_xid.to_le_bytes());
        put(b, off::UNLOGGED_LSN, &self.unlogged_lsn.0.to_le_bytes());
        put(b, off::MIN_RECOVERY_POINT, &self.min_recovery_point.0.to_le_bytes());
        put(b, off::MIN_RECOVERY_POINT_TLI, &self.min_recovery_point_tli.to_le_bytes());
        put(b, off::BACKUP_START_POINT, &self.backup_start_point.0.to_le_bytes());
        put(b, off::BACKUP_END_POINT, &self.backup_end_point.0.to_le_bytes());
        put(b, off::BACKUP_END_REQUIRED, &[u8::from(self.backup_end_required)]);
        put(b, off::WAL_LEVEL, &self.wal_level.to_le_bytes());
        put(b, off::WAL_LOG_HINTS, &[u8::from(self.wal_log_hints)]);
        put(b, off::MAX_CONNECTIONS, &self.max_connections.to_le_bytes());
        put(b, off::MAX_WORKER_PROCESSES, &self.max_worker_processes.to_le_bytes());
        put(b, off::MAX_WAL_SENDERS, &self.max_wal_senders.to_le_bytes());
        put(b, off::MAX_PREPARED_XACTS, &self.max_prepared_xacts.to_le_bytes());
        put(b, off::MAX_LOCKS_PER_XACT, &self.max_locks_per_xact.to_le_bytes());
        put(b, off::TRACK_COMMIT_TIMESTAMP, &[u8::from(self.track_commit_timestamp)]);
        put(b, off::MAX_ALIGN, &self.max_align.to_le_bytes());
        put(b, off::FLOAT_FORMAT, &self.float_format.to_bits().to_le_bytes());
        put(b, off::BLCKSZ, &self.blcksz.to_le_bytes());
        put(b, off::RELSEG_SIZE, &self.relseg_size.to_le_bytes());
        put(b, off::XLOG_BLCKSZ, &self.xlog_blcksz.to_le_bytes());
        put(b, off::XLOG_SEG_SIZE, &self.xlog_seg_size.to_le_bytes());
        put(b, off::NAME_DATA_LEN, &self.name_data_len.to_le_bytes());
        put(b, off::INDEX_MAX_KEYS, &self.index_max_keys.to_le_bytes());
        put(b, off::TOAST_MAX_CHUNK_SIZE, &self.toast_max_chunk_size.to_le_bytes());
        put(b, off::LOBLKSIZE, &self.loblksize.to_le_bytes());
        put(b, off::FLOAT8_BY_VAL, &[u8::from(self.float8_by_val)]);
        put(b, off::DATA_CHECKSUM_VERSION, &self.data_checksum_version.to_le_bytes());
        if layout.has_default_char_signedness() {
            let signed = self.default_char_signedness.unwrap_or(true);
            put(b, off::DEFAULT_CHAR_SIGNEDNESS, &[u8::from(signed)]);
        }
        put(b, layout.mock_authentication_nonce_offset(), &self.mock_authentication_nonce);
        put(b, layout.crc_offset(), &self.crc.to_le_bytes());
        Ok(())
    }
}

pub(super) fn too_short(len: usize, need: usize) -> CoreError {
    CoreError::Format { what: "pg_control", detail: format!("file has {len} bytes; this layout needs at least {need}") }
}
