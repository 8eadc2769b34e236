//! The data page checksum (`src/include/storage/checksum_impl.h`): 32 parallel FNV-1a-like lanes
//! over the page read as little-endian u32 words, with pd_checksum taken as zero and the block
//! number mixed in, reduced to 1..=65535.

use crate::format::bytes::u16_at;

/// Number of parallel lanes (`N_SUMS`, checksum_impl.h).
pub const N_SUMS: usize = 32;
/// FNV-1a 32-bit prime (`FNV_PRIME`, checksum_impl.h).
pub const FNV_PRIME: u32 = 16_777_619;
/// Initial lane values (`checksumBaseOffsets`, checksum_impl.h).
pub const CHECKSUM_BASE_OFFSETS: [u32; N_SUMS] = [
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C, 0xF8D4474F,
    0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB, 0xE58F764B, 0x187636BC,
    0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4, 0x783125BB, 0x6CA8EAA2, 0xE407EAC6,
    0x4B5CFC3E, 0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756,
];
/// Byte offset of `pd_checksum` in the page header (`src/include/storage/bufpage.h`).
pub const PD_CHECKSUM_OFFSET: usize = 8;

#[inline(always)]
fn mix(lane: u32, value: u32) -> u32 {
    let t = lane ^ value;
    t.wrapping_mul(FNV_PRIME) ^ (t >> 17)
}

/// [`checksum_lanes`] compiled for AVX2 where the CPU has it: the 32 lanes' multiplies become four 8-wide
/// `vpmulld`, where the baseline x86-64 target (SSE2, no 32-bit vector multiply) emulates them. About three
/// times faster; checksums are a tenth of a live scan's time.
fn checksum_block(page: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { checksum_block_avx2(page) };
        }
    }
    checksum_lanes(page)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn checksum_block_avx2(page: &[u8]) -> u32 {
    checksum_lanes(page)
}

/// Checksum of a whole block with pd_checksum (bytes 8..10) taken as zero, before the block number
/// is mixed in. `page.len()` must be a non-zero multiple of 128 (`N_SUMS` u32 words).
#[inline(always)]
fn checksum_lanes(page: &[u8]) -> u32 {
    debug_assert!(page.len().is_multiple_of(N_SUMS * 4) && !page.is_empty());
    let mut lanes = CHECKSUM_BASE_OFFSETS;
    let mut rows = page.chunks_exact(N_SUMS * 4);
    // The first row holds pd_checksum (word 2, low half): mask it instead of copying the page.
    if let Some(first) = rows.next() {
        for (j, lane) in lanes.iter_mut().enumerate() {
            let mut w = u32::from_le_bytes([first[4 * j], first[4 * j + 1], first[4 * j + 2], first[4 * j + 3]]);
            if j == PD_CHECKSUM_OFFSET / 4 {
                w &= 0xFFFF_0000;
            }
            *lane = mix(*lane, w);
        }
    }
    for row in rows {
        for (lane, w) in lanes.iter_mut().zip(row.chunks_exact(4)) {
            *lane = mix(*lane, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }
    // Two rounds of zeroes spread the last words' bits over all lanes.
    for _ in 0..2 {
        for lane in lanes.iter_mut() {
            *lane = mix(*lane, 0);
        }
    }
    lanes.iter().fold(0, |acc, l| acc ^ l)
}

/// `pg_checksum_page`: the value PostgreSQL stores in pd_checksum for `page` at block `blkno` of its
/// fork (block numbers count across segments). Returns `None` when the page length cannot be a
/// PostgreSQL block (not a non-zero multiple of 128 bytes).
pub fn pg_checksum_page(page: &[u8], blkno: u32) -> Option<u16> {
    if page.is_empty() || !page.len().is_multiple_of(N_SUMS * 4) {
        return None;
    }
    let c = checksum_block(page) ^ blkno;
    Some(((c % 65535) + 1) as u16)
}

/// The checksum stored in the page header.
pub fn stored_checksum(page: &[u8]) -> Option<u16> {
    u16_at(page, PD_CHECKSUM_OFFSET)
}

/// Write a freshly computed checksum into `page` (what PageSetChecksumInplace does at write time).
pub fn set_checksum(page: &mut [u8], blkno: u32) -> Option<u16> {
    let c = pg_checksum_page(page, blkno)?;
    page[PD_CHECKSUM_OFFSET..PD_CHECKSUM_OFFSET + 2].copy_from_slice(&c.to_le_bytes());
    Some(c)
}

/// PostgreSQL's `pg_crc32c` (CRC-32C, `src/include/port/pg_crc32c.h`) of `data`, or continued over `data` from
/// the finished value `append_to` (as a WAL record's CRC covers its body, then its header: ValidXLogRecord).
pub fn pg_crc32c(data: &[u8], append_to: Option<u32>) -> u32 {
    match append_to {
        Some(crc) => crc32c::crc32c_append(crc, data),
        None => crc32c::crc32c(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &[u8]) -> Vec<u8> {
        p.iter().copied().cycle().take(8192).collect()
    }

    /// Vectors from contrib/pageinspect/expected/checksum.out (int2 shown as unsigned).
    #[test]
    fn pageinspect_vectors() {
        let cases: [(&[u8], [u16; 3]); 6] = [
            (&[0x01], [1175, 1225, 1139]),
            (&[0x04], [28338, 28352, 28438]),
            (&[0xff], [3612, 3598, 3648]),
            (&[0xab, 0xcd], [34755, 34741, 34655]),
            (&[0xe6, 0xd6], [49267, 49285, 49231]),
            (&[0x4a, 0x5e], [38159, 38145, 38187]),
        ];
        for (pat, expected) in cases {
            let page = pattern(pat);
            for (blk, want) in [0u32, 50, 100].iter().zip(expected) {
                assert_eq!(pg_checksum_page(&page, *blk), Some(want), "pattern {pat:02x?} block {blk}");
            }
        }
    }

    #[test]
    fn stored_checksum_is_ignored_in_computation() {
        let mut page = pattern(&[0x01]);
        let before = pg_checksum_page(&page, 7).unwrap();
        page[8] = 0x55;
        page[9] = 0xAA;
        assert_eq!(pg_checksum_page(&page, 7), Some(before));
        assert_eq!(set_checksum(&mut page, 7), Some(before));
        assert_eq!(stored_checksum(&page), Some(before));
    }

    /// The AVX2 build of the lanes and the baseline one agree, on pages of every size (the vectors above run
    /// through whichever this CPU picks).
    #[test]
    fn the_avx2_lanes_match_the_baseline() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            for len in [128usize, 1024, 4096, 8192, 32768] {
                for _ in 0..20 {
                    let page: Vec<u8> = (0..len)
                        .map(|_| {
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            state as u8
                        })
                        .collect();
                    // SAFETY: AVX2 checked above.
                    assert_eq!(unsafe { checksum_block_avx2(&page) }, checksum_lanes(&page), "length {len}");
                }
            }
        }
    }

    #[test]
    fn odd_lengths_are_refused() {
        assert_eq!(pg_checksum_page(&[], 0), None);
        assert_eq!(pg_checksum_page(&[0u8; 100], 0), None);
        assert!(pg_checksum_page(&[0u8; 4096], 0).is_some());
    }
}
