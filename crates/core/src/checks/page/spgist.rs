//! SP-GiST page checks (access/spgist_private.h): the special space and the metapage, the tuple counts the special
//! space keeps, inner tuples and their nodes, leaf tuples and their nextOffset chains, redirect and placeholder
//! tuples. Downlinks between pages are judged relation-wide in checks/scan/spgist.rs.

use super::{check_line_pointers, MAX_ITEM_FINDINGS_PER_PAGE};
use crate::finding::{Code, Finding};
use crate::format::bytes::{maxalign, u32_at};
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind, SIZE_OF_PAGE_HEADER_DATA, SPGIST_PAGE_ID};
use crate::format::spgist::{
    inner_nodes, tupstate, SpGistInnerTupleData, SpGistLeafTupleData, SpGistPageOpaqueData, INVALID_BLOCK_NUMBER,
    SGDTSIZE, SGITHDRSZ, SPGIST_DEAD, SPGIST_DELETED, SPGIST_LIVE, SPGIST_MAGIC_NUMBER, SPGIST_METAPAGE_BLKNO,
    SPGIST_NULLS, SPGIST_NULL_BLKNO, SPGIST_PLACEHOLDER, SPGIST_REDIRECT, SPGIST_ROOT_BLKNO, SPGIST_SPECIAL_SIZE,
    SPGIST_VALID_BITS,
};

/// `MaxHeapTuplesPerPage` for 8 KB pages (access/htup_details.h).
const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;

/// Findings of one page, at most [`MAX_ITEM_FINDINGS_PER_PAGE`] about items.
struct Out {
    block: Option<u64>,
    out: Vec<Finding>,
    items: usize,
}

impl Out {
    fn item(&mut self, code: Code, off: u16, msg: impl FnOnce() -> String) {
        if self.items < MAX_ITEM_FINDINGS_PER_PAGE {
            self.out.push(Finding::new(code, self.block, Some(off), msg()));
        }
        self.items += 1;
    }
    fn page(&mut self, code: Code, msg: String) {
        self.out.push(Finding::new(code, self.block, None, msg));
    }
}

/// All page-local checks of one SP-GiST page (`block` of its index).
pub fn check_spgist_page(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let mut o = Out { block, out: Vec::new(), items: 0 };
    if page.header().is_new() {
        return o.out;
    }
    let Some(opaque) = special_or_finding(page, &mut o) else { return o.out };
    if block == Some(SPGIST_METAPAGE_BLKNO) || opaque.is_meta() {
        check_meta(page, &opaque, &mut o);
        return o.out;
    }
    check_flags(&opaque, &mut o);
    o.out.extend(check_line_pointers(page, PageKind::SpGist, block));
    check_items(page, &opaque, &mut o);
    if o.items > MAX_ITEM_FINDINGS_PER_PAGE {
        let n = o.items;
        o.page(
            Code::IndexSpgistTuple,
            format!("{n} damaged tuples on this page ({} not listed)", n - MAX_ITEM_FINDINGS_PER_PAGE),
        );
    }
    o.out
}

fn special_or_finding(page: &Page<'_>, o: &mut Out) -> Option<SpGistPageOpaqueData> {
    if page.special_size() != SPGIST_SPECIAL_SIZE {
        let n = page.special_size();
        o.page(
            Code::IndexSpecialSize,
            format!("special space is {n} bytes, an SP-GiST page has {SPGIST_SPECIAL_SIZE}"),
        );
        return None;
    }
    let s = page.special().and_then(SpGistPageOpaqueData::parse)?;
    if s.spgist_page_id != SPGIST_PAGE_ID {
        let id = s.spgist_page_id;
        o.page(
            Code::IndexSpecialSize,
            format!("spgist_page_id is 0x{id:04x}, an SP-GiST page has 0x{SPGIST_PAGE_ID:04x}"),
        );
        return None;
    }
    Some(s)
}

/// The metapage is block 0 and only block 0; its first word is the magic number spgGetCache checks.
fn check_meta(page: &Page<'_>, s: &SpGistPageOpaqueData, o: &mut Out) {
    if o.block != Some(SPGIST_METAPAGE_BLKNO) {
        o.page(Code::IndexSpgistMeta, format!("flags 0x{:04x} mark a metapage, but only block 0 is one", s.flags));
        return;
    }
    if !s.is_meta() {
        o.page(
            Code::IndexSpgistMeta,
            format!("block 0 is the metapage, but its flags 0x{:04x} lack SPGIST_META", s.flags),
        );
    }
    let magic = u32_at(page.bytes(), SIZE_OF_PAGE_HEADER_DATA).unwrap_or(0);
    if magic != SPGIST_MAGIC_NUMBER {
        o.page(
            Code::IndexSpgistMeta,
            format!("magic number 0x{magic:08x}, an SP-GiST metapage has 0x{SPGIST_MAGIC_NUMBER:08x}"),
        );
    }
}

/// Flags spgist_private.h does not define or no longer writes, and the roots' nulls flags: block 1 is the root of
/// the tree of non-null keys, block 2 the root of the nulls tree (SpGistInitMetapage, spgbuild).
fn check_flags(s: &SpGistPageOpaqueData, o: &mut Out) {
    let f = s.flags;
    if f & !SPGIST_VALID_BITS != 0 || f & SPGIST_DELETED != 0 {
        o.page(Code::IndexSpgistPage, format!("flags 0x{f:04x}: bits SP-GiST never sets"));
    } else if o.block == Some(SPGIST_ROOT_BLKNO) && f & SPGIST_NULLS != 0 {
        o.page(Code::IndexSpgistPage, format!("flags 0x{f:04x}: the root of non-null keys marked SPGIST_NULLS"));
    } else if o.block == Some(SPGIST_NULL_BLKNO) && f & SPGIST_NULLS == 0 {
        o.page(Code::IndexSpgistPage, format!("flags 0x{f:04x}: the root of the nulls tree lacks SPGIST_NULLS"));
    }
}

/// Tuple states against the page kind and the special space's counts; each tuple's layout; the leaf chains.
fn check_items(page: &Page<'_>, s: &SpGistPageOpaqueData, o: &mut Out) {
    let maxoff = page.readable_item_count();
    let (mut redirects, mut placeholders) = (0u16, 0u16);
    // next[i]: the nextOffset of leaf tuple i+1 (0 for none and for tuples outside chains)
    let mut next = vec![0u16; usize::from(maxoff)];
    let mut chained = vec![false; usize::from(maxoff)];
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        let Some(state) = tupstate(t) else { continue };
        let len = usize::from(id.lp_len());
        match state {
            SPGIST_REDIRECT | SPGIST_PLACEHOLDER => {
                if state == SPGIST_REDIRECT {
                    redirects += 1;
                    check_redirect(t, off, o);
                } else {
                    placeholders += 1;
                }
                if len != SGDTSIZE {
                    o.item(Code::IndexSpgistTuple, off, || {
                        format!("a {} tuple of {len} bytes, not {SGDTSIZE}", state_name(state))
                    });
                }
            }
            _ if s.is_leaf() => {
                if let Some(n) = check_leaf(t, off, len, o) {
                    next[usize::from(off - 1)] = n;
                    chained[usize::from(off - 1)] = true;
                }
            }
            SPGIST_LIVE => check_inner(t, off, len, o),
            _ => o.item(Code::IndexSpgistTuple, off, || "a dead tuple on an inner page".to_string()),
        }
    }
    if s.n_redirection != redirects || s.n_placeholder != placeholders {
        o.page(
            Code::IndexSpgistCounts,
            format!(
                "the special space counts {} redirect and {} placeholder tuples, the page holds {redirects} and \
                 {placeholders}",
                s.n_redirection, s.n_placeholder
            ),
        );
    }
    if s.is_leaf() {
        check_chains(&next, &chained, o);
    }
}

fn state_name(state: u8) -> &'static str {
    match state {
        SPGIST_LIVE => "live",
        SPGIST_REDIRECT => "redirect",
        SPGIST_DEAD => "dead",
        _ => "placeholder",
    }
}

/// A redirect points at a tuple of another page (never the metapage: spgWalk asserts so).
fn check_redirect(t: &[u8], off: u16, o: &mut Out) {
    let Some(p) = crate::format::spgist::dead_tuple_pointer(t) else { return };
    if u64::from(p.block) == SPGIST_METAPAGE_BLKNO || p.block == INVALID_BLOCK_NUMBER || p.offset == 0 {
        o.item(Code::IndexSpgistDownlink, off, || format!("redirect to {p}, which is no tuple"));
    }
}

/// A live or dead leaf tuple: its size word, its heap TID; returns a live tuple's nextOffset. Only live tuples
/// are chained: vacuumLeafPage (spgvacuum.c) turns a chain that lost every tuple into one dead tuple, of SGDTSIZE
/// bytes and no next, that the parent's downlink still finds.
fn check_leaf(t: &[u8], off: u16, len: usize, o: &mut Out) -> Option<u16> {
    let l = SpGistLeafTupleData::parse(t)?;
    if l.tupstate == SPGIST_DEAD {
        if len != SGDTSIZE || l.next_offset() != 0 {
            o.item(Code::IndexSpgistTuple, off, || {
                format!(
                    "a dead tuple of {len} bytes with nextOffset {}, not {SGDTSIZE} bytes and none",
                    l.next_offset()
                )
            });
        }
        return None;
    }
    if l.size as usize != len || len < SGDTSIZE {
        o.item(Code::IndexSpgistTuple, off, || {
            format!("leaf tuple's size is {} but its line pointer says {len}", l.size)
        });
        return None;
    }
    if l.tupstate == SPGIST_LIVE && (l.heap_ptr.offset == 0 || l.heap_ptr.offset > MAX_HEAP_TUPLES_PER_PAGE) {
        o.item(Code::IndexSpgistTuple, off, || {
            format!("leaf tuple points to heap {}, an impossible item number", l.heap_ptr)
        });
    }
    Some(l.next_offset())
}

/// A live inner tuple: size word, alignment, node tuples inside it, downlinks that can be tuples.
fn check_inner(t: &[u8], off: u16, len: usize, o: &mut Out) {
    let Some(h) = SpGistInnerTupleData::parse(t) else { return };
    let size = usize::from(h.size);
    if size != len || size != maxalign(size) || usize::from(h.prefix_size) + SGITHDRSZ > size || h.n_nodes == 0 {
        o.item(Code::IndexSpgistInner, off, || {
            format!("inner tuple of {len} bytes says size {size}, prefix {} bytes, {} nodes", h.prefix_size, h.n_nodes)
        });
        return;
    }
    let Some(nodes) = inner_nodes(t, &h) else {
        o.item(Code::IndexSpgistInner, off, || {
            format!("the {} node tuples run past the inner tuple's {size} bytes", h.n_nodes)
        });
        return;
    };
    for (i, (_, p)) in nodes.iter().enumerate() {
        if p.block != INVALID_BLOCK_NUMBER && (u64::from(p.block) == SPGIST_METAPAGE_BLKNO || p.offset == 0) {
            o.item(Code::IndexSpgistDownlink, off, || format!("node {i} points to {p}, which is no tuple"));
        }
    }
}

/// The nextOffset chains of a non-root leaf page: each link inside the page and to a chained tuple, no tuple with
/// two predecessors, no cycle. (On a root leaf page the server does not chain: spgWalk reads every tuple.)
fn check_chains(next: &[u16], chained: &[bool], o: &mut Out) {
    let root = matches!(o.block, Some(SPGIST_ROOT_BLKNO) | Some(SPGIST_NULL_BLKNO));
    let mut preds = vec![0u16; next.len()];
    for (i, &n) in next.iter().enumerate() {
        let off = (i + 1) as u16;
        if n == 0 || !chained[i] {
            continue;
        }
        if root {
            o.item(Code::IndexSpgistLeafChain, off, || {
                format!("nextOffset {n} on a root leaf page, whose tuples are not chained")
            });
        } else if usize::from(n) > next.len() || !chained[usize::from(n) - 1] {
            o.item(Code::IndexSpgistLeafChain, off, || format!("nextOffset {n} is not a live leaf tuple of this page"));
        } else if n == off {
            o.item(Code::IndexSpgistLeafChain, off, || format!("nextOffset {n} points to the tuple itself"));
        } else {
            let p = &mut preds[usize::from(n) - 1];
            if *p != 0 {
                let first = *p;
                o.item(Code::IndexSpgistLeafChain, off, || {
                    format!("tuples {first} and {off} both continue with tuple {n}")
                });
            } else {
                *p = off;
            }
        }
    }
    if root {
        return;
    }
    // A cycle: tuples with one predecessor each all the way round, none of them a head.
    let mut seen = vec![false; next.len()];
    for (i, _) in chained.iter().enumerate().filter(|(i, c)| **c && preds[*i] == 0) {
        let mut at = i;
        while !seen[at] {
            seen[at] = true;
            let n = usize::from(next[at]);
            if n == 0 || n > next.len() || !chained[n - 1] {
                break;
            }
            at = n - 1;
        }
    }
    if let Some(i) = (0..next.len()).find(|&i| chained[i] && !seen[i]) {
        o.item(Code::IndexSpgistLeafChain, (i + 1) as u16, || {
            "this tuple's chain runs in a cycle, reached from no head".to_string()
        });
    }
}

/// The heads of a leaf page's chains (live or dead tuples no other tuple continues with), its redirects, and an
/// inner page's live tuples and redirects: what a downlink may point at. Calls `f(offset, head)` for each, `head`
/// for the chain heads.
pub fn spgist_link_targets(page: &Page<'_>, s: &SpGistPageOpaqueData, mut f: impl FnMut(u16, bool)) {
    let maxoff = usize::from(page.readable_item_count());
    let mut continued = vec![false; maxoff];
    let mut kinds = vec![SPGIST_PLACEHOLDER; maxoff];
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        let Some(state) = tupstate(t) else { continue };
        kinds[usize::from(off - 1)] = state;
        if s.is_leaf() && state == SPGIST_LIVE {
            let n = SpGistLeafTupleData::parse(t).map_or(0, |l| l.next_offset());
            if n != 0 && usize::from(n) <= maxoff && n != off {
                continued[usize::from(n) - 1] = true;
            }
        }
    }
    for (i, &k) in kinds.iter().enumerate() {
        let target = match k {
            SPGIST_REDIRECT => true,
            SPGIST_LIVE => !continued[i] || !s.is_leaf(),
            SPGIST_DEAD => s.is_leaf() && !continued[i],
            _ => false,
        };
        if target {
            f((i + 1) as u16, s.is_leaf() && k != SPGIST_REDIRECT);
        }
    }
}

/// The downlinks of a page: each live inner tuple's nodes with a child, and each redirect's pointer, as
/// (item, target).
pub fn spgist_downlinks(
    page: &Page<'_>,
    s: &SpGistPageOpaqueData,
    mut f: impl FnMut(u16, crate::format::heap::ItemPointerData),
) {
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        match tupstate(t) {
            Some(SPGIST_REDIRECT) => {
                if let Some(p) = crate::format::spgist::dead_tuple_pointer(t) {
                    f(off, p);
                }
            }
            Some(SPGIST_LIVE) if !s.is_leaf() => {
                let Some(h) = SpGistInnerTupleData::parse(t) else { continue };
                if usize::from(h.size) != t.len() {
                    continue;
                }
                for (_, p) in inner_nodes(t, &h).unwrap_or_default() {
                    if p.block != INVALID_BLOCK_NUMBER {
                        f(off, p);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every heap TID of an SP-GiST leaf page's live tuples.
pub fn for_each_spgist_leaf_tid(page: &Page<'_>, mut f: impl FnMut(u16, &crate::format::heap::ItemPointerData)) {
    let Some(s) = SpGistPageOpaqueData::from_page(page) else { return };
    if !s.is_leaf() || s.is_meta() {
        return;
    }
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(l) = page.item_bytes(id).and_then(SpGistLeafTupleData::parse) else { continue };
        if l.tupstate == SPGIST_LIVE && l.size as usize == usize::from(id.lp_len()) {
            f(off, &l.heap_ptr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::tests::index_page_bytes;

    /// A leaf page (block 5) of 16-byte live leaf tuples with the given nextOffsets.
    fn leaf(next: &[u16]) -> Vec<u8> {
        let special = [0x04, 0, 0, 0, 0, 0, 0x82, 0xFF]; // SPGIST_LEAF, no redirects or placeholders
        let mut p = index_page_bytes(&special, &vec![16; next.len()], &[]);
        let ids: Vec<_> = Page::new(&p).unwrap().item_ids().map(|(_, id)| usize::from(id.lp_off())).collect();
        for (at, &n) in ids.into_iter().zip(next) {
            p[at..at + 4].copy_from_slice(&(16u32 << 2).to_le_bytes());
            p[at + 4..at + 6].copy_from_slice(&n.to_le_bytes());
            p[at + 10..at + 12].copy_from_slice(&1u16.to_le_bytes()); // heap TID (0,1)
        }
        p
    }

    fn codes(bytes: &[u8], block: u64) -> Vec<(Code, Option<u16>)> {
        check_spgist_page(&Page::new(bytes).unwrap(), Some(block)).iter().map(|f| (f.code, f.item)).collect()
    }

    #[test]
    fn chains_heads_and_targets() {
        // two chains: 1 -> 2 -> 3 and 4
        let p = leaf(&[2, 3, 0, 0]);
        assert!(codes(&p, 5).is_empty());
        let page = Page::new(&p).unwrap();
        let s = SpGistPageOpaqueData::from_page(&page).unwrap();
        let mut heads = Vec::new();
        spgist_link_targets(&page, &s, |off, head| heads.push((off, head)));
        assert_eq!(heads, [(1, true), (4, true)]);
    }

    #[test]
    fn broken_chains() {
        assert_eq!(codes(&leaf(&[2, 9, 0]), 5), [(Code::IndexSpgistLeafChain, Some(2))]);
        assert_eq!(codes(&leaf(&[3, 3, 0]), 5), [(Code::IndexSpgistLeafChain, Some(2))]);
        assert_eq!(codes(&leaf(&[0, 3, 2]), 5), [(Code::IndexSpgistLeafChain, Some(2))]);
        // a root leaf page does not chain
        assert_eq!(codes(&leaf(&[2, 0]), 1), [(Code::IndexSpgistLeafChain, Some(1))]);
    }
}
