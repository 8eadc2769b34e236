"""`pgsurgeon scan` false positives around visibility, reproduced on real PostgreSQL 15 and 18 clusters:

* a HOT update that aborted leaves the old tuple marked HEAP_HOT_UPDATED with its t_ctid naming a slot that pruning
  frees and a later insert reuses: that unrelated tuple is not the chain's successor (its xmin is not the old
  tuple's xmax), so no ``line_pointer.hot_chain``;
* ``SELECT … FOR UPDATE`` (plain, and upgraded inside a subtransaction so a MultiXact holds it) writes
  HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK with HEAP_KEYS_UPDATED: legal, so no ``tuple_header.infomask``.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster

HEAP_XMAX_EXCL_LOCK = 0x0040
HEAP_XMAX_LOCK_ONLY = 0x0080
HEAP_XMAX_IS_MULTI = 0x1000
HEAP_KEYS_UPDATED = 0x2000
HEAP_HOT_UPDATED = 0x4000
HEAP_ONLY_TUPLE = 0x8000


def scan(lab: LabCluster) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["scan", str(lab.pgdata), "--format", "json"]) in (0, 2)
    out: dict[str, Any] = json.loads(buf.getvalue())
    return out


def items(lab: LabCluster, table: str) -> list[tuple[Any, ...]]:
    """(lp, xmin, xmax, t_infomask, t_infomask2, t_ctid) of block 0, by pageinspect."""
    return exec_sql(
        lab,
        "SELECT lp, t_xmin::text::bigint, t_xmax::text::bigint, t_infomask, t_infomask2, t_ctid::text "
        f"FROM heap_page_items(get_raw_page('{table}', 0)) WHERE lp_flags = 1 ORDER BY lp",
    )


def test_no_false_positives_on_aborted_hot_update_and_for_update(pg: LabCluster, make_lab: MakeLab) -> None:
    lab = make_lab(pg.version)
    exec_sql(
        lab,
        "CREATE EXTENSION IF NOT EXISTS pageinspect;"
        "CREATE TABLE hot (id int PRIMARY KEY, v text);"
        "INSERT INTO hot SELECT g, 'v' || g FROM generate_series(1, 20) g;"
        "CREATE TABLE locked (id int PRIMARY KEY, v text);"
        "INSERT INTO locked SELECT g, 'v' || g FROM generate_series(1, 5) g;",
    )
    # an aborted HOT update; VACUUM frees the aborted heap-only tuple's slot; a new row takes it
    exec_sql(lab, "BEGIN; UPDATE hot SET v = 'aborted' WHERE id = 3; ROLLBACK")
    exec_sql(lab, "VACUUM hot")
    exec_sql(lab, "INSERT INTO hot VALUES (100, 'reuses the slot')")
    rows = {r[0]: r for r in items(lab, "hot")}
    root = rows[3]
    assert root[4] & HEAP_HOT_UPDATED, "the aborted update left HEAP_HOT_UPDATED"
    succ_lp = int(str(root[5]).strip("()").split(",")[1])
    succ = rows[succ_lp]
    assert succ[1] != root[2] and not succ[4] & HEAP_ONLY_TUPLE, "the slot holds an unrelated, new row"

    # SELECT … FOR UPDATE, committed; and a FOR UPDATE taken in a subtransaction over a KEY SHARE (a MultiXact)
    exec_sql(lab, "BEGIN; SELECT FROM locked WHERE id = 1 FOR UPDATE; COMMIT")
    exec_sql(
        lab,
        "BEGIN; SELECT FROM locked WHERE id = 2 FOR KEY SHARE;"
        " SAVEPOINT s; SELECT FROM locked WHERE id = 2 FOR UPDATE; RELEASE s; COMMIT",
    )
    rows = {r[0]: r for r in items(lab, "locked")}
    for lp, multi in ((1, False), (2, True)):
        im, im2 = rows[lp][3], rows[lp][4]
        assert im & (HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK) == HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK
        assert im2 & HEAP_KEYS_UPDATED
        assert bool(im & HEAP_XMAX_IS_MULTI) == multi

    exec_sql(lab, "CHECKPOINT")
    lab.stop()
    report = scan(lab)
    findings = [
        (f["code"], f.get("relfilenode"), f.get("block"), f.get("item"), f.get("message")) for f in report["findings"]
    ]
    assert findings == []


@pytest.mark.pg("18")
def test_catalogs_of_a_busy_cluster_have_no_hot_chain_findings(make_lab: MakeLab) -> None:
    """Catalog churn with aborted DDL (aborted HOT updates of pg_class / pg_attribute rows), then a scan."""
    lab = make_lab("18")
    for i in range(30):
        exec_sql(lab, f"CREATE TABLE c{i} (a int, b text)")
        with contextlib.suppress(Exception):
            exec_sql(lab, f"BEGIN; ALTER TABLE c{i} ADD COLUMN x int; ALTER TABLE c{i} RENAME TO r{i}; ROLLBACK")
        exec_sql(lab, f"ALTER TABLE c{i} ADD COLUMN y int")
        exec_sql(lab, "VACUUM pg_class")
        exec_sql(lab, "VACUUM pg_attribute")
    lab.stop()
    report = scan(lab)
    assert [f for f in report["findings"] if f["code"] in ("line_pointer.hot_chain", "tuple_header.infomask")] == []
