//! `pg_filenode.map` read from a data directory (or a backup); its format is `format::relmap`.

use crate::error::{CoreError, Result};
use std::path::Path;

pub use crate::format::relmap::{RelMap, RELMAPPER_FILEMAGIC, RELMAPPER_FILENAME};

impl RelMap {
    pub fn read(dir: &Path) -> Result<RelMap> {
        let path = dir.join(RELMAPPER_FILENAME);
        let bytes = crate::sources::backup::vfs::read(&path).map_err(|e| CoreError::io(&path, e))?;
        RelMap::parse(&bytes)
    }
}
