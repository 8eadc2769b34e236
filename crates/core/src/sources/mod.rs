//! Where pages come from: relation files in a data directory (naming, discovery, segments) and base
//! backups read in place through a small virtual file system.

pub mod backup;
pub mod blocks;
pub mod mapped;
pub mod pgdata;
pub mod relfile;
pub mod relpath;
