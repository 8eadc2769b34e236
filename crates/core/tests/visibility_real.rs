//! Visibility decided from the files alone, on real PostgreSQL 15 and 18 clusters.
//!
//! Fixture (`tests/data/vis/pg{15,18}/`, made by `tests/test_visibility.py::test_regenerate_offline_fixture`): the
//! heap file of table `vis` after rows were locked in every mode by committed and aborted transactions and by
//! MultiXacts (lockers only, with a committed, an aborted and a running updater), aborted inserts, rolled-back and
//! committed subtransactions, HOT and non-HOT updates, deletes, a prepared transaction and transactions still running
//! when the cluster was shut down cleanly; copied with pg_xact, pg_subtrans, pg_multixact and pg_control before
//! anything read the table (the newest tuples carry no hint bits). `expected.json` holds the TIDs `SELECT` returned
//! after a restart and `pg_get_multixact_members()` of every MultiXact.

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::path::PathBuf;

use pgsurgeon_core::format::heap::{HeapTupleHeaderData, HEAP_XMAX_IS_MULTI, HEAP_XMIN_FROZEN};
use pgsurgeon_core::format::itemid::LP_NORMAL;
use pgsurgeon_core::format::page::Page;
use pgsurgeon_core::visibility::xact::{judge, xmax_locked_only, Clog, StatusSources, Verdict};

fn dir(version: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vis/")).join(format!("pg{version}"))
}

fn check(version: &str) {
    let d = dir(version);
    let expected: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("expected.json")).unwrap()).unwrap();
    let want: BTreeSet<(u32, u16)> = expected["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_u64().unwrap() as u32, t[1].as_u64().unwrap() as u16))
        .collect();
    let clog = Clog::open(&d, 8192);
    assert!(clog.in_progress_final(), "the fixture cluster was shut down cleanly");
    let mx = clog.multixact().expect("pg_multixact is in the fixture");

    // every MultiXact decodes from the files exactly as pg_get_multixact_members() lists it
    for (m, members) in expected["multis"].as_object().unwrap() {
        let got = mx.members(m.parse().unwrap()).unwrap_or_else(|e| panic!("pg{version} multi {m}: {e}"));
        let got: Vec<(u64, &str)> = got.iter().map(|x| (u64::from(x.xid), x.status.name())).collect();
        let want: Vec<(u64, &str)> =
            members.as_array().unwrap().iter().map(|x| (x[0].as_u64().unwrap(), x[1].as_str().unwrap())).collect();
        assert_eq!(got, want, "pg{version} multi {m}");
    }

    let server = HashMap::new();
    let multis = HashMap::new();
    let src = StatusSources { clog: &clog, server: &server, can_ask: false, multis: &multis, horizons: None };
    let heap = std::fs::read(d.join("heap")).unwrap();
    let mut live = BTreeSet::new();
    let mut multi_updaters = 0;
    let mut unhinted = 0;
    for (blk, page) in heap.chunks(8192).enumerate() {
        let p = Page::new(page).unwrap();
        for (lp, id) in p.item_ids() {
            if id.lp_flags() != LP_NORMAL {
                continue;
            }
            let h = HeapTupleHeaderData::parse(p.item_bytes(id).unwrap()).unwrap();
            if h.t_infomask & HEAP_XMAX_IS_MULTI != 0 && !xmax_locked_only(h.t_infomask) {
                multi_updaters += 1;
            }
            if h.t_infomask & HEAP_XMIN_FROZEN == 0 {
                unhinted += 1;
            }
            let j = judge(&h, &src);
            assert!(j.need_xids.is_empty() && j.need_multis.is_empty(), "({blk},{lp}) asks: {j:?}");
            match j.verdict {
                Verdict::Live => {
                    live.insert((blk as u32, lp));
                }
                Verdict::Invisible => {}
                Verdict::Uncertain => {
                    panic!("pg{version} ({blk},{lp}) xmin {} xmax {}: {}", h.t_xmin, h.t_xmax, j.reason)
                }
            }
        }
    }
    assert!(multi_updaters >= 3, "the fixture has MultiXacts with updaters ({multi_updaters})");
    assert!(unhinted > 10, "the fixture has tuples without xmin hint bits ({unhinted})");
    let resurrected: Vec<_> = live.difference(&want).collect();
    let dropped: Vec<_> = want.difference(&live).collect();
    assert!(
        resurrected.is_empty() && dropped.is_empty(),
        "pg{version}: resurrected {resurrected:?}, dropped {dropped:?}"
    );
}

#[test]
fn pg15_files_alone_decide_like_select() {
    check("15");
}

#[test]
fn pg18_files_alone_decide_like_select() {
    check("18");
}
