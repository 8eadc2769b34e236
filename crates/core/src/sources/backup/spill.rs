//! Members held for reading at random ([`super::archive::TarSource::hold`]: the TOAST table of the table being
//! unloaded) go to a temporary file, not to memory: a held member is as large as the archive says, and the archive
//! may be hostile. The file is unlinked at once, so it goes away with its handle, even after a crash.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A member's bytes in an unlinked temporary file (under `TMPDIR`).
pub struct Spill {
    file: File,
}

impl Spill {
    /// Fill a new spill file with `fill(offset, buf)`, which returns how many bytes it put in `buf` (0 at the end).
    pub fn write(mut fill: impl FnMut(u64, &mut [u8]) -> io::Result<usize>) -> io::Result<Spill> {
        let path = temp_path();
        let mut file = OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        std::fs::remove_file(&path)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut offset = 0u64;
        loop {
            let n = fill(offset, &mut buf)?;
            if n == 0 {
                break;
            }
            file.write_all(&buf[..n])?;
            offset += n as u64;
        }
        Ok(Spill { file })
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }
}

fn temp_path() -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("pgsurgeon-held-{}-{n}", std::process::id()))
}
