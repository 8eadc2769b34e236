//! One block decoded for people: header, line pointers, tuple headers or btree items, checksum,
//! what PostgreSQL would do with it, and the findings. Works on pages the server refuses.

use serde::Serialize;

use crate::checks::page::check_page;
use crate::finding::Finding;
use crate::format::btree::{decode_item, BTMetaPageData, BTPageOpaqueData, BtItem};
use crate::format::checksum::pg_checksum_page;
use crate::format::heap::{HeapTuple, MIN_HEAP_TUPLE_SIZE};
use crate::format::itemid::{LinePointer, LP_DEAD};
use crate::format::page::{format_lsn, Page, PageHeaderData, PageKind, Verification};

#[derive(Debug, Clone, Serialize)]
pub struct HeaderView {
    #[serde(flatten)]
    pub raw: PageHeaderData,
    /// pd_lsn as PostgreSQL prints it.
    pub lsn: String,
    pub page_size: usize,
    pub layout_version: u8,
    pub flags: Vec<String>,
    /// PageGetMaxOffsetNumber.
    pub max_offset: u16,
    pub free_space: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChecksumView {
    pub stored: u16,
    /// None when the page length is not a block size.
    pub computed: Option<u16>,
    pub matches: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ItemView {
    #[serde(flatten)]
    pub lp: LinePointer,
    pub lp_flags_name: &'static str,
    /// Heap tuple header, when the item is a plausible heap tuple inside the page.
    pub heap: Option<HeapTuple>,
    /// Index tuple, on btree pages.
    pub btree: Option<BtItem>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BtreeView {
    pub opaque: BTPageOpaqueData,
    pub flags: Vec<&'static str>,
    pub meta: Option<BTMetaPageData>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PageReport {
    pub block: u64,
    pub length: usize,
    pub kind: PageKind,
    /// Whether `kind` was given by the caller or guessed from the page.
    pub kind_guessed: bool,
    pub all_zero: bool,
    pub header: HeaderView,
    pub checksum: ChecksumView,
    /// What PageIsVerified decides for this page in a cluster with (or without) checksums.
    pub verification: Verification,
    pub items: Vec<ItemView>,
    pub btree: Option<BtreeView>,
    pub findings: Vec<Finding>,
}

/// Decode `bytes` as block `block` of its fork. `checksums`: whether the cluster has data
/// checksums on (decides whether a mismatch is damage). `kind`: the access method's page kind
/// when the caller knows it.
pub fn inspect_page(bytes: &[u8], block: u64, checksums: bool, kind: Option<PageKind>) -> Option<PageReport> {
    let page = Page::new(bytes)?;
    let h = *page.header();
    let guessed = PageKind::guess(&page);
    let kind_guessed = kind.is_none();
    let kind = match (kind, guessed) {
        // A zeroed or uninitialised page stays that, whatever the relation's access method.
        (_, PageKind::Zero | PageKind::Uninitialized) => guessed,
        (Some(k), _) => k,
        (None, g) => g,
    };
    let blk32 = block as u32;
    let computed = pg_checksum_page(bytes, blk32);
    let header = HeaderView {
        raw: h,
        lsn: format_lsn(h.pd_lsn.lsn()),
        page_size: h.page_size(),
        layout_version: h.layout_version(),
        flags: h.flag_names(),
        max_offset: h.max_offset_number(),
        free_space: i64::from(h.pd_upper) - i64::from(h.pd_lower),
    };
    let btree = match kind {
        PageKind::Btree | PageKind::BtreeMeta => BTPageOpaqueData::from_page(&page).map(|o| BtreeView {
            flags: o.flag_names(),
            meta: if o.is_meta() { BTMetaPageData::parse(bytes) } else { None },
            opaque: o,
        }),
        _ => None,
    };
    let mut items = Vec::new();
    let list_items = !matches!(kind, PageKind::Zero | PageKind::Uninitialized | PageKind::BtreeMeta)
        && !btree.as_ref().is_some_and(|b| b.opaque.is_deleted());
    if list_items {
        for (off, id) in page.item_ids() {
            let mut view = ItemView {
                lp: LinePointer::from_item(off, id),
                lp_flags_name: id.flags_name(),
                heap: None,
                btree: None,
            };
            let start = usize::from(id.lp_off());
            let len = usize::from(id.lp_len());
            match (kind, &btree) {
                (PageKind::Btree, Some(b)) if id.has_storage() => {
                    view.btree =
                        page.item_bytes(id).and_then(|t| decode_item(off, t, id.lp_flags() == LP_DEAD, &b.opaque));
                }
                // pageinspect's guard: storage, minimum size, aligned, inside the page.
                (PageKind::Heap, _)
                    if len >= MIN_HEAP_TUPLE_SIZE && start.is_multiple_of(8) && start + len <= bytes.len() =>
                {
                    view.heap = page.item_bytes(id).and_then(HeapTuple::decode);
                }
                _ => {}
            }
            items.push(view);
        }
    }
    let findings = check_page(&page, kind, Some(block), checksums);
    Some(PageReport {
        block,
        length: bytes.len(),
        kind,
        kind_guessed,
        all_zero: page.is_all_zero(),
        checksum: ChecksumView { stored: h.pd_checksum, computed, matches: computed == Some(h.pd_checksum) },
        verification: page.verify(blk32, checksums),
        header,
        items,
        btree,
        findings,
    })
}
