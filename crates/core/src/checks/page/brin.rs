//! One BRIN page: its special space and type, the metapage's fields, a revmap page's TIDs, and the summary tuples of
//! a regular page (header, data offset, null bitmap inside the tuple). The revmap against the regular pages and each
//! tuple's range against pagesPerRange are in checks/scan/hashbrin.rs.

use super::check_line_pointers;
use crate::finding::{Code, Finding};
use crate::format::brin::{
    brin_special, revmap_tids, BrinMetaPageData, BrinTuple, BRIN_CURRENT_VERSION, BRIN_EVACUATE_PAGE,
    BRIN_MAX_PAGES_PER_RANGE, BRIN_META_MAGIC, BRIN_PAGETYPE_META, BRIN_PAGETYPE_REGULAR, BRIN_PAGETYPE_REVMAP,
    BRIN_SPECIAL_SIZE, SIZE_OF_BRIN_TUPLE,
};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind};

/// The largest offset a revmap TID may name on a page of `blcksz` bytes: as many of the smallest summary tuples
/// (MAXALIGN(SizeOfBrinTuple), access/brin_tuple.h) with their line pointers as fit between the page header and the
/// special space. Not `MaxIndexTuplesPerPage` (access/itup.h, 408 for 8 KB): brin_doinsert adds tuples with
/// PageAddItem, which bounds only heap pages, and a page of small minmax tuples holds more.
fn max_brin_tuples(blcksz: usize) -> u16 {
    let room = blcksz.saturating_sub(crate::format::page::SIZE_OF_PAGE_HEADER_DATA + BRIN_SPECIAL_SIZE);
    u16::try_from(room / (crate::format::bytes::maxalign(SIZE_OF_BRIN_TUPLE) + 4)).unwrap_or(u16::MAX)
}

/// Every page-local check of a BRIN page (`block` of the index).
pub fn check_brin_page(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    if page.header().is_new() {
        return Vec::new();
    }
    let bad_type = |msg: String| vec![Finding::new(Code::IndexBrinPageType, block, None, msg)];
    let Some((flags, kind)) = brin_special(page.bytes(), usize::from(page.header().pd_special)) else {
        return vec![Finding::new(
            Code::IndexSpecialSize,
            block,
            None,
            format!("special space is {} bytes, a BRIN page has {BRIN_SPECIAL_SIZE}", page.special_size()),
        )];
    };
    if flags & !BRIN_EVACUATE_PAGE != 0 {
        return bad_type(format!("special space flags 0x{flags:04x} have undefined bits"));
    }
    match kind {
        BRIN_PAGETYPE_META if block.is_none_or(|b| b == 0) => check_brin_meta(page, block),
        BRIN_PAGETYPE_META => bad_type("a metapage on a block other than 0".to_string()),
        _ if block == Some(0) => {
            bad_type(format!("block 0 of a BRIN index must be the metapage, its page type is 0x{kind:04X}"))
        }
        BRIN_PAGETYPE_REVMAP => check_revmap_page(page, block),
        BRIN_PAGETYPE_REGULAR => {
            let mut out = check_line_pointers(page, PageKind::Brin, block);
            if out.is_empty() {
                out.extend(check_summary_tuples(page, block));
            }
            out
        }
        _ => bad_type(format!("page type 0x{kind:04X} is none of BRIN's (meta 0xF091, revmap 0xF092, regular 0xF093)")),
    }
}

/// The metapage: magic, version, pagesPerRange within what the server accepts, lastRevmapPage past the metapage.
pub fn check_brin_meta(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let Some(m) = BrinMetaPageData::parse(page.bytes()) else { return Vec::new() };
    let msg = if m.brin_magic != BRIN_META_MAGIC {
        format!("brinMagic 0x{:08X} is not BRIN_META_MAGIC (0x{BRIN_META_MAGIC:08X})", m.brin_magic)
    } else if m.brin_version != BRIN_CURRENT_VERSION {
        format!("brinVersion {} (the current version is {BRIN_CURRENT_VERSION})", m.brin_version)
    } else if m.pages_per_range == 0 || m.pages_per_range > BRIN_MAX_PAGES_PER_RANGE {
        format!("pagesPerRange {} is outside 1..{BRIN_MAX_PAGES_PER_RANGE}", m.pages_per_range)
    } else if m.last_revmap_page == 0 {
        "lastRevmapPage is 0, the metapage itself".to_string()
    } else {
        return Vec::new();
    };
    vec![Finding::new(Code::IndexBrinMetapage, block, None, msg)]
}

/// A revmap page's TIDs: each valid one names a regular page (not the metapage) and a possible item number.
fn check_revmap_page(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let max = max_brin_tuples(page.bytes().len());
    let mut bad = revmap_tids(page.bytes()).filter(|(_, t)| t.block == 0 || t.offset > max);
    let Some((i, t)) = bad.next() else { return Vec::new() };
    let more = bad.count();
    let also = if more > 0 { format!(" ({more} more such entries)") } else { String::new() };
    vec![Finding::new(
        Code::IndexBrinRevmap,
        block,
        None,
        format!("revmap entry {i} points to {t}, which cannot hold a summary tuple{also}"),
    )]
}

/// The summary tuples of a regular page: a header, a data offset inside the tuple and past the null bitmap.
fn check_summary_tuples(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(bytes) = page.item_bytes(id) else { continue };
        let Some(t) = BrinTuple::parse(bytes) else {
            out.push(Finding::new(
                Code::IndexBrinTuple,
                block,
                Some(off),
                format!("item of {} bytes is too short for a summary tuple", bytes.len()),
            ));
            continue;
        };
        let doff = t.data_offset();
        if doff < SIZE_OF_BRIN_TUPLE || doff > bytes.len() || doff % 8 != 0 {
            out.push(Finding::new(
                Code::IndexBrinTuple,
                block,
                Some(off),
                format!(
                    "summary tuple for heap block {}: data offset {doff} is not an aligned offset inside its {} bytes",
                    t.bt_blkno,
                    bytes.len()
                ),
            ));
        }
        if out.len() >= 16 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::max_brin_tuples;

    /// pgbench_accounts' minmax index on aid (scale 100) puts 408 summary tuples and more on a regular page: an
    /// offset past MaxIndexTuplesPerPage is no damage, one past what the smallest tuples fill is.
    #[test]
    fn a_regular_page_holds_more_than_max_index_tuples() {
        assert_eq!(max_brin_tuples(8192), (8192 - 24 - 8) / 12);
        assert!(max_brin_tuples(8192) > 408);
    }
}
