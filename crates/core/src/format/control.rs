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
//! Verified against real files (x86-64, little-endian): every field below was compared with
//! `pg_controldata` output of PostgreSQL 15.18 and 18.6 (checksums on and off, in production,
//! shut down, archive recovery, after `pg_resetwal -e`), and with the `pg_control_*()` SQL
//! functions of 14.23, 16.14 and 17.10. The fixtures live in `tests/data/`.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::error::{CoreError, Result};

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

/// A WAL position (`XLogRecPtr`). Shown and serialized as PostgreSQL prints it: `%X/%X`, the high
/// and low 32 bits in upper-case hex without padding (e.g. `0/1A2B3C8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

impl Serialize for Lsn {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Lsn {
    type Err = CoreError;

    /// Parses `X/X` (hex halves, any case, with or without zero padding).
    fn from_str(text: &str) -> Result<Lsn> {
        let bad = || CoreError::Invalid(format!("not an LSN (expected X/X): {text:?}"));
        let (hi, lo) = text.trim().split_once('/').ok_or_else(bad)?;
        let hi = u32::from_str_radix(hi, 16).map_err(|_| bad())?;
        let lo = u32::from_str_radix(lo, 16).map_err(|_| bad())?;
        Ok(Lsn((u64::from(hi) << 32) | u64::from(lo)))
    }
}

/// A 64-bit transaction id: epoch in the high half, 32-bit xid in the low half
/// (`FullTransactionId`, `src/include/access/transam.h`). Shown and serialized as `epoch:xid`, the
/// form `pg_controldata` prints for NextXID (e.g. `0:745`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FullTransactionId(pub u64);

impl FullTransactionId {
    /// Builds the value from its two halves.
    pub fn from_epoch_and_xid(epoch: u32, xid: u32) -> FullTransactionId {
        FullTransactionId((u64::from(epoch) << 32) | u64::from(xid))
    }

    /// The wraparound epoch (`EpochFromFullTransactionId`).
    pub fn epoch(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The 32-bit xid stored in tuples (`XidFromFullTransactionId`).
    pub fn xid(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Display for FullTransactionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch(), self.xid())
    }
}

impl Serialize for FullTransactionId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Cluster state as stored in `ControlFileData.state` (`src/include/catalog/pg_control.h`).
/// Serialized as the text `pg_controldata` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DBState {
    /// `DB_STARTUP` (0).
    Startup,
    /// `DB_SHUTDOWNED` (1): clean shutdown.
    Shutdowned,
    /// `DB_SHUTDOWNED_IN_RECOVERY` (2): a standby shut down cleanly.
    ShutdownedInRecovery,
    /// `DB_SHUTDOWNING` (3).
    Shutdowning,
    /// `DB_IN_CRASH_RECOVERY` (4).
    InCrashRecovery,
    /// `DB_IN_ARCHIVE_RECOVERY` (5): standby or PITR.
    InArchiveRecovery,
    /// `DB_IN_PRODUCTION` (6): running, or crashed while running.
    InProduction,
    /// Any other value (damage, or a layout we mis-chose).
    Unknown(i32),
}

impl DBState {
    /// Decodes the stored enum value (the numbering is fixed by the enum order in pg_control.h).
    pub fn from_code(code: i32) -> DBState {
        match code {
            0 => DBState::Startup,
            1 => DBState::Shutdowned,
            2 => DBState::ShutdownedInRecovery,
            3 => DBState::Shutdowning,
            4 => DBState::InCrashRecovery,
            5 => DBState::InArchiveRecovery,
            6 => DBState::InProduction,
            other => DBState::Unknown(other),
        }
    }

    /// The stored enum value.
    pub fn code(self) -> i32 {
        match self {
            DBState::Startup => 0,
            DBState::Shutdowned => 1,
            DBState::ShutdownedInRecovery => 2,
            DBState::Shutdowning => 3,
            DBState::InCrashRecovery => 4,
            DBState::InArchiveRecovery => 5,
            DBState::InProduction => 6,
            DBState::Unknown(code) => code,
        }
    }

    /// The words `pg_controldata` prints for this state (`src/bin/pg_controldata/pg_controldata.c`).
    pub fn name(self) -> &'static str {
        match self {
            DBState::Startup => "starting up",
            DBState::Shutdowned => "shut down",
            DBState::ShutdownedInRecovery => "shut down in recovery",
            DBState::Shutdowning => "shutting down",
            DBState::InCrashRecovery => "in crash recovery",
            DBState::InArchiveRecovery => "in archive recovery",
            DBState::InProduction => "in production",
            DBState::Unknown(_) => "unrecognized status code",
        }
    }

    /// True for the two states that need no WAL replay at the next start.
    pub fn is_clean_shutdown(self) -> bool {
        matches!(self, DBState::Shutdowned | DBState::ShutdownedInRecovery)
    }
}

impl fmt::Display for DBState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for DBState {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `wal_level` (`WalLevel`, `src/include/access/xlog.h`). Serialized as its GUC name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WalLevel {
    /// `WAL_LEVEL_MINIMAL` (0).
    Minimal,
    /// `WAL_LEVEL_REPLICA` (1).
    Replica,
    /// `WAL_LEVEL_LOGICAL` (2).
    Logical,
    /// Any other value.
    Unknown(i32),
}

impl WalLevel {
    /// Decodes the stored enum value.
    pub fn from_code(code: i32) -> WalLevel {
        match code {
            0 => WalLevel::Minimal,
            1 => WalLevel::Replica,
            2 => WalLevel::Logical,
            other => WalLevel::Unknown(other),
        }
    }

    /// The stored enum value.
    pub fn code(self) -> i32 {
        match self {
            WalLevel::Minimal => 0,
            WalLevel::Replica => 1,
            WalLevel::Logical => 2,
            WalLevel::Unknown(code) => code,
        }
    }

    /// The name `pg_controldata` prints.
    pub fn name(self) -> &'static str {
        match self {
            WalLevel::Minimal => "minimal",
            WalLevel::Replica => "replica",
            WalLevel::Logical => "logical",
            WalLevel::Unknown(_) => "unrecognized \"wal_level\"",
        }
    }
}

impl fmt::Display for WalLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for WalLevel {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

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
    /// `state` (raw enum value; see [`DBState::from_code`]).
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
    /// `floatFormat` (should be [`FLOATFORMAT_VALUE`]).
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

fn hex(bytes: &[u8]) -> String {
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

fn u32_at(buf: &[u8], at: usize) -> Result<u32> {
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

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
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
    /// stored `crc` field is written as it is; call [`rewrite_crc`] afterwards for a valid file.
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

fn too_short(len: usize, need: usize) -> CoreError {
    CoreError::Format { what: "pg_control", detail: format!("file has {len} bytes; this layout needs at least {need}") }
}

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
}

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
fn wal_file_name(tli: u32, lsn: Lsn, seg_size: u32) -> Option<String> {
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

fn build(bytes: &[u8], layout: ControlLayout, major: u32) -> Result<ControlFile> {
    let d = ControlFileData::decode(bytes, layout)?;
    let crc_computed = compute_crc(bytes, layout)?;
    let crc_ok = crc_computed == d.crc;
    let mut anomalies = Vec::new();

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
    if !crc_ok {
        let mut note = format!("CRC mismatch: stored {:08x}, computed {crc_computed:08x}", d.crc);
        // Another layout whose CRC matches means a version mix-up rather than damage.
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
        anomalies.push(note);
    }
    let state = DBState::from_code(d.state);
    if let DBState::Unknown(code) = state {
        anomalies.push(format!("unknown cluster state {code}"));
    }
    let wal_level = WalLevel::from_code(d.wal_level);
    if let WalLevel::Unknown(code) = wal_level {
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

    let c = &d.check_point_copy;
    Ok(ControlFile {
        major_version: major,
        layout,
        file_size: bytes.len(),
        system_identifier: d.system_identifier,
        pg_control_version: d.pg_control_version,
        catalog_version_no: d.catalog_version_no,
        state,
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
        wal_level,
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
        crc_ok,
        anomalies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct with a distinct value in every field, so a wrong offset shows up as a mismatch.
    fn sample(layout: ControlLayout) -> ControlFileData {
        ControlFileData {
            system_identifier: 0x0102_0304_0506_0708,
            pg_control_version: layout.pg_control_version(),
            catalog_version_no: match layout {
                ControlLayout::V1300 => 202307071,
                ControlLayout::V1700 => 202406281,
                ControlLayout::V1800 => 202506291,
            },
            state: 4,
            time: 1_700_000_001,
            check_point: Lsn(0x0000_0002_0000_0010),
            check_point_copy: CheckPoint {
                redo: Lsn(0x0000_0002_0000_0008),
                this_timeline_id: 3,
                prev_timeline_id: 2,
                full_page_writes: true,
                wal_level: layout.has_checkpoint_wal_level().then_some(WalLevel::Logical),
                next_xid: FullTransactionId::from_epoch_and_xid(5, 4_000_000_000),
                next_oid: 11,
                next_multi: 12,
                next_multi_offset: 13,
                oldest_xid: 14,
                oldest_xid_db: 15,
                oldest_multi: 16,
                oldest_multi_db: 17,
                time: 1_700_000_002,
                oldest_commit_ts_xid: 18,
                newest_commit_ts_xid: 19,
                oldest_active_xid: 20,
            },
            unlogged_lsn: Lsn(21),
            min_recovery_point: Lsn(22),
            min_recovery_point_tli: 23,
            backup_start_point: Lsn(24),
            backup_end_point: Lsn(25),
            backup_end_required: true,
            wal_level: 2,
            wal_log_hints: true,
            max_connections: 26,
            max_worker_processes: 27,
            max_wal_senders: 28,
            max_prepared_xacts: 29,
            max_locks_per_xact: 30,
            track_commit_timestamp: true,
            max_align: 8,
            float_format: FLOATFORMAT_VALUE,
            blcksz: 8192,
            relseg_size: 131072,
            xlog_blcksz: 8192,
            xlog_seg_size: 16 << 20,
            name_data_len: 64,
            index_max_keys: 32,
            toast_max_chunk_size: 1996,
            loblksize: 2048,
            float8_by_val: true,
            data_checksum_version: 1,
            default_char_signedness: layout.has_default_char_signedness().then_some(false),
            mock_authentication_nonce: std::array::from_fn(|i| i as u8 + 0x40),
            crc: 0,
        }
    }

    #[test]
    fn synthetic_round_trip_every_layout() {
        for layout in ControlLayout::ALL {
            let mut data = sample(layout);
            let mut buf = vec![0u8; PG_CONTROL_FILE_SIZE];
            data.encode_into(&mut buf, layout).unwrap();
            data.crc = rewrite_crc(&mut buf).unwrap();
            assert_eq!(ControlFileData::decode(&buf, layout).unwrap(), data);
            let cf = parse_control(&buf).unwrap();
            assert!(cf.crc_ok, "{layout:?}");
            assert!(cf.anomalies.is_empty(), "{layout:?}: {:?}", cf.anomalies);
            assert_eq!(cf.state, DBState::InCrashRecovery);
            assert_eq!(cf.next_xid.to_string(), "5:4000000000");
            assert_eq!(cf.redo_wal_file.as_deref(), Some("000000030000000200000000"));
            assert_eq!(cf.default_char_signedness, data.default_char_signedness);
            // Every field lies inside the struct and before the CRC.
            assert!(layout.mock_authentication_nonce_offset() + MOCK_AUTH_NONCE_LEN <= layout.crc_offset());
            assert!(layout.crc_offset() + 4 <= layout.size());
        }
    }

    #[test]
    fn wrong_layout_crc_is_recognised() {
        // An intact 18 file read with the 17 layout (say PG_VERSION was wrong): the CRC fails at
        // 17's offset but matches at 18's, which points at a version mix-up, not damage.
        let mut buf = vec![0u8; PG_CONTROL_FILE_SIZE];
        sample(ControlLayout::V1800).encode_into(&mut buf, ControlLayout::V1800).unwrap();
        rewrite_crc(&mut buf).unwrap();
        let cf = parse_control_as(&buf, 17).unwrap();
        assert!(!cf.crc_ok);
        assert!(cf.anomalies.iter().any(|a| a.contains("does match the layout of pg_control_version 1800")));
        assert!(cf.anomalies.iter().any(|a| a.contains("pg_control_version is 1800")));
    }

    #[test]
    fn crc32c_is_postgres_crc() {
        // Standard CRC-32C check value, which PostgreSQL's pg_crc32c also produces.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn lsn_text() {
        assert_eq!(Lsn(0x1A2B3C8).to_string(), "0/1A2B3C8");
        assert_eq!(Lsn(0x0000_0001_0000_00FF).to_string(), "1/FF");
        assert_eq!("0/1a2b3c8".parse::<Lsn>().unwrap(), Lsn(0x1A2B3C8));
        assert_eq!("A/0".parse::<Lsn>().unwrap(), Lsn(10 << 32));
        for bad in ["", "1", "1/", "/1", "x/1", "1/2/3", "100000000/0"] {
            assert!(bad.parse::<Lsn>().is_err(), "{bad}");
        }
        assert_eq!(serde_json::to_string(&Lsn(0x10)).unwrap(), "\"0/10\"");
    }

    #[test]
    fn enums_round_trip() {
        for code in -1..9 {
            assert_eq!(DBState::from_code(code).code(), code);
            assert_eq!(WalLevel::from_code(code).code(), code);
        }
        assert_eq!(DBState::from_code(1).name(), "shut down");
        assert_eq!(DBState::from_code(2).name(), "shut down in recovery");
        assert_eq!(DBState::from_code(99).name(), "unrecognized status code");
        assert!(DBState::Shutdowned.is_clean_shutdown());
        assert!(!DBState::InProduction.is_clean_shutdown());
        assert_eq!(serde_json::to_string(&DBState::InProduction).unwrap(), "\"in production\"");
    }

    #[test]
    fn catversion_ranges() {
        assert_eq!(major_from_catversion(202007201), None);
        assert_eq!(major_from_catversion(202007202), Some(14));
        assert_eq!(major_from_catversion(202107181), Some(14));
        assert_eq!(major_from_catversion(202209061), Some(15));
        assert_eq!(major_from_catversion(202307071), Some(16));
        assert_eq!(major_from_catversion(202406281), Some(17));
        assert_eq!(major_from_catversion(202506291), Some(18));
        assert_eq!(major_from_catversion(202506292), None);
        assert_eq!(major_from_catversion(0), None);
    }

    #[test]
    fn wal_file_names() {
        assert_eq!(wal_file_name(1, Lsn(0x1CA7450), 16 << 20).as_deref(), Some("000000010000000000000001"));
        assert_eq!(wal_file_name(2, Lsn(0x0000_0003_2100_0000), 16 << 20).as_deref(), Some("000000020000000300000021"));
        assert_eq!(wal_file_name(1, Lsn(1), 0), None);
        assert_eq!(wal_file_name(1, Lsn(1), 3 << 20), None);
    }
}
