//! A read-only memory map of a range of an ordinary file: pages read where they lie in the page cache instead of
//! copied out of it (the copy was a quarter of a health pass's CPU time, a fifth of diagnose's), and only the cache
//! lines the checks look at touched.
//!
//! A file may be shortened while mapped: a running server's VACUUM or TRUNCATE, or a server started during an
//! offline scan. A read of the lost part then faults with SIGBUS, where `pread` comes back short. Every mapping is
//! registered in [`GUARDS`]; the process's SIGBUS handler (installed once, in front of any handler there before)
//! maps zeros over the rest of a registered mapping that faults and marks it, so the read goes on and the caller
//! learns from [`Mapped::shortened`] that the bytes are not the file's, and reads the range again.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::backup::vfs::VFile;

/// Mappings registered at once: more than any scan's workers hold (one each); beyond it a range is read instead.
const SLOTS: usize = 256;

/// One registered mapping: its address range, and whether a read past the file's end faulted in it.
struct Guard {
    /// 0: free; [`CLAIMED`]: being filled in; else the mapping's first byte.
    start: AtomicUsize,
    end: AtomicUsize,
    shortened: AtomicBool,
}

const CLAIMED: usize = 1;

static GUARDS: [Guard; SLOTS] =
    [const { Guard { start: AtomicUsize::new(0), end: AtomicUsize::new(0), shortened: AtomicBool::new(false) } };
        SLOTS];

/// The SIGBUS disposition before ours: put back for a fault outside every mapping, so the fault, repeated, gets it.
struct Previous(libc::sigaction);
// SAFETY: a plain C struct, written once before the handler is installed and only read after.
unsafe impl Sync for Previous {}
unsafe impl Send for Previous {}
static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Installs the handler once per process; false if it could not be (then nothing is mapped).
fn guard_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: sigaction with zeroed structs filled in here; the handler only reads atomics and calls mmap and
        // sigaction, as a fault handler may.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            // the disposition before ours is kept before ours can run: the handler may need it at once
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 || PREVIOUS.set(Previous(old)).is_err() {
                return false;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) == 0
        }
    })
}

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    for g in &GUARDS {
        let start = g.start.load(Ordering::Acquire);
        if start <= CLAIMED || addr < start {
            continue;
        }
        let end = g.end.load(Ordering::Acquire);
        if addr >= end {
            continue;
        }
        let page = addr - addr % os_page();
        // SAFETY: replaces, inside a mapping this process made and still holds, the pages from the faulting one
        // to its end (all past the file's new end) with zeros; no Rust object lives there but the bytes read.
        let zeros = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                end - page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            g.shortened.store(true, Ordering::Release);
            return;
        }
    }
    // not ours (or not mendable): the previous disposition, for the fault that repeats on return
    if let Some(prev) = PREVIOUS.get() {
        // SAFETY: the disposition read at installation.
        unsafe { libc::sigaction(libc::SIGBUS, &prev.0, std::ptr::null_mut()) };
    }
}

fn os_page() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let p = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
            PAGE.store(p, Ordering::Relaxed);
            p
        }
        p => p,
    }
}

/// A free guard slot, claimed; None when all are taken.
fn claim() -> Option<usize> {
    GUARDS.iter().position(|g| g.start.compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_ok())
}

/// `len` bytes of a file from an offset, mapped read-only and private; unmapped when dropped.
pub struct Mapped {
    /// The mapping, from the OS page at or before the offset asked for.
    base: *mut libc::c_void,
    map_len: usize,
    /// Where the range asked for starts in the mapping.
    skip: usize,
    len: usize,
    /// Its slot in [`GUARDS`].
    slot: usize,
}

// The mapping is read-only and owned by this value alone: reading it from another thread is as safe as reading a
// shared byte slice.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Up to `len` bytes of `path` from `offset` (fewer at the end of the file); `Ok(None)` when the range is empty,
    /// the path is no ordinary file (a member of a tar backup) or no guard is free, for the caller to read instead.
    pub fn open(path: &Path, offset: u64, len: usize) -> io::Result<Option<Mapped>> {
        let VFile::Os(file) = VFile::open(path)? else { return Ok(None) };
        let size = file.metadata()?.len();
        // mapped only up to the end of the file: a page of the mapping past it would fault with SIGBUS
        let len = usize::try_from(size.saturating_sub(offset)).unwrap_or(usize::MAX).min(len);
        if len == 0 || !guard_installed() {
            return Ok(None);
        }
        let Some(slot) = claim() else { return Ok(None) };
        let os_page = os_page() as u64;
        let start = offset - offset % os_page;
        let skip = (offset - start) as usize;
        let map_len = skip + len;
        let Ok(at) = libc::off_t::try_from(start) else {
            GUARDS[slot].start.store(0, Ordering::Release);
            return Err(io::Error::other("offset past what mmap takes"));
        };
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
            GUARDS[slot].start.store(0, Ordering::Release);
            return Err(io::Error::last_os_error());
        }
        let g = &GUARDS[slot];
        g.shortened.store(false, Ordering::Relaxed);
        g.end.store(base as usize + map_len, Ordering::Release);
        g.start.store(base as usize, Ordering::Release);
        // read front to back: the kernel may read ahead (and drop behind) more than a random reader's
        // SAFETY: advice on the mapping just made; it changes no contents.
        unsafe { libc::madvise(base, map_len, libc::MADV_SEQUENTIAL) };
        Ok(Some(Mapped { base, map_len, skip, len, slot }))
    }

    /// The file was shortened under the mapping and a read went past its new end: the bytes from there are zeros,
    /// not the file's.
    pub fn shortened(&self) -> bool {
        GUARDS[self.slot].shortened.load(Ordering::Acquire)
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the mapping holds `map_len` readable bytes from `base` for as long as `self` lives: the file's,
        // or zeros the SIGBUS handler mapped over the part a shortening of the file took away.
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.skip), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // no longer the handler's to mend, then gone
        GUARDS[self.slot].start.store(0, Ordering::Release);
        // SAFETY: the mapping made in `open` (parts of it perhaps zeros mapped over by the handler), unmapped once;
        // no slice of it outlives `self`.
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

    #[test]
    fn a_file_shortened_under_its_mapping_reads_as_zeros_past_its_new_end_and_says_so() {
        let path = std::env::temp_dir().join(format!("pgs-mapped-short-{}", std::process::id()));
        let bytes: Vec<u8> = (0..8 * 8192).map(|i| (i % 251) as u8 | 1).collect();
        std::fs::write(&path, &bytes).unwrap();
        let m = Mapped::open(&path, 8192, 6 * 8192).unwrap().unwrap();
        let kept = Mapped::open(&path, 0, 8192).unwrap().unwrap();
        assert!(!m.shortened());
        // as VACUUM truncates a relation: the file now ends inside the mapped range
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(3 * 8192).unwrap();
        // the pages dropped from the page cache fault; the handler puts zeros there and marks the mapping
        let seen: Vec<u8> = m.to_vec();
        assert_eq!(&seen[..2 * 8192], &bytes[8192..3 * 8192]);
        assert!(seen[2 * 8192..].iter().all(|&b| b == 0));
        assert!(m.shortened());
        // another mapping is not marked
        assert_eq!(&kept[..], &bytes[..8192]);
        assert!(!kept.shortened());
        drop(m);
        // the slot, freed, is clean for the next mapping
        let again = Mapped::open(&path, 0, 3 * 8192).unwrap().unwrap();
        assert!(!again.shortened());
        std::fs::remove_file(&path).unwrap();
    }
}
