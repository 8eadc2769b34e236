use super::heap::{varlena_columns, Varlena, VarlenaKind};
use super::*;
use crate::format::btree::BT_SPECIAL_SIZE;
use crate::format::bytes::u32_at;
use crate::format::checksum::pg_checksum_page;
use crate::format::heap::{
    HeapTupleHeaderData, ItemPointerData, HEAP_XMAX_INVALID, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID,
};
use crate::format::itemid::{ItemIdData, LP_NORMAL};
use crate::format::page::{Page, Verification, BLCKSZ, PG_PAGE_LAYOUT_VERSION};

/// A heap page with `n` 40-byte tuples (3 int4 columns, t_hoff 24), checksummed as block 7.
fn heap_page(n: u16) -> Vec<u8> {
    let mut p = vec![0u8; BLCKSZ];
    let mut upper = BLCKSZ;
    for i in 0..n {
        upper -= 40;
        let h = HeapTupleHeaderData {
            t_xmin: 700 + u32::from(i),
            t_xmax: 0,
            t_field3: 0,
            t_ctid: ItemPointerData { block: 7, offset: i + 1 },
            t_infomask2: 3,
            t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID,
            t_hoff: 24,
        };
        h.write(&mut p[upper..]);
        for c in 0..3u32 {
            let at = upper + 24 + 4 * c as usize;
            p[at..at + 4].copy_from_slice(&(u32::from(i) * 10 + c).to_le_bytes());
        }
        let lp = ItemIdData::new(upper as u16, LP_NORMAL, 36);
        let at = 24 + usize::from(i) * 4;
        p[at..at + 4].copy_from_slice(&lp.0.to_le_bytes());
    }
    let h = PageHeaderData {
        pd_lower: 24 + 4 * n,
        pd_upper: upper as u16,
        pd_special: BLCKSZ as u16,
        pd_pagesize_version: BLCKSZ as u16 | u16::from(PG_PAGE_LAYOUT_VERSION),
        ..Default::default()
    };
    h.write(&mut p);
    set_checksum(&mut p, 7);
    p
}

fn spec(mode: &str, field: Option<&str>) -> DamageSpec {
    DamageSpec { mode: mode.to_string(), field: field.map(str::to_string), ..Default::default() }
}

fn apply_changes(page: &[u8], inj: &Injection) -> Vec<u8> {
    let mut out = page.to_vec();
    for c in &inj.changes {
        assert_eq!(&out[c.offset..c.offset + c.old.len()], c.old.as_slice());
        out[c.offset..c.offset + c.new.len()].copy_from_slice(&c.new);
    }
    out
}

#[test]
fn rng_is_deterministic_and_streams_differ() {
    let a: Vec<u64> = (0..4).map(|_| Rng::new(42, 0).next_u64()).collect();
    assert!(a.windows(2).all(|w| w[0] == w[1]));
    assert_ne!(Rng::new(42, 0).next_u64(), Rng::new(42, 1).next_u64());
    assert_ne!(Rng::new(42, 0).next_u64(), Rng::new(43, 0).next_u64());
    let mut r = Rng::new(1, 2);
    for _ in 0..1000 {
        assert!(r.below(10) < 10);
        assert!((5..=9).contains(&r.between(5, 9)));
        assert_ne!(r.other_than(2, 3), 3);
    }
}

#[test]
fn diff_merges_close_runs() {
    let old = vec![0u8; 32];
    let mut new = old.clone();
    new[3] = 1;
    new[6] = 1; // gap of 2: merged
    new[20] = 1; // far: separate
    let d = diff(&old, &new);
    assert_eq!(d.len(), 2);
    assert_eq!((d[0].offset, d[0].new.len()), (3, 4));
    assert_eq!((d[1].offset, d[1].new.as_slice()), (20, &[1u8][..]));
    assert!(diff(&old, &old).is_empty());
}

#[test]
fn same_seed_same_bytes_and_changes_round_trip() {
    let page = heap_page(5);
    for (mode, field, item) in [
        ("header", Some("random"), None),
        ("header", Some("pd_lower"), None),
        ("item-ids", None, None),
        ("item-id", Some("lp_off"), Some(2)),
        ("tuple-header", Some("random"), Some(3)),
        ("tuple-header", Some("t_ctid"), Some(3)),
        ("tuple-data", Some("random"), Some(1)),
        ("tuple-data", Some("bitflip"), Some(1)),
        ("checksum", None, None),
        ("bitflips", None, None),
        ("zero", None, None),
    ] {
        let mut s = spec(mode, field);
        s.item = item;
        let a = inject_page(&page, 7, &[s.clone()], 99, false, None).unwrap();
        let b = inject_page(&page, 7, &[s.clone()], 99, false, None).unwrap();
        assert_eq!(a.changes, b.changes, "{mode} {field:?}");
        assert!(!a.changes.is_empty(), "{mode} {field:?} changed nothing");
        let c = inject_page(&page, 7, &[s], 100, false, None).unwrap();
        if mode != "zero" {
            assert_ne!(a.changes, c.changes, "{mode} {field:?}: seed ignored");
        }
        assert_ne!(apply_changes(&page, &a), page);
    }
}

#[test]
fn header_fields_and_values() {
    let page = heap_page(3);
    let mut s = spec("header", Some("pd_special"));
    s.value = Some(8080); // still >= pd_upper (8072) and aligned: a sane header
    let inj = inject_page(&page, 7, &[s.clone()], 1, false, None).unwrap();
    let out = apply_changes(&page, &inj);
    assert_eq!(u16_at(&out, 16), Some(8080));
    assert_eq!(inj.notes, vec!["pd_special 8192 -> 8080"]);
    // the stored checksum no longer matches: the server refuses the page when checksums are on
    assert!(matches!(
        Page::new(&out).unwrap().verify(7, true),
        Verification::Invalid { checksum_failure: true, header_sane: true }
    ));
    // with the checksum recomputed only the header rules decide, and 8000 is sane
    let inj = inject_page(&page, 7, &[s.clone()], 1, true, None).unwrap();
    let out = apply_changes(&page, &inj);
    assert_eq!(Page::new(&out).unwrap().verify(7, true), Verification::Valid);
    s.value = Some(70000);
    assert!(inject_page(&page, 7, &[s], 1, false, None).is_err());
    let mut s = spec("header", Some("pd_lsn"));
    s.value = Some(0x1_0000_0002);
    let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
    assert_eq!(&out[0..8], &[1, 0, 0, 0, 2, 0, 0, 0]);
}

#[test]
fn tuple_header_clear_hints() {
    let page = heap_page(2);
    let mut s = spec("tuple-header", Some("t_xmin"));
    s.item = Some(1);
    s.value = Some(3_000_000_000);
    s.clear_hints = true;
    let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
    let off = usize::from(ItemIdData::parse(&out, 24).unwrap().lp_off());
    let h = HeapTupleHeaderData::parse(&out[off..]).unwrap();
    assert_eq!(h.t_xmin, 3_000_000_000);
    assert_eq!(h.t_infomask & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID), 0);
    assert_eq!(h.t_infomask & HEAP_XMAX_INVALID, HEAP_XMAX_INVALID);
    let mut bad = spec("tuple-header", Some("t_hoff"));
    bad.item = Some(1);
    bad.clear_hints = true;
    assert!(inject_page(&page, 7, &[bad], 1, false, None).is_err());
}

#[test]
fn items_must_exist_and_be_tuples() {
    let page = heap_page(2);
    let mut s = spec("tuple-header", Some("t_xmax"));
    s.item = Some(3);
    assert!(inject_page(&page, 7, &[s.clone()], 1, false, None).is_err());
    s.item = None;
    assert!(inject_page(&page, 7, &[s], 1, false, None).is_err());
    let mut t = spec("tuple-header", Some("t_bits"));
    t.item = Some(1);
    assert!(inject_page(&page, 7, &[t], 1, false, None).is_err()); // no HEAP_HASNULL
}

#[test]
fn varlena_walk_finds_columns() {
    // int4, text (short varlena), int8 (aligned), text (4-byte header)
    let mut page = heap_page(1);
    // replace the one tuple by a hand-made one at the page end
    let start = BLCKSZ - 64;
    let mut t = [0u8; 64];
    let h = HeapTupleHeaderData {
        t_xmin: 2,
        t_xmax: 0,
        t_field3: 0,
        t_ctid: ItemPointerData { block: 0, offset: 1 },
        t_infomask2: 4,
        t_infomask: HEAP_XMAX_INVALID,
        t_hoff: 24,
    };
    h.write(&mut t);
    t[24..28].copy_from_slice(&5u32.to_le_bytes()); // int4
    t[28] = (4 << 1) | 1; // short varlena "abc"
    t[29..32].copy_from_slice(b"abc");
    t[32..40].copy_from_slice(&9u64.to_le_bytes()); // int8 at 32 (aligned)
    t[40..44].copy_from_slice(&((10u32) << 2).to_le_bytes()); // 4-byte header, 10 bytes
    t[44..50].copy_from_slice(b"hello!");
    page[start..].copy_from_slice(&t);
    let lp = ItemIdData::new(start as u16, LP_NORMAL, 50);
    page[24..28].copy_from_slice(&lp.0.to_le_bytes());
    let attrs = [
        AttrLayout { attlen: 4, attalign: 'i' },
        AttrLayout { attlen: -1, attalign: 'i' },
        AttrLayout { attlen: 8, attalign: 'd' },
        AttrLayout { attlen: -1, attalign: 'i' },
    ];
    let cols = varlena_columns(&page, start, start + 50, &attrs);
    assert_eq!(
        cols,
        vec![
            Varlena { attnum: 2, at: start + 28, kind: VarlenaKind::Short },
            Varlena { attnum: 4, at: start + 40, kind: VarlenaKind::Long },
        ]
    );
    let mut s = spec("tuple-data", Some("varlena"));
    s.item = Some(1);
    s.attrs = Some(attrs.to_vec());
    s.attnum = Some(4);
    s.value = Some(0x3FFF_FFFF);
    let out = apply_changes(&page, &inject_page(&page, 0, &[s.clone()], 1, false, None).unwrap());
    assert_eq!(u32_at(&out, start + 40), Some(0x3FFF_FFFF << 2));
    s.attnum = Some(2);
    assert!(inject_page(&page, 0, &[s], 1, false, None).is_err()); // 0x3FFFFFFF > 127
}

#[test]
fn checksum_damage_never_matches_and_keep_checksum_refused() {
    let page = heap_page(2);
    for seed in 0..50 {
        let out = apply_changes(&page, &inject_page(&page, 7, &[spec("checksum", None)], seed, false, None).unwrap());
        assert_ne!(pg_checksum_page(&out, 7), u16_at(&out, 8));
    }
    assert!(inject_page(&page, 7, &[spec("checksum", None)], 1, true, None).is_err());
}

#[test]
fn keep_checksum_valid_recomputes_except_new_pages() {
    let page = heap_page(2);
    let mut s = spec("tuple-header", Some("t_infomask"));
    s.item = Some(2);
    let inj = inject_page(&page, 7, &[s], 5, true, None).unwrap();
    assert!(inj.checksum_recomputed);
    let out = apply_changes(&page, &inj);
    assert_eq!(pg_checksum_page(&out, 7), u16_at(&out, 8));
    let inj = inject_page(&page, 7, &[spec("zero", None)], 5, true, None).unwrap();
    assert!(!inj.checksum_recomputed);
    assert!(apply_changes(&page, &inj).iter().all(|b| *b == 0));
}

#[test]
fn torn_and_misdirected_use_the_source() {
    let page = heap_page(2);
    let other = heap_page(9);
    let mut s = spec("torn", None);
    s.tear_at = Some(4096);
    let out = apply_changes(&page, &inject_page(&page, 7, &[s.clone()], 1, false, Some(&other)).unwrap());
    assert_eq!(&out[..4096], &page[..4096]);
    assert_eq!(&out[4096..], &other[4096..]);
    s.tear_at = Some(100);
    assert!(inject_page(&page, 7, &[s], 1, false, Some(&other)).is_err());
    assert!(inject_page(&page, 7, &[spec("torn", None)], 1, false, None).is_err());
    let out =
        apply_changes(&page, &inject_page(&page, 7, &[spec("misdirected", None)], 1, false, Some(&other)).unwrap());
    assert_eq!(out, other);
}

#[test]
fn bitflips_flip_exactly_n_bits() {
    let page = heap_page(2);
    let mut s = spec("bitflips", None);
    s.flips = Some(5);
    let out = apply_changes(&page, &inject_page(&page, 7, &[s], 3, false, None).unwrap());
    let flipped: u32 = page.iter().zip(&out).map(|(a, b)| (a ^ b).count_ones()).sum();
    assert_eq!(flipped, 5);
}

#[test]
fn toast_missing_and_unknown_fields() {
    let page = heap_page(2);
    let mut s = spec("toast", Some("missing"));
    s.item = Some(2);
    let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
    assert_eq!(u32_at(&out, 28), Some(0));
    let mut s = spec("toast", Some("bogus"));
    s.item = Some(1);
    let err = inject_page(&page, 7, &[s], 1, false, None).unwrap_err().to_string();
    assert!(err.contains("fields: chunk_seq"), "{err}");
    assert!(inject_page(&page, 7, &[spec("nope", None)], 1, false, None).is_err());
    // a heap page is no btree page
    assert!(inject_page(&page, 7, &[spec("btree", Some("special"))], 1, false, None).is_err());
}

#[test]
fn garbage_pages_never_panic() {
    let mut rng = Rng::new(7, 7);
    let base = heap_page(6);
    let attrs = vec![
        AttrLayout { attlen: 4, attalign: 'i' },
        AttrLayout { attlen: -1, attalign: 'i' },
        AttrLayout { attlen: -2, attalign: 'c' },
    ];
    for round in 0..600u64 {
        let mut page = base.clone();
        // damage a growing share of the page, sometimes all of it
        let n = (round as usize * 13) % BLCKSZ;
        let at = rng.below((BLCKSZ - n + 1) as u64) as usize;
        rng.fill(&mut page[at..at + n]);
        if round % 7 == 0 {
            rng.fill(&mut page);
        }
        if round % 3 == 1 {
            // a btree-shaped special space, so the btree paths get past their first check
            page[16..18].copy_from_slice(&((BLCKSZ - BT_SPECIAL_SIZE) as u16).to_le_bytes());
        }
        let other = heap_page(2);
        for info in MODES {
            let fields: Vec<Option<&str>> =
                if info.fields.is_empty() { vec![None] } else { info.fields.iter().map(|f| Some(*f)).collect() };
            for field in fields {
                let mut s = spec(info.mode, field);
                s.item = Some((round % 8) as u16);
                s.attrs = Some(attrs.clone());
                s.stream = round;
                s.length = Some((round % 40) as usize + 1);
                s.flips = Some((round % 5) as u32 + 1);
                s.tear_at = Some(512 * ((round % 15) as usize + 1));
                let _ = inject_page(&page, round as u32, &[s], round, round % 2 == 0, Some(&other));
            }
        }
    }
}
