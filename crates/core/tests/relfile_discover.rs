//! Relation-file discovery on synthetic data directories: name grammar, tablespace links, stray
//! files, segment gaps and sizes. Geometry is shrunk (relseg_size = 2 blocks) to keep files tiny.

use std::fs;
use std::path::{Path, PathBuf};

use pgsurgeon_core::sources::relfile::{discover, segment_problems, Relation, SegmentProblemKind};
use pgsurgeon_core::sources::relpath::{
    database_dir, relation_file_name, relation_path, Fork, DEFAULTTABLESPACE_OID, GLOBALTABLESPACE_OID,
};
use pgsurgeon_core::CoreError;

const BLCKSZ: u32 = 8192;
const RELSEG: u32 = 2;
const SEG: u64 = (BLCKSZ * RELSEG) as u64;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-relfile-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn file(root: &Path, rel: &str, size: u64) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(&path).unwrap().set_len(size).unwrap();
}

fn symlink(target: &Path, link: &Path) {
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Builds a PG15-looking cluster in `<scratch>/pgdata` with an external tablespace in
/// `<scratch>/ts1`, and returns the data directory.
fn build_cluster(s: &Scratch) -> PathBuf {
    let pgdata = s.0.join("pgdata");
    let p = pgdata.as_path();
    file(p, "PG_VERSION", 0);
    fs::write(p.join("PG_VERSION"), "15\n").unwrap();

    // global: shared catalogs plus the usual non-relation files.
    file(p, "global/1262", SEG);
    file(p, "global/1262_fsm", SEG);
    file(p, "global/1262_vm", 8192);
    file(p, "global/pg_control", 8192);
    file(p, "global/pg_filenode.map", 512);
    file(p, "global/pg_internal.init", 1000);
    file(p, "global/pg_filenode.map.tmp", 512);
    file(p, "global/t3_99999", 8192); // temp relations never live in global

    // base/1: a mix of healthy, damaged and stray files.
    file(p, "base/1/PG_VERSION", 3);
    file(p, "base/1/pg_filenode.map", 512);
    file(p, "base/1/pg_internal.init", 100);
    file(p, "base/1/1259", 8192);
    file(p, "base/1/1259_fsm", SEG);
    file(p, "base/1/1259_vm", 8192);
    file(p, "base/1/16384", SEG);
    file(p, "base/1/16384.1", 8192); // short, yet .2 holds data
    file(p, "base/1/16384.2", 8192);
    file(p, "base/1/16385", 8192 + 100); // torn trailing page
    file(p, "base/1/16386", SEG);
    file(p, "base/1/16386.2", 8192); // .1 missing
    file(p, "base/1/16387", 0);
    file(p, "base/1/16387_init", 8192);
    file(p, "base/1/16393", 8192); // truncated: inactive empty segments follow
    file(p, "base/1/16393.1", 0);
    file(p, "base/1/16393.2", 0);
    file(p, "base/1/16394", 3 * 8192); // larger than a segment
    file(p, "base/1/t3_16390", SEG);
    file(p, "base/1/t3_16390.1", 8192);
    file(p, "base/1/t3_16390_fsm", 8192);
    file(p, "base/1/t0_16395", 8192);
    for stray in [
        "16388.tmp",
        "16389_main",
        "016389",
        "16389.0",
        "16389.01",
        "16389_fsm_vm",
        "16389_",
        "16389.",
        "abc",
        "t_16389",
        "t03_16389",
        "99999999999",
        "4294967296",
        "0",
        "16389_FSM",
        "16389 ",
    ] {
        file(p, &format!("base/1/{stray}"), 8192);
    }
    fs::create_dir_all(p.join("base/1/16391")).unwrap(); // a directory with a relation's name
    file(&s.0, "outside/blob", 2 * 8192);
    symlink(&s.0.join("outside/blob"), &p.join("base/1/16392")); // followed
    symlink(&s.0.join("outside/nothing"), &p.join("base/1/16396")); // dangling: skipped

    file(p, "base/5/2619", 8192);
    file(p, "base/pgsql_tmp/pgsql_tmp123.0", 8192);
    file(p, "base/notadb/16384", 8192);

    // An external tablespace (symlink), with a leftover directory of an older major.
    let ts = s.0.join("ts1");
    file(&ts, "PG_15_202209061/5/16600", 8192);
    file(&ts, "PG_15_202209061/5/16600_vm", 8192);
    file(&ts, "PG_15_202209061/5/t7_16601", 8192);
    file(&ts, "PG_15_202209061/pgsql_tmp/pgsql_tmp9.1", 8192);
    file(&ts, "PG_14_202107181/5/16602", 8192);
    file(&ts, "PG_15_202209061/5/stray.txt", 1);
    symlink(&ts, &p.join("pg_tblspc/16500"));
    // A dangling tablespace link and an in-place tablespace directory.
    symlink(&s.0.join("gone"), &p.join("pg_tblspc/16501"));
    file(p, "pg_tblspc/16502/PG_15_202209061/1/16700", 8192);
    file(p, "pg_tblspc/README", 1);
    pgdata
}

fn summary(rels: &[Relation]) -> Vec<String> {
    rels.iter()
        .map(|r| {
            let segs: Vec<String> = r.segments.iter().map(|s| format!("{}:{}", s.segno, s.size)).collect();
            format!(
                "{} {}/{}/{}/{}{} [{}]",
                r.path,
                r.tablespace_oid,
                r.database_oid,
                r.relfilenode,
                r.fork,
                r.temp_backend.map(|b| format!(" t{b}")).unwrap_or_default(),
                segs.join(" ")
            )
        })
        .collect()
}

#[test]
fn discovers_exactly_the_relation_files() {
    let s = Scratch::new("discover");
    let pgdata = build_cluster(&s);
    let rels = discover(&pgdata).unwrap();
    // Sorted by tablespace OID first: pg_default (1663) before pg_global (1664).
    let expected = [
        "base/1/1259 1663/1/1259/main [0:8192]",
        "base/1/1259_fsm 1663/1/1259/fsm [0:16384]",
        "base/1/1259_vm 1663/1/1259/vm [0:8192]",
        "base/1/16384 1663/1/16384/main [0:16384 1:8192 2:8192]",
        "base/1/16385 1663/1/16385/main [0:8292]",
        "base/1/16386 1663/1/16386/main [0:16384 2:8192]",
        "base/1/16387 1663/1/16387/main [0:0]",
        "base/1/16387_init 1663/1/16387/init [0:8192]",
        "base/1/16390 1663/1/16390/main t3 [0:16384 1:8192]",
        "base/1/16390_fsm 1663/1/16390/fsm t3 [0:8192]",
        "base/1/16392 1663/1/16392/main [0:16384]",
        "base/1/16393 1663/1/16393/main [0:8192 1:0 2:0]",
        "base/1/16394 1663/1/16394/main [0:24576]",
        "base/1/16395 1663/1/16395/main t0 [0:8192]",
        "base/5/2619 1663/5/2619/main [0:8192]",
        "global/1262 1664/0/1262/main [0:16384]",
        "global/1262_fsm 1664/0/1262/fsm [0:16384]",
        "global/1262_vm 1664/0/1262/vm [0:8192]",
        "pg_tblspc/16500/PG_15_202209061/5/16600 16500/5/16600/main [0:8192]",
        "pg_tblspc/16500/PG_15_202209061/5/16600_vm 16500/5/16600/vm [0:8192]",
        "pg_tblspc/16500/PG_15_202209061/5/16601 16500/5/16601/main t7 [0:8192]",
        "pg_tblspc/16502/PG_15_202209061/1/16700 16502/1/16700/main [0:8192]",
    ];
    // Temp relations keep their t<backend>_ prefix in the path.
    let expected: Vec<String> = expected
        .iter()
        .map(|e| {
            e.replace("base/1/16390", "base/1/t3_16390")
                .replace("base/1/16395", "base/1/t0_16395")
                .replace("5/16601 ", "5/t7_16601 ")
        })
        .collect();
    assert_eq!(summary(&rels), expected);

    // Same input, same output.
    assert_eq!(discover(&pgdata).unwrap(), rels);

    // Every segment path exists and agrees with the relation it is filed under.
    for r in &rels {
        assert!(r.segments.windows(2).all(|w| w[0].segno < w[1].segno));
        for seg in &r.segments {
            assert!(pgdata.join(&seg.path).is_file(), "{}", seg.path);
            assert_eq!(seg.path, r.segment_path(seg.segno));
            assert_eq!(seg.temp, seg.temp_backend.is_some());
            assert_eq!(
                (seg.tablespace_oid, seg.database_oid, seg.relfilenode, seg.fork),
                (r.tablespace_oid, r.database_oid, r.relfilenode, r.fork)
            );
        }
    }
    assert!(rels.iter().any(|r| r.tablespace_oid == GLOBALTABLESPACE_OID && r.database_oid == 0));
    assert!(rels.iter().any(|r| r.tablespace_oid == DEFAULTTABLESPACE_OID));
}

#[test]
fn relation_path_is_the_inverse_of_discovery() {
    let s = Scratch::new("inverse");
    let pgdata = build_cluster(&s);
    for r in discover(&pgdata).unwrap() {
        for seg in &r.segments {
            let built = if seg.temp {
                format!(
                    "{}/{}",
                    database_dir(seg.tablespace_oid, seg.database_oid, 15, 202209061),
                    relation_file_name(seg.relfilenode, seg.fork, seg.segno, seg.temp_backend)
                )
            } else {
                relation_path(seg.tablespace_oid, seg.database_oid, seg.relfilenode, seg.fork, seg.segno, 15, 202209061)
            };
            assert_eq!(built, seg.path);
        }
    }
    assert_eq!(relation_path(1663, 5, 16384, Fork::Fsm, 3, 18, 202506291), "base/5/16384_fsm.3");
    assert_eq!(relation_path(1664, 0, 1262, Fork::Main, 0, 18, 202506291), "global/1262");
    assert_eq!(
        relation_path(16500, 5, 16600, Fork::Vm, 0, 18, 202506291),
        "pg_tblspc/16500/PG_18_202506291/5/16600_vm"
    );
    assert_eq!(relation_file_name(16600, Fork::Init, 0, Some(12)), "t12_16600_init");
}

#[test]
fn segment_problems_found_from_sizes() {
    let s = Scratch::new("problems");
    let pgdata = build_cluster(&s);
    let rels = discover(&pgdata).unwrap();
    let problems = segment_problems(&rels, BLCKSZ, RELSEG);
    let got: Vec<(SegmentProblemKind, &str)> = problems.iter().map(|p| (p.kind, p.path.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (SegmentProblemKind::ShortSegment, "base/1/16384.1"),
            (SegmentProblemKind::PartialPage, "base/1/16385"),
            (SegmentProblemKind::MissingSegment, "base/1/16386.1"),
            (SegmentProblemKind::OversizedSegment, "base/1/16394"),
        ]
    );
    assert!(problems[0].detail.contains("only 1 of 2 blocks"));
    assert!(problems[1].detail.contains("100 trailing bytes"));
    assert!(problems[2].detail.contains("later segments hold data"));

    let json = serde_json::to_value(&problems[2]).unwrap();
    assert_eq!(json["kind"], "missing_segment");
    assert_eq!(json["path"], "base/1/16386.1");

    // Block counts as md.c would see them.
    let nblocks = |path: &str| rels.iter().find(|r| r.path == path).unwrap().md_nblocks(BLCKSZ, RELSEG);
    assert_eq!(nblocks("base/1/16384"), 3);
    assert_eq!(nblocks("base/1/16386"), 2); // stops at the missing segment
    assert_eq!(nblocks("base/1/16393"), 1); // inactive segments add nothing
    assert_eq!(nblocks("base/1/16387"), 0);

    // A missing first segment, with only empty segments after the gap.
    let gap: Vec<Relation> = rels
        .iter()
        .filter(|r| r.path == "base/1/16393")
        .cloned()
        .map(|mut r| {
            r.segments.remove(0);
            r.segments.remove(0);
            r
        })
        .collect();
    let p = segment_problems(&gap, BLCKSZ, RELSEG);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].path, "base/1/16393");
    assert_eq!(p[1].path, "base/1/16393.1");
    assert!(p[0].detail.contains("later segments are all empty"));

    // Zero geometry disables size checks instead of dividing by zero.
    let only_gaps = segment_problems(&rels, 0, 0);
    assert!(only_gaps.iter().all(|p| p.kind == SegmentProblemKind::MissingSegment));
}

#[test]
fn without_pg_version_all_tablespace_version_dirs_are_read() {
    let s = Scratch::new("noversion");
    let pgdata = build_cluster(&s);
    fs::remove_file(pgdata.join("PG_VERSION")).unwrap();
    let rels = discover(&pgdata).unwrap();
    let paths: Vec<&str> = rels.iter().filter(|r| r.tablespace_oid == 16500).map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "pg_tblspc/16500/PG_15_202209061/5/16600",
            "pg_tblspc/16500/PG_15_202209061/5/16600_vm",
            "pg_tblspc/16500/PG_15_202209061/5/t7_16601",
            "pg_tblspc/16500/PG_14_202107181/5/16602",
        ]
    );
}

#[test]
fn same_relfilenode_in_two_version_dirs_stays_apart() {
    let s = Scratch::new("twodirs");
    let p = s.0.as_path();
    file(p, "pg_tblspc/16500/PG_15_202209061/5/16600", 8192);
    file(p, "pg_tblspc/16500/PG_15_202209062/5/16600.1", 8192);
    let rels = discover(p).unwrap();
    assert_eq!(rels.len(), 2);
    assert!(rels.iter().all(|r| r.segments.len() == 1));
}

#[test]
fn empty_or_missing_directories() {
    let s = Scratch::new("empty");
    assert!(discover(&s.0).unwrap().is_empty());
    match discover(&s.0.join("does-not-exist")) {
        Err(CoreError::Io { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn forks_serialize_as_names() {
    let names: Vec<String> = Fork::ALL.iter().map(|f| serde_json::to_string(f).unwrap()).collect();
    assert_eq!(names, ["\"main\"", "\"fsm\"", "\"vm\"", "\"init\""]);
    assert_eq!(Fork::from_name("vm"), Some(Fork::Vm));
    assert_eq!(Fork::from_name("VM"), None);
}
