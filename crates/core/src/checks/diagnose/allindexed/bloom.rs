//! The filter the index entries go into and the heap rows are looked up in, and the fingerprints that fill it: a
//! split block Bloom filter filled by many threads at once, and a seeded hash built a value at a time.

use std::sync::Mutex;

/// A split block Bloom filter (the layout of Apache Parquet's bloom filter spec): each fingerprint sets one bit in
/// each of the eight 32-bit words of one 256-bit block, so an insert or a lookup touches one cache line instead of
/// k scattered ones.
pub(super) struct Bloom {
    stripes: Vec<Vec<[u32; 8]>>,
    per_stripe: usize,
    nblocks: usize,
}

/// The odd constants that pick a bit in each word of a block (Parquet's `SALT`).
const SALT: [u32; 8] =
    [0x47b6_137b, 0x4497_4d91, 0x8824_ad5b, 0xa2b7_289d, 0x7054_95c7, 0x2df1_424b, 0x9efc_4947, 0x5c6b_fb31];

/// Stripes of a filter being filled: each thread gathers a chunk's fingerprints, then takes each stripe's lock
/// once for all of them that land there (a locked OR per word would cost more than the rest of the work).
const STRIPES: usize = 64;

pub(super) struct BloomBuilder {
    stripes: Vec<Mutex<Vec<[u32; 8]>>>,
    per_stripe: usize,
    nblocks: usize,
}

impl BloomBuilder {
    pub(super) fn new(bytes: u64) -> BloomBuilder {
        let nblocks = (bytes / 32).max(STRIPES as u64) as usize;
        let per_stripe = nblocks.div_ceil(STRIPES);
        let stripes = (0..STRIPES)
            .map(|i| Mutex::new(vec![[0u32; 8]; per_stripe.min(nblocks.saturating_sub(i * per_stripe))]))
            .collect();
        BloomBuilder { stripes, per_stripe, nblocks }
    }

    /// Insert a batch of fingerprints (the batch is reordered).
    pub(super) fn insert_all(&self, prints: &mut [u64]) {
        let nblocks = self.nblocks;
        let stripe_of = |h: u64| block_index(h, nblocks) / self.per_stripe;
        prints.sort_unstable_by_key(|h| stripe_of(*h));
        for run in prints.chunk_by(|a, b| stripe_of(*a) == stripe_of(*b)) {
            let stripe = stripe_of(run[0]);
            let mut blocks = self.stripes[stripe].lock().unwrap_or_else(|e| e.into_inner());
            for &h in run {
                let block = &mut blocks[block_index(h, nblocks) - stripe * self.per_stripe];
                for (i, w) in block.iter_mut().enumerate() {
                    *w |= bit(h, i);
                }
            }
        }
    }

    pub(super) fn finish(self) -> Bloom {
        let stripes = self.stripes.into_iter().map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
        Bloom { stripes, per_stripe: self.per_stripe, nblocks: self.nblocks }
    }
}

#[inline]
fn block_index(h: u64, nblocks: usize) -> usize {
    ((u128::from(h >> 32) * nblocks as u128) >> 32) as usize
}

#[inline]
fn bit(h: u64, i: usize) -> u32 {
    1 << ((h as u32).wrapping_mul(SALT[i]) >> 27)
}

impl Bloom {
    pub(super) fn bytes(&self) -> u64 {
        self.nblocks as u64 * 32
    }

    pub(super) fn contains(&self, h: u64) -> bool {
        let b = block_index(h, self.nblocks);
        let block = &self.stripes[b / self.per_stripe][b % self.per_stripe];
        block.iter().enumerate().all(|(i, w)| w & bit(h, i) != 0)
    }

    /// The chance that a fingerprint never inserted is found, with `n` inserted: the keys of one block are
    /// Poisson distributed; with j of them a word's bit is set with probability 1 - (31/32)^j, all eight
    /// independently.
    pub(super) fn false_positive_rate(&self, n: u64) -> f64 {
        let lambda = n as f64 / self.nblocks as f64;
        let top = (lambda + 12.0 * lambda.sqrt() + 24.0) as u32;
        let mut p = (-lambda).exp(); // Poisson(0)
        let mut rate = 0.0;
        for j in 0..=top {
            if j > 0 {
                p *= lambda / f64::from(j);
            }
            rate += p * (1.0 - (31.0f64 / 32.0).powi(j as i32)).powi(8);
        }
        rate
    }
}

/// MurmurHash3's 64-bit finalizer.
#[inline]
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A fingerprint built a value at a time.
pub(super) struct Print(u64);

impl Print {
    pub(super) fn new(seed: u64, block: u32, offset: u16) -> Print {
        let mut p = Print(seed);
        p.word(u64::from(block) | (u64::from(offset) << 32));
        p
    }

    #[inline]
    pub(super) fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ fmix(w)).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }

    pub(super) fn null(&mut self) {
        self.word(0xA5A5_0000_0000_0001);
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64 | 0x8000_0000_0000_0000);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }

    pub(super) fn finish(&self) -> u64 {
        fmix(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn false_positive_estimate_matches_what_is_seen() {
        for bits_per_entry in [4u64, 10, 16] {
            let n = 50_000u64;
            let b = BloomBuilder::new(n * bits_per_entry / 8);
            let mut prints: Vec<u64> = (0..n).map(|i| fmix(i.wrapping_mul(0x9E37_79B9) ^ 7)).collect();
            b.insert_all(&mut prints);
            let bloom = b.finish();
            assert!(prints.iter().all(|h| bloom.contains(*h)), "an inserted fingerprint was not found");
            let probes = 200_000u64;
            let seen = (0..probes).filter(|i| bloom.contains(fmix(i ^ 0xDEAD_BEEF_0000_0000))).count() as f64;
            let (observed, expected) = (seen / probes as f64, bloom.false_positive_rate(n));
            assert!(
                observed < expected * 1.3 + 0.0005 && observed > expected * 0.7 - 0.0005,
                "{bits_per_entry} bits an entry: saw {observed}, estimated {expected}"
            );
        }
    }
}
