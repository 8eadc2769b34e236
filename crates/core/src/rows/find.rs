//! Finding the tuples of a heap page, whatever state its header and line pointers are in: through the line
//! pointers that point at well-formed tuples, and by their headers in the page body when the item-ID array or the
//! page header is destroyed; then which of them are copies of another block's rows (torn or misdirected writes).
//!
//! Layout facts relied on (`storage/bufpage.c` PageAddItem, PageRepairFragmentation): tuples are
//! MAXALIGNed, stored from the end of the page downwards, and the tuple area [pd_upper,
//! pd_special) has no gaps: each tuple starts at the previous one's start minus
//! MAXALIGN(t_len). A tuple found below that run lies in free space: a stale copy left behind by
//! compaction, never a live row by itself.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::finding::Code;
use crate::format::bytes::maxalign;
use crate::format::heap::{
    bitmaplen, HeapTupleHeaderData, HEAP_HASEXTERNAL, HEAP_HASOID_OLD, HEAP_HASVARWIDTH, HEAP_HOT_UPDATED, HEAP_MOVED,
    HEAP_NATTS_MASK, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMIN_FROZEN, SIZEOF_HEAP_TUPLE_HEADER,
};
use crate::format::itemid::{ItemIdData, LP_DEAD, LP_NORMAL, LP_REDIRECT, LP_UNUSED, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{Page, SIZE_OF_PAGE_HEADER_DATA};
use crate::format::tuple::{walk_attributes_into, walk_attributes_with, RelDesc, Walk, WalkOptions};
use crate::visibility::transam::{Horizons, FIRST_NORMAL_TRANSACTION_ID};

/// `MaxHeapTuplesPerPage` for a block size.
pub fn max_heap_tuples(blcksz: usize) -> u16 {
    ((blcksz - SIZE_OF_PAGE_HEADER_DATA) / (maxalign(SIZEOF_HEAP_TUPLE_HEADER) + SIZE_OF_ITEM_ID_DATA)) as u16
}

/// How a tuple was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// Through a line pointer that points exactly at a well-formed tuple.
    LinePointer,
    /// By recognising a tuple header in the page body.
    PageBody,
}

/// Where a found tuple lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In the tuple area (pd_upper..pd_special, or the contiguous run of tuples ending there).
    TupleArea,
    /// Below it, in free space: possibly a stale copy left behind by compaction.
    FreeSpace,
}

/// A tuple found in a page.
#[derive(Debug, Clone)]
pub struct Found {
    pub off: usize,
    pub len: usize,
    pub lp: Option<u16>,
    pub via: Via,
    pub placement: Placement,
    pub header: HeapTupleHeaderData,
    pub walk: Walk,
}

/// What finding tuples learned about the page itself.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageInfo {
    pub block: u64,
    pub all_zero: bool,
    pub header_sane: bool,
    /// Line pointers read (from pd_lower, or counted while they look plausible).
    pub line_pointers: u16,
    /// Whether the line pointer count came from a sane pd_lower.
    pub lp_count_trusted: bool,
    /// LP_NORMAL pointers that point at a well-formed tuple.
    pub lp_valid: u16,
    /// LP_NORMAL pointers that do not.
    pub lp_bad: Vec<u16>,
    /// LP_REDIRECT / LP_DEAD / LP_UNUSED counts.
    pub lp_redirect: u16,
    pub lp_dead: u16,
    pub lp_unused: u16,
    /// Whether the page body was searched for tuple headers.
    pub body_scanned: bool,
    pub found_in_body: u16,
    /// So many line pointers are damaged that the array tells nothing: which rows were here must come from
    /// elsewhere (index entries).
    pub lp_array_destroyed: bool,
    /// Line pointer numbers of every tuple found (dead ones too).
    pub claimed_lps: Vec<u16>,
    /// Tuples found whose line pointer number is unknown.
    pub unnumbered: u16,
    /// The page holds copies of another block's tuples: that block (the most named one).
    pub copies_from: Option<u64>,
    /// Where the copied bytes start (a torn page), or 0 when the whole page is a copy (misdirected write).
    pub copies_at: Option<usize>,
}

/// Limits a tuple header must respect to be believed.
#[derive(Debug, Clone, Copy)]
pub struct Plausibility<'a> {
    pub nblocks: Option<u64>,
    pub horizons: Option<&'a Horizons>,
    pub max_tuples: u16,
}

fn header_plausible(
    h: &HeapTupleHeaderData,
    t: &[u8],
    desc: &RelDesc,
    p: &Plausibility<'_>,
    strict: bool,
) -> std::result::Result<(), &'static str> {
    let natts = h.natts();
    if natts > desc.natts || (natts == 0 && desc.natts > 0) {
        return Err("attribute count");
    }
    if h.t_infomask2 & !(HEAP_NATTS_MASK | 0xE000) != 0 {
        return Err("unused t_infomask2 bits");
    }
    if h.t_infomask & HEAP_HASOID_OLD != 0 {
        return Err("pre-12 OID column");
    }
    if usize::from(h.t_hoff) != h.expected_hoff() {
        return Err("t_hoff");
    }
    let hoff = usize::from(h.t_hoff);
    if t.len() < hoff {
        return Err("shorter than its header");
    }
    // Padding between the null bitmap and t_hoff is zero, and so are the bitmap bits past natts.
    let bm_end = SIZEOF_HEAP_TUPLE_HEADER + if h.has_nulls() { bitmaplen(natts) } else { 0 };
    if t[bm_end..hoff].iter().any(|b| *b != 0) {
        return Err("header padding");
    }
    if h.has_nulls() {
        let bits = &t[SIZEOF_HEAP_TUPLE_HEADER..bm_end];
        let n = usize::from(natts);
        if n % 8 != 0 && bits[bits.len() - 1] >> (n % 8) != 0 {
            return Err("null bitmap bits past natts");
        }
        if strict && (0..n).all(|i| bits[i / 8] & (1 << (i % 8)) != 0) {
            return Err("HEAP_HASNULL without a null");
        }
    }
    if !strict {
        return Ok(());
    }
    let m = h.t_infomask;
    if m & HEAP_MOVED != 0 {
        return Err("HEAP_MOVED");
    }
    if m & HEAP_XMAX_COMMITTED != 0 && m & HEAP_XMAX_INVALID != 0 {
        return Err("xmax both committed and invalid");
    }
    let frozen = m & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN;
    if !frozen {
        if h.t_xmin == 0 {
            return Err("xmin 0");
        }
        if let Some(hz) = p.horizons {
            if h.t_xmin >= FIRST_NORMAL_TRANSACTION_ID
                && !crate::visibility::transam::xid_precedes(h.t_xmin, hz.next_xid)
            {
                return Err("xmin in the future");
            }
        }
    }
    let ctid = h.t_ctid;
    let special = ctid.offset == crate::checks::page::MOVED_PARTITIONS_OFFSET_NUMBER
        || ctid.offset == crate::checks::page::SPEC_TOKEN_OFFSET_NUMBER;
    if !special {
        if ctid.offset == 0 || ctid.offset > p.max_tuples {
            return Err("t_ctid offset");
        }
        if p.nblocks.is_some_and(|n| u64::from(ctid.block) >= n) {
            return Err("t_ctid block");
        }
    }
    Ok(())
}

/// Whether a walk shows a well-formed tuple: `exact` when the tuple's length is known (a line
/// pointer's lp_len) and must match the data's end.
fn walk_clean(w: &Walk, h: &HeapTupleHeaderData, exact: bool, strict: bool) -> bool {
    if w.stopped {
        return false;
    }
    let bad = w.problems.iter().any(|p| exact || p.code != Code::TupleDataTrailingBytes);
    if bad {
        return false;
    }
    if strict {
        let has_ext = !w.toast_pointers.is_empty();
        if has_ext != (h.t_infomask & HEAP_HASEXTERNAL != 0) {
            return false;
        }
        let has_var = w.spans.iter().any(|s| s.varlena.is_some() && !s.is_null && !s.missing);
        if has_var && h.t_infomask & HEAP_HASVARWIDTH == 0 {
            return false;
        }
    }
    true
}

/// A line pointer that may be real (used to count entries when pd_lower is lost).
fn lp_plausible(id: ItemIdData, blcksz: usize, max_tuples: u16) -> bool {
    let (off, len) = (usize::from(id.lp_off()), usize::from(id.lp_len()));
    match id.lp_flags() {
        LP_UNUSED => off == 0 && len == 0,
        LP_REDIRECT => len == 0 && off >= 1 && off <= usize::from(max_tuples),
        LP_DEAD => len == 0 && off == 0 || (off % 8 == 0 && len >= SIZEOF_HEAP_TUPLE_HEADER && off + len <= blcksz),
        _ => {
            off % 8 == 0
                && off >= SIZE_OF_PAGE_HEADER_DATA + 4
                && len >= SIZEOF_HEAP_TUPLE_HEADER
                && off + len <= blcksz
        }
    }
}

/// Every tuple that can be found in `page`: through line pointers that point at well-formed
/// tuples, and (when line pointers are missing, damaged or untrustworthy) by their headers in
/// the page body.
pub fn find_tuples(page: &[u8], block: u64, desc: &RelDesc, p: &Plausibility<'_>) -> (Vec<Found>, PageInfo) {
    let mut found = Vec::new();
    let info = find_tuples_into(page, block, desc, p, &mut found, &mut Vec::new());
    (found, info)
}

/// [`find_tuples`] into `found`, whose entries (the last page's tuples) are overwritten in place, their walks'
/// vectors reused, and whose surplus walks wait in `spare`: a caller carving page after page allocates and moves
/// nothing per tuple.
pub fn find_tuples_into(
    page: &[u8],
    block: u64,
    desc: &RelDesc,
    p: &Plausibility<'_>,
    found: &mut Vec<Found>,
    spare: &mut Vec<Walk>,
) -> PageInfo {
    let mut info = PageInfo { block, ..Default::default() };
    let Some(pg) = Page::new(page) else {
        spare.extend(found.drain(..).map(|f| f.walk));
        return info;
    };
    if pg.is_all_zero() {
        spare.extend(found.drain(..).map(|f| f.walk));
        info.all_zero = true;
        return info;
    }
    let h = *pg.header();
    info.header_sane = pg.header_is_sane(page.len()) && h.pd_lower >= SIZE_OF_PAGE_HEADER_DATA as u16;
    info.lp_count_trusted = info.header_sane;
    let n = count_line_pointers(&pg, info.header_sane, p.max_tuples);
    info.line_pointers = n;
    through_line_pointers(&pg, n, desc, p, &mut info, found, spare);
    info.lp_valid = found.len() as u16;
    // Tuple bytes no line pointer covers (a pointer set unused or overwritten) are rows the server no longer sees.
    let orphans = info.header_sane && {
        let mut items: Vec<(usize, usize)> = found.iter().map(|f| (f.off, f.len)).collect();
        !crate::checks::page::unreferenced_tuples(
            page,
            block,
            usize::from(h.pd_upper),
            usize::from(h.pd_special),
            &mut items,
        )
        .is_empty()
    };
    let need_body = orphans || !info.lp_bad.is_empty() || (found.is_empty() && n == 0) || !info.header_sane && n == 0;
    if need_body {
        add_body_tuples(&pg, n, desc, p, found, &mut info);
    }
    info.claimed_lps = found.iter().filter_map(|f| f.lp).collect();
    info.claimed_lps.sort_unstable();
    info.claimed_lps.dedup();
    info.unnumbered = found.iter().filter(|f| f.lp.is_none()).count() as u16;
    found.sort_by_key(|f| (f.lp.unwrap_or(u16::MAX), f.off));
    info
}

/// How many line pointers to read: pd_lower's count when the header is sane; otherwise as many as look plausible,
/// up to where they would run into the lowest tuple they point at.
fn count_line_pointers(pg: &Page<'_>, header_sane: bool, max_tuples: u16) -> u16 {
    let page = pg.bytes();
    let blcksz = page.len();
    let fit = ((blcksz - SIZE_OF_PAGE_HEADER_DATA) / SIZE_OF_ITEM_ID_DATA).min(usize::from(max_tuples)) as u16;
    if header_sane {
        return pg.header().max_offset_number().min(fit);
    }
    let mut n = 0u16;
    let mut lowest_tuple = blcksz;
    for i in 1..=fit {
        let at = SIZE_OF_PAGE_HEADER_DATA + usize::from(i - 1) * SIZE_OF_ITEM_ID_DATA;
        if at + SIZE_OF_ITEM_ID_DATA > lowest_tuple {
            break;
        }
        let Some(id) = ItemIdData::parse(page, at) else { break };
        if !lp_plausible(id, blcksz, max_tuples) {
            break;
        }
        if id.lp_len() > 0 {
            lowest_tuple = lowest_tuple.min(usize::from(id.lp_off()));
        }
        n = i;
    }
    // Trailing unused entries are free space that happens to be zero.
    while n > 0 && pg.item_id(n).is_some_and(|id| id.0 == 0) {
        n -= 1;
    }
    n
}

/// The tuples line pointers `1..=n` point at. Counts the pointers by kind in `info`, and lists in `info.lp_bad`
/// those that are implausible or point at no well-formed tuple.
fn through_line_pointers(
    pg: &Page<'_>,
    n: u16,
    desc: &RelDesc,
    p: &Plausibility<'_>,
    info: &mut PageInfo,
    found: &mut Vec<Found>,
    spare: &mut Vec<Walk>,
) {
    let blcksz = pg.len();
    let opts = WalkOptions { verify_compressed: true, ..WalkOptions::default() };
    // The tuple offsets taken (MAXALIGNed, so one bit per 8 bytes): a second pointer at one is seen without
    // comparing every tuple found so far.
    let mut taken = vec![0u64; blcksz.div_ceil(8 * 64)];
    // found[..live] are this page's tuples; found[live] is where the next one is read into (an entry of the last
    // page, or a new one).
    let mut live = 0;
    for off in 1..=n {
        let Some(id) = pg.item_id(off) else { break };
        if id.lp_flags() != LP_NORMAL && !lp_plausible(id, blcksz, p.max_tuples) {
            info.lp_bad.push(off);
            continue;
        }
        match id.lp_flags() {
            LP_UNUSED => info.lp_unused += 1,
            LP_REDIRECT => info.lp_redirect += 1,
            LP_DEAD => info.lp_dead += 1,
            _ if !tuple_at(pg.bytes(), off, id, desc, p, &opts, found, live, spare) => info.lp_bad.push(off),
            _ => {
                let f = &found[live];
                let bit = (f.off / 512, 1u64 << (f.off / 8 % 64));
                if taken[bit.0] & bit.1 == 0 {
                    taken[bit.0] |= bit.1;
                    live += 1;
                    continue;
                }
                // Two pointers at one tuple: a stale pointer; keep the one the tuple names (in the earlier one's
                // place: the order is settled by the caller's sort).
                if f.header.t_ctid.offset == off && u64::from(f.header.t_ctid.block) == info.block {
                    let at = f.off;
                    if let Some(k) = found[..live].iter().position(|g| g.off == at) {
                        found.swap(k, live);
                    }
                }
                info.lp_bad.push(off);
            }
        }
    }
    spare.extend(found.drain(live..).map(|f| f.walk));
}

/// Read the well-formed tuple that normal line pointer `lp` (`id`) points at, if there is one, into `found[at]`
/// (an entry reused in place, or pushed when `at` is the end). False when there is none.
#[allow(clippy::too_many_arguments)]
fn tuple_at(
    page: &[u8],
    lp: u16,
    id: ItemIdData,
    desc: &RelDesc,
    p: &Plausibility<'_>,
    opts: &WalkOptions,
    found: &mut Vec<Found>,
    at: usize,
    spare: &mut Vec<Walk>,
) -> bool {
    let start = usize::from(id.lp_off());
    let len = usize::from(id.lp_len());
    if start % 8 != 0 || start < SIZE_OF_PAGE_HEADER_DATA || len < SIZEOF_HEAP_TUPLE_HEADER {
        return false;
    }
    let Some(t) = start.checked_add(len).and_then(|end| page.get(start..end)) else { return false };
    let Some(hdr) = HeapTupleHeaderData::parse(t) else { return false };
    if header_plausible(&hdr, t, desc, p, false).is_err() {
        return false;
    }
    let via = Via::LinePointer;
    let placement = Placement::TupleArea;
    if at == found.len() {
        let walk = spare.pop().unwrap_or_default();
        found.push(Found { off: start, len, lp: Some(lp), via, placement, header: hdr, walk });
    }
    let f = &mut found[at];
    (f.off, f.len, f.lp, f.via, f.placement, f.header) = (start, len, Some(lp), via, placement, hdr);
    walk_attributes_into(t, &hdr, desc, opts, &mut f.walk);
    !f.walk.stopped
}

/// Search the page body for tuples besides those `found` through the `n` line pointers, add them, and settle where
/// each lies and which line pointer number it takes.
fn add_body_tuples(
    pg: &Page<'_>,
    n: u16,
    desc: &RelDesc,
    p: &Plausibility<'_>,
    found: &mut Vec<Found>,
    info: &mut PageInfo,
) {
    let block = info.block;
    info.body_scanned = true;
    let body = scan_body(pg.bytes(), block, desc, p, found, n);
    info.found_in_body = body.len() as u16;
    found.extend(body);
    // Which tuples lie in the tuple area?
    let area_start =
        if info.header_sane { usize::from(pg.header().pd_upper) } else { contiguous_area_start(found, pg.len()) };
    for f in found.iter_mut() {
        if f.via == Via::PageBody && f.off < area_start {
            f.placement = Placement::FreeSpace;
        }
    }
    assign_line_pointers(found, block);
    // With a sound line pointer array, a body tuple whose own slot is dead was removed on purpose (pg_surgery's
    // heap_force_kill leaves the bytes until the next pruning): it is not a row to bring back.
    if info.header_sane && info.lp_bad.is_empty() {
        let killed = |f: &Found| {
            f.via == Via::PageBody && f.lp.and_then(|l| pg.item_id(l)).is_some_and(|id| id.lp_flags() == LP_DEAD)
        };
        found.retain(|f| !killed(f));
    }
    let n_entries = usize::from(n.max(1));
    info.lp_array_destroyed = n == 0 || info.lp_bad.len() * 4 > n_entries && info.lp_bad.len() > 2;
}

/// Body tuples take the line pointer number their own t_ctid names, unless that number belongs to another
/// tuple: a line pointer's tuple, or a newer version of the row (an updated tuple's t_ctid names its successor,
/// whose xmin is the updated tuple's xmax).
fn assign_line_pointers(found: &mut [Found], block: u64) {
    let taken: HashSet<u16> = found.iter().filter(|f| f.via == Via::LinePointer).filter_map(|f| f.lp).collect();
    let claims: Vec<(usize, u16, u32, u32)> = found
        .iter()
        .enumerate()
        .filter(|(_, f)| f.via == Via::PageBody)
        .filter_map(|(i, f)| f.lp.map(|lp| (i, lp, f.header.t_xmin, f.header.t_xmax)))
        .collect();
    for &(i, lp, _xmin, xmax) in &claims {
        let superseded = taken.contains(&lp)
            || (xmax != 0 && claims.iter().any(|&(j, l2, xmin2, _)| j != i && l2 == lp && xmin2 == xmax))
            || found[i].header.t_infomask2 & HEAP_HOT_UPDATED != 0
            || u64::from(found[i].header.t_ctid.block) != block;
        if superseded {
            found[i].lp = None;
        }
    }
}

/// Search the page body (outside the tuples already found) for well-formed tuples, at every
/// MAXALIGNed offset past the line pointer array.
fn scan_body(page: &[u8], block: u64, desc: &RelDesc, p: &Plausibility<'_>, known: &[Found], n_lp: u16) -> Vec<Found> {
    let blcksz = page.len();
    let opts = WalkOptions { verify_compressed: true, ..WalkOptions::default() };
    let covered = |o: usize| known.iter().any(|f| o >= f.off && o < f.off + f.len);
    let first = maxalign(SIZE_OF_PAGE_HEADER_DATA + SIZE_OF_ITEM_ID_DATA * usize::from(n_lp.max(1)));
    let mut cands: Vec<Found> = Vec::new();
    let mut o = first;
    while o + SIZEOF_HEAP_TUPLE_HEADER < blcksz {
        if covered(o) {
            o += 8;
            continue;
        }
        // The data may run until the next known tuple or the page end.
        let limit = known.iter().filter(|f| f.off > o).map(|f| f.off).min().unwrap_or(blcksz);
        let t = &page[o..limit];
        if let Some(hdr) = HeapTupleHeaderData::parse(t) {
            if header_plausible(&hdr, t, desc, p, true).is_ok() {
                let mut walk = walk_attributes_with(t, &hdr, desc, &opts);
                if walk_clean(&walk, &hdr, false, true) && walk.data_end > usize::from(hdr.t_hoff) {
                    walk.problems.clear();
                    let len = walk.data_end;
                    let lp = (u64::from(hdr.t_ctid.block) == block).then_some(hdr.t_ctid.offset);
                    cands.push(Found {
                        off: o,
                        len,
                        lp,
                        via: Via::PageBody,
                        placement: Placement::TupleArea,
                        header: hdr,
                        walk,
                    });
                }
            }
        }
        o += 8;
    }
    // Candidates may overlap (a header-like pattern inside another tuple's data): keep the
    // contiguous chains first, then whatever does not overlap them.
    resolve_overlaps(cands, blcksz)
}

/// Pick non-overlapping candidates: those on the run that ends at the page end first (walking
/// down tuple by tuple), then the others from the top, skipping overlaps.
fn resolve_overlaps(mut cands: Vec<Found>, blcksz: usize) -> Vec<Found> {
    if cands.len() < 2 {
        return cands;
    }
    cands.sort_by_key(|f| std::cmp::Reverse(f.off));
    let mut chosen: Vec<Found> = Vec::new();
    let mut used = vec![false; cands.len()];
    let mut top = blcksz;
    while let Some(i) = (0..cands.len()).find(|&i| !used[i] && maxalign(cands[i].off + cands[i].len) == top) {
        used[i] = true;
        top = cands[i].off;
        chosen.push(cands[i].clone());
    }
    for i in 0..cands.len() {
        if used[i] {
            continue;
        }
        let c = &cands[i];
        let overlaps = chosen.iter().any(|f| c.off < f.off + f.len && f.off < c.off + c.len);
        if !overlaps {
            chosen.push(c.clone());
        }
    }
    chosen
}

/// Lowest offset of the gap-free run of tuples that ends at the page end (the tuple area when
/// pd_upper cannot be trusted).
fn contiguous_area_start(found: &[Found], blcksz: usize) -> usize {
    let mut top = blcksz;
    loop {
        match found.iter().find(|f| maxalign(f.off + f.len) == top && f.off < top) {
            Some(f) => top = f.off,
            None => return top,
        }
    }
}

impl Via {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Via::LinePointer => "line_pointer",
            Via::PageBody => "page_body",
        }
    }
}

/// Whether the page holds copies of another block's tuples (tuples with xmax 0 whose t_ctid names their own item
/// number in another block): `(true, _)` when most of them do (a misdirected write), `(false, offset)` when some do, from `offset`
/// up (a torn page whose upper part came from another block).
pub(super) fn foreign_region(found: &[Found], block: u64) -> Option<(bool, usize, u64)> {
    // A copied never-updated row names its own item number in the block it was written for. One that names another
    // item number there is a row VACUUM froze after its update aborted (xmax cleared, t_ctid left at the discarded
    // new version), which proves nothing about the page.
    let is_foreign = |f: &Found| {
        let c = f.header.t_ctid;
        f.header.t_xmax == 0
            && u64::from(c.block) != block
            && c.offset < crate::checks::page::MOVED_PARTITIONS_OFFSET_NUMBER
            && f.lp.is_none_or(|lp| lp == c.offset)
    };
    let n_foreign = found.iter().filter(|f| is_foreign(f)).count();
    // One such tuple is more likely a damaged t_ctid than a copied page.
    if n_foreign < 2 {
        return None;
    }
    let first = found.iter().filter(|f| is_foreign(f)).map(|f| f.off).min().unwrap_or(0);
    let mut votes: HashMap<u32, usize> = HashMap::new();
    for f in found.iter().filter(|f| is_foreign(f)) {
        *votes.entry(f.header.t_ctid.block).or_default() += 1;
    }
    let from = votes.into_iter().max_by_key(|(b, n)| (*n, std::cmp::Reverse(*b))).map_or(0, |(b, _)| u64::from(b));
    Some((n_foreign * 2 > found.len(), first, from))
}

/// A tuple below the first copied tuple that crosses a 512-byte sector boundary within a tuple's length of it: the
/// tear may lie inside it.
pub(super) fn crosses_tear(off: usize, len: usize, first_foreign: usize) -> bool {
    const SECTOR: usize = 512;
    if off >= first_foreign {
        return false;
    }
    let end = off + len;
    // The copied bytes may begin with the tail of a copied tuple: look up to a quarter page below.
    let window_lo = first_foreign.saturating_sub(2048);
    let mut s = (off / SECTOR + 1) * SECTOR;
    while s < end {
        if s <= first_foreign && s >= window_lo {
            return true;
        }
        s += SECTOR;
    }
    false
}

/// Which of the tuples found are stale copies of another. A tuple found in the page body may be a stale copy of
/// one found elsewhere (compaction leaves copies in free space): the same version has the same xmin, cmin/xvac,
/// t_ctid and data. Tuples found through line pointers are distinct rows even when their bytes are identical (one
/// statement inserting equal rows).
pub(super) fn stale_copies(page: &[u8], found: &[Found]) -> Vec<bool> {
    let mut dup = vec![false; found.len()];
    let key = |f: &Found| {
        let h = &f.header;
        (h.t_xmin, h.t_field3, h.t_ctid.block, h.t_ctid.offset, &page[f.off + usize::from(h.t_hoff)..f.off + f.len])
    };
    let rank = |g: &Found| (g.placement != Placement::TupleArea, g.via != Via::LinePointer, g.off);
    let mut best: HashMap<_, usize> = HashMap::new();
    for (k, f) in found.iter().enumerate() {
        if f.via == Via::LinePointer && f.placement == Placement::TupleArea {
            continue;
        }
        best.entry(key(f))
            .and_modify(|cur: &mut usize| {
                if rank(f) < rank(&found[*cur]) {
                    *cur = k;
                }
            })
            .or_insert(k);
    }
    for (k, f) in found.iter().enumerate() {
        if f.via == Via::LinePointer && f.placement == Placement::TupleArea {
            continue;
        }
        let shadowed = found.iter().any(|g| {
            g.via == Via::LinePointer && g.placement == Placement::TupleArea && g.off != f.off && key(g) == key(f)
        });
        if shadowed || best.get(&key(f)) != Some(&k) {
            dup[k] = true;
        }
    }
    dup
}
