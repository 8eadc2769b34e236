//! The catalog read from a data directory with no server: pg_control for the cluster's shape, the relation maps for
//! the mapped catalogs, and every catalog's rows carved with the row engine, filtered by visibility through pg_xact.
//! The columns of each catalog come from pg_attribute's rows (see [`super::bootstrap`]), so one build reads
//! PostgreSQL 14 to 18 and catalogs rewritten by VACUUM FULL (new file numbers, in the maps or in pg_class).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::bootstrap::{attribute_layout, described, rel_desc, CatAttr, ATTRIBUTE_RELATION_ID};
use super::relmap::RelMap;
use crate::datum::TypeDesc;
use crate::error::{CoreError, Result};
use crate::format::tuple::RelDesc;
use crate::rows::carve::{CarveConfig, Carver, ColumnOut};
use crate::rows::output::{Batch, Certainty};
use crate::sources::blocks::{BlockReader, SegFile};
use crate::sources::pgdata::read_control_file;
use crate::sources::relpath::{relation_path, Fork, DEFAULTTABLESPACE_OID, GLOBALTABLESPACE_OID};
use crate::visibility::xact::{Clog, Verdict};

/// Catalog OIDs (`CATALOG(…, oid)` in src/include/catalog/pg_*.h).
pub mod oids {
    pub const PG_TYPE: u32 = 1247;
    pub const PG_ATTRIBUTE: u32 = 1249;
    pub const PG_PROC: u32 = 1255;
    pub const PG_CLASS: u32 = 1259;
    pub const PG_DATABASE: u32 = 1262;
    /// `Template1DbOid` (catalog/pg_database.dat): always there, so shared catalogs are described from it first.
    pub const TEMPLATE1: u32 = 1;
}

/// What the caller may say about the cluster when pg_control cannot (its CRC is damaged, or it is gone).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterOptions {
    #[serde(default)]
    pub block_size: Option<u32>,
    #[serde(default)]
    pub pg_version: Option<u32>,
    /// RELSEG_SIZE in blocks.
    #[serde(default)]
    pub segment_blocks: Option<u32>,
}

/// The cluster's shape, and how sure we are of it.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterFacts {
    pub major: u32,
    pub server_version_num: u32,
    pub blcksz: u32,
    pub relseg_size: u32,
    pub catversion: u32,
    pub checksums: bool,
    pub control_ok: bool,
    pub clean_shutdown: bool,
    pub system_identifier: u64,
    pub next_xid: u32,
    pub oldest_xid: u32,
    /// Why a value was not taken from pg_control, and other doubts.
    pub warnings: Vec<String>,
}

fn plausible_block_size(b: u32) -> bool {
    b.is_power_of_two() && (1024..=32768).contains(&b)
}

impl ClusterFacts {
    pub fn read(pgdata: &Path, opts: &ClusterOptions) -> Result<ClusterFacts> {
        let pg_version = crate::sources::backup::vfs::read_to_string(&pgdata.join("PG_VERSION"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        let mut warnings = Vec::new();
        let control = match read_control_file(pgdata) {
            Ok(c) => Some(c),
            Err(e) => {
                warnings.push(format!("global/pg_control cannot be used: {e}"));
                None
            }
        };
        let trusted = control.as_ref().filter(|c| c.crc_ok);
        if let Some(c) = control.as_ref().filter(|c| !c.crc_ok) {
            warnings.push(format!(
                "global/pg_control fails its CRC check; its values are used only where they are plausible \
                 (block size {}, segment size {} blocks)",
                c.blcksz, c.relseg_size
            ));
        }
        let major = opts.pg_version.or(pg_version).or(control.as_ref().map(|c| c.major_version)).ok_or_else(|| {
            CoreError::Invalid(
                "the major version is unknown: PG_VERSION and pg_control are unreadable; give it with --pg-version"
                    .into(),
            )
        })?;
        let blcksz = match opts.block_size {
            Some(b) => b,
            None => match control.as_ref().map(|c| c.blcksz) {
                Some(b) if plausible_block_size(b) => b,
                Some(b) => {
                    return Err(CoreError::Invalid(format!(
                        "pg_control gives block size {b}, which cannot be right; give it with --block-size"
                    )))
                }
                None => {
                    warnings.push("block size assumed to be 8192 (the default build)".into());
                    8192
                }
            },
        };
        if !plausible_block_size(blcksz) {
            return Err(CoreError::Invalid(format!("block size {blcksz} is not a power of two from 1024 to 32768")));
        }
        let relseg_size = match opts.segment_blocks {
            Some(s) => s,
            None => match control.as_ref().map(|c| c.relseg_size) {
                Some(s) if s > 0 && u64::from(s) * u64::from(blcksz) <= 1 << 40 => s,
                _ => {
                    warnings.push("segment size assumed to be 1 GB (the default build)".into());
                    ((1u64 << 30) / u64::from(blcksz)) as u32
                }
            },
        };
        let catversion = control
            .as_ref()
            .map(|c| c.catalog_version_no)
            .filter(|_| trusted.is_some())
            .or_else(|| tablespace_catversion(pgdata, major))
            .or(control.as_ref().map(|c| c.catalog_version_no))
            .unwrap_or(0);
        Ok(ClusterFacts {
            major,
            server_version_num: major * 10000,
            blcksz,
            relseg_size,
            catversion,
            checksums: trusted.is_some_and(|c| c.data_checksum_version != 0),
            control_ok: trusted.is_some(),
            clean_shutdown: trusted.is_some_and(|c| c.state.is_clean_shutdown()),
            system_identifier: control.as_ref().map_or(0, |c| c.system_identifier),
            next_xid: trusted.map_or(0, |c| c.next_xid.xid()),
            oldest_xid: trusted.map_or(0, |c| c.oldest_xid),
            warnings,
        })
    }
}

/// The catalog version from a tablespace directory name (`PG_<major>_<catversion>`), for when pg_control is not
/// trusted.
fn tablespace_catversion(pgdata: &Path, major: u32) -> Option<u32> {
    let prefix = format!("PG_{major}_");
    for (_, spc) in crate::sources::backup::vfs::read_dir(&pgdata.join("pg_tblspc")).ok()? {
        for (name, _) in crate::sources::backup::vfs::read_dir(&spc).ok()? {
            if let Some(rest) = name.strip_prefix(&prefix) {
                if let Ok(v) = rest.parse() {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Rows of one catalog: the asked columns as the server prints them (`NULL` as None).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CatalogRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// Asked columns this catalog does not have in this version.
    pub absent: Vec<String>,
    /// Rows left out because their visibility or values could not be decided, and why.
    pub doubtful: Vec<String>,
}

/// Where a relation's files are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RelFile {
    pub relfilenode: u32,
    pub reltablespace: u32,
    /// The database whose directory holds it (0 for pg_global).
    pub database: u32,
}

#[derive(Debug)]
struct DbCatalog {
    map: RelMap,
    /// attrelid -> its columns.
    attrs: HashMap<u32, Vec<CatAttr>>,
    /// pg_class oid -> (relfilenode, reltablespace, reltoastrelid).
    classes: HashMap<u32, (u32, u32, u32)>,
}

/// A data directory read as a catalog.
#[derive(Debug)]
pub struct ClusterFiles {
    pub pgdata: PathBuf,
    pub facts: ClusterFacts,
    global: RelMap,
    dbs: Mutex<HashMap<u32, Arc<DbCatalog>>>,
    /// pg_type's names per database, read once for [`ClusterFiles::table_desc`].
    type_names: Mutex<HashMap<u32, Arc<HashMap<u32, String>>>>,
}

fn text_desc(a: &CatAttr) -> Option<TypeDesc> {
    // Catalog columns are of built-in types printed by their own output routines; arrays are not asked for, and
    // attmissingval (anyarray) is asked as its raw bytes (printed like bytea) and decoded by the caller who knows
    // the column's type.
    let oid = match a.typid {
        2277 => 17,
        t => t,
    };
    // Arrays of built-in scalars (pg_constraint.conkey is int2[]): element storage from pg_type.dat.
    let elem = match oid {
        1005 => Some((21, 2, b's', true)),
        1007 => Some((23, 4, b'i', true)),
        1028 => Some((26, 4, b'i', true)),
        1002 => Some((18, 1, b'c', true)),
        1009 => Some((25, -1, b'i', false)),
        _ => None,
    };
    if a.attlen == -1 && elem.is_none() && !matches!(oid, 17 | 25 | 194 | 22 | 30 | 1043) {
        return None;
    }
    let elem = elem.map(|(oid, typlen, typalign, typbyval)| {
        Box::new(TypeDesc { oid, typtype: b'b', typlen, typalign, typbyval, typdelim: b',', ..Default::default() })
    });
    Some(TypeDesc {
        elem,
        oid,
        name: String::new(),
        typtype: b'b',
        typlen: a.attlen,
        typalign: a.attalign,
        typbyval: a.attbyval,
        typdelim: b',',
        ..Default::default()
    })
}

/// One COPY text field back to its value.
fn unescape(field: &[u8]) -> Option<String> {
    if field == b"\\N" {
        return None;
    }
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        if b == b'\\' && i + 1 < field.len() {
            i += 1;
            out.push(match field[i] {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'b' => 8,
                b'f' => 12,
                b'v' => 11,
                c => c,
            });
        } else {
            out.push(b);
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

impl ClusterFiles {
    pub fn open(pgdata: &Path, opts: &ClusterOptions) -> Result<ClusterFiles> {
        let facts = ClusterFacts::read(pgdata, opts)?;
        let global = RelMap::read(&pgdata.join("global"))?;
        let mut facts = facts;
        if !global.crc_ok {
            facts.warnings.push("global/pg_filenode.map fails its CRC check; its mappings are used as they are".into());
        }
        Ok(ClusterFiles {
            pgdata: pgdata.to_path_buf(),
            facts,
            global,
            dbs: Mutex::new(HashMap::new()),
            type_names: Mutex::new(HashMap::new()),
        })
    }

    fn segments(&self, rel: RelFile, fork: Fork) -> (Vec<SegFile>, u64) {
        let mut files = Vec::new();
        let mut blocks = 0u64;
        for segno in 0.. {
            let rp = relation_path(
                rel.reltablespace,
                rel.database,
                rel.relfilenode,
                fork,
                segno,
                self.facts.major,
                self.facts.catversion,
            );
            let path = self.pgdata.join(rp);
            let Ok(md) = crate::sources::backup::vfs::metadata(&path) else { break };
            blocks = u64::from(segno) * u64::from(self.facts.relseg_size) + md.len() / u64::from(self.facts.blcksz);
            files.push(SegFile { segno, path });
            if md.len() < u64::from(self.facts.relseg_size) * u64::from(self.facts.blcksz) {
                break;
            }
        }
        (files, blocks)
    }

    /// Segment files of a relation's main fork and its length in blocks.
    pub fn relation_files(&self, rel: RelFile) -> (Vec<SegFile>, u64) {
        self.segments(rel, Fork::Main)
    }

    /// Path of segment 0 of a relation's main fork, relative to the data directory.
    pub fn relation_path(&self, rel: RelFile) -> String {
        relation_path(
            rel.reltablespace,
            rel.database,
            rel.relfilenode,
            Fork::Main,
            0,
            self.facts.major,
            self.facts.catversion,
        )
    }

    fn clog(&self) -> Clog {
        Clog::open(&self.pgdata, self.facts.blcksz)
    }

    fn db(&self, db: u32) -> Result<Arc<DbCatalog>> {
        if let Some(d) = self.dbs.lock().unwrap_or_else(|e| e.into_inner()).get(&db) {
            return Ok(d.clone());
        }
        let dir = self.pgdata.join("base").join(db.to_string());
        let map = RelMap::read(&dir)?;
        let att_rel = RelFile {
            relfilenode: map.get(ATTRIBUTE_RELATION_ID).ok_or_else(|| CoreError::Format {
                what: "pg_filenode.map",
                detail: format!("database {db}'s map has no entry for pg_attribute"),
            })?,
            reltablespace: DEFAULTTABLESPACE_OID,
            database: db,
        };
        let (files, nblocks) = self.relation_files(att_rel);
        let reader = BlockReader::new(&files, self.facts.blcksz, self.facts.relseg_size);
        let clog = self.clog();
        let self_attrs = attribute_layout(&reader, nblocks, self.facts.blcksz as usize, &clog)?;
        let mut cat =
            DbCatalog { map, attrs: HashMap::from([(ATTRIBUTE_RELATION_ID, self_attrs)]), classes: HashMap::new() };
        // Every catalog's columns: all of pg_attribute, read with its own description.
        let want = [
            "attrelid",
            "attname",
            "atttypid",
            "attlen",
            "attnum",
            "attalign",
            "attbyval",
            "attstorage",
            "attisdropped",
        ];
        let mut attrs: HashMap<u32, Vec<CatAttr>> = HashMap::new();
        // read in place from the carved lines: half a million rows in a wide schema, where strings for every field
        // were most of this step
        self.carve_each(&cat, db, ATTRIBUTE_RELATION_ID, att_rel, &want.map(String::from), |r| {
            let get = |i: usize| r[i].unwrap_or(b"");
            let num = |i: usize| std::str::from_utf8(get(i)).ok();
            let (Some(relid), Some(typid), Some(attlen), Some(attnum)) = (
                num(0).and_then(|v| v.parse::<u32>().ok()),
                num(2).and_then(|v| v.parse::<u32>().ok()),
                num(3).and_then(|v| v.parse::<i16>().ok()),
                num(4).and_then(|v| v.parse::<i16>().ok()),
            ) else {
                return;
            };
            let ch = |i: usize| get(i).first().copied().unwrap_or(b'p');
            attrs.entry(relid).or_default().push(CatAttr {
                attnum,
                name: r[1].and_then(unescape).unwrap_or_default(),
                typid,
                attlen,
                attalign: ch(5),
                attbyval: get(6) == b"t",
                attstorage: ch(7),
                dropped: get(8) == b"t",
            });
        })?;
        attrs.insert(ATTRIBUTE_RELATION_ID, cat.attrs.remove(&ATTRIBUTE_RELATION_ID).unwrap_or_default());
        cat.attrs = attrs;
        // pg_class: where every relation's files are.
        let class_rel = RelFile {
            relfilenode: cat.map.get(oids::PG_CLASS).ok_or_else(|| CoreError::Format {
                what: "pg_filenode.map",
                detail: format!("database {db}'s map has no entry for pg_class"),
            })?,
            reltablespace: DEFAULTTABLESPACE_OID,
            database: db,
        };
        let want = ["oid", "relfilenode", "reltablespace", "reltoastrelid"].map(String::from);
        let rows = self.carve(&cat, db, oids::PG_CLASS, class_rel, &want)?;
        for r in rows.rows {
            let n = |i: usize| r[i].as_deref().and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
            cat.classes.insert(n(0), (n(1), n(2), n(3)));
        }
        let cat = Arc::new(cat);
        self.dbs.lock().unwrap_or_else(|e| e.into_inner()).insert(db, cat.clone());
        Ok(cat)
    }

    /// Where relation `oid` of database `db` keeps its files: the relation maps for mapped catalogs, else pg_class.
    pub fn locate(&self, db: u32, oid: u32) -> Result<Option<RelFile>> {
        if let Some(f) = self.global.get(oid) {
            return Ok(Some(RelFile { relfilenode: f, reltablespace: GLOBALTABLESPACE_OID, database: 0 }));
        }
        let cat = self.db(db)?;
        Ok(self.locate_in(&cat, db, oid))
    }

    fn locate_in(&self, cat: &DbCatalog, db: u32, oid: u32) -> Option<RelFile> {
        if let Some(f) = self.global.get(oid) {
            return Some(RelFile { relfilenode: f, reltablespace: GLOBALTABLESPACE_OID, database: 0 });
        }
        if let Some(f) = cat.map.get(oid) {
            return Some(RelFile { relfilenode: f, reltablespace: DEFAULTTABLESPACE_OID, database: db });
        }
        let &(filenode, spc, _) = cat.classes.get(&oid)?;
        if filenode == 0 {
            return None;
        }
        let (spc, database) = match spc {
            0 => (DEFAULTTABLESPACE_OID, db),
            GLOBALTABLESPACE_OID => (GLOBALTABLESPACE_OID, 0),
            s => (s, db),
        };
        Some(RelFile { relfilenode: filenode, reltablespace: spc, database })
    }

    /// Rows of catalog `relid` as seen from database `db` (shared catalogs from any database; `db` 0 picks one).
    pub fn read(&self, db: u32, relid: u32, columns: &[String]) -> Result<CatalogRows> {
        let db = if db == 0 { self.any_database()? } else { db };
        let cat = self.db(db)?;
        let rel = self.locate_in(&cat, db, relid).ok_or_else(|| {
            CoreError::Invalid(format!(
                "catalog {relid} has no file in database {db} (not in the relation map nor pg_class)"
            ))
        })?;
        self.carve(&cat, db, relid, rel, columns)
    }

    /// A database directory to describe shared catalogs from: template1 when it is there.
    pub fn any_database(&self) -> Result<u32> {
        let base = self.pgdata.join("base");
        let is_file = |p: std::path::PathBuf| crate::sources::backup::vfs::metadata(&p).is_ok_and(|m| m.is_file());
        if is_file(base.join(oids::TEMPLATE1.to_string()).join("pg_filenode.map")) {
            return Ok(oids::TEMPLATE1);
        }
        let mut dbs: Vec<u32> = crate::sources::backup::vfs::read_dir(&base)
            .map_err(|e| CoreError::io(&base, e))?
            .into_iter()
            .filter_map(|(name, _)| name.parse().ok())
            .filter(|d: &u32| is_file(base.join(d.to_string()).join("pg_filenode.map")))
            .collect();
        dbs.sort_unstable();
        dbs.first().copied().ok_or_else(|| CoreError::Invalid(format!("{} holds no database", base.display())))
    }

    /// The columns pg_attribute gives relation `relid` in database `db`.
    /// The tuple descriptor of user table `relid` of database `db` for the scan's checks of its rows: every
    /// attribute (dropped ones too) in attnum order, its type's name for messages, `natts` at least `relnatts`.
    /// Built here from the pg_attribute read when the database was opened: a wide schema's 20,000 descriptors
    /// were most of a scan's start when built in Python and handed back.
    pub fn table_desc(&self, db: u32, relid: u32, relnatts: u16) -> Result<RelDesc> {
        let cat = self.db(db)?;
        let names = self.type_names(db)?;
        let attrs = cat.attrs.get(&relid).map_or(&[][..], Vec::as_slice);
        let toast_relid = cat.classes.get(&relid).map_or(0, |c| c.2);
        let mut desc = described(attrs, toast_relid, |t| names.get(&t).cloned().unwrap_or_default());
        desc.natts = desc.natts.max(relnatts);
        Ok(desc)
    }

    fn type_names(&self, db: u32) -> Result<Arc<HashMap<u32, String>>> {
        if let Some(t) = self.type_names.lock().unwrap_or_else(|e| e.into_inner()).get(&db) {
            return Ok(t.clone());
        }
        let rows = self.read(db, oids::PG_TYPE, &["oid".to_string(), "typname".to_string()])?;
        let names: HashMap<u32, String> = rows
            .rows
            .into_iter()
            .filter_map(|mut r| Some((r[0].as_deref()?.parse().ok()?, r[1].take().unwrap_or_default())))
            .collect();
        let names = Arc::new(names);
        self.type_names.lock().unwrap_or_else(|e| e.into_inner()).insert(db, names.clone());
        Ok(names)
    }

    fn carve(&self, cat: &DbCatalog, db: u32, relid: u32, rel: RelFile, columns: &[String]) -> Result<CatalogRows> {
        let mut rows = Vec::new();
        let mut out = self.carve_each(cat, db, relid, rel, columns, |fields| {
            rows.push(fields.iter().map(|f| f.and_then(unescape)).collect());
        })?;
        out.rows = rows;
        Ok(out)
    }

    /// The live rows of catalog `relid`, each handed to `each` as its fields in the order of `columns`, still as
    /// COPY text escapes them (None: a column the relation does not have). The returned rows are left empty.
    fn carve_each(
        &self,
        cat: &DbCatalog,
        db: u32,
        relid: u32,
        rel: RelFile,
        columns: &[String],
        mut each: impl FnMut(&[Option<&[u8]>]),
    ) -> Result<CatalogRows> {
        let attrs = cat.attrs.get(&relid).cloned().unwrap_or_default();
        if attrs.is_empty() {
            return Err(CoreError::Invalid(format!(
                "pg_attribute of database {db} does not describe relation {relid}"
            )));
        }
        let toast_relid = cat.classes.get(&relid).map_or(0, |c| c.2);
        let desc = rel_desc(&attrs, toast_relid);
        let mut out = CatalogRows { columns: columns.to_vec(), ..Default::default() };
        let mut cols = Vec::new();
        let mut slots = Vec::new();
        for name in columns {
            match attrs.iter().find(|a| &a.name == name && a.attnum > 0 && !a.dropped) {
                Some(a) => {
                    slots.push(Some(cols.len()));
                    cols.push(ColumnOut { attnum: a.attnum, name: name.clone(), r#type: text_desc(a), missing: None });
                }
                None => {
                    slots.push(None);
                    out.absent.push(name.clone());
                }
            }
        }
        let (files, nblocks) = self.relation_files(rel);
        let (toast_files, toast_nblocks) =
            match (toast_relid != 0).then(|| self.locate_in(cat, db, toast_relid)).flatten() {
                Some(t) => self.relation_files(t),
                None => (Vec::new(), 0),
            };
        let cfg = CarveConfig {
            blcksz: self.facts.blcksz,
            relseg_size: self.facts.relseg_size,
            nblocks,
            files,
            desc,
            columns: cols,
            server_version_num: self.facts.server_version_num,
            checksums: self.facts.checksums,
            xact_dir: Some(self.pgdata.join("pg_xact")),
            toast_files,
            toast_nblocks,
            toast_relid,
            ..Default::default()
        };
        let carver = Carver::new(cfg);
        let Some(reader) = carver.heap_reader() else { return Ok(out) };
        let blcksz = self.facts.blcksz as usize;
        let mut buf = Vec::new();
        // one batch for every step, its buffers kept (what a collecting carve adds besides rows and lines is only
        // for a table's loss account, unread here)
        let mut batch = Batch::collecting();
        const STEP: u64 = 64;
        let mut first = 0;
        while first < nblocks {
            let n = STEP.min(nblocks - first);
            reader.read_into(first, n, &mut buf).map_err(|e| CoreError::io(&self.pgdata, e))?;
            batch.rows.clear();
            batch.main.clear();
            batch.pages.clear();
            batch.lost.clear();
            for (i, page) in buf.chunks_exact(blcksz).enumerate() {
                carver.carve_page(page, first + i as u64, false, &mut batch);
            }
            let (mut fields, mut row): (Vec<&[u8]>, Vec<Option<&[u8]>>) = (Vec::new(), Vec::new());
            for r in &batch.rows {
                if r.verdict != Verdict::Live {
                    if r.verdict == Verdict::Uncertain {
                        out.doubtful.push(doubtful(r.block, r.lp, &r.reason));
                    }
                    continue;
                }
                if r.certainty == Certainty::Uncertain && !r.checksum_failed {
                    out.doubtful.push(doubtful(r.block, r.lp, &r.reason));
                    continue;
                }
                let line = &batch.main[r.data_start..r.data_end];
                let line = line.strip_suffix(b"\n").unwrap_or(line);
                // no allocation per row: the fields are slices of the line, each put in its place
                fields.clear();
                fields.extend(line.split(|b| *b == b'\t'));
                row.clear();
                row.extend(slots.iter().map(|s| s.and_then(|i| fields.get(i).copied())));
                each(&row);
            }
            first += n;
        }
        Ok(out)
    }
}

/// A catalog row whose visibility the files cannot settle, as the DBA reads it: `block 17 item 10: …` (a row found
/// by carving, with no line pointer, says so).
fn doubtful(block: u64, lp: Option<u16>, reason: &str) -> String {
    match lp {
        Some(lp) => format!("block {block} item {lp}: {reason}"),
        None => format!("block {block} (no line pointer): {reason}"),
    }
}
