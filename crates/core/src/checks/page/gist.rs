//! GiST page checks (access/gist.h, access/gist_private.h): the special space, the flags, the NSN against the
//! page LSN, and each tuple's TID as the page kind gives it meaning (a downlink on an inner page, a heap TID on a
//! leaf). Links between pages (downlinks, right-links, levels) are judged relation-wide in checks/scan/gist.rs.

use super::{check_line_pointers, MAX_ITEM_FINDINGS_PER_PAGE};
use crate::finding::{Code, Finding};
use crate::format::btree::IndexTupleData;
use crate::format::gist::{
    flag_names, GISTPageOpaqueData, F_DELETED, F_FOLLOW_RIGHT, F_LEAF, F_VALID_BITS, GIST_SPECIAL_SIZE,
    INVALID_BLOCK_NUMBER, TUPLE_IS_INVALID, TUPLE_IS_VALID,
};
use crate::format::itemid::{LP_DEAD, LP_NORMAL};
use crate::format::page::{format_lsn, Page, PageKind, GIST_PAGE_ID, SIZE_OF_PAGE_HEADER_DATA};

/// `MaxHeapTuplesPerPage` for 8 KB pages (access/htup_details.h): the largest offset a heap TID can have.
const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;

/// All page-local checks of one GiST page.
pub fn check_gist_page(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    if page.header().is_new() {
        return out;
    }
    let Some(o) = special_or_finding(page, block, &mut out) else { return out };
    check_flags(page, block, &o, &mut out);
    if o.flags & F_DELETED != 0 {
        // A deleted page holds no items: its pd_lower covers the GISTDeletedPageContents (the FullTransactionId
        // after which it may be reused) that GistPageSetDeleted writes after the header (access/gist.h).
        return out;
    }
    out.extend(check_line_pointers(page, PageKind::Gist, block));
    check_tuples(page, block, &o, &mut out);
    out
}

/// The special space as a GiST page's, or an `index.special_size` finding.
fn special_or_finding(page: &Page<'_>, block: Option<u64>, out: &mut Vec<Finding>) -> Option<GISTPageOpaqueData> {
    if page.special_size() != GIST_SPECIAL_SIZE {
        out.push(Finding::new(
            Code::IndexSpecialSize,
            block,
            None,
            format!("special space is {} bytes, a GiST page has {GIST_SPECIAL_SIZE}", page.special_size()),
        ));
        return None;
    }
    let o = page.special().and_then(GISTPageOpaqueData::parse)?;
    if o.gist_page_id != GIST_PAGE_ID {
        out.push(Finding::new(
            Code::IndexSpecialSize,
            block,
            None,
            format!("gist_page_id is 0x{:04x}, a GiST page has 0x{GIST_PAGE_ID:04x}", o.gist_page_id),
        ));
        return None;
    }
    Some(o)
}

/// Flags no GiST page carries, and the NSN against the page's LSN.
fn check_flags(page: &Page<'_>, block: Option<u64>, o: &GISTPageOpaqueData, out: &mut Vec<Finding>) {
    let flags = o.flags;
    let names = flag_names(flags);
    if flags & !F_VALID_BITS != 0 {
        out.push(Finding::new(
            Code::IndexGistFlags,
            block,
            None,
            format!("flags {names} has bits gist.h does not define"),
        ));
    } else if flags & F_DELETED != 0 && flags & F_LEAF == 0 {
        // gistvacuum deletes only empty leaf pages (gistdeletepage, gistvacuum.c), which keep F_LEAF.
        out.push(Finding::new(
            Code::IndexGistFlags,
            block,
            None,
            format!("flags {names}: a deleted page that is not a leaf"),
        ));
    } else if flags & F_DELETED != 0 && block == Some(0) {
        out.push(Finding::new(Code::IndexGistFlags, block, None, format!("flags {names}: the root page is deleted")));
    } else if flags & F_DELETED != 0 && page.header().pd_lower as usize > SIZE_OF_PAGE_HEADER_DATA + 8 {
        out.push(Finding::new(
            Code::IndexGistFlags,
            block,
            None,
            format!("flags {names}, but pd_lower {} says the deleted page holds items", page.header().pd_lower),
        ));
    }
    if flags & F_FOLLOW_RIGHT != 0 {
        out.push(Finding::new(
            Code::IndexGistFollowRight,
            block,
            None,
            format!("F_FOLLOW_RIGHT: the split to right-link {} never got its downlink in the parent", o.rightlink),
        ));
    }
    let lsn = page.header().pd_lsn.lsn();
    // gistplacetopage writes the split's LSN as NSN and as page LSN together (gist.c); later changes only raise the
    // LSN. An NSN past it makes every scan that comes down from the parent follow the right-link as if a split
    // had just happened, and read the right sibling twice.
    if o.nsn > lsn {
        out.push(Finding::new(
            Code::IndexGistNsn,
            block,
            None,
            format!("NSN {} is newer than the page's LSN {}", format_lsn(o.nsn), format_lsn(lsn)),
        ));
    }
}

/// Each item: its length against the tuple's own size word; on an inner page a downlink with the valid mark,
/// on a leaf a plausible heap TID.
fn check_tuples(page: &Page<'_>, block: Option<u64>, o: &GISTPageOpaqueData, out: &mut Vec<Finding>) {
    let mut n = 0usize;
    let mut push = |out: &mut Vec<Finding>, off: u16, msg: String| {
        if n < MAX_ITEM_FINDINGS_PER_PAGE {
            out.push(Finding::new(Code::IndexGistTuple, block, Some(off), msg));
        }
        n += 1;
    };
    for (off, id) in page.item_ids() {
        // LP_DEAD items keep their storage in GiST (gistkillitems marks them, ItemIdMarkDead)
        if !(id.lp_flags() == LP_NORMAL || (id.lp_flags() == LP_DEAD && id.has_storage())) {
            continue;
        }
        let Some(t) = page.item_bytes(id).and_then(IndexTupleData::parse) else { continue };
        if t.size() != usize::from(id.lp_len()) {
            push(out, off, format!("the tuple's size is {} but its line pointer says {}", t.size(), id.lp_len()));
            continue;
        }
        let tid = t.t_tid;
        if o.is_leaf() {
            if tid.offset == 0 || tid.offset > MAX_HEAP_TUPLES_PER_PAGE {
                push(out, off, format!("leaf tuple points to heap {tid}, an impossible item number"));
            }
        } else if tid.offset == TUPLE_IS_INVALID {
            push(out, off, "inner tuple marked invalid (an incomplete split from before 9.1)".to_string());
        } else if tid.offset != TUPLE_IS_VALID {
            push(out, off, format!("inner tuple's downlink {tid} lacks the valid mark 0xffff in its offset"));
        } else if tid.block == INVALID_BLOCK_NUMBER || Some(u64::from(tid.block)) == block || tid.block == 0 {
            let what = if tid.block == 0 {
                "the root"
            } else if tid.block == INVALID_BLOCK_NUMBER {
                "no page"
            } else {
                "itself"
            };
            push(out, off, format!("inner tuple's downlink points to block {} ({what})", tid.block));
        }
    }
    if n > MAX_ITEM_FINDINGS_PER_PAGE {
        out.push(Finding::new(
            Code::IndexGistTuple,
            block,
            None,
            format!("{n} damaged tuples on this page ({} not listed)", n - MAX_ITEM_FINDINGS_PER_PAGE),
        ));
    }
}

/// Every heap TID of a GiST leaf page's entries, live or marked dead by a scan (see
/// [`super::index_entry_in_use`]); nothing for inner or deleted pages.
pub fn for_each_gist_leaf_tid(page: &Page<'_>, mut f: impl FnMut(u16, &crate::format::heap::ItemPointerData)) {
    let Some(o) = GISTPageOpaqueData::from_page(page) else { return };
    if !o.is_leaf() || o.is_deleted() {
        return;
    }
    for (off, id) in page.item_ids() {
        if !super::index_entry_in_use(&id) {
            continue;
        }
        let Some(t) = page.item_bytes(id).and_then(IndexTupleData::parse) else { continue };
        f(off, &t.t_tid);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::gist::{F_LEAF, GIST_SPECIAL_SIZE};
    use crate::format::heap::ItemPointerData;
    use crate::health::tests::index_page_bytes;

    /// A GiST page of `flags` with 16-byte tuples whose TIDs are `tids` (on an inner page: downlinks).
    pub(crate) fn page(flags: u16, tids: &[(u32, u16)]) -> Vec<u8> {
        let mut special = [0u8; GIST_SPECIAL_SIZE];
        special[8..12].copy_from_slice(&INVALID_BLOCK_NUMBER.to_le_bytes());
        special[12..14].copy_from_slice(&flags.to_le_bytes());
        special[14..16].copy_from_slice(&GIST_PAGE_ID.to_le_bytes());
        let mut p = index_page_bytes(&special, &vec![16; tids.len()], &[]);
        let ids: Vec<_> = Page::new(&p).unwrap().item_ids().map(|(_, id)| usize::from(id.lp_off())).collect();
        for (at, &(block, offset)) in ids.into_iter().zip(tids) {
            ItemPointerData { block, offset }.write(&mut p, at);
            p[at + 6..at + 8].copy_from_slice(&16u16.to_le_bytes());
        }
        p
    }

    fn codes(bytes: &[u8], block: u64) -> Vec<(Code, Option<u16>)> {
        check_gist_page(&Page::new(bytes).unwrap(), Some(block)).iter().map(|f| (f.code, f.item)).collect()
    }

    #[test]
    fn healthy_inner_and_leaf_pages() {
        assert!(codes(&page(0, &[(1, TUPLE_IS_VALID), (2, TUPLE_IS_VALID)]), 0).is_empty());
        assert!(codes(&page(F_LEAF, &[(7, 3), (9, 1)]), 1).is_empty());
    }

    #[test]
    fn a_deleted_page_has_no_items_to_judge() {
        let mut p = page(F_LEAF | F_DELETED, &[]);
        p[12..14].copy_from_slice(&32u16.to_le_bytes()); // pd_lower over GISTDeletedPageContents
        assert!(codes(&p, 3).is_empty());
        assert_eq!(codes(&page(F_DELETED, &[]), 3), [(Code::IndexGistFlags, None)]);
    }

    #[test]
    fn bad_tids_nsn_and_flags() {
        let inner = page(0, &[(1, TUPLE_IS_INVALID), (2, 5), (0, TUPLE_IS_VALID)]);
        assert_eq!(
            codes(&inner, 4),
            [(Code::IndexGistTuple, Some(1)), (Code::IndexGistTuple, Some(2)), (Code::IndexGistTuple, Some(3))]
        );
        assert_eq!(codes(&page(F_LEAF, &[(7, 0)]), 1), [(Code::IndexGistTuple, Some(1))]);
        let mut p = page(F_LEAF | 0x40, &[]);
        p[8192 - 16..8192 - 12].copy_from_slice(&1u32.to_le_bytes()); // NSN 1/0 over LSN 0/0
        assert_eq!(codes(&p, 1), [(Code::IndexGistFlags, None), (Code::IndexGistNsn, None)]);
    }
}
