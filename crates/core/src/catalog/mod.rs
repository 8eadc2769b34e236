//! The catalog from the data files, for when no server can be asked: relation maps, pg_attribute's description of
//! itself, and catalog rows read through the row engine.

pub mod bootstrap;
pub mod files;
pub mod relmap;

pub use files::{CatalogRows, ClusterFacts, ClusterFiles, ClusterOptions, RelFile};
