//! Storage health from the files: what pgstattuple and pgstatindex report of a relation (tuples live and dead,
//! free space, leaf density and fragmentation), and what the visibility map claims, counted from the pages as the
//! scan reads them. A damaged page counts for what it still shows; its damage is the scan's to report.
//!
//! The scan keeps one [`HealthAcc`] per chunk of pages and [`relation_health`] sums them per relation.

use serde::Serialize;

use crate::format::page::{Page, PageKind};
use crate::sources::relpath::Fork;
use crate::visibility::service::Visibility;

pub mod pages;

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
    /// For a btree: pgstatindex's figures and pgstattuple's of its tuples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btree: Option<BtreeFigures>,
    /// Heap blocks the visibility map marks all-visible, and all-frozen.
    pub vm_all_visible: u64,
    pub vm_all_frozen: u64,
}

/// What one chunk of pages adds to its relation's figures.
#[derive(Debug, Default)]
pub struct HealthAcc {
    heap: Option<TupleFigures>,
    btree: Option<BtreeFigures>,
    zero_pages: u64,
    vm_all_visible: u64,
    vm_all_frozen: u64,
}

/// How pages are counted: the definitions of the server's version, and the transaction status to judge heap
/// tuples by.
pub struct Counting<'a> {
    pub defs: Definitions,
    pub vis: &'a Visibility,
}

impl HealthAcc {
    /// One page of `fork`, of kind `kind` (the scan's reading of it), block `block` of its fork.
    pub fn page(&mut self, c: &Counting<'_>, fork: Fork, kind: PageKind, block: u64, page: &Page<'_>) {
        match (fork, kind) {
            (Fork::Main, PageKind::Heap) => {
                self.heap.get_or_insert_with(Default::default).add(&pages::heap_page(page, c.vis, c.defs))
            }
            (Fork::Main, PageKind::Btree | PageKind::BtreeMeta) => {
                pages::btree_page(page, block, c.defs, self.btree.get_or_insert_with(Default::default))
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
        if let Some(b) = o.btree {
            self.btree.get_or_insert_with(Default::default).add(&b);
        }
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
            _ => {}
        }
        if let Some(b) = &mut self.btree {
            b.order_leaves();
        }
        let kind = match (&self.heap, &self.btree, kind) {
            (_, _, Some(k)) => k.as_str().to_string(),
            (Some(_), _, None) => "heap".to_string(),
            (_, Some(_), None) => "btree".to_string(),
            _ => "unknown".to_string(),
        };
        RelationHealth {
            tablespace_oid: key.0,
            database_oid: key.1,
            relfilenode: key.2,
            kind,
            blocks,
            zero_pages: self.zero_pages,
            heap: self.heap,
            btree: self.btree,
            vm_all_visible: self.vm_all_visible,
            vm_all_frozen: self.vm_all_frozen,
        }
    }

    /// A visibility map's counts, to be added to its main fork's figures.
    pub fn vm_counts(&self) -> (u64, u64) {
        (self.vm_all_visible, self.vm_all_frozen)
    }
}
