//! pgsurgeon-core: PostgreSQL's on-disk formats as Rust data, with no Python in sight.
//!
//! Raw structs keep PostgreSQL's names (`PageHeaderData.pd_lower`, `ItemIdData`,
//! `HeapTupleHeaderData.t_infomask`); parsing never trusts a length it has not checked and never
//! panics on bad bytes. Damage is reported as [`finding::Finding`] values, not printed.
//!
//! The modules are layers; each uses only those listed before it (the `layering` test keeps it so).

/// Errors of every layer.
pub mod error;

/// Per-thread busy time, recorded when `PGSURGEON_PROFILE` is set.
pub mod profile;

/// The vocabulary of damage (codes, severities, findings) shared by every layer.
pub mod finding;

/// PostgreSQL's structs under their own names: page, line pointer, heap and btree tuples, checksum, control file, TOAST.
pub mod format;

/// Where pages come from: relation files of a data directory and base backups.
pub mod sources;

/// Transaction status from the SLRUs and the visibility of heap tuples.
pub mod visibility;

/// Storage health: pgstattuple's and pgstatindex's figures counted from the pages.
pub mod health;

/// Damage detection: page checks, relation scans, inspection and diagnosis.
pub mod checks;

/// Datum decoding: a column's bytes to its text form, per type.
pub mod datum;

/// The row engine: pages to tuples to formatted rows, over a whole relation.
pub mod rows;

/// The catalog read from the data files when no server can be asked.
pub mod catalog;

/// Corruption injectors: pure functions from a page image to its damaged image.
pub mod inject;

pub use error::{CoreError, Result};
