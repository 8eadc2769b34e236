//! What planning a repair needs of a table's btree entries, its pages streamed through a batch at a time (the
//! server hands them over): the heap's line pointers kept in a few bytes a block, each leaf entry's heap TID judged
//! as the index pages go by, and only the entries the plan names kept — those into the pages it zeroes, those whose
//! row is already gone, and the unique key of the rows it looks at. Memory follows the damage, not the table.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use serde::Serialize;

use crate::checks::scan::for_each_leaf_tid;
use crate::format::btree::leaf_key;
use crate::format::heap::ItemPointerData;
use crate::format::itemid::{LP_DEAD, LP_UNUSED};
use crate::format::page::Page;

/// A heap TID: (block, line pointer).
pub type Tid = (u64, u16);

/// Why an index entry's row is already gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gone {
    /// Its block is past the heap's end (the file was cut).
    PastEnd,
    /// Its heap page is all zeroes.
    Zero,
    /// Its line pointer is beyond the page's (pd_lower's) count.
    Beyond,
    /// Its line pointer is unused.
    Unused,
    /// Its line pointer is dead but keeps storage (damaged flags).
    DeadWithStorage,
}

/// An entry whose row is gone, with what the plan says about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoneEntry {
    pub block: u64,
    pub lp: u16,
    pub why: Gone,
    /// The heap page's line pointer count from pd_lower (0 when pd_lower is off the page).
    pub max_offset: u16,
    /// The indexes (by the order they were read) whose entries name it.
    pub indexes: Vec<u16>,
}

/// Line pointer count of a heap block not read (or left out: a page the plan zeroes).
const UNKNOWN: u16 = u16::MAX;
/// ... of an all-zero page.
const ZERO: u16 = u16::MAX - 1;

/// A set of heap blocks, a bit each (every index entry asks several: a bit test spares a hash lookup).
#[derive(Debug, Clone, Default)]
pub struct BlockSet(Vec<u64>);

impl BlockSet {
    pub fn of(blocks: impl IntoIterator<Item = u64>) -> Self {
        let mut set = BlockSet::default();
        for b in blocks {
            set.set(b, true);
        }
        set
    }

    fn set(&mut self, block: u64, on: bool) {
        let Ok(word) = usize::try_from(block / 64) else { return };
        if word >= self.0.len() {
            if !on {
                return;
            }
            self.0.resize(word + 1, 0);
        }
        if on {
            self.0[word] |= 1 << (block % 64);
        } else {
            self.0[word] &= !(1 << (block % 64));
        }
    }

    pub fn contains(&self, block: u64) -> bool {
        usize::try_from(block / 64).ok().and_then(|w| self.0.get(w)).is_some_and(|w| w & (1 << (block % 64)) != 0)
    }
}

/// The heap's line pointers as index entries see them: two counts a block, and the few line pointers that lead
/// nowhere (unused, or dead with storage) of the blocks that have any.
struct HeapLines {
    /// pd_lower's count, or UNKNOWN / ZERO.
    max_offset: Vec<u16>,
    /// The line pointers the page can hold of those (the rest are beyond it too).
    readable: Vec<u16>,
    nowhere: HashMap<u64, Vec<(u16, Gone)>>,
    /// The blocks in `nowhere`.
    has_nowhere: BlockSet,
}

impl HeapLines {
    fn new(nblocks: u64) -> Self {
        let n = usize::try_from(nblocks).unwrap_or(0);
        HeapLines {
            max_offset: vec![UNKNOWN; n],
            readable: vec![0; n],
            nowhere: HashMap::new(),
            has_nowhere: BlockSet::default(),
        }
    }

    fn record(&mut self, block: u64, bytes: &[u8]) {
        let Some(slot) = usize::try_from(block).ok().filter(|&i| i < self.max_offset.len()) else { return };
        if self.nowhere.remove(&block).is_some() {
            self.has_nowhere.set(block, false);
        }
        let Some(page) = Page::new(bytes) else {
            self.max_offset[slot] = UNKNOWN;
            return;
        };
        if page.is_all_zero() {
            self.max_offset[slot] = ZERO;
            return;
        }
        // pd_lower's count as repair's messages give it: 0 when pd_lower lies outside the page
        let lower = usize::from(page.header().pd_lower);
        let counted = if (24..=bytes.len()).contains(&lower) { (lower - 24) / 4 } else { 0 };
        self.max_offset[slot] = u16::try_from(counted).unwrap_or(ZERO - 1).min(ZERO - 1);
        self.readable[slot] = page.readable_item_count();
        let nowhere: Vec<(u16, Gone)> = page
            .item_ids()
            .filter_map(|(off, id)| match id.lp_flags() {
                LP_UNUSED => Some((off, Gone::Unused)),
                LP_DEAD if id.has_storage() => Some((off, Gone::DeadWithStorage)),
                _ => None,
            })
            .collect();
        if !nowhere.is_empty() {
            self.nowhere.insert(block, nowhere);
            self.has_nowhere.set(block, true);
        }
    }

    /// Why the row at (block, lp) is gone, or None (in use, or its page not known); block < nblocks.
    fn judge(&self, block: u64, lp: u16) -> Option<(Gone, u16)> {
        let slot = usize::try_from(block).ok()?;
        let max_offset = *self.max_offset.get(slot)?;
        match max_offset {
            UNKNOWN => None,
            ZERO => Some((Gone::Zero, 0)),
            _ if lp == 0 || lp > max_offset || lp > self.readable[slot] => Some((Gone::Beyond, max_offset)),
            _ if !self.has_nowhere.contains(block) => None,
            _ => {
                let found = self.nowhere.get(&block)?.iter().find(|(off, _)| *off == lp)?;
                Some((found.1, max_offset))
            }
        }
    }
}

/// FNV-1a: every entry of an index is looked up, its key a few bytes; SipHash's resistance to chosen keys buys
/// nothing here and costs most of the pass.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

type FnvSet<T> = HashSet<T, BuildHasherDefault<Fnv>>;

/// Which entries keep their unique key.
#[derive(Debug, Default, Clone)]
pub struct KeyWanted {
    /// Entries into these heap blocks.
    pub blocks: BlockSet,
    /// Entries naming these heap TIDs.
    pub tids: FnvSet<Tid>,
    /// Entries whose key is one of these.
    pub keys: FnvSet<Vec<u8>>,
}

impl KeyWanted {
    pub fn new(blocks: BlockSet, tids: Vec<Tid>, keys: Vec<Vec<u8>>) -> Self {
        KeyWanted { blocks, tids: tids.into_iter().collect(), keys: keys.into_iter().collect() }
    }

    fn wants(&self, tid: Tid, key: &[u8]) -> bool {
        self.blocks.contains(tid.0)
            || (!self.tids.is_empty() && self.tids.contains(&tid))
            || (!self.keys.is_empty() && self.keys.contains(key))
    }
}

/// One planning pass: feed the heap's pages (`heap`), then each btree index's (`index`), then read the answers.
pub struct EntryScan {
    nblocks: u64,
    blcksz: usize,
    named_blocks: BlockSet,
    wanted: KeyWanted,
    heap: HeapLines,
    named: BTreeMap<Tid, Vec<u16>>,
    gone: BTreeMap<Tid, GoneEntry>,
    keys: HashMap<Tid, Vec<u8>>,
    keyed_entries: u64,
}

fn add_index(list: &mut Vec<u16>, index: u16) {
    if list.last() != Some(&index) {
        list.push(index);
    }
}

impl EntryScan {
    /// A pass over a heap of `nblocks` blocks; every entry into `named_blocks` (the pages the plan zeroes) is
    /// listed, and their line pointers are not asked.
    pub fn new(nblocks: u64, blcksz: usize, named_blocks: BlockSet, wanted: KeyWanted) -> Self {
        EntryScan {
            nblocks,
            blcksz,
            named_blocks,
            wanted,
            heap: HeapLines::new(nblocks),
            named: BTreeMap::new(),
            gone: BTreeMap::new(),
            keys: HashMap::new(),
            keyed_entries: 0,
        }
    }

    /// Heap pages, block `first` onwards (a later copy of a block replaces an earlier one).
    pub fn heap(&mut self, data: &[u8], first: u64) {
        if self.blcksz == 0 {
            return;
        }
        for (i, bytes) in data.chunks_exact(self.blcksz).enumerate() {
            let block = first + i as u64;
            if !self.named_blocks.contains(block) {
                self.heap.record(block, bytes);
            }
        }
    }

    /// Pages of btree index number `index` (any blocks but the metapage, in any order). Of the `keyed` index (the
    /// unique key's), only entries whose key can be read count: repair names rows by it.
    pub fn index(&mut self, data: &[u8], index: u16, keyed: bool) {
        if self.blcksz == 0 {
            return;
        }
        for bytes in data.chunks_exact(self.blcksz) {
            let Some(page) = Page::new(bytes) else { continue };
            for_each_leaf_tid(&page, |_, tuple, tid| {
                if !keyed {
                    self.entry(index, tid, None);
                } else if let Some(key) = leaf_key(tuple) {
                    self.entry(index, tid, Some(key));
                }
            });
        }
    }

    fn entry(&mut self, index: u16, tid: &ItemPointerData, key: Option<&[u8]>) {
        let t: Tid = (u64::from(tid.block), tid.offset);
        let named = self.named_blocks.contains(t.0);
        if named {
            add_index(self.named.entry(t).or_default(), index);
        }
        let gone = if t.0 >= self.nblocks {
            Some((Gone::PastEnd, 0))
        } else if named {
            None
        } else {
            self.heap.judge(t.0, t.1)
        };
        if let Some((why, max_offset)) = gone {
            let e = self.gone.entry(t).or_insert_with(|| GoneEntry {
                block: t.0,
                lp: t.1,
                why,
                max_offset,
                indexes: Vec::new(),
            });
            add_index(&mut e.indexes, index);
        }
        let Some(key) = key else { return };
        self.keyed_entries += 1;
        if gone.is_some() || self.wanted.wants(t, key) {
            self.keys.insert(t, key.to_vec()); // a TID named twice keeps its last entry's key
        }
    }

    /// Every TID into the named blocks, with the indexes (in reading order) that hold it.
    pub fn named(&self) -> impl Iterator<Item = (&Tid, &Vec<u16>)> {
        self.named.iter()
    }

    /// The entries whose row is gone, by TID.
    pub fn gone(&self) -> impl Iterator<Item = &GoneEntry> {
        self.gone.values()
    }

    /// The keys kept: of the wanted entries and of those whose row is gone.
    pub fn keys(&self) -> &HashMap<Tid, Vec<u8>> {
        &self.keys
    }

    /// How many entries of the keyed index had a key.
    pub fn keyed_entries(&self) -> u64 {
        self.keyed_entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::assemble_heap_page;

    const BS: usize = 8192;

    /// A frozen one-int tuple claiming (block, item).
    fn tuple(block: u32, item: u16) -> Vec<u8> {
        let mut t = vec![0u8; 28];
        t[0..4].copy_from_slice(&2u32.to_le_bytes());
        t[14..16].copy_from_slice(&(block as u16).to_le_bytes());
        t[16..18].copy_from_slice(&item.to_le_bytes());
        t[18..20].copy_from_slice(&1u16.to_le_bytes());
        t[20..22].copy_from_slice(&0x0900u16.to_le_bytes());
        t[22] = 24;
        t[24..28].copy_from_slice(&7i32.to_le_bytes());
        t
    }

    fn heap_page(block: u32, n: u16) -> Vec<u8> {
        let tuples: Vec<Vec<u8>> = (1..=n).map(|i| tuple(block, i)).collect();
        let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
        assemble_heap_page(&refs, BS).expect("page")
    }

    /// Set line pointer `lp`'s flags (and keep or drop its storage).
    fn set_lp(page: &mut [u8], lp: u16, flags: u32, keep_len: bool) {
        let at = 24 + 4 * usize::from(lp - 1);
        let mut w = u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
        w = (w & !(0x3 << 15)) | (flags << 15);
        if !keep_len {
            w &= 0x7FFF | (0x3 << 15);
        }
        page[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }

    /// A rightmost btree leaf page whose entries point at `tids`, each with a key equal to its position
    /// (4 bytes and the padding to MAXALIGN, as the key bytes read).
    fn leaf(tids: &[(u32, u16)]) -> Vec<u8> {
        let mut page = vec![0u8; BS];
        let special = BS - 16;
        let n = tids.len();
        let lower = 24 + 4 * n;
        let mut upper = special;
        for (i, (b, o)) in tids.iter().enumerate() {
            upper -= 16; // IndexTupleData (8) + a 4-byte key, MAXALIGNed
            let t = &mut page[upper..upper + 16];
            t[0..2].copy_from_slice(&((*b >> 16) as u16).to_le_bytes());
            t[2..4].copy_from_slice(&(*b as u16).to_le_bytes());
            t[4..6].copy_from_slice(&o.to_le_bytes());
            t[6..8].copy_from_slice(&16u16.to_le_bytes()); // t_info: size 16
            t[8..12].copy_from_slice(&(i as u32).to_le_bytes());
            let lp = (upper as u32) | (1 << 15) | (16 << 17);
            page[24 + 4 * i..28 + 4 * i].copy_from_slice(&lp.to_le_bytes());
        }
        page[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
        page[14..16].copy_from_slice(&(upper as u16).to_le_bytes());
        page[16..18].copy_from_slice(&(special as u16).to_le_bytes());
        page[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes()); // pd_pagesize_version
        page[special + 12..special + 14].copy_from_slice(&3u16.to_le_bytes()); // BTP_LEAF | BTP_ROOT
        page
    }

    #[test]
    fn entries_are_judged_against_the_heap_and_only_the_named_kept() {
        let mut p1 = heap_page(1, 5);
        set_lp(&mut p1, 2, 0, false); // unused
        set_lp(&mut p1, 3, 3, true); // dead, storage kept: damaged flags
        set_lp(&mut p1, 4, 3, false); // dead without storage: vacuum's, the row may come back as its index's
        let mut heap = heap_page(0, 3);
        heap.extend(p1);
        heap.extend(vec![0u8; BS]); // block 2: all zeroes
        heap.extend(heap_page(3, 3)); // block 3: zeroed by the plan
        let wanted = KeyWanted::new(BlockSet::of([0]), Vec::new(), Vec::new());
        let mut scan = EntryScan::new(4, BS, BlockSet::of([3]), wanted);
        scan.heap(&heap, 0);
        let tids = [(0, 1), (1, 1), (1, 2), (1, 3), (1, 4), (1, 9), (2, 5), (3, 2), (7, 1)];
        scan.index(&leaf(&tids), 0, false);
        scan.index(&leaf(&tids[..3]), 1, true);
        let gone: Vec<(Tid, Gone, Vec<u16>)> =
            scan.gone().map(|g| ((g.block, g.lp), g.why, g.indexes.clone())).collect();
        assert_eq!(
            gone,
            vec![
                ((1, 2), Gone::Unused, vec![0, 1]),
                ((1, 3), Gone::DeadWithStorage, vec![0]),
                ((1, 9), Gone::Beyond, vec![0]),
                ((2, 5), Gone::Zero, vec![0]),
                ((7, 1), Gone::PastEnd, vec![0]),
            ]
        );
        assert_eq!(scan.named().map(|(t, ix)| (*t, ix.clone())).collect::<Vec<_>>(), vec![((3, 2), vec![0])]);
        // keys: the wanted block's entry and the gone one, of the keyed index only
        let mut keys: Vec<(Tid, Vec<u8>)> = scan.keys().iter().map(|(t, k)| (*t, k.clone())).collect();
        keys.sort();
        assert_eq!(keys, vec![((0, 1), 0u64.to_le_bytes().to_vec()), ((1, 2), 2u64.to_le_bytes().to_vec())]);
        assert_eq!(scan.keyed_entries(), 3);
    }

    #[test]
    fn a_sound_table_keeps_nothing() {
        // 2,000 full heap pages and an index entry for every row: nothing is gone, nothing named, no key kept
        let pages = 2000u32;
        let mut scan = EntryScan::new(u64::from(pages), BS, BlockSet::default(), KeyWanted::default());
        let page = heap_page(0, 100);
        let mut tids = Vec::new();
        for b in 0..pages {
            scan.heap(&page, u64::from(b));
            tids.extend((1..=100).map(|lp| (b, lp)));
        }
        for chunk in tids.chunks(400) {
            scan.index(&leaf(chunk), 0, true);
        }
        assert_eq!((scan.gone().count(), scan.named().count(), scan.keys().len()), (0, 0, 0));
        assert_eq!(scan.keyed_entries(), 200_000);
        assert!(scan.heap.nowhere.is_empty(), "no line pointer leads nowhere");
    }

    #[test]
    fn a_key_asked_for_finds_every_entry_holding_it() {
        let wanted = KeyWanted::new(BlockSet::default(), Vec::new(), vec![1u64.to_le_bytes().to_vec()]);
        let mut scan = EntryScan::new(10, BS, BlockSet::default(), wanted);
        scan.index(&leaf(&[(4, 1), (5, 2), (6, 3)]), 0, true);
        assert_eq!(scan.keys().keys().copied().collect::<Vec<_>>(), vec![(5, 2)]);
        assert_eq!(scan.gone().count(), 0, "heap blocks not read are not judged");
    }
}
