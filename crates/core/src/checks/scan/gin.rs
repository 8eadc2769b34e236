//! A GIN index across its pages, once every chunk is in: right-links (each leads to a page of the same kind, and
//! no page is the right sibling of two), and the pending list (from the metapage's head through GIN_LIST pages to
//! its tail, with the page and heap row counts the metapage keeps). And the heap TIDs of a GIN page, for the check
//! against the heap's line pointers.

use std::collections::HashMap;

use crate::finding::{Code, Finding};
use crate::format::gin::{
    decode_segments, GinEntryTuple, GinMetaPageData, GinPageOpaqueData, GIN_COMPRESSED, GIN_DATA, GIN_DATA_START,
    GIN_DELETED, GIN_LEAF, GIN_LIST, GIN_META, INVALID_BLOCK_NUMBER,
};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;

/// A GIN page's links: (block, rightlink, flags, the special space's maxoff).
pub(super) type GinLink = (u64, u32, u16, u16);

/// The flags that make two pages of one chain: a right sibling has the same ones (ginbtree.c's ginStepRight
/// fails with "right sibling of GIN page is of different type" otherwise).
const KIND_FLAGS: u16 = GIN_DATA | GIN_LEAF | GIN_LIST;

/// Every heap TID on a GIN page, with the line pointer of the tuple holding it (0 on a posting tree leaf, whose
/// items have none): entry tree leaves' posting lists, posting tree leaves, pending list tuples. Deleted and
/// other pages give none; decoding stops where a posting list is damaged (the page checks report that).
pub(crate) fn for_each_gin_tid(page: &Page<'_>, mut f: impl FnMut(u16, &ItemPointerData)) {
    let Some(o) = GinPageOpaqueData::from_page(page) else { return };
    if o.has(GIN_DELETED) || o.has(GIN_META) {
        return;
    }
    let b = page.bytes();
    if o.has(GIN_DATA) {
        if o.has(GIN_LEAF) && o.has(GIN_COMPRESSED) {
            let lower = usize::from(page.header().pd_lower).min(usize::from(page.header().pd_upper));
            let _ = decode_segments(b, GIN_DATA_START, lower, None, |t| f(0, t));
        }
        return;
    }
    let list = o.has(GIN_LIST);
    if !list && !o.has(GIN_LEAF) {
        return;
    }
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        let Some(e) = GinEntryTuple::parse(t) else { continue };
        if list {
            f(off, &e.itup.t_tid);
            continue;
        }
        let (start, n, size) = (e.posting_offset(), usize::from(e.n_posting()), e.itup.size().min(t.len()));
        if e.is_posting_tree() || n == 0 || start >= size {
            continue;
        }
        if e.is_compressed() {
            let end = crate::format::bytes::u16_at(t, start + 6).map(|nb| start + 8 + usize::from(nb));
            if let Some(end) = end.filter(|e| *e <= size) {
                let _ = decode_segments(t, start, end, None, |tid| f(off, tid));
            }
        } else {
            for i in 0..n {
                match ItemPointerData::parse(t, start + i * 6).filter(|_| start + i * 6 + 6 <= size) {
                    Some(tid) => f(off, &tid),
                    None => break,
                }
            }
        }
    }
}

/// The relation-wide GIN checks. `links` sorted by block; `meta`: the metapage's data when it was judged;
/// `skipped` (sorted): pages not judged, whose links are not followed.
pub(super) fn gin_checks(out: &mut Vec<Finding>, links: &[GinLink], meta: Option<&GinMetaPageData>, skipped: &[u64]) {
    let find = |blk: u32| links.binary_search_by_key(&u64::from(blk), |l| l.0).ok().map(|i| links[i]);
    let judged = |blk: u32| skipped.binary_search(&u64::from(blk)).is_err();
    let mut left_of: HashMap<u32, u64> = HashMap::new();
    for &(block, right, flags, _) in links {
        if flags & (GIN_DELETED | GIN_META) != 0 || right == INVALID_BLOCK_NUMBER {
            continue;
        }
        match find(right) {
            None if !judged(right) => continue,
            None => continue, // past the end or not a GIN page: the page check names it
            Some((_, _, rflags, _)) if rflags & GIN_DELETED != 0 => out.push(Finding::new(
                Code::IndexGinRightLink,
                Some(block),
                None,
                format!("right-link {right} leads to a deleted page: the page deletion was not finished"),
            )),
            Some((_, _, rflags, _)) if rflags & KIND_FLAGS != flags & KIND_FLAGS || rflags & GIN_META != 0 => {
                out.push(Finding::new(
                    Code::IndexGinRightLink,
                    Some(block),
                    None,
                    format!("right-link {right} leads to {}, this page is {}", a_role(rflags), a_role(flags)),
                ))
            }
            Some(_) => {}
        }
        if let Some(other) = left_of.insert(right, block) {
            out.push(Finding::new(
                Code::IndexGinRightLink,
                Some(block),
                None,
                format!("right-link {right} is also the right-link of block {other}: a page has two left siblings"),
            ));
        }
    }
    if let Some(m) = meta {
        pending_list(out, links, m, &find, &judged);
    }
}

/// The role of a page with `flags`, with its article: "an entry tree leaf".
fn a_role(flags: u16) -> String {
    let role = GinPageOpaqueData { rightlink: 0, maxoff: 0, flags }.role();
    let article = if role.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {role}")
}

/// The pending list from the metapage's head to its tail: GIN_LIST pages only, ending at the tail, as many pages
/// and heap rows as the metapage counts. A broken link is reported on the page that holds it (the metapage for its
/// head). A page not judged ends the walk without a verdict.
fn pending_list(
    out: &mut Vec<Finding>,
    links: &[GinLink],
    m: &GinMetaPageData,
    find: &dyn Fn(u32) -> Option<GinLink>,
    judged: &dyn Fn(u32) -> bool,
) {
    if m.head == INVALID_BLOCK_NUMBER {
        return;
    }
    let mut fail = |block: u64, msg: String| out.push(Finding::new(Code::IndexGinPendingList, Some(block), None, msg));
    let (mut at, mut pages, mut rows, mut from) = (m.head, 0u64, 0i64, 0u64);
    while at != INVALID_BLOCK_NUMBER {
        if !judged(at) {
            return;
        }
        let link = if pages == 0 { "the metapage's pending list head" } else { "its right-link" };
        let Some((block, right, flags, maxoff)) = find(at) else {
            return fail(from, format!("{link} leads to block {at}, not a page of this index"));
        };
        if flags & GIN_LIST == 0 || flags & GIN_DELETED != 0 {
            return fail(from, format!("{link} leads to block {at}, {}, not a pending list page", a_role(flags)));
        }
        pages += 1;
        rows += i64::from(maxoff);
        if pages > links.len() as u64 {
            return fail(block, "the pending list's right-links go round in a circle".to_string());
        }
        if at == m.tail && right != INVALID_BLOCK_NUMBER {
            return fail(block, format!("the metapage's tail page links on to block {right}"));
        }
        (from, at) = (block, right);
    }
    if u64::from(m.tail) != from {
        fail(0, format!("the pending list ends at block {from}, the metapage says its tail is {}", m.tail));
    } else if pages != u64::from(m.n_pending_pages) || rows != m.n_pending_heap_tuples {
        fail(
            0,
            format!(
                "the pending list has {pages} pages and {rows} heap rows, the metapage counts {} and {}",
                m.n_pending_pages, m.n_pending_heap_tuples
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(head: u32, tail: u32, pages: u32, rows: i64) -> GinMetaPageData {
        GinMetaPageData {
            head,
            tail,
            tail_free_size: 0,
            n_pending_pages: pages,
            n_pending_heap_tuples: rows,
            n_total_pages: 0,
            n_entry_pages: 0,
            n_data_pages: 0,
            n_entries: 0,
            gin_version: 2,
        }
    }

    #[test]
    fn a_sound_pending_list_and_a_broken_one() {
        let links = vec![
            (0, INVALID_BLOCK_NUMBER, GIN_META, 0),
            (1, INVALID_BLOCK_NUMBER, GIN_LEAF, 0),
            (2, 3, GIN_LIST, 2),
            (3, INVALID_BLOCK_NUMBER, GIN_LIST, 1),
        ];
        let mut out = Vec::new();
        gin_checks(&mut out, &links, Some(&meta(2, 3, 2, 3)), &[]);
        assert!(out.is_empty(), "{out:?}");
        gin_checks(&mut out, &links, Some(&meta(2, 3, 2, 4)), &[]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].code, Code::IndexGinPendingList);
        out.clear();
        gin_checks(&mut out, &links, Some(&meta(2, 3, 2, 4)), &[3]);
        assert!(out.is_empty(), "a page not judged gives no verdict: {out:?}");
        let mut bad = links.clone();
        bad[2].1 = 1; // the list leads into the entry tree
        gin_checks(&mut out, &bad, Some(&meta(2, 3, 2, 3)), &[]);
        assert!(out.iter().any(|f| f.code == Code::IndexGinRightLink && f.block == Some(2)), "{out:?}");
        assert!(out.iter().any(|f| f.code == Code::IndexGinPendingList && f.block == Some(2)), "{out:?}");
        out.clear();
        let mut head = links.clone();
        head[1].2 = GIN_LEAF;
        gin_checks(&mut out, &head, Some(&meta(1, 3, 2, 3)), &[]);
        assert_eq!(out.iter().map(|f| (f.code, f.block)).collect::<Vec<_>>(), [(Code::IndexGinPendingList, Some(0))]);
    }
}
