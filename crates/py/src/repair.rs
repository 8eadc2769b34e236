//! Repair planning's pass over a table's btree entries: pages fetched from the server go in a batch at a time,
//! only the entries the plan names come out (see `pgsurgeon_core::rows::entryscan`).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use pgsurgeon_core::rows::entryscan as core_scan;

/// One pass: `heap` the table's pages, then `index` each btree index's, then read the answers.
#[pyclass(frozen)]
pub struct EntryScan(Mutex<core_scan::EntryScan>);

impl EntryScan {
    fn scan(&self) -> std::sync::MutexGuard<'_, core_scan::EntryScan> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl EntryScan {
    #[new]
    #[pyo3(signature = (nblocks, blcksz, *, named_blocks, key_blocks=Vec::new(), key_tids=Vec::new(), keys=Vec::new()))]
    fn new(
        nblocks: u64,
        blcksz: usize,
        named_blocks: Vec<u64>,
        key_blocks: Vec<u64>,
        key_tids: Vec<(u64, u16)>,
        keys: Vec<Bound<'_, PyBytes>>,
    ) -> Self {
        let wanted = core_scan::KeyWanted::new(
            core_scan::BlockSet::of(key_blocks),
            key_tids,
            keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
        );
        let scan = core_scan::EntryScan::new(nblocks, blcksz, core_scan::BlockSet::of(named_blocks), wanted);
        EntryScan(Mutex::new(scan))
    }

    /// Heap pages, block `first` onwards.
    fn heap(&self, data: &[u8], first: u64) {
        self.scan().heap(data, first);
    }

    /// Pages of btree index number `index` (never its metapage).
    fn index(&self, data: &[u8], index: u16, keyed: bool) {
        self.scan().index(data, index, keyed);
    }

    /// (heap block, line pointer, indexes holding it) of every entry into the named blocks, by TID.
    fn named(&self) -> Vec<(u64, u16, Vec<u16>)> {
        self.scan().named().map(|((b, lp), ix)| (*b, *lp, ix.clone())).collect()
    }

    /// (heap block, line pointer, why, the page's pd_lower count, indexes holding it) of every entry whose row is
    /// gone, by TID; why is past_end, zero, beyond, unused or dead_with_storage.
    fn gone(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rows: Vec<(u64, u16, core_scan::Gone, u16, Vec<u16>)> =
            self.scan().gone().map(|g| (g.block, g.lp, g.why, g.max_offset, g.indexes.clone())).collect();
        crate::to_py(py, &rows)
    }

    /// Heap TID -> key bytes of the keyed index's entries kept.
    fn keys_kept<'py>(&self, py: Python<'py>) -> Vec<((u64, u16), Bound<'py, PyBytes>)> {
        self.scan().keys().iter().map(|(t, k)| (*t, PyBytes::new(py, k))).collect()
    }

    /// How many entries of the keyed index had a key.
    #[getter]
    fn keyed_entries(&self) -> u64 {
        self.scan().keyed_entries()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EntryScan>()
}
