//! Relation file names and paths as `GetRelationPath` (`src/common/relpath.c`) builds them, and their
//! parsing. Only names, no file access: the backup reader (which keeps catalog files in memory) and relation
//! discovery (relfile.rs) both use them. See relfile.rs for the forms a data directory holds.

use std::fmt;

use serde::{Serialize, Serializer};

/// OID of tablespace `pg_default` (`base/`).
// src/include/catalog/pg_tablespace.dat (DEFAULTTABLESPACE_OID)
pub const DEFAULTTABLESPACE_OID: u32 = 1663;

/// OID of tablespace `pg_global` (`global/`).
// src/include/catalog/pg_tablespace.dat (GLOBALTABLESPACE_OID)
pub const GLOBALTABLESPACE_OID: u32 = 1664;

/// Directory of tablespace links, relative to the data directory.
// src/include/common/relpath.h (PG_TBLSPC_DIR)
pub const PG_TBLSPC_DIR: &str = "pg_tblspc";

/// Directory for temporary (sort/hash spill) files, inside `base/` and tablespace version dirs.
// src/include/common/file_utils.h (PG_TEMP_FILES_DIR)
pub const PG_TEMP_FILES_DIR: &str = "pgsql_tmp";

/// Most digits `%u` prints for an OID; longer numbers cannot be relation files.
// src/include/common/relpath.h (OIDCHARS)
pub const OIDCHARS: usize = 10;

/// A relation fork (`ForkNumber`, `src/include/common/relpath.h`). Serialized as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fork {
    /// `MAIN_FORKNUM` (0): the data; no file-name suffix.
    Main,
    /// `FSM_FORKNUM` (1): free space map, `_fsm`.
    Fsm,
    /// `VISIBILITYMAP_FORKNUM` (2): visibility map, `_vm`.
    Vm,
    /// `INIT_FORKNUM` (3): init fork of unlogged relations, `_init`.
    Init,
}

impl Fork {
    /// All forks in fork-number order.
    pub const ALL: [Fork; 4] = [Fork::Main, Fork::Fsm, Fork::Vm, Fork::Init];

    /// Fork name as in `forkNames` (`src/common/relpath.c`).
    pub fn as_str(self) -> &'static str {
        match self {
            Fork::Main => "main",
            Fork::Fsm => "fsm",
            Fork::Vm => "vm",
            Fork::Init => "init",
        }
    }

    /// `ForkNumber` value.
    pub fn number(self) -> u8 {
        match self {
            Fork::Main => 0,
            Fork::Fsm => 1,
            Fork::Vm => 2,
            Fork::Init => 3,
        }
    }

    /// Fork from its name ("main", "fsm", "vm", "init").
    pub fn from_name(name: &str) -> Option<Fork> {
        Fork::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The file-name suffix: empty for main, `_<name>` otherwise.
    pub fn suffix(self) -> String {
        match self {
            Fork::Main => String::new(),
            other => format!("_{}", other.as_str()),
        }
    }
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Fork {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The parts of a relation file name (no directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RelFileName {
    /// Backend (proc) number of a temporary relation (`t<n>_…`), `None` for permanent ones.
    pub temp_backend: Option<u32>,
    /// Relfilenode (file number).
    pub relfilenode: u32,
    /// Fork.
    pub fork: Fork,
    /// Segment number (0 for the unsuffixed file).
    pub segno: u32,
}

/// Digits with no sign, no leading zero, at most `OIDCHARS` long, fitting u32, not zero.
/// PostgreSQL never writes other forms, so anything else is a stray file, not a relation.
pub(crate) fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > OIDCHARS || !text.bytes().all(|b| b.is_ascii_digit()) || text.starts_with('0') {
        return None;
    }
    text.parse::<u32>().ok()
}

/// Parses a relation file name such as `16384`, `16384_fsm.2` or `t3_16390_vm`. Returns `None` for
/// anything PostgreSQL would not have created as a relation segment (`pg_filenode.map`,
/// `PG_VERSION`, `16384.0`, `016384`, `16384_main`, `*.tmp`, …).
pub fn parse_relation_file_name(name: &str) -> Option<RelFileName> {
    // Temporary relations: 't' backend '_' rest (relpath.c GetRelationPath).
    let (temp_backend, rest) = match name.strip_prefix('t') {
        Some(tail) => {
            let (backend, rest) = tail.split_once('_')?;
            // Backend/proc numbers start at 0 (17+) or 1 (14–16); "0" is allowed, leading zeros not.
            let backend = if backend == "0" { 0 } else { parse_number(backend)? };
            (Some(backend), rest)
        }
        None => (None, name),
    };
    let (stem, segno) = match rest.split_once('.') {
        Some((stem, seg)) => (stem, parse_number(seg)?),
        None => (rest, 0),
    };
    let (number, fork) = match stem.split_once('_') {
        Some((number, fork_name)) => {
            let fork = Fork::from_name(fork_name)?;
            // The main fork never carries a suffix.
            if fork == Fork::Main {
                return None;
            }
            (number, fork)
        }
        None => (stem, Fork::Main),
    };
    Some(RelFileName { temp_backend, relfilenode: parse_number(number)?, fork, segno })
}

/// Name of a tablespace's version subdirectory, `PG_<major>_<catversion>`
/// (`TABLESPACE_VERSION_DIRECTORY`, `src/include/common/relpath.h`).
pub fn tablespace_version_directory(major_version: u32, catversion: u32) -> String {
    format!("PG_{major_version}_{catversion}")
}

/// Directory of a database in a tablespace, relative to the data directory (`GetDatabasePath`).
/// For pg_global the database OID is ignored: shared relations have none.
pub fn database_dir(tablespace_oid: u32, database_oid: u32, major_version: u32, catversion: u32) -> String {
    match tablespace_oid {
        GLOBALTABLESPACE_OID => "global".to_string(),
        DEFAULTTABLESPACE_OID => format!("base/{database_oid}"),
        spc => {
            format!("{PG_TBLSPC_DIR}/{spc}/{}/{database_oid}", tablespace_version_directory(major_version, catversion))
        }
    }
}

/// File name of one segment: `[t<backend>_]<relfilenode>[_<fork>][.<segno>]`.
pub fn relation_file_name(relfilenode: u32, fork: Fork, segno: u32, temp_backend: Option<u32>) -> String {
    let mut name = match temp_backend {
        Some(backend) => format!("t{backend}_{relfilenode}"),
        None => relfilenode.to_string(),
    };
    name.push_str(&fork.suffix());
    if segno > 0 {
        name.push_str(&format!(".{segno}"));
    }
    name
}

/// Path of a permanent relation's segment relative to the data directory: the inverse of what
/// [`discover`](crate::sources::relfile::discover) parses (`GetRelationPath` plus md.c's segment suffix).
pub fn relation_path(
    tablespace_oid: u32,
    database_oid: u32,
    relfilenode: u32,
    fork: Fork,
    segno: u32,
    major_version: u32,
    catversion: u32,
) -> String {
    format!(
        "{}/{}",
        database_dir(tablespace_oid, database_oid, major_version, catversion),
        relation_file_name(relfilenode, fork, segno, None)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(temp_backend: Option<u32>, relfilenode: u32, fork: Fork, segno: u32) -> RelFileName {
        RelFileName { temp_backend, relfilenode, fork, segno }
    }

    #[test]
    fn parses_every_form_postgres_writes() {
        let cases = [
            ("16384", name(None, 16384, Fork::Main, 0)),
            ("16384.1", name(None, 16384, Fork::Main, 1)),
            ("16384_fsm", name(None, 16384, Fork::Fsm, 0)),
            ("16384_vm.12", name(None, 16384, Fork::Vm, 12)),
            ("16384_init", name(None, 16384, Fork::Init, 0)),
            ("t3_16384", name(Some(3), 16384, Fork::Main, 0)),
            ("t0_16384_fsm.2", name(Some(0), 16384, Fork::Fsm, 2)),
            ("4294967295", name(None, u32::MAX, Fork::Main, 0)),
        ];
        for (text, want) in cases {
            assert_eq!(parse_relation_file_name(text), Some(want), "{text}");
            assert_eq!(relation_file_name(want.relfilenode, want.fork, want.segno, want.temp_backend), text);
        }
    }

    #[test]
    fn rejects_everything_else() {
        for text in [
            "",
            "PG_VERSION",
            "pg_filenode.map",
            "pg_internal.init",
            "pg_control",
            "16384.tmp",
            "16384_main",
            "16384_FSM",
            "16384_fsm_vm",
            "16384_",
            "16384.",
            "16384.0",
            "16384.01",
            "016384",
            "0",
            "4294967296",
            "12345678901",
            "+16384",
            "-16384",
            "16384 ",
            "t",
            "t_16384",
            "t03_16384",
            "t3",
            "t3_",
            "tt3_16384",
            "t3_t4_16384",
            "pgsql_tmp",
        ] {
            assert_eq!(parse_relation_file_name(text), None, "{text:?}");
        }
    }
}
