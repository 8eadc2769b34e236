//! A read-only memory map of a range of an ordinary file: a stopped cluster's or a base backup's pages read where
//! they lie in the page cache instead of copied out of it (the copy was a quarter of a health pass's CPU time), and
//! only the cache lines the counting looks at touched.
//!
//! Never for a running server's files: a relation truncated while mapped (VACUUM, TRUNCATE) turns a read of the lost
//! part into SIGBUS, where a read returns fewer bytes. The caller opts in only for files nothing writes.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::backup::vfs::VFile;

/// `len` bytes of a file from an offset, mapped read-only and private; unmapped when dropped.
pub struct Mapped {
    /// The mapping, from the OS page at or before the offset asked for.
    base: *mut libc::c_void,
    map_len: usize,
    /// Where the range asked for starts in the mapping.
    skip: usize,
    len: usize,
}

// The mapping is read-only and owned by this value alone: reading it from another thread is as safe as reading a
// shared byte slice.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Up to `len` bytes of `path` from `offset` (fewer at the end of the file); `Ok(None)` when the range is empty
    /// or the path is no ordinary file (a member of a tar backup), for the caller to read instead.
    pub fn open(path: &Path, offset: u64, len: usize) -> io::Result<Option<Mapped>> {
        let VFile::Os(file) = VFile::open(path)? else { return Ok(None) };
        let size = file.metadata()?.len();
        // mapped only up to the end of the file: a page of the mapping past it would fault with SIGBUS
        let len = usize::try_from(size.saturating_sub(offset)).unwrap_or(usize::MAX).min(len);
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: sysconf has no preconditions.
        let os_page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        let start = offset - offset % os_page;
        let skip = (offset - start) as usize;
        let map_len = skip + len;
        let at = libc::off_t::try_from(start).map_err(|_| io::Error::other("offset past what mmap takes"))?;
        // SAFETY: a fresh read-only private mapping of an open file descriptor, at an address the kernel picks; it
        // aliases no Rust object, and the descriptor may be closed once it is made.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                at,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // read front to back: the kernel may read ahead (and drop behind) more than a random reader's
        // SAFETY: advice on the mapping just made; it changes no contents.
        unsafe { libc::madvise(base, map_len, libc::MADV_SEQUENTIAL) };
        Ok(Some(Mapped { base, map_len, skip, len }))
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the mapping holds `map_len` readable bytes from `base` for as long as `self` lives, and the file
        // covers all of them (clipped to its size when mapped; the caller maps no file a writer may shorten).
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.skip), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once; no slice of it outlives `self`.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_range_reads_as_the_file_and_stops_at_its_end() {
        let path = std::env::temp_dir().join(format!("pgs-mapped-{}", std::process::id()));
        let bytes: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let m = Mapped::open(&path, 8192, 4 * 8192).unwrap().unwrap();
        assert_eq!(&m[..], &bytes[8192..]);
        // an offset inside an OS page
        let m = Mapped::open(&path, 1000, 50).unwrap().unwrap();
        assert_eq!(&m[..], &bytes[1000..1050]);
        assert!(Mapped::open(&path, bytes.len() as u64, 8192).unwrap().is_none());
        std::fs::remove_file(&path).unwrap();
    }
}
