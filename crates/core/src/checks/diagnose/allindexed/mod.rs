//! Every live row of a table has its entries in the table's btree indexes: amcheck's `heapallindexed`, done from
//! the relation files in the core.
//!
//! As `bt_index_check(…, heapallindexed => true)` does (contrib/amcheck/verify_nbtree.c), every non-pivot leaf
//! entry of an index (posting lists expanded, LP_DEAD entries left out) goes into a Bloom filter as a fingerprint
//! of its heap TID and its normalized values (compressed values decompressed, varlena headers dropped); then each
//! live heap row is fingerprinted the same way (a heap-only tuple under its HOT chain's root TID) and looked up.
//!
//! The answer is one-sided on purpose. "Every row found" is proof (up to the filter's false-positive rate, as for
//! amcheck). Rows are looked up unless their hint bits say they are dead (an aborted insert, a committed delete):
//! looking up more rows than amcheck's snapshot sees can only add doubt, never hide a row. Anything else is only
//! doubt: a row missing from the filter (it may be aborted or still being inserted), a page written since the last
//! checkpoint, a key value stored in TOAST. The caller then asks the server (`bt_index_check` with
//! heapallindexed), which decides and reports in its own words. Nothing here produces a finding.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{io_reason, CoreError, Result};
use crate::format::btree::{
    BTPageOpaqueData, IndexTupleData, BTP_DELETED, BTP_HALF_DEAD, P_HIKEY, SIZE_OF_ITEM_POINTER,
};
use crate::format::compress::decompress;
use crate::format::heap::{
    HeapTupleHeaderData, ItemPointerData, HEAP_HASNULL, HEAP_HOT_UPDATED, HEAP_ONLY_TUPLE, HEAP_XMAX_COMMITTED,
    HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI, HEAP_XMAX_LOCK_ONLY, HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID, SIZEOF_HEAP_TUPLE_HEADER,
};
use crate::format::itemid::{LP_DEAD, LP_NORMAL, LP_REDIRECT};
use crate::format::page::Page;
use crate::format::tuple::{align_nominal, AttrDesc};
use crate::sources::blocks::{BlockReader, SegFile};

mod bloom;

use bloom::{Bloom, BloomBuilder, Print};

/// `HEAP_LOCK_MASK` (htup_details.h).
const HEAP_LOCK_MASK: u16 = 0x0010 | 0x0040;
/// `INDEX_MAX_KEYS` / 8 (pg_config_manual.h, itup.h): the index tuple's null bitmap is always 4 bytes.
const INDEX_NULL_BITMAP_AT: usize = 8;
/// A filter that would let more than this share of missing rows through proves nothing (too small for the
/// index, e.g. sized from a table never analyzed): the server checks instead.
pub const MAX_FALSE_POSITIVES: f64 = 0.05;
/// Blocks read and checked per task.
const CHUNK_BLOCKS: u64 = 128;

#[derive(Debug, Clone, Deserialize)]
pub struct RelFiles {
    pub name: String,
    pub files: Vec<SegFile>,
    pub nblocks: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IndexSpec {
    #[serde(flatten)]
    pub rel: RelFiles,
    /// The heap attnum of each index column (pg_index.indkey, key and INCLUDE columns; no expressions).
    pub keys: Vec<i16>,
    /// The index's own pg_attribute rows, in column order (the same types as the heap's columns).
    pub attrs: Vec<AttrDesc>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllIndexedConfig {
    pub heap: RelFiles,
    /// The heap's pg_attribute rows 1..=n, at least up to the highest attnum any index uses.
    pub heap_attrs: Vec<AttrDesc>,
    pub indexes: Vec<IndexSpec>,
    /// Roughly how many entries each index holds (pg_class.reltuples of the table): sizes the filters.
    pub expected_rows: u64,
    /// The most the filters of all indexes may take together.
    pub bloom_bytes: u64,
    #[serde(default)]
    pub seed: u64,
    /// Pages newer than this redo LSN are not used (a live server may still hold a newer copy).
    #[serde(default)]
    pub live_redo_lsn: Option<u64>,
    #[serde(default)]
    pub jobs: Option<usize>,
    #[serde(default = "crate::sources::blocks::default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "crate::sources::blocks::default_relseg")]
    pub relseg_size: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexVerdict {
    pub name: String,
    /// Leaf entries fingerprinted (one per heap TID).
    pub entries: u64,
    /// Leaf entries whose values could not be read (damaged or unknown layout).
    pub unreadable_entries: u64,
    pub unreadable_pages: u64,
    pub newer_pages: u64,
    pub bloom_bytes: u64,
    /// The filter's expected false-positive rate with the entries it holds.
    pub false_positive_rate: f64,
    /// Live rows not found in the filter, and the first few of them (block, line pointer).
    pub missing: u64,
    pub first_missing: Vec<(u64, u16)>,
    /// Rows with a key value stored in TOAST (the index holds it inline; not compared here).
    pub toasted: u64,
    /// Rows shorter than an indexed column (a column added later: its value is the catalog's default).
    pub short_rows: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct AllIndexedResult {
    pub indexes: Vec<IndexVerdict>,
    pub heap_pages: u64,
    pub unreadable_pages: u64,
    pub newer_pages: u64,
    /// Live rows looked up in every index.
    pub rows: u64,
    /// Of those, rows whose status the hint bits do not settle (looked up too: a row not found is a doubt anyway).
    pub unhinted: u64,
    /// Heap-only tuples no HOT chain on their page leads to.
    pub orphans: u64,
}

impl AllIndexedResult {
    /// Whether the files prove, for index `i`, that every live row is in it.
    pub fn proven(&self, i: usize) -> bool {
        let ix = &self.indexes[i];
        self.unreadable_pages == 0
            && self.newer_pages == 0
            && self.orphans == 0
            && ix.unreadable_entries == 0
            && ix.unreadable_pages == 0
            && ix.newer_pages == 0
            && ix.missing == 0
            && ix.toasted == 0
            && ix.short_rows == 0
            && ix.false_positive_rate <= MAX_FALSE_POSITIVES
    }
}

/// One stored value, as deforming sees it.
#[derive(Clone, Copy)]
enum Val<'a> {
    Null,
    /// The value's bytes without any varlena header.
    Bytes(&'a [u8]),
    /// A compressed inline varlena: method, raw size, compressed bytes.
    Compressed(u8, usize, &'a [u8]),
    /// A TOAST pointer.
    External,
    /// Beyond the tuple's attribute count.
    Missing,
}

/// Deform the first `attrs.len()` attributes of a tuple whose data starts at `start` (heap or index tuple alike:
/// `att_align_nominal` for fixed-length values, `att_align_pointer` for varlenas, cstrings to their NUL). `natts`
/// is how many the tuple stores; `null_at` where its null bitmap is. `None` when a value runs out of the tuple.
fn deform<'a>(
    t: &'a [u8],
    start: usize,
    natts: usize,
    null_at: Option<usize>,
    attrs: &[AttrDesc],
    out: &mut Vec<Val<'a>>,
) -> Option<()> {
    out.clear();
    let mut off = start;
    for (i, a) in attrs.iter().enumerate() {
        if i >= natts {
            out.push(Val::Missing);
            continue;
        }
        if let Some(at) = null_at {
            if t.get(at + i / 8)? & (1 << (i % 8)) == 0 {
                out.push(Val::Null);
                continue;
            }
        }
        if a.attlen > 0 {
            let s = align_nominal(off, a.attalign);
            let e = s.checked_add(a.attlen as usize)?;
            out.push(Val::Bytes(t.get(s..e)?));
            off = e;
        } else if a.attlen == -1 {
            let s = if *t.get(off)? != 0 { off } else { align_nominal(off, a.attalign) };
            let b0 = *t.get(s)?;
            if b0 == 0x01 {
                // VARATT_IS_1B_E: on disk only VARTAG_ONDISK pointers (18 bytes with their 2-byte header).
                let tag = *t.get(s + 1)?;
                if tag != 18 {
                    return None;
                }
                out.push(Val::External);
                off = s + 18;
            } else if b0 & 0x01 == 0x01 {
                let n = usize::from(b0 >> 1);
                out.push(Val::Bytes(t.get(s + 1..s + n)?));
                off = s + n;
            } else {
                let word = u32::from_le_bytes(t.get(s..s + 4)?.try_into().ok()?);
                let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
                if b0 & 0x03 == 0x02 {
                    let info = u32::from_le_bytes(t.get(s + 4..s + 8)?.try_into().ok()?);
                    let raw = (info & 0x3FFF_FFFF) as usize;
                    out.push(Val::Compressed((info >> 30) as u8, raw, t.get(s + 8..s + n)?));
                } else {
                    out.push(Val::Bytes(t.get(s + 4..s + n)?));
                }
                off = s + n.max(4);
            }
        } else {
            let s = align_nominal(off, a.attalign);
            let nul = t.get(s..)?.iter().position(|b| *b == 0)?;
            out.push(Val::Bytes(&t[s..s + nul]));
            off = s + nul + 1;
        }
    }
    Some(())
}

/// What fingerprinting a tuple's values gave.
enum Fp {
    Print(u64),
    Toasted,
    Short,
    Unreadable,
}

fn fingerprint(seed: u64, block: u32, offset: u16, vals: &[Val<'_>], keys: impl Iterator<Item = usize>) -> Fp {
    let mut p = Print::new(seed, block, offset);
    for i in keys {
        match vals.get(i) {
            Some(Val::Null) => p.null(),
            Some(Val::Bytes(b)) => p.bytes(b),
            Some(Val::Compressed(method, raw, src)) => match decompress(*method, src, *raw) {
                Ok(v) => p.bytes(&v),
                Err(_) => return Fp::Unreadable,
            },
            Some(Val::External) => return Fp::Toasted,
            Some(Val::Missing) => return Fp::Short,
            None => return Fp::Unreadable,
        }
    }
    Fp::Print(p.finish())
}

/// The page in `bytes` when it can be used: pages written since the redo point and pages that cannot be read are
/// counted instead (in `newer` and `unreadable`).
fn usable<'a>(
    bytes: &'a [u8],
    blcksz: usize,
    redo: Option<u64>,
    newer: &mut u64,
    unreadable: &mut u64,
) -> Option<Page<'a>> {
    let Some(page) = Page::new(bytes) else {
        *unreadable += 1;
        return None;
    };
    if page.is_all_zero() {
        return Some(page);
    }
    if !page.header_is_sane(blcksz) {
        *unreadable += 1;
        return None;
    }
    if redo.is_some_and(|r| page.header().pd_lsn.lsn() > r) {
        *newer += 1;
        return None;
    }
    Some(page)
}

#[derive(Default)]
struct IndexTally {
    entries: u64,
    unreadable_entries: u64,
    unreadable_pages: u64,
    newer_pages: u64,
}

fn fill_index(
    cfg: &AllIndexedConfig,
    ix: &IndexSpec,
    bloom: &BloomBuilder,
    heap_blocks: (u64, u64),
) -> Result<IndexTally> {
    let reader = BlockReader::new(&ix.rel.files, cfg.blcksz, cfg.relseg_size);
    let blcksz = cfg.blcksz as usize;
    let chunks: Vec<u64> = (1..ix.rel.nblocks.max(1)).step_by(CHUNK_BLOCKS as usize).collect();
    let tallies: Vec<Result<IndexTally>> = chunks
        .par_iter()
        .map(|&first| {
            let count = CHUNK_BLOCKS.min(ix.rel.nblocks - first);
            let data = reader
                .read(first, count)
                .map_err(|e| CoreError::Invalid(format!("cannot read {}: {}", ix.rel.name, io_reason(&e))))?;
            let mut t = IndexTally::default();
            let mut vals = Vec::new();
            let mut prints = Vec::new();
            for bytes in data.chunks_exact(blcksz) {
                let Some(page) = usable(bytes, blcksz, cfg.live_redo_lsn, &mut t.newer_pages, &mut t.unreadable_pages)
                else {
                    continue;
                };
                if page.is_all_zero() {
                    continue;
                }
                let Some(o) = BTPageOpaqueData::from_page(&page) else {
                    t.unreadable_pages += 1;
                    continue;
                };
                if !o.is_leaf() || o.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
                    continue;
                }
                for (off, id) in page.item_ids() {
                    if (!o.is_rightmost() && off == P_HIKEY) || id.lp_flags() == LP_DEAD {
                        continue;
                    }
                    if id.lp_flags() != LP_NORMAL {
                        continue;
                    }
                    let Some(tuple) = page.item_bytes(id) else {
                        t.unreadable_entries += 1;
                        continue;
                    };
                    t.unreadable_entries +=
                        u64::from(!fill_entry(cfg.seed, ix, tuple, heap_blocks, &mut prints, &mut vals));
                }
            }
            t.entries = prints.len() as u64;
            bloom.insert_all(&mut prints);
            Ok(t)
        })
        .collect();
    let mut all = IndexTally::default();
    for t in tallies {
        let t = t?;
        all.entries += t.entries;
        all.unreadable_entries += t.unreadable_entries;
        all.unreadable_pages += t.unreadable_pages;
        all.newer_pages += t.newer_pages;
    }
    Ok(all)
}

/// Fingerprint one leaf tuple (every TID of a posting list); false when it cannot be read.
fn fill_entry<'a>(
    seed: u64,
    ix: &IndexSpec,
    tuple: &'a [u8],
    heap_blocks: (u64, u64),
    prints: &mut Vec<u64>,
    vals: &mut Vec<Val<'a>>,
) -> bool {
    let Some(it) = IndexTupleData::parse(tuple) else { return false };
    if it.is_pivot() {
        return true;
    }
    let size = it.size().min(tuple.len());
    let end = if it.is_posting() { it.posting_offset() } else { size };
    let Some(body) = tuple.get(..end) else { return false };
    let nulls = it.has_nulls().then_some(INDEX_NULL_BITMAP_AT);
    if deform(body, it.data_offset(), ix.attrs.len(), nulls, &ix.attrs, vals).is_none() {
        return false;
    }
    let (first, count) = if it.is_posting() {
        let start = it.posting_offset();
        let n = usize::from(it.alt_count());
        if start + n * SIZE_OF_ITEM_POINTER > size {
            return false;
        }
        (start, n)
    } else {
        (0, 1)
    };
    for i in 0..count {
        let Some(tid) = ItemPointerData::parse(tuple, first + i * SIZE_OF_ITEM_POINTER) else { return false };
        if !(heap_blocks.0..heap_blocks.1).contains(&u64::from(tid.block)) {
            continue; // another pass's
        }
        match fingerprint(seed, tid.block, tid.offset, vals, 0..ix.attrs.len()) {
            Fp::Print(h) => prints.push(h),
            _ => return false,
        }
    }
    true
}

/// `HEAP_XMAX_IS_LOCKED_ONLY` (htup_details.h).
fn xmax_locked_only(infomask: u16) -> bool {
    infomask & HEAP_XMAX_LOCK_ONLY != 0 || infomask & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK) == HEAP_XMAX_EXCL_LOCK
}

enum Live {
    Yes,
    No,
    Unknown,
}

/// Whether the hint bits alone say the row is live now (inserted by a committed transaction, not deleted).
fn live(h: &HeapTupleHeaderData) -> Live {
    let m = h.t_infomask;
    if m & HEAP_XMIN_COMMITTED == 0 {
        return if m & HEAP_XMIN_INVALID != 0 { Live::No } else { Live::Unknown };
    }
    if m & HEAP_XMAX_INVALID != 0 || xmax_locked_only(m) {
        return Live::Yes;
    }
    if m & HEAP_XMAX_COMMITTED != 0 && m & HEAP_XMAX_IS_MULTI == 0 {
        return Live::No;
    }
    Live::Unknown
}

#[derive(Default)]
struct HeapTally {
    pages: u64,
    unreadable_pages: u64,
    newer_pages: u64,
    rows: u64,
    unhinted: u64,
    orphans: u64,
    missing: Vec<u64>,
    toasted: Vec<u64>,
    short_rows: Vec<u64>,
    first_missing: Vec<Vec<(u64, u16)>>,
}

const FIRST_MISSING: usize = 20;

/// The root line pointer of every tuple's HOT chain on a heap page (0: not reached from any root).
fn hot_roots(page: &Page<'_>, roots: &mut Vec<u16>) {
    let n = usize::from(page.readable_item_count());
    roots.clear();
    roots.resize(n + 1, 0);
    let header = |off: u16| {
        let id = page.item_id(off)?;
        if id.lp_flags() != LP_NORMAL {
            return None;
        }
        HeapTupleHeaderData::parse(page.item_bytes(id)?)
    };
    for (off, id) in page.item_ids() {
        let start = match id.lp_flags() {
            LP_REDIRECT => id.lp_off(),
            LP_NORMAL => match header(off) {
                Some(h) if h.t_infomask2 & HEAP_ONLY_TUPLE == 0 => off,
                _ => continue,
            },
            _ => continue,
        };
        let mut cur = start;
        for _ in 0..=n {
            let Some(h) = header(cur) else { break };
            if cur != off && h.t_infomask2 & HEAP_ONLY_TUPLE == 0 {
                break; // a redirect must lead to a heap-only tuple; a chain only runs through them
            }
            if let Some(slot) = roots.get_mut(usize::from(cur)) {
                *slot = off;
            }
            let next = h.t_ctid.offset;
            if h.t_infomask2 & HEAP_HOT_UPDATED == 0 || next == cur || next == 0 || usize::from(next) > n {
                break;
            }
            cur = next;
        }
    }
}

fn probe_heap(cfg: &AllIndexedConfig, blooms: &[Bloom], heap_blocks: (u64, u64)) -> Result<HeapTally> {
    let reader = BlockReader::new(&cfg.heap.files, cfg.blcksz, cfg.relseg_size);
    let blcksz = cfg.blcksz as usize;
    let nix = cfg.indexes.len();
    let width = cfg.indexes.iter().flat_map(|ix| ix.keys.iter()).map(|k| *k as usize).max().unwrap_or(0);
    let attrs = &cfg.heap_attrs[..width.min(cfg.heap_attrs.len())];
    let key_slots: Vec<Vec<usize>> =
        cfg.indexes.iter().map(|ix| ix.keys.iter().map(|k| (*k as usize).wrapping_sub(1)).collect()).collect();
    let chunks: Vec<u64> = (heap_blocks.0..heap_blocks.1).step_by(CHUNK_BLOCKS as usize).collect();
    let tallies: Vec<Result<HeapTally>> = chunks
        .par_iter()
        .map(|&first| {
            let count = CHUNK_BLOCKS.min(heap_blocks.1 - first);
            let data = reader
                .read(first, count)
                .map_err(|e| CoreError::Invalid(format!("cannot read {}: {}", cfg.heap.name, io_reason(&e))))?;
            let mut t = HeapTally {
                missing: vec![0; nix],
                toasted: vec![0; nix],
                short_rows: vec![0; nix],
                first_missing: vec![Vec::new(); nix],
                ..Default::default()
            };
            let mut vals = Vec::new();
            let mut roots = Vec::new();
            for (i, bytes) in data.chunks_exact(blcksz).enumerate() {
                let block = first + i as u64;
                let Some(page) = usable(bytes, blcksz, cfg.live_redo_lsn, &mut t.newer_pages, &mut t.unreadable_pages)
                else {
                    continue;
                };
                t.pages += 1;
                if page.is_all_zero() {
                    continue;
                }
                hot_roots(&page, &mut roots);
                for (off, id) in page.item_ids() {
                    if id.lp_flags() != LP_NORMAL {
                        continue;
                    }
                    let Some(tuple) = page.item_bytes(id) else {
                        t.unreadable_pages += 1;
                        break;
                    };
                    let Some(h) = HeapTupleHeaderData::parse(tuple) else {
                        t.unreadable_pages += 1;
                        break;
                    };
                    match live(&h) {
                        Live::No => continue,
                        // Looked up all the same: found proves its entry is there; a row that is in fact aborted,
                        // or still being inserted, is not found and sends the index to the server.
                        Live::Unknown => t.unhinted += 1,
                        Live::Yes => {}
                    }
                    let root = if h.t_infomask2 & HEAP_ONLY_TUPLE != 0 {
                        roots.get(usize::from(off)).copied().unwrap_or(0)
                    } else {
                        off
                    };
                    if root == 0 {
                        t.orphans += 1;
                        continue;
                    }
                    let nulls = (h.t_infomask & HEAP_HASNULL != 0).then_some(SIZEOF_HEAP_TUPLE_HEADER);
                    if deform(tuple, usize::from(h.t_hoff), usize::from(h.natts()), nulls, attrs, &mut vals).is_none() {
                        t.unreadable_pages += 1;
                        break;
                    }
                    t.rows += 1;
                    for (x, slots) in key_slots.iter().enumerate() {
                        match fingerprint(cfg.seed, block as u32, root, &vals, slots.iter().copied()) {
                            Fp::Print(fp) => {
                                if !blooms[x].contains(fp) {
                                    t.missing[x] += 1;
                                    if t.first_missing[x].len() < FIRST_MISSING {
                                        t.first_missing[x].push((block, off));
                                    }
                                }
                            }
                            Fp::Toasted => t.toasted[x] += 1,
                            Fp::Short => t.short_rows[x] += 1,
                            Fp::Unreadable => t.unreadable_pages += 1,
                        }
                    }
                }
            }
            Ok(t)
        })
        .collect();
    let mut all = HeapTally::default();
    for t in tallies {
        all.add(t?);
    }
    Ok(all)
}

impl HeapTally {
    fn add(&mut self, t: HeapTally) {
        self.pages += t.pages;
        self.unreadable_pages += t.unreadable_pages;
        self.newer_pages += t.newer_pages;
        self.rows += t.rows;
        self.unhinted += t.unhinted;
        self.orphans += t.orphans;
        let n = t.missing.len();
        self.missing.resize(n.max(self.missing.len()), 0);
        self.toasted.resize(n.max(self.toasted.len()), 0);
        self.short_rows.resize(n.max(self.short_rows.len()), 0);
        self.first_missing.resize(n.max(self.first_missing.len()), Vec::new());
        for x in 0..n {
            self.missing[x] += t.missing[x];
            self.toasted[x] += t.toasted[x];
            self.short_rows[x] += t.short_rows[x];
            for m in &t.first_missing[x] {
                if self.first_missing[x].len() < FIRST_MISSING {
                    self.first_missing[x].push(*m);
                }
            }
        }
    }
}

/// Check that every live row of `cfg.heap` is in each of `cfg.indexes`, reading their files.
pub fn all_indexed(cfg: &AllIndexedConfig) -> Result<AllIndexedResult> {
    for ix in &cfg.indexes {
        if ix.keys.len() != ix.attrs.len() || ix.keys.iter().any(|k| *k < 1 || *k as usize > cfg.heap_attrs.len()) {
            return Err(CoreError::Invalid(format!("index {}: keys and attributes do not match", ix.rel.name)));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.jobs.unwrap_or(0))
        .build()
        .map_err(|e| CoreError::Invalid(format!("cannot start threads: {e}")))?;
    pool.install(|| {
        // Ten bits an entry (about 1% false positives). An index holds about as many entries as the table has
        // rows, and at least a hundred per page. When the filters would not fit the budget, the heap is checked a
        // range of blocks at a time, each pass with filters of only the entries pointing into its range (every
        // index read once per pass): memory stays bounded whatever the table's size.
        let expected: Vec<u64> =
            cfg.indexes.iter().map(|ix| cfg.expected_rows.max(ix.rel.nblocks * 100).max(1000)).collect();
        let wanted: u64 = expected.iter().map(|e| e * 10 / 8).sum();
        let passes = wanted.div_ceil(cfg.bloom_bytes.max(4096)).max(1);
        let nblocks = cfg.heap.nblocks;
        let mut verdicts: Vec<IndexVerdict> =
            cfg.indexes.iter().map(|ix| IndexVerdict { name: ix.rel.name.clone(), ..Default::default() }).collect();
        let mut heap = HeapTally::default();
        for pass in 0..passes {
            let range = (nblocks * pass / passes, nblocks * (pass + 1) / passes);
            let mut blooms = Vec::new();
            for ((ix, &e), v) in cfg.indexes.iter().zip(&expected).zip(verdicts.iter_mut()) {
                let builder = BloomBuilder::new((e * 10 / 8 / passes).max(4096));
                let t = fill_index(cfg, ix, &builder, range)?;
                let bloom = builder.finish();
                v.entries += t.entries;
                if pass == 0 {
                    // every pass reads the whole index: its pages are counted once
                    v.unreadable_entries = t.unreadable_entries;
                    v.unreadable_pages = t.unreadable_pages;
                    v.newer_pages = t.newer_pages;
                }
                v.bloom_bytes = v.bloom_bytes.max(bloom.bytes());
                v.false_positive_rate = v.false_positive_rate.max(bloom.false_positive_rate(t.entries));
                blooms.push(bloom);
            }
            let t = probe_heap(cfg, &blooms, range)?;
            drop(blooms);
            heap.add(t);
        }
        for (x, v) in verdicts.iter_mut().enumerate() {
            v.missing = heap.missing.get(x).copied().unwrap_or(0);
            v.first_missing = heap.first_missing.get(x).cloned().unwrap_or_default();
            v.toasted = heap.toasted.get(x).copied().unwrap_or(0);
            v.short_rows = heap.short_rows.get(x).copied().unwrap_or(0);
        }
        Ok(AllIndexedResult {
            indexes: verdicts,
            heap_pages: heap.pages,
            unreadable_pages: heap.unreadable_pages,
            newer_pages: heap.newer_pages,
            rows: heap.rows,
            unhinted: heap.unhinted,
            orphans: heap.orphans,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Garbage behind sane page headers (line pointers, tuple headers, varlena headers, posting lists all
    /// random): the check reads it without panicking and proves nothing it cannot read.
    #[test]
    fn garbage_pages_never_panic() {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-allindexed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut page = |special: u16| {
            let mut p: Vec<u8> = (0..8192).map(|_| next() as u8).collect();
            let lower = 24 + 4 * (next() % 120) as u16;
            let upper = lower + (next() % u64::from(special - lower)) as u16;
            p[8..10].copy_from_slice(&[0, 0]);
            p[10..12].copy_from_slice(&0u16.to_le_bytes()); // pd_flags
            p[12..14].copy_from_slice(&lower.to_le_bytes());
            p[14..16].copy_from_slice(&upper.to_le_bytes());
            p[16..18].copy_from_slice(&special.to_le_bytes());
            p[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes());
            p[0..8].copy_from_slice(&[0; 8]); // pd_lsn 0: never newer than the redo point
            if special < 8192 {
                p[8192 - 4..8192 - 2].copy_from_slice(&1u16.to_le_bytes()); // btpo_flags: BTP_LEAF
            }
            p
        };
        let heap: Vec<u8> = (0..64).flat_map(|_| page(8192)).collect();
        let index: Vec<u8> = (0..64).flat_map(|_| page(8192 - 16)).collect();
        std::fs::write(dir.join("heap"), &heap).unwrap();
        std::fs::write(dir.join("index"), &index).unwrap();
        let att = |attnum: i16, attlen: i16, attalign: u8| AttrDesc {
            attnum,
            attlen,
            attalign,
            attbyval: attlen > 0 && attlen <= 8,
            attisdropped: false,
            typname: String::new(),
            attstorage: b'x',
        };
        let heap_attrs = vec![att(1, 4, b'i'), att(2, -1, b'i'), att(3, 8, b'd'), att(4, -2, b'c')];
        let files = |name: &str| vec![SegFile { segno: 0, path: dir.join(name) }];
        let cfg = AllIndexedConfig {
            heap: RelFiles { name: "heap".into(), files: files("heap"), nblocks: 64 },
            heap_attrs: heap_attrs.clone(),
            indexes: vec![IndexSpec {
                rel: RelFiles { name: "index".into(), files: files("index"), nblocks: 64 },
                keys: vec![2, 1, 4],
                attrs: vec![heap_attrs[1].clone(), heap_attrs[0].clone(), heap_attrs[3].clone()],
            }],
            expected_rows: 1000,
            bloom_bytes: 4096,
            seed: 9,
            live_redo_lsn: Some(1),
            jobs: Some(2),
            blcksz: 8192,
            relseg_size: 131072,
        };
        let res = all_indexed(&cfg).expect("garbage is data, not an error");
        assert!(!res.proven(0) || res.rows == 0, "{res:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn heap_and_index_tuples_of_one_row_print_alike() {
        // int4 1, NULL, text 'abc' (short header) in a heap tuple; the same values in an index tuple with a
        // null bitmap. Attribute offsets differ (23-byte header and t_hoff 24 against 16), the prints must not.
        let attrs = vec![
            AttrDesc {
                attnum: 1,
                attlen: 4,
                attalign: b'i',
                attbyval: true,
                attisdropped: false,
                typname: String::new(),
                attstorage: b'p',
            },
            AttrDesc {
                attnum: 2,
                attlen: 8,
                attalign: b'd',
                attbyval: true,
                attisdropped: false,
                typname: String::new(),
                attstorage: b'p',
            },
            AttrDesc {
                attnum: 3,
                attlen: -1,
                attalign: b'i',
                attbyval: false,
                attisdropped: false,
                typname: String::new(),
                attstorage: b'x',
            },
        ];
        let mut heap = vec![0u8; 24];
        heap[SIZEOF_HEAP_TUPLE_HEADER] = 0b101; // attributes 1 and 3 not null
        heap.extend_from_slice(&1i32.to_le_bytes());
        heap.extend_from_slice(&[0x09, b'a', b'b', b'c']);
        let mut index = vec![0u8; 16];
        index[INDEX_NULL_BITMAP_AT] = 0b101;
        index.extend_from_slice(&1i32.to_le_bytes());
        // a 4-byte header in the index: the payload is what counts
        index.extend_from_slice(&((7u32) << 2).to_le_bytes());
        index.extend_from_slice(b"abc");
        let (mut hv, mut iv) = (Vec::new(), Vec::new());
        deform(&heap, 24, 3, Some(SIZEOF_HEAP_TUPLE_HEADER), &attrs, &mut hv).unwrap();
        deform(&index, 16, 3, Some(INDEX_NULL_BITMAP_AT), &attrs, &mut iv).unwrap();
        let print = |v: &[Val<'_>], off: u16| match fingerprint(5, 3, off, v, 0..3) {
            Fp::Print(h) => h,
            _ => panic!("no print"),
        };
        assert_eq!(print(&hv, 2), print(&iv, 2));
        assert_ne!(print(&hv, 2), print(&iv, 3), "the TID is part of the print");
        let mut other = index.clone();
        *other.last_mut().unwrap() = b'd';
        deform(&other, 16, 3, Some(INDEX_NULL_BITMAP_AT), &attrs, &mut iv).unwrap();
        assert_ne!(print(&hv, 2), print(&iv, 2), "the values are part of the print");
    }
}
