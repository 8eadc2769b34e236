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
    assert_eq!(codes(&p, 2), [Code::IndexSiblingLink]);
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
