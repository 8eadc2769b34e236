#![no_main]
//! pg_filenode.map images of any length and content: parsed or refused, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(map) = pgsurgeon_core::catalog::relmap::RelMap::parse(data) {
        assert!(map.mappings.len() <= 64);
    }
});
