//! TOAST values found through the TOAST table's btree index on (chunk_id, chunk_seq) and read from the pages of
//! both as the caller gets them (salvage --deleted: through the server's buffers, as it reads the heap, so what is
//! newer than the last checkpoint is there). A value's chunks keep their index entries until VACUUM removes them
//! with the chunks themselves, so the chunks of a deleted row's values are found, which no query through the index
//! returns (they are invisible to every snapshot). Each value costs a descent from the root and the TOAST pages its
//! entries point to; memory holds the pages one call touches, whatever the size of the table.
//!
//! The descent is nbtree's (access/nbtree/nbtsearch.c, `_bt_search` and `_bt_moveright`) without locks: each page
//! is one consistent image, and a page split meanwhile is followed by its right link (Lehman and Yao), at the leaf
//! level at the latest.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use crate::error::Result;
use crate::format::btree::{
    leaf_heap_tids, leaf_key, BTMetaPageData, BTPageOpaqueData, IndexTupleData, BTP_DELETED, BTP_HALF_DEAD,
    BTREE_MAGIC, P_HIKEY, P_NONE,
};
use crate::format::bytes::u32_at;
use crate::format::itemid::{LP_DEAD, LP_NORMAL};
use crate::format::page::Page;

use super::detoast::toast_page_chunks;
use super::engine::PageSource;
use super::find::{max_heap_tuples, Plausibility};

/// Pages visited for one value before giving up: a damaged index can link its pages in a cycle.
const MAX_PAGES_PER_VALUE: usize = 10_000;

/// (valueid, chunk_seq, bytes) of every chunk of `valueids` the index finds; values it does not find are absent.
pub fn toast_by_index(
    valueids: &[u32],
    blcksz: u32,
    index: &dyn PageSource,
    heap: &dyn PageSource,
) -> Result<Vec<(u32, i32, Vec<u8>)>> {
    let mut ix = IndexPages { source: index, blcksz: blcksz as usize, cache: HashMap::new() };
    let Some(root) = ix.root()? else { return Ok(Vec::new()) };
    let wanted: BTreeSet<u32> = valueids.iter().copied().collect();
    let mut blocks = BTreeSet::new();
    for &v in &wanted {
        if let Some(leaf) = ix.descend(root, v)? {
            ix.scan_leaves(leaf, v, &mut blocks)?;
        }
    }
    let p = Plausibility { nblocks: None, horizons: None, max_tuples: max_heap_tuples(blcksz as usize) };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for block in blocks {
        heap.read_into(u64::from(block), 1, &mut buf)?;
        if buf.len() < blcksz as usize {
            continue;
        }
        toast_page_chunks(&buf, u64::from(block), &p, |v, seq, bytes| {
            if wanted.contains(&v) && seen.insert((v, seq)) {
                out.push((v, seq, bytes.to_vec()));
            }
        });
    }
    Ok(out)
}

/// The first key attribute of an index tuple, chunk_id (an oid, compared unsigned as btoidcmp does); `None` for
/// minus infinity (the first item of an internal page keeps no key attribute).
fn chunk_id(tuple: &[u8]) -> Option<u32> {
    let it = IndexTupleData::parse(tuple)?;
    if it.is_pivot() && it.alt_count() == 0 {
        return None;
    }
    u32_at(leaf_key(tuple)?, 0)
}

/// One index page, parsed enough to walk.
struct IndexPage {
    bytes: Vec<u8>,
    opaque: BTPageOpaqueData,
}

impl IndexPage {
    fn page(&self) -> Option<Page<'_>> {
        Page::new(&self.bytes)
    }

    fn gone(&self) -> bool {
        self.opaque.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0
    }

    /// P_FIRSTDATAKEY (nbtree.h): past the high key, which every page but the rightmost of its level has.
    fn first_data(&self) -> u16 {
        if self.opaque.is_rightmost() {
            P_HIKEY
        } else {
            P_HIKEY + 1
        }
    }

    /// The tuple at `off` (LP_NORMAL, or LP_DEAD: entries of dead chunks are what undelete wants).
    fn tuple(&self, off: u16) -> Option<&[u8]> {
        let page = self.page()?;
        let id = page.item_id(off)?;
        if !matches!(id.lp_flags(), LP_NORMAL | LP_DEAD) {
            return None;
        }
        page.item_bytes(id)
    }

    fn max_off(&self) -> u16 {
        self.page().map_or(0, |p| p.header().max_offset_number())
    }

    /// The chunk_id of the high key; `None` on the rightmost page (no high key) or minus infinity.
    fn high_key(&self) -> Option<u32> {
        if self.opaque.is_rightmost() {
            return None;
        }
        chunk_id(self.tuple(P_HIKEY)?)
    }
}

/// The index's pages, each read once per call.
struct IndexPages<'a> {
    source: &'a dyn PageSource,
    blcksz: usize,
    cache: HashMap<u32, Option<Rc<IndexPage>>>,
}

impl IndexPages<'_> {
    /// Block `b` when it is a sane btree page.
    fn get(&mut self, b: u32) -> Result<Option<Rc<IndexPage>>> {
        if let Some(p) = self.cache.get(&b) {
            return Ok(p.clone());
        }
        let mut bytes = Vec::new();
        self.source.read_into(u64::from(b), 1, &mut bytes)?;
        let parsed = (bytes.len() == self.blcksz)
            .then(|| {
                let page = Page::new(&bytes)?;
                let opaque = BTPageOpaqueData::from_page(&page).filter(|_| page.header_is_sane(self.blcksz))?;
                Some(opaque)
            })
            .flatten()
            .map(|opaque| Rc::new(IndexPage { bytes, opaque }));
        self.cache.insert(b, parsed.clone());
        Ok(parsed)
    }

    /// The root the metapage names (the fast root: searches may start there, `_bt_getroot`); `None` when the
    /// index is empty or its metapage is not one.
    fn root(&mut self) -> Result<Option<u32>> {
        let mut meta = Vec::new();
        self.source.read_into(0, 1, &mut meta)?;
        let Some(m) = BTMetaPageData::parse(&meta).filter(|m| m.btm_magic == BTREE_MAGIC) else { return Ok(None) };
        let root = if m.btm_fastroot != P_NONE { m.btm_fastroot } else { m.btm_root };
        Ok((root != P_NONE).then_some(root))
    }

    /// The leftmost leaf that may hold entries of value `v`: at each level the child left of the first pivot
    /// at or above `v`, moving right past a page whose high key is below `v` (a split the parent missed).
    fn descend(&mut self, root: u32, v: u32) -> Result<Option<u32>> {
        let mut b = root;
        for _ in 0..MAX_PAGES_PER_VALUE {
            let Some(pg) = self.get(b)? else { return Ok(None) };
            if pg.gone() || pg.high_key().is_some_and(|hk| hk < v) {
                if pg.opaque.is_rightmost() {
                    return Ok(None);
                }
                b = pg.opaque.btpo_next;
                continue;
            }
            if pg.opaque.is_leaf() {
                return Ok(Some(b));
            }
            let mut child = None;
            for off in pg.first_data()..=pg.max_off() {
                let Some(t) = pg.tuple(off) else { continue };
                if off != pg.first_data() && chunk_id(t).is_some_and(|k| k >= v) {
                    break;
                }
                // BTreeTupleGetDownLink: the block in the pivot's t_tid
                child = IndexTupleData::parse(t).map(|it| it.t_tid.block);
            }
            let Some(c) = child else { return Ok(None) };
            b = c;
        }
        Ok(None)
    }

    /// The TOAST blocks the leaf entries of value `v` point to, from leaf `b` rightwards.
    fn scan_leaves(&mut self, mut b: u32, v: u32, blocks: &mut BTreeSet<u32>) -> Result<()> {
        let mut visited = HashSet::new();
        let mut tids = Vec::new();
        while visited.insert(b) && visited.len() <= MAX_PAGES_PER_VALUE {
            let Some(pg) = self.get(b)? else { return Ok(()) };
            if !pg.gone() {
                if !pg.opaque.is_leaf() {
                    return Ok(());
                }
                for off in pg.first_data()..=pg.max_off() {
                    let Some(t) = pg.tuple(off) else { continue };
                    match chunk_id(t) {
                        Some(k) if k == v && leaf_heap_tids(t, &mut tids) => {
                            blocks.extend(tids.iter().map(|tid| tid.block));
                        }
                        Some(k) if k > v => return Ok(()),
                        _ => {}
                    }
                }
                if pg.high_key().is_some_and(|hk| hk > v) {
                    return Ok(());
                }
            }
            if pg.opaque.is_rightmost() {
                return Ok(());
            }
            b = pg.opaque.btpo_next;
        }
        Ok(())
    }
}
