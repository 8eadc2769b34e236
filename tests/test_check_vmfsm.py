"""The visibility map and the free space map against the heap they describe, on real 15 and 18 servers.

A VM bit set on a page holding an aborted insert: found by ``scan`` (offline) and ``diagnose`` (online), where
pg_visibility's ``pg_check_visible`` agrees; an index-only scan returns the aborted row until ``repair`` clears
the bit. The free space map: a slot past the table's end and an upper node made wrong are found, and repair
removes the fork for VACUUM to rebuild. A healthy table after updates and VACUUM gives no finding at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import aborted_insert, cli, sql
from pgsurgeon.lab import LabCluster

TABLE = "vm_t"
ABORTED_ID = 1_000_000
# the aborted row, reached by an index-only scan: the heap is not visited where the map says all-visible
IOS = [
    "SET enable_seqscan = off",
    "SET enable_bitmapscan = off",
    f"SELECT count(*) FROM {TABLE} WHERE id = {ABORTED_ID}",
]


@pytest.fixture(params=["15", "18"])
def lab(request: pytest.FixtureRequest, make_lab: Any) -> LabCluster:
    lab: LabCluster = make_lab(request.param)
    return lab


def build(lab: LabCluster) -> int:
    """The table, frozen and all-visible, then one aborted insert on its last page: that page's block."""
    sql(
        lab,
        f"CREATE TABLE {TABLE} (id int PRIMARY KEY, pad text)",
        f"INSERT INTO {TABLE} SELECT g, repeat('x', 40) FROM generate_series(1, 3000) g",
        f"UPDATE {TABLE} SET pad = 'y' WHERE id % 10 = 0",
        f"VACUUM (FREEZE) {TABLE}",
    )
    block = aborted_insert(lab, TABLE, ABORTED_ID)
    sql(lab, "CHECKPOINT")
    return block


def ios_count(lab: LabCluster) -> int:
    return int(sql(lab, "; ".join(IOS))[0][0])


def scan(lab: LabCluster) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = cli("scan", "-D", str(lab.pgdata), "--format", "json")
    assert code in (0, 2), err
    return code, json.loads(out)["findings"]


def corrupt(lab: LabCluster, *args: str, manifest: Path) -> None:
    code, out, err = cli("corrupt", *args, "--dsn", lab.dsn(), "--table", TABLE, "--manifest", str(manifest))
    assert code == 0, err + out


def test_a_vm_bit_over_an_aborted_insert(lab: LabCluster, tmp_path: Path) -> None:
    block = build(lab)
    (vm_file,) = sql(lab, f"SELECT pg_relation_filepath('{TABLE}') || '_vm'")[0]
    before = (lab.pgdata / vm_file).read_bytes()
    # (no index scan before the damage: one meeting the dead row would mark its index entry dead, kill_prior_tuple)
    corrupt(lab, "vm", "--field", "all-frozen", "--block", str(block), manifest=tmp_path / "m.json")
    # the server now trusts the map: the index-only scan returns the aborted row without visiting the heap
    assert ios_count(lab) == 1
    lab.stop()
    code, findings = scan(lab)
    assert code == 2
    vm = [f for f in findings if f["code"].startswith("vm.")]
    assert {(f["code"], f["block"]) for f in vm} == {
        ("vm.all_visible_wrong", block),
        ("vm.all_frozen_wrong", block),
    }, vm
    visible = next(f for f in vm if f["code"] == "vm.all_visible_wrong")
    assert "1 of its tuples" in visible["message"] and "aborted" in visible["message"], visible
    # undone byte for byte, done again with the same seed
    code, _, err = cli("undo", str(tmp_path / "m.json"))
    assert code == 0, err
    assert (lab.pgdata / vm_file).read_bytes() == before
    lab.start()
    corrupt(lab, "vm", "--field", "all-frozen", "--block", str(block), manifest=tmp_path / "m2.json")
    # VACUUM meets the page (the last one is always scanned), warns, and clears the bit; explain names the table
    lab.start()
    notices: list[str] = []
    with psycopg.connect(lab.dsn(), autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(f"{d.severity}:  {d.message_primary}"))
        conn.execute(f"VACUUM {TABLE}")
    warning = (
        f'WARNING:  page is not marked all-visible but visibility map bit is set in relation "{TABLE}" page {block}'
    )
    assert warning in notices, notices
    code, out, err = cli("explain", warning)
    assert code == 0, err
    assert "visibility map" in out and TABLE in out and "pg_check_visible" in out, out
    assert ios_count(lab) == 0


def diagnose(lab: LabCluster) -> dict[str, Any]:
    code, out, err = cli("diagnose", "--dsn", lab.dsn(), "--pgdata", str(lab.pgdata), "--format", "json")
    assert code in (0, 2), err
    doc: dict[str, Any] = json.loads(out)
    return doc


def check_visible(lab: LabCluster) -> set[tuple[str, str]]:
    rows = sql(
        lab,
        f"SELECT 'visible', t_ctid::text FROM pg_check_visible('{TABLE}') "
        f"UNION ALL SELECT 'frozen', t_ctid::text FROM pg_check_frozen('{TABLE}')",
    )
    return {(str(a), str(b)) for a, b in rows}


@pytest.mark.parametrize("method", ["file", "sql"])
def test_the_aborted_row_online_and_repaired(lab: LabCluster, tmp_path: Path, method: str) -> None:
    block = build(lab)
    sql(lab, *(f"CREATE EXTENSION {e}" for e in ("pg_visibility", "amcheck", "pageinspect", "pg_surgery")))
    corrupt(lab, "vm", "--field", "all-frozen", "--block", str(block), manifest=tmp_path / "m.json")
    # pg_visibility names the aborted tuple (and, for all-frozen, every tuple of the page: none is frozen)
    theirs = check_visible(lab)
    assert {c for k, c in theirs if k == "visible"} == {f"({block},{n})" for n in _aborted_lp(lab, block)}
    doc = diagnose(lab)
    vm = [f for f in doc["findings"] if str(f["code"]).startswith("vm.")]
    assert {(f["code"], f["block"], f["relation"]) for f in vm} == {
        ("vm.all_visible_wrong", block, TABLE),
        ("vm.all_frozen_wrong", block, TABLE),
    }, vm
    assert all(f["source"] == "scan" for f in vm), vm  # found in the files, not added from pg_visibility
    # every table of the database: pg_check_visible and pg_check_frozen name what the files name, nothing else
    note = doc["summary"]["visibility"]
    assert note.startswith("pg_visibility: pg_check_visible and pg_check_frozen agree") and ";" not in note, note
    assert ios_count(lab) == 1
    # repair: planned (dry run), then executed
    args = ["repair", "--dsn", lab.dsn(), "--table", TABLE, "--skip-salvage", "--method", method, "--format", "json"]
    code, out, err = cli(*args)
    assert code == 0, err
    kinds = [s["kind"] for s in json.loads(out)["steps"]]
    assert ("write-maps" in kinds) == (method == "file") and "vacuum" in kinds, kinds
    code, out, err = cli(*args, "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err + out
    assert ios_count(lab) == 0
    assert check_visible(lab) == set()
    lab.stop()
    code, findings = scan(lab)
    assert code == 0 and not [f for f in findings if f["severity"] == "error"], findings


def _aborted_lp(lab: LabCluster, block: int) -> set[int]:
    """The line pointers of ``block`` holding the aborted row (pageinspect: its xmin's status)."""
    sql(lab, "CREATE EXTENSION IF NOT EXISTS pageinspect")
    rows = sql(
        lab,
        f"SELECT lp FROM heap_page_items(get_raw_page('{TABLE}', {block})) "
        "WHERE t_xmin IS NOT NULL AND pg_xact_status(t_xmin::text::xid8) = 'aborted'",
    )
    return {int(r[0]) for r in rows}


def test_fsm_damage_found_and_the_fork_rebuilt(lab: LabCluster, tmp_path: Path) -> None:
    build(lab)
    sql(lab, *(f"CREATE EXTENSION {e}" for e in ("amcheck", "pageinspect")))
    (nblocks,) = sql(lab, f"SELECT pg_relation_size('{TABLE}') / 8192")[0]
    corrupt(lab, "fsm", "--field", "beyond-end", manifest=tmp_path / "a.json")
    corrupt(lab, "fsm", "--field", "upper-node", "--seed", "3", manifest=tmp_path / "b.json")
    lab.stop()
    code, findings = scan(lab)
    fsm = {(f["code"], f["fork"], f["block"]) for f in findings if "fsm" in f["code"]}
    # the slot past the end is reported on the table (its first block past the end), the node on FSM leaf block 2
    assert fsm == {("file.fsm_beyond_end", "main", nblocks), ("fsm.tree_inconsistent", "fsm", 2)}, findings
    # warnings, not damage: the map is a hint the server corrects as it meets it (fsm_search, fsm_rebuild_page)
    assert {f["severity"] for f in findings} == {"warning"} and code == 0
    lab.start()
    # online the map on disk lags the server's: the tree is judged (read twice alike), the slot past the end not
    doc = diagnose(lab)
    assert [(f["code"], f["block"]) for f in doc["findings"] if "fsm" in f["code"]] == [("fsm.tree_inconsistent", 2)]
    args = ["repair", "--dsn", lab.dsn(), "--table", TABLE, "--skip-salvage", "--format", "json"]
    code, out, err = cli(*args)
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert [s["kind"] for s in steps][:2] == ["write-maps", "vacuum"], steps
    assert "free space map removed" in steps[0]["title"]
    code, out, err = cli(*args, "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err + out
    # VACUUM built a new map, with the table's real free space
    assert sql(lab, f"SELECT pg_relation_size('{TABLE}', 'fsm') > 0")[0][0]
    lab.stop()
    code, findings = scan(lab)
    assert code == 0, findings
    # the old map comes back with undo, byte for byte; VACUUM made a new one since, so only when forced
    manifest = tmp_path / "run" / "undo-manifest.json"
    code, out, err = cli("undo", str(manifest))
    assert code == 1 and "_fsm (was removed) is no longer what" in err, err
    code, out, err = cli("undo", "--force", str(manifest))
    assert code == 0, err
    code, findings = scan(lab)
    assert {f["code"] for f in findings if "fsm" in f["code"]} == {"file.fsm_beyond_end", "fsm.tree_inconsistent"}


def test_a_healthy_table_after_updates_and_vacuum_has_no_finding(lab: LabCluster) -> None:
    sql(
        lab,
        "CREATE TABLE h (id int PRIMARY KEY, n int, pad text)",
        "INSERT INTO h SELECT g, 0, repeat('p', 60) FROM generate_series(1, 20000) g",
        "VACUUM (FREEZE) h",
        "UPDATE h SET n = n + 1 WHERE id % 3 = 0",
        "DELETE FROM h WHERE id % 11 = 0",
        "VACUUM h",
        "UPDATE h SET n = n + 1 WHERE id % 7 = 0",
        "VACUUM h",
        "CHECKPOINT",
    )
    lab.stop()
    code, findings = scan(lab)
    assert code == 0 and findings == [], findings
    code, out, err = cli("scan", "-D", str(lab.pgdata), "--format", "json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    # information only: a hint the server keeps correcting, never a finding
    assert "fsm_stale_leaves" in summary and "fsm_stale_upper" in summary


def test_pgbench_and_the_regression_files_have_no_map_finding(lab: LabCluster) -> None:
    """pgbench's tables after rounds of updates and a VACUUM, and the regression files of tests/data/regress
    loaded: no visibility map or free space map finding, offline and online (diagnose, where pg_visibility agrees)."""
    from fix_schema import regress_load

    lab.run_tool("pgbench", "-i", "-s", "2", "postgres", timeout=120)
    lab.run_tool("pgbench", "-c", "2", "-t", "300", "postgres", timeout=120)
    sql(lab, "VACUUM", "CREATE EXTENSION pg_visibility", "CREATE EXTENSION amcheck", "CREATE EXTENSION pageinspect")
    lab.run_tool("pgbench", "-c", "2", "-t", "100", "postgres", timeout=120)
    for name in ("indexing", "matview", "foreign_key"):
        regress_load(lab, f"regress_{name}", name)
        sql_in(lab, f"regress_{name}", "VACUUM")
    sql(lab, "VACUUM", "CHECKPOINT")
    doc = diagnose(lab)
    assert [f for f in doc["findings"] if str(f["code"]).startswith(("vm.", "fsm."))] == []
    assert ";" not in doc["summary"]["visibility"], doc["summary"]["visibility"]
    lab.stop()
    code, findings = scan(lab)
    assert not [f for f in findings if str(f["code"]).startswith(("vm.", "fsm.", "file.fsm"))], findings
    assert code == 0 and not [f for f in findings if f["severity"] == "error"], findings


def sql_in(lab: LabCluster, dbname: str, statement: str) -> None:
    with psycopg.connect(lab.dsn(dbname), autocommit=True) as conn:
        conn.execute(statement)


def test_pg_visibility_is_not_asked_about_a_table_with_damaged_pages(lab: LabCluster, tmp_path: Path) -> None:
    """pg_check_visible reads every tuple through its line pointer and sets hint bits: over a garbled item-ID array
    that writes into another row's data in the server's buffer (the lab's item-ids scenario lost a row's value that
    way) or crashes the backend. diagnose leaves such a table to the files' verdict and says so."""
    build(lab)
    for ext in ("amcheck", "pg_visibility", "pageinspect"):
        sql(lab, f"CREATE EXTENSION IF NOT EXISTS {ext}")
    # the checksum kept valid: the server reads the page (and pg_visibility would read its garbled pointers)
    corrupt(lab, "item-ids", "--block", "1", "--seed", "7", "--keep-checksum-valid", manifest=tmp_path / "m.json")
    page = "SELECT encode(get_raw_page('" + TABLE + "', 1), 'hex')"
    before = sql(lab, page)[0][0]
    doc = diagnose(lab)
    assert f"{TABLE}: not asked of pg_visibility, its pages are damaged" in doc["summary"]["visibility"]
    assert any(f["relation"] == TABLE and f["block"] == 1 and f["severity"] == "error" for f in doc["findings"])
    assert sql(lab, page)[0][0] == before
