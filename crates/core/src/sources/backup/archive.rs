//! Tar archives as pg_basebackup writes them (`-Ft`: `base.tar`, `<tablespace oid>.tar`, `pg_wal.tar`), plain or
//! compressed with gzip, lz4 (frame format) or zstd, by the client or the server: read in place, never extracted.
//!
//! Uncompressed archives are read at random: each member's data is a byte range of the tar file (pread).
//!
//! Compressed archives cannot be read at random, so memory stays bounded this way:
//! - one pass at open lists the members and keeps in memory the files every reader needs and that stay small as
//!   the data grows: everything that is not a relation segment (pg_control, maps, PG_VERSION, backup_label,
//!   pg_xact, pg_multixact, …; WAL excepted), and the relation files numbered below `FirstNormalObjectId`
//!   (the catalogs as initdb made them); each at most [`bounds::WHOLE_READ_MAX`], all together at most
//!   [`bounds::KEPT_TOTAL`] (past that, read through the stream like the rest);
//! - any other read is served by a cursor: a thread decompresses the archive from the start and hands 1 MiB
//!   chunks over a bounded channel; the reader skips forward to what it wants and keeps the last
//!   [`WINDOW_BYTES`] in a window, so slightly out-of-order reads (parallel workers) are served too. A read
//!   behind the window restarts the stream (a further pass). Readers that can choose read in archive order
//!   ([`FileSource::sequential`]); the scanner and `unload` do.
//!
//! Peak memory: the kept files, the window and the channel, whatever the size of the backup. Files held for reading
//! at random ([`TarSource::hold`]) go to a temporary file. Every size a header states is checked before it is
//! relied on ([`bounds`]).

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use super::bounds::{self, Counting, Exact};
use super::spill::Spill;
use super::vfs::{FileSource, Member};
use crate::error::{CoreError, Result};

/// Bytes of decompressed data kept behind the cursor.
pub const WINDOW_BYTES: usize = 32 << 20;
const CHUNK: usize = 1 << 20;
/// Chunk buffers kept for reuse: enough for the channel and a little slack.
const POOL_BUFFERS: usize = 16;
/// `FirstNormalObjectId` (access/transam.h): relfilenodes below it are the catalogs initdb created.
const FIRST_NORMAL_OBJECT_ID: u32 = 16384;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    Lz4,
    Zstd,
}

impl Compression {
    /// From the first bytes of the file (magic numbers), so a renamed file is still read right.
    pub fn sniff(path: &Path) -> io::Result<Compression> {
        let mut head = [0u8; 4];
        let n = File::open(path)?.read_at(&mut head, 0)?;
        Ok(match &head[..n] {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd] => Compression::Zstd,
            [0x04, 0x22, 0x4d, 0x18] => Compression::Lz4,
            _ => Compression::None,
        })
    }
}

/// One archive file and where its members go in the data directory.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArchiveFile {
    pub path: PathBuf,
    pub compression: Compression,
    /// Prefix of its members' paths: "" for base.tar, `pg_tblspc/<oid>/` for a tablespace, `pg_wal/`.
    pub prefix: String,
}

fn open_stream(a: &ArchiveFile) -> io::Result<Box<dyn Read + Send>> {
    let f = BufReader::with_capacity(1 << 20, File::open(&a.path)?);
    Ok(match a.compression {
        Compression::None => Box::new(f),
        // pg_basebackup's client gzip writes one member; MultiGzDecoder also reads concatenated ones.
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Compression::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(f)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(f)?),
    })
}

/// Walk every entry of an archive in order: `each(ordinal, path, size, is_dir, data)`. Ordinals count every
/// entry, so two walks agree on them. `data` yields exactly `size` bytes or fails naming the member; the archive
/// must end with its end-of-archive block, and only zero padding may follow it ([`bounds`]).
pub fn walk(
    a: &ArchiveFile,
    mut each: impl FnMut(usize, &str, u64, bool, &mut dyn Read) -> io::Result<bool>,
) -> io::Result<()> {
    let (stream, consumed) = Counting::new(open_stream(a)?);
    let mut ar = tar::Archive::new(stream);
    let mut last = String::new();
    let mut end = 0u64;
    // Raw: pg_basebackup writes plain ustar headers (src/port/tar.c refuses names over 99 bytes), and the tar
    // crate would read GNU long-name and pax extension data into memory whatever its stated size.
    for (ordinal, entry) in ar.entries()?.raw(true).enumerate() {
        let mut entry = entry.map_err(|e| bounds::tar_error(e, &last))?;
        let kind = entry.header().entry_type();
        let raw = entry.path().map_err(|e| bounds::tar_error(e, &last))?.to_string_lossy().into_owned();
        let path = format!("{}{}", a.prefix, raw.trim_start_matches("./").trim_end_matches('/'));
        end = bounds::padded_end(entry.raw_file_position(), entry.size());
        last.clone_from(&path);
        let is_dir = kind.is_dir();
        let size = if kind.is_file() { entry.size() } else { 0 };
        let go_on = if !(kind.is_file() || is_dir) {
            // Symlinks (pg_tblspc/<oid> in base.tar) and the like: listed as empty directories so the
            // tablespace's own archive fills them.
            each(ordinal, &path, 0, true, &mut io::empty())
        } else {
            each(ordinal, &path, size, is_dir, &mut Exact::new(&mut entry, size, &path))
        }
        .map_err(|e| bounds::member_error(e, &path))?;
        if !go_on {
            return Ok(());
        }
    }
    bounds::check_end_marker(consumed.load(std::sync::atomic::Ordering::Relaxed), end, &last)?;
    bounds::check_trailer(&mut ar.into_inner(), &last)
}

/// Where a member lives.
#[derive(Debug, Clone)]
struct Place {
    archive: usize,
    ordinal: usize,
    /// Offset of the data in an uncompressed tar file.
    data_offset: Option<u64>,
}

struct Cursor {
    rx: Receiver<io::Result<(usize, u64, Vec<u8>)>>,
    /// (ordinal, offset, bytes), oldest first.
    window: VecDeque<(usize, u64, Arc<Vec<u8>>)>,
    window_bytes: usize,
    /// The stream ended.
    done: bool,
}

/// Whether a member is a relation segment file (`base/5/16384.1`, `global/1262`, `pg_tblspc/…/16384_vm`).
pub fn is_relation_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_rel_dir = path.starts_with("global/") || path.starts_with("base/") || path.starts_with("pg_tblspc/");
    in_rel_dir && crate::sources::relpath::parse_relation_file_name(name).is_some()
}

/// Whether a member is kept in memory when its archive is compressed (within the caps of [`bounds`]).
pub fn kept_in_memory(path: &str) -> bool {
    if path.starts_with("pg_wal/") || path == "pg_wal" {
        return false;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    match crate::sources::relpath::parse_relation_file_name(name) {
        Some(p) if is_relation_file(path) => p.relfilenode < FIRST_NORMAL_OBJECT_ID,
        _ => true,
    }
}

/// Members found so far by [`TarSource::open`].
#[derive(Default)]
struct Listing {
    members: Vec<Member>,
    places: Vec<Place>,
    kept: HashMap<usize, Arc<Vec<u8>>>,
    kept_bytes: u64,
}

impl Listing {
    /// An uncompressed archive, from its headers only: each member must fit in what is left of the file, and the
    /// file must hold the end-of-archive block after the last one.
    fn plain(&mut self, ai: usize, a: &ArchiveFile) -> io::Result<()> {
        let f = File::open(&a.path)?;
        let file_len = f.metadata()?.len();
        let mut ar = tar::Archive::new(f);
        let (mut last, mut end) = (String::new(), 0u64);
        for (ordinal, entry) in ar.entries_with_seek()?.raw(true).enumerate() {
            let entry = entry.map_err(|e| bounds::tar_error(e, &last))?;
            let kind = entry.header().entry_type();
            let raw = entry.path().map_err(|e| bounds::tar_error(e, &last))?.to_string_lossy().into_owned();
            let path = format!("{}{}", a.prefix, raw.trim_start_matches("./").trim_end_matches('/'));
            let (offset, size) = (entry.raw_file_position(), entry.size());
            if size > file_len.saturating_sub(offset) {
                return Err(bounds::damaged(format!(
                    "member {path} claims {}, but only {} of the archive are left after its header: the archive is \
                     truncated, or the header lies",
                    bounds::human(size),
                    bounds::human(file_len.saturating_sub(offset))
                )));
            }
            if kind.is_file() && bounds::read_whole(&path) && size > bounds::WHOLE_READ_MAX {
                return Err(bounds::too_big(&path, size));
            }
            end = bounds::padded_end(offset, size);
            let is_file = kind.is_file();
            self.members.push(Member { path: path.clone(), size: if is_file { size } else { 0 }, is_dir: !is_file });
            self.places.push(Place { archive: ai, ordinal, data_offset: Some(offset) });
            last = path;
        }
        bounds::check_end_marker(file_len, end, &last)
    }

    /// A compressed archive, read through once: small files the readers take whole are kept (within
    /// [`bounds::KEPT_TOTAL`]), the rest is only seen by `visit`.
    fn compressed(
        &mut self,
        ai: usize,
        a: &ArchiveFile,
        visit: &mut impl FnMut(&str, &mut dyn Read) -> io::Result<()>,
    ) -> io::Result<()> {
        walk(a, |ordinal, path, size, is_dir, data| {
            let i = self.members.len();
            self.members.push(Member { path: path.to_string(), size, is_dir });
            self.places.push(Place { archive: ai, ordinal, data_offset: None });
            if is_dir {
                return Ok(true);
            }
            if bounds::read_whole(path) && size > bounds::WHOLE_READ_MAX {
                return Err(bounds::too_big(path, size)); // before a byte of it is decompressed
            }
            let fits = size <= bounds::WHOLE_READ_MAX && self.kept_bytes + size <= bounds::KEPT_TOTAL;
            if kept_in_memory(path) && fits {
                // `data` yields exactly `size` bytes, checked above against the caps.
                let mut buf = Vec::with_capacity(size as usize);
                data.read_to_end(&mut buf)?;
                visit(path, &mut buf.as_slice())?;
                self.kept_bytes += size;
                self.kept.insert(i, Arc::new(buf));
            } else {
                visit(path, data)?;
            }
            Ok(true)
        })
    }
}

/// The members of a base backup in tar format.
pub struct TarSource {
    archives: Vec<ArchiveFile>,
    members: Vec<Member>,
    places: Vec<Place>,
    index: HashMap<String, usize>,
    kept: HashMap<usize, Arc<Vec<u8>>>,
    /// Members copied to temporary files on request ([`TarSource::hold`]), e.g. the TOAST table of the table
    /// being unloaded, which is read at random.
    held: Mutex<HashMap<usize, Arc<Spill>>>,
    /// Per uncompressed archive: the open file.
    handles: Vec<Option<File>>,
    /// Per compressed archive: its cursor.
    cursors: Vec<Mutex<Option<Cursor>>>,
    /// Bytes kept behind a cursor ([`WINDOW_BYTES`]).
    window: usize,
    /// Chunk buffers handed back by the reader for the next decompressing thread: the same few buffers go round
    /// instead of one allocation per MiB (which the allocator keeps, and which then looks like growth).
    pool: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Passes over compressed archives after the first (restarts), for reports.
    pub restarts: std::sync::atomic::AtomicU64,
}

impl TarSource {
    /// List the archives' members. `visit` sees each member's data once during the listing pass of a compressed
    /// archive (e.g. to checksum it); uncompressed archives are listed from their headers only.
    pub fn open(
        archives: Vec<ArchiveFile>,
        mut visit: impl FnMut(&str, &mut dyn Read) -> io::Result<()>,
    ) -> Result<TarSource> {
        let mut l = Listing::default();
        for (ai, a) in archives.iter().enumerate() {
            match a.compression {
                Compression::None => l.plain(ai, a),
                _ => l.compressed(ai, a, &mut visit),
            }
            .map_err(|e| CoreError::io(&a.path, e))?;
        }
        let Listing { members, places, kept, .. } = l;
        // A later entry of the same path wins, as when tar extracts.
        let index =
            members.iter().enumerate().filter(|(_, m)| !m.path.is_empty()).map(|(i, m)| (m.path.clone(), i)).collect();
        let cursors = archives.iter().map(|_| Mutex::new(None)).collect();
        let mut handles = Vec::new();
        for a in &archives {
            handles.push(match a.compression {
                Compression::None => Some(File::open(&a.path).map_err(|e| CoreError::io(&a.path, e))?),
                _ => None,
            });
        }
        Ok(TarSource {
            archives,
            members,
            places,
            index,
            kept,
            held: Default::default(),
            handles,
            cursors,
            window: WINDOW_BYTES,
            pool: Default::default(),
            restarts: Default::default(),
        })
    }

    /// A smaller window (at least one chunk), to exercise restarts.
    pub fn with_window(mut self, bytes: usize) -> TarSource {
        self.window = bytes.max(CHUNK);
        self
    }

    pub fn archives(&self) -> &[ArchiveFile] {
        &self.archives
    }

    /// The archive that holds member `index`.
    pub fn archive_of(&self, index: usize) -> &ArchiveFile {
        &self.archives[self.places[index].archive]
    }

    /// Keep member `index` at hand until [`TarSource::release`]: for a file read at random while another is
    /// streamed. Costs at most one further pass; a no-op for uncompressed archives and kept files. The bytes go to
    /// an unlinked temporary file ([`Spill`]), not to memory: a member can be as large as a segment file.
    pub fn hold(&self, index: usize) -> io::Result<()> {
        if self.places[index].data_offset.is_some() || self.kept.contains_key(&index) {
            return Ok(());
        }
        if self.held.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&index) {
            return Ok(());
        }
        let size = self.members[index].size;
        let spill = Spill::write(|offset, buf| {
            let want = buf.len().min(usize::try_from(size.saturating_sub(offset)).unwrap_or(usize::MAX));
            if want == 0 {
                return Ok(0);
            }
            self.read_stream(index, offset, &mut buf[..want])
        })?;
        self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(index, Arc::new(spill));
        Ok(())
    }

    pub fn release(&self, index: usize) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).remove(&index);
    }

    fn start(&self, archive: usize) -> Cursor {
        let a = self.archives[archive].clone();
        let (tx, rx) = sync_channel::<io::Result<(usize, u64, Vec<u8>)>>(8);
        let pool = self.pool.clone();
        std::thread::spawn(move || {
            let err_tx = tx.clone();
            let r = walk(&a, |ordinal, _, _, is_dir, data| {
                if is_dir {
                    return Ok(true);
                }
                let mut offset = 0u64;
                loop {
                    let recycled = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let mut buf = recycled.unwrap_or_else(|| Vec::with_capacity(CHUNK));
                    buf.clear();
                    let n = data.take(CHUNK as u64).read_to_end(&mut buf)?;
                    if n == 0 {
                        return Ok(true);
                    }
                    if tx.send(Ok((ordinal, offset, buf))).is_err() {
                        return Ok(false); // the reader went away
                    }
                    offset += n as u64;
                }
            });
            if let Err(e) = r {
                let _ = err_tx.send(Err(e));
            }
        });
        Cursor { rx, window: VecDeque::new(), window_bytes: 0, done: false }
    }

    fn read_stream(&self, index: usize, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let place = &self.places[index];
        let want = (place.ordinal, offset);
        let mut slot = self.cursors[place.archive].lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let cur = match slot.as_mut() {
                Some(c) => c,
                None => slot.insert(self.start(place.archive)),
            };
            // Served from the window?
            for (ord, off, bytes) in cur.window.iter() {
                if *ord == place.ordinal && *off <= offset && offset < off + bytes.len() as u64 {
                    let from = (offset - off) as usize;
                    let n = buf.len().min(bytes.len() - from);
                    buf[..n].copy_from_slice(&bytes[from..from + n]);
                    return Ok(n);
                }
            }
            let behind = cur.window.front().is_some_and(|(o, off, _)| want < (*o, *off));
            if behind {
                *slot = Some(self.start(place.archive));
                self.restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                continue;
            }
            if let Some((o, _, _)) = cur.window.back() {
                // Not in the window, not behind it, and the stream is already past this member: the member
                // has no bytes there.
                if *o > place.ordinal {
                    return Ok(0);
                }
            }
            if cur.done {
                return Ok(0);
            }
            match cur.rx.recv() {
                Ok(Ok((o, off, bytes))) => {
                    cur.window_bytes += bytes.len();
                    cur.window.push_back((o, off, Arc::new(bytes)));
                    while cur.window_bytes > self.window && cur.window.len() > 1 {
                        if let Some((_, _, b)) = cur.window.pop_front() {
                            cur.window_bytes -= b.len();
                            if let Ok(v) = Arc::try_unwrap(b) {
                                let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
                                if pool.len() < POOL_BUFFERS {
                                    pool.push(v);
                                }
                            }
                        }
                    }
                }
                Ok(Err(e)) => {
                    *slot = None;
                    return Err(e);
                }
                Err(_) => cur.done = true,
            }
        }
    }
}

impl FileSource for TarSource {
    fn members(&self) -> &[Member] {
        &self.members
    }

    fn index_of(&self, path: &str) -> Option<usize> {
        self.index.get(path).copied()
    }

    fn read_at(&self, index: usize, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let size = self.members[index].size;
        if offset >= size || buf.is_empty() {
            return Ok(0);
        }
        let len = buf.len().min((size - offset) as usize);
        let buf = &mut buf[..len];
        if let Some(bytes) = self.kept.get(&index) {
            let from = offset as usize;
            let n = len.min(bytes.len().saturating_sub(from));
            buf[..n].copy_from_slice(&bytes[from..from + n]);
            return Ok(n);
        }
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner()).get(&index).cloned();
        if let Some(spill) = held {
            return spill.read_at(buf, offset);
        }
        let place = &self.places[index];
        match (place.data_offset, &self.handles[place.archive]) {
            (Some(base), Some(f)) => f.read_at(buf, base + offset),
            _ => self.read_stream(index, offset, buf),
        }
    }

    fn sequential(&self) -> bool {
        self.archives.iter().any(|a| a.compression != Compression::None)
    }

    fn describe(&self, index: usize) -> String {
        let a = &self.archives[self.places[index].archive];
        let name = a.path.file_name().map_or_else(|| a.path.display().to_string(), |n| n.to_string_lossy().into());
        let member = self.members[index].path.strip_prefix(a.prefix.as_str()).unwrap_or(&self.members[index].path);
        format!("member {member} of {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A tar with a small kept file and a relation file big enough to need several cursor chunks, in every
    /// compression; reads in any order return the right bytes.
    #[test]
    fn every_compression_reads_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("pgs-archive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big: Vec<u8> = (0..(3 * CHUNK + 777) as u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
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
            add("base/5/16384", &big);
            add("base/5/16385", b"tail");
            b.finish().unwrap();
        }
        let variants: Vec<(&str, Vec<u8>)> = vec![
            ("base.tar", tar_bytes.clone()),
            ("base.tar.gz", {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&tar_bytes).unwrap();
                e.finish().unwrap()
            }),
            ("base.tar.zst", zstd::encode_all(&tar_bytes[..], 1).unwrap()),
            ("base.tar.lz4", {
                let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
                e.write_all(&tar_bytes).unwrap();
                e.finish().unwrap()
            }),
        ];
        for (name, bytes) in variants {
            let path = dir.join(name);
            std::fs::write(&path, &bytes).unwrap();
            let compression = Compression::sniff(&path).unwrap();
            assert_eq!(compression == Compression::None, name == "base.tar", "{name}");
            let src =
                TarSource::open(vec![ArchiveFile { path, compression, prefix: String::new() }], |_, _| Ok(())).unwrap();
            let i = src.index_of("base/5/16384").unwrap();
            assert_eq!(src.members()[i].size, big.len() as u64);
            let mut buf = vec![0u8; 8192];
            // Forward, then backward past the start of the window's first chunk (a restart), then the tail file.
            for off in [0u64, 2 * CHUNK as u64 + 5, 8192, (3 * CHUNK) as u64] {
                let n = src.read_at(i, off, &mut buf).unwrap();
                let want = &big[off as usize..(off as usize + 8192).min(big.len())];
                assert_eq!(&buf[..n], want, "{name} at {off}");
            }
            // With a one-chunk window: backward reads restart the stream (compressed only), and still read right.
            let archive = src.archives()[0].clone();
            let src = TarSource::open(vec![archive], |_, _| Ok(())).unwrap().with_window(CHUNK);
            for off in [(3 * CHUNK) as u64, 0, CHUNK as u64 + 3, 10] {
                let n = src.read_at(i, off, &mut buf).unwrap();
                let want = &big[off as usize..(off as usize + 8192).min(big.len())];
                assert_eq!(&buf[..n], want, "{name} at {off}");
            }
            let restarts = src.restarts.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(restarts, if compression == Compression::None { 0 } else { 2 }, "{name}");
            // Past the end of a member: nothing, without a restart.
            assert_eq!(src.read_at(i, big.len() as u64, &mut buf).unwrap(), 0);
            // Held in memory: read at random without further passes.
            src.hold(i).unwrap();
            let before = src.restarts.load(std::sync::atomic::Ordering::Relaxed);
            for off in [(3 * CHUNK) as u64, 0, (2 * CHUNK) as u64] {
                let n = src.read_at(i, off, &mut buf).unwrap();
                assert_eq!(&buf[..n], &big[off as usize..(off as usize + n)], "{name} held at {off}");
            }
            assert!(src.restarts.load(std::sync::atomic::Ordering::Relaxed) <= before + 1);
            src.release(i);
            let t = src.index_of("base/5/16385").unwrap();
            assert_eq!(src.read_at(t, 0, &mut buf).unwrap(), 4);
            assert_eq!(&buf[..4], b"tail");
            let v = src.index_of("PG_VERSION").unwrap();
            assert_eq!(src.read_at(v, 0, &mut buf).unwrap(), 3);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A cut anywhere in an uncompressed tar is an error naming the member: inside a member's data, inside a
    /// header, or exactly at a header (where the tar reader alone sees a clean end).
    #[test]
    fn a_cut_tar_is_refused() {
        let dir = std::env::temp_dir().join(format!("pgs-archive-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut tar_bytes = Vec::new();
        {
            let mut b = tar::Builder::new(&mut tar_bytes);
            for (path, len) in [("PG_VERSION", 3usize), ("base/5/16384", 8192)] {
                let mut h = tar::Header::new_ustar();
                h.set_size(len as u64);
                h.set_mode(0o600);
                h.set_cksum();
                b.append_data(&mut h, path, &vec![1u8; len][..]).unwrap();
            }
            b.finish().unwrap();
        }
        let path = dir.join("base.tar");
        let open = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let a = ArchiveFile { path: path.clone(), compression: Compression::None, prefix: String::new() };
            TarSource::open(vec![a], |_, _| Ok(())).err().map(|e| e.to_string())
        };
        assert_eq!(open(&tar_bytes), None);
        let second = 1024; // PG_VERSION's header and data block
        let cases = [(second + 512 + 100, "member base/5/16384 claims 8 KiB"), (second + 100, "ends inside a header")];
        for (cut, want) in cases.into_iter().chain([(second, "without its end-of-archive block")]) {
            let e = open(&tar_bytes[..cut]).unwrap_or_default();
            assert!(e.contains(want) && e.contains("member ") && e.contains("\nhint: "), "{cut}: {e}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
