//! The free space map against its relation's main fork: free space recorded for blocks past the fork's end
//! (`file.fsm_beyond_end`), read leaf page by leaf page.

use crate::finding::{Code, Finding};
use crate::format::page::Page;

/// `file.fsm_beyond_end`: the heap blocks at or past `heap_nblocks` (the main fork's length) to which the free
/// space map still gives free space. Only the leaf pages covering those blocks are read, through `read` (FSM fork
/// block -> its page image; `None` past the fork's end or unreadable). A leaf page the server would not accept is
/// skipped: it reads the FSM with RBM_ZERO_ON_ERROR (freespace.c, fsm_readbuf), so such a page records nothing.
pub fn fsm_beyond_end(
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
    read: impl FnMut(u64) -> Option<Vec<u8>>,
) -> Option<Finding> {
    fsm_beyond_end_finding(&fsm_blocks_beyond_end(heap_nblocks, blcksz, checksums, read), heap_nblocks)
}

/// The heap blocks of [`fsm_beyond_end`], in order.
pub fn fsm_blocks_beyond_end(
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
    mut read: impl FnMut(u64) -> Option<Vec<u8>>,
) -> Vec<u64> {
    use crate::format::fsm::{fsm_get_location, fsm_logical_to_physical, SlotsPerFSMPage};
    let mut beyond: Vec<u64> = Vec::new();
    if blcksz < 1024 {
        return beyond;
    }
    let slots = SlotsPerFSMPage(blcksz) as u64;
    let (first, _) = fsm_get_location(heap_nblocks, blcksz);
    // A leaf page covers SlotsPerFSMPage heap blocks; 2^32 heap blocks at most (BlockNumber), so the walk ends
    // there even when every page reads.
    let last_leaf = u64::from(u32::MAX) / slots;
    for leafno in first.logpageno..=last_leaf {
        let addr = crate::format::fsm::FSMAddress { level: 0, logpageno: leafno };
        let fsm_block = fsm_logical_to_physical(addr, blcksz);
        let Some(bytes) = read(fsm_block) else {
            break;
        };
        beyond.extend(fsm_leaf_beyond_end(&bytes, fsm_block, leafno, heap_nblocks, blcksz, checksums));
    }
    beyond
}

/// One finding for the heap blocks `beyond` (in order) past `heap_nblocks`: the first one, their count and runs.
pub(super) fn fsm_beyond_end_finding(beyond: &[u64], heap_nblocks: u64) -> Option<Finding> {
    let first = *beyond.first()?;
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < beyond.len() && runs.len() < 8 {
        let start = beyond[i];
        while i + 1 < beyond.len() && beyond[i + 1] == beyond[i] + 1 {
            i += 1;
        }
        runs.push(if beyond[i] == start { start.to_string() } else { format!("{start}-{}", beyond[i]) });
        i += 1;
    }
    if i < beyond.len() {
        runs.push("…".to_string());
    }
    Some(Finding::new(
        Code::FileFsmBeyondEnd,
        Some(first),
        None,
        format!(
            "the free space map records free space for {} block(s) at or past the relation's end (block {heap_nblocks}): \
             {}",
            beyond.len(),
            runs.join(", ")
        ),
    ))
}

/// The heap blocks at or past `heap_nblocks` with a nonzero category on one FSM leaf page (logical leaf `leafno`,
/// stored at `fsm_block` of the fork). Nothing for a page the server would zero instead of reading (a bad header
/// or checksum), or for an all-zero one (PageInit'ed: no free space).
pub fn fsm_leaf_beyond_end(
    page: &[u8],
    fsm_block: u64,
    leafno: u64,
    heap_nblocks: u64,
    blcksz: usize,
    checksums: bool,
) -> Vec<u64> {
    use crate::format::fsm::{fsm_get_avail, fsm_get_heap_blk, FSMAddress, SlotsPerFSMPage};
    use crate::format::page::Verification;
    let mut out = Vec::new();
    if page.len() != blcksz || blcksz < 1024 {
        return out;
    }
    let Some(p) = Page::new(page) else {
        return out;
    };
    if !matches!(p.verify(fsm_block as u32, checksums), Verification::Valid) {
        return out;
    }
    let addr = FSMAddress { level: 0, logpageno: leafno };
    for slot in 0..SlotsPerFSMPage(blcksz) {
        let heap_blk = fsm_get_heap_blk(addr, slot, blcksz);
        if heap_blk < heap_nblocks {
            continue;
        }
        if fsm_get_avail(page, slot, blcksz).is_some_and(|cat| cat != 0) {
            out.push(heap_blk);
        }
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::checksum::set_checksum;
    use crate::format::fsm::{NonLeafNodesPerPage, FSM_PAGE_DATA_FP_NODES};
    use crate::format::page::{PageHeaderData, BLCKSZ, SIZE_OF_PAGE_HEADER_DATA};

    /// An FSM leaf page as PageInit(page, BLCKSZ, 0) leaves it, with the given (slot, category) leaves set.
    fn fsm_leaf(slots: &[(usize, u8)]) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        PageHeaderData {
            pd_lower: SIZE_OF_PAGE_HEADER_DATA as u16,
            pd_upper: BLCKSZ as u16,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: 0x2004,
            ..Default::default()
        }
        .write(&mut p);
        for &(slot, cat) in slots {
            p[SIZE_OF_PAGE_HEADER_DATA + FSM_PAGE_DATA_FP_NODES + NonLeafNodesPerPage(BLCKSZ) + slot] = cat;
        }
        p
    }

    #[test]
    fn fsm_slots_past_the_end_are_reported() {
        // heap of 40 blocks: slot 10 is inside, 39 is the last block; 40, 41 and 50 are past the end, 45 is zero.
        let page = fsm_leaf(&[(10, 5), (39, 200), (40, 127), (41, 127), (45, 0), (50, 3)]);
        let mut asked = Vec::new();
        let f = fsm_beyond_end(40, BLCKSZ, false, |b| {
            asked.push(b);
            (b == 2).then(|| page.clone())
        })
        .expect("a finding");
        assert_eq!(f.code, Code::FileFsmBeyondEnd);
        assert_eq!(f.block, Some(40));
        assert!(f.message.contains("3 block(s)") && f.message.ends_with("40-41, 50"), "{}", f.message);
        // leaf 0 is FSM block 2 (after the root and the first level-1 page); the walk stops where the fork ends.
        assert_eq!(asked, vec![2, 3]);
        // the same page with the heap 51 blocks long: nothing past the end
        assert!(fsm_beyond_end(51, BLCKSZ, false, |b| (b == 2).then(|| page.clone())).is_none());
    }

    #[test]
    fn fsm_reads_only_the_leaves_past_the_end() {
        // heap of 4069 + 10 blocks: leaf 0 is all inside, leaf 1 (FSM block 3) covers 4069.. and is the first read.
        let page = fsm_leaf(&[(3, 1), (12, 9)]);
        let mut asked = Vec::new();
        let f = fsm_beyond_end(4079, BLCKSZ, false, |b| {
            asked.push(b);
            (b == 3).then(|| page.clone())
        })
        .expect("a finding");
        assert_eq!(f.block, Some(4069 + 12));
        assert_eq!(asked, vec![3, 4]);
    }

    #[test]
    fn fsm_pages_the_server_would_zero_count_for_nothing() {
        let good = fsm_leaf(&[(7, 255)]);
        // a header PageIsVerified refuses: fsm_readbuf reads with RBM_ZERO_ON_ERROR
        let mut bad = good.clone();
        bad[12..14].copy_from_slice(&9000u16.to_le_bytes()); // pd_lower past pd_upper
        assert!(fsm_leaf_beyond_end(&bad, 2, 0, 0, BLCKSZ, false).is_empty());
        // a wrong checksum with checksums on; right once it is set for FSM block 2
        let mut summed = good.clone();
        assert!(fsm_leaf_beyond_end(&summed, 2, 0, 0, BLCKSZ, true).is_empty());
        set_checksum(&mut summed, 2);
        assert_eq!(fsm_leaf_beyond_end(&summed, 2, 0, 0, BLCKSZ, true), vec![7]);
        // all-zero, short and empty images: nothing, no panic
        assert!(fsm_leaf_beyond_end(&[0u8; BLCKSZ], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_leaf_beyond_end(&good[..4096], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_leaf_beyond_end(&[], 2, 0, 0, BLCKSZ, false).is_empty());
        assert!(fsm_beyond_end(0, 100, false, |_| Some(good.clone())).is_none());
        // a heap at the largest block number: the walk ends there
        assert!(fsm_beyond_end(u64::from(u32::MAX), BLCKSZ, false, |_| Some(good.clone())).is_none());
    }
}
