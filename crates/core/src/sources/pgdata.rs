//! Files of a data directory that describe the cluster rather than hold relations: `global/pg_control` and
//! `PG_VERSION`, read through the backup file system (so a mounted backup reads like a directory) and parsed
//! by the format layer.

use std::path::Path;

use crate::error::{CoreError, Result};
use crate::format::control::{parse_control, parse_control_as, ControlFile, ControlLayout};

/// Reads and parses `<pgdata>/global/pg_control`. If the version fields do not identify a layout
/// but `<pgdata>/PG_VERSION` names a supported major, that major's layout is used and the
/// fallback is listed in `anomalies`. A `PG_VERSION` that disagrees with the file is noted too.
pub fn read_control_file(pgdata: &Path) -> Result<ControlFile> {
    let path = pgdata.join("global").join("pg_control");
    let bytes = crate::sources::backup::vfs::read(&path).map_err(|e| CoreError::io(&path, e))?;
    let pg_version = read_pg_version(pgdata);
    match parse_control(&bytes) {
        Ok(mut cf) => {
            if let Some(m) = pg_version {
                if m != cf.major_version {
                    cf.anomalies
                        .push(format!("PG_VERSION says {m} but pg_control identifies PostgreSQL {}", cf.major_version));
                }
            }
            Ok(cf)
        }
        Err(err) => {
            if let Some(m) = pg_version.filter(|m| ControlLayout::for_major(*m).is_some()) {
                if let Ok(mut cf) = parse_control_as(&bytes, m) {
                    cf.anomalies.insert(0, format!("layout chosen from PG_VERSION ({m}) because: {err}"));
                    return Ok(cf);
                }
            }
            Err(err)
        }
    }
}

/// Major version from `$PGDATA/PG_VERSION` ("15\n"); `None` if absent or unreadable.
fn read_pg_version(pgdata: &Path) -> Option<u32> {
    let text = crate::sources::backup::vfs::read_to_string(&pgdata.join("PG_VERSION")).ok()?;
    text.trim().parse().ok()
}
