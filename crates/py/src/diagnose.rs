//! diagnose's batch calls: pages fetched from the server go in as one buffer per batch, findings come out as a
//! list, with block lists and candidate tuples; the line pointer map of a heap stays on the Rust side.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use pgsurgeon_core::checks::diagnose as core_diag;
use pgsurgeon_core::format::page::PageKind;

/// The line pointers of one heap (a few bytes a block), filled by `check_pages(..., record=map)` and read by
/// the index batches of the same heap (`against=map`). Shared by threads.
#[pyclass(frozen)]
pub struct LineMap(std::sync::RwLock<core_diag::LineMap>);

#[pymethods]
impl LineMap {
    #[new]
    fn new(nblocks: u64) -> Self {
        LineMap(std::sync::RwLock::new(core_diag::LineMap::new(nblocks)))
    }

    #[getter]
    fn nblocks(&self) -> u64 {
        self.0.read().unwrap_or_else(|p| p.into_inner()).nblocks()
    }
}

/// One index's pages, batch by batch as they are read through the server, for the relation-wide checks a scan runs on its files:
/// GIN right-links and posting trees, GiST and SP-GiST downlinks and chains, hash chains and bitmaps, the BRIN range
/// map. Shared by threads.
#[pyclass(frozen)]
pub struct CrossPages(std::sync::Mutex<pgsurgeon_core::checks::scan::CrossPages>);

#[pymethods]
impl CrossPages {
    #[new]
    fn new(kind: &str, blcksz: usize) -> PyResult<Self> {
        let k = PageKind::parse(kind).ok_or_else(|| PyValueError::new_err(format!("unknown page kind: {kind}")))?;
        let acc = pgsurgeon_core::checks::scan::CrossPages::new(k, blcksz)
            .ok_or_else(|| PyValueError::new_err(format!("no checks across {kind} pages")))?;
        Ok(CrossPages(std::sync::Mutex::new(acc)))
    }

    /// The pages of `data` (whole pages, block `first` onwards), the GIL released.
    fn add(&self, py: Python<'_>, data: &[u8], first: u64) {
        py.detach(|| self.0.lock().unwrap_or_else(|p| p.into_inner()).add(data, first));
    }

    /// The findings across the pages added, for an index of `nblocks` blocks (every one of them added).
    fn finish(&self, py: Python<'_>, nblocks: u64) -> PyResult<Py<PyAny>> {
        let found = py.detach(|| self.0.lock().unwrap_or_else(|p| p.into_inner()).finish(nblocks));
        crate::to_py(py, &found)
    }
}

type Candidates = Vec<(u64, u16, u32, u16, bool)>;
/// (findings, suspect blocks, all-zero blocks, candidates, pages checked).
type BatchAnswer = (Py<PyAny>, Vec<u64>, Vec<u64>, Candidates, u64);

/// Check consecutive pages (block `first` onwards) with the GIL released. Returns (findings, suspect
/// blocks, all-zero blocks, candidates (index block, index item, heap block, heap item, past end), pages).
#[pyfunction]
#[pyo3(signature = (data, first, *, kind, checksums, blcksz, relnatts=None, record=None, against=None, nblocks=None))]
#[allow(clippy::too_many_arguments)]
fn check_pages(
    py: Python<'_>,
    data: &[u8],
    first: u64,
    kind: Option<&str>,
    checksums: bool,
    blcksz: usize,
    relnatts: Option<u16>,
    record: Option<Py<LineMap>>,
    against: Option<Py<LineMap>>,
    nblocks: Option<u64>,
) -> PyResult<BatchAnswer> {
    let kind = match kind {
        None => None,
        Some(k) => Some(PageKind::parse(k).ok_or_else(|| PyValueError::new_err(format!("unknown page kind: {k}")))?),
    };
    if blcksz == 0 || !data.len().is_multiple_of(blcksz) {
        return Err(PyValueError::new_err(format!("{} bytes are not whole pages of {blcksz}", data.len())));
    }
    let cfg = core_diag::BatchConfig { kind, checksums, blcksz, relnatts, collect_lp: record.is_some(), nblocks };
    let against_ref = against.as_ref().map(|m| m.get());
    let record_ref = record.as_ref().map(|m| m.get());
    let mut rep = py.detach(|| {
        let guard = against_ref.map(|m| m.0.read().unwrap_or_else(|p| p.into_inner()));
        let mut rep = core_diag::check_batch(data, first, &cfg, guard.as_deref());
        drop(guard);
        if let Some(m) = record_ref {
            m.0.write().unwrap_or_else(|p| p.into_inner()).absorb(&mut rep);
        }
        rep
    });
    let candidates =
        rep.candidates.iter().map(|c| (c.index_block, c.index_item, c.heap_block, c.heap_item, c.past_end)).collect();
    let findings = crate::to_py(py, &rep.findings)?;
    Ok((findings, std::mem::take(&mut rep.suspect), std::mem::take(&mut rep.zero), candidates, rep.pages))
}

/// (entry's line pointer, heap block, heap item) of every live entry on a btree leaf page.
#[pyfunction]
fn leaf_tids(data: &[u8]) -> Vec<(u16, u32, u16)> {
    core_diag::leaf_tids(data)
}

/// (heap block, heap item, key bytes) of every live entry of a btree leaf page.
#[pyfunction]
fn leaf_keys<'py>(py: Python<'py>, data: &[u8]) -> Vec<(u32, u16, Bound<'py, pyo3::types::PyBytes>)> {
    core_diag::leaf_keys(data).into_iter().map(|(b, o, k)| (b, o, pyo3::types::PyBytes::new(py, &k))).collect()
}

/// The line pointer flags of a heap page, one byte each (0 unused, 1 normal, 2 redirect, 3 dead).
#[pyfunction]
fn lp_flags<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, pyo3::types::PyBytes> {
    pyo3::types::PyBytes::new(py, &core_diag::lp_flags(data))
}

/// amcheck's heapallindexed from the relation files (see `pgsurgeon_core::checks::diagnose::allindexed`), the GIL
/// released while the files are read. The answer carries `proven`, one flag per index.
#[pyfunction]
fn all_indexed(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let cfg: core_diag::allindexed::AllIndexedConfig = crate::from_py(config, "all-indexed configuration")?;
    let res = py.detach(|| core_diag::allindexed::all_indexed(&cfg)).map_err(crate::to_pyerr)?;
    let mut doc = serde_json::to_value(&res).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let proven: Vec<bool> = (0..res.indexes.len()).map(|i| res.proven(i)).collect();
    doc["proven"] = serde_json::json!(proven);
    crate::to_py(py, &doc)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CrossPages>()?;
    m.add_class::<LineMap>()?;
    m.add_function(wrap_pyfunction!(all_indexed, m)?)?;
    m.add_function(wrap_pyfunction!(check_pages, m)?)?;
    m.add_function(wrap_pyfunction!(leaf_keys, m)?)?;
    m.add_function(wrap_pyfunction!(leaf_tids, m)?)?;
    m.add_function(wrap_pyfunction!(lp_flags, m)?)?;
    Ok(())
}
