//! Base backups for Python: opening one mounts it, so every other call (Scanner, FilesCatalog, RowCarver) reads
//! its files by path under `root` until `close()`.

use pyo3::prelude::*;

use pgsurgeon_core::sources::backup::{vfs, Backup as CoreBackup};

use crate::{to_py, to_pyerr};

#[pyclass(frozen, module = "pgsurgeon._pgsurgeon")]
pub struct Backup {
    inner: std::sync::Mutex<Option<CoreBackup>>,
    root: std::path::PathBuf,
}

impl Backup {
    fn with<T>(&self, f: impl FnOnce(&CoreBackup) -> PyResult<T>) -> PyResult<T> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(b) => f(b),
            None => Err(pyo3::exceptions::PyValueError::new_err("the backup is closed")),
        }
    }
}

#[pymethods]
impl Backup {
    /// Open a backup directory (plain or tar) or its base.tar* file; a compressed archive is read through once.
    #[new]
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let b = py.detach(|| CoreBackup::open(&path)).map_err(to_pyerr)?;
        let root = b.root.clone();
        Ok(Backup { inner: std::sync::Mutex::new(Some(b)), root })
    }

    /// The directory under which the backup's files are read.
    #[getter]
    fn root(&self) -> std::path::PathBuf {
        self.root.clone()
    }

    /// Format, archives and compression, backup_label.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with(|b| to_py(py, &b.info()))
    }

    /// Every file against backup_manifest (`present: false` without a manifest).
    fn verify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with(|b| {
            let rep = py.detach(|| b.verify()).map_err(to_pyerr)?;
            to_py(py, &rep)
        })
    }

    /// Passes over compressed archives beyond the first, so far.
    fn restarts(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.restarts()))
    }

    /// Position of a file (relative path) in a compressed archive's stream; None when reads cost nothing extra.
    fn read_order(&self, rel: &str) -> Option<usize> {
        vfs::read_order(&self.root.join(rel))
    }

    /// Keep a file (relative path) at hand, in a temporary file, until `release`: for one read at random while others
    /// stream.
    fn hold(&self, py: Python<'_>, rel: &str) -> PyResult<()> {
        self.with(|b| py.detach(|| b.hold(rel)).map_err(to_pyerr))
    }

    fn release(&self, rel: &str) -> PyResult<()> {
        self.with(|b| {
            b.release(rel);
            Ok(())
        })
    }

    /// The segment files of a relation fork (segment 0's path relative to the root) that exist: [(segno, path)].
    fn segments(&self, rel: &str) -> Vec<(u32, std::path::PathBuf)> {
        let base = self.root.join(rel);
        let (Some(dir), Some(name)) = (base.parent(), base.file_name().and_then(|n| n.to_str())) else {
            return Vec::new();
        };
        let mut out: Vec<(u32, std::path::PathBuf)> = vfs::read_dir(dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(n, p)| {
                if n == name {
                    return Some((0, p));
                }
                let suffix = n.strip_prefix(name)?.strip_prefix('.')?;
                let ok = !suffix.is_empty() && !suffix.starts_with('0') && suffix.bytes().all(|c| c.is_ascii_digit());
                if !ok {
                    return None;
                }
                Some((suffix.parse().ok()?, p))
            })
            .filter(|(_, p)| vfs::metadata(p).is_ok_and(|m| m.is_file()))
            .collect();
        out.sort();
        out
    }

    /// Unmount: the files are no longer readable under `root`.
    fn close(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Whether a path is a base backup (backup_label, backup_manifest or base.tar*) rather than a data directory.
#[pyfunction]
pub fn is_backup(path: std::path::PathBuf) -> bool {
    pgsurgeon_core::sources::backup::is_backup(&path)
}

/// A directory's entries as (name, is_dir, length): a data directory's, or one inside a mounted backup.
#[pyfunction]
pub fn vfs_list(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Vec<(String, bool, u64)>> {
    py.detach(|| {
        let mut out = Vec::new();
        for (name, child) in vfs::read_dir(&path)? {
            // A dangling link or a link loop is nothing to read: left out, as a directory listing would show
            // nothing behind it.
            if let Ok(meta) = vfs::metadata(&child) {
                out.push((name, meta.is_dir(), meta.len()));
            }
        }
        Ok::<_, std::io::Error>(out)
    })
    .map_err(|e| to_pyerr(pgsurgeon_core::CoreError::io(&path, e)))
}

/// Copy a file (a data directory's, or a member of a mounted backup) to an ordinary file, 1 MB at a time; the bytes
/// copied. unload's catalog copy reads a tar backup's members this way, in the archive's order.
#[pyfunction]
pub fn vfs_copy(py: Python<'_>, src: std::path::PathBuf, dest: std::path::PathBuf) -> PyResult<u64> {
    py.detach(|| {
        use std::io::Write;
        let f = vfs::VFile::open(&src).map_err(|e| pgsurgeon_core::CoreError::io(&src, e))?;
        let mut out = std::fs::File::create(&dest).map_err(|e| pgsurgeon_core::CoreError::io(&dest, e))?;
        let mut buf = vec![0u8; 1 << 20];
        let mut offset = 0u64;
        loop {
            let n = f.read_full_at(&mut buf, offset).map_err(|e| pgsurgeon_core::CoreError::io(&src, e))?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n]).map_err(|e| pgsurgeon_core::CoreError::io(&dest, e))?;
            offset += n as u64;
        }
        Ok::<_, pgsurgeon_core::CoreError>(offset)
    })
    .map_err(to_pyerr)
}

/// A small file (a data directory's, or a member of a mounted backup) read whole: at most 64 MiB, longer is an error
/// before anything is read (vfs::read).
#[pyfunction]
pub fn vfs_read(py: Python<'_>, path: std::path::PathBuf) -> PyResult<std::borrow::Cow<'static, [u8]>> {
    let data = py.detach(|| vfs::read(&path)).map_err(|e| to_pyerr(pgsurgeon_core::CoreError::io(&path, e)))?;
    Ok(std::borrow::Cow::Owned(data))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Backup>()?;
    m.add_function(wrap_pyfunction!(vfs_list, m)?)?;
    m.add_function(wrap_pyfunction!(vfs_copy, m)?)?;
    m.add_function(wrap_pyfunction!(vfs_read, m)?)?;
    m.add_function(wrap_pyfunction!(is_backup, m)?)
}
