//! Attribute walking and TOAST checks on hand-built tuples: one test per rule and per finding
//! code, with the layouts heap_form_tuple produces.

use pgsurgeon_core::finding::Code;
use std::collections::BTreeSet;

use pgsurgeon_core::finding::{Area, Severity};
use pgsurgeon_core::format::bytes::maxalign;
use pgsurgeon_core::format::compress::pglz_decompress;
use pgsurgeon_core::format::heap::{
    bitmaplen, HeapTupleHeaderData, ItemPointerData, HEAP_HASEXTERNAL, HEAP_HASNULL, HEAP_HASVARWIDTH,
    HEAP_XMAX_INVALID, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID,
};
use pgsurgeon_core::format::toast::{ChunkInventory, TOAST_MAX_CHUNK_SIZE_8K};
use pgsurgeon_core::format::tuple::{
    toast_pointers, walk_attributes, walk_attributes_with, AttrDesc, Referrer, RelDesc, ToastPointer, VarlenaKind,
    WalkOptions,
};

const TOAST_RELID: u32 = 16400;

fn rel(atts: &[(i16, u8)]) -> RelDesc {
    RelDesc {
        natts: atts.len() as u16,
        attrs: atts
            .iter()
            .enumerate()
            .map(|(i, &(attlen, attalign))| AttrDesc {
                attnum: i as i16 + 1,
                attlen,
                attalign,
                attbyval: attlen > 0 && attlen <= 8,
                attisdropped: false,
                typname: String::new(),
                attstorage: if attlen == -1 { b'x' } else { b'p' },
            })
            .collect(),
        has_toast: true,
        toast_relid: TOAST_RELID,
    }
}

fn header(natts: u16, infomask: u16, hoff: usize) -> HeapTupleHeaderData {
    HeapTupleHeaderData {
        t_xmin: 700,
        t_xmax: 0,
        t_field3: 0,
        t_ctid: ItemPointerData { block: 0, offset: 1 },
        t_infomask2: natts,
        t_infomask: infomask | HEAP_XMAX_INVALID | HEAP_XMIN_COMMITTED,
        t_hoff: hoff as u8,
    }
}

/// A tuple as heap_form_tuple lays it out; `nulls` gives the not-null bits (low bit first).
fn tuple(natts: u16, infomask: u16, nulls: Option<&[u8]>, data: &[u8]) -> Vec<u8> {
    let bitmap = if nulls.is_some() { bitmaplen(natts) } else { 0 };
    let hoff = maxalign(23 + bitmap);
    let mut t = vec![0u8; hoff];
    let mut m = infomask;
    if nulls.is_some() {
        m |= HEAP_HASNULL;
    }
    header(natts, m, hoff).write(&mut t);
    if let Some(bits) = nulls {
        t[23..23 + bits.len()].copy_from_slice(bits);
    }
    t.extend_from_slice(data);
    t
}

fn h(t: &[u8]) -> HeapTupleHeaderData {
    HeapTupleHeaderData::parse(t).unwrap()
}

fn codes(t: &[u8], r: &RelDesc) -> Vec<Code> {
    let full = walk_attributes(t, &h(t), r);
    let lean = walk_attributes_with(t, &h(t), r, &WalkOptions { record_spans: false, ..WalkOptions::default() });
    assert_eq!(full.problems, lean.problems, "a walk without spans finds the same problems");
    assert_eq!(full.toast_pointers, lean.toast_pointers);
    assert!(lean.spans.is_empty());
    full.problems.iter().map(|p| p.code).collect()
}

fn short(s: &[u8]) -> Vec<u8> {
    let mut v = vec![((s.len() + 1) << 1 | 1) as u8];
    v.extend_from_slice(s);
    v
}

fn long4(s: &[u8]) -> Vec<u8> {
    let mut v = (((s.len() + 4) as u32) << 2).to_le_bytes().to_vec();
    v.extend_from_slice(s);
    v
}

fn pointer(rawsize: i32, extinfo: u32, valueid: u32, toastrelid: u32) -> Vec<u8> {
    let mut v = vec![0x01, 18];
    v.extend_from_slice(&rawsize.to_le_bytes());
    v.extend_from_slice(&extinfo.to_le_bytes());
    v.extend_from_slice(&valueid.to_le_bytes());
    v.extend_from_slice(&toastrelid.to_le_bytes());
    v
}

/// A pglz stream of `n` copies of `b`: a literal then one long match per 273 bytes.
fn pglz_repeat(b: u8, n: usize) -> Vec<u8> {
    assert!(n >= 4);
    let mut out = Vec::new();
    let mut items: Vec<Vec<u8>> = vec![vec![b]];
    let mut left = n - 1;
    while left > 0 {
        let len = left.min(273);
        if len < 3 {
            for _ in 0..len {
                items.push(vec![b]);
            }
            break;
        }
        if len >= 18 {
            items.push(vec![0x0f, 0x01, (len - 18) as u8]);
        } else {
            items.push(vec![(len - 3) as u8, 0x01]);
        }
        left -= len;
    }
    for group in items.chunks(8) {
        let mut ctrl = 0u8;
        for (i, it) in group.iter().enumerate() {
            if it.len() > 1 {
                ctrl |= 1 << i;
            }
        }
        out.push(ctrl);
        for it in group {
            out.extend_from_slice(it);
        }
    }
    out
}

fn compressed(method: u32, rawsize: u32, stream: &[u8]) -> Vec<u8> {
    let mut v = ((((stream.len() + 8) as u32) << 2) | 2).to_le_bytes().to_vec();
    v.extend_from_slice(&(rawsize | method << 30).to_le_bytes());
    v.extend_from_slice(stream);
    v
}

#[test]
fn fixed_attributes_align_nominally() {
    // int2, int8 ('d'), bool, int4: 2 + pad 6 + 8 + 1 + pad 3 + 4 = 24 bytes.
    let r = rel(&[(2, b's'), (8, b'd'), (1, b'c'), (4, b'i')]);
    let mut data = vec![0u8; 24];
    data[0] = 7;
    data[8] = 9;
    data[16] = 1;
    data[20] = 5;
    let t = tuple(4, 0, None, &data);
    let w = walk_attributes(&t, &h(&t), &r);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    let offs: Vec<_> = w.spans.iter().map(|s| (s.offset - 24, s.len)).collect();
    assert_eq!(offs, vec![(0, 2), (8, 8), (16, 1), (20, 4)]);
    assert_eq!(w.data_end, t.len());
}

#[test]
fn varlena_alignment_follows_att_align_pointer() {
    // bool, then a short varlena right after it (nonzero byte: no alignment), then a 4-byte
    // header varlena after zero padding to the 4-byte boundary.
    let r = rel(&[(1, b'c'), (-1, b'i'), (-1, b'i')]);
    let mut data = vec![1u8];
    data.extend(short(b"abc")); // at 1..5
    data.extend([0u8; 3]); // pad to 8
    data.extend(long4(&[b'z'; 200])); // at 8
    let t = tuple(3, HEAP_HASVARWIDTH, None, &data);
    let w = walk_attributes(&t, &h(&t), &r);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert_eq!((w.spans[1].offset - 24, w.spans[1].len), (1, 4));
    assert_eq!(w.spans[1].varlena, Some(VarlenaKind::Short));
    assert_eq!(w.spans[1].payload(&t).unwrap(), b"abc");
    assert_eq!((w.spans[2].offset - 24, w.spans[2].len), (8, 204));
    assert_eq!(w.spans[2].varlena, Some(VarlenaKind::Plain));

    // A TOAST pointer is stored unaligned too.
    let mut data = vec![1u8];
    data.extend(pointer(5004, 5000, 77, TOAST_RELID));
    let r2 = rel(&[(1, b'c'), (-1, b'i')]);
    let t = tuple(2, HEAP_HASVARWIDTH | HEAP_HASEXTERNAL, None, &data);
    let w = walk_attributes(&t, &h(&t), &r2);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert_eq!(w.spans[1].offset - 24, 1);
    assert_eq!(w.toast_pointers.len(), 1);
    let p = w.toast_pointers[0];
    assert_eq!((p.extsize, p.va_valueid, p.is_compressed, p.referrer), (5000, 77, false, Referrer::Live));
    assert_eq!(toast_pointers(&t, &h(&t), &r2), vec![p]);

    // A 4-byte header met at an unaligned offset (a nonzero byte where padding belongs).
    let mut data = vec![1u8];
    data.extend(long4(b"0123456789")); // at 1: header byte 0x38 is even and nonzero
    let t = tuple(2, HEAP_HASVARWIDTH, None, &data);
    assert_eq!(codes(&t, &r2), vec![Code::TupleDataVarlenaBadHeader]);
}

#[test]
fn cstrings_run_to_their_nul() {
    let r = rel(&[(-2, b'c'), (4, b'i')]);
    let mut data = b"hello\0".to_vec();
    data.extend([0, 0]);
    data.extend(42i32.to_le_bytes());
    let t = tuple(2, HEAP_HASVARWIDTH, None, &data);
    let w = walk_attributes(&t, &h(&t), &r);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert_eq!((w.spans[0].len, w.spans[1].offset - 24), (6, 8));
    let t = tuple(1, HEAP_HASVARWIDTH, None, b"no terminator");
    assert_eq!(codes(&t, &rel(&[(-2, b'c')])), vec![Code::TupleDataAttrPastEnd]);
}

#[test]
fn nulls_and_missing_attributes_take_no_space() {
    let r = rel(&[(4, b'i'), (8, b'd'), (4, b'i'), (-1, b'i'), (4, b'i')]);
    // natts 4 of 5; attribute 2 is NULL (bit 1 clear).
    let mut data = 1i32.to_le_bytes().to_vec();
    data.extend(3i32.to_le_bytes());
    data.extend(short(b"x"));
    let t = tuple(4, HEAP_HASVARWIDTH, Some(&[0b1101]), &data);
    let w = walk_attributes(&t, &h(&t), &r);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    let flags: Vec<_> = w.spans.iter().map(|s| (s.is_null, s.missing)).collect();
    assert_eq!(flags, vec![(false, false), (true, false), (false, false), (false, false), (false, true)]);
    assert_eq!(w.spans[2].offset, t.len() - 6);
    // Bitmap bits beyond the tuple read as not null: the attribute then starts past the end.
    let mut short_t = t[..23].to_vec();
    let mut hd = h(&t);
    hd.t_hoff = 24;
    hd.write(&mut short_t);
    let w = walk_attributes(&short_t, &hd, &r);
    assert_eq!(w.problems.iter().map(|p| p.code).collect::<Vec<_>>(), vec![Code::TupleDataAttrPastEnd]);
    assert!(w.stopped);
}

#[test]
fn natts_beyond_the_relation() {
    let r = rel(&[(4, b'i')]);
    let mut data = 1i32.to_le_bytes().to_vec();
    data.extend(2i32.to_le_bytes());
    let t = tuple(2, 0, None, &data);
    // The extra attribute's bytes are not "trailing": they belong to attribute 2.
    assert_eq!(codes(&t, &r), vec![Code::TupleDataNattsGtRelation]);
}

#[test]
fn past_end_and_trailing_bytes() {
    let r = rel(&[(4, b'i'), (-1, b'i')]);
    let mut data = 1i32.to_le_bytes().to_vec();
    data.extend(short(b"abcdef"));
    let t = tuple(2, HEAP_HASVARWIDTH, None, &data);
    assert!(codes(&t, &r).is_empty());
    // Zero padding up to MAXALIGN is fine; a whole extra word is not.
    let mut padded = t.clone();
    padded.resize(maxalign(t.len()), 0);
    assert!(codes(&padded, &r).is_empty());
    let mut extra = padded.clone();
    extra.extend([0u8; 8]);
    assert_eq!(codes(&extra, &r), vec![Code::TupleDataTrailingBytes]);
    // Short header longer than the rest of the tuple.
    let mut bad = t.clone();
    bad[28] = (20 << 1) | 1;
    assert_eq!(codes(&bad, &r), vec![Code::TupleDataAttrPastEnd]);
    // A fixed attribute cut short, and t_hoff beyond the tuple.
    assert_eq!(codes(&t[..26], &r), vec![Code::TupleDataAttrPastEnd]);
    let mut far = t.clone();
    far[22] = 200;
    assert_eq!(codes(&far, &r), vec![Code::TupleDataAttrPastEnd]);
    // 4-byte header itself cut off.
    let r2 = rel(&[(-1, b'i')]);
    let t2 = tuple(1, HEAP_HASVARWIDTH, None, &[0x40, 0, 0]);
    assert_eq!(codes(&t2, &r2), vec![Code::TupleDataAttrPastEnd]);
}

#[test]
fn bad_varlena_headers() {
    let r = rel(&[(-1, b'i'), (4, b'i')]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        ((2u32 << 2).to_le_bytes().to_vec(), "less than its own 4-byte header"),
        (((6u32 << 2) | 2).to_le_bytes().to_vec(), "less than its own 8-byte header"),
        (vec![0x01, 1, 0, 0, 0, 0, 0, 0, 0, 0], "in-memory TOAST pointer tag 1"),
        (vec![0x01, 3, 0, 0, 0, 0, 0, 0, 0, 0], "in-memory TOAST pointer tag 3"),
        (vec![0x01, 7, 0, 0, 0, 0, 0, 0, 0, 0], "unknown TOAST tag 7"),
    ];
    for (bytes, what) in cases {
        let mut data = bytes.clone();
        data.resize(16, 0xAA);
        let t = tuple(2, HEAP_HASVARWIDTH, None, &data);
        let w = walk_attributes(&t, &h(&t), &r);
        assert_eq!(w.problems.len(), 1, "{what}: {:?}", w.problems);
        assert_eq!(w.problems[0].code, Code::TupleDataVarlenaBadHeader);
        assert!(w.problems[0].message.contains(what), "{what}: {}", w.problems[0].message);
        assert!(w.stopped);
    }
}

#[test]
fn compressed_inline_values() {
    let r = rel(&[(-1, b'i')]);
    let stream = pglz_repeat(b'x', 5000);
    assert_eq!(pglz_decompress(&stream, 5000).unwrap(), vec![b'x'; 5000]);
    let ok = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 5000, &stream));
    let w = walk_attributes(&ok, &h(&ok), &r);
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert_eq!(w.spans[0].varlena, Some(VarlenaKind::Compressed { rawsize: 5000, method: 0 }));

    let pg = |t: &[u8]| {
        let w = walk_attributes(t, &h(t), &r);
        assert_eq!(w.problems.len(), 1, "{:?}", w.problems);
        assert_eq!(w.problems[0].code, Code::TupleDataCompressedBad);
        w.problems[0].pg_error.clone()
    };
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(2, 5000, &stream));
    assert_eq!(pg(&t), "invalid compression method id 2");
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(3, 5000, &stream));
    assert_eq!(pg(&t), "invalid compression method id 3");
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 0x3FFF_FFFC, &stream));
    assert_eq!(pg(&t), "invalid memory alloc request size 1073741824");
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 0x3FFF_FFFB, &stream));
    assert_eq!(pg(&t), "compressed pglz data is corrupt");
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 5001, &stream));
    assert_eq!(pg(&t), "compressed pglz data is corrupt");
    // Like pglz_decompress, a final match cut at the raw size with the input consumed is accepted.
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 4999, &stream));
    assert!(codes(&t, &r).is_empty());
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(1, 5000, &stream));
    assert_eq!(pg(&t), "compressed lz4 data is corrupt");
    // Without verification only the header checks run.
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(0, 5001, &stream));
    let w = walk_attributes_with(&t, &h(&t), &r, &WalkOptions { verify_compressed: false, ..WalkOptions::default() });
    assert!(w.problems.is_empty());
    // lz4: a literal-only block shorter than va_tcinfo's size reads silently short.
    let lz = [0x50, b'h', b'e', b'l', b'l', b'o'];
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(1, 5, &lz));
    assert!(codes(&t, &r).is_empty());
    let t = tuple(1, HEAP_HASVARWIDTH, None, &compressed(1, 9, &lz));
    assert!(pg(&t).starts_with("none: the value is silently 5 bytes long"));
}

fn pointer_tuple(p: Vec<u8>, infomask: u16) -> Vec<u8> {
    tuple(1, HEAP_HASVARWIDTH | infomask, None, &p)
}

#[test]
fn toast_pointer_checks() {
    let r = rel(&[(-1, b'i')]);
    let good = pointer_tuple(pointer(6404, 6400, 500, TOAST_RELID), HEAP_HASEXTERNAL);
    assert!(codes(&good, &r).is_empty());
    let compressed_ok = pointer_tuple(pointer(10004, 3000, 500, TOAST_RELID), HEAP_HASEXTERNAL);
    assert!(codes(&compressed_ok, &r).is_empty());
    let lz4_ok = pointer_tuple(pointer(10004, 3000 | 1 << 30, 500, TOAST_RELID), HEAP_HASEXTERNAL);
    assert!(codes(&lz4_ok, &r).is_empty());
    let p = toast_pointers(&lz4_ok, &h(&lz4_ok), &r)[0];
    assert_eq!((p.is_compressed, p.compression_method, p.chunk_count(1996)), (true, 1, 2));

    let bad = [
        (pointer(6404, 6400, 500, 777), "could not open relation with OID 777"),
        (pointer(6404, 0, 500, TOAST_RELID), "compressed pglz data is corrupt"),
        (pointer(4, 0, 500, TOAST_RELID), "none: the value reads as empty"),
        (pointer(6404, 6400, 0, TOAST_RELID), "missing chunk number 0 for toast value 0"),
        (pointer(0x4000_0000, 6400, 500, TOAST_RELID), "the fetched bytes are decompressed as if compressed"),
        (pointer(6404, 6500, 500, TOAST_RELID), "unexpected chunk size"),
        (pointer(6404, 6400 | 1 << 30, 500, TOAST_RELID), "none: the bits are ignored"),
        (pointer(10004, 3000 | 2 << 30, 500, TOAST_RELID), "none on a full read"),
        (pointer(10004, 3000 | 3 << 30, 500, TOAST_RELID), "invalid compression method id 3"),
        (pointer(10004, 0x3FFF_FFFF, 500, TOAST_RELID), "invalid memory alloc request size 1073741827"),
    ];
    for (p, want) in bad {
        let t = pointer_tuple(p, HEAP_HASEXTERNAL);
        let w = walk_attributes(&t, &h(&t), &r);
        assert_eq!(w.problems.len(), 1, "{want}: {:?}", w.problems);
        assert_eq!(w.problems[0].code, Code::ToastPointerBad);
        assert!(w.problems[0].pg_error.contains(want), "{want}: {:?}", w.problems[0]);
        // The pointer is still returned for the value checks.
        assert_eq!(w.toast_pointers.len(), 1);
    }

    let no_flag = pointer_tuple(pointer(6404, 6400, 500, TOAST_RELID), 0);
    assert_eq!(codes(&no_flag, &r), vec![Code::ToastFlagMissing]);
    let mut no_toast = r.clone();
    no_toast.has_toast = false;
    no_toast.toast_relid = 0;
    assert_eq!(codes(&good, &no_toast), vec![Code::ToastFlagMissing]);
    // A pointer cut off by the end of the tuple.
    assert_eq!(codes(&good[..good.len() - 1], &r), vec![Code::TupleDataAttrPastEnd]);
}

#[test]
fn referrer_state_from_the_header() {
    let r = rel(&[(-1, b'i')]);
    let t = pointer_tuple(pointer(6404, 6400, 500, TOAST_RELID), HEAP_HASEXTERNAL);
    let mut hd = h(&t);
    assert_eq!(Referrer::of(&hd), Referrer::Live);
    hd.t_xmax = 900;
    hd.t_infomask &= !HEAP_XMAX_INVALID;
    assert_eq!(Referrer::of(&hd), Referrer::MaybeDeleted);
    hd.t_infomask |= pgsurgeon_core::format::heap::HEAP_XMAX_LOCK_ONLY;
    assert_eq!(Referrer::of(&hd), Referrer::Live);
    hd.t_infomask = (hd.t_infomask & !HEAP_XMIN_COMMITTED) | HEAP_XMIN_INVALID;
    assert_eq!(Referrer::of(&hd), Referrer::XminAborted);
    hd.t_infomask |= HEAP_XMIN_COMMITTED; // frozen
    assert_eq!(Referrer::of(&hd), Referrer::Live);
    let p = toast_pointers(&t, &hd, &r)[0];
    assert!(p.referrer_xmin_committed);
}

/// A TOAST chunk tuple: chunk_id, chunk_seq, chunk_data with a 4-byte header.
fn chunk(valueid: u32, seq: i32, len: usize, infomask: u16) -> Vec<u8> {
    let mut data = valueid.to_le_bytes().to_vec();
    data.extend(seq.to_le_bytes());
    data.extend(long4(&vec![0xAB; len]));
    tuple(3, HEAP_HASVARWIDTH | infomask, None, &data)
}

fn add(inv: &mut ChunkInventory, blk: u32, lp: u16, t: &[u8]) -> Vec<Code> {
    inv.add_tuple(blk, lp, t, &h(t)).iter().map(|p| p.code).collect()
}

fn ptr(valueid: u32, extsize: u32) -> ToastPointer {
    let r = rel(&[(-1, b'i')]);
    let t = pointer_tuple(pointer(extsize as i32 + 4, extsize, valueid, TOAST_RELID), HEAP_HASEXTERNAL);
    toast_pointers(&t, &h(&t), &r)[0]
}

fn check(inv: &ChunkInventory, p: &ToastPointer) -> BTreeSet<Code> {
    inv.check_value(p, TOAST_MAX_CHUNK_SIZE_8K).iter().map(|p| p.code).collect()
}

fn set(c: &[Code]) -> BTreeSet<Code> {
    c.iter().copied().collect()
}

#[test]
fn chunk_inventory_rules() {
    let m = TOAST_MAX_CHUNK_SIZE_8K as usize;
    let mut inv = ChunkInventory::new("pg_toast_1", TOAST_MAX_CHUNK_SIZE_8K);
    // value 10: 4000 bytes = 1996 + 1996 + 8.
    for (i, len) in [m, m, 8].into_iter().enumerate() {
        assert!(add(&mut inv, 0, i as u16 + 1, &chunk(10, i as i32, len, 0)).is_empty());
    }
    assert!(check(&inv, &ptr(10, 4000)).is_empty());
    assert_eq!(check(&inv, &ptr(11, 4000)), set(&[Code::ToastValueMissing]));
    // Pointer sizes that disagree with the chunks.
    assert_eq!(check(&inv, &ptr(10, 4001)), set(&[Code::ToastChunkSize]));
    assert_eq!(check(&inv, &ptr(10, 3000)), set(&[Code::ToastChunkSize, Code::ToastChunkUnexpected]));
    let p = inv.check_value(&ptr(10, 3000), TOAST_MAX_CHUNK_SIZE_8K);
    assert!(p
        .iter()
        .any(|p| p.pg_error == "unexpected chunk number 2 (out of range 0..1) for toast value 10 in pg_toast_1"));
    assert_eq!(check(&inv, &ptr(10, 9000)), set(&[Code::ToastChunkSize, Code::ToastChunkMissing]));

    // Oversized chunk, NULL chunk_data, compressed chunk_data, unreadable chunk_id.
    let mut inv2 = ChunkInventory::new("", TOAST_MAX_CHUNK_SIZE_8K);
    assert_eq!(add(&mut inv2, 1, 1, &chunk(20, 0, m + 1, 0)), vec![Code::ToastChunkSize]);
    let mut data = 21u32.to_le_bytes().to_vec();
    data.extend(0i32.to_le_bytes());
    let null_data = tuple(3, HEAP_HASVARWIDTH, Some(&[0b011]), &data);
    assert_eq!(add(&mut inv2, 1, 2, &null_data), vec![Code::ToastChunkHeader]);
    assert_eq!(check(&inv2, &ptr(21, 100)), set(&[Code::ToastChunkHeader]));
    let mut comp = chunk(22, 0, 100, 0);
    comp[32] |= 2;
    assert_eq!(add(&mut inv2, 1, 3, &comp), vec![Code::ToastChunkHeader]);
    assert_eq!(check(&inv2, &ptr(22, 100)), set(&[Code::ToastChunkHeader]));
    let no_id = tuple(3, HEAP_HASVARWIDTH, Some(&[0b000]), &[]);
    assert_eq!(add(&mut inv2, 1, 4, &no_id), vec![Code::ToastChunkHeader]);
    // A damaged chunk tuple reports the walk's code.
    let cut = chunk(23, 0, 100, 0);
    assert_eq!(add(&mut inv2, 1, 5, &cut[..60]), vec![Code::TupleDataAttrPastEnd]);
    assert_eq!(check(&inv2, &ptr(23, 100)), set(&[Code::ToastChunkHeader]));

    // Negative and duplicate sequence numbers.
    let mut inv3 = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
    add(&mut inv3, 0, 1, &chunk(30, -1, 10, 0));
    add(&mut inv3, 0, 2, &chunk(30, 0, 10, 0));
    assert_eq!(check(&inv3, &ptr(30, 10)), set(&[Code::ToastChunkUnexpected]));
    let p = inv3.check_value(&ptr(30, 10), TOAST_MAX_CHUNK_SIZE_8K);
    assert_eq!(p[0].pg_error, "unexpected chunk number -1 (expected 0) for toast value 30 in t");
    let mut inv4 = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
    add(&mut inv4, 0, 1, &chunk(31, 0, 10, 0));
    add(&mut inv4, 0, 2, &chunk(31, 0, 10, 0));
    assert_eq!(check(&inv4, &ptr(31, 10)), set(&[Code::ToastChunkUnexpected]));
}

#[test]
fn liveness_rules_avoid_false_alarms() {
    let mut inv = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
    // Live chunk 0 plus a deleted copy: no duplicate.
    add(&mut inv, 0, 1, &chunk(40, 0, 10, 0));
    let mut dead = chunk(40, 0, 10, 0);
    let mut hd = h(&dead);
    hd.t_xmax = 800;
    hd.t_infomask &= !HEAP_XMAX_INVALID;
    hd.write(&mut dead);
    add(&mut inv, 0, 2, &dead);
    assert!(check(&inv, &ptr(40, 10)).is_empty());
    // Only deleted chunks (the row's deleter aborted, say) still make a complete value.
    let mut only_dead = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
    add(&mut only_dead, 0, 1, &dead);
    assert!(check(&only_dead, &ptr(40, 10)).is_empty());

    // A row that may be deleted: absent chunks are not reported, wrong sizes are.
    let mut p = ptr(41, 4000);
    p.referrer = Referrer::MaybeDeleted;
    assert!(check(&inv, &p).is_empty());
    add(&mut inv, 0, 4, &chunk(41, 2, 9, 0));
    assert_eq!(check(&inv, &p), set(&[Code::ToastChunkSize]));
    // An aborted inserter: nothing is checked.
    p.referrer = Referrer::XminAborted;
    assert!(check(&inv, &p).is_empty());

    // Chunks of an aborted insert: invisible to the TOAST snapshot. Missing for a committed
    // row; judged as they are for a row whose own xmin is not known committed.
    let mut inv2 = ChunkInventory::new("t", TOAST_MAX_CHUNK_SIZE_8K);
    let mut ab = chunk(42, 0, 10, 0);
    let mut hd = h(&ab);
    hd.t_infomask = (hd.t_infomask & !HEAP_XMIN_COMMITTED) | HEAP_XMIN_INVALID;
    hd.write(&mut ab);
    add(&mut inv2, 0, 1, &ab);
    let p = ptr(42, 10);
    assert!(p.referrer_xmin_committed);
    assert_eq!(check(&inv2, &p), set(&[Code::ToastValueMissing]));
    let unhinted = ToastPointer { referrer_xmin_committed: false, ..p };
    assert!(check(&inv2, &unhinted).is_empty());
}

#[test]
fn problems_become_findings_with_the_catalogue() {
    let all = [
        Code::TupleDataNattsGtRelation,
        Code::TupleDataAttrPastEnd,
        Code::TupleDataVarlenaBadHeader,
        Code::TupleDataCompressedBad,
        Code::TupleDataTrailingBytes,
        Code::ToastPointerBad,
        Code::ToastFlagMissing,
        Code::ToastValueMissing,
        Code::ToastChunkMissing,
        Code::ToastChunkUnexpected,
        Code::ToastChunkSize,
        Code::ToastChunkHeader,
    ];
    for code in all {
        let d = code.info();
        let area = if code.as_str().starts_with("toast.") { Area::Toast } else { Area::TupleData };
        assert_eq!(d.area, area, "{code}");
        assert_eq!(d.severity, Severity::Error, "{code}");
        assert!(!d.pg_error.is_empty() && !d.remedy.is_empty(), "{code}");
    }
    let r = rel(&[(-1, b'i')]);
    let t = pointer_tuple(pointer(6404, 6400, 500, TOAST_RELID), 0);
    let w = walk_attributes(&t, &h(&t), &r);
    let f = w.problems[0].to_finding(Some(3), Some(7));
    assert_eq!((f.code, f.area, f.block, f.item), (Code::ToastFlagMissing, Area::Toast, Some(3), Some(7)));
    assert!(f.message.contains("HEAP_HASEXTERNAL"));
    let inv = ChunkInventory::new("pg_toast_9", TOAST_MAX_CHUNK_SIZE_8K);
    let p = inv.check_value(&w.toast_pointers[0], TOAST_MAX_CHUNK_SIZE_8K);
    let f = p[0].to_finding(Some(3), Some(7));
    assert_eq!(f.code, Code::ToastValueMissing);
    assert!(f.message.contains("missing chunk number 0 for toast value 500 in pg_toast_9"));
}
