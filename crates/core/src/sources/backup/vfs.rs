//! The readers of the core (relation discovery, pg_control, relation maps, SLRUs, the scanner, the row engine)
//! read files through these functions instead of `std::fs`. A path under a mounted root is served by that
//! root's [`FileSource`] (a tar archive read in place); any other path is an ordinary file, read as before.
//!
//! The mount table is process-wide so that every reader, however deep, sees a backup the same way a data
//! directory is seen: by path. A root is mounted for as long as its [`Mount`] guard lives.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::bounds::{human, WHOLE_READ_MAX};

/// One file or directory of a source, path relative to the data directory (`base/5/1259`).
#[derive(Debug, Clone)]
pub struct Member {
    pub path: String,
    pub size: u64,
    pub is_dir: bool,
}

/// Files read in place from something other than a directory.
pub trait FileSource: Send + Sync {
    /// Every member, in the order the source stores them.
    fn members(&self) -> &[Member];
    /// Position of a member in [`FileSource::members`].
    fn index_of(&self, path: &str) -> Option<usize>;
    /// Read up to `buf.len()` bytes of member `index` from `offset`; fewer only at the member's end.
    fn read_at(&self, index: usize, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// True when reads cost a pass over a compressed stream unless they come in storage order: callers
    /// with a choice read in the order of [`FileSource::members`].
    fn sequential(&self) -> bool;
    /// What member `index` is, for errors: `member global/pg_control of base.tar.gz`.
    fn describe(&self, index: usize) -> String;
}

struct Mounted {
    root: PathBuf,
    source: Arc<dyn FileSource>,
    /// Directory → its entries (name, is_dir), built from the member paths.
    dirs: BTreeMap<String, Vec<(String, bool)>>,
}

static MOUNTS: RwLock<Vec<Arc<Mounted>>> = RwLock::new(Vec::new());

/// Keeps a source mounted at its root; unmounts when dropped.
pub struct Mount {
    root: PathBuf,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let mut m = MOUNTS.write().unwrap_or_else(|e| e.into_inner());
        m.retain(|x| x.root != self.root);
    }
}

/// Serve paths under `root` from `source` (replacing an earlier mount of the same root).
pub fn mount(root: &Path, source: Arc<dyn FileSource>) -> Mount {
    let mut dirs: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    dirs.entry(String::new()).or_default();
    let mut seen = std::collections::HashSet::new();
    for m in source.members() {
        let parts: Vec<&str> = m.path.split('/').filter(|p| !p.is_empty()).collect();
        for i in 0..parts.len() {
            let parent = parts[..i].join("/");
            let full = parts[..=i].join("/");
            let is_dir = i + 1 < parts.len() || m.is_dir;
            if seen.insert(full) {
                dirs.entry(parent).or_default().push((parts[i].to_string(), is_dir));
            }
            if is_dir {
                dirs.entry(parts[..=i].join("/")).or_default();
            }
        }
    }
    let mounted = Arc::new(Mounted { root: root.to_path_buf(), source, dirs });
    let mut m = MOUNTS.write().unwrap_or_else(|e| e.into_inner());
    m.retain(|x| x.root != root);
    m.push(mounted);
    Mount { root: root.to_path_buf() }
}

/// The mount serving `path`, and the path relative to its root (`/`-separated, no leading slash).
fn resolve(path: &Path) -> Option<(Arc<Mounted>, String)> {
    let mounts = MOUNTS.read().unwrap_or_else(|e| e.into_inner());
    if mounts.is_empty() {
        return None;
    }
    for m in mounts.iter() {
        if let Ok(rest) = path.strip_prefix(&m.root) {
            let rel: Vec<String> = rest
                .components()
                .filter_map(|c| match c {
                    std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect();
            return Some((m.clone(), rel.join("/")));
        }
    }
    None
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} is not in the backup", path.display()))
}

/// The source and member index behind `path`, when it is a mounted file.
pub fn member_of(path: &Path) -> Option<(Arc<dyn FileSource>, usize)> {
    let (m, rel) = resolve(path)?;
    let i = m.source.index_of(&rel)?;
    Some((m.source.clone(), i))
}

/// Order key for reading `path`: its position in a sequential source, `None` for ordinary files and
/// random-access sources.
pub fn read_order(path: &Path) -> Option<usize> {
    let (src, i) = member_of(path)?;
    src.sequential().then_some(i)
}

/// Like `std::fs::metadata`, for what readers ask: file or directory, and length.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    is_dir: bool,
    len: u64,
}

impl Meta {
    pub fn is_file(&self) -> bool {
        !self.is_dir
    }

    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

pub fn metadata(path: &Path) -> io::Result<Meta> {
    match resolve(path) {
        None => std::fs::metadata(path).map(|m| Meta { is_dir: m.is_dir(), len: m.len() }),
        Some((m, rel)) => {
            if m.dirs.contains_key(&rel) {
                return Ok(Meta { is_dir: true, len: 0 });
            }
            let i = m.source.index_of(&rel).ok_or_else(|| not_found(path))?;
            let mem = &m.source.members()[i];
            Ok(Meta { is_dir: mem.is_dir, len: mem.size })
        }
    }
}

/// Entries of a directory as (name, path), unsorted.
pub fn read_dir(path: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    match resolve(path) {
        None => {
            let mut out = Vec::new();
            for e in std::fs::read_dir(path)? {
                let e = e?;
                if let Ok(name) = e.file_name().into_string() {
                    out.push((name, e.path()));
                }
            }
            Ok(out)
        }
        Some((m, rel)) => {
            let entries = m.dirs.get(&rel).ok_or_else(|| not_found(path))?;
            Ok(entries.iter().map(|(n, _)| (n.clone(), path.join(n))).collect())
        }
    }
}

/// A whole file, at most [`WHOLE_READ_MAX`] bytes: longer is an error, before anything is allocated (a tar
/// header or a damaged file system can state any length).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let f = VFile::open(path)?;
    let len = f.size()?;
    if len > WHOLE_READ_MAX {
        let what = match &f {
            VFile::Os(_) => "the file".to_string(),
            VFile::Member { source, index } => source.describe(*index),
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{what} is {}, more than the {} a file read whole may be: not a file PostgreSQL wrote\nhint: \
                 restore this file from a good copy, or move it aside if PostgreSQL does not need it",
                human(len),
                human(WHOLE_READ_MAX)
            ),
        ));
    }
    let mut buf = vec![0u8; len as usize];
    let n = f.read_full_at(&mut buf, 0)?;
    buf.truncate(n);
    Ok(buf)
}

pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A file opened for reading: an ordinary file or a member of a mounted source.
pub enum VFile {
    Os(File),
    Member { source: Arc<dyn FileSource>, index: usize },
}

impl std::fmt::Debug for VFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VFile::Os(file) => write!(f, "VFile::Os({file:?})"),
            VFile::Member { index, .. } => write!(f, "VFile::Member({index})"),
        }
    }
}

impl VFile {
    pub fn open(path: &Path) -> io::Result<VFile> {
        match resolve(path) {
            None => Ok(VFile::Os(File::open(path)?)),
            Some((m, rel)) => {
                let index = m.source.index_of(&rel).ok_or_else(|| not_found(path))?;
                if m.source.members()[index].is_dir {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{} is a directory", path.display()),
                    ));
                }
                Ok(VFile::Member { source: m.source.clone(), index })
            }
        }
    }

    pub fn size(&self) -> io::Result<u64> {
        match self {
            VFile::Os(f) => Ok(f.metadata()?.len()),
            VFile::Member { source, index } => Ok(source.members()[*index].size),
        }
    }

    /// One read at `offset` (pread semantics: may return less than asked).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self {
            VFile::Os(f) => f.read_at(buf, offset),
            VFile::Member { source, index } => source.read_at(*index, offset, buf),
        }
    }

    /// Fill `buf` from `offset`, stopping early only at the end of the file.
    pub fn read_full_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::backup::archive::{ArchiveFile, Compression, TarSource};

    /// A mounted tar reads like a data directory: relation discovery finds the segments with their sizes, files
    /// read by path, directories list, and nothing outside the root changes meaning.
    #[test]
    fn a_mounted_tar_reads_like_a_directory() {
        let dir = std::env::temp_dir().join(format!("pgs-vfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut tar_bytes = Vec::new();
        {
            let mut b = tar::Builder::new(&mut tar_bytes);
            let mut add = |path: &str, data: &[u8]| {
                let mut h = tar::Header::new_ustar();
                h.set_size(data.len() as u64);
                h.set_mode(0o600);
                h.set_cksum();
                b.append_data(&mut h, path, data).unwrap();
            };
            add("PG_VERSION", b"15\n");
            add("base/5/16384", &[7u8; 16384]);
            add("base/5/16384.1", &[8u8; 8192]);
            add("base/5/16384_fsm", &[0u8; 8192]);
            add("global/1262", &[0u8; 8192]);
            b.finish().unwrap();
        }
        let path = dir.join("base.tar");
        std::fs::write(&path, &tar_bytes).unwrap();
        let src = TarSource::open(
            vec![ArchiveFile { path: path.clone(), compression: Compression::None, prefix: String::new() }],
            |_, _| Ok(()),
        )
        .unwrap();
        let root = dir.join("mounted");
        {
            let _m = mount(&root, Arc::new(src));
            let rels = crate::sources::relfile::discover(&root).unwrap();
            let main = rels.iter().find(|r| r.relfilenode == 16384 && r.path.ends_with("16384")).unwrap();
            let sizes: Vec<(u32, u64)> = main.segments.iter().map(|s| (s.segno, s.size)).collect();
            assert_eq!(sizes, vec![(0, 16384), (1, 8192)]);
            assert_eq!(rels.len(), 3, "{rels:?}"); // main and fsm of 16384, and 1262
            assert_eq!(read_to_string(&root.join("PG_VERSION")).unwrap(), "15\n");
            let f = VFile::open(&root.join("base/5/16384.1")).unwrap();
            let mut buf = [0u8; 100];
            assert_eq!(f.read_full_at(&mut buf, 8100).unwrap(), 92);
            assert!(buf[..92].iter().all(|b| *b == 8));
            assert!(metadata(&root.join("base/5")).unwrap().is_dir());
            let mut names: Vec<String> = read_dir(&root.join("base/5")).unwrap().into_iter().map(|e| e.0).collect();
            names.sort();
            assert_eq!(names, ["16384", "16384.1", "16384_fsm"]);
            assert_eq!(read_order(&root.join("base/5/16384")), None); // uncompressed: random access
            assert!(VFile::open(&root.join("base/5/99999")).is_err());
            assert!(read(&dir.join("base.tar")).is_ok()); // outside the root: the file system
        }
        // Unmounted with its guard.
        assert!(metadata(&root.join("PG_VERSION")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
