//! What an archive is allowed to make us spend. A tar header states a member's size; a hostile or damaged archive
//! can state anything (1 TiB in a 3 MB file) and a compressed stream can expand without end. So:
//! - a member of an uncompressed tar must fit in what is left of the file, and the archive must end with the
//!   end-of-archive block (a cut at a header boundary is otherwise invisible);
//! - a member of a compressed tar must deliver exactly its stated size ([`Exact`]), and after the end-of-archive
//!   block only a little zero padding may follow ([`check_trailer`]);
//! - a file read whole is at most [`WHOLE_READ_MAX`] bytes, checked on the header before anything is allocated.
//!
//! Errors name the member; the caller adds the archive's path. Their text ends with a `hint:` line.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Largest file read into memory whole (pg_control, PG_VERSION, maps, SLRU segments, backup_label, …). The largest
/// of these PostgreSQL writes is an SLRU segment: 32 pages (SLRU_PAGES_PER_SEGMENT, slru.h) of at most 32 kB.
pub const WHOLE_READ_MAX: u64 = 64 << 20;
/// Bytes of a compressed archive's small files kept in memory at open, all together; later ones are read through
/// the stream when asked for.
pub const KEPT_TOTAL: u64 = 128 << 20;
/// Zero bytes accepted after the end-of-archive block: pg_basebackup writes two zero blocks (astreamer_tar.c),
/// GNU tar pads to its 10 kB record.
const TRAILER_SLACK: u64 = 1 << 20;
/// Size of a tar block (pgtar.h, TAR_BLOCK_SIZE).
pub const BLOCK: u64 = 512;

const HINT: &str = "hint: the archive is damaged or is not what pg_basebackup wrote: take the backup again, or \
                    extract what tar can read and scan that directory";

/// `n` bytes for people: 1 TiB, 21 GiB, 64 MiB, 900 bytes.
pub fn human(n: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if n >= unit {
            let whole = n / unit;
            let tenth = (n % unit) * 10 / unit;
            return if tenth == 0 { format!("{whole} {name}") } else { format!("{whole}.{tenth} {name}") };
        }
    }
    format!("{n} bytes")
}

/// An archive problem, as an error whose text says what and ends with the hint.
pub fn damaged(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}\n{HINT}"))
}

/// The error of the tar reader, told with the member it follows.
pub fn tar_error(e: io::Error, last: &str) -> io::Error {
    let after =
        if last.is_empty() { "at the start of the archive".to_string() } else { format!("after member {last}") };
    if let Some(ours) = placed(&e, &after) {
        return ours;
    }
    let what = match e.to_string().as_str() {
        "failed to read entire block" => format!("the archive ends inside a header {after}: it is truncated"),
        "unexpected EOF during skip" => format!("the archive ends inside member {last}: it is truncated"),
        other => format!("unreadable tar header {after} ({other})"),
    };
    damaged(what)
}

/// An error met while a member's data was read (the decompressor's, or a reader's), told with the member.
pub fn member_error(e: io::Error, member: &str) -> io::Error {
    placed(&e, &format!("in member {member}")).unwrap_or(e)
}

/// One of our errors (it has its hint) with `place` added, unless it names a member already; `None` for others.
fn placed(e: &io::Error, place: &str) -> Option<io::Error> {
    let text = e.to_string();
    let (what, _) = text.split_once("\nhint: ")?;
    Some(if what.contains("member") {
        io::Error::new(e.kind(), text.clone())
    } else {
        damaged(format!("{what}, {place}"))
    })
}

/// A member read whole that the header says is too big: refused before anything is read.
pub fn too_big(member: &str, size: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "member {member} claims {}, more than the {} a file read whole may be\n{HINT}",
            human(size),
            human(WHOLE_READ_MAX)
        ),
    )
}

/// Files the readers take whole, by name: their header size is checked at once, so a bomb in one is refused
/// before it is decompressed. (Other small files are also kept when they fit; large ones, like server logs in the
/// data directory, are legitimate and only streamed.)
pub fn read_whole(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let slru = ["pg_xact/", "pg_multixact/", "pg_subtrans/", "pg_commit_ts/", "pg_serial/"];
    matches!(name, "PG_VERSION" | "pg_filenode.map" | "backup_label" | "tablespace_map")
        || path == "global/pg_control"
        || slru.iter().any(|d| path.starts_with(d))
}

/// A member's data, exactly `size` bytes: a stream that ends before is an error naming the member.
pub struct Exact<'a> {
    inner: &'a mut dyn Read,
    left: u64,
    size: u64,
    member: &'a str,
}

impl<'a> Exact<'a> {
    pub fn new(inner: &'a mut dyn Read, size: u64, member: &'a str) -> Exact<'a> {
        Exact { inner, left: size, size, member }
    }
}

impl Read for Exact<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(damaged(format!(
                "the archive ends inside member {} ({} of the {} its header states): it is truncated, or the \
                 header lies",
                self.member,
                human(self.size - self.left),
                human(self.size)
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// A reader that counts what was taken from it, so the end of a tar stream can be told from a cut.
pub struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Counting<R> {
    pub fn new(inner: R) -> (Counting<R>, Arc<AtomicU64>) {
        let count = Arc::new(AtomicU64::new(0));
        (Counting { inner, count: count.clone() }, count)
    }
}

impl<R: Read> Read for Counting<R> {
    /// Errors here are the decompressor's (or the disk's): said as such, so they are not taken for tar's.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::Interrupted => e,
            _ => damaged(format!("reading the archive failed ({e})")),
        })?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// End of a member's data rounded up to whole blocks: where the next header starts.
pub fn padded_end(data_offset: u64, size: u64) -> u64 {
    data_offset.saturating_add(size.div_ceil(BLOCK).saturating_mul(BLOCK))
}

/// The reader stopped at `consumed` bytes; the last member's data ended at `end`. The tar reader stops at a zero
/// block or at the end of the stream: only the first is a whole archive.
pub fn check_end_marker(consumed: u64, end: u64, last: &str) -> io::Result<()> {
    if consumed < end.saturating_add(BLOCK) {
        let after = if last.is_empty() { String::new() } else { format!(" after member {last}") };
        return Err(damaged(format!("the archive ends{after} without its end-of-archive block: it is truncated")));
    }
    Ok(())
}

/// What follows the end-of-archive block of a decompressed stream: at most [`TRAILER_SLACK`] zero bytes. More is
/// data the headers do not account for (a member longer than its header says, a bomb); reading on would decompress
/// it all. Reading to the end also makes the decompressor check its own trailer (a gzip CRC, a zstd frame end).
pub fn check_trailer(rest: &mut dyn Read, last: &str) -> io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    let mut seen = 0u64;
    loop {
        let n = match rest.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(tar_error(e, last)),
        };
        if n == 0 {
            return Ok(());
        }
        seen += n as u64;
        if seen > TRAILER_SLACK || buf[..n].iter().any(|b| *b != 0) {
            return Err(damaged(format!(
                "decompressed data goes on past the end of the archive (after member {last}): a member is longer \
                 than its header states"
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_for_people() {
        assert_eq!(human(1 << 40), "1 TiB");
        assert_eq!(human(22548578304), "21 GiB");
        assert_eq!(human(3 << 19), "1.5 MiB");
        assert_eq!(human(900), "900 bytes");
    }

    #[test]
    fn exact_refuses_a_short_member() {
        let data = [1u8; 10];
        let mut src: &[u8] = &data;
        let mut r = Exact::new(&mut src, 20, "base/5/16384");
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).unwrap_err().to_string();
        assert!(e.starts_with("the archive ends inside member base/5/16384 (10 bytes of the 20 bytes"), "{e}");
        assert!(e.contains("\nhint: "), "{e}");
    }

    #[test]
    fn trailer_takes_padding_and_refuses_more() {
        check_trailer(&mut &[0u8; 9216][..], "x").unwrap();
        assert!(check_trailer(&mut &[0u8, 0, 7][..], "x").is_err());
        assert!(check_trailer(&mut io::repeat(0).take(TRAILER_SLACK + 1), "x").is_err());
    }

    #[test]
    fn names_read_whole() {
        assert!(read_whole("global/pg_control"));
        assert!(read_whole("base/5/PG_VERSION"));
        assert!(read_whole("pg_xact/0000"));
        assert!(!read_whole("log/postgresql.log"));
        assert!(!read_whole("base/5/16384"));
    }
}
