//! Compressed varlena data as `toast_compression.c` (`access/common/`) decodes it: a bounds-checked pglz
//! decoder following `pglz_decompress` (`common/pg_lzcompress.c`), and LZ4 through the lz4_flex crate.
//! Inline compressed values (tuple.rs) and TOAST values (toast.rs) both come through here.

use std::fmt;

/// `ToastCompressionId` (access/toast_compression.h).
pub const TOAST_PGLZ_COMPRESSION_ID: u8 = 0;
pub const TOAST_LZ4_COMPRESSION_ID: u8 = 1;
pub const TOAST_INVALID_COMPRESSION_ID: u8 = 2;

/// Why a compressed stream does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecompressError {
    /// The method id is neither pglz (0) nor lz4 (1).
    BadMethod(u8),
    /// The stream reads past its end, copies from before the start of the output, or (pglz)
    /// does not end exactly where the input and the raw size end.
    Corrupt(&'static str),
}

impl fmt::Display for DecompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecompressError::BadMethod(m) => write!(f, "invalid compression method id {m}"),
            DecompressError::Corrupt(why) => f.write_str(why),
        }
    }
}

/// Decompress `src` (the bytes after va_tcinfo) with compression method `method` into at most
/// `rawsize` bytes, as `toast_decompress_datum` does.
pub fn decompress(method: u8, src: &[u8], rawsize: usize) -> Result<Vec<u8>, DecompressError> {
    match method {
        TOAST_PGLZ_COMPRESSION_ID => pglz_decompress(src, rawsize),
        TOAST_LZ4_COMPRESSION_ID => lz4_decompress(src, rawsize),
        m => Err(DecompressError::BadMethod(m)),
    }
}

/// `pglz_decompress(source, slen, dest, rawsize, check_complete = true)`: a control byte, then
/// 8 items, each a literal byte (bit 0) or a 2–3 byte back-reference (bit 1): length 3..=18
/// (+ one extension byte when 18) and a 12-bit offset. Output is capped at `rawsize`; the result
/// is an error unless input and output are both consumed exactly.
pub fn pglz_decompress(src: &[u8], rawsize: usize) -> Result<Vec<u8>, DecompressError> {
    // A 3-byte tag yields at most 273 bytes: cap the allocation by what the input can produce.
    let mut out: Vec<u8> = Vec::with_capacity(rawsize.min(src.len().saturating_mul(92)));
    let mut sp = 0usize;
    while sp < src.len() && out.len() < rawsize {
        let mut ctrl = src[sp];
        sp += 1;
        let mut i = 0;
        while i < 8 && sp < src.len() && out.len() < rawsize {
            if ctrl & 1 != 0 {
                let (Some(&t0), Some(&t1)) = (src.get(sp), src.get(sp + 1)) else {
                    return Err(DecompressError::Corrupt("a match tag runs past the input"));
                };
                let mut len = usize::from(t0 & 0x0f) + 3;
                let off = (usize::from(t0 & 0xf0) << 4) | usize::from(t1);
                sp += 2;
                if len == 18 {
                    let Some(&ext) = src.get(sp) else {
                        return Err(DecompressError::Corrupt("a match tag runs past the input"));
                    };
                    len += usize::from(ext);
                    sp += 1;
                }
                if off == 0 || off > out.len() {
                    return Err(DecompressError::Corrupt("a match refers to before the start of the output"));
                }
                let len = len.min(rawsize - out.len());
                let from = out.len() - off;
                for k in 0..len {
                    let b = out[from + k];
                    out.push(b);
                }
            } else {
                out.push(src[sp]);
                sp += 1;
            }
            ctrl >>= 1;
            i += 1;
        }
    }
    if out.len() != rawsize {
        return Err(DecompressError::Corrupt("the input ends before the raw size is reached"));
    }
    if sp != src.len() {
        return Err(DecompressError::Corrupt("input is left over after the raw size is reached"));
    }
    Ok(out)
}

/// `LZ4_decompress_safe(src, dst, srcSize, dstCapacity = rawsize)`: the LZ4 block format, decoded by
/// the lz4_flex crate into a buffer of `rawsize` bytes. A result shorter than `rawsize` is not an
/// error here, as it is not for the server. lz4_flex does not enforce the reference decoder's
/// end-of-block rules (the last 5 bytes are literals), so a stream that breaks only those decodes
/// here while the server refuses it.
pub fn lz4_decompress(src: &[u8], rawsize: usize) -> Result<Vec<u8>, DecompressError> {
    let mut out = vec![0u8; rawsize];
    let n = lz4_flex::block::decompress_into(src, &mut out).map_err(|_| {
        DecompressError::Corrupt("the stream runs past the input or the raw size, or refers before the output")
    })?;
    out.truncate(n);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pglz_literals_and_matches() {
        // ctrl 0b0000_0010: literal 'a', then a match len 3+2=5 off 1, then literal 'b'.
        let src = [0b0000_0010, b'a', 0x02, 0x01, b'b'];
        assert_eq!(pglz_decompress(&src, 7).unwrap(), b"aaaaaab");
        // Wrong raw size either way is corrupt (check_complete).
        assert!(pglz_decompress(&src, 8).is_err());
        assert!(pglz_decompress(&src, 6).is_err());
        // Offset 0 and offsets before the start are corrupt.
        assert!(pglz_decompress(&[0b10, b'a', 0x02, 0x00], 6).is_err());
        assert!(pglz_decompress(&[0b10, b'a', 0x02, 0x02], 6).is_err());
        // A truncated tag.
        assert!(pglz_decompress(&[0b10, b'a', 0x02], 6).is_err());
        // Extension byte: len 18 + 10 = 28.
        let src = [0b10, b'z', 0x0f, 0x01, 10];
        assert_eq!(pglz_decompress(&src, 29).unwrap(), vec![b'z'; 29]);
    }

    #[test]
    fn lz4_blocks() {
        // One literal-only sequence.
        let src = [0x50, b'h', b'e', b'l', b'l', b'o'];
        assert_eq!(lz4_decompress(&src, 5).unwrap(), b"hello");
        // Output shorter than the capacity is accepted (as LZ4_decompress_safe does).
        assert_eq!(lz4_decompress(&src, 40).unwrap(), b"hello");
        // Literal 'a', match len 4+15+5=24 offset 1, then 5 literal bytes.
        let mut src = vec![0x1f, b'a', 0x01, 0x00, 5, 0x50];
        src.extend_from_slice(b"bcdef");
        let out = lz4_decompress(&src, 30).unwrap();
        assert_eq!(&out[..25], &[b'a'; 25][..]);
        assert_eq!(&out[25..], b"bcdef");
        // Offset beyond the output, offset 0, truncations.
        let mut bad = src.clone();
        bad[2] = 2;
        assert!(lz4_decompress(&bad, 30).is_err());
        bad[2] = 0;
        assert!(lz4_decompress(&bad, 30).is_err());
        // A cut stream either fails or (like LZ4_decompress_safe) yields a short result.
        for cut in 0..src.len() {
            let r = lz4_decompress(&src[..cut], 30);
            assert!(r.map_or(true, |o| o.len() < 30), "cut {cut}");
        }
        // Capacity too small.
        assert!(lz4_decompress(&src, 20).is_err());
        assert_eq!(lz4_decompress(&[0], 0).unwrap(), Vec::<u8>::new());
    }
}
