//! Tests of the page checks.

use super::*;
use crate::format::heap::HeapTupleHeaderData;
use crate::format::itemid::ItemIdData;
use crate::format::page::{PageHeaderData, BLCKSZ};

/// A heap page with one 32-byte tuple at 8160.
fn heap_page() -> Vec<u8> {
    let mut p = vec![0u8; BLCKSZ];
    PageHeaderData {
        pd_lower: 28,
        pd_upper: 8160,
        pd_special: 8192,
        pd_pagesize_version: 0x2004,
        ..Default::default()
    }
    .write(&mut p);
    p[24..28].copy_from_slice(&ItemIdData::new(8160, LP_NORMAL, 32).0.to_le_bytes());
    let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
    t.t_xmin = 750;
    t.t_ctid = crate::format::heap::ItemPointerData { block: 0, offset: 1 };
    t.t_infomask2 = 2;
    t.t_hoff = 24;
    t.write(&mut p[8160..]);
    p
}

fn codes(p: &[u8]) -> Vec<Code> {
    let page = Page::new(p).unwrap();
    check_page(&page, PageKind::guess(&page), Some(0), false).iter().map(|f| f.code).collect()
}

#[test]
fn a_tuple_without_its_line_pointer_is_found() {
    // two tuples, the second line pointer set unused: its bytes stay in the tuple area
    let mut p = heap_page();
    let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
    t.t_xmin = 751;
    t.t_ctid = crate::format::heap::ItemPointerData { block: 0, offset: 2 };
    t.t_infomask2 = 2;
    t.t_hoff = 24;
    t.write(&mut p[8128..]);
    PageHeaderData {
        pd_lower: 32,
        pd_upper: 8128,
        pd_special: 8192,
        pd_pagesize_version: 0x2004,
        ..Default::default()
    }
    .write(&mut p);
    p[28..32].copy_from_slice(&ItemIdData::new(8128, LP_NORMAL, 32).0.to_le_bytes());
    assert_eq!(codes(&p), Vec::<Code>::new());
    p[28..32].copy_from_slice(&[0, 0, 0, 0]);
    assert_eq!(codes(&p), vec![Code::LinePointerUnreferencedTuple]);
    // padding between tuples (MAXALIGN) is no gap
    let mut items = vec![(8160usize, 30usize), (8128, 32)];
    assert!(unreferenced_tuples(&heap_page(), 0, 8128, 8192, &mut items).is_empty());
    // a pointer set dead (pg_surgery's heap_force_kill) leaves the bytes: no loss
    p[28..32].copy_from_slice(&ItemIdData::new(0, crate::format::itemid::LP_DEAD, 0).0.to_le_bytes());
    assert_eq!(codes(&p), Vec::<Code>::new());
}

#[test]
fn healthy_heap_page_is_clean() {
    assert_eq!(codes(&heap_page()), Vec::<Code>::new());
}

#[test]
fn each_damage_is_named() {
    let mut p = heap_page();
    p[16..18].copy_from_slice(&8190u16.to_le_bytes());
    assert!(codes(&p).contains(&Code::PageHeaderSpecialUnaligned));

    let mut p = heap_page();
    p[24..28].copy_from_slice(&ItemIdData::new(8100, LP_NORMAL, 200).0.to_le_bytes());
    assert!(codes(&p).contains(&Code::LinePointerPastPage));

    let mut p = heap_page();
    p[24..28].copy_from_slice(&ItemIdData::new(8164, LP_NORMAL, 24).0.to_le_bytes());
    assert!(codes(&p).contains(&Code::LinePointerUnaligned));

    let mut p = heap_page();
    p[8160 + 22] = 40;
    assert!(codes(&p).contains(&Code::TupleHeaderHoffGtLen));

    let mut p = heap_page();
    p[8160 + 22] = 32;
    assert!(codes(&p).contains(&Code::TupleHeaderTHoff));

    let mut p = heap_page();
    p[24..28].copy_from_slice(&ItemIdData::new(9, LP_REDIRECT, 0).0.to_le_bytes());
    assert!(codes(&p).contains(&Code::LinePointerRedirectTarget));

    let mut p = heap_page();
    p[12..14].copy_from_slice(&20u16.to_le_bytes());
    assert!(codes(&p).contains(&Code::PageHeaderLowerBelowHeader));
}

#[test]
fn header_fields_the_server_ignores_are_damage() {
    let errors = |p: &[u8]| -> Vec<Code> {
        let page = Page::new(p).unwrap();
        let found = check_page(&page, PageKind::Heap, Some(0), false);
        found.iter().filter(|f| f.severity == crate::finding::Severity::Error).map(|f| f.code).collect()
    };
    // pd_pagesize_version saying 4096 bytes, then layout version 5: the server reads both pages
    let mut p = heap_page();
    p[18..20].copy_from_slice(&(4096u16 | 4).to_le_bytes());
    assert!(Page::new(&p).unwrap().header_is_sane(BLCKSZ));
    assert_eq!(errors(&p), vec![Code::PageHeaderPageSize]);
    let mut p = heap_page();
    p[18..20].copy_from_slice(&(8192u16 | 5).to_le_bytes());
    assert_eq!(errors(&p), vec![Code::PageHeaderLayoutVersion]);
    // pd_special below BLCKSZ on a heap page: accepted by PageIsVerified, still damage
    let mut p = heap_page();
    p[16..18].copy_from_slice(&8184u16.to_le_bytes());
    assert!(Page::new(&p).unwrap().header_is_sane(BLCKSZ));
    assert!(errors(&p).contains(&Code::PageHeaderSpecialSize));
    for code in [Code::PageHeaderPageSize, Code::PageHeaderLayoutVersion, Code::PageHeaderSpecialSize] {
        let info = code.info();
        assert!(info.pg_error.starts_with("none") && !info.remedy.is_empty(), "{code}");
    }
}

#[test]
fn findings_carry_block_and_item() {
    let mut p = heap_page();
    p[8160 + 22] = 32;
    let page = Page::new(&p).unwrap();
    let f = check_page(&page, PageKind::Heap, Some(41), false);
    assert_eq!((f[0].block, f[0].item), (Some(41), Some(1)));
    assert!(!f[0].remedy.is_empty());
}

fn tuple(xmin: u32, xmax: u32, ctid_off: u16, infomask: u16, infomask2: u16) -> Vec<u8> {
    let mut b = vec![0u8; 32];
    let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
    t.t_xmin = xmin;
    t.t_xmax = xmax;
    t.t_ctid = crate::format::heap::ItemPointerData { block: 0, offset: ctid_off };
    t.t_infomask = infomask;
    t.t_infomask2 = infomask2 | 2;
    t.t_hoff = 24;
    t.write(&mut b);
    b
}

fn page_codes(tuples: &[Vec<u8>]) -> Vec<Code> {
    let refs: Vec<&[u8]> = tuples.iter().map(Vec::as_slice).collect();
    codes(&crate::format::page::assemble_heap_page(&refs, BLCKSZ).unwrap())
}

#[test]
fn hot_link_of_an_aborted_update_is_not_followed() {
    use crate::format::heap::{HEAP_HOT_UPDATED, HEAP_ONLY_TUPLE, HEAP_UPDATED, HEAP_XMIN_COMMITTED};
    // item 1 was HOT-updated by 800, which aborted; the heap-only successor was pruned and
    // its slot reused by an unrelated insert of 900
    let t1 = tuple(750, 800, 2, HEAP_XMIN_COMMITTED, HEAP_HOT_UPDATED);
    let t2 = tuple(900, 0, 2, 0, 0);
    assert!(!page_codes(&[t1.clone(), t2]).contains(&Code::LinePointerHotChain));
    // but the successor the update wrote must be heap-only
    let t2 = tuple(800, 0, 2, HEAP_UPDATED, 0);
    assert!(page_codes(&[t1.clone(), t2]).contains(&Code::LinePointerHotChain));
    let t2 = tuple(800, 0, 2, HEAP_UPDATED, HEAP_ONLY_TUPLE);
    assert_eq!(page_codes(&[t1.clone(), t2.clone()]), Vec::<Code>::new());
    // two predecessors only when both updates wrote the successor
    let t3 = tuple(760, 700, 2, HEAP_XMIN_COMMITTED, HEAP_HOT_UPDATED);
    assert!(!page_codes(&[t1.clone(), t2.clone(), t3]).contains(&Code::LinePointerHotChain));
    let t3 = tuple(760, 800, 2, HEAP_XMIN_COMMITTED, HEAP_HOT_UPDATED);
    assert!(page_codes(&[t1, t2, t3]).contains(&Code::LinePointerHotChain));
}

#[test]
fn for_update_marks_keys_updated_legally() {
    use crate::format::heap::{
        HEAP_KEYS_UPDATED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_IS_MULTI, HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_LOCK_ONLY,
        HEAP_XMAX_SHR_LOCK,
    };
    let lock = |im: u16| page_codes(&[tuple(750, 760, 1, im, HEAP_KEYS_UPDATED)]);
    let infomask = Code::TupleHeaderInfomask;
    // SELECT ... FOR UPDATE, plain and as a MultiXact
    assert!(!lock(HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK).contains(&infomask));
    assert!(!lock(HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_IS_MULTI).contains(&infomask));
    // a shared lock does not touch the keys
    assert!(lock(HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_SHR_LOCK).contains(&infomask));
    assert!(lock(HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_KEYSHR_LOCK).contains(&infomask));
}

/// A leaf deleted the PostgreSQL 14 way (BTPageSetDeleted): pd_lower covers the safexid, not line pointers.
#[test]
fn a_deleted_btree_page_holds_no_line_pointers() {
    let mut p = vec![0u8; BLCKSZ];
    PageHeaderData {
        pd_lower: 32,
        pd_upper: 8176,
        pd_special: 8176,
        pd_pagesize_version: 0x2004,
        ..Default::default()
    }
    .write(&mut p);
    p[24..32].copy_from_slice(&0x0001_0441u64.to_le_bytes()); // the FullTransactionId, read as LP_REDIRECT items
    let flags = crate::format::btree::BTP_LEAF | crate::format::btree::BTP_DELETED;
    // the special space: btpo_prev, btpo_next, btpo_level (0), then btpo_flags
    p[8176 + 4..8176 + 8].copy_from_slice(&10u32.to_le_bytes());
    let check = |p: &[u8]| {
        let page = Page::new(p).unwrap();
        check_page_in(&page, PageKind::Btree, Some(9), false, &HeapContext::default())
            .iter()
            .map(|f| f.code)
            .collect::<Vec<_>>()
    };
    p[8176 + 12..8176 + 14].copy_from_slice(&(flags | crate::format::btree::BTP_HAS_FULLXID).to_le_bytes());
    assert_eq!(check(&p), []);
    // without the flag those bytes are line pointers, and redirects into nowhere
    p[8176 + 12..8176 + 14].copy_from_slice(&flags.to_le_bytes());
    assert!(check(&p).contains(&Code::LinePointerRedirectTarget));
}
