use super::*;
use crate::format::gin::tests::segment;

/// A GIN posting tree leaf holding `segments`, with `flags` and right-link `right` and right bound `bound`.
fn data_leaf(segments: &[Vec<u8>], right: u32, bound: (u32, u16)) -> Vec<u8> {
    let mut p = vec![0u8; 8192];
    let body: Vec<u8> = segments.concat();
    let lower = GIN_DATA_START + body.len();
    let special = 8192 - GIN_SPECIAL_SIZE;
    p[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
    p[14..16].copy_from_slice(&(special as u16).to_le_bytes());
    p[16..18].copy_from_slice(&(special as u16).to_le_bytes());
    p[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes());
    ItemPointerData { block: bound.0, offset: bound.1 }.write(&mut p, 24);
    p[GIN_DATA_START..lower].copy_from_slice(&body);
    p[special..special + 4].copy_from_slice(&right.to_le_bytes());
    p[special + 6..special + 8].copy_from_slice(&(GIN_DATA | GIN_LEAF | GIN_COMPRESSED).to_le_bytes());
    p
}

fn codes(p: &[u8], block: u64) -> Vec<Code> {
    let page = Page::new(p).unwrap();
    check_gin_page(&page, Some(block), Some(10), None).into_iter().map(|f| f.code).collect()
}

#[test]
fn a_sound_posting_tree_leaf_has_no_findings() {
    let p = data_leaf(&[segment(&[(1, 1), (1, 2), (3, 4)]), segment(&[(4, 1)])], INVALID_BLOCK_NUMBER, (0, 0));
    assert!(codes(&p, 2).is_empty());
}

#[test]
fn posting_tree_leaf_damage_is_found() {
    // segments out of order
    let p = data_leaf(&[segment(&[(4, 1), (4, 2)]), segment(&[(3, 1)])], INVALID_BLOCK_NUMBER, (0, 0));
    assert_eq!(codes(&p, 2), [Code::IndexGinPostingList]);
    // an item above the right bound
    let p = data_leaf(&[segment(&[(4, 1), (9, 2)])], 3, (5, 1));
    assert_eq!(codes(&p, 2), [Code::IndexGinPostingList]);
    // a right-link past the end, and a metapage flag off block 0
    let p = data_leaf(&[segment(&[(4, 1)])], 77, (5, 1));
    assert_eq!(codes(&p, 2), [Code::IndexGinRightLink]);
    let mut p = data_leaf(&[segment(&[(4, 1)])], INVALID_BLOCK_NUMBER, (0, 0));
    p[8192 - 2..].copy_from_slice(&GIN_META.to_le_bytes());
    assert_eq!(codes(&p, 2), [Code::IndexGinPageFlags]);
}

#[test]
fn plain_keys_compare_as_the_opclasses_do() {
    assert_eq!(plain_varlena(&[0x09, b'a', b'b', b'c'], 0), Some(&b"abc"[..]));
    assert!(EntryKey::Bytes(0, b"ab") < EntryKey::Bytes(0, b"abc"));
    assert!(EntryKey::Bytes(0, b"b") > EntryKey::Bytes(0, b"abc"));
    // null keys and placeholders sort after every normal key
    assert!(EntryKey::Int4(1, 0) > EntryKey::Int4(0, i32::MAX));
    assert!(EntryKey::Int4(0, -5) < EntryKey::Int4(0, 3));
}

/// An entry tree leaf of a single-column int4 index holding `keys` in this order, each with one heap TID.
fn int4_entry_leaf(keys: &[i32]) -> Vec<u8> {
    let mut special = [0u8; 8];
    special[..4].copy_from_slice(&INVALID_BLOCK_NUMBER.to_le_bytes());
    special[6..8].copy_from_slice(&GIN_LEAF.to_le_bytes());
    let mut p = crate::health::tests::index_page_bytes(&special, &vec![24u16; keys.len()], &[]);
    let page = Page::new(&p).unwrap();
    let offsets: Vec<usize> = page.item_ids().map(|(_, id)| usize::from(id.lp_off())).collect();
    for (at, (i, key)) in offsets.into_iter().zip(keys.iter().enumerate()) {
        let t = &mut p[at..at + 24];
        ItemPointerData { block: 16 | crate::format::gin::GIN_ITUP_COMPRESSED, offset: 1 }.write(t, 0);
        t[6..8].copy_from_slice(&24u16.to_le_bytes());
        t[8..12].copy_from_slice(&key.to_le_bytes());
        ItemPointerData { block: 0, offset: i as u16 + 1 }.write(t, 16);
    }
    p
}

#[test]
fn entry_keys_out_of_order_are_found_when_the_key_type_is_known() {
    let sound = int4_entry_leaf(&[-3, 5, 70]);
    let page = Page::new(&sound).unwrap();
    assert!(check_gin_page(&page, Some(1), Some(4), Some(GinKeyKind::Int4)).is_empty());
    let swapped = int4_entry_leaf(&[-3, 70, 5]);
    let page = Page::new(&swapped).unwrap();
    let found = check_gin_page(&page, Some(1), Some(4), Some(GinKeyKind::Int4));
    assert_eq!(found.iter().map(|f| (f.code, f.item)).collect::<Vec<_>>(), [(Code::IndexGinEntryOrder, Some(3))]);
    // without the key type: structure only
    assert!(check_gin_page(&page, Some(1), Some(4), None).is_empty());
}

/// The TIDs the page check hands a scan (so it decodes each posting list once) are those an index scan finds.
#[test]
fn the_page_check_hands_over_every_heap_tid_it_decodes() {
    let leaf = data_leaf(&[segment(&[(1, 1), (1, 2), (3, 4)]), segment(&[(4, 1)])], INVALID_BLOCK_NUMBER, (0, 0));
    let entries = int4_entry_leaf(&[-3, 5, 70]);
    for (p, want) in
        [(&leaf, vec![(0, 1, 1), (0, 1, 2), (0, 3, 4), (0, 4, 1)]), (&entries, vec![(1, 0, 1), (2, 0, 2), (3, 0, 3)])]
    {
        let page = Page::new(p).unwrap();
        let mut got = Vec::new();
        let found =
            check_gin_page_tids(&page, Some(1), Some(4), None, Some(&mut |off, t| got.push((off, t.block, t.offset))));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(got, want);
        let mut scan = Vec::new();
        crate::checks::scan::for_each_index_tid(&page, PageKind::Gin, |off, t| scan.push((off, t.block, t.offset)));
        assert_eq!(got, scan);
    }
}
