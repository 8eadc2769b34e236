//! Transaction ID arithmetic (`access/transam.h`, `access/transam/transam.c`, `multixact.c`) and the horizons
//! pg_control gives: what a tuple's XIDs and MultiXactIds are compared with, by the visibility judge and by the
//! page checks alike.

/// The transaction horizons a tuple's XIDs must respect, from pg_control (and, with a DSN, the
/// relation's relfrozenxid/relminmxid later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Horizons {
    /// 32-bit part of `nextXid`: XIDs at or past it were never assigned.
    pub next_xid: u32,
    /// `oldestXid`: pg_xact below it may be truncated away.
    pub oldest_xid: u32,
    /// `nextMulti`.
    pub next_multi: u32,
    /// `oldestMulti`.
    pub oldest_multi: u32,
}

/// `FirstNormalTransactionId` (access/transam.h).
pub const FIRST_NORMAL_TRANSACTION_ID: u32 = 3;

/// `TransactionIdPrecedes` (access/transam.c): circular for normal XIDs, plain for special ones.
pub fn xid_precedes(a: u32, b: u32) -> bool {
    if a < FIRST_NORMAL_TRANSACTION_ID || b < FIRST_NORMAL_TRANSACTION_ID {
        return a < b;
    }
    (a.wrapping_sub(b) as i32) < 0
}

/// `MultiXactIdPrecedes` (access/transam/multixact.c): always circular.
pub fn multi_precedes(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
