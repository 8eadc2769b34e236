//! Checks over one page. Each is a small function returning findings; none prints or panics.
//! Scan (whole files) and inspect (one block) both call these.

use crate::finding::{Code, Finding};
use crate::format::btree::{BTPageOpaqueData, BT_SPECIAL_SIZE};
use crate::format::bytes::maxalign;
use crate::format::checksum::pg_checksum_page;
use crate::format::heap::{HeapTupleHeaderData, MAX_HEAP_ATTRIBUTE_NUMBER, MIN_HEAP_TUPLE_SIZE};
use crate::format::itemid::ItemIdData;
use crate::format::itemid::{LP_NORMAL, LP_REDIRECT, LP_UNUSED, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{
    Page, PageKind, MAX_BT_CYCLE_ID, PD_VALID_FLAG_BITS, PG_PAGE_LAYOUT_VERSION, SIZE_OF_PAGE_HEADER_DATA,
};
use crate::visibility::transam::{multi_precedes, xid_precedes, Horizons, FIRST_NORMAL_TRANSACTION_ID};

pub mod gin;

/// Header findings for one page: PageIsVerified's rules, one finding per broken rule, plus what the
/// server does not check but later trips over (pd_lower inside the header) or never writes
/// differently (the size/version word: BLCKSZ and layout version 4; damage, though read silently).
pub fn check_header(page: &Page<'_>, block: Option<u64>, checksums: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let h = page.header();
    let blcksz = page.len();
    if page.is_all_zero() {
        return out;
    }
    if checksums && !h.is_new() {
        let blk32 = block.unwrap_or(0) as u32;
        if let Some(calc) = pg_checksum_page(page.bytes(), blk32) {
            if calc != h.pd_checksum {
                out.push(Finding::new(
                    Code::ChecksumMismatch,
                    block,
                    None,
                    format!("calculated checksum {calc} but the page holds {}", h.pd_checksum),
                ));
            }
        }
    }
    if h.is_new() {
        out.push(Finding::new(
            Code::PageHeaderUpperZero,
            block,
            None,
            format!(
                "pd_upper is 0 but the page is not all zeroes (pd_lower {}, pd_special {})",
                h.pd_lower, h.pd_special
            ),
        ));
    }
    let unknown = h.pd_flags & !PD_VALID_FLAG_BITS;
    if unknown != 0 {
        out.push(Finding::new(
            Code::PageHeaderBadFlags,
            block,
            None,
            format!("pd_flags 0x{:04x} has undefined bits 0x{unknown:04x}", h.pd_flags),
        ));
    }
    if h.pd_lower > h.pd_upper && !h.is_new() {
        out.push(Finding::new(
            Code::PageHeaderLowerGtUpper,
            block,
            None,
            format!("pd_lower {} is above pd_upper {}", h.pd_lower, h.pd_upper),
        ));
    }
    if h.pd_upper > h.pd_special {
        out.push(Finding::new(
            Code::PageHeaderUpperGtSpecial,
            block,
            None,
            format!("pd_upper {} is above pd_special {}", h.pd_upper, h.pd_special),
        ));
    }
    if usize::from(h.pd_special) > blcksz {
        out.push(Finding::new(
            Code::PageHeaderSpecialGtBlcksz,
            block,
            None,
            format!("pd_special {} is beyond the {blcksz}-byte page", h.pd_special),
        ));
    }
    if usize::from(h.pd_special) != maxalign(usize::from(h.pd_special)) {
        out.push(Finding::new(
            Code::PageHeaderSpecialUnaligned,
            block,
            None,
            format!("pd_special {} is not a multiple of 8", h.pd_special),
        ));
    }
    if usize::from(h.pd_lower) < SIZE_OF_PAGE_HEADER_DATA && !h.is_new() {
        out.push(Finding::new(
            Code::PageHeaderLowerBelowHeader,
            block,
            None,
            format!("pd_lower {} points inside the 24-byte page header", h.pd_lower),
        ));
    }
    if h.page_size() != blcksz {
        out.push(Finding::new(
            Code::PageHeaderPageSize,
            block,
            None,
            format!("the header says the page has {} bytes, the file has {blcksz}-byte blocks", h.page_size()),
        ));
    }
    if h.layout_version() != PG_PAGE_LAYOUT_VERSION {
        out.push(Finding::new(
            Code::PageHeaderLayoutVersion,
            block,
            None,
            format!("page layout version {} (expected {PG_PAGE_LAYOUT_VERSION})", h.layout_version()),
        ));
    }
    out
}

/// At most this many line pointer findings per page; past it one summary finding counts the rest.
/// A garbage item-ID array would otherwise yield hundreds of findings for one damaged page.
pub const MAX_ITEM_FINDINGS_PER_PAGE: usize = 16;

/// Collects per-item findings, formatting messages only for the ones that will be kept.
struct ItemFindings {
    block: Option<u64>,
    out: Vec<Finding>,
    suppressed: usize,
}

impl ItemFindings {
    fn push(&mut self, code: Code, item: u16, message: impl FnOnce() -> String) {
        if self.out.len() < MAX_ITEM_FINDINGS_PER_PAGE {
            self.out.push(Finding::new(code, self.block, Some(item), message()));
        } else {
            self.suppressed += 1;
        }
    }

    fn finish(mut self, total_items: u16) -> Vec<Finding> {
        if self.suppressed > 0 {
            let bad = self.out.len() + self.suppressed;
            self.out.push(Finding::new(
                Code::LinePointerManyInvalid,
                self.block,
                None,
                format!(
                    "{bad} problems among {total_items} line pointers ({} more not listed): the item-ID array \
                     is probably overwritten",
                    self.suppressed
                ),
            ));
        }
        self.out
    }
}

/// Where items may live on a page, computed once per page.
struct Placement {
    len: usize,
    upper: usize,
    special: usize,
    array_end: usize,
    maxoff: u16,
}

impl Placement {
    fn of(page: &Page<'_>) -> Self {
        let h = page.header();
        let len = page.len();
        Placement {
            len,
            upper: usize::from(h.pd_upper),
            special: usize::from(h.pd_special).min(len),
            array_end: SIZE_OF_PAGE_HEADER_DATA + usize::from(h.max_offset_number()) * SIZE_OF_ITEM_ID_DATA,
            maxoff: page.readable_item_count(),
        }
    }
}

fn check_item_count(f: &mut ItemFindings, page: &Page<'_>, at: &Placement) {
    if at.array_end > at.len {
        let h = page.header();
        f.out.push(Finding::new(
            Code::LinePointerCount,
            f.block,
            None,
            format!(
                "pd_lower {} claims {} line pointers, more than the page can hold",
                h.pd_lower,
                h.max_offset_number()
            ),
        ));
    }
}

#[inline(always)]
/// One line pointer: redirect target, placement of its storage, and for heap tuples alignment
/// and minimum size. Returns the item's bytes when they lie inside the page.
fn check_item<'a>(
    f: &mut ItemFindings,
    page: &Page<'a>,
    kind: PageKind,
    at: &Placement,
    off: u16,
    id: ItemIdData,
) -> Option<&'a [u8]> {
    let flags = id.lp_flags();
    if flags == LP_REDIRECT {
        let target = id.lp_off();
        let maxoff = at.maxoff;
        if target == 0 || target > maxoff {
            f.push(Code::LinePointerRedirectTarget, off, || format!("redirect to item {target}, outside 1..{maxoff}"));
        } else if let Some(t) = page.item_id(target) {
            if t.lp_flags() != LP_NORMAL {
                f.push(Code::LinePointerRedirectTarget, off, || {
                    format!("redirect to item {target}, which is {} rather than a tuple", t.flags_name())
                });
            }
        }
        return None;
    }
    if !id.has_storage() {
        return None;
    }
    let start = usize::from(id.lp_off());
    let end = start + usize::from(id.lp_len());
    if end > at.len {
        let len = at.len;
        f.push(Code::LinePointerPastPage, off, || {
            format!("item at {start} of length {} runs past the end of the {len}-byte page", id.lp_len())
        });
        return None;
    }
    if start < at.upper || start < at.array_end {
        let upper = at.upper;
        f.push(Code::LinePointerBeforeUpper, off, || {
            format!("item at {start} starts before pd_upper {upper} (free space or the line pointer array)")
        });
    } else if end > at.special {
        let special = at.special;
        f.push(Code::LinePointerPastSpecial, off, || {
            format!("item at {start}..{end} overlaps the special space at {special}")
        });
    }
    if kind == PageKind::Heap && flags == LP_NORMAL {
        if start != maxalign(start) {
            f.push(Code::LinePointerUnaligned, off, || format!("tuple offset {start} is not a multiple of 8"));
        }
        if usize::from(id.lp_len()) < MIN_HEAP_TUPLE_SIZE {
            f.push(Code::LinePointerTooShort, off, || {
                format!("tuple length {} is below the {MIN_HEAP_TUPLE_SIZE}-byte minimum", id.lp_len())
            });
        }
    }
    page.bytes().get(start..end)
}

/// Line pointers of a page with ordinary items (btree, GiST, sequence): count, placement,
/// redirect targets.
pub fn check_line_pointers(page: &Page<'_>, kind: PageKind, block: Option<u64>) -> Vec<Finding> {
    if page.header().is_new() || page.is_all_zero() {
        return Vec::new();
    }
    let mut f = ItemFindings { block, out: Vec::new(), suppressed: 0 };
    let at = Placement::of(page);
    check_item_count(&mut f, page, &at);
    for (off, id) in page.item_ids() {
        check_item(&mut f, page, kind, &at, off, id);
    }
    f.finish(at.maxoff)
}

/// What heap tuple checks may use beyond the page: the relation's size and the cluster's
/// transaction horizons. Both optional; checks that need them are skipped without.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeapContext<'a> {
    pub nblocks: Option<u64>,
    pub horizons: Option<&'a Horizons>,
    /// The relation's attribute count (pg_class.relnatts), when the catalog was consulted.
    pub relnatts: Option<u16>,
    /// For a GIN index: how its entry keys compare, when the catalog says (key order is checked then).
    pub gin_key: Option<gin::GinKeyKind>,
}

/// A heap page's items in one pass: each line pointer, and the header of each tuple whose
/// storage lies in the page (t_hoff, natts, XIDs against the horizons, infomask, t_ctid).
/// `tuples`: whether the header is sane enough for tuple offsets to mean anything.
pub fn check_heap_items(page: &Page<'_>, block: u64, ctx: &HeapContext<'_>, tuples: bool) -> Vec<Finding> {
    if page.header().is_new() || page.is_all_zero() {
        return Vec::new();
    }
    let mut f = ItemFindings { block: Some(block), out: Vec::new(), suppressed: 0 };
    let at = Placement::of(page);
    check_item_count(&mut f, page, &at);
    // HOT chain links on this page, (from, to, updater): redirects (no updater) and HOT-updated
    // tuples' t_ctid with their plain-XID xmax, the xmin the successor must carry.
    let mut links: Vec<(u16, u16, Option<u32>)> = Vec::new();
    let mut items: Vec<(usize, usize)> = Vec::new();
    for (off, id) in page.item_ids() {
        if id.lp_flags() == LP_REDIRECT {
            links.push((off, id.lp_off(), None));
        }
        let Some(tuple) = check_item(&mut f, page, PageKind::Heap, &at, off, id) else { continue };
        if !tuples || id.lp_flags() != LP_NORMAL {
            continue;
        }
        items.push((usize::from(id.lp_off()), tuple.len()));
        if let Some(t) = HeapTupleHeaderData::parse(tuple) {
            check_heap_tuple(&mut f, block, off, tuple.len(), &t, at.maxoff, ctx);
            // A MultiXact xmax hides the updating XID (pg_multixact is not at hand here): such a
            // link cannot be matched to its successor and is left unjudged.
            if t.t_infomask2 & crate::format::heap::HEAP_HOT_UPDATED != 0
                && u64::from(t.t_ctid.block) == block
                && t.t_infomask & crate::format::heap::HEAP_XMAX_IS_MULTI == 0
            {
                links.push((off, t.t_ctid.offset, Some(t.t_xmax)));
            }
        }
    }
    if tuples && !links.is_empty() {
        check_hot_chains(&mut f, page, &at, &mut links);
    }
    if tuples && f.out.is_empty() {
        for (o, slot) in unreferenced_tuples(page.bytes(), block, at.upper, at.special, &mut items) {
            f.out.push(Finding::new(
                Code::LinePointerUnreferencedTuple,
                Some(block),
                Some(slot),
                format!(
                    "a tuple header at offset {o} in the tuple area names line pointer {slot} as its own, which is \
unused: a row the server no longer returns (its line pointer was lost), unless the row was removed with pg_surgery's \
heap_force_kill (its bytes stay until the page is pruned)"
                ),
            ));
        }
    }
    f.finish(at.maxoff)
}

/// Stretches of a heap page's tuple area [pd_upper, pd_special) that no item covers and that begin with what looks
/// like a tuple header: a row whose line pointer was lost (set unused, or overwritten by a valid-looking one). The
/// server no longer sees such a row, and says nothing. `items` are the (offset, length) of the LP_NORMAL items.
///
/// A healthy page has no such gaps: PageAddItem places each tuple MAXALIGN(len) below the last, and pruning
/// compacts what is left (PageRepairFragmentation, storage/page/bufpage.c), so only padding lies between tuples.
///
/// Only a tuple whose own t_ctid names an unused line pointer of this page counts: pg_surgery's heap_force_kill sets
/// a pointer dead and leaves the bytes until the next pruning, and a row killed on purpose is no loss.
pub fn unreferenced_tuples(
    page: &[u8],
    block: u64,
    upper: usize,
    special: usize,
    items: &mut [(usize, usize)],
) -> Vec<(usize, u16)> {
    let special = special.min(page.len());
    let mut out = Vec::new();
    if upper >= special {
        return out;
    }
    let Some(pg) = Page::new(page) else { return out };
    let maxoff = pg.readable_item_count();
    // the slot the tuple names for itself is unused (or past the array): its pointer was lost
    let slot_lost = |h: &HeapTupleHeaderData| {
        u64::from(h.t_ctid.block) == block
            && h.t_ctid.offset >= 1
            && (h.t_ctid.offset > maxoff || pg.item_id(h.t_ctid.offset).is_some_and(|id| id.lp_flags() == LP_UNUSED))
    };
    items.sort_unstable();
    let mut at = maxalign(upper);
    let look = |from: usize, to: usize, out: &mut Vec<(usize, u16)>| {
        let mut o = maxalign(from);
        while o + crate::format::heap::SIZEOF_HEAP_TUPLE_HEADER <= to {
            if let Some(h) = page.get(o..to).and_then(HeapTupleHeaderData::parse) {
                let hoff = usize::from(h.t_hoff);
                let natts = h.natts();
                if hoff >= crate::format::heap::SIZEOF_HEAP_TUPLE_HEADER
                    && hoff % 8 == 0
                    && hoff == h.expected_hoff()
                    && natts > 0
                    && (h.t_xmin != 0 || h.t_infomask & crate::format::heap::HEAP_XMIN_FROZEN != 0)
                    && o + hoff <= to
                    && slot_lost(&h)
                {
                    out.push((o, h.t_ctid.offset));
                    return;
                }
            }
            o += 8;
        }
    };
    for &(off, len) in items.iter() {
        if off >= special || off + len <= upper {
            continue;
        }
        if off > at {
            look(at, off, &mut out);
        }
        at = at.max(maxalign(off + len));
    }
    if at < special {
        look(at, special, &mut out);
    }
    out
}

/// HOT chains inside one page, as verify_heapam follows them: a redirect or a HOT update must
/// lead to a heap-only tuple, and no tuple may have two predecessors. A HOT update's t_ctid only
/// counts when the tuple there was written by that update (its xmin is the updater's XID): when
/// the update aborted, pruning may have freed the successor's slot and a later, unrelated tuple
/// may sit there.
fn check_hot_chains(f: &mut ItemFindings, page: &Page<'_>, at: &Placement, links: &mut Vec<(u16, u16, Option<u32>)>) {
    use crate::format::heap::HEAP_ONLY_TUPLE;
    let successor = |to: u16| {
        if to == 0 || to > at.maxoff {
            return None;
        }
        let id = page.item_id(to)?;
        if id.lp_flags() != LP_NORMAL {
            return None;
        }
        page.item_bytes(id).and_then(HeapTupleHeaderData::parse)
    };
    links.retain(|&(_, to, updater)| match updater {
        None => true,
        // a pruned successor (dead/unused) is normal; an unparsable one is reported elsewhere
        Some(x) => successor(to).is_some_and(|t| t.t_xmin == x),
    });
    links.sort_unstable_by_key(|l| l.1);
    for pair in links.windows(2) {
        let ((a, to, _), (b, _, _)) = (pair[0], pair[1]);
        if pair[0].1 == pair[1].1 {
            f.push(Code::LinePointerHotChain, b, || {
                format!("items {a} and {b} both lead to item {to}: a tuple has two predecessors")
            });
        }
    }
    for &(from, to, _) in links.iter() {
        // redirects to a dead/unused slot or out of range are reported as redirect problems
        let Some(t) = successor(to) else { continue };
        if t.t_infomask2 & HEAP_ONLY_TUPLE == 0 {
            f.push(Code::LinePointerHotChain, from, || {
                format!("item {from} leads to item {to} by a HOT link, but item {to} is not a heap-only tuple")
            });
        }
    }
}

/// `MaxHeapTuplesPerPage` for 8 KB pages (access/htup_details.h).
pub const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;
/// `MovedPartitionsOffsetNumber` and `SpecTokenOffsetNumber` (storage/itemptr.h): t_ctid offsets
/// with a special meaning.
pub const MOVED_PARTITIONS_OFFSET_NUMBER: u16 = 0xFFFD;
pub const SPEC_TOKEN_OFFSET_NUMBER: u16 = 0xFFFE;

/// One heap tuple header: t_hoff against natts and the null bitmap and the item length, natts
/// against the heap limit, XIDs and MultiXactIds against the cluster's horizons, contradictory
/// infomask bits, and t_ctid. A tuple whose XID lies outside the horizons is what produces "could
/// not access status of transaction" (its pg_xact segment is gone) or rows that silently vanish (a
/// "future" XID reads as in progress).
#[inline(always)]
fn check_heap_tuple(
    f: &mut ItemFindings,
    block: u64,
    off: u16,
    len: usize,
    t: &HeapTupleHeaderData,
    maxoff: u16,
    ctx: &HeapContext<'_>,
) {
    check_tuple_layout(f, off, len, t, ctx.relnatts);
    if let Some(h) = ctx.horizons {
        check_tuple_xids(f, off, t, h);
    }
    check_tuple_infomask(f, off, t);
    check_tuple_ctid(f, block, off, t, maxoff, ctx.nblocks);
}

/// t_hoff against natts, the null bitmap and the item length `len`; natts against the heap limit and the
/// table's attribute count.
#[inline(always)]
fn check_tuple_layout(f: &mut ItemFindings, off: u16, len: usize, t: &HeapTupleHeaderData, relnatts: Option<u16>) {
    let hoff = usize::from(t.t_hoff);
    if hoff > len {
        f.push(Code::TupleHeaderHoffGtLen, off, || format!("t_hoff {hoff} is beyond the tuple length {len}"));
    } else if hoff != t.expected_hoff() {
        f.push(Code::TupleHeaderTHoff, off, || {
            format!(
                "t_hoff {hoff} but {} attributes{} need {}",
                t.natts(),
                if t.has_nulls() { " with a null bitmap" } else { "" },
                t.expected_hoff()
            )
        });
    }
    if t.natts() > MAX_HEAP_ATTRIBUTE_NUMBER {
        f.push(Code::TupleHeaderNatts, off, || {
            format!("{} attributes, above the limit of {MAX_HEAP_ATTRIBUTE_NUMBER}", t.natts())
        });
    } else if let Some(relnatts) = relnatts.filter(|n| t.natts() > *n) {
        f.push(Code::TupleHeaderNatts, off, || format!("{} attributes, the table has {relnatts}", t.natts()));
    }
}

/// xmin and xmax against the horizons `h`: an XID at or past nextXid, or before oldestXid (its pg_xact segment
/// may be gone); a MultiXactId likewise against nextMulti and oldestMulti.
#[inline(always)]
fn check_tuple_xids(f: &mut ItemFindings, off: u16, t: &HeapTupleHeaderData, h: &Horizons) {
    use crate::format::heap::{
        HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI, HEAP_XMIN_COMMITTED, HEAP_XMIN_FROZEN,
        HEAP_XMIN_INVALID,
    };
    let im = t.t_infomask;
    let frozen = im & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN;
    let xmin = t.t_xmin;
    if !frozen && xmin >= FIRST_NORMAL_TRANSACTION_ID {
        let hinted = im & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID) != 0;
        if !xid_precedes(xmin, h.next_xid) {
            f.push(Code::TupleHeaderXminFuture, off, || {
                format!("xmin {xmin} equals or exceeds the next transaction ID {}", h.next_xid)
            });
        } else if xid_precedes(xmin, h.oldest_xid) {
            let code = if hinted { Code::TupleHeaderXminOldHinted } else { Code::TupleHeaderXminOld };
            f.push(code, off, || format!("xmin {xmin} precedes the oldest valid transaction ID {}", h.oldest_xid));
        }
    } else if !frozen && xmin == 0 && im & HEAP_XMIN_INVALID == 0 {
        f.push(Code::TupleHeaderXminInvalid, off, || "xmin is 0 (invalid) on a normal tuple".to_string());
    }
    let xmax = t.t_xmax;
    if im & HEAP_XMAX_INVALID == 0 && xmax != 0 {
        if im & HEAP_XMAX_IS_MULTI != 0 {
            if !multi_precedes(xmax, h.next_multi) {
                f.push(Code::TupleHeaderMultiFuture, off, || {
                    format!("MultiXactId {xmax} equals or exceeds the next MultiXactId {}", h.next_multi)
                });
            } else if multi_precedes(xmax, h.oldest_multi) {
                f.push(Code::TupleHeaderMultiOld, off, || {
                    format!("MultiXactId {xmax} precedes the oldest MultiXactId {}", h.oldest_multi)
                });
            }
        } else if xmax >= FIRST_NORMAL_TRANSACTION_ID {
            if !xid_precedes(xmax, h.next_xid) {
                f.push(Code::TupleHeaderXmaxFuture, off, || {
                    format!("xmax {xmax} equals or exceeds the next transaction ID {}", h.next_xid)
                });
            } else if xid_precedes(xmax, h.oldest_xid) && im & HEAP_XMAX_COMMITTED == 0 {
                f.push(Code::TupleHeaderXmaxOld, off, || {
                    format!("xmax {xmax} precedes the oldest valid transaction ID {}", h.oldest_xid)
                });
            }
        }
    }
}

/// Contradictory infomask bits.
#[inline(always)]
fn check_tuple_infomask(f: &mut ItemFindings, off: u16, t: &HeapTupleHeaderData) {
    use crate::format::heap::{
        HEAP_KEYS_UPDATED, HEAP_ONLY_TUPLE, HEAP_UPDATED, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_IS_MULTI,
        HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_LOCK_ONLY,
    };
    let im = t.t_infomask;
    if im & HEAP_XMAX_COMMITTED != 0 && im & HEAP_XMAX_IS_MULTI != 0 {
        f.push(Code::TupleHeaderInfomask, off, || {
            format!("t_infomask 0x{im:04x}: a MultiXactId xmax cannot be marked committed")
        });
    }
    // SELECT ... FOR UPDATE (plain or in a MultiXact) writes HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK
    // with HEAP_KEYS_UPDATED (heapam.c, compute_new_xmax_infomask and GetMultiXactIdHintBits): only a
    // weaker lock marking the keys updated is impossible.
    if im & HEAP_XMAX_LOCK_ONLY != 0
        && t.t_infomask2 & HEAP_KEYS_UPDATED != 0
        && im & (HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK) != HEAP_XMAX_EXCL_LOCK
    {
        f.push(Code::TupleHeaderInfomask, off, || {
            format!("t_infomask 0x{im:04x}: xmax only holds a shared lock but key columns are marked updated")
        });
    }
    if t.t_infomask2 & HEAP_ONLY_TUPLE != 0 && im & HEAP_UPDATED == 0 {
        f.push(Code::TupleHeaderInfomask, off, || "heap-only tuple that is not the result of an update".to_string());
    }
}

/// t_ctid: a never-updated tuple naming its own item number in another block, an impossible item number, a block
/// past the relation's `nblocks`, a HOT link off the page, an item past this page's `maxoff` line pointers.
#[inline(always)]
fn check_tuple_ctid(
    f: &mut ItemFindings,
    block: u64,
    off: u16,
    t: &HeapTupleHeaderData,
    maxoff: u16,
    nblocks: Option<u64>,
) {
    use crate::format::heap::{HEAP_HOT_UPDATED, HEAP_XMAX_INVALID};
    let im = t.t_infomask;
    let ctid = t.t_ctid;
    let special_offset = ctid.offset == MOVED_PARTITIONS_OFFSET_NUMBER || ctid.offset == SPEC_TOKEN_OFFSET_NUMBER;
    if t.t_xmax == 0 && !special_offset && u64::from(ctid.block) != block && ctid.offset == off {
        // heap_insert points t_ctid at the tuple itself; a tuple naming its own item number in
        // another block was written to the wrong place (a misdirected write, a torn page, a page
        // copied over another). xmax 0 with t_ctid at another item is not that: VACUUM clears an
        // aborted updater's xmax and leaves t_ctid at the discarded new version
        // (heap_prepare_freeze_tuple, access/heap/heapam.c).
        f.push(Code::TupleHeaderCtidNotSelf, off, || {
            format!("t_ctid {ctid} but this tuple, never updated (xmax 0), is at ({block},{off})")
        });
        return;
    }
    if !special_offset {
        if ctid.offset == 0 || ctid.offset > MAX_HEAP_TUPLES_PER_PAGE {
            f.push(Code::TupleHeaderCtid, off, || format!("t_ctid {ctid} has an impossible item number"));
        } else if let Some(nblocks) = nblocks.filter(|n| u64::from(ctid.block) >= *n) {
            f.push(Code::TupleHeaderCtid, off, || {
                format!("t_ctid {ctid} points beyond the end of the relation ({nblocks} blocks)")
            });
        } else if t.t_infomask2 & HEAP_HOT_UPDATED != 0 && u64::from(ctid.block) != block {
            f.push(Code::TupleHeaderCtid, off, || format!("HOT-updated tuple whose t_ctid {ctid} leaves the page"));
        } else if u64::from(ctid.block) == block && ctid.offset > maxoff && im & HEAP_XMAX_INVALID == 0 {
            f.push(Code::TupleHeaderCtid, off, || {
                format!("t_ctid {ctid} names an item past the end of this page's {maxoff} line pointers")
            });
        }
    }
}

/// The btree special space: its size, and a cycle id no btree writes.
pub fn check_btree_special(page: &Page<'_>, block: Option<u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    if page.header().is_new() {
        return out;
    }
    if page.special_size() != BT_SPECIAL_SIZE {
        out.push(Finding::new(
            Code::IndexSpecialSize,
            block,
            None,
            format!("special space is {} bytes, a btree page has {BT_SPECIAL_SIZE}", page.special_size()),
        ));
        return out;
    }
    if let Some(o) = BTPageOpaqueData::from_page(page) {
        if o.btpo_cycleid > MAX_BT_CYCLE_ID {
            out.push(Finding::new(
                Code::IndexBadCycleId,
                block,
                None,
                format!("btpo_cycleid 0x{:04x} is above MAX_BT_CYCLE_ID", o.btpo_cycleid),
            ));
        }
    }
    out
}

/// All page-local checks for a page of the given kind.
pub fn check_page(page: &Page<'_>, kind: PageKind, block: Option<u64>, checksums: bool) -> Vec<Finding> {
    check_page_in(page, kind, block, checksums, &HeapContext::default())
}

/// [`check_page`] with what the relation and cluster add for heap tuples.
/// A btree page deleted since PostgreSQL 14 holds no items: its pd_lower covers the `BTDeletedPageData` (the
/// FullTransactionId after which it may be recycled) that BTPageSetDeleted writes after the header
/// (src/include/access/nbtree.h), which would otherwise read as two line pointers.
fn btree_deleted_with_fullxid(page: &Page<'_>) -> bool {
    crate::format::btree::BTPageOpaqueData::from_page(page).is_some_and(|o| {
        o.btpo_flags & crate::format::btree::BTP_DELETED != 0
            && o.btpo_flags & crate::format::btree::BTP_HAS_FULLXID != 0
    })
}

pub fn check_page_in(
    page: &Page<'_>,
    kind: PageKind,
    block: Option<u64>,
    checksums: bool,
    ctx: &HeapContext<'_>,
) -> Vec<Finding> {
    check_page_tids(page, kind, block, checksums, ctx, None)
}

/// [`check_page_in`], the heap TIDs a GIN page's checks decode given to `tids` (see [`gin::TidSink`]).
pub fn check_page_tids(
    page: &Page<'_>,
    kind: PageKind,
    block: Option<u64>,
    checksums: bool,
    ctx: &HeapContext<'_>,
    tids: gin::TidSink<'_>,
) -> Vec<Finding> {
    let mut out = check_header(page, block, checksums);
    let header_sane = page.header_is_sane(page.len());
    match kind {
        PageKind::Heap => {
            if page.special_size() != 0 && header_sane {
                // PageIsVerified accepts it and the server reads the page, but heap pages have no
                // special space: the tail of the tuple area is being treated as one.
                out.push(Finding::new(
                    Code::PageHeaderSpecialSize,
                    block,
                    None,
                    format!(
                        "pd_special {} leaves {} bytes of special space on a heap page",
                        page.header().pd_special,
                        page.special_size()
                    ),
                ));
            }
            out.extend(check_heap_items(page, block.unwrap_or(0), ctx, header_sane));
        }
        PageKind::Btree | PageKind::BtreeMeta => {
            out.extend(check_btree_special(page, block));
            if kind == PageKind::Btree && !btree_deleted_with_fullxid(page) {
                out.extend(check_line_pointers(page, kind, block));
            }
        }
        // Sequence pages hold ordinary items. The maps keep other structures between the header and pd_lower, so
        // only their headers are checked. Index pages are judged by their type (their own files); a header the
        // server refuses says enough.
        PageKind::Sequence => out.extend(check_line_pointers(page, kind, block)),
        PageKind::Gist => out.extend(gist::check_gist_page(page, block)),
        PageKind::SpGist => out.extend(spgist::check_spgist_page(page, block)),
        PageKind::Hash if header_sane => out.extend(hash::check_hash_page(page, block)),
        PageKind::Brin if header_sane => out.extend(brin::check_brin_page(page, block)),
        PageKind::Gin if header_sane => {
            out.extend(gin::check_gin_page_tids(page, block, ctx.nblocks, ctx.gin_key, tids))
        }
        _ => {}
    }
    out
}

pub mod brin;
pub mod gist;
pub mod hash;
pub mod spgist;

#[cfg(test)]
mod tests;

/// An index entry whose heap TID must lead to a line pointer in use: a normal one, and one a scan marked dead
/// (`kill_prior_tuple`, gistkillitems/_hash_kill_items: LP_DEAD, its bytes kept). A heap line pointer becomes unused
/// only after VACUUM removed every index entry pointing to it, dead-marked or not (vacuumlazy.c, lazy_vacuum_heap_page
/// after the index passes); a dead-marked entry leading to an unused one was damaged before a scan met it, and the
/// row it stood for is missing from the index.
pub(crate) fn index_entry_in_use(id: &crate::format::itemid::ItemIdData) -> bool {
    id.lp_flags() == crate::format::itemid::LP_NORMAL
        || (id.lp_flags() == crate::format::itemid::LP_DEAD && id.has_storage())
}
