//! Tests of the row engine's carving and classification on synthetic pages.

use std::collections::HashMap;

use crate::datum::TypeDesc;
use crate::format::heap::{HeapTupleHeaderData, HEAP_HASVARWIDTH, HEAP_XMAX_INVALID};
use crate::format::tuple::RelDesc;
use crate::sources::blocks::SegFile;

use super::carve::{carve_pages, CarveConfig, Carver, ColumnOut, OutFormat};
use super::classify::{classify_page, classify_relation, ClassifyConfig};
use super::find::Via;
use super::output::{Batch, Certainty};
use crate::format::heap::{ItemPointerData, HEAP_XMIN_COMMITTED};
use crate::format::tuple::AttrDesc;
use std::path::Path;

fn desc() -> RelDesc {
    let a = |attnum, attlen, attalign, typname: &str| AttrDesc {
        attnum,
        attlen,
        attalign,
        attbyval: attlen > 0,
        attisdropped: false,
        typname: typname.into(),
        attstorage: if attlen > 0 { b'p' } else { b'x' },
    };
    RelDesc { natts: 2, attrs: vec![a(1, 4, b'i', "int4"), a(2, -1, b'i', "text")], has_toast: false, toast_relid: 0 }
}

fn tuple(block: u32, lp: u16, id: i32, text: &str) -> Vec<u8> {
    let mut t = vec![0u8; 24];
    HeapTupleHeaderData {
        t_xmin: 700,
        t_xmax: 0,
        t_field3: 0,
        t_ctid: ItemPointerData { block, offset: lp },
        t_infomask2: 2,
        t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID | HEAP_HASVARWIDTH,
        t_hoff: 24,
    }
    .write(&mut t);
    t.extend_from_slice(&id.to_le_bytes());
    t.push(((text.len() + 1) << 1 | 1) as u8);
    t.extend_from_slice(text.as_bytes());
    t
}

fn page(block: u32, rows: &[(i32, &str)]) -> Vec<u8> {
    let tuples: Vec<Vec<u8>> =
        rows.iter().enumerate().map(|(i, (id, text))| tuple(block, (i + 1) as u16, *id, text)).collect();
    let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
    crate::format::page::assemble_heap_page(&refs, 8192).expect("test rows fit on a page")
}

fn cfg() -> CarveConfig {
    let ty = |oid: u32, name: &str| Some(TypeDesc { oid, name: name.into(), typtype: b'b', ..Default::default() });
    CarveConfig {
        blcksz: 8192,
        relseg_size: 131072,
        nblocks: 10,
        files: vec![],
        checksums: false,
        backup_start_lsn: None,
        encoding: "UTF8".into(),
        desc: desc(),
        columns: vec![
            ColumnOut { attnum: 1, name: "id".into(), r#type: ty(23, "int4"), missing: None },
            ColumnOut { attnum: 2, name: "t".into(), r#type: ty(25, "text"), missing: None },
        ],
        format: OutFormat::Text,
        server_version_num: 180000,
        horizons: None,
        xact_dir: None,
        snapshot: None,
        can_ask: false,
        xid_status: HashMap::new(),
        multis: HashMap::new(),
        toast_files: vec![],
        toast_nblocks: 0,
        toast_relid: 0,
        toast_chunks: vec![],
        can_fetch_toast: false,
        only: HashMap::new(),
        apart_rows: HashMap::new(),
        keep_invisible: false,
        deleted: false,
        deleted_by: None,
    }
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8(out.to_vec()).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn healthy_page_through_line_pointers() {
    let p = page(3, &[(1, "one"), (2, "two\ttab")]);
    let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    assert_eq!(lines(&out), vec!["1\tone", "2\ttwo\\ttab"]);
    assert!(res.rows.iter().all(|r| r.certainty == Certainty::Sure && r.via == Via::LinePointer));
    assert!(!res.pages[0].body_scanned);
}

#[test]
fn destroyed_item_ids_and_header() {
    let mut p = page(3, &[(1, "one"), (2, "two"), (3, "three")]);
    for b in &mut p[0..36] {
        *b = 0xA5;
    }
    let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    let mut l = lines(&out);
    l.sort();
    assert_eq!(l, vec!["1\tone", "2\ttwo", "3\tthree"]);
    assert!(res.rows.iter().all(|r| r.certainty == Certainty::Likely && r.via == Via::PageBody));
    let mut lps: Vec<_> = res.rows.iter().map(|r| r.lp).collect();
    lps.sort();
    assert_eq!(lps, vec![Some(1), Some(2), Some(3)]);
}

#[test]
fn identical_rows_are_distinct_rows() {
    // one statement inserting equal rows: same xmin, cmin and data; only their line pointers (and t_ctid)
    // differ. Each is a row of its own, found through line pointers or, the array destroyed, in the body.
    let rows: Vec<(i32, &str)> = (0..40).map(|_| (7, "same")).collect();
    let p = page(3, &rows);
    let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    assert_eq!(lines(&out).len(), 40);
    assert_eq!(res.counts.duplicates, 0);
    let mut p = p;
    for b in &mut p[0..24 + 4 * 40] {
        *b = 0x5A;
    }
    let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    assert_eq!(lines(&out).len(), 40);
    assert!(res.rows.iter().all(|r| r.certainty == Certainty::Likely), "{:?}", res.rows[0]);
}

#[test]
fn failed_checksum_keeps_rows_apart() {
    let mut p = page(3, &[(1, "one")]);
    let sum = crate::format::checksum::pg_checksum_page(&p, 3).unwrap();
    p[8..10].copy_from_slice(&sum.to_le_bytes());
    let mut c = cfg();
    c.checksums = true;
    let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
    assert_eq!((res.rows[0].certainty, res.rows[0].checksum_failed), (Certainty::Sure, false));
    p[8] ^= 1;
    let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
    let r = &res.rows[0];
    assert_eq!(
        (r.certainty, r.checksum_failed, r.certainty_besides_checksum),
        (Certainty::Uncertain, true, Certainty::Sure)
    );
}

/// In a backup, a page written while it was copied (LSN after the start) fails its checksum for being torn: counted
/// apart from damage, its rows still kept apart. An older page failing it is damage as before.
#[test]
fn a_page_torn_by_the_backup_copy_is_not_a_checksum_failure() {
    let mut p = page(3, &[(1, "one")]);
    p[0..8].copy_from_slice(&[0, 0, 0, 0, 0x00, 0x20, 0, 0]); // pd_lsn 0/2000
    p[8] ^= 1; // a checksum that does not match
    let mut c = cfg();
    c.checksums = true;
    for (start, torn, failed) in [(0x1000, 1, 0), (0x3000, 0, 1)] {
        c.backup_start_lsn = Some(start);
        let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
        assert_eq!((res.counts.torn_after_backup_start, res.counts.checksum_failures), (torn, failed));
        assert_eq!(res.rows[0].certainty, Certainty::Uncertain);
    }
}

#[test]
fn rows_named_apart_are_kept_apart_with_the_reason() {
    let p = page(3, &[(1, "one"), (2, "two")]);
    let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    let second = res.rows.iter().find(|r| r.lp == Some(2)).unwrap().offset;
    let mut c = cfg();
    c.apart_rows.insert("3".into(), vec![(second, "key (id)=(2) is readable at (9,4)".into())]);
    c.apart_rows.insert("4".into(), vec![(res.rows[0].offset, "another block".into())]);
    let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
    let kept: Vec<_> = res.rows.iter().map(|r| (r.lp, r.certainty, r.certainty_besides_checksum)).collect();
    assert_eq!(
        kept,
        vec![(Some(1), Certainty::Sure, Certainty::Sure), (Some(2), Certainty::Uncertain, Certainty::Uncertain)]
    );
    assert!(res.rows[1].notes.iter().any(|n| n.contains("readable at (9,4)")), "{:?}", res.rows[1].notes);
}

#[test]
fn invalid_utf8_is_kept_apart_escaped() {
    let p = page(3, &[(1, "ok\u{e9}"), (2, "bad")]);
    let mut p = p;
    let at = p.windows(3).rposition(|w| w == b"bad").unwrap();
    p[at] = 0xdb;
    let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    let l = lines(&out);
    assert!(l.iter().any(|x| x.ends_with("\\\\xdbad")), "{l:?}");
    assert_eq!(res.rows.iter().filter(|r| r.certainty == Certainty::Uncertain).count(), 1);
}

#[test]
fn an_undecodable_value_keeps_its_row_apart_with_its_bytes() {
    let p = page(3, &[(1, "abc")]);
    let mut c = cfg();
    c.columns[1].r#type = None;
    let mut carver = Carver::new(c);
    carver.add_chunk(0, 0, vec![]);
    let mut out = Batch::streaming(false);
    carver.carve_page(&p, 3, false, &mut out);
    assert!(out.main.is_empty());
    let apart = String::from_utf8(out.apart).unwrap();
    // the note (6th provenance column) names the column and shows its stored bytes: a 1-byte header and "abc"
    assert!(apart.contains("column t:") && apart.contains("stored bytes \\\\x09616263 (4 bytes)"), "{apart}");
    assert!(apart.ends_with("\t1\t\\N\n"), "{apart}");
}

#[test]
fn stale_copy_in_free_space_is_kept_apart() {
    let mut p = page(3, &[(1, "one"), (2, "two")]);
    // an old copy of a third row left in free space, far below the tuple area
    let t = tuple(3, 3, 9, "nine");
    p[4000..4000 + t.len()].copy_from_slice(&t);
    for b in &mut p[24..32] {
        *b = 0xFF; // damage the line pointers so the body is searched
    }
    let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    let stale: Vec<_> = res.rows.iter().filter(|r| r.offset == 4000).collect();
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].certainty, Certainty::Uncertain);
    assert_eq!(res.rows.iter().filter(|r| r.certainty == Certainty::Likely).count(), 2);
}

#[test]
fn misplaced_tuple_is_uncertain() {
    let p = page(5, &[(1, "one")]);
    let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
    assert_eq!(res.rows[0].certainty, Certainty::Uncertain);
}

#[test]
fn frozen_row_of_an_aborted_update_is_sure() {
    // VACUUM cleared the aborted updater's xmax; t_ctid still names the discarded new version: on this page
    // (item 7), or in another block at another item number (block 9, item 4)
    for (blk, item) in [(3u16, 7u16), (9, 4)] {
        let mut p = page(3, &[(1, "one")]);
        let off = (u32::from_le_bytes([p[24], p[25], p[26], p[27]]) & 0x7fff) as usize;
        p[off + 12..off + 14].copy_from_slice(&0u16.to_le_bytes());
        p[off + 14..off + 16].copy_from_slice(&blk.to_le_bytes());
        p[off + 16..off + 18].copy_from_slice(&item.to_le_bytes());
        let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        assert_eq!(res.rows.len(), 1);
        assert_eq!(res.rows[0].certainty, Certainty::Sure, "t_ctid ({blk},{item})");
    }
}

/// A classification of one segment file (or of pages handed over, without one), one block per unit.
fn classify_cfg(file: Option<&Path>, first: u64, nblocks: u64, rel_nblocks: Option<u64>) -> ClassifyConfig {
    ClassifyConfig {
        files: file.map(|p| vec![SegFile { segno: 0, path: p.to_path_buf() }]).unwrap_or_default(),
        first,
        nblocks,
        blcksz: 8192,
        relseg_size: 131072,
        checksums: false,
        desc: Some(desc()),
        horizons: None,
        jobs: Some(1),
        unit_blocks: 1,
        columns: vec![],
        rel_nblocks,
    }
}

#[test]
fn classify_zero_and_damaged() {
    let c = classify_cfg(None, 0, 10, None);
    assert!(classify_page(&page(1, &[(1, "x")]), 1, &c).is_none());
    assert_eq!(classify_page(&[0u8; 8192], 2, &c).unwrap().state, "zero");
    let mut p = page(1, &[(1, "x")]);
    p[14] = 0x10; // pd_upper below pd_lower
    p[15] = 0;
    assert_eq!(classify_page(&p, 1, &c).unwrap().state, "damaged");
}

#[test]
fn classify_a_region() {
    let dir = std::env::temp_dir().join(format!("pgs-classify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("16384");
    let mut file = Vec::new();
    for b in 0..4u32 {
        if b == 2 {
            file.extend_from_slice(&[0u8; 8192]);
        } else {
            file.extend_from_slice(&page(b, &[(1, "x")]));
        }
    }
    file[14] = 0x10; // block 0: pd_upper below pd_lower
    file[15] = 0;
    std::fs::write(&path, &file).unwrap();
    let cfg = |first: u64| classify_cfg(Some(&path), first, 4, None);
    let whole = classify_relation(&cfg(0)).unwrap();
    let states: Vec<_> = whole.blocks.iter().map(|b| (b.block, b.state)).collect();
    assert_eq!(states, vec![(0, "damaged"), (2, "zero")]);
    let region = classify_relation(&cfg(1)).unwrap();
    let states: Vec<_> = region.blocks.iter().map(|b| (b.block, b.state)).collect();
    assert_eq!((states, region.nblocks, region.healthy), (vec![(2, "zero")], 3, 2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An updated row's t_ctid names its new version's block. Classified region by region, that block lies past
/// the region but inside the table; on a running server it may lie in a block added after the table's length
/// was read, and the file holds it by the time the row is read. Neither is damage; past the file's end is.
#[test]
fn a_ctid_past_the_region_or_into_a_block_added_since_is_no_damage() {
    let dir = std::env::temp_dir().join(format!("pgs-classify-ctid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("16384");
    let updated = |b: u32, to: u32| {
        let mut p = page(b, &[(1, "x")]);
        let lp = u32::from_le_bytes(p[24..28].try_into().unwrap());
        let t = (lp & 0x7FFF) as usize;
        p[t + 4..t + 8].copy_from_slice(&900u32.to_le_bytes()); // t_xmax: the updater
        p[t + 12..t + 14].copy_from_slice(&((to >> 16) as u16).to_le_bytes()); // t_ctid: (to, 1)
        p[t + 14..t + 16].copy_from_slice(&(to as u16).to_le_bytes());
        p[t + 16..t + 18].copy_from_slice(&1u16.to_le_bytes());
        p
    };
    let mut file = Vec::new();
    for b in 0..4u32 {
        file.extend_from_slice(&if b == 0 {
            updated(0, 3)
        } else if b == 1 {
            updated(1, 5)
        } else {
            page(b, &[(1, "x")])
        });
    }
    std::fs::write(&path, &file).unwrap();
    let cfg = |nblocks: u64, rel_nblocks: Option<u64>| classify_cfg(Some(&path), 0, nblocks, rel_nblocks);
    let damaged = |cfg: &ClassifyConfig| -> Vec<u64> {
        classify_relation(cfg).unwrap().blocks.iter().filter(|b| b.state == "damaged").map(|b| b.block).collect()
    };
    // the first region, blocks 0..2, of a 4-block table: block 0's row points into block 3
    assert_eq!(damaged(&cfg(2, Some(4))), vec![1], "block 1's row points past the file's end");
    // the table grows while it is read: block 5 exists by the time block 1 is read
    file.extend(std::iter::repeat_n(0u8, 2 * 8192));
    std::fs::write(&path, &file).unwrap();
    assert_eq!(damaged(&cfg(2, Some(4))), Vec::<u64>::new());
    // a page handed over on its own (no files) is judged against the length given
    assert_eq!(classify_page(&updated(1, 5), 1, &cfg(4, None)).map(|c| c.state), Some("damaged"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The visibility service answers for every tuple of a healthy page through its line pointers.
#[test]
fn page_states_through_the_visibility_service() {
    use crate::format::page::Page;
    use crate::visibility::service::Visibility;
    use crate::visibility::xact::{Clog, TupleState};
    let mut bytes = page(0, &[(1, "a"), (2, "b")]);
    // the second row's xmin loses its commit hint and is not in any pg_xact: its state is unknown
    let at = Page::new(&bytes).unwrap().item_ids().nth(1).map(|(_, id)| id.lp_off() as usize).unwrap();
    let mut h = HeapTupleHeaderData::parse(&bytes[at..]).unwrap();
    h.t_infomask &= !HEAP_XMIN_COMMITTED;
    h.write(&mut bytes[at..at + 24]);
    let vis = Visibility::new(Clog::new(None, 8192), HashMap::new(), HashMap::new(), None);
    let states = vis.page_states(&Page::new(&bytes).unwrap(), false);
    assert_eq!(states, vec![(1, TupleState::Live), (2, TupleState::Unknown)]);
}

/// A cluster directory holding pg_xact (empty: the tuples carry their hint bits), pg_subtrans with
/// 802 -> 801 -> 800, and pg_commit_ts with the same time for 790 and 805 (unrelated transactions committing in the
/// same microsecond), others for 806, 802 and 700.
fn undelete_cluster(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pgsurgeon-undelete-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("pg_xact")).unwrap();
    std::fs::create_dir_all(dir.join("pg_subtrans")).unwrap();
    std::fs::create_dir_all(dir.join("pg_commit_ts")).unwrap();
    let mut subtrans = vec![0u8; 8192 * 32];
    for (x, p) in [(802u32, 801u32), (801, 800)] {
        subtrans[x as usize * 4..x as usize * 4 + 4].copy_from_slice(&p.to_le_bytes());
    }
    std::fs::write(dir.join("pg_subtrans").join("0000"), &subtrans).unwrap();
    let mut ts = vec![0u8; 8192 * 32];
    for (x, t) in [(790usize, 1_000_000i64), (805, 1_000_000), (806, 2_000_000), (802, 3_000_000), (700, 500_000)] {
        ts[x * 10..x * 10 + 8].copy_from_slice(&t.to_le_bytes());
    }
    std::fs::write(dir.join("pg_commit_ts").join("0000"), &ts).unwrap();
    dir
}

/// A page of rows 1, 2, 3 removed by 802 (a subtransaction of 801, itself one of 800), 805 and 806, committed.
fn removed_page() -> Vec<u8> {
    let mut tuples = Vec::new();
    for (lp, xmax) in [(1u16, 802u32), (2, 805), (3, 806)] {
        let mut t = tuple(0, lp, i32::from(lp), "gone");
        let mut h = HeapTupleHeaderData::parse(&t).unwrap();
        h.t_xmax = xmax;
        h.t_infomask = HEAP_XMIN_COMMITTED | crate::format::heap::HEAP_XMAX_COMMITTED | HEAP_HASVARWIDTH;
        h.write(&mut t);
        tuples.push(t);
    }
    let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
    crate::format::page::assemble_heap_page(&refs, 8192).unwrap()
}

/// Undelete's lines: (deleted_by, how, id) of each, the commit record of `deleted_by` unread and not asked for.
fn undelete_lines(dir: &Path, deleted_by: Option<u32>) -> Vec<(String, String, String)> {
    undelete_carve(dir, deleted_by, None, false).0
}

/// Undelete's lines and whether the carve asked for the commit record of `deleted_by`; `record`: what that record
/// lists, once read (`Some(None)`: it cannot be read); `ask`: whether the carve may ask for it.
fn undelete_carve(
    dir: &Path,
    deleted_by: Option<u32>,
    record: Option<Option<Vec<u32>>>,
    ask: bool,
) -> (Vec<(String, String, String)>, bool) {
    let mut carver =
        Carver::new(CarveConfig { xact_dir: Some(dir.join("pg_xact")), deleted: true, deleted_by, ..cfg() });
    if let Some(r) = record {
        carver.set_subxacts(r);
    }
    let mut out = Batch::streaming(false);
    carver.carve_run(&removed_page(), 0, ask, &mut out);
    let got = lines(&out.main)
        .iter()
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_ne!(c[5], "\\N", "the deleter's commit time is recorded: {l}");
            (c[4].to_string(), c[6].to_string(), c[7].to_string())
        })
        .collect();
    (got, out.need_subxacts)
}

fn line(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.to_string(), b.to_string(), c.to_string())
}

#[test]
fn undelete_names_the_top_level_transaction_of_a_subtransaction() {
    let dir = undelete_cluster("top");
    // every removed row, 802 labelled with its top-level transaction through pg_subtrans
    assert_eq!(
        undelete_lines(&dir, None),
        vec![line("800", "delete in subtransaction 802", "1"), line("805", "delete", "2"), line("806", "delete", "3")]
    );
    // the top-level transaction finds its nested subtransaction's rows; the middle one is no top-level transaction
    assert_eq!(undelete_lines(&dir, Some(800)), vec![line("800", "delete in subtransaction 802", "1")]);
    assert_eq!(undelete_lines(&dir, Some(801)), vec![]);
    // pg_subtrans names no parent of 805, committed in the same microsecond as 790: not 790's without its
    // commit record
    assert_eq!(undelete_lines(&dir, Some(790)), vec![]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn undelete_ties_subtransactions_by_the_commit_record_only() {
    let dir = undelete_cluster("record");
    // pg_subtrans names no parent of 805 and 806, younger than 790: the carve asks for 790's commit record
    assert_eq!(undelete_carve(&dir, Some(790), None, true), (vec![], true));
    // the record lists 806 (not 805, of the same commit time): 806's row only, labelled with where that was read
    let listed = undelete_carve(&dir, Some(790), Some(Some(vec![806, 807])), true);
    assert_eq!(listed, (vec![line("790", "delete in subtransaction 806 (from the commit record in WAL)", "3")], false));
    // no subtransactions listed, or no record to be had: nothing, and no asking again
    assert_eq!(undelete_carve(&dir, Some(790), Some(Some(vec![])), true), (vec![], false));
    assert_eq!(undelete_carve(&dir, Some(790), Some(None), true), (vec![], false));
    // pg_subtrans names 800 as the top of 802 whatever the record lists; 805 and 806 are younger, so 800's
    // record is asked for
    let by_800 = vec![line("800", "delete in subtransaction 802", "1")];
    assert_eq!(undelete_carve(&dir, Some(800), None, true), (by_800.clone(), true));
    assert_eq!(undelete_carve(&dir, Some(800), Some(Some(vec![])), true), (by_800, false));
    // no transaction younger than 806 removed a row: its record is not asked for
    assert_eq!(undelete_carve(&dir, Some(806), None, true), (vec![line("806", "delete", "3")], false));
    std::fs::remove_dir_all(&dir).ok();
}
