//! `backup_manifest` read as src/common/parse_manifest.c reads it: the same states, the same checks in the same
//! order, the same messages ("could not parse backup manifest: …" for what `json_manifest_parse_failure` reports,
//! the bare text for what it hands to `error_cb`), and the manifest's own SHA-256 (`verify_manifest_checksum`)
//! computed while it streams by.

use std::io::Read;

use sha2::{Digest, Sha256};

use super::json::{self, Event, Stop};
use super::Algorithm;

/// What the manifest says, handed over as it is read (`JsonManifestParseContext`'s callbacks).
pub trait Sink {
    fn version(&mut self, version: u32);
    fn system_identifier(&mut self, id: u64);
    /// One file; `Err` stops the reading with that message (a duplicate path).
    fn file(&mut self, path: &[u8], size: u64, algorithm: Algorithm, checksum: &[u8]) -> Result<(), String>;
    fn wal_range(&mut self, tli: u32, start: u64, end: u64) -> Result<(), String>;
}

/// Why the manifest cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Unreadable, not a manifest, or contradicting itself: pg_verifybackup's message.
    Invalid(String),
    /// It parses, but its SHA-256 is not that of its text.
    Checksum,
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::Invalid(m) => m.clone(),
            Refusal::Checksum => "manifest checksum mismatch".into(),
        }
    }
}

fn failure(msg: &str) -> String {
    format!("could not parse backup manifest: {msg}")
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    ToplevelStart,
    ToplevelEnd,
    ToplevelField,
    VersionValue,
    SystemIdentifierValue,
    FilesStart,
    FilesNext,
    ThisFileField,
    ThisFileValue,
    WalRangesStart,
    WalRangesNext,
    ThisWalRangeField,
    ThisWalRangeValue,
    ManifestChecksumValue,
    Eof,
}

#[derive(Clone, Copy)]
enum FileField {
    Path,
    EncodedPath,
    Size,
    LastModified,
    Algorithm,
    Checksum,
}

#[derive(Clone, Copy)]
enum WalField {
    Timeline,
    StartLsn,
    EndLsn,
}

struct Machine<'s, S: Sink> {
    sink: &'s mut S,
    state: State,
    saw_version: bool,
    file_field: FileField,
    wal_field: WalField,
    path: Option<Vec<u8>>,
    encoded_path: Option<Vec<u8>>,
    size: Option<Vec<u8>>,
    algorithm: Option<Vec<u8>>,
    checksum: Option<Vec<u8>>,
    timeline: Option<Vec<u8>>,
    start_lsn: Option<Vec<u8>>,
    end_lsn: Option<Vec<u8>>,
    manifest_checksum: Option<Vec<u8>>,
}

impl<S: Sink> Machine<'_, S> {
    fn event(&mut self, e: Event<'_>) -> Result<(), String> {
        match e {
            Event::ObjectStart => self.object_start(),
            Event::ObjectEnd => self.object_end(),
            Event::ArrayStart => {
                self.state = match self.state {
                    State::FilesStart => State::FilesNext,
                    State::WalRangesStart => State::WalRangesNext,
                    _ => return Err(failure("unexpected array start")),
                };
                Ok(())
            }
            Event::ArrayEnd => {
                self.state = match self.state {
                    State::FilesNext | State::WalRangesNext => State::ToplevelField,
                    _ => return Err(failure("unexpected array end")),
                };
                Ok(())
            }
            Event::Field(name) => self.field(name),
            Event::Scalar(token) => self.scalar(token),
        }
    }

    fn object_start(&mut self) -> Result<(), String> {
        match self.state {
            State::ToplevelStart => self.state = State::ToplevelField,
            State::FilesNext => {
                self.state = State::ThisFileField;
                (self.path, self.encoded_path, self.size, self.algorithm, self.checksum) =
                    (None, None, None, None, None);
            }
            State::WalRangesNext => {
                self.state = State::ThisWalRangeField;
                (self.timeline, self.start_lsn, self.end_lsn) = (None, None, None);
            }
            _ => return Err(failure("unexpected object start")),
        }
        Ok(())
    }

    fn object_end(&mut self) -> Result<(), String> {
        match self.state {
            State::ToplevelEnd => self.state = State::Eof,
            State::ThisFileField => {
                self.finalize_file()?;
                self.state = State::FilesNext;
            }
            State::ThisWalRangeField => {
                self.finalize_wal_range()?;
                self.state = State::WalRangesNext;
            }
            _ => return Err(failure("unexpected object end")),
        }
        Ok(())
    }

    fn field(&mut self, name: &[u8]) -> Result<(), String> {
        match self.state {
            State::ToplevelField if !self.saw_version => {
                // The version indicator is always the first field.
                if name != b"PostgreSQL-Backup-Manifest-Version" {
                    return Err(failure("expected version indicator"));
                }
                self.state = State::VersionValue;
                self.saw_version = true;
            }
            State::ToplevelField => {
                self.state = match name {
                    b"System-Identifier" => State::SystemIdentifierValue,
                    b"Files" => State::FilesStart,
                    b"WAL-Ranges" => State::WalRangesStart,
                    b"Manifest-Checksum" => State::ManifestChecksumValue,
                    _ => return Err(failure("unrecognized top-level field")),
                }
            }
            State::ThisFileField => {
                self.file_field = match name {
                    b"Path" => FileField::Path,
                    b"Encoded-Path" => FileField::EncodedPath,
                    b"Size" => FileField::Size,
                    b"Last-Modified" => FileField::LastModified,
                    b"Checksum-Algorithm" => FileField::Algorithm,
                    b"Checksum" => FileField::Checksum,
                    _ => return Err(failure("unexpected file field")),
                };
                self.state = State::ThisFileValue;
            }
            State::ThisWalRangeField => {
                self.wal_field = match name {
                    b"Timeline" => WalField::Timeline,
                    b"Start-LSN" => WalField::StartLsn,
                    b"End-LSN" => WalField::EndLsn,
                    _ => return Err(failure("unexpected WAL range field")),
                };
                self.state = State::ThisWalRangeValue;
            }
            _ => return Err(failure("unexpected object field")),
        }
        Ok(())
    }

    fn scalar(&mut self, token: &[u8]) -> Result<(), String> {
        let value = Some(token.to_vec());
        match self.state {
            State::VersionValue => {
                // strtoi64 then an int, as json_manifest_finalize_version
                let v = c_strtou64(token).ok_or_else(|| failure("manifest version not an integer"))?;
                let v = v as i32;
                if v != 1 && v != 2 {
                    return Err(failure("unexpected manifest version"));
                }
                self.sink.version(v as u32);
                self.state = State::ToplevelField;
            }
            State::SystemIdentifierValue => {
                let id = c_strtou64(token).ok_or_else(|| failure("system identifier in manifest not an integer"))?;
                self.sink.system_identifier(id);
                self.state = State::ToplevelField;
            }
            State::ThisFileValue => {
                match self.file_field {
                    FileField::Path => self.path = value,
                    FileField::EncodedPath => self.encoded_path = value,
                    FileField::Size => self.size = value,
                    FileField::LastModified => {}
                    FileField::Algorithm => self.algorithm = value,
                    FileField::Checksum => self.checksum = value,
                }
                self.state = State::ThisFileField;
            }
            State::ThisWalRangeValue => {
                match self.wal_field {
                    WalField::Timeline => self.timeline = value,
                    WalField::StartLsn => self.start_lsn = value,
                    WalField::EndLsn => self.end_lsn = value,
                }
                self.state = State::ThisWalRangeField;
            }
            State::ManifestChecksumValue => {
                self.state = State::ToplevelEnd;
                self.manifest_checksum = value;
            }
            _ => return Err(failure("unexpected scalar")),
        }
        Ok(())
    }

    /// `json_manifest_finalize_file`: its checks in its order.
    fn finalize_file(&mut self) -> Result<(), String> {
        if self.path.is_none() && self.encoded_path.is_none() {
            return Err(failure("missing path name"));
        }
        if self.path.is_some() && self.encoded_path.is_some() {
            return Err(failure("both path name and encoded path name"));
        }
        let Some(size) = self.size.take() else { return Err(failure("missing size")) };
        if self.algorithm.is_none() && self.checksum.is_some() {
            return Err(failure("checksum without algorithm"));
        }
        let path = match (self.path.take(), self.encoded_path.take()) {
            (Some(p), _) => p,
            (None, Some(e)) => decode_hex(&e).ok_or_else(|| failure("could not decode file name"))?,
            (None, None) => Vec::new(),
        };
        let size = c_strtou64(&size).ok_or_else(|| failure("file size is not an integer"))?;
        let algorithm = match self.algorithm.take() {
            None => Algorithm::None,
            Some(a) => Algorithm::parse(&String::from_utf8_lossy(&a))
                .ok_or_else(|| format!("unrecognized checksum algorithm: \"{}\"", String::from_utf8_lossy(&a)))?,
        };
        let checksum = match self.checksum.take() {
            None => Vec::new(),
            Some(c) => decode_hex(&c).ok_or_else(|| {
                format!(
                    "invalid checksum for file \"{}\": \"{}\"",
                    String::from_utf8_lossy(&path),
                    String::from_utf8_lossy(&c)
                )
            })?,
        };
        self.sink.file(&path, size, algorithm, &checksum)
    }

    fn finalize_wal_range(&mut self) -> Result<(), String> {
        let Some(tli) = self.timeline.take() else { return Err(failure("missing timeline")) };
        let Some(start) = self.start_lsn.take() else { return Err(failure("missing start LSN")) };
        let Some(end) = self.end_lsn.take() else { return Err(failure("missing end LSN")) };
        // strtoul into a TimeLineID, as parse_manifest.c
        let tli = c_strtou64(&tli).ok_or_else(|| failure("timeline is not an integer"))? as u32;
        let start = parse_lsn(&start).ok_or_else(|| failure("could not parse start LSN"))?;
        let end = parse_lsn(&end).ok_or_else(|| failure("could not parse end LSN"))?;
        self.sink.wal_range(tli, start, end)
    }
}

/// C's `strtou64(s, &ep, 10)` with `*ep == '\0'` required: leading white space and a sign allowed, an empty string
/// reads as 0 (no digits leave `ep` at the start), a negative value wraps, an overflow saturates.
pub fn c_strtou64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return Some(0);
    }
    let mut i = s.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')).count();
    let negative = s.get(i) == Some(&b'-');
    i += usize::from(matches!(s.get(i), Some(b'+' | b'-')));
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits.iter().fold(0u64, |v, d| v.saturating_mul(10).saturating_add(u64::from(d - b'0')));
    Some(if negative { v.wrapping_neg() } else { v })
}

/// `parse_xlogrecptr`: sscanf's `%X/%X` (text after the second number is ignored, as sscanf does).
fn parse_lsn(s: &[u8]) -> Option<u64> {
    fn hex(s: &[u8]) -> Option<(u32, &[u8])> {
        let s = &s[s.iter().take_while(|c| c.is_ascii_whitespace()).count()..];
        let s = s.strip_prefix(b"+").unwrap_or(s);
        let s = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")).unwrap_or(s);
        let n = s.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let v = s[..n].iter().try_fold(0u32, |v, &d| Some(v.wrapping_shl(4) | char::from(d).to_digit(16)?))?;
        (n > 0).then_some((v, &s[n..]))
    }
    let (hi, rest) = hex(s)?;
    let (lo, _) = hex(rest.strip_prefix(b"/")?)?;
    Some((u64::from(hi) << 32) | u64::from(lo))
}

/// `hexdecode_string` over a whole even-length string.
pub fn decode_hex(s: &[u8]) -> Option<Vec<u8>> {
    if s.len() % 2 == 1 {
        return None;
    }
    s.chunks(2).map(|p| Some((char::from(p[0]).to_digit(16)? * 16 + char::from(p[1]).to_digit(16)?) as u8)).collect()
}

/// The SHA-256 of the text up to and including its next-to-last newline, computed as the text streams by: the
/// hash state is kept at each of the last two newlines.
struct LineHash {
    running: Sha256,
    at_last: Option<Sha256>,
    at_penultimate: Option<Sha256>,
    newlines: u64,
    last_byte: Option<u8>,
}

impl LineHash {
    fn feed(&mut self, mut chunk: &[u8]) {
        if let Some(&b) = chunk.last() {
            self.last_byte = Some(b);
        }
        while let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            self.running.update(&chunk[..=i]);
            self.at_penultimate = self.at_last.replace(self.running.clone());
            self.newlines += 1;
            chunk = &chunk[i + 1..];
        }
        self.running.update(chunk);
    }

    /// `verify_manifest_checksum`'s checks, in its order.
    fn verify(self, claimed: Option<&[u8]>) -> Result<(), Refusal> {
        if self.newlines < 2 {
            return Err(Refusal::Invalid(failure("expected at least 2 lines")));
        }
        if self.last_byte != Some(b'\n') {
            return Err(Refusal::Invalid(failure("last line not newline-terminated")));
        }
        let Some(claimed) = claimed else { return Err(Refusal::Invalid("manifest has no checksum".into())) };
        let want = decode_hex(claimed).filter(|w| w.len() == 32).ok_or_else(|| {
            Refusal::Invalid(format!("invalid manifest checksum: \"{}\"", String::from_utf8_lossy(claimed)))
        })?;
        let got = self.at_penultimate.map(|h| h.finalize().to_vec()).unwrap_or_default();
        if got != want {
            return Err(Refusal::Checksum);
        }
        Ok(())
    }
}

/// Read the whole manifest, handing what it says to `sink`; `Ok` only when it parses and its checksum matches.
pub fn parse(src: impl Read, sink: &mut impl Sink) -> Result<(), Refusal> {
    let mut hash =
        LineHash { running: Sha256::new(), at_last: None, at_penultimate: None, newlines: 0, last_byte: None };
    let mut m = Machine {
        sink,
        state: State::ToplevelStart,
        saw_version: false,
        file_field: FileField::Path,
        wal_field: WalField::Timeline,
        path: None,
        encoded_path: None,
        size: None,
        algorithm: None,
        checksum: None,
        timeline: None,
        start_lsn: None,
        end_lsn: None,
        manifest_checksum: None,
    };
    match json::parse(src, |chunk| hash.feed(chunk), |e| m.event(e)) {
        Ok(()) => {}
        Err(Stop::Io(e)) => return Err(Refusal::Invalid(format!("could not read file \"backup_manifest\": {e}"))),
        Err(Stop::Syntax(s)) => return Err(Refusal::Invalid(failure(&s))),
        Err(Stop::Semantic(s)) => return Err(Refusal::Invalid(s)),
    }
    if m.state != State::Eof {
        return Err(Refusal::Invalid(failure("manifest ended unexpectedly")));
    }
    let claimed = m.manifest_checksum.take();
    hash.verify(claimed.as_deref())
}

#[cfg(test)]
mod tests {
    use super::super::{Census, Table};
    use super::*;

    fn with_checksum(body: &str) -> String {
        let mut h = Sha256::new();
        h.update(body.as_bytes());
        format!("{body}\"Manifest-Checksum\": \"{}\"}}\n", super::super::hex(&h.finalize()))
    }

    fn refusal(text: &str) -> String {
        parse(text.as_bytes(), &mut Census::default()).unwrap_err().message()
    }

    /// src/bin/pg_verifybackup/t/005_bad_manifest.pl, message for message.
    #[test]
    fn bad_manifests_are_refused_as_pg_verifybackup_refuses_them() {
        let v1 = r#"{"PostgreSQL-Backup-Manifest-Version": 1, "#;
        let cases: &[(&str, String)] = &[
            ("The input string ended unexpectedly.", "{\n".into()),
            ("unexpected object end", "{}\n".into()),
            ("unexpected array start", "[]\n".into()),
            ("expected version indicator", "{\"not-expected\": 1}\n".into()),
            ("manifest version not an integer", "{\"PostgreSQL-Backup-Manifest-Version\": \"phooey\"}\n".into()),
            ("unexpected manifest version", "{\"PostgreSQL-Backup-Manifest-Version\": 9876599}\n".into()),
            ("unexpected scalar", format!("{v1}\"Files\": true}}\n")),
            ("unrecognized top-level field", format!("{v1}\"Oops\": 1}}\n")),
            ("unexpected object start", format!("{v1}\"Files\": {{}}}}\n")),
            ("missing path name", format!("{v1}\"Files\": [{{}}]}}\n")),
            (
                "both path name and encoded path name",
                format!("{v1}\"Files\": [{{\"Path\": \"x\", \"Encoded-Path\": \"1234\"}}]}}\n"),
            ),
            ("unexpected file field", format!("{v1}\"Files\": [{{\"Oops\": 1}}]}}\n")),
            ("missing size", format!("{v1}\"Files\": [{{\"Path\": \"x\"}}]}}\n")),
            ("file size is not an integer", format!("{v1}\"Files\": [{{\"Path\": \"x\", \"Size\": \"Oops\"}}]}}\n")),
            ("could not decode file name", format!("{v1}\"Files\": [{{\"Encoded-Path\": \"123\", \"Size\": 0}}]}}\n")),
            (
                "checksum without algorithm",
                format!("{v1}\"Files\": [{{\"Path\": \"x\", \"Size\": 100, \"Checksum\": \"Oops\"}}]}}\n"),
            ),
            ("missing start LSN", format!("{v1}\"WAL-Ranges\": [{{\"Timeline\": 1}}]}}\n")),
            ("missing end LSN", format!("{v1}\"WAL-Ranges\": [{{\"Timeline\": 1, \"Start-LSN\": \"0/0\"}}]}}\n")),
            ("unexpected WAL range field", format!("{v1}\"WAL-Ranges\": [{{\"Oops\": 1}}]}}\n")),
            ("missing timeline", format!("{v1}\"WAL-Ranges\": [{{}}]}}\n")),
            (
                "unexpected object end",
                format!("{v1}\"WAL-Ranges\": [{{\"Timeline\": 1, \"Start-LSN\": \"0/0\", \"End-LSN\": \"0/0\"}}]}}\n"),
            ),
            (
                "timeline is not an integer",
                format!(
                    "{v1}\"WAL-Ranges\": [{{\"Timeline\": true, \"Start-LSN\": \"0/0\", \"End-LSN\": \"0/0\"}}]}}\n"
                ),
            ),
            (
                "could not parse start LSN",
                format!("{v1}\"WAL-Ranges\": [{{\"Timeline\": 1, \"Start-LSN\": \"oops\", \"End-LSN\": \"0/0\"}}]}}\n"),
            ),
            (
                "could not parse end LSN",
                format!("{v1}\"WAL-Ranges\": [{{\"Timeline\": 1, \"Start-LSN\": \"0/0\", \"End-LSN\": \"oops\"}}]}}\n"),
            ),
            ("expected at least 2 lines", format!("{v1}\"Files\": [], \"Manifest-Checksum\": null}}\n")),
            ("last line not newline-terminated", format!("{v1}\n \"Files\": [],\n \"Manifest-Checksum\": null}}")),
        ];
        for (want, text) in cases {
            assert_eq!(refusal(text), format!("could not parse backup manifest: {want}"), "{text}");
        }
        let fatal: &[(&str, String)] = &[
            ("unrecognized checksum algorithm: \"Oops\"", format!("{v1}\"Files\": [{{\"Path\": \"x\", \"Size\": 100, \"Checksum-Algorithm\": \"Oops\", \"Checksum\": \"00\"}}]}}\n")),
            ("invalid checksum for file \"x\": \"0\"", format!("{v1}\"Files\": [{{\"Path\": \"x\", \"Size\": 100, \"Checksum-Algorithm\": \"CRC32C\", \"Checksum\": \"0\"}}]}}\n")),
            ("invalid manifest checksum: \"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01234567890-\"", format!("{v1}\"Files\": [],\n \"Manifest-Checksum\": \"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01234567890-\"}}\n")),
        ];
        for (want, text) in fatal {
            assert_eq!(refusal(text), *want, "{text}");
        }
        // a duplicate path: at the second one (before the missing checksum), as pg_verifybackup; and by the table
        let files = "\"Files\": [\n{\"Path\": \"x\", \"Size\": 0},\n{\"Path\": \"x\", \"Size\": 0}\n]";
        assert_eq!(refusal(&format!("{v1}{files}}}\n")), "duplicate path name in backup manifest: \"x\"");
        let mut t2 = Table::default();
        let text = with_checksum(&format!("{v1}{files},\n"));
        // the census refuses it; the table alone (not the census) finds it when sealed
        assert!(parse(text.as_bytes(), &mut t2).is_ok());
        assert_eq!(t2.seal().unwrap_err(), "duplicate path name in backup manifest: \"x\"");
    }

    #[test]
    fn the_checksum_covers_all_but_the_last_line() {
        let text = with_checksum("{\"PostgreSQL-Backup-Manifest-Version\": 2, \"System-Identifier\": 7,\n\"Files\": [\n{\"Encoded-Path\": \"6162\", \"Size\": 3, \"Checksum-Algorithm\": \"crc32c\", \"Checksum\": \"839206E3\"}\n],\n\"WAL-Ranges\": [\n{\"Timeline\": 1, \"Start-LSN\": \"0/2000028\", \"End-LSN\": \"0/2000100\"}\n],\n");
        let mut c = Census::default();
        parse(text.as_bytes(), &mut c).unwrap();
        assert_eq!((c.version, c.system_identifier, c.files), (2, Some(7), 1));
        assert_eq!(c.algorithms, [Algorithm::Crc32c]);
        assert_eq!(c.wal_ranges[0].end_lsn, 0x2000100);
        let mut t = Table::default();
        parse(text.as_bytes(), &mut t).unwrap();
        t.seal().unwrap();
        let e = *t.entry(t.find("ab").unwrap());
        assert_eq!((e.size, t.checksum(&e)), (3, &[0x83, 0x92, 0x06, 0xe3][..]));
        // a newline appended (003_corruption.pl bad_manifest), one byte changed: refused on the checksum
        assert_eq!(parse(format!("{text}\n").as_bytes(), &mut Census::default()), Err(Refusal::Checksum));
        let changed = text.replacen("\"Size\": 3", "\"Size\": 4", 1);
        assert_eq!(parse(changed.as_bytes(), &mut Census::default()), Err(Refusal::Checksum));
    }

    #[test]
    fn numbers_read_as_c_reads_them() {
        assert_eq!(c_strtou64(b""), Some(0));
        assert_eq!(c_strtou64(b" 12"), Some(12));
        assert_eq!(c_strtou64(b"12x"), None);
        assert_eq!(c_strtou64(b"-1"), Some(u64::MAX));
        assert_eq!(parse_lsn(b"1/2A"), Some(0x1_0000_002A));
        assert_eq!(parse_lsn(b"0/0oops"), Some(0));
        assert_eq!(parse_lsn(b"oops"), None);
    }
}
