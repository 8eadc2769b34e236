//! The value types of pg_control's fields, shown and serialized as `pg_controldata` prints them: WAL
//! positions, 64-bit transaction ids, the cluster state and `wal_level`.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::error::{CoreError, Result};

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
