//! A heap page against its visibility map bits, judged as pg_visibility's `pg_check_visible()` and
//! `pg_check_frozen()` judge it (contrib/pg_visibility/pg_visibility.c, `collect_corrupt_items` and
//! `tuple_all_visible`): unused and redirect line pointers are of no interest; a dead line pointer is neither
//! all-visible nor frozen; a tuple is all-visible when `HeapTupleSatisfiesVacuum` calls it live and its xmin
//! precedes the oldest running transaction; it is frozen when `heap_tuple_needs_eventual_freeze` (heapam.c) is
//! false. Offline no transaction runs, so every committed xmin precedes the oldest one, and the row engine's
//! judge ([`crate::visibility::service::Visibility`]) stands in for `HeapTupleSatisfiesVacuum`.

use crate::finding::{Code, Finding};
use crate::format::heap::{
    HeapTupleHeaderData, HEAP_MOVED, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI, HEAP_XMIN_COMMITTED,
};
use crate::format::heap::{HEAP_XMIN_FROZEN, HEAP_XMIN_INVALID};
use crate::format::itemid::{LP_DEAD, LP_NORMAL};
use crate::format::page::Page;
use crate::format::vm::{VISIBILITYMAP_ALL_FROZEN, VISIBILITYMAP_ALL_VISIBLE};
use crate::visibility::service::Visibility;
use crate::visibility::transam::FIRST_NORMAL_TRANSACTION_ID;
use crate::visibility::xact::{xmax_locked_only, TupleState};

/// Tuples named one by one in a finding's message; the count says how many more.
const LISTED: usize = 8;

/// The tuples of one heap page that contradict its visibility map bits: (line pointer, why).
#[derive(Debug, Default)]
pub struct VmVerdict {
    pub not_visible: Vec<(u16, String)>,
    pub not_frozen: Vec<(u16, String)>,
}

/// The heap page `page` (block `block`) against its map bits `bits`: a finding for all-visible set over tuples not
/// visible to everyone, one for all-frozen set over tuples not frozen. `vis` answers the transaction statuses the
/// hint bits do not settle; a tuple whose fate it cannot tell is not counted against the page.
pub fn vm_page_findings(page: &Page<'_>, block: u64, bits: u8, vis: &Visibility) -> Vec<Finding> {
    let v = judge_page(page, bits, vis);
    let mut out = Vec::new();
    if let Some(f) =
        finding(Code::VmAllVisibleWrong, block, "all-visible", "not visible to every transaction", &v.not_visible)
    {
        out.push(f);
    }
    if let Some(f) = finding(Code::VmAllFrozenWrong, block, "all-frozen", "not frozen", &v.not_frozen) {
        out.push(f);
    }
    out
}

/// What [`vm_page_findings`] reports, tuple by tuple.
pub fn judge_page(page: &Page<'_>, bits: u8, vis: &Visibility) -> VmVerdict {
    let mut v = VmVerdict::default();
    let check_visible = bits & VISIBILITYMAP_ALL_VISIBLE != 0;
    let check_frozen = bits & VISIBILITYMAP_ALL_FROZEN != 0;
    if !check_visible && !check_frozen {
        return v;
    }
    for (off, id) in page.item_ids() {
        match id.lp_flags() {
            LP_DEAD => {
                // "Dead line pointers are neither all-visible nor frozen." (collect_corrupt_items)
                let why = "a dead line pointer".to_string();
                if check_visible {
                    v.not_visible.push((off, why.clone()));
                }
                if check_frozen {
                    v.not_frozen.push((off, why));
                }
            }
            LP_NORMAL => {
                // A header too short to parse is the page checks' to report.
                let Some(h) = page.item_bytes(id).and_then(HeapTupleHeaderData::parse) else { continue };
                if check_visible {
                    if let Some(why) = not_all_visible(&h, vis) {
                        v.not_visible.push((off, why));
                    }
                }
                if check_frozen {
                    if let Some(why) = needs_eventual_freeze(&h) {
                        v.not_frozen.push((off, why));
                    }
                }
            }
            // "Unused or redirect line pointers are of no interest." (collect_corrupt_items)
            _ => {}
        }
    }
    v
}

/// Why the tuple is not visible to every transaction (`tuple_all_visible` false), or None when it is or its fate
/// cannot be told from the files.
fn not_all_visible(h: &HeapTupleHeaderData, vis: &Visibility) -> Option<String> {
    let m = h.t_infomask;
    let xmin_settled = m & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN
        || m & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID) == HEAP_XMIN_COMMITTED;
    // A locker alone never makes a tuple anything but live to HeapTupleSatisfiesVacuum (heapam_visibility.c), and
    // an aborted xmax hint is final: with the xmin settled, no status need be read (the common case, no lookup).
    if xmin_settled && (m & HEAP_XMAX_INVALID != 0 || h.t_xmax == 0 || xmax_locked_only(m)) {
        return None;
    }
    let j = vis.judge(h, false);
    let what = match j.state {
        TupleState::Live | TupleState::Unknown => return None,
        TupleState::Dead => "dead",
        TupleState::RecentlyDead => "deleted",
        TupleState::InProgress => "not yet committed",
    };
    Some(format!("{what}: {}", j.reason))
}

/// Why the tuple will need freezing (`heap_tuple_needs_eventual_freeze`, heapam.c), or None.
fn needs_eventual_freeze(h: &HeapTupleHeaderData) -> Option<String> {
    let m = h.t_infomask;
    let normal = |x: u32| x >= FIRST_NORMAL_TRANSACTION_ID;
    // HeapTupleHeaderGetXmin gives FrozenTransactionId for a frozen xmin
    if m & HEAP_XMIN_FROZEN != HEAP_XMIN_FROZEN && normal(h.t_xmin) {
        return Some(format!("xmin {} is not frozen", h.t_xmin));
    }
    if m & HEAP_XMAX_IS_MULTI != 0 {
        if h.t_xmax != 0 {
            return Some(format!("xmax is MultiXact {}", h.t_xmax));
        }
    } else if normal(h.t_xmax) {
        return Some(format!("xmax is transaction {}", h.t_xmax));
    }
    if m & HEAP_MOVED != 0 && normal(h.t_field3) {
        return Some(format!("xvac is transaction {}", h.t_field3));
    }
    None
}

fn finding(code: Code, block: u64, bit: &str, what: &str, tuples: &[(u16, String)]) -> Option<Finding> {
    let (first, _) = tuples.first()?;
    let listed: Vec<String> = tuples.iter().take(LISTED).map(|(off, why)| format!("({block},{off}) {why}")).collect();
    let more = if tuples.len() > LISTED { format!("; {} more", tuples.len() - LISTED) } else { String::new() };
    Some(Finding::new(
        code,
        Some(block),
        Some(*first),
        format!(
            "the visibility map marks this page {bit}, but {} of its tuples are {what}: {}{more}",
            tuples.len(),
            listed.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::heap::HEAP_XMAX_COMMITTED;
    use crate::format::itemid::{ItemIdData, LP_REDIRECT};
    use crate::format::page::{PageHeaderData, BLCKSZ};
    use crate::visibility::xact::Clog;
    use std::collections::HashMap;

    /// A heap page with one 32-byte tuple per (xmin, xmax, infomask), and the extra line pointers given.
    fn page(tuples: &[(u32, u32, u16)], extra: &[ItemIdData]) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        let n = tuples.len() + extra.len();
        let upper = BLCKSZ - 32 * tuples.len();
        PageHeaderData {
            pd_lower: (24 + 4 * n) as u16,
            pd_upper: upper as u16,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: 0x2004,
            ..Default::default()
        }
        .write(&mut p);
        for (i, &(xmin, xmax, mask)) in tuples.iter().enumerate() {
            let at = upper + 32 * i;
            p[24 + 4 * i..28 + 4 * i].copy_from_slice(&ItemIdData::new(at as u16, LP_NORMAL, 32).0.to_le_bytes());
            let mut t = HeapTupleHeaderData::parse(&[0u8; 23]).unwrap();
            (t.t_xmin, t.t_xmax, t.t_infomask, t.t_infomask2, t.t_hoff) = (xmin, xmax, mask, 1, 24);
            t.write(&mut p[at..]);
        }
        for (j, id) in extra.iter().enumerate() {
            let i = tuples.len() + j;
            p[24 + 4 * i..28 + 4 * i].copy_from_slice(&id.0.to_le_bytes());
        }
        p
    }

    fn vis() -> Visibility {
        Visibility::new(Clog::bare(None, 8192, true), HashMap::new(), HashMap::new(), None)
    }

    const BOTH: u8 = VISIBILITYMAP_ALL_VISIBLE | VISIBILITYMAP_ALL_FROZEN;

    #[test]
    fn an_aborted_insert_under_both_bits_is_reported_twice() {
        let p = page(&[(700, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID), (701, 0, HEAP_XMIN_INVALID)], &[]);
        let f = vm_page_findings(&Page::new(&p).unwrap(), 5, BOTH, &vis());
        let got: Vec<(Code, Option<u16>)> = f.iter().map(|f| (f.code, f.item)).collect();
        // the committed tuple is visible but not frozen; the aborted one is neither
        assert_eq!(got, [(Code::VmAllVisibleWrong, Some(2)), (Code::VmAllFrozenWrong, Some(1))]);
        assert!(f[0].message.contains("(5,2) dead"), "{}", f[0].message);
        assert!(f[1].message.contains("2 of its tuples"), "{}", f[1].message);
    }

    #[test]
    fn frozen_and_redirected_pages_are_right_and_dead_line_pointers_wrong() {
        let frozen = HEAP_XMIN_FROZEN | HEAP_XMAX_INVALID;
        let p = page(&[(700, 0, frozen)], &[ItemIdData::new(1, LP_REDIRECT, 0), ItemIdData::new(0, 0, 0)]);
        assert!(vm_page_findings(&Page::new(&p).unwrap(), 0, BOTH, &vis()).is_empty());
        let p = page(&[(700, 0, frozen)], &[ItemIdData::new(0, LP_DEAD, 0)]);
        let f = vm_page_findings(&Page::new(&p).unwrap(), 0, VISIBILITYMAP_ALL_VISIBLE, &vis());
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].code, f[0].item), (Code::VmAllVisibleWrong, Some(2)));
        // no bits: nothing judged
        assert!(vm_page_findings(&Page::new(&p).unwrap(), 0, 0, &vis()).is_empty());
    }

    #[test]
    fn a_committed_delete_is_not_all_visible_and_a_lock_is() {
        let deleted = HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED;
        let locked = HEAP_XMIN_COMMITTED | crate::format::heap::HEAP_XMAX_LOCK_ONLY;
        let p = page(&[(700, 720, deleted), (700, 721, locked)], &[]);
        let v = judge_page(&Page::new(&p).unwrap(), BOTH, &vis());
        assert_eq!(v.not_visible.iter().map(|t| t.0).collect::<Vec<_>>(), [1]);
        assert_eq!(v.not_frozen.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2]);
        // without pg_xact an unhinted xmin cannot be judged: not counted against the page
        let p = page(&[(700, 0, 0)], &[]);
        assert!(judge_page(&Page::new(&p).unwrap(), VISIBILITYMAP_ALL_VISIBLE, &vis()).not_visible.is_empty());
    }
}
