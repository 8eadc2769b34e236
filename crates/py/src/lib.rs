//! The Python binding: coarse calls (paths and buffers in, JSON documents out) over
//! pgsurgeon-core. All error mapping happens in `to_pyerr`.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;

use pgsurgeon_core::page::PageKind;
use pgsurgeon_core::CoreError;

pyo3::create_exception!(
    _pgsurgeon,
    FormatError,
    PyValueError,
    "A file is not in a format pgsurgeon knows."
);

/// The one place core errors become Python exceptions.
fn to_pyerr(err: CoreError) -> PyErr {
    let text = err.to_string();
    match err {
        CoreError::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
            _ => PyOSError::new_err(text),
        },
        CoreError::Format { .. } => FormatError::new_err(text),
        CoreError::Invalid(_) => PyValueError::new_err(text),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("cannot serialise result: {e}")))
}

/// Decode one page; returns the report as a JSON document.
#[pyfunction]
#[pyo3(signature = (data, block, checksums, kind=None))]
fn inspect_page(data: &[u8], block: u64, checksums: bool, kind: Option<&str>) -> PyResult<String> {
    let kind = match kind {
        None => None,
        Some(k) => Some(
            PageKind::parse(k)
                .ok_or_else(|| PyValueError::new_err(format!("unknown page kind: {k}")))?,
        ),
    };
    let report =
        pgsurgeon_core::inspect::inspect_page(data, block, checksums, kind).ok_or_else(|| {
            PyValueError::new_err(format!(
                "a page needs at least 24 bytes, got {}",
                data.len()
            ))
        })?;
    to_json(&report)
}

/// pg_checksum_page for `data` at `block` (counted across segments); None for odd lengths.
#[pyfunction]
fn page_checksum(data: &[u8], block: u32) -> Option<u16> {
    pgsurgeon_core::checksum::pg_checksum_page(data, block)
}

/// Parse a pg_control image; JSON document.
#[pyfunction]
fn parse_control(data: &[u8]) -> PyResult<String> {
    to_json(&pgsurgeon_core::control::parse_control(data).map_err(to_pyerr)?)
}

/// Read and parse `<pgdata>/global/pg_control`; JSON document.
#[pyfunction]
fn read_control(py: Python<'_>, pgdata: std::path::PathBuf) -> PyResult<String> {
    let control = py
        .detach(|| pgsurgeon_core::control::read_control_file(&pgdata))
        .map_err(to_pyerr)?;
    to_json(&control)
}

/// Every relation file under a data directory, grouped by relation and fork; JSON document.
#[pyfunction]
fn discover_relations(py: Python<'_>, pgdata: std::path::PathBuf) -> PyResult<String> {
    let rels = py
        .detach(|| pgsurgeon_core::relfile::discover(&pgdata))
        .map_err(to_pyerr)?;
    to_json(&rels)
}

#[pymodule]
fn _pgsurgeon(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FormatError", m.py().get_type::<FormatError>())?;
    m.add_function(wrap_pyfunction!(inspect_page, m)?)?;
    m.add_function(wrap_pyfunction!(page_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(parse_control, m)?)?;
    m.add_function(wrap_pyfunction!(read_control, m)?)?;
    m.add_function(wrap_pyfunction!(discover_relations, m)?)?;
    Ok(())
}
