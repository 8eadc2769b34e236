//! A streaming JSON reader for `backup_manifest`, accepting and refusing what PostgreSQL's own does
//! (src/common/jsonapi.c, `pg_parse_json_incremental`): it hands each object, array, field name and scalar to a
//! handler as it is read, so a manifest of any size is read in constant memory (but for one token). Error texts
//! are `json_errdetail`'s, so a message can be compared with pg_verifybackup's.

use std::io::{self, Read};

/// What the reader meets, in document order. A field name comes after its colon (as jsonapi calls
/// `object_field_start` only then); a scalar is the decoded string, or the text of a number or literal.
pub enum Event<'a> {
    ObjectStart,
    ObjectEnd,
    ArrayStart,
    ArrayEnd,
    Field(&'a [u8]),
    Scalar(&'a [u8]),
}

/// Why reading stopped.
pub enum Stop {
    Io(io::Error),
    /// The text is not JSON: `json_errdetail`'s words.
    Syntax(String),
    /// The handler refused an event (its words).
    Semantic(String),
}

/// `JSON_TD_MAX_STACK` (jsonapi.c): nesting deeper than this is refused.
const MAX_DEPTH: usize = 6400;
/// A longer string is refused rather than held: a manifest's longest is a path (MAXPGPATH, 1024 bytes) or a
/// SHA-512 checksum, so this bounds memory without refusing anything pg_basebackup writes.
const MAX_TOKEN: usize = 1 << 20;
const CHUNK: usize = 128 << 10;

#[derive(PartialEq)]
enum Tok {
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Colon,
    Comma,
    Str,
    /// A number or a literal (`true`, `false`, `null`): its text is in the token buffer.
    Word,
    Eof,
}

/// Where the parser is (jsonapi's predictive parser's non-terminals, flattened).
#[derive(Clone, Copy)]
enum Expect {
    Value,
    ArrayFirst,
    ArrayNext,
    ObjectFirst,
    ObjectKey,
    Colon,
    ObjectNext,
    End,
}

struct Lexer<R: Read, F: FnMut(&[u8])> {
    src: R,
    seen: F,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// The current string's decoded bytes, or a word's text.
    token: Vec<u8>,
}

fn syntax(s: String) -> Stop {
    Stop::Syntax(s)
}

fn more() -> Stop {
    syntax("The input string ended unexpectedly.".into())
}

impl<R: Read, F: FnMut(&[u8])> Lexer<R, F> {
    fn peek(&mut self) -> Result<Option<u8>, Stop> {
        if self.pos == self.len && !self.eof {
            self.len = loop {
                match self.src.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Stop::Io(e)),
                }
            };
            self.pos = 0;
            self.eof = self.len == 0;
            (self.seen)(&self.buf[..self.len]);
        }
        Ok((self.pos < self.len).then(|| self.buf[self.pos]))
    }

    fn bump(&mut self) -> Result<Option<u8>, Stop> {
        let c = self.peek()?;
        self.pos += usize::from(c.is_some());
        Ok(c)
    }

    fn push(&mut self, b: u8) -> Result<(), Stop> {
        if self.token.len() >= MAX_TOKEN {
            return Err(syntax(format!("a token longer than {MAX_TOKEN} bytes")));
        }
        self.token.push(b);
        Ok(())
    }

    fn next(&mut self) -> Result<Tok, Stop> {
        while let Some(c) = self.peek()? {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
        self.token.clear();
        let Some(c) = self.bump()? else { return Ok(Tok::Eof) };
        Ok(match c {
            b'{' => Tok::LBrace,
            b'}' => Tok::RBrace,
            b'[' => Tok::LBracket,
            b']' => Tok::RBracket,
            b':' => Tok::Colon,
            b',' => Tok::Comma,
            b'"' => {
                self.string()?;
                Tok::Str
            }
            _ => {
                self.word(c)?;
                Tok::Word
            }
        })
    }

    /// A number or literal: the run of word characters jsonapi reads as one token (`JSON_ALPHANUMERIC_CHAR`, plus
    /// the signs, points and exponents of a number), checked against JSON's grammar.
    fn word(&mut self, first: u8) -> Result<(), Stop> {
        self.push(first)?;
        let numeric = first == b'-' || first.is_ascii_digit();
        while let Some(c) = self.peek()? {
            let part =
                c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 || (numeric && matches!(c, b'.' | b'+' | b'-'));
            if !part {
                break;
            }
            self.pos += 1;
            self.push(c)?;
        }
        let ok =
            if numeric { is_json_number(&self.token) } else { matches!(&self.token[..], b"true" | b"false" | b"null") };
        if ok {
            return Ok(());
        }
        Err(syntax(format!("Token \"{}\" is invalid.", String::from_utf8_lossy(&self.token))))
    }

    /// A string after its opening quote, escapes decoded (`json_lex_string` with need_escapes).
    fn string(&mut self) -> Result<(), Stop> {
        let mut high: Option<u32> = None;
        loop {
            let c = self.bump()?.ok_or_else(more)?;
            if c != b'\\' && high.is_some() {
                return Err(syntax("Unicode low surrogate must follow a high surrogate.".into()));
            }
            match c {
                b'"' => return Ok(()),
                0..=0x1f => return Err(syntax(format!("Character with value 0x{c:02x} must be escaped."))),
                b'\\' => {}
                _ => {
                    self.push(c)?;
                    continue;
                }
            }
            let e = self.bump()?.ok_or_else(more)?;
            if e != b'u' && high.is_some() {
                return Err(syntax("Unicode low surrogate must follow a high surrogate.".into()));
            }
            let plain = match e {
                b'"' | b'\\' | b'/' => e,
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => {
                    high = self.unicode(high)?;
                    continue;
                }
                _ => return Err(syntax(format!("Escape sequence \"\\{}\" is invalid.", char::from(e)))),
            };
            self.push(plain)?;
        }
    }

    /// `\uXXXX` (after the `u`), combining surrogate pairs; the pending high surrogate, if this is one.
    fn unicode(&mut self, high: Option<u32>) -> Result<Option<u32>, Stop> {
        let mut cp = 0u32;
        for _ in 0..4 {
            let d = self.bump()?.and_then(|c| char::from(c).to_digit(16));
            let Some(d) = d else {
                return Err(syntax("\"\\u\" must be followed by four hexadecimal digits.".into()));
            };
            cp = cp * 16 + d;
        }
        let cp = match (cp, high) {
            (0xd800..=0xdbff, Some(_)) => {
                return Err(syntax("Unicode high surrogate must not follow a high surrogate.".into()))
            }
            (0xd800..=0xdbff, None) => return Ok(Some(cp)),
            (0xdc00..=0xdfff, Some(h)) => 0x10000 + ((h - 0xd800) << 10) + (cp - 0xdc00),
            (0xdc00..=0xdfff, None) => {
                return Err(syntax("Unicode low surrogate must follow a high surrogate.".into()))
            }
            (0, _) => return Err(syntax("\\u0000 cannot be converted to text.".into())),
            (cp, _) => cp,
        };
        let ch = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut utf8 = [0u8; 4];
        for &b in ch.encode_utf8(&mut utf8).as_bytes() {
            self.push(b)?;
        }
        Ok(None)
    }

    /// The token's text for an error message, as jsonapi quotes it.
    fn shown(&self, t: &Tok) -> String {
        match t {
            Tok::LBrace => "{".into(),
            Tok::RBrace => "}".into(),
            Tok::LBracket => "[".into(),
            Tok::RBracket => "]".into(),
            Tok::Colon => ":".into(),
            Tok::Comma => ",".into(),
            Tok::Str => format!("\"{}\"", String::from_utf8_lossy(&self.token)),
            Tok::Word => String::from_utf8_lossy(&self.token).into_owned(),
            Tok::Eof => String::new(),
        }
    }
}

/// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(t: &[u8]) -> bool {
    let digits = |t: &[u8], i: &mut usize| {
        let start = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    };
    let mut i = usize::from(t.first() == Some(&b'-'));
    if t.get(i) == Some(&b'0') {
        i += 1;
    } else if !digits(t, &mut i) {
        return false;
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        if !digits(t, &mut i) {
            return false;
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(t, &mut i) {
            return false;
        }
    }
    i == t.len()
}

/// Read one JSON document from `src`, handing each event to `handle`; `seen` gets every chunk read, in order
/// (the manifest's checksum is computed over them).
pub fn parse<R: Read>(
    src: R,
    seen: impl FnMut(&[u8]),
    mut handle: impl FnMut(Event<'_>) -> Result<(), String>,
) -> Result<(), Stop> {
    let mut lx = Lexer { src, seen, buf: vec![0; CHUNK], pos: 0, len: 0, eof: false, token: Vec::new() };
    let mut emit = |e: Event<'_>| handle(e).map_err(Stop::Semantic);
    // true for an object, false for an array
    let mut stack: Vec<bool> = Vec::new();
    let mut key: Vec<u8> = Vec::new();
    let mut expect = Expect::Value;
    loop {
        let t = lx.next()?;
        if t == Tok::Eof && !matches!(expect, Expect::End) {
            return Err(more());
        }
        let found = |lx: &Lexer<R, _>, what: &str| syntax(format!("{what}, but found \"{}\".", lx.shown(&t)));
        let mut done = false; // a value ended
        match expect {
            Expect::Value | Expect::ArrayFirst => match t {
                Tok::LBrace | Tok::LBracket => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(syntax(format!("JSON nested too deep, maximum permitted depth is {MAX_DEPTH}.")));
                    }
                    let object = t == Tok::LBrace;
                    emit(if object { Event::ObjectStart } else { Event::ArrayStart })?;
                    stack.push(object);
                    expect = if object { Expect::ObjectFirst } else { Expect::ArrayFirst };
                }
                Tok::Str | Tok::Word => {
                    emit(Event::Scalar(&lx.token))?;
                    done = true;
                }
                Tok::RBracket if matches!(expect, Expect::ArrayFirst) => {
                    stack.pop();
                    emit(Event::ArrayEnd)?;
                    done = true;
                }
                _ if matches!(expect, Expect::ArrayFirst) => return Err(found(&lx, "Expected array element or \"]\"")),
                _ => return Err(found(&lx, "Expected JSON value")),
            },
            Expect::ObjectFirst | Expect::ObjectKey => match t {
                Tok::Str => {
                    key.clear();
                    key.extend_from_slice(&lx.token);
                    expect = Expect::Colon;
                }
                Tok::RBrace if matches!(expect, Expect::ObjectFirst) => {
                    stack.pop();
                    emit(Event::ObjectEnd)?;
                    done = true;
                }
                _ if matches!(expect, Expect::ObjectFirst) => return Err(found(&lx, "Expected string or \"}\"")),
                _ => return Err(found(&lx, "Expected string")),
            },
            Expect::Colon => match t {
                Tok::Colon => {
                    emit(Event::Field(&key))?;
                    expect = Expect::Value;
                }
                _ => return Err(found(&lx, "Expected \":\"")),
            },
            Expect::ObjectNext => match t {
                Tok::Comma => expect = Expect::ObjectKey,
                Tok::RBrace => {
                    stack.pop();
                    emit(Event::ObjectEnd)?;
                    done = true;
                }
                _ => return Err(found(&lx, "Expected \",\" or \"}\"")),
            },
            Expect::ArrayNext => match t {
                Tok::Comma => expect = Expect::Value,
                Tok::RBracket => {
                    stack.pop();
                    emit(Event::ArrayEnd)?;
                    done = true;
                }
                _ => return Err(found(&lx, "Expected \",\" or \"]\"")),
            },
            Expect::End => match t {
                Tok::Eof => return Ok(()),
                _ => return Err(found(&lx, "Expected end of input")),
            },
        }
        if done {
            expect = match stack.last() {
                Some(true) => Expect::ObjectNext,
                Some(false) => Expect::ArrayNext,
                None => Expect::End,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let r = parse(
            text.as_bytes(),
            |_| {},
            |e| {
                out.push(match e {
                    Event::ObjectStart => "{".to_string(),
                    Event::ObjectEnd => "}".to_string(),
                    Event::ArrayStart => "[".to_string(),
                    Event::ArrayEnd => "]".to_string(),
                    Event::Field(f) => format!("{}:", String::from_utf8_lossy(f)),
                    Event::Scalar(s) => String::from_utf8_lossy(s).into_owned(),
                });
                Ok(())
            },
        );
        match r {
            Ok(()) => Ok(out),
            Err(Stop::Syntax(s)) | Err(Stop::Semantic(s)) => Err(s),
            Err(Stop::Io(e)) => Err(e.to_string()),
        }
    }

    #[test]
    fn events_in_order() {
        let got = events(r#"{"a": [1, "x\u00e9\n", true, {}], "b": null}"#).unwrap();
        assert_eq!(got, ["{", "a:", "[", "1", "x\u{e9}\n", "true", "{", "}", "]", "b:", "null", "}"]);
        assert_eq!(events(r#"["\ud83d\ude00"]"#).unwrap(), ["[", "\u{1f600}", "]"]);
    }

    #[test]
    fn errors_are_jsonapis() {
        assert_eq!(events("{\n").unwrap_err(), "The input string ended unexpectedly.");
        assert_eq!(events(r#"{"a" 1}"#).unwrap_err(), "Expected \":\", but found \"1\".");
        assert_eq!(events(r#"{"a": tru}"#).unwrap_err(), "Token \"tru\" is invalid.");
        assert_eq!(events(r#"[1 2]"#).unwrap_err(), "Expected \",\" or \"]\", but found \"2\".");
        assert_eq!(events(r#"{} x"#).unwrap_err(), "Token \"x\" is invalid.");
        assert_eq!(events(r#"{} 1"#).unwrap_err(), "Expected end of input, but found \"1\".");
        assert_eq!(events(r#"["\x"]"#).unwrap_err(), "Escape sequence \"\\x\" is invalid.");
        assert_eq!(events("[\"\u{1}\"]").unwrap_err(), "Character with value 0x01 must be escaped.");
        assert_eq!(events(r#"["\u0000"]"#).unwrap_err(), "\\u0000 cannot be converted to text.");
        assert_eq!(events(r#"["\ude00"]"#).unwrap_err(), "Unicode low surrogate must follow a high surrogate.");
        assert_eq!(events(r#"[01]"#).unwrap_err(), "Token \"01\" is invalid.");
        assert_eq!(events(r#"[-1.5e+3]"#).unwrap(), ["[", "-1.5e+3", "]"]);
    }
}
