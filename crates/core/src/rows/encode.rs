//! The encoder: a column value's text as COPY writes it (`commands/copyto.c`, CopyAttributeOutText and
//! CopyAttributeOutCSV, with the default delimiter, quote and NULL). Runs once per value of every row, so the
//! common case (nothing to escape) is one scan and one copy.

/// Whether a byte needs a backslash escape in COPY text format (a control character COPY spells out, the
/// backslash; the tab delimiter is one of them).
#[inline]
fn text_special(c: u8) -> bool {
    matches!(c, 8..=13) || c == b'\\'
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `x` is below `n` (n ≤ 128): the classic word-at-a-time test, exact for presence.
#[inline]
fn has_byte_below(x: u64, n: u8) -> bool {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS != 0
}

/// Whether `v` may need escaping, eight bytes at a time: false means it surely does not (a word with a byte below
/// 14 or a backslash says maybe). Most values (numbers, plain text, padding) pass in a few instructions per word.
#[inline]
fn may_need_escape(v: &[u8]) -> bool {
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if has_byte_below(x, 14) || has_byte_below(x ^ (ONES * u64::from(b'\\')), 1) {
            return true;
        }
    }
    words.remainder().iter().any(|&c| text_special(c))
}

/// Whether `v` is ASCII and [`copy_text_escape`] would leave it as it is: one scan, eight bytes at a time, for
/// the common value (plain text, padding) that needs neither the UTF-8 check nor escaping.
#[inline]
pub fn plain_ascii_text(v: &[u8]) -> bool {
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if x & HIGHS != 0 {
            return false;
        }
        // a byte below 14 (NUL to BEL are left as they are) or a backslash: look at the word's bytes
        let maybe = has_byte_below(x, 14) || has_byte_below(x ^ (ONES * u64::from(b'\\')), 1);
        if maybe && w.iter().any(|&c| text_special(c)) {
            return false;
        }
    }
    words.remainder().iter().all(|&c| c.is_ascii() && !text_special(c))
}

/// Whether [`copy_text_escape`] would change `v`.
#[inline]
pub fn needs_text_escape(v: &[u8]) -> bool {
    may_need_escape(v) && v.iter().any(|&c| text_special(c))
}

/// CopyAttributeOutText with the default delimiter (tab).
pub fn copy_text_escape(v: &[u8], out: &mut Vec<u8>) {
    if !may_need_escape(v) {
        out.extend_from_slice(v);
        return;
    }
    let Some(first) = v.iter().position(|&c| text_special(c)) else {
        out.extend_from_slice(v);
        return;
    };
    out.reserve(v.len() + 8);
    out.extend_from_slice(&v[..first]);
    for &c in &v[first..] {
        match c {
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x0b => out.extend_from_slice(b"\\v"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            c => out.push(c),
        }
    }
}

/// Whether [`copy_csv_escape`] quotes `v`.
#[inline]
pub fn csv_needs_quote(v: &[u8], single_column: bool) -> bool {
    v.is_empty()
        || (single_column && v == b"\\.")
        || v.iter().any(|&c| c == b',' || c == b'"' || c == b'\n' || c == b'\r')
}

/// CopyAttributeOutCSV with the defaults (delimiter ',', quote '"', NULL as an unquoted empty field): quoted when
/// empty, when it holds the delimiter, a quote, CR or LF, or is `\.` alone on its line.
pub fn copy_csv_escape(v: &[u8], single_column: bool, out: &mut Vec<u8>) {
    if !csv_needs_quote(v, single_column) {
        out.extend_from_slice(v);
        return;
    }
    out.push(b'"');
    for &c in v {
        if c == b'"' {
            out.push(b'"');
        }
        out.push(c);
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        copy_text_escape(v, &mut out);
        out
    }

    #[test]
    fn text_escapes_like_copy() {
        assert_eq!(text(b"plain"), b"plain");
        assert_eq!(text(b"a\tb\nc\\d\re\x08\x0b\x0c"), b"a\\tb\\nc\\\\d\\re\\b\\v\\f".to_vec());
        assert_eq!(text(b"\x01\x7f"), b"\x01\x7f".to_vec());
        assert_eq!(text(b""), b"".to_vec());
        // every position of a word and of the remainder, each special byte and near misses
        for len in 0..40 {
            for at in 0..len {
                for c in [0u8, 7, 8, 9, 10, 11, 12, 13, 14, b'\\', b'[', b']', 0x80, 0xff] {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    let want: Vec<u8> = v
                        .iter()
                        .flat_map(|&c| match c {
                            8 => b"\\b".to_vec(),
                            9 => b"\\t".to_vec(),
                            10 => b"\\n".to_vec(),
                            11 => b"\\v".to_vec(),
                            12 => b"\\f".to_vec(),
                            13 => b"\\r".to_vec(),
                            b'\\' => b"\\\\".to_vec(),
                            c => vec![c],
                        })
                        .collect();
                    assert_eq!(text(&v), want, "len {len} at {at} byte {c}");
                }
            }
        }
    }

    #[test]
    fn plain_ascii_text_is_exact() {
        for len in 0..40 {
            for at in 0..len {
                for c in [0u8, 7, 8, 9, 10, 11, 12, 13, 14, b' ', b'\\', b'[', b']', 0x7f, 0x80, 0xc3, 0xff] {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    let want = v.is_ascii() && text(&v) == v;
                    assert_eq!(plain_ascii_text(&v), want, "len {len} at {at} byte {c}");
                }
            }
        }
    }

    #[test]
    fn csv_quotes_like_copy() {
        let csv = |v: &[u8], single: bool| {
            let mut out = Vec::new();
            copy_csv_escape(v, single, &mut out);
            out
        };
        assert_eq!(csv(b"x", false), b"x");
        assert_eq!(csv(b"", false), b"\"\"");
        assert_eq!(csv(b"a,\"b\"", false), b"\"a,\"\"b\"\"\"".to_vec());
        assert_eq!(csv(b"\\.", true), b"\"\\.\"".to_vec());
        assert_eq!(csv(b"\\.", false), b"\\.".to_vec());
    }
}
