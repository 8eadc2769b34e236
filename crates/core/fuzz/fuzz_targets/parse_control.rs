#![no_main]
//! Any byte string as pg_control: an error or a value, never a panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pgsurgeon_core::format::control::parse_control(data);
});
