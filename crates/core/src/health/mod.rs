//! Storage health from the files: what pgstattuple and pgstatindex report of a relation (tuples live and dead,
//! free space, leaf density and fragmentation; pgstathashindex's and pgstatginindex's figures), and what the
//! visibility map claims, counted from the pages as the scan reads them. A damaged page counts for what it still
//! shows; its damage is the scan's to report.
//!
//! The scan keeps one [`HealthAcc`] per chunk of pages and [`relation_health`] sums them per relation.

use serde::Serialize;

use crate::format::page::{Page, PageKind};
use crate::sources::relpath::Fork;
use crate::visibility::service::Visibility;

pub mod gin;
pub mod gist;
pub mod hash;
pub mod heap;
pub mod pages;

pub use gin::GinFigures;
pub use gist::GistFigures;
pub use hash::HashFigures;
pub use heap::HeapUpkeep;
pub use pages::{BtreeFigures, Definitions, TupleFigures};

/// The health figures of one relation's main fork (and its visibility map).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RelationHealth {
    pub tablespace_oid: u32,
    pub database_oid: u32,
    pub relfilenode: u32,
    /// The main fork's page kind ("heap", "btree", …).
    pub kind: String,
    /// Blocks of the main fork.
    pub blocks: u64,
    /// All-zero pages of the main fork.
    pub zero_pages: u64,
    /// For a heap: pgstattuple's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heap: Option<TupleFigures>,
    /// For a heap: what else its pages tell about its upkeep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upkeep: Option<HeapUpkeep>,
    /// For a btree: pgstatindex's figures and pgstattuple's of its tuples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btree: Option<BtreeFigures>,
    /// For a hash index: pgstathashindex's figures and pgstattuple's of its tuples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<HashFigures>,
    /// For a GIN index: pgstatginindex's figures (from its metapage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gin: Option<GinFigures>,
    /// For a GiST index: pgstattuple's figures of its tuples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gist: Option<GistFigures>,
    /// Heap blocks the visibility map marks all-visible, and all-frozen.
    pub vm_all_visible: u64,
    pub vm_all_frozen: u64,
}

/// What one chunk of pages adds to its relation's figures.
#[derive(Debug, Default)]
pub struct HealthAcc {
    heap: Option<TupleFigures>,
    upkeep: HeapUpkeep,
    btree: Option<BtreeFigures>,
    hash: Option<HashFigures>,
    gin: Option<GinFigures>,
    gist: Option<GistFigures>,
    zero_pages: u64,
    vm_all_visible: u64,
    vm_all_frozen: u64,
}

/// How pages are counted: the definitions of the server's version, and the transaction status to judge heap
/// tuples by.
pub struct Counting<'a> {
    pub defs: Definitions,
    pub vis: &'a Visibility,
    /// pg_control's next transaction ID, for the age of the oldest unfrozen tuple.
    pub next_xid: Option<u32>,
}

impl HealthAcc {
    /// One page of `fork`, of kind `kind` (the scan's reading of it), block `block` of its fork.
    pub fn page(&mut self, c: &Counting<'_>, fork: Fork, kind: PageKind, block: u64, page: &Page<'_>) {
        match (fork, kind) {
            (Fork::Main, PageKind::Heap) => {
                let f = heap::heap_page(page, c.vis, c.defs, c.next_xid, &mut self.upkeep);
                self.heap.get_or_insert_with(Default::default).add(&f)
            }
            (Fork::Main, PageKind::Btree | PageKind::BtreeMeta) => {
                pages::btree_page(page, block, c.defs, self.btree.get_or_insert_with(Default::default))
            }
            (Fork::Main, PageKind::Hash) => {
                hash::hash_page(page, block, c.defs, self.hash.get_or_insert_with(Default::default))
            }
            (Fork::Main, PageKind::Gist) => {
                gist::gist_page(page, block, c.defs, self.gist.get_or_insert_with(Default::default))
            }
            (Fork::Main, PageKind::Gin) => {
                if let Some(g) = gin::gin_page(page, block) {
                    self.gin = Some(g);
                }
            }
            (Fork::Vm, PageKind::Map) => self.vm_page(page.bytes()),
            _ => {}
        }
    }

    /// An all-zero or never-initialised page of a relation whose kind the catalog gave: counted as that kind's
    /// pages count it (a btree's as an internal page with all its space free, a heap's as nothing).
    pub fn new_page(&mut self, c: &Counting<'_>, kind: Option<PageKind>, block: u64, page: &Page<'_>) {
        self.zero_pages += u64::from(page.is_all_zero());
        match kind {
            Some(PageKind::Btree) if block > 0 => {
                pages::btree_page(page, block, c.defs, self.btree.get_or_insert_with(Default::default))
            }
            Some(PageKind::Heap) => {
                self.heap.get_or_insert_with(Default::default);
            }
            Some(PageKind::Hash) => {
                hash::new_hash_page(block, page.len() as u64, self.hash.get_or_insert_with(Default::default))
            }
            Some(PageKind::Gist) => {
                gist::new_gist_page(block, page.len() as u64, self.gist.get_or_insert_with(Default::default))
            }
            _ => {}
        }
    }

    /// A visibility map page's bits: two per heap block, all-visible then all-frozen (access/visibilitymapdefs.h).
    fn vm_page(&mut self, bytes: &[u8]) {
        for b in bytes.iter().skip(crate::format::page::SIZE_OF_PAGE_HEADER_DATA) {
            self.vm_all_visible += u64::from((b & 0x55).count_ones());
            self.vm_all_frozen += u64::from((b & 0xAA).count_ones());
        }
    }

    pub fn merge(&mut self, o: HealthAcc) {
        if let Some(h) = o.heap {
            self.heap.get_or_insert_with(Default::default).add(&h);
        }
        self.upkeep.add(&o.upkeep);
        if let Some(b) = o.btree {
            self.btree.get_or_insert_with(Default::default).add(&b);
        }
        if let Some(h) = o.hash {
            self.hash.get_or_insert_with(Default::default).add(&h);
        }
        if let Some(g) = o.gist {
            self.gist.get_or_insert_with(Default::default).add(&g);
        }
        // only the chunk with the metapage has GIN figures
        self.gin = o.gin.or(self.gin);
        self.zero_pages += o.zero_pages;
        self.vm_all_visible += o.vm_all_visible;
        self.vm_all_frozen += o.vm_all_frozen;
    }

    /// The figures of a main fork of `blocks` blocks and kind `kind`.
    pub fn finish(mut self, key: (u32, u32, u32), kind: Option<PageKind>, blocks: u64) -> RelationHealth {
        // an empty relation has no page to start its figures: they are zero
        match kind {
            Some(PageKind::Heap) => _ = self.heap.get_or_insert_with(Default::default),
            Some(PageKind::Btree) => _ = self.btree.get_or_insert_with(Default::default),
            Some(PageKind::Hash) => _ = self.hash.get_or_insert_with(Default::default),
            Some(PageKind::Gist) => _ = self.gist.get_or_insert_with(Default::default),
            // a GIN index's figures are its metapage's: without one there are none
            _ => {}
        }
        if let Some(b) = &mut self.btree {
            b.order_leaves();
        }
        let kind = match kind {
            Some(k) => k.as_str(),
            None if self.heap.is_some() => "heap",
            None if self.btree.is_some() => "btree",
            None if self.hash.is_some() => "hash",
            None if self.gist.is_some() => "gist",
            None if self.gin.is_some() => "gin",
            None => "unknown",
        }
        .to_string();
        RelationHealth {
            tablespace_oid: key.0,
            database_oid: key.1,
            relfilenode: key.2,
            kind,
            blocks,
            zero_pages: self.zero_pages,
            upkeep: self.heap.is_some().then_some(self.upkeep),
            heap: self.heap,
            btree: self.btree,
            hash: self.hash,
            gin: self.gin,
            gist: self.gist,
            vm_all_visible: self.vm_all_visible,
            vm_all_frozen: self.vm_all_frozen,
        }
    }

    /// A visibility map's counts, to be added to its main fork's figures.
    pub fn vm_counts(&self) -> (u64, u64) {
        (self.vm_all_visible, self.vm_all_frozen)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::format::itemid::{ItemIdData, LP_DEAD, LP_NORMAL};
    use crate::format::page::{PageHeaderData, PG_PAGE_LAYOUT_VERSION, SIZE_OF_PAGE_HEADER_DATA};

    /// An 8 kB index page with special space `special` and items of `lens` bytes (those at `dead` LP_DEAD), laid
    /// out as PostgreSQL lays one out: line pointers from the header down, items MAXALIGNed from the special up.
    pub(crate) fn index_page_bytes(special: &[u8], lens: &[u16], dead: &[usize]) -> Vec<u8> {
        let mut p = vec![0u8; 8192];
        let at_special = 8192 - special.len();
        let mut upper = at_special;
        for (i, &len) in lens.iter().enumerate() {
            upper -= usize::from(len).next_multiple_of(8);
            let lp = if dead.contains(&i) { LP_DEAD } else { LP_NORMAL };
            let at = SIZE_OF_PAGE_HEADER_DATA + 4 * i;
            p[at..at + 4].copy_from_slice(&ItemIdData::new(upper as u16, lp, len).0.to_le_bytes());
        }
        PageHeaderData {
            pd_lower: (SIZE_OF_PAGE_HEADER_DATA + 4 * lens.len()) as u16,
            pd_upper: upper as u16,
            pd_special: at_special as u16,
            pd_pagesize_version: 8192 | u16::from(PG_PAGE_LAYOUT_VERSION),
            ..Default::default()
        }
        .write(&mut p);
        p[at_special..].copy_from_slice(special);
        p
    }
}
