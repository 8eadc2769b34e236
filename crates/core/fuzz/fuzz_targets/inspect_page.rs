#![no_main]
//! Any byte string, decoded as any page kind, with and without checksums: no panic allowed.

use libfuzzer_sys::fuzz_target;
use pgsurgeon_core::checks::inspect::inspect_page;
use pgsurgeon_core::format::page::PageKind;

fuzz_target!(|data: &[u8]| {
    for kind in [None, Some(PageKind::Heap), Some(PageKind::Btree), Some(PageKind::BtreeMeta)] {
        if let Some(report) = inspect_page(data, 7, data.first().is_some_and(|b| b & 1 == 1), kind) {
            let _ = serde_json::to_string(&report).expect("serialisable");
        }
    }
});
