//! A heap page's share of the health figures: pgstattuple's counts (pgstattuple.c `pgstat_heap`), and what else the
//! page tells about the table's upkeep: rows that were never live, what pruning left, HOT, the pages the visibility
//! map could mark, the oldest unfrozen transaction.

use serde::Serialize;

use super::pages::{exact_free, heap_free, Definitions, TupleFigures};
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_HOT_UPDATED, HEAP_ONLY_TUPLE, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMIN_COMMITTED, HEAP_XMIN_FROZEN, HEAP_XMIN_INVALID,
};
use crate::format::itemid::{LP_DEAD, LP_NORMAL, LP_REDIRECT, LP_UNUSED};
use crate::format::page::Page;
use crate::visibility::service::Visibility;
use crate::visibility::transam::FIRST_NORMAL_TRANSACTION_ID;
use crate::visibility::xact::{xmax_locked_only, TupleState};

/// What a heap's pages tell about its upkeep beyond pgstattuple's figures.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct HeapUpkeep {
    /// Dead tuples whose inserter aborted: rows that were never live (failed inserts, rolled-back loads). Their index
    /// entries stay until VACUUM.
    pub never_live: u64,
    /// Line pointers pruning left behind: dead stubs (VACUUM frees them), redirects of HOT chains, unused slots.
    pub dead_stubs: u64,
    pub redirects: u64,
    pub unused: u64,
    /// Heap-only tuples (versions a HOT update made without new index entries), and tuples HOT-updated.
    pub heap_only: u64,
    pub hot_updated: u64,
    /// Initialised pages.
    pub pages: u64,
    /// Pages whose every tuple is visible to every transaction, and pages whose every tuple is frozen: what the
    /// visibility map could mark all-visible and all-frozen, as the pages really are.
    pub pages_all_visible: u64,
    pub pages_all_frozen: u64,
    /// The unfrozen xmin furthest behind the next transaction ID, and how far (what VACUUM must freeze before
    /// relfrozenxid can advance).
    pub oldest_xmin: Option<u32>,
    pub oldest_xmin_age: u64,
    /// The newest transaction that deleted a tuple still on the pages (a plain xmax, committed), and its age: a
    /// transaction, prepared transaction or replication slot whose xmin is not newer holds such tuples, and VACUUM
    /// cannot remove them while it lasts.
    pub newest_deleter: Option<u32>,
    pub newest_deleter_age: u64,
}

impl HeapUpkeep {
    pub fn add(&mut self, o: &HeapUpkeep) {
        self.never_live += o.never_live;
        self.dead_stubs += o.dead_stubs;
        self.redirects += o.redirects;
        self.unused += o.unused;
        self.heap_only += o.heap_only;
        self.hot_updated += o.hot_updated;
        self.pages += o.pages;
        self.pages_all_visible += o.pages_all_visible;
        self.pages_all_frozen += o.pages_all_frozen;
        if o.oldest_xmin.is_some() && (self.oldest_xmin.is_none() || o.oldest_xmin_age > self.oldest_xmin_age) {
            (self.oldest_xmin, self.oldest_xmin_age) = (o.oldest_xmin, o.oldest_xmin_age);
        }
        if o.newest_deleter.is_some()
            && (self.newest_deleter.is_none() || o.newest_deleter_age < self.newest_deleter_age)
        {
            (self.newest_deleter, self.newest_deleter_age) = (o.newest_deleter, o.newest_deleter_age);
        }
    }

    fn deleter(&mut self, xmax: u32, mask: u16, next_xid: Option<u32>) {
        let (Some(next), true) = (next_xid, xmax >= FIRST_NORMAL_TRANSACTION_ID && mask & HEAP_XMAX_IS_MULTI == 0)
        else {
            return;
        };
        let age = u64::from(next.wrapping_sub(xmax));
        if self.newest_deleter.is_none() || age < self.newest_deleter_age {
            (self.newest_deleter, self.newest_deleter_age) = (Some(xmax), age);
        }
    }

    fn xmin(&mut self, xmin: u32, mask: u16, next_xid: Option<u32>) {
        let (Some(next), true) = (next_xid, xmin >= FIRST_NORMAL_TRANSACTION_ID) else { return };
        if mask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN {
            return;
        }
        let age = u64::from(next.wrapping_sub(xmin));
        if self.oldest_xmin.is_none() || age > self.oldest_xmin_age {
            (self.oldest_xmin, self.oldest_xmin_age) = (Some(xmin), age);
        }
    }
}

/// A heap page as pgstattuple counts it: each tuple of a normal line pointer live or dead to a dirty snapshot
/// (inserted by a committed or running transaction, and not deleted by a committed one), and the page's free space;
/// its upkeep figures into `u` (`next_xid`: pg_control's, for the ages). An all-zero or never-initialised page holds
/// nothing and has no free space to count.
pub fn heap_page(
    page: &Page<'_>,
    vis: &Visibility,
    defs: Definitions,
    next_xid: Option<u32>,
    u: &mut HeapUpkeep,
) -> TupleFigures {
    let mut f = TupleFigures::default();
    if page.header().is_new() {
        return f;
    }
    f.free_space = if defs.exact_free_space { exact_free(page) } else { heap_free(page) };
    u.pages += 1;
    let (mut all_visible, mut all_frozen) = (true, true);
    for (_, id) in page.item_ids() {
        match id.lp_flags() {
            LP_NORMAL => {}
            LP_DEAD => {
                u.dead_stubs += 1;
                all_visible = false;
                continue;
            }
            LP_REDIRECT => {
                u.redirects += 1;
                continue;
            }
            LP_UNUSED => {
                u.unused += 1;
                continue;
            }
            _ => continue,
        }
        let len = u64::from(id.lp_len());
        // the header fields read in place: a full parse per tuple is most of the time of a large table
        let Some(t) = page.item_bytes(id).filter(|t| t.len() >= 24) else {
            (all_visible, all_frozen) = (false, false);
            f.undecided += 1;
            f.tuple_count += 1;
            f.tuple_len += len;
            continue;
        };
        let (xmin, xmax) = (u32_at(t, 0), u32_at(t, 4));
        let (mask2, mask) = (u16::from_le_bytes([t[18], t[19]]), u16::from_le_bytes([t[20], t[21]]));
        let state = hinted(t)
            .unwrap_or_else(|| HeapTupleHeaderData::parse(t).map_or(TupleState::Unknown, |h| vis.state(&h, false)));
        u.heap_only += u64::from(mask2 & HEAP_ONLY_TUPLE != 0);
        u.hot_updated += u64::from(mask2 & HEAP_HOT_UPDATED != 0);
        u.xmin(xmin, mask, next_xid);
        all_frozen &= mask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN && mask & HEAP_XMAX_INVALID != 0;
        all_visible &= state == TupleState::Live;
        match state {
            TupleState::Dead | TupleState::RecentlyDead => {
                u.never_live += u64::from(state == TupleState::Dead);
                if state == TupleState::RecentlyDead {
                    u.deleter(xmax, mask, next_xid);
                }
                f.dead_tuple_count += 1;
                f.dead_tuple_len += len;
            }
            TupleState::Live | TupleState::InProgress | TupleState::Unknown => {
                f.undecided += u64::from(state == TupleState::Unknown);
                f.tuple_count += 1;
                f.tuple_len += len;
            }
        }
    }
    u.pages_all_visible += u64::from(all_visible);
    u.pages_all_frozen += u64::from(all_visible && all_frozen);
    f
}

fn u32_at(t: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]])
}

/// What a dirty snapshot decides from the hint bits alone (`HeapTupleSatisfiesDirty`, heapam_visibility.c): the
/// inserter committed (or froze) and no one deleted it, or deleted it for good; the inserter aborted. Most tuples
/// of a settled table are one of these; the rest go to the judge.
fn hinted(tuple: &[u8]) -> Option<TupleState> {
    let m = u16::from_le_bytes([*tuple.get(20)?, *tuple.get(21)?]);
    if m & HEAP_XMIN_COMMITTED == 0 {
        return (m & HEAP_XMIN_INVALID != 0).then_some(TupleState::Dead);
    }
    if m & HEAP_XMAX_INVALID != 0 {
        return Some(TupleState::Live);
    }
    let deleted = m & HEAP_XMAX_COMMITTED != 0 && m & HEAP_XMAX_IS_MULTI == 0 && !xmax_locked_only(m);
    deleted.then_some(TupleState::RecentlyDead)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::format::page::assemble_heap_page;
    use crate::visibility::xact::Clog;

    /// A tuple header (and `extra` data bytes) inserted by `xmin` and deleted by `xmax` (0: never), with `infomask`
    /// bits added.
    fn tuple(xmin: u32, xmax: u32, infomask: u16, extra: usize) -> Vec<u8> {
        let mut t = vec![0u8; 24 + extra];
        t[0..4].copy_from_slice(&xmin.to_le_bytes());
        t[4..8].copy_from_slice(&xmax.to_le_bytes());
        let mask = HEAP_XMIN_COMMITTED | infomask | if xmax == 0 { HEAP_XMAX_INVALID } else { 0 };
        t[20..22].copy_from_slice(&mask.to_le_bytes());
        t[22] = 24;
        t
    }

    fn vis() -> Visibility {
        Visibility::new(Clog::bare(None, 8192, true), HashMap::new(), HashMap::new(), None)
    }

    fn count(tuples: &[&[u8]], major: u32) -> (TupleFigures, HeapUpkeep, Vec<u8>) {
        let page = assemble_heap_page(tuples, 8192).unwrap();
        let mut u = HeapUpkeep::default();
        let f = heap_page(&Page::new(&page).unwrap(), &vis(), Definitions::for_major(major), Some(1000), &mut u);
        (f, u, page)
    }

    #[test]
    fn heap_free_space_is_one_pointer_less_until_18() {
        let (live, dead) = (tuple(500, 0, 0, 8), tuple(500, 700, HEAP_XMAX_COMMITTED, 16));
        let (old, u, page) = count(&[&live, &dead], 17);
        let (new, _, _) = count(&[&live, &dead], 18);
        let p = Page::new(&page).unwrap();
        let gap = u64::from(p.header().pd_upper - p.header().pd_lower);
        assert_eq!((old.free_space, new.free_space), (gap - 4, gap));
        assert_eq!((old.tuple_count, old.tuple_len, old.dead_tuple_count, old.dead_tuple_len), (1, 32, 1, 40));
        assert_eq!((u.never_live, u.pages_all_visible, u.oldest_xmin, u.oldest_xmin_age), (0, 0, Some(500), 500));
        assert_eq!((u.newest_deleter, u.newest_deleter_age), (Some(700), 300));
    }

    #[test]
    fn a_heap_page_with_every_line_pointer_used_has_no_free_space_before_18() {
        let small = tuple(2, 0, HEAP_XMIN_FROZEN, 0);
        let tuples: Vec<&[u8]> = (0..291).map(|_| small.as_slice()).collect();
        let (old, u, page) = count(&tuples, 15);
        let p = Page::new(&page).unwrap();
        assert!(p.header().pd_upper > p.header().pd_lower + 4);
        assert_eq!(old.free_space, 0);
        assert!(count(&tuples, 18).0.free_space > 0);
        assert_eq!((u.pages_all_visible, u.pages_all_frozen, u.oldest_xmin), (1, 1, None));
    }

    #[test]
    fn an_aborted_insert_is_dead_and_was_never_live() {
        let mut failed = tuple(600, 0, 0, 4);
        failed[20..22].copy_from_slice(&(HEAP_XMIN_INVALID | HEAP_XMAX_INVALID).to_le_bytes());
        let (f, u, _) = count(&[&failed], 18);
        assert_eq!((f.dead_tuple_count, u.never_live, u.pages_all_visible), (1, 1, 0));
    }
}
