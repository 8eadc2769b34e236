//! The encoder: a column value's text as COPY writes it (`commands/copyto.c`, CopyAttributeOutText and
//! CopyAttributeOutCSV, with the default delimiter, quote and NULL). Runs once per value of every row, so the
//! common case (nothing to escape) is one scan and one copy.

/// Whether a byte needs a backslash escape in COPY text format (a control character COPY spells out, the
/// backslash; the tab delimiter is one of them).
#[inline]
fn text_special(c: u8) -> bool {
    matches!(c, 8..=13) || c == b'\\'
}

/// CopyAttributeOutText with the default delimiter (tab).
pub fn copy_text_escape(v: &[u8], out: &mut Vec<u8>) {
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

/// CopyAttributeOutCSV with the defaults (delimiter ',', quote '"', NULL as an unquoted empty field): quoted when
/// empty, when it holds the delimiter, a quote, CR or LF, or is `\.` alone on its line.
pub fn copy_csv_escape(v: &[u8], single_column: bool, out: &mut Vec<u8>) {
    let needquote = v.is_empty()
        || (single_column && v == b"\\.")
        || v.iter().any(|&c| c == b',' || c == b'"' || c == b'\n' || c == b'\r');
    if !needquote {
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
