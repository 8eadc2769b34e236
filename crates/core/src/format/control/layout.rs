//! Where the fields of `ControlFileData` lie: the byte offsets shared by the three layouts of 14–18, and
//! [`ControlLayout`] for the places where they differ.

use serde::Serialize;

/// Byte offsets of the fields inside `ControlFileData` on x86-64 (LP64, 8-byte alignment of
/// int64/double), derived from the struct definitions in `src/include/catalog/pg_control.h` of
/// 14–18 and confirmed on real files. They are identical in the three layouts except where a
/// [`ControlLayout`] method says otherwise.
pub mod off {
    /// `system_identifier` (uint64).
    // src/include/catalog/pg_control.h
    pub const SYSTEM_IDENTIFIER: usize = 0;
    /// `pg_control_version` (uint32); kept at 8 in every version by design.
    // src/include/catalog/pg_control.h
    pub const PG_CONTROL_VERSION: usize = 8;
    /// `catalog_version_no` (uint32).
    // src/include/catalog/pg_control.h
    pub const CATALOG_VERSION_NO: usize = 12;
    /// `state` (DBState enum, int).
    // src/include/catalog/pg_control.h
    pub const STATE: usize = 16;
    /// `time` (pg_time_t, int64).
    // src/include/catalog/pg_control.h
    pub const TIME: usize = 24;
    /// `checkPoint` (XLogRecPtr).
    // src/include/catalog/pg_control.h
    pub const CHECK_POINT: usize = 32;
    /// Start of `checkPointCopy` (struct CheckPoint, 8-aligned).
    // src/include/catalog/pg_control.h
    pub const CHECK_POINT_COPY: usize = 40;
    /// `checkPointCopy.redo` (XLogRecPtr).
    // src/include/catalog/pg_control.h
    pub const CKPT_REDO: usize = 40;
    /// `checkPointCopy.ThisTimeLineID`.
    // src/include/catalog/pg_control.h
    pub const CKPT_THIS_TIMELINE_ID: usize = 48;
    /// `checkPointCopy.PrevTimeLineID`.
    // src/include/catalog/pg_control.h
    pub const CKPT_PREV_TIMELINE_ID: usize = 52;
    /// `checkPointCopy.fullPageWrites` (bool).
    // src/include/catalog/pg_control.h
    pub const CKPT_FULL_PAGE_WRITES: usize = 56;
    /// `checkPointCopy.wal_level` (int), 17+ only; these bytes are padding in 14–16.
    // src/include/catalog/pg_control.h (17)
    pub const CKPT_WAL_LEVEL: usize = 60;
    /// `checkPointCopy.nextXid` (FullTransactionId, uint64).
    // src/include/catalog/pg_control.h
    pub const CKPT_NEXT_XID: usize = 64;
    /// `checkPointCopy.nextOid`.
    // src/include/catalog/pg_control.h
    pub const CKPT_NEXT_OID: usize = 72;
    /// `checkPointCopy.nextMulti`.
    // src/include/catalog/pg_control.h
    pub const CKPT_NEXT_MULTI: usize = 76;
    /// `checkPointCopy.nextMultiOffset` (uint32 in 14–18).
    // src/include/catalog/pg_control.h
    pub const CKPT_NEXT_MULTI_OFFSET: usize = 80;
    /// `checkPointCopy.oldestXid`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_XID: usize = 84;
    /// `checkPointCopy.oldestXidDB`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_XID_DB: usize = 88;
    /// `checkPointCopy.oldestMulti`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_MULTI: usize = 92;
    /// `checkPointCopy.oldestMultiDB`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_MULTI_DB: usize = 96;
    /// `checkPointCopy.time` (pg_time_t, 8-aligned).
    // src/include/catalog/pg_control.h
    pub const CKPT_TIME: usize = 104;
    /// `checkPointCopy.oldestCommitTsXid`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_COMMIT_TS_XID: usize = 112;
    /// `checkPointCopy.newestCommitTsXid`.
    // src/include/catalog/pg_control.h
    pub const CKPT_NEWEST_COMMIT_TS_XID: usize = 116;
    /// `checkPointCopy.oldestActiveXid`.
    // src/include/catalog/pg_control.h
    pub const CKPT_OLDEST_ACTIVE_XID: usize = 120;
    /// `unloggedLSN` (XLogRecPtr).
    // src/include/catalog/pg_control.h
    pub const UNLOGGED_LSN: usize = 128;
    /// `minRecoveryPoint`.
    // src/include/catalog/pg_control.h
    pub const MIN_RECOVERY_POINT: usize = 136;
    /// `minRecoveryPointTLI`.
    // src/include/catalog/pg_control.h
    pub const MIN_RECOVERY_POINT_TLI: usize = 144;
    /// `backupStartPoint`.
    // src/include/catalog/pg_control.h
    pub const BACKUP_START_POINT: usize = 152;
    /// `backupEndPoint`.
    // src/include/catalog/pg_control.h
    pub const BACKUP_END_POINT: usize = 160;
    /// `backupEndRequired` (bool).
    // src/include/catalog/pg_control.h
    pub const BACKUP_END_REQUIRED: usize = 168;
    /// `wal_level` (int).
    // src/include/catalog/pg_control.h
    pub const WAL_LEVEL: usize = 172;
    /// `wal_log_hints` (bool).
    // src/include/catalog/pg_control.h
    pub const WAL_LOG_HINTS: usize = 176;
    /// `MaxConnections` (int).
    // src/include/catalog/pg_control.h
    pub const MAX_CONNECTIONS: usize = 180;
    /// `max_worker_processes` (int).
    // src/include/catalog/pg_control.h
    pub const MAX_WORKER_PROCESSES: usize = 184;
    /// `max_wal_senders` (int).
    // src/include/catalog/pg_control.h
    pub const MAX_WAL_SENDERS: usize = 188;
    /// `max_prepared_xacts` (int).
    // src/include/catalog/pg_control.h
    pub const MAX_PREPARED_XACTS: usize = 192;
    /// `max_locks_per_xact` (int).
    // src/include/catalog/pg_control.h
    pub const MAX_LOCKS_PER_XACT: usize = 196;
    /// `track_commit_timestamp` (bool).
    // src/include/catalog/pg_control.h
    pub const TRACK_COMMIT_TIMESTAMP: usize = 200;
    /// `maxAlign` (uint32).
    // src/include/catalog/pg_control.h
    pub const MAX_ALIGN: usize = 204;
    /// `floatFormat` (double, 8-aligned).
    // src/include/catalog/pg_control.h
    pub const FLOAT_FORMAT: usize = 208;
    /// `blcksz`.
    // src/include/catalog/pg_control.h
    pub const BLCKSZ: usize = 216;
    /// `relseg_size`.
    // src/include/catalog/pg_control.h
    pub const RELSEG_SIZE: usize = 220;
    /// `xlog_blcksz`.
    // src/include/catalog/pg_control.h
    pub const XLOG_BLCKSZ: usize = 224;
    /// `xlog_seg_size`.
    // src/include/catalog/pg_control.h
    pub const XLOG_SEG_SIZE: usize = 228;
    /// `nameDataLen`.
    // src/include/catalog/pg_control.h
    pub const NAME_DATA_LEN: usize = 232;
    /// `indexMaxKeys`.
    // src/include/catalog/pg_control.h
    pub const INDEX_MAX_KEYS: usize = 236;
    /// `toast_max_chunk_size`.
    // src/include/catalog/pg_control.h
    pub const TOAST_MAX_CHUNK_SIZE: usize = 240;
    /// `loblksize`.
    // src/include/catalog/pg_control.h
    pub const LOBLKSIZE: usize = 244;
    /// `float8ByVal` (bool).
    // src/include/catalog/pg_control.h
    pub const FLOAT8_BY_VAL: usize = 248;
    /// `data_checksum_version` (uint32).
    // src/include/catalog/pg_control.h
    pub const DATA_CHECKSUM_VERSION: usize = 252;
    /// `default_char_signedness` (bool), 18 only.
    // src/include/catalog/pg_control.h (18)
    pub const DEFAULT_CHAR_SIGNEDNESS: usize = 256;
}

/// The three `ControlFileData` layouts of PostgreSQL 14–18, named by their `pg_control_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ControlLayout {
    /// 14, 15, 16.
    V1300,
    /// 17: `CheckPoint` gained `wal_level`.
    V1700,
    /// 18: `default_char_signedness` added.
    V1800,
}

impl ControlLayout {
    /// All layouts this module knows, oldest first.
    pub const ALL: [ControlLayout; 3] = [ControlLayout::V1300, ControlLayout::V1700, ControlLayout::V1800];

    /// The `PG_CONTROL_VERSION` that announces this layout.
    // src/include/catalog/pg_control.h (PG_CONTROL_VERSION) of 14–16, 17 and 18
    pub fn pg_control_version(self) -> u32 {
        match self {
            ControlLayout::V1300 => 1300,
            ControlLayout::V1700 => 1700,
            ControlLayout::V1800 => 1800,
        }
    }

    /// Layout announced by a `pg_control_version` value, if known.
    pub fn for_pg_control_version(version: u32) -> Option<ControlLayout> {
        ControlLayout::ALL.into_iter().find(|l| l.pg_control_version() == version)
    }

    /// Layout used by a major version (14..=18).
    pub fn for_major(major: u32) -> Option<ControlLayout> {
        match major {
            14..=16 => Some(ControlLayout::V1300),
            17 => Some(ControlLayout::V1700),
            18 => Some(ControlLayout::V1800),
            _ => None,
        }
    }

    /// Whether `CheckPoint` carries `wal_level` (17+).
    pub fn has_checkpoint_wal_level(self) -> bool {
        !matches!(self, ControlLayout::V1300)
    }

    /// Whether `default_char_signedness` exists (18).
    pub fn has_default_char_signedness(self) -> bool {
        matches!(self, ControlLayout::V1800)
    }

    /// Offset of `mock_authentication_nonce`: right after the last bool before it (char array,
    /// no alignment), so 18's extra bool shifts it by one.
    pub fn mock_authentication_nonce_offset(self) -> usize {
        match self {
            ControlLayout::V1300 | ControlLayout::V1700 => 256,
            ControlLayout::V1800 => 257,
        }
    }

    /// `offsetof(ControlFileData, crc)`: the CRC covers every byte before it. The nonce ends at
    /// 288 (or 289 in 18, which rounds up to 292 for the uint32).
    pub fn crc_offset(self) -> usize {
        match self {
            ControlLayout::V1300 | ControlLayout::V1700 => 288,
            ControlLayout::V1800 => 292,
        }
    }

    /// `sizeof(ControlFileData)` (296 in all three: the struct is padded to 8 bytes).
    pub fn size(self) -> usize {
        296
    }
}
