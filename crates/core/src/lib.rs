//! pgsurgeon-core: PostgreSQL's on-disk formats as Rust data, with no Python in sight.
//!
//! Raw structs keep PostgreSQL's names (`PageHeaderData.pd_lower`, `ItemIdData`,
//! `HeapTupleHeaderData.t_infomask`); parsing never trusts a length it has not checked and never
//! panics on bad bytes. Damage is reported as [`finding::Finding`] values, not printed.

pub mod backup;
pub mod btree;
pub mod bytes;
pub mod catalog;
pub mod rows;
pub use rows::carve;
pub mod checks;
pub mod checksum;
pub mod commit_ts;
pub mod control;
pub mod datum;
pub mod diagnose;
pub mod error;
pub mod finding;
pub mod heap;
pub mod inject;
pub mod inspect;
pub mod itemid;
pub mod multixact;
pub mod page;
pub mod relfile;
pub mod scan;
pub mod slru;
pub mod toast;
pub mod tuple;
pub mod xact;

pub use error::{CoreError, Result};
