//! Randomized robustness of the attribute walk, the TOAST inventory and the decompressors:
//! mutated real tuples (PostgreSQL 15 fixture), random descriptors and random compressed
//! streams. Any panic fails; every problem must carry a catalogued code and every span must lie
//! inside its tuple. Deterministic seed, stable Rust.

use pgsurgeon_core::finding::Code;
use std::collections::BTreeMap;

use pgsurgeon_core::finding::Area;
use pgsurgeon_core::format::compress::{decompress, lz4_decompress, pglz_decompress};
use pgsurgeon_core::format::heap::HeapTupleHeaderData;
use pgsurgeon_core::format::itemid::LP_NORMAL;
use pgsurgeon_core::format::page::Page;
use pgsurgeon_core::format::toast::{ChunkInventory, TOAST_MAX_CHUNK_SIZE_8K};
use pgsurgeon_core::format::tuple::{
    toast_pointers, walk_attributes, walk_attributes_with, AttrDesc, RelDesc, WalkOptions,
};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pages/");

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

fn items(file: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for page in file.chunks(8192) {
        let p = Page::new(page).unwrap();
        for (_, id) in p.item_ids() {
            if id.lp_flags() == LP_NORMAL {
                out.push(p.item_bytes(id).unwrap().to_vec());
            }
        }
    }
    out
}

/// Values that make parsers take interesting branches.
const INTERESTING: [u8; 12] = [0x00, 0x01, 0x02, 0x03, 0x12, 0x7f, 0x80, 0xfe, 0xff, 0x40, 0xC0, 0x0f];

fn mutate(rng: &mut Rng, t: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(9) {
            0 | 1 => {
                let i = rng.below(t.len());
                if let Some(b) = t.get_mut(i) {
                    *b ^= 1 << rng.below(8);
                }
            }
            2 => {
                let i = rng.below(t.len());
                if let Some(b) = t.get_mut(i) {
                    *b = INTERESTING[rng.below(INTERESTING.len())];
                }
            }
            3 => {
                // header fields: natts, infomask, t_hoff
                let i = 18 + rng.below(5);
                if let Some(b) = t.get_mut(i) {
                    *b = rng.byte();
                }
            }
            4 => {
                let n = rng.below(t.len() + 1);
                t.truncate(n.max(23));
            }
            5 => {
                for _ in 0..rng.below(40) {
                    t.push(rng.byte());
                }
            }
            6 => {
                // a plausible varlena/pointer header somewhere in the data
                let i = 24 + rng.below(t.len().saturating_sub(24));
                let hdr: [u8; 4] = match rng.below(4) {
                    0 => [0x01, 18, rng.byte(), rng.byte()],
                    1 => [rng.byte() | 3, 0, 0, 0],
                    2 => (((rng.below(3000) as u32) << 2) | 2).to_le_bytes(),
                    _ => ((rng.below(3000) as u32) << 2).to_le_bytes(),
                };
                for (k, b) in hdr.iter().enumerate() {
                    if let Some(x) = t.get_mut(i + k) {
                        *x = *b;
                    }
                }
            }
            7 => {
                // va_extinfo / va_tcinfo top bits
                let i = 24 + rng.below(t.len().saturating_sub(24));
                if let Some(b) = t.get_mut(i) {
                    *b |= 0xC0;
                }
            }
            _ => {
                let i = rng.below(t.len());
                let j = rng.below(t.len());
                if i < t.len() && j < t.len() {
                    t.swap(i, j);
                }
            }
        }
    }
}

fn random_rel(rng: &mut Rng) -> RelDesc {
    let n = rng.below(20);
    let attrs = (0..n)
        .map(|i| {
            let attlen = match rng.below(8) {
                0 => -2,
                1..=3 => -1,
                4 => rng.below(70) as i16,
                _ => [1, 2, 4, 8, 16][rng.below(5)],
            };
            AttrDesc {
                attnum: i as i16 + 1,
                attlen,
                attalign: b"csid?"[rng.below(5)],
                attbyval: false,
                attisdropped: rng.below(10) == 0,
                typname: String::new(),
                attstorage: b'x',
            }
        })
        .collect();
    RelDesc { natts: n as u16, attrs, has_toast: rng.below(4) != 0, toast_relid: rng.below(3) as u32 }
}

fn check_walk(t: &[u8], rel: &RelDesc, inv: &ChunkInventory, stats: &mut BTreeMap<Code, usize>) {
    let Some(h) = HeapTupleHeaderData::parse(t) else { return };
    let w = walk_attributes(t, &h, rel);
    for s in &w.spans {
        if !s.is_null && !s.missing {
            assert!(s.offset + s.len <= t.len(), "span {s:?} beyond {}", t.len());
            assert!(s.bytes(t).is_some());
        }
    }
    for p in &w.problems {
        let d = p.code.info();
        assert!(matches!(d.area, Area::TupleData | Area::Toast), "{}", p.code);
        *stats.entry(p.code).or_default() += 1;
        let _ = p.to_finding(Some(1), Some(1));
    }
    assert_eq!(toast_pointers(t, &h, rel).len(), w.toast_pointers.len());
    // Without spans the walk takes a short path for sound tuples: it must say exactly what the full walk says.
    let lean = walk_attributes_with(t, &h, rel, &WalkOptions { record_spans: false, ..WalkOptions::default() });
    assert_eq!(
        (&lean.problems, &lean.toast_pointers, lean.data_end, lean.stopped),
        (&w.problems, &w.toast_pointers, w.data_end, w.stopped),
        "tuple {t:02x?}"
    );
    for ptr in &w.toast_pointers {
        for p in inv.check_value(ptr, TOAST_MAX_CHUNK_SIZE_8K) {
            assert_eq!(p.code.info().area, Area::Toast);
            *stats.entry(p.code).or_default() += 1;
        }
        for max in [1, 7, 1996] {
            let _ = inv.check_value(ptr, max);
        }
    }
}

#[test]
fn mutated_tuples_never_panic() {
    let start = std::time::Instant::now();
    let rel: RelDesc = serde_json::from_slice(&std::fs::read(format!("{DIR}pg15_fix.reldesc.json")).unwrap()).unwrap();
    let heap = items(&std::fs::read(format!("{DIR}pg15_fix.heap")).unwrap());
    let toast = items(&std::fs::read(format!("{DIR}pg15_fix.toast")).unwrap());
    let mut inv = ChunkInventory::new("pg_toast_16460", TOAST_MAX_CHUNK_SIZE_8K);
    for t in &toast {
        inv.add_tuple(0, 1, t, &HeapTupleHeaderData::parse(t).unwrap());
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut stats = BTreeMap::new();
    let mut n = 0usize;

    // Mutated heap tuples, with the real descriptor and with random ones.
    for i in 0..150_000 {
        let mut t = heap[rng.below(heap.len())].clone();
        mutate(&mut rng, &mut t);
        if i % 8 == 0 {
            let r = random_rel(&mut rng);
            check_walk(&t, &r, &inv, &mut stats);
        } else {
            check_walk(&t, &rel, &inv, &mut stats);
        }
        n += 1;
    }
    // Mutated TOAST chunks into a fresh inventory per round, then every real pointer checked.
    let pointers: Vec<_> =
        heap.iter().flat_map(|t| toast_pointers(t, &HeapTupleHeaderData::parse(t).unwrap(), &rel)).collect();
    for _ in 0..400 {
        let mut inv2 = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
        for (k, t) in toast.iter().enumerate() {
            let mut t = t.clone();
            if rng.below(3) == 0 {
                mutate(&mut rng, &mut t);
            }
            if let Some(h) = HeapTupleHeaderData::parse(&t) {
                for p in inv2.add_tuple(k as u32, 1, &t, &h) {
                    *stats.entry(p.code).or_default() += 1;
                }
            }
            n += 1;
        }
        for p in &pointers {
            for pr in inv2.check_value(p, TOAST_MAX_CHUNK_SIZE_8K) {
                *stats.entry(pr.code).or_default() += 1;
            }
        }
    }
    // Random bytes as tuples with random descriptors.
    for _ in 0..30_000 {
        let len = 23 + rng.below(300);
        let mut t: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        t[22] = (rng.below(6) * 8) as u8;
        let r = random_rel(&mut rng);
        check_walk(&t, &r, &inv, &mut stats);
        n += 1;
    }
    // Random and mutated compressed streams.
    for _ in 0..50_000 {
        let len = rng.below(200);
        let mut src: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        if rng.below(2) == 0 {
            for b in src.iter_mut().step_by(3) {
                *b &= 0x1f;
            }
        }
        let raw = rng.below(20_000);
        let _ = pglz_decompress(&src, raw);
        let _ = lz4_decompress(&src, raw);
        let _ = decompress(rng.byte() & 3, &src, raw);
        if let Ok(out) = pglz_decompress(&src, raw) {
            assert_eq!(out.len(), raw);
        }
        if let Ok(out) = lz4_decompress(&src, raw) {
            assert!(out.len() <= raw);
        }
        n += 1;
    }
    assert!(n >= 50_000);
    // Every code the walk and the inventory produce shows up under random damage.
    for code in [
        Code::TupleDataAttrPastEnd,
        Code::TupleDataVarlenaBadHeader,
        Code::TupleDataCompressedBad,
        Code::TupleDataTrailingBytes,
        Code::TupleDataNattsGtRelation,
        Code::ToastPointerBad,
        Code::ToastFlagMissing,
        Code::ToastValueMissing,
        Code::ToastChunkMissing,
        Code::ToastChunkUnexpected,
        Code::ToastChunkSize,
        Code::ToastChunkHeader,
    ] {
        assert!(stats.contains_key(&code), "{code} never produced: {stats:?}");
    }
    eprintln!("{n} cases in {:?}: {stats:?}", start.elapsed());
}
