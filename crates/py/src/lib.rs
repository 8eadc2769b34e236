//! The Python binding: coarse calls (paths, buffers and typed configs in, Python objects out) over
//! pgsurgeon-core. All error mapping happens in `to_pyerr`; values cross through `boundary`.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;

use pgsurgeon_core::format::page::PageKind;
use pgsurgeon_core::CoreError;

mod backup;
mod boundary;
mod catalog;
mod diagnose;
mod repair;

use boundary::{from_py, to_py};

pyo3::create_exception!(_pgsurgeon, FormatError, PyValueError, "A file is not in a format pgsurgeon knows.");

/// The one place core errors become Python exceptions.
pub(crate) fn to_pyerr(err: CoreError) -> PyErr {
    let text = err.to_string();
    match err {
        CoreError::Io { source, .. } => {
            let exc = match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
                _ => PyOSError::new_err(text),
            };
            // errno lets the CLI give the hint for the cause (ENOTDIR, ELOOP, ENOSPC...), as for Python's own errors
            if let Some(code) = source.raw_os_error() {
                Python::attach(|py| exc.value(py).setattr("errno", code).ok());
            }
            exc
        }
        CoreError::Format { .. } => FormatError::new_err(text),
        CoreError::Invalid(_) => PyValueError::new_err(text),
    }
}

/// Decode one page; returns the report.
#[pyfunction]
#[pyo3(signature = (data, block, checksums, kind=None))]
fn inspect_page(py: Python<'_>, data: &[u8], block: u64, checksums: bool, kind: Option<&str>) -> PyResult<Py<PyAny>> {
    let kind = match kind {
        None => None,
        Some(k) => Some(PageKind::parse(k).ok_or_else(|| PyValueError::new_err(format!("unknown page kind: {k}")))?),
    };
    let report = pgsurgeon_core::checks::inspect::inspect_page(data, block, checksums, kind)
        .ok_or_else(|| PyValueError::new_err(format!("a page needs at least 24 bytes, got {}", data.len())))?;
    to_py(py, &report)
}

/// pg_checksum_page for `data` at `block` (counted across segments); None for odd lengths.
#[pyfunction]
fn page_checksum(data: &[u8], block: u32) -> Option<u16> {
    pgsurgeon_core::format::checksum::pg_checksum_page(data, block)
}

/// PostgreSQL's CRC-32C of `data`, or continued from the finished value `append_to`.
#[pyfunction]
#[pyo3(signature = (data, append_to=None))]
fn crc32c(data: &[u8], append_to: Option<u32>) -> u32 {
    pgsurgeon_core::format::checksum::pg_crc32c(data, append_to)
}

/// The offset of a pg_control image's CRC, for the layout of its pg_control_version.
#[pyfunction]
fn control_crc_offset(data: &[u8]) -> PyResult<usize> {
    pgsurgeon_core::format::control::crc_offset(data).map_err(to_pyerr)
}

/// The catalogue entry of a finding code: (area, severity, pg_error, remedy); empty strings for a name that is
/// not a finding code.
#[pyfunction]
fn describe_code(code: &str) -> (String, String, &'static str, &'static str) {
    let Some(info) = pgsurgeon_core::finding::describe(code) else {
        return (String::new(), String::new(), "", "");
    };
    let text = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
    (
        text(serde_json::to_value(info.area).unwrap_or_default()),
        text(serde_json::to_value(info.severity).unwrap_or_default()),
        info.pg_error,
        info.remedy,
    )
}

/// Every finding code the core can emit, in catalogue order.
#[pyfunction]
fn finding_codes() -> Vec<&'static str> {
    pgsurgeon_core::finding::Code::ALL.iter().map(|c| c.as_str()).collect()
}

/// Parse a pg_control image.
#[pyfunction]
fn parse_control(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
    to_py(py, &pgsurgeon_core::format::control::parse_control(data).map_err(to_pyerr)?)
}

/// Read and parse `<pgdata>/global/pg_control`.
#[pyfunction]
fn read_control(py: Python<'_>, pgdata: std::path::PathBuf) -> PyResult<Py<PyAny>> {
    let control = py.detach(|| pgsurgeon_core::sources::pgdata::read_control_file(&pgdata)).map_err(to_pyerr)?;
    to_py(py, &control)
}

/// The cluster's bookkeeping files against its pg_control: the WAL it needs to start (with `wal`), pg_xact's
/// segments between the oldest and the next XID.
#[pyfunction]
fn cluster_checks(py: Python<'_>, pgdata: std::path::PathBuf, wal: bool) -> PyResult<Py<PyAny>> {
    let found = py
        .detach(|| {
            use pgsurgeon_core::checks::cluster;
            match pgsurgeon_core::sources::pgdata::read_control_file(&pgdata) {
                Ok(control) => Ok(cluster::cluster_checks(&pgdata, &control, wal)),
                // a pg_control that is there but cannot be decoded is itself the finding
                Err(e) if pgdata.join("global/pg_control").is_file() => {
                    Ok(vec![cluster::unreadable_control(&e.to_string())])
                }
                Err(e) => Err(e),
            }
        })
        .map_err(to_pyerr)?;
    to_py(py, &found)
}

/// What the heap pages' hint bits say about XIDs `lo..=hi` (a lost pg_xact segment), and the rows depending on
/// them: (evidence per XID, heap pages read).
#[pyfunction]
fn hint_evidence(
    py: Python<'_>,
    pgdata: std::path::PathBuf,
    blcksz: u32,
    relseg_size: u32,
    lo: u32,
    hi: u32,
) -> PyResult<Py<PyAny>> {
    let found = py
        .detach(|| pgsurgeon_core::visibility::hint_evidence::hint_evidence(&pgdata, blcksz, relseg_size, lo, hi))
        .map_err(to_pyerr)?;
    to_py(py, &found)
}

/// What the heap says about MultiXacts `lo..=hi` whose members are lost: lock-only or updated, and the updater
/// from the update chain: (evidence per MultiXact, heap pages read).
#[pyfunction]
fn multi_evidence(
    py: Python<'_>,
    pgdata: std::path::PathBuf,
    blcksz: u32,
    relseg_size: u32,
    lo: u32,
    hi: u32,
) -> PyResult<Py<PyAny>> {
    let found = py
        .detach(|| pgsurgeon_core::visibility::multi_evidence::multi_evidence(&pgdata, blcksz, relseg_size, lo, hi))
        .map_err(to_pyerr)?;
    to_py(py, &found)
}

/// Every relation file under a data directory, grouped by relation and fork.
#[pyfunction]
fn discover_relations(py: Python<'_>, pgdata: std::path::PathBuf) -> PyResult<Py<PyAny>> {
    let rels = py.detach(|| pgsurgeon_core::sources::relfile::discover(&pgdata)).map_err(to_pyerr)?;
    to_py(py, &rels)
}

/// A scan set up over a data directory (or some of its files), run once; `progress()` may be called
/// from another thread while `run()` works with the GIL released.
#[pyclass(frozen)]
struct Scanner {
    root: std::path::PathBuf,
    relations: Vec<pgsurgeon_core::sources::relfile::Relation>,
    options: pgsurgeon_core::checks::scan::ScanOptions,
    progress: std::sync::Arc<pgsurgeon_core::checks::scan::Progress>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScannerConfig {
    options: pgsurgeon_core::checks::scan::ScanOptions,
    #[serde(default)]
    files: Vec<std::path::PathBuf>,
    #[serde(default)]
    databases: Vec<u32>,
    #[serde(default)]
    relfilenodes: Vec<u32>,
}

/// Fill in the descriptors of the tables whose metadata leaves them to the data directory's catalog.
fn describe_from_catalog(
    relations: &mut [(pgsurgeon_core::checks::scan::RelKey, pgsurgeon_core::checks::scan::RelMeta)],
    files: Option<&pgsurgeon_core::catalog::ClusterFiles>,
) -> pgsurgeon_core::Result<()> {
    for (_, meta) in relations.iter_mut() {
        let Some((db, relid)) = meta.desc_in_catalog else { continue };
        let Some(files) = files else {
            return Err(pgsurgeon_core::CoreError::Invalid(format!(
                "relation {relid} is to be described from the catalog, and no catalog was given"
            )));
        };
        meta.desc = Some(files.table_desc(db, relid, meta.natts.unwrap_or(0))?);
    }
    Ok(())
}

#[pymethods]
impl Scanner {
    /// `config`: {"options": ScanOptions, "files": [...], "databases": [...], "relfilenodes": [...]}; `catalog`:
    /// the data directory's catalog, which describes the tables whose metadata says `desc_in_catalog`.
    #[new]
    #[pyo3(signature = (root, config, catalog=None))]
    fn new(
        py: Python<'_>,
        root: std::path::PathBuf,
        config: &Bound<'_, PyAny>,
        catalog: Option<PyRef<'_, catalog::FilesCatalog>>,
    ) -> PyResult<Self> {
        let mut cfg: ScannerConfig = from_py(config, "scan configuration")?;
        let files = catalog.as_ref().map(|c| c.files());
        py.detach(|| describe_from_catalog(&mut cfg.options.relations, files)).map_err(to_pyerr)?;
        let relations = py
            .detach(|| {
                if cfg.files.is_empty() {
                    pgsurgeon_core::sources::relfile::discover(&root)
                } else {
                    pgsurgeon_core::checks::scan::relations_for_files(&root, &cfg.files)
                }
            })
            .map_err(to_pyerr)?;
        let relations = pgsurgeon_core::checks::scan::filter_relations(relations, &cfg.databases, &cfg.relfilenodes);
        Ok(Scanner { root, relations, options: cfg.options, progress: Default::default() })
    }

    /// The main forks selected, temporary relations left out: (tablespace, database, relfilenode, bytes, path of
    /// segment 0). The catalog's check against the files takes them from here rather than listing the directory
    /// again.
    fn main_forks(&self) -> Vec<(u32, u32, u32, u64, String)> {
        self.relations
            .iter()
            .filter(|r| r.fork == pgsurgeon_core::sources::relpath::Fork::Main && !r.temp)
            .map(|r| (r.tablespace_oid, r.database_oid, r.relfilenode, r.total_size(), r.path.clone()))
            .collect()
    }

    /// Bytes the scan will read.
    #[getter]
    fn total_bytes(&self) -> u64 {
        self.relations.iter().map(|r| r.total_size()).sum()
    }

    /// The relation forks selected.
    fn relations(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.relations)
    }

    /// (bytes read, pages checked) so far.
    fn progress(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.progress.bytes_done.load(Relaxed), self.progress.pages_done.load(Relaxed))
    }

    /// From now on keep the main forks' chunks as they are checked, for [`Scanner::checked_chunks`].
    fn want_checked(&self) {
        self.progress.checked_wanted.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The main forks' chunks checked since the last call, tables' and indexes' (taken: each is handed out once).
    fn checked_chunks(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let taken = self.progress.checked.lock().map(|mut g| std::mem::take(&mut *g)).unwrap_or_default();
        to_py(py, &taken)
    }

    /// Ask a running scan to stop at the next page.
    fn cancel(&self) {
        self.progress.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Run the scan with the GIL released.
    fn run(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let result = py
            .detach(|| {
                let _call = pgsurgeon_core::profile::timer("call.scan");
                pgsurgeon_core::checks::scan::scan(&self.root, &self.relations, &self.options, &self.progress)
            })
            .map_err(to_pyerr)?;
        to_py(py, &result)
    }
}

/// Damage one page image: `damages` is a list of pgsurgeon_core::inject::DamageSpec; returns the changed byte
/// runs and notes. Never touches a file.
#[pyfunction]
#[pyo3(signature = (data, block, damages, seed, keep_checksum=false, source=None))]
fn inject_page(
    py: Python<'_>,
    data: &[u8],
    block: u32,
    damages: &Bound<'_, PyAny>,
    seed: u64,
    keep_checksum: bool,
    source: Option<&[u8]>,
) -> PyResult<Py<PyAny>> {
    let specs: Vec<pgsurgeon_core::inject::DamageSpec> = from_py(damages, "damage specification")?;
    let result =
        pgsurgeon_core::inject::inject_page(data, block, &specs, seed, keep_checksum, source).map_err(to_pyerr)?;
    to_py(py, &result)
}

/// The page damage modes the core knows, with their fields.
#[pyfunction]
fn inject_modes(py: Python<'_>) -> PyResult<Py<PyAny>> {
    to_py(py, &pgsurgeon_core::inject::MODES)
}

/// Classify every block of a heap relation from its files (`config`: pgsurgeon_core::rows::classify::ClassifyConfig):
/// which blocks are all zeroes, which are damaged and must be carved.
#[pyfunction]
fn classify_relation(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let cfg: pgsurgeon_core::rows::classify::ClassifyConfig = from_py(config, "classify configuration")?;
    let res = py.detach(|| pgsurgeon_core::rows::classify::classify_relation(&cfg)).map_err(to_pyerr)?;
    to_py(py, &res)
}

/// Classify consecutive heap pages held in `data` (block `first` onwards), answered like classify_relation.
#[pyfunction]
fn classify_pages(py: Python<'_>, data: &[u8], first: u64, config: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let cfg: pgsurgeon_core::rows::classify::ClassifyConfig = from_py(config, "classify configuration")?;
    let count = (data.len() as u64).div_ceil(u64::from(cfg.blcksz.max(1)));
    let blocks = py.detach(|| pgsurgeon_core::rows::classify::classify_buffer(data, first, count, &cfg));
    let mut res = pgsurgeon_core::rows::classify::ClassifyResult {
        nblocks: count,
        bytes_read: data.len() as u64,
        blocks,
        ..Default::default()
    };
    pgsurgeon_core::rows::classify::tally(&mut res);
    to_py(py, &res)
}

/// Carve heap pages: `data` holds the pages of `blocks` one after another, `blob` the TOAST chunk bytes the
/// configuration's `toast_chunks` refer to. Returns (the result, formatted rows).
#[pyfunction]
fn carve_pages(
    py: Python<'_>,
    data: &[u8],
    blocks: Vec<u64>,
    blob: &[u8],
    config: &Bound<'_, PyAny>,
) -> PyResult<(Py<PyAny>, Py<pyo3::types::PyBytes>)> {
    let cfg: pgsurgeon_core::rows::carve::CarveConfig = from_py(config, "carve configuration")?;
    let (res, out) =
        py.detach(|| pgsurgeon_core::rows::carve::carve_pages(data, &blocks, blob, &cfg)).map_err(to_pyerr)?;
    Ok((to_py(py, &res)?, pyo3::types::PyBytes::new(py, &out).unbind()))
}

/// A Python error raised inside a callback, carried through the core as an error and raised again as itself.
struct Raised(std::sync::Mutex<Option<PyErr>>);

impl Raised {
    fn keep(&self, e: PyErr) -> CoreError {
        let text = e.to_string();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        CoreError::Invalid(text)
    }

    fn take(&self) -> Option<PyErr> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Pages from a Python callable `read(first, count) -> bytes` (pages fetched through SQL).
struct PyPages<'r> {
    read: Py<PyAny>,
    raised: &'r Raised,
}

impl pgsurgeon_core::rows::engine::PageSource for PyPages<'_> {
    fn read_into(&self, first: u64, count: u64, buf: &mut Vec<u8>) -> pgsurgeon_core::Result<()> {
        Python::attach(|py| {
            let r = self.read.call1(py, (first, count)).map_err(|e| self.raised.keep(e))?;
            let bytes = r.cast_bound::<pyo3::types::PyBytes>(py).map_err(|e| self.raised.keep(e.into()))?;
            buf.clear();
            buf.extend_from_slice(bytes.as_bytes());
            Ok(())
        })
    }
}

/// Rows to a Python callable `write(main: bytes, apart: bytes, prov: bytes)`.
struct PySink<'r> {
    write: Py<PyAny>,
    raised: &'r Raised,
}

impl pgsurgeon_core::rows::engine::RowSink for PySink<'_> {
    fn write(&mut self, main: &[u8], apart: &[u8], prov: &[u8]) -> pgsurgeon_core::Result<()> {
        if main.is_empty() && apart.is_empty() && prov.is_empty() {
            return Ok(());
        }
        Python::attach(|py| {
            let args = (
                pyo3::types::PyBytes::new(py, main),
                pyo3::types::PyBytes::new(py, apart),
                pyo3::types::PyBytes::new(py, prov),
            );
            self.write.call1(py, args).map(|_| ()).map_err(|e| self.raised.keep(e))
        })
    }
}

/// The server's answers through a Python object with `xid_status(list) -> dict[int, str]`,
/// `multi_updaters(list) -> dict[int, int | None]`, `toast_chunks(list) -> list[tuple[int, int, bytes]]`,
/// `commit_times(list) -> dict[int, int | None]` and `subxacts(int) -> list[int] | None`.
struct PyOracle<'r> {
    oracle: Py<PyAny>,
    raised: &'r Raised,
}

impl pgsurgeon_core::rows::engine::Oracle for PyOracle<'_> {
    fn xid_status(
        &mut self,
        xids: &[u32],
    ) -> pgsurgeon_core::Result<Vec<(u32, pgsurgeon_core::visibility::xact::XidStatus)>> {
        Python::attach(|py| {
            let r = self.oracle.call_method1(py, "xid_status", (xids.to_vec(),)).map_err(|e| self.raised.keep(e))?;
            let m: std::collections::HashMap<u32, String> = r.extract(py).map_err(|e| self.raised.keep(e))?;
            Ok(m.into_iter()
                .filter_map(|(x, s)| Some((x, pgsurgeon_core::visibility::xact::XidStatus::parse(&s)?)))
                .collect())
        })
    }

    fn multi_updaters(&mut self, multis: &[u32]) -> pgsurgeon_core::Result<Vec<(u32, Option<u32>)>> {
        Python::attach(|py| {
            let r =
                self.oracle.call_method1(py, "multi_updaters", (multis.to_vec(),)).map_err(|e| self.raised.keep(e))?;
            let m: std::collections::HashMap<u32, Option<u32>> = r.extract(py).map_err(|e| self.raised.keep(e))?;
            Ok(m.into_iter().collect())
        })
    }

    fn toast_chunks(&mut self, valueids: &[u32]) -> pgsurgeon_core::Result<Vec<(u32, i32, Vec<u8>)>> {
        Python::attach(|py| {
            let r =
                self.oracle.call_method1(py, "toast_chunks", (valueids.to_vec(),)).map_err(|e| self.raised.keep(e))?;
            r.extract(py).map_err(|e| self.raised.keep(e))
        })
    }

    fn commit_times(&mut self, xids: &[u32]) -> pgsurgeon_core::Result<Vec<(u32, Option<i64>)>> {
        Python::attach(|py| {
            let r = self.oracle.call_method1(py, "commit_times", (xids.to_vec(),)).map_err(|e| self.raised.keep(e))?;
            let m: std::collections::HashMap<u32, Option<i64>> = r.extract(py).map_err(|e| self.raised.keep(e))?;
            Ok(m.into_iter().collect())
        })
    }

    fn subxacts(&mut self, xid: u32) -> pgsurgeon_core::Result<Option<Vec<u32>>> {
        Python::attach(|py| {
            let r = self.oracle.call_method1(py, "subxacts", (xid,)).map_err(|e| self.raised.keep(e))?;
            r.extract(py).map_err(|e| self.raised.keep(e))
        })
    }
}

/// The row engine over one heap relation (`config`: pgsurgeon_core::rows::carve::CarveConfig). `run()` carves
/// block ranges with the GIL released, writing rows as it goes; `progress()` and `cancel()` may be called from
/// another thread meanwhile.
#[pyclass(frozen)]
struct RowCarver {
    carver: std::sync::Mutex<pgsurgeon_core::rows::carve::Carver>,
    progress: std::sync::Arc<pgsurgeon_core::rows::engine::Progress>,
}

#[pymethods]
impl RowCarver {
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let cfg: pgsurgeon_core::rows::carve::CarveConfig = from_py(config, "carve configuration")?;
        Ok(RowCarver {
            carver: std::sync::Mutex::new(pgsurgeon_core::rows::carve::Carver::new(cfg)),
            progress: Default::default(),
        })
    }

    /// (blocks done, rows written to the main output, rows kept apart) so far.
    fn progress(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let p = &self.progress;
        (p.blocks_done.load(Relaxed), p.rows_main.load(Relaxed), p.rows_apart.load(Relaxed))
    }

    /// Ask a running carve to stop after the current wave.
    fn cancel(&self) {
        self.progress.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Carve the half-open block `ranges`. Rows go to files (`main`, `apart`, optional `prov`: appended to) or to
    /// `write(main, apart, prov)`; pages come from the configured files or from `read(first, count)`; `oracle`
    /// answers what the files do not say. Returns the summary.
    #[pyo3(signature = (ranges, jobs, *, unit_blocks=128, main=None, apart=None, prov=None, write=None, read=None, oracle=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        ranges: Vec<(u64, u64)>,
        jobs: usize,
        unit_blocks: u64,
        main: Option<std::path::PathBuf>,
        apart: Option<std::path::PathBuf>,
        prov: Option<std::path::PathBuf>,
        write: Option<Py<PyAny>>,
        read: Option<Py<PyAny>>,
        oracle: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        use pgsurgeon_core::rows::engine::{unload, FileSink, Oracle, PageSource, RowSink, UnloadOptions};
        let raised = Raised(std::sync::Mutex::new(None));
        let opts = UnloadOptions { jobs: jobs.max(1), unit_blocks, provenance: prov.is_some() || write.is_some() };
        let py_pages = read.map(|read| PyPages { read, raised: &raised });
        let mut py_oracle = oracle.map(|oracle| PyOracle { oracle, raised: &raised });
        let result = py.detach(|| -> pgsurgeon_core::Result<pgsurgeon_core::rows::engine::UnloadSummary> {
            let _call = pgsurgeon_core::profile::timer("call.carve");
            let mut carver = self.carver.lock().unwrap_or_else(|p| p.into_inner());
            let files = carver.heap_reader();
            let source: &dyn PageSource = match (&py_pages, &files) {
                (Some(p), _) => p,
                (None, Some(f)) => f,
                (None, None) => return Err(CoreError::Invalid("no pages: neither files nor a reader".into())),
            };
            let oracle: Option<&mut dyn Oracle> = py_oracle.as_mut().map(|o| o as &mut dyn Oracle);
            match (main, apart, write) {
                (Some(m), Some(a), _) => {
                    let mut sink = FileSink::new(&m, &a, prov.as_deref())?;
                    let s = unload(&mut carver, source, &ranges, oracle, &mut sink, &opts, &self.progress)?;
                    sink.finish()?;
                    Ok(s)
                }
                (_, _, Some(w)) => {
                    let mut sink = PySink { write: w, raised: &raised };
                    let sink: &mut (dyn RowSink + Send) = &mut sink;
                    unload(&mut carver, source, &ranges, oracle, sink, &opts, &self.progress)
                }
                _ => Err(CoreError::Invalid("rows need somewhere to go: main and apart paths, or write".into())),
            }
        });
        if let Some(e) = raised.take() {
            return Err(e);
        }
        to_py(py, &result.map_err(to_pyerr)?)
    }
}

/// The chunks of these TOAST values found through the TOAST index: (valueid, chunk_seq, bytes). Pages of the index
/// and of the TOAST table come from `read_index(first, count)` and `read_toast(first, count)`; the GIL stays held
/// (every page is a call into Python).
#[pyfunction]
fn toast_by_index(
    py: Python<'_>,
    valueids: Vec<u32>,
    blcksz: u32,
    read_index: Py<PyAny>,
    read_toast: Py<PyAny>,
) -> PyResult<Py<PyAny>> {
    let raised = Raised(std::sync::Mutex::new(None));
    let index = PyPages { read: read_index, raised: &raised };
    let toast = PyPages { read: read_toast, raised: &raised };
    let found = pgsurgeon_core::rows::toastindex::toast_by_index(&valueids, blcksz, &index, &toast);
    if let Some(e) = raised.take() {
        return Err(e);
    }
    let list = pyo3::types::PyList::empty(py);
    for (v, seq, bytes) in found.map_err(to_pyerr)? {
        list.append((v, seq, pyo3::types::PyBytes::new(py, &bytes)))?;
    }
    Ok(list.into_any().unbind())
}

/// Heap TIDs in the given blocks that btree index entries point to.
#[pyfunction]
fn index_evidence(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let cfg: pgsurgeon_core::rows::evidence::IndexEvidenceConfig = from_py(config, "index configuration")?;
    let res = py
        .detach(|| {
            let _call = pgsurgeon_core::profile::timer("call.evidence");
            pgsurgeon_core::rows::evidence::index_evidence(&cfg)
        })
        .map_err(to_pyerr)?;
    to_py(py, &res)
}

/// What the indexes and the visibility map say about the rows of the given heap pages.
#[pyfunction]
fn loss_evidence(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let cfg: pgsurgeon_core::rows::loss::LossConfig = from_py(config, "loss configuration")?;
    let res = py.detach(|| pgsurgeon_core::rows::loss::loss_evidence(&cfg)).map_err(to_pyerr)?;
    to_py(py, &res)
}

/// Nanoseconds on the profile's clock (0 when `PGSURGEON_PROFILE` is not set).
#[pyfunction]
fn profile_now() -> u64 {
    pgsurgeon_core::profile::now_ns()
}

/// The calling thread's CPU nanoseconds.
#[pyfunction]
fn profile_thread_cpu() -> u64 {
    pgsurgeon_core::profile::thread_cpu_ns()
}

/// Record a span of the Python layer (`role`, start and end on [`profile_now`]'s clock, the thread's CPU time in
/// it) on the calling thread.
#[pyfunction]
fn profile_record(role: String, start_ns: u64, end_ns: u64, cpu_ns: u64) {
    pgsurgeon_core::profile::record(role.into(), start_ns, end_ns, cpu_ns);
}

/// Every span recorded so far (taken out of the profile).
#[pyfunction]
fn profile_take(py: Python<'_>) -> PyResult<Py<PyAny>> {
    to_py(py, &pgsurgeon_core::profile::take())
}

#[pymodule]
fn _pgsurgeon(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Scanner>()?;
    m.add_class::<RowCarver>()?;
    m.add_class::<catalog::FilesCatalog>()?;
    backup::register(m)?;
    m.add_function(wrap_pyfunction!(catalog::missing_value, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::format_datum, m)?)?;
    m.add("FormatError", m.py().get_type::<FormatError>())?;
    m.add_function(wrap_pyfunction!(inspect_page, m)?)?;
    m.add_function(wrap_pyfunction!(describe_code, m)?)?;
    m.add_function(wrap_pyfunction!(finding_codes, m)?)?;
    m.add_function(wrap_pyfunction!(page_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(parse_control, m)?)?;
    m.add_function(wrap_pyfunction!(read_control, m)?)?;
    m.add_function(wrap_pyfunction!(toast_by_index, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_checks, m)?)?;
    m.add_function(wrap_pyfunction!(crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(control_crc_offset, m)?)?;
    m.add_function(wrap_pyfunction!(hint_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(multi_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(discover_relations, m)?)?;
    m.add_function(wrap_pyfunction!(inject_page, m)?)?;
    m.add_function(wrap_pyfunction!(inject_modes, m)?)?;
    m.add_function(wrap_pyfunction!(classify_relation, m)?)?;
    m.add_function(wrap_pyfunction!(classify_pages, m)?)?;
    m.add_function(wrap_pyfunction!(carve_pages, m)?)?;
    m.add_function(wrap_pyfunction!(index_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(loss_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(boundary::config_fields, m)?)?;
    m.add_function(wrap_pyfunction!(profile_now, m)?)?;
    m.add_function(wrap_pyfunction!(profile_record, m)?)?;
    m.add_function(wrap_pyfunction!(profile_thread_cpu, m)?)?;
    m.add_function(wrap_pyfunction!(profile_take, m)?)?;
    diagnose::register(m)?;
    repair::register(m)?;
    Ok(())
}
