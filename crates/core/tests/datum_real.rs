//! `format_value` on real attribute bytes from PostgreSQL 15 and 18, and on damaged copies of them.
//!
//! Fixtures (`tests/data/datum/pg{15,18}_values.json`, written by
//! `PGSURGEON_DATUM_FIXTURES=crates/core/tests/data/datum pytest tests/test_types.py`): the table that test builds
//! (a column and an array column for every pg_catalog type a table can hold, an enum, domains, ranges over text,
//! nested composites), read with pageinspect: for every inline value its TypeDesc (from `salvage/catalog.py`, reg*
//! name maps cut down to the OIDs the value holds), its bytes as `tuple_data_split` returns them (varlena header
//! included; inline-compressed values too, TOAST pointers left out) and the output function's text for it
//! (`format('%s', col)` with the salvage session's settings).

use pgsurgeon_core::datum::{format_value, OutputOptions, TypeDesc};
use pgsurgeon_core::format::compress::decompress;
use pgsurgeon_core::inject::Rng;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/datum/");

struct Case {
    column: String,
    ty: TypeDesc,
    payload: Vec<u8>,
    text: String,
}

/// The payload `format_value` takes: fixed-length bytes, or a varlena's data without its header (decompressed).
fn payload(raw: &[u8], attlen: i64) -> Vec<u8> {
    match attlen {
        -1 if raw[0] & 0x01 == 0x01 => raw[1..usize::from(raw[0] >> 1)].to_vec(),
        -1 if raw[0] & 0x03 == 0x02 => {
            let tcinfo = u32::from_le_bytes(raw[4..8].try_into().unwrap());
            decompress((tcinfo >> 30) as u8, &raw[8..], (tcinfo & 0x3FFF_FFFF) as usize).unwrap()
        }
        -1 => raw[4..].to_vec(),
        -2 => raw[..raw.len() - 1].to_vec(),
        _ => raw.to_vec(),
    }
}

fn load(version: &str) -> (OutputOptions, Vec<Case>) {
    let data: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{DIR}pg{version}_values.json")).unwrap()).unwrap();
    let opts = OutputOptions { server_version_num: data["server_version_num"].as_u64().unwrap() as u32 };
    let cases = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let raw: Vec<u8> = (0..c["raw"].as_str().unwrap().len() / 2)
                .map(|i| u8::from_str_radix(&c["raw"].as_str().unwrap()[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            Case {
                column: c["column"].as_str().unwrap().to_string(),
                ty: serde_json::from_value(c["type"].clone()).unwrap(),
                payload: payload(&raw, c["attlen"].as_i64().unwrap()),
                text: c["text"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    (opts, cases)
}

fn check_version(version: &str) {
    let (opts, cases) = load(version);
    assert!(cases.len() > 250, "{} cases", cases.len());
    let mut wrong = Vec::new();
    for c in &cases {
        assert!(c.ty.supported(), "{}: {} not supported", c.column, c.ty.name);
        let mut out = Vec::new();
        match format_value(&c.payload, &c.ty, &opts, &mut out) {
            Ok(()) if out == c.text.as_bytes() => {}
            Ok(()) => wrong.push(format!("{}: got {:?}, server {:?}", c.column, String::from_utf8_lossy(&out), c.text)),
            Err(e) => wrong.push(format!("{}: error {e}, server {:?}", c.column, c.text)),
        }
    }
    assert!(wrong.is_empty(), "PostgreSQL {version}:\n{}", wrong.join("\n"));
}

#[test]
fn values_print_like_postgres_15() {
    check_version("15");
}

#[test]
fn values_print_like_postgres_18() {
    check_version("18");
}

/// Damaged values (bytes flipped, cut short, grown, or replaced by noise) give text or an error, never a panic.
#[test]
fn damaged_values_never_panic() {
    for version in ["15", "18"] {
        let (opts, cases) = load(version);
        let mut rng = Rng::new(0x7e57_da7a, version.parse().unwrap());
        let mut out = Vec::new();
        for c in &cases {
            for round in 0..1000 {
                let mut v = c.payload.clone();
                match round % 4 {
                    0 => {
                        for _ in 0..=rng.below(4) {
                            if !v.is_empty() {
                                let i = rng.below(v.len() as u64) as usize;
                                v[i] = rng.next_u64() as u8;
                            }
                        }
                    }
                    1 => v.truncate(rng.below(v.len() as u64 + 1) as usize),
                    2 => {
                        let mut extra = vec![0u8; rng.below(32) as usize];
                        rng.fill(&mut extra);
                        v.extend_from_slice(&extra);
                    }
                    _ => {
                        v = vec![0u8; rng.below(96) as usize];
                        rng.fill(&mut v);
                    }
                }
                out.clear();
                let _ = format_value(&v, &c.ty, &opts, &mut out);
            }
        }
    }
}
