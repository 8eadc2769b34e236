//! Attribute walking and TOAST checks on real PostgreSQL 15 pages.
//!
//! Fixture (`tests/data/pages/pg15_fix.*`): table `fix` (int, bigint, bool, int2, text, bytea,
//! numeric, timestamp, a dropped text column, varchar, float8, text with lz4, int4[], "char",
//! jsonb, then `extra int DEFAULT 42` and `extra2 text DEFAULT 'dflt'` added after most rows were
//! written), with NULL patterns, inline-compressed pglz and lz4 values, external values stored
//! uncompressed (random bytea), compressed with pglz and with lz4; then a DELETE, UPDATEs of
//! toasted and untoasted columns and a rolled-back INSERT, no VACUUM, CHECKPOINT. The 2 heap
//! blocks and the 9 TOAST blocks were copied from the data directory;
//! `pg15_fix.reldesc.json` comes from pg_attribute, `pg15_fix.expected.json` holds pageinspect's
//! `tuple_data_split` for every heap tuple and the TOAST item/value counts.

use pgsurgeon_core::finding::Code;
use std::collections::{BTreeMap, BTreeSet};

use pgsurgeon_core::format::compress::decompress;
use pgsurgeon_core::format::heap::{HeapTupleHeaderData, HEAP_HASEXTERNAL};
use pgsurgeon_core::format::itemid::LP_NORMAL;
use pgsurgeon_core::format::page::Page;
use pgsurgeon_core::format::toast::{ChunkInventory, ToastProblem};
use pgsurgeon_core::format::tuple::{toast_pointers, walk_attributes, Referrer, RelDesc, ToastPointer, VarlenaKind};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pages/");

struct Fixture {
    rel: RelDesc,
    heap: Vec<u8>,
    toast: Vec<u8>,
    expected: serde_json::Value,
    max_chunk: u32,
    toast_relname: String,
}

fn load() -> Fixture {
    let read = |f: &str| std::fs::read(format!("{DIR}{f}")).unwrap();
    let expected: serde_json::Value = serde_json::from_slice(&read("pg15_fix.expected.json")).unwrap();
    Fixture {
        rel: serde_json::from_slice(&read("pg15_fix.reldesc.json")).unwrap(),
        heap: read("pg15_fix.heap"),
        toast: read("pg15_fix.toast"),
        max_chunk: expected["toast_max_chunk_size"].as_u64().unwrap() as u32,
        toast_relname: expected["toast_relname"].as_str().unwrap().to_string(),
        expected,
    }
}

/// (block, lp, tuple bytes) of every LP_NORMAL item.
fn items(file: &[u8]) -> Vec<(u32, u16, Vec<u8>)> {
    let mut out = Vec::new();
    for (blk, page) in file.chunks(8192).enumerate() {
        let p = Page::new(page).unwrap();
        for (lp, id) in p.item_ids() {
            if id.lp_flags() == LP_NORMAL {
                out.push((blk as u32, lp, p.item_bytes(id).unwrap().to_vec()));
            }
        }
    }
    out
}

fn hdr(t: &[u8]) -> HeapTupleHeaderData {
    HeapTupleHeaderData::parse(t).unwrap()
}

fn inventory(f: &Fixture) -> ChunkInventory {
    let mut inv = ChunkInventory::new(f.toast_relname.clone(), f.max_chunk);
    for (blk, lp, t) in items(&f.toast) {
        let problems = inv.add_tuple(blk, lp, &t, &hdr(&t));
        assert!(problems.is_empty(), "chunk ({blk},{lp}): {problems:?}");
    }
    inv
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn codes_v(p: &[ToastProblem]) -> BTreeSet<Code> {
    p.iter().map(|p| p.code).collect()
}

fn id_of(t: &[u8]) -> i32 {
    let h = hdr(t);
    i32::from_le_bytes(t[h.t_hoff as usize..h.t_hoff as usize + 4].try_into().unwrap())
}

#[test]
fn every_real_tuple_walks_cleanly_and_matches_tuple_data_split() {
    let f = load();
    let tuples = f.expected["tuples"].as_object().unwrap();
    let heap = items(&f.heap);
    assert_eq!(heap.len(), tuples.len());
    let mut kinds = BTreeSet::new();
    let mut natts_seen = BTreeSet::new();
    for (blk, lp, t) in &heap {
        let h = hdr(t);
        natts_seen.insert(h.natts());
        let w = walk_attributes(t, &h, &f.rel);
        assert!(w.problems.is_empty(), "({blk},{lp}): {:?}", w.problems);
        assert!(!w.stopped);
        assert_eq!(w.spans.len(), 17);
        let want = tuples[&format!("{blk}:{lp}")].as_array().unwrap();
        for (i, s) in w.spans.iter().enumerate() {
            assert_eq!(s.attnum as usize, i + 1);
            let got = s.bytes(t).map(hex);
            assert_eq!(got.as_deref(), want[i].as_str(), "({blk},{lp}) attribute {}", i + 1);
            if let Some(k) = s.varlena {
                kinds.insert(format!("{k:?}"));
            }
        }
        // Tuples written before ADD COLUMN stop at 15 attributes.
        assert_eq!(w.spans.iter().filter(|s| s.missing).count(), 17 - usize::from(h.natts()));
    }
    assert_eq!(natts_seen, BTreeSet::from([15, 17]));
    for k in [
        "Short",
        "Plain",
        "Compressed { rawsize: 5000, method: 0 }",
        "Compressed { rawsize: 7000, method: 1 }",
        "External { tag: 18 }",
    ] {
        assert!(kinds.contains(k), "{k} not seen in {kinds:?}");
    }
}

#[test]
fn inline_compressed_values_decode_to_their_text() {
    let f = load();
    let mut seen = 0;
    for (_, _, t) in items(&f.heap) {
        let w = walk_attributes(&t, &hdr(&t), &f.rel);
        for s in &w.spans {
            let Some(VarlenaKind::Compressed { rawsize, method }) = s.varlena else {
                continue;
            };
            let b = s.bytes(&t).unwrap();
            let out = decompress(method, &b[8..], rawsize as usize).unwrap();
            let expect: Vec<u8> = match (id_of(&t), s.attnum) {
                (1001, 5) => b"x".repeat(5000),
                (1002, 5) => b"abc".repeat(3000),
                (1002, 12) => b"lz4-inline ".repeat(600),
                (1003, 12) => b"q".repeat(7000),
                other => panic!("unexpected compressed value {other:?}"),
            };
            assert_eq!(out, expect);
            seen += 1;
        }
    }
    assert_eq!(seen, 4);
}

/// Reassemble a value from the raw TOAST pages (all chunk versions, in chunk_seq order).
fn assemble(f: &Fixture, valueid: u32) -> Vec<u8> {
    let toast = RelDesc::toast_table();
    let mut chunks = BTreeMap::new();
    for (_, _, t) in items(&f.toast) {
        let w = walk_attributes(&t, &hdr(&t), &toast);
        let id = u32::from_le_bytes(w.spans[0].bytes(&t).unwrap().try_into().unwrap());
        if id == valueid {
            let seq = i32::from_le_bytes(w.spans[1].bytes(&t).unwrap().try_into().unwrap());
            chunks.insert(seq, w.spans[2].payload(&t).unwrap().to_vec());
        }
    }
    chunks.into_values().flatten().collect()
}

#[test]
fn every_toast_pointer_is_complete_in_the_real_inventory() {
    let f = load();
    let inv = inventory(&f);
    assert_eq!(inv.chunk_count(), f.expected["toast_items"].as_u64().unwrap());
    assert_eq!(inv.value_count() as u64, f.expected["toast_values"].as_u64().unwrap());
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    let mut methods = BTreeSet::new();
    let mut pruned = 0;
    for (blk, lp, t) in items(&f.heap) {
        let h = hdr(&t);
        let ptrs = toast_pointers(&t, &h, &f.rel);
        if !ptrs.is_empty() {
            assert!(h.t_infomask & HEAP_HASEXTERNAL != 0);
        }
        for p in ptrs {
            assert_eq!(p.va_toastrelid, f.rel.toast_relid);
            *by_state.entry(format!("{:?}", p.referrer)).or_default() += 1;
            let problems = inv.check_value(&p, f.max_chunk);
            assert!(problems.is_empty(), "({blk},{lp}) {p:?}: {problems:?}");
            // No VACUUM ran, so the aborted insert's value is complete too. Deleted rows' values
            // may not be: opportunistic pruning of TOAST page 2 left 3 LP_DEAD items where the
            // chunks of row 3001's old text were, which is why check_value does not report
            // absent chunks for rows whose xmax is set.
            let forced = ToastPointer { referrer: Referrer::Live, referrer_xmin_committed: true, ..p };
            let fp = inv.check_value(&forced, f.max_chunk);
            if p.referrer == Referrer::MaybeDeleted && !fp.is_empty() {
                assert_eq!(codes_v(&fp), BTreeSet::from([Code::ToastValueMissing]));
                pruned += 1;
                continue;
            }
            assert!(fp.is_empty(), "forced ({blk},{lp}) {p:?}: {fp:?}");
            // And the bytes reassemble to extsize, decompressing to va_rawsize - 4.
            let data = assemble(&f, p.va_valueid);
            assert_eq!(data.len() as u32, p.extsize);
            if p.is_compressed {
                methods.insert(p.compression_method);
                let tcinfo = u32::from_le_bytes(data[..4].try_into().unwrap());
                let raw = (tcinfo & 0x3FFF_FFFF) as usize;
                assert_eq!(raw as i32, p.va_rawsize - 4);
                let out = decompress((tcinfo >> 30) as u8, &data[4..], raw).unwrap();
                assert_eq!(out.len(), raw);
                assert!(out.is_ascii());
            } else {
                methods.insert(255);
                assert_eq!(p.extsize as i32, p.va_rawsize - 4);
            }
        }
    }
    // Live rows, deleted/updated versions, and the rolled-back insert (hinted aborted).
    // 9 live rows; rows 2001 (deleted), 2002, 2003 and 3001 (updated) have old versions; the
    // rolled-back insert of 7001 is hinted HEAP_XMIN_INVALID.
    assert_eq!(by_state["Live"], 9, "{by_state:?}");
    assert_eq!(by_state["MaybeDeleted"], 4, "{by_state:?}");
    assert_eq!(by_state["XminAborted"], 1, "{by_state:?}");
    assert_eq!(methods, BTreeSet::from([0, 1, 255]));
    assert_eq!(pruned, 1);
}

/// The heap tuple whose id column is `id` (its newest version: the last one on the pages).
fn tuple_with_id(f: &Fixture, id: i32) -> (u32, u16, Vec<u8>) {
    items(&f.heap).into_iter().rev().find(|(_, _, t)| id_of(t) == id).unwrap()
}

fn walk_codes(f: &Fixture, t: &[u8]) -> BTreeSet<Code> {
    walk_attributes(t, &hdr(t), &f.rel).problems.iter().map(|p| p.code).collect()
}

fn span_of(f: &Fixture, t: &[u8], attnum: i16) -> pgsurgeon_core::format::tuple::AttrSpan {
    walk_attributes(t, &hdr(t), &f.rel).spans[attnum as usize - 1]
}

#[test]
fn mutated_heap_tuples_give_the_exact_codes() {
    let f = load();
    let set = |c: &[Code]| c.iter().copied().collect::<BTreeSet<_>>();

    // Row 3: t is 'text 3' (short header 0x0f) followed by more attributes; make it claim 63
    // bytes, which runs past the end of the 97-byte tuple.
    let (_, _, mut t) = tuple_with_id(&f, 3);
    let s = span_of(&f, &t, 5);
    assert_eq!(t[s.offset], 0x0f);
    t[s.offset] = 0x7f;
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataAttrPastEnd]));
    // Shrink it by 2 bytes instead: the rest is read shifted; in this tuple that ends in
    // leftover bytes after the last attribute.
    let (_, _, mut t) = tuple_with_id(&f, 1);
    let s = span_of(&f, &t, 5);
    t[s.offset] = 0x0b;
    let codes = walk_codes(&f, &t);
    assert!(!codes.is_empty(), "a shifted walk must not look clean");

    // Row 9: a 200-char text with an aligned 4-byte header; length word 2 (< 4).
    let (_, _, mut t) = tuple_with_id(&f, 9);
    let s = span_of(&f, &t, 5);
    assert_eq!(s.varlena, Some(VarlenaKind::Plain));
    t[s.offset..s.offset + 4].copy_from_slice(&(2u32 << 2).to_le_bytes());
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataVarlenaBadHeader]));

    // Row 2004: an uncompressed external bytea. Unknown tag; then bad pointer fields; then the
    // tuple flag; then a relation without a TOAST table.
    let (_, _, orig) = tuple_with_id(&f, 2004);
    let s = span_of(&f, &orig, 6);
    assert_eq!(s.varlena, Some(VarlenaKind::External { tag: 18 }));
    let mut t = orig.clone();
    t[s.offset + 1] = 5;
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataVarlenaBadHeader]));
    let mut t = orig.clone();
    t[s.offset + 2..s.offset + 6].copy_from_slice(&0x4000_0000i32.to_le_bytes());
    assert_eq!(walk_codes(&f, &t), set(&[Code::ToastPointerBad]));
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    // PostgreSQL 15 then decompresses the raw bytes: "invalid compression method id 3".
    assert!(w.problems[0].pg_error.contains("decompressed as if compressed"), "{:?}", w.problems);
    let mut t = orig.clone();
    t[s.offset + 6..s.offset + 10].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(walk_codes(&f, &t), set(&[Code::ToastPointerBad]));
    let mut t = orig.clone();
    t[s.offset + 14..s.offset + 18].copy_from_slice(&12345u32.to_le_bytes());
    assert_eq!(walk_codes(&f, &t), set(&[Code::ToastPointerBad]));
    let mut t = orig.clone();
    let mut h = hdr(&t);
    h.t_infomask &= !HEAP_HASEXTERNAL;
    h.write(&mut t);
    assert_eq!(walk_codes(&f, &t), set(&[Code::ToastFlagMissing]));
    let mut no_toast = f.rel.clone();
    no_toast.has_toast = false;
    let w = walk_attributes(&orig, &hdr(&orig), &no_toast);
    assert_eq!(w.problems.iter().map(|p| p.code).collect::<Vec<_>>(), vec![Code::ToastFlagMissing]);

    // Row 3002: a pglz-compressed external text; compression method 2 in va_extinfo.
    let (_, _, mut t) = tuple_with_id(&f, 3002);
    let s = span_of(&f, &t, 5);
    t[s.offset + 9] |= 0x80;
    assert_eq!(walk_codes(&f, &t), set(&[Code::ToastPointerBad]));
    // PostgreSQL 15 reads the value fine (the stored bytes say pglz); amcheck complains.
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    assert!(w.problems[0].pg_error.starts_with("none on a full read"));

    // Row 1001: inline pglz 'x' * 5000. A wrong raw size, a damaged stream, a bad method.
    let (_, _, orig) = tuple_with_id(&f, 1001);
    let s = span_of(&f, &orig, 5);
    let mut t = orig.clone();
    t[s.offset + 4..s.offset + 8].copy_from_slice(&5001u32.to_le_bytes());
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataCompressedBad]));
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    assert_eq!(w.problems[0].pg_error, "compressed pglz data is corrupt");
    let mut t = orig.clone();
    t[s.offset + 10] = 0xff; // the first tag's offset byte: points before the output start
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataCompressedBad]));
    let mut t = orig.clone();
    t[s.offset + 7] |= 0xC0;
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    assert_eq!(w.problems.len(), 1);
    assert_eq!(w.problems[0].pg_error, "invalid compression method id 3");
    let mut t = orig.clone();
    t[s.offset + 4..s.offset + 8].copy_from_slice(&0x3FFF_FFFFu32.to_le_bytes());
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    assert_eq!(w.problems[0].pg_error, "invalid memory alloc request size 1073741827");

    // Row 1003: inline lz4 'q' * 7000 with a smaller raw size: the stream overruns it.
    let (_, _, mut t) = tuple_with_id(&f, 1003);
    let s = span_of(&f, &t, 12);
    t[s.offset + 4..s.offset + 8].copy_from_slice(&(6000u32 | 1 << 30).to_le_bytes());
    let w = walk_attributes(&t, &hdr(&t), &f.rel);
    assert_eq!(w.problems.len(), 1);
    assert_eq!(w.problems[0].pg_error, "compressed lz4 data is corrupt");

    // A 15-attribute tuple with nulls claiming 18 attributes: the relation has 17.
    let (_, _, mut t) = tuple_with_id(&f, 12);
    let mut h = hdr(&t);
    assert_eq!(h.natts(), 15);
    assert!(h.has_nulls());
    h.t_infomask2 = (h.t_infomask2 & !0x07FF) | 18;
    h.write(&mut t);
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataNattsGtRelation]));

    // Extra bytes after the last attribute beyond MAXALIGN padding.
    let (_, _, mut t) = tuple_with_id(&f, 1);
    t.extend_from_slice(&[0u8; 8]);
    assert_eq!(walk_codes(&f, &t), set(&[Code::TupleDataTrailingBytes]));
    // Cut the tuple: the last stored attribute now ends beyond it.
    let (_, _, t) = tuple_with_id(&f, 1);
    assert_eq!(walk_codes(&f, &t[..t.len() - 1]), set(&[Code::TupleDataAttrPastEnd]));
}

/// The TOAST items of one value: (block, lp, bytes) sorted by chunk_seq.
fn value_items(f: &Fixture, valueid: u32) -> Vec<(u32, u16, Vec<u8>)> {
    let mut v: Vec<_> = items(&f.toast)
        .into_iter()
        .filter(|(_, _, t)| u32::from_le_bytes(t[24..28].try_into().unwrap()) == valueid)
        .collect();
    v.sort_by_key(|(_, _, t)| i32::from_le_bytes(t[28..32].try_into().unwrap()));
    v
}

/// An inventory of every TOAST item, with `edit` applied to the items of `valueid`
/// (returning None drops the item).
fn inventory_with(
    f: &Fixture,
    valueid: u32,
    mut edit: impl FnMut(i32, &mut Vec<u8>) -> bool,
) -> (ChunkInventory, Vec<ToastProblem>) {
    let mut inv = ChunkInventory::new(f.toast_relname.clone(), f.max_chunk);
    let mut add_problems = Vec::new();
    for (blk, lp, mut t) in items(&f.toast) {
        if u32::from_le_bytes(t[24..28].try_into().unwrap()) == valueid {
            let seq = i32::from_le_bytes(t[28..32].try_into().unwrap());
            if !edit(seq, &mut t) {
                continue;
            }
        }
        add_problems.extend(inv.add_tuple(blk, lp, &t, &hdr(&t)));
    }
    (inv, add_problems)
}

/// Row 2004 of the fixture: an uncompressed bytea of 4800 bytes = chunks 0, 1 (1996 each) and 2 (808).
fn toast_case() -> (Fixture, ToastPointer, u32, String) {
    let f = load();
    let (_, _, t) = tuple_with_id(&f, 2004);
    let ptr = toast_pointers(&t, &hdr(&t), &f.rel)[0];
    assert_eq!((ptr.extsize, ptr.chunk_count(f.max_chunk)), (4800, 3));
    assert_eq!(ptr.referrer, Referrer::Live);
    let v = ptr.va_valueid;
    assert_eq!(value_items(&f, v).len(), 3);
    let name = f.toast_relname.clone();
    (f, ptr, v, name)
}

fn set(c: &[Code]) -> BTreeSet<Code> {
    c.iter().copied().collect()
}

#[test]
fn toast_chunk_numbers_missing_and_out_of_range() {
    let (f, ptr, v, name) = toast_case();
    let name = &name;
    // chunk_seq 1 -> 5: chunk 1 missing, chunk 5 out of range.
    let (inv, add) = inventory_with(&f, v, |seq, t| {
        if seq == 1 {
            t[28..32].copy_from_slice(&5i32.to_le_bytes());
        }
        true
    });
    assert!(add.is_empty());
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkMissing, Code::ToastChunkUnexpected]));
    // Verified on PostgreSQL 15: the index still files the chunk under 1.
    for p in &p {
        assert_eq!(p.pg_error, format!("unexpected chunk number 5 (expected 1) for toast value {v} in {name}"));
    }

    // Drop the middle chunk, then the last, then all of them.
    let (inv, _) = inventory_with(&f, v, |seq, _| seq != 1);
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkMissing]));
    let (inv, _) = inventory_with(&f, v, |seq, _| seq != 2);
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkMissing]));
    assert_eq!(p[0].pg_error, format!("missing chunk number 2 for toast value {v} in {name}"));
    let (inv, _) = inventory_with(&f, v, |_, _| false);
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastValueMissing]));
    assert_eq!(p[0].pg_error, format!("missing chunk number 0 for toast value {v} in {name}"));
    // ...which a row that may be deleted does not report (VACUUM may have been first).
    let deleted = ToastPointer { referrer: Referrer::MaybeDeleted, ..ptr };
    assert!(inv.check_value(&deleted, f.max_chunk).is_empty());
}

#[test]
fn toast_chunks_the_toast_snapshot_skips() {
    let (f, ptr, v, name) = toast_case();
    let name = &name;
    // One chunk hinted HEAP_XMIN_INVALID: SnapshotToast skips it (both errors verified on PG 15,
    // whose fetch reads past a chunk with only xmax set).
    let xmin_invalid = |t: &mut Vec<u8>| {
        let mut h = hdr(t);
        h.t_infomask = (h.t_infomask & !pgsurgeon_core::format::heap::HEAP_XMIN_COMMITTED)
            | pgsurgeon_core::format::heap::HEAP_XMIN_INVALID;
        h.write(t);
    };
    for (dead_seq, want) in [
        (1, format!("unexpected chunk number 2 (expected 1) for toast value {v} in {name}")),
        (2, format!("missing chunk number 2 for toast value {v} in {name}")),
    ] {
        let (inv, add) = inventory_with(&f, v, |seq, t| {
            if seq == dead_seq {
                xmin_invalid(t);
            }
            true
        });
        assert!(add.is_empty());
        let p = inv.check_value(&ptr, f.max_chunk);
        assert_eq!(codes_v(&p), set(&[Code::ToastChunkMissing]));
        assert_eq!(p[0].pg_error, want);
    }
}

#[test]
fn toast_chunk_sizes_and_headers() {
    let (f, ptr, v, name) = toast_case();
    let name = &name;
    // chunk_data one byte shorter (4-byte length word - 1): a size error, nothing at add time
    // (the tuple still ends inside its MAXALIGN padding).
    let (inv, add) = inventory_with(&f, v, |seq, t| {
        if seq == 0 {
            let w = u32::from_le_bytes(t[32..36].try_into().unwrap());
            t[32..36].copy_from_slice(&(w - (1 << 2)).to_le_bytes());
        }
        true
    });
    assert!(add.is_empty(), "{add:?}");
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkSize]));
    assert_eq!(
        p[0].pg_error,
        format!("unexpected chunk size 1995 (expected 1996) in chunk 0 of 3 for toast value {v} in {name}")
    );

    // chunk_data header marked compressed-inline (low bits 10).
    let (inv, add) = inventory_with(&f, v, |seq, t| {
        if seq == 2 {
            t[32] |= 0x02;
        }
        true
    });
    assert_eq!(codes_v(&add), set(&[Code::ToastChunkHeader]));
    assert_eq!(add[0].pg_error, format!("found toasted toast chunk for toast value {v} in {name}"));
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkHeader]));

    // chunk_data starting with 0x01: read as a short varlena of size -1 (verified on PG 15).
    let (inv, add) = inventory_with(&f, v, |seq, t| {
        if seq == 2 {
            t[32] = 0x01;
        }
        true
    });
    assert_eq!(codes_v(&add), set(&[Code::ToastChunkSize]));
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkSize]));
    assert_eq!(
        p[0].pg_error,
        format!("unexpected chunk size -1 (expected 808) in chunk 2 of 3 for toast value {v} in {name}")
    );
}

#[test]
fn toast_duplicates_and_aborted_inserts() {
    let (f, ptr, v, name) = toast_case();
    let name = &name;
    // A live duplicate of chunk 1 is reported; a deleted copy next to a live one is not.
    let mut inv = inventory(&f);
    let dup = value_items(&f, v).remove(1);
    inv.add_tuple(7, 1, &dup.2, &hdr(&dup.2));
    let p = inv.check_value(&ptr, f.max_chunk);
    assert_eq!(codes_v(&p), set(&[Code::ToastChunkUnexpected]));
    assert_eq!(p[0].pg_error, format!("unexpected chunk number 1 (expected 2) for toast value {v} in {name}"));
    let mut inv = inventory(&f);
    let mut dead = dup.2.clone();
    let mut h = hdr(&dead);
    h.t_xmax = h.t_xmin + 1;
    h.t_infomask &= !pgsurgeon_core::format::heap::HEAP_XMAX_INVALID;
    h.write(&mut dead);
    inv.add_tuple(7, 1, &dead, &hdr(&dead));
    assert!(inv.check_value(&ptr, f.max_chunk).is_empty());
    // Chunks of an aborted insert (HEAP_XMIN_INVALID) are invisible to the TOAST snapshot.
    let (inv, _) = inventory_with(&f, v, |_, t| {
        let mut h = hdr(t);
        h.t_infomask = (h.t_infomask & !pgsurgeon_core::format::heap::HEAP_XMIN_COMMITTED)
            | pgsurgeon_core::format::heap::HEAP_XMIN_INVALID;
        h.write(t);
        true
    });
    let committed = ToastPointer { referrer_xmin_committed: true, ..ptr };
    assert_eq!(codes_v(&inv.check_value(&committed, f.max_chunk)), set(&[Code::ToastValueMissing]));
}

#[test]
fn toast_inventories_merge() {
    let (f, ptr, _, _) = toast_case();
    // Merging per-worker inventories gives the same answers as one inventory.
    let all = items(&f.toast);
    let (a, b) = all.split_at(all.len() / 2);
    let mut inv = ChunkInventory::new(f.toast_relname.clone(), f.max_chunk);
    let mut other = ChunkInventory::new(f.toast_relname.clone(), f.max_chunk);
    for (blk, lp, t) in a {
        inv.add_tuple(*blk, *lp, t, &hdr(t));
    }
    for (blk, lp, t) in b {
        other.add_tuple(*blk, *lp, t, &hdr(t));
    }
    inv.merge(other);
    assert_eq!(inv.chunk_count(), all.len() as u64);
    assert!(inv.check_value(&ptr, f.max_chunk).is_empty());
}
