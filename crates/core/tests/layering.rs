//! The core's modules are layers (see lib.rs): a module may use the layers listed before it, never one listed
//! after it, so that the formats can be read without the machinery built on them and no import goes in a circle.
//! This reads the sources and fails on an upward `crate::` path in non-test code.

use std::path::{Path, PathBuf};

/// lib.rs's order: each layer may use those before it.
const LAYERS: &[&str] = &[
    "error",
    "profile",
    "finding",
    "format",
    "sources",
    "visibility",
    "health",
    "checks",
    "datum",
    "rows",
    "catalog",
    "inject",
];

/// Uses forbidden inside a layer, where one file sits below another: (file or directory under src/, path it must
/// not use).
const WITHIN: &[(&str, &str)] = &[
    // The page is below the btree: nbtree's page identification lives with the other AMs' in page.rs.
    ("format/page.rs", "crate::format::btree"),
    // Attribute walking is below TOAST: decompression lives in compress.rs, which both use.
    ("format/tuple/", "crate::format::toast"),
    ("format/compress.rs", "crate::format::toast"),
    ("format/compress.rs", "crate::format::tuple"),
    // Backups are below relation files: relation file names live in relpath.rs, which both use.
    ("sources/backup", "crate::sources::relfile"),
    ("sources/relpath.rs", "crate::sources::"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file up to its test module, without comment lines (doc links name modules without using them).
/// A `tests.rs` is a test module in a file of its own (`#[cfg(test)] mod tests;`): it may use any layer.
fn code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end].lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rank = |name: &str| LAYERS.iter().position(|l| *l == name);
    let mut bad = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let first = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(own) = rank(first) else { continue }; // lib.rs
        let code = code(path);
        for (at, _) in code.match_indices("crate::") {
            let used: String = code[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if rank(&used).is_some_and(|r| r > own) {
                bad.push(format!("{rel} uses crate::{used}"));
            }
        }
        for (place, forbidden) in WITHIN {
            if rel.starts_with(place) && code.contains(forbidden) {
                bad.push(format!("{rel} uses {forbidden}"));
            }
        }
    }
    assert!(files.len() > 40, "found only {} source files under {}", files.len(), src.display());
    // a rule about a file that moved would pass forever: every place must still name some file
    for (place, _) in WITHIN {
        let named =
            files.iter().any(|p| p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/").starts_with(place));
        assert!(named, "layering rule for {place}: no such file or directory under src/ (moved? update WITHIN)");
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "upward imports:\n{}", bad.join("\n"));
}
