//! One GIN page (access/ginblock.h): the special space and its flags, the metapage, entry tree tuples (their
//! posting lists, posting tree roots and downlinks, and key order where the key is a plain type), posting tree
//! pages (compressed segments, items against the right bound, PostingItems against pd_lower) and pending list
//! pages. What needs more than one page (right-links, the pending list's chain) is in checks/scan/gin.rs.

use crate::finding::{Code, Finding};
use crate::format::bytes::{maxalign, u16_at, u32_at};
use crate::format::gin::{
    data_page_right_bound, decode_segments, tid_key, GinEntryTuple, GinMetaPageData, GinPageOpaqueData, PostingItem,
    GIN_COMPRESSED, GIN_CURRENT_VERSION, GIN_DATA, GIN_DATA_START, GIN_DELETED, GIN_LEAF, GIN_LIST, GIN_META,
    GIN_POSTING_LIST_HEADER, GIN_SPECIAL_SIZE, GIN_VALID_FLAGS, INVALID_BLOCK_NUMBER, SIZE_OF_POSTING_ITEM,
};
use crate::format::heap::ItemPointerData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind, SIZE_OF_PAGE_HEADER_DATA};

/// How an index's entry keys compare, when the opclass compares a plain type (the catalog says which): `Int4`
/// as btint4cmp (jsonb_path_ops, int4[] array_ops), `Bytes` as memcmp then length (text under C collation,
/// jsonb_ops' gin_compare_jsonb, tsvector_ops' gin_cmp_tslexeme). Other keys are checked for structure only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GinKeyKind {
    Int4,
    Bytes,
}

impl GinKeyKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "int4" => Some(GinKeyKind::Int4),
            "bytes" => Some(GinKeyKind::Bytes),
            _ => None,
        }
    }
}

/// At most this many findings of one kind per page; the rest would repeat the same damage.
const MAX_PER_PAGE: usize = 16;

struct Out {
    block: Option<u64>,
    v: Vec<Finding>,
}

impl Out {
    fn push(&mut self, code: Code, item: Option<u16>, msg: impl FnOnce() -> String) {
        if self.v.len() < MAX_PER_PAGE {
            self.v.push(Finding::new(code, self.block, item, msg()));
        }
    }
}

/// Where a GIN page check hands the heap TIDs it decodes, with the line pointer of the tuple holding each (0 on a
/// posting tree leaf, whose items have none): a scan checks them against the heap without decoding the posting
/// lists a second time.
pub type TidSink<'s> = Option<&'s mut dyn FnMut(u16, &ItemPointerData)>;

/// The page checks of one GIN page. `nblocks`: the index's length, for block numbers the page names.
pub fn check_gin_page(
    page: &Page<'_>,
    block: Option<u64>,
    nblocks: Option<u64>,
    key: Option<GinKeyKind>,
) -> Vec<Finding> {
    check_gin_page_tids(page, block, nblocks, key, None)
}

/// [`check_gin_page`], each heap TID the checks decode given to `tids` (entry tree leaves' posting lists, posting
/// tree leaves, pending list tuples; up to where a posting list is damaged).
pub fn check_gin_page_tids(
    page: &Page<'_>,
    block: Option<u64>,
    nblocks: Option<u64>,
    key: Option<GinKeyKind>,
    mut tids: TidSink<'_>,
) -> Vec<Finding> {
    let mut out = Out { block, v: Vec::new() };
    if page.header().is_new() || page.is_all_zero() {
        return out.v;
    }
    if page.special_size() != GIN_SPECIAL_SIZE {
        out.push(Code::IndexSpecialSize, None, || {
            format!("special space is {} bytes, a GIN page has {GIN_SPECIAL_SIZE}", page.special_size())
        });
        return out.v;
    }
    let Some(o) = GinPageOpaqueData::from_page(page) else { return out.v };
    if !check_flags(&mut out, &o, block) {
        return out.v;
    }
    let in_range = |b: u32| nblocks.is_none_or(|n| u64::from(b) < n) && u64::from(b) != 0;
    if o.has(GIN_META) {
        check_metapage(&mut out, page, &in_range);
    } else if o.has(GIN_DELETED) {
        // a deleted posting tree page keeps its old bytes until reused: nothing on it is read
    } else if o.has(GIN_LIST) {
        out.v.extend(super::check_line_pointers(page, PageKind::Gin, block));
        check_list_page(&mut out, page, &o, &mut tids);
    } else if o.has(GIN_DATA) && o.has(GIN_LEAF) {
        check_data_leaf(&mut out, page, &o, &mut tids);
    } else if o.has(GIN_DATA) {
        check_data_internal(&mut out, page, &o, &in_range);
    } else {
        out.v.extend(super::check_line_pointers(page, PageKind::Gin, block));
        if out.v.is_empty() {
            check_entry_page(&mut out, page, &o, &in_range, key, &mut tids);
        }
    }
    if !o.is_rightmost() && !o.has(GIN_META) && !in_range(o.rightlink) {
        out.push(Code::IndexGinRightLink, None, || {
            format!("right-link {} is not a page of this index ({} blocks)", o.rightlink, nblocks.unwrap_or(0))
        });
    }
    out.v
}

/// Flag bits no GIN page carries together; false when the page cannot be read further.
fn check_flags(out: &mut Out, o: &GinPageOpaqueData, block: Option<u64>) -> bool {
    let unknown = o.flags & !GIN_VALID_FLAGS;
    let meta_here = block.map(|b| b == 0);
    let bad = if unknown != 0 {
        Some(format!("flags 0x{:04x} have bits GIN never sets (0x{unknown:04x})", o.flags))
    } else if o.has(GIN_META) && meta_here == Some(false) {
        Some(format!("the metapage flag on a block other than 0 (flags 0x{:04x})", o.flags))
    } else if !o.has(GIN_META) && meta_here == Some(true) {
        Some(format!("block 0 of a GIN index must be the metapage, flags are 0x{:04x}", o.flags))
    } else if o.has(GIN_LIST) && o.has(GIN_DATA) {
        Some(format!("a pending list page cannot be a posting tree page (flags 0x{:04x})", o.flags))
    } else if o.has(GIN_COMPRESSED) && !(o.has(GIN_DATA) && o.has(GIN_LEAF)) && !o.has(GIN_DELETED) {
        Some(format!("only posting tree leaves are compressed (flags 0x{:04x})", o.flags))
    } else {
        None
    };
    match bad {
        Some(msg) => {
            out.push(Code::IndexGinPageFlags, None, || msg);
            false
        }
        None => true,
    }
}

/// `GinMetaPageData`: a version the server knows, the pending list's ends and counts agreeing with each other.
fn check_metapage(out: &mut Out, page: &Page<'_>, in_range: &dyn Fn(u32) -> bool) {
    let Some(m) = GinMetaPageData::parse(page.bytes()) else { return };
    if !(0..=GIN_CURRENT_VERSION).contains(&m.gin_version) {
        out.push(Code::IndexGinMetapage, None, || format!("ginVersion {} is not 0, 1 or 2", m.gin_version));
    }
    let none = (m.head == INVALID_BLOCK_NUMBER, m.tail == INVALID_BLOCK_NUMBER);
    if none.0 != none.1 {
        out.push(Code::IndexGinMetapage, None, || {
            format!("pending list head {} and tail {}: one is set, the other is not", show(m.head), show(m.tail))
        });
    } else if none.0 && (m.n_pending_pages != 0 || m.n_pending_heap_tuples != 0) {
        out.push(Code::IndexGinMetapage, None, || {
            format!(
                "no pending list, but nPendingPages {} and nPendingHeapTuples {}",
                m.n_pending_pages, m.n_pending_heap_tuples
            )
        });
    } else if !none.0 && (!in_range(m.head) || !in_range(m.tail)) {
        out.push(Code::IndexGinMetapage, None, || {
            format!("pending list head {} or tail {} is not a page of this index", m.head, m.tail)
        });
    } else if !none.0 && (m.n_pending_pages == 0 || m.n_pending_heap_tuples < 0) {
        out.push(Code::IndexGinMetapage, None, || {
            format!(
                "a pending list from {} to {}, but nPendingPages {} and nPendingHeapTuples {}",
                m.head, m.tail, m.n_pending_pages, m.n_pending_heap_tuples
            )
        });
    }
    let list_page = page.len() - SIZE_OF_PAGE_HEADER_DATA - GIN_SPECIAL_SIZE;
    if m.tail_free_size as usize > list_page {
        out.push(Code::IndexGinMetapage, None, || {
            format!("tailFreeSize {} is more than a pending list page holds ({list_page})", m.tail_free_size)
        });
    }
}

fn show(b: u32) -> String {
    if b == INVALID_BLOCK_NUMBER {
        "none".to_string()
    } else {
        b.to_string()
    }
}

/// A pending list page: its heap tuple count (the special space's maxoff) against its tuples, and each tuple's
/// heap TID a possible one (tidbitmap.c refuses others: "tuple offset out of range").
fn check_list_page(out: &mut Out, page: &Page<'_>, o: &GinPageOpaqueData, tids: &mut TidSink<'_>) {
    let items = page.header().max_offset_number();
    if o.maxoff > items {
        out.push(Code::IndexGinPendingList, None, || {
            format!("the page counts {} heap rows but holds only {items} tuples", o.maxoff)
        });
    }
    for (off, id) in page.item_ids() {
        let Some(e) = page.item_bytes(id).filter(|_| id.lp_flags() == LP_NORMAL).and_then(GinEntryTuple::parse) else {
            continue;
        };
        let tid = e.itup.t_tid;
        if let Some(f) = tids {
            f(off, &tid);
        }
        if tid.offset == 0 || tid.offset > super::MAX_HEAP_TUPLES_PER_PAGE {
            out.push(Code::IndexGinPendingList, Some(off), || format!("tuple {off}'s heap TID {tid} is impossible"));
        }
    }
}

/// A posting tree leaf: its compressed segments decode, ascend, and stay at or below the page's right bound.
fn check_data_leaf(out: &mut Out, page: &Page<'_>, o: &GinPageOpaqueData, tids: &mut TidSink<'_>) {
    let b = page.bytes();
    let bound = (!o.is_rightmost()).then(|| data_page_right_bound(b)).flatten();
    let mut last = None;
    let result = if o.has(GIN_COMPRESSED) {
        let lower = usize::from(page.header().pd_lower);
        if lower < GIN_DATA_START || lower > usize::from(page.header().pd_upper) {
            out.push(Code::IndexGinPostingList, None, || {
                format!("pd_lower {lower} does not end a posting list area that starts at {GIN_DATA_START}")
            });
            return;
        }
        decode_segments(b, GIN_DATA_START, lower, None, |t| {
            last = Some(*t);
            if let Some(f) = tids {
                f(0, t);
            }
        })
    } else {
        // pre-9.4 leaves: maxoff plain item pointers
        let n = usize::from(o.maxoff);
        if GIN_DATA_START + n * 6 > usize::from(page.header().pd_special) {
            out.push(Code::IndexGinPostingList, None, || format!("{n} item pointers do not fit the page"));
            return;
        }
        plain_items(b, GIN_DATA_START, n, &mut last, &mut |t| {
            if let Some(f) = tids {
                f(0, t);
            }
        })
    };
    if let Err(p) = result {
        out.push(Code::IndexGinPostingList, None, || format!("posting tree leaf: {p}"));
        return;
    }
    if let (Some(l), Some(bd)) = (last, bound) {
        if tid_key(&l) > tid_key(&bd) {
            out.push(Code::IndexGinPostingList, None, || {
                format!("item {l} is above the page's right bound {bd}: scans stop before it")
            });
        }
    }
}

/// `n` uncompressed item pointers at `at`, ascending.
fn plain_items(
    b: &[u8],
    at: usize,
    n: usize,
    last: &mut Option<ItemPointerData>,
    each: &mut dyn FnMut(&ItemPointerData),
) -> Result<usize, crate::format::gin::PostingProblem> {
    use crate::format::gin::PostingProblem;
    for i in 0..n {
        let item = ItemPointerData::parse(b, at + i * 6).ok_or(PostingProblem::Truncated { at: at + i * 6 })?;
        if item.offset == 0 {
            return Err(PostingProblem::InvalidItem { index: i + 1, item });
        }
        if let Some(p) = *last {
            if tid_key(&item) <= tid_key(&p) {
                return Err(PostingProblem::NotAscending { index: i + 1, item, prev: p });
            }
        }
        *last = Some(item);
        each(&item);
    }
    Ok(n)
}

/// A posting tree internal page, as amcheck's gin_index_check reads it: pd_lower agrees with maxoff, keys do not
/// descend, the last key of a level's rightmost page is (0,0), the last key is the right bound, children exist.
fn check_data_internal(out: &mut Out, page: &Page<'_>, o: &GinPageOpaqueData, in_range: &dyn Fn(u32) -> bool) {
    let b = page.bytes();
    let lower = usize::from(page.header().pd_lower);
    let n = usize::from(o.maxoff);
    if lower != GIN_DATA_START + n * SIZE_OF_POSTING_ITEM {
        out.push(Code::IndexGinPostingTree, None, || {
            format!("pd_lower {lower} does not hold the {n} posting items maxoff counts")
        });
        return;
    }
    let mut prev: Option<PostingItem> = None;
    for i in 1..=o.maxoff {
        let Some(p) = PostingItem::nth(b, i) else { return };
        if !in_range(p.child_blkno) {
            out.push(Code::IndexGinPostingTree, Some(i), || {
                format!("posting item {i} leads to block {}, not a page of this index", p.child_blkno)
            });
        }
        let last_of_level = i == o.maxoff && o.is_rightmost();
        if last_of_level && (p.key.block != 0 || p.key.offset != 0) {
            out.push(Code::IndexGinPostingTree, Some(i), || {
                format!("the last key of a level's rightmost page is {}, not (0,0)", p.key)
            });
        } else if let Some(q) = prev.filter(|q| !last_of_level && tid_key(&p.key) < tid_key(&q.key)) {
            out.push(Code::IndexGinPostingTree, Some(i), || {
                format!("posting item {i}'s key {} is below the key {} before it", p.key, q.key)
            });
        }
        if i == o.maxoff && !o.is_rightmost() {
            let bound = data_page_right_bound(b);
            if bound.is_some_and(|bd| tid_key(&p.key) > tid_key(&bd)) {
                out.push(Code::IndexGinPostingTree, Some(i), || {
                    format!("the last key {} is above the page's right bound", p.key)
                });
            }
        }
        prev = Some(p);
    }
}

/// An entry tree page's tuples: sizes, posting lists or posting tree roots on leaves, downlinks on internal pages,
/// and key order where `key` says how keys compare.
fn check_entry_page(
    out: &mut Out,
    page: &Page<'_>,
    o: &GinPageOpaqueData,
    in_range: &dyn Fn(u32) -> bool,
    key: Option<GinKeyKind>,
    tids: &mut TidSink<'_>,
) {
    let leaf = o.has(GIN_LEAF);
    let maxoff = page.header().max_offset_number();
    let mut prev: Option<EntryKey<'_>> = None;
    for (off, id) in page.item_ids() {
        if id.lp_flags() != LP_NORMAL {
            continue;
        }
        let Some(t) = page.item_bytes(id) else { continue };
        let Some(e) = GinEntryTuple::parse(t) else { continue };
        if maxalign(e.itup.size()) != maxalign(t.len()) || e.itup.size() < 8 {
            out.push(Code::IndexGinEntryTuple, Some(off), || {
                format!("the tuple says it has {} bytes, its line pointer {}", e.itup.size(), t.len())
            });
            prev = None;
            continue;
        }
        if leaf {
            check_entry_posting(out, off, t, &e, in_range, tids);
        } else if !in_range(e.block()) {
            out.push(Code::IndexGinEntryTuple, Some(off), || {
                format!("downlink to block {}, not a page of this index", e.block())
            });
        }
        let Some(kind) = key else { continue };
        let this = EntryKey::of(t, &e, kind);
        let high_key_of_level = !leaf && off == maxoff && o.is_rightmost();
        if let (Some(a), Some(b)) = (prev.as_ref(), this.as_ref()) {
            if !high_key_of_level && a.cmp(b) != std::cmp::Ordering::Less {
                out.push(Code::IndexGinEntryOrder, Some(off), || {
                    format!("the key of item {off} does not sort after the key of item {}", off - 1)
                });
            }
        }
        prev = this;
    }
}

/// A leaf entry tuple's postings: a posting tree root that exists, or a posting list inside the tuple whose item
/// count is the one the tuple header gives.
fn check_entry_posting(
    out: &mut Out,
    off: u16,
    t: &[u8],
    e: &GinEntryTuple,
    in_range: &dyn Fn(u32) -> bool,
    tids: &mut TidSink<'_>,
) {
    if e.is_posting_tree() {
        if !in_range(e.block()) {
            out.push(Code::IndexGinEntryTuple, Some(off), || {
                format!("posting tree root {} is not a page of this index", e.block())
            });
        }
        return;
    }
    let n = usize::from(e.n_posting());
    let start = e.posting_offset();
    let size = e.itup.size();
    if start < e.itup.data_offset() || start > size {
        out.push(Code::IndexGinEntryTuple, Some(off), || {
            format!("the posting list offset {start} lies outside the {size}-byte tuple")
        });
        return;
    }
    let mut last = None;
    let mut each = |tid: &ItemPointerData| {
        if let Some(f) = tids {
            f(off, tid);
        }
    };
    let result = if !e.is_compressed() {
        if start + n * 6 > size {
            Err(crate::format::gin::PostingProblem::Truncated { at: start })
        } else {
            plain_items(t, start, n, &mut last, &mut each)
        }
    } else if n == 0 {
        Ok(0)
    } else {
        // ginReadTuple decodes one segment (SizeOfGinPostingList)
        let seg_end = u16_at(t, start + 6).map(|nb| start + GIN_POSTING_LIST_HEADER + usize::from(nb));
        match seg_end.filter(|end| *end <= size) {
            Some(end) => decode_segments(t, start, end, None, &mut each),
            None => Err(crate::format::gin::PostingProblem::Truncated { at: start }),
        }
    };
    match result {
        Err(p) => out.push(Code::IndexGinPostingList, Some(off), || format!("entry tuple {off}'s posting list: {p}")),
        Ok(got) if got != n => out.push(Code::IndexGinPostingList, Some(off), || {
            format!("entry tuple {off} says it holds {n} items, its posting list decodes to {got}")
        }),
        Ok(_) => {}
    }
}

/// An entry key as ginCompareEntries orders it: null category first, then the key.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum EntryKey<'a> {
    Int4(i8, i32),
    Bytes(i8, &'a [u8]),
}

impl<'a> EntryKey<'a> {
    /// The key of a single-column index's entry tuple; `None` when it cannot be read plainly (compressed).
    fn of(t: &'a [u8], e: &GinEntryTuple, kind: GinKeyKind) -> Option<Self> {
        let at = e.itup.data_offset();
        if e.itup.has_nulls() {
            let cat = *t.get(at)? as i8;
            return Some(match kind {
                GinKeyKind::Int4 => EntryKey::Int4(cat, 0),
                GinKeyKind::Bytes => EntryKey::Bytes(cat, &[]),
            });
        }
        match kind {
            GinKeyKind::Int4 => Some(EntryKey::Int4(0, u32_at(t, at)? as i32)),
            GinKeyKind::Bytes => plain_varlena(t, at).map(|v| EntryKey::Bytes(0, v)),
        }
    }
}

/// The bytes of an uncompressed in-line varlena at `at` (postgres.h's 1-byte and 4-byte headers).
fn plain_varlena(t: &[u8], at: usize) -> Option<&[u8]> {
    let b0 = *t.get(at)?;
    if b0 & 0x01 != 0 {
        let len = usize::from(b0 >> 1);
        // 0x01 alone is a TOAST pointer's header
        return (b0 != 0x01 && len >= 1).then(|| t.get(at + 1..at + len)).flatten();
    }
    let h = u32_at(t, at)?;
    if h & 0x03 != 0 {
        return None;
    }
    let len = (h >> 2) as usize;
    t.get(at + 4..at.checked_add(len)?)
}

#[cfg(test)]
mod tests;
