//! The catalog read from the data files (no server), for Python: one handle per data directory.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use pgsurgeon_core::catalog::{ClusterFiles, ClusterOptions, RelFile};
use pgsurgeon_core::datum::{array_first_item, format_value, varlena_any, OutputOptions, TypeDesc};

use crate::{from_py, to_py, to_pyerr};

/// A data directory read as a catalog: `read` returns catalog rows as text, like SQL's `::text`.
#[pyclass(frozen, module = "pgsurgeon._pgsurgeon")]
pub struct FilesCatalog {
    inner: ClusterFiles,
}

/// (rows, absent columns, rows left out and why).
type Rows = (Vec<Vec<Option<String>>>, Vec<String>, Vec<String>);

/// (relfilenode, reltablespace, database, path of segment 0 relative to the data directory, blocks).
type Located = (u32, u32, u32, String, u64);

impl FilesCatalog {
    /// The catalog itself, for the other calls of this module.
    pub(crate) fn files(&self) -> &ClusterFiles {
        &self.inner
    }
}

#[pymethods]
impl FilesCatalog {
    #[new]
    #[pyo3(signature = (pgdata, options=None))]
    fn new(py: Python<'_>, pgdata: std::path::PathBuf, options: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let opts: ClusterOptions = match options {
            Some(o) => from_py(o, "cluster options")?,
            None => ClusterOptions::default(),
        };
        let inner = py.detach(|| ClusterFiles::open(&pgdata, &opts)).map_err(to_pyerr)?;
        Ok(FilesCatalog { inner })
    }

    /// The cluster's shape (version, block and segment size, checksums) and doubts about it.
    fn facts(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner.facts)
    }

    /// Visible rows of catalog `relid` (columns by name) seen from database `db` (0: any, for shared catalogs).
    fn read(&self, py: Python<'_>, db: u32, relid: u32, columns: Vec<String>) -> PyResult<Rows> {
        let r = py.detach(|| self.inner.read(db, relid, &columns)).map_err(to_pyerr)?;
        Ok((r.rows, r.absent, r.doubtful))
    }

    /// The tuple descriptor of table `relid` of database `db` (ClusterFiles::table_desc).
    fn table_desc(&self, py: Python<'_>, db: u32, relid: u32, relnatts: u16) -> PyResult<Py<PyAny>> {
        let r = py.detach(|| self.inner.table_desc(db, relid, relnatts)).map_err(to_pyerr)?;
        to_py(py, &r)
    }

    /// Where each of relations `oids` of database `db` keeps its files, as (reltablespace, database, relfilenode)
    /// (None: no storage): one call for a whole catalog, and no look at the files (relation_index names 80,000
    /// relations of a wide schema by it).
    fn keys(&self, py: Python<'_>, db: u32, oids: Vec<u32>) -> PyResult<Vec<Option<(u32, u32, u32)>>> {
        py.detach(|| {
            oids.iter()
                .map(|&oid| Ok(self.inner.locate(db, oid)?.map(|f| (f.reltablespace, f.database, f.relfilenode))))
                .collect::<pgsurgeon_core::Result<_>>()
        })
        .map_err(to_pyerr)
    }

    /// Where relation `oid` keeps its files: (relfilenode, reltablespace, database, path of segment 0 relative to
    /// the data directory, number of blocks), or None when it has no storage.
    fn locate(&self, py: Python<'_>, db: u32, oid: u32) -> PyResult<Option<Located>> {
        let r = py.detach(|| self.inner.locate(db, oid)).map_err(to_pyerr)?;
        Ok(r.map(|f: RelFile| {
            let (_, nblocks) = self.inner.relation_files(f);
            (f.relfilenode, f.reltablespace, f.database, self.inner.relation_path(f), nblocks)
        }))
    }
}

/// The one value of an `attmissingval` array (its bytes after the varlena header) printed as type `type_desc`;
/// None when it is NULL.
#[pyfunction]
pub fn missing_value(
    payload: &[u8],
    type_desc: &Bound<'_, PyAny>,
    server_version_num: u32,
) -> PyResult<Option<String>> {
    let t: TypeDesc = from_py(type_desc, "type description")?;
    // OutputOptions grows fields with the types it learns; the update keeps this call right when it does.
    #[allow(clippy::needless_update)]
    let opts = OutputOptions { server_version_num, ..Default::default() };
    let v = array_first_item(payload, &t, &opts).map_err(|e| PyValueError::new_err(format!("attmissingval: {e}")))?;
    Ok(v.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// A datum as stored (a varlena with its header, or the fixed-length bytes; a node tree's `constvalue`) printed as
/// type `type_desc`.
#[pyfunction]
pub fn format_datum(raw: &[u8], type_desc: &Bound<'_, PyAny>, server_version_num: u32) -> PyResult<String> {
    let t: TypeDesc = from_py(type_desc, "type description")?;
    let payload = match t.typlen {
        -1 => varlena_any(raw).map(|(p, _)| p).ok_or_else(|| PyValueError::new_err("bad varlena header"))?,
        -2 => &raw[..raw.iter().position(|b| *b == 0).unwrap_or(raw.len())],
        n => raw.get(..n as usize).ok_or_else(|| PyValueError::new_err("datum shorter than its type"))?,
    };
    #[allow(clippy::needless_update)]
    let opts = OutputOptions { server_version_num, ..Default::default() };
    let mut out = Vec::new();
    format_value(payload, &t, &opts, &mut out).map_err(PyValueError::new_err)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
