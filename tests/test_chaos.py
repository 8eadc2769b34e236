"""Mixed damage: several kinds at once, on real PostgreSQL 15 (no checksums) and 18 (checksums), repaired with
``--execute --reinsert`` and checked against the ground truth recorded before the damage.

``test_chaos_seed``: the property test (bench/chaos.py runs it for 50 seeds at a million rows): for a seed, three
tables (indexes, TOAST, HOT chains, deletes) get three to six damages each; after the repair every row of the ground
truth is in its table with its values, kept apart or lost by ctid (saved + kept apart + lost = ground truth), no key
is there twice or new, the tables hold what the ledger planned, and ``pg_amcheck --heapallindexed`` and ``pg_dump``
succeed.

``test_issue_case``: issue 13's four damages on one 5,000-row table (page header, item-ID array, tuple headers with
a MultiXact xmax, a TOAST chunk): no row salvage saved is lost, the MultiXact row is frozen in place, and any row
lost is listed by the dry run. ``test_ledger_mismatch_fails``: a row that appears between plan and execution makes
the repair fail with exit status 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import CorruptLabs, cli, sql
from pgsurgeon import simulate
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster
from pgsurgeon.labrun.chaos import run_seed
from pgsurgeon.labrun.runner import TEMPLATE_SQL
from pgsurgeon.repair import RepairRequest, build_plan, execute
from pgsurgeon.repair.ledger import LedgerMismatch
from pgsurgeon.simulate import SimulateRequest

EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery")
ROWS = 12000
SEEDS = [("15", 3), ("15", 8), ("18", 3), ("18", 5)]


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "chaos")
    try:
        yield labs
    finally:
        labs.close()


def get_lab(labs: CorruptLabs, version: str) -> LabCluster:
    lab = labs.get(version)
    sql(lab, *(f"CREATE EXTENSION IF NOT EXISTS {e}" for e in EXTENSIONS))
    return lab


@pytest.mark.parametrize(("version", "seed"), SEEDS, ids=[f"pg{v}-seed{s}" for v, s in SEEDS])
def test_chaos_seed(version: str, seed: int, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, version)
    res = run_seed(lab, seed, ROWS, tmp_path, lambda _text: None)
    doc = res.to_json()
    assert len(res.damages) >= 6, res.damages  # several kinds at once, on every table
    assert not res.violations(), json.dumps(doc, indent=1)[:4000]
    totals = res.totals()
    assert totals["truth"] > ROWS * 0.9
    assert totals["saved"] + totals["apart"] + totals["lost"] == totals["truth"]
    assert totals["wrong"] == totals["duplicates"] == totals["extra"] == 0
    assert totals["saved"] > totals["truth"] * 0.9, totals  # the repair keeps what it can
    # the ledger the repair wrote is the one checked: every table matched it
    assert all(t.ledger_match and t.clean for t in res.tables)


def _issue_table(lab: LabCluster) -> dict[int, tuple[str, str]]:
    sql(
        lab,
        "DROP TABLE IF EXISTS lab_template, test_table",
        TEMPLATE_SQL.replace("%(seed)s", "1").replace("%(rows)s", "5000").replace("%%", "%"),
        "CREATE TABLE test_table AS SELECT * FROM lab_template ORDER BY id",
        "ALTER TABLE test_table ADD PRIMARY KEY (id)",
        "VACUUM ANALYZE test_table",
        "SELECT count(*) FROM (SELECT md5(r::text) FROM test_table r) s",
        "CHECKPOINT",
    )
    rows = sql(lab, "SELECT id, md5(r::text), ctid::text FROM test_table r")
    return {int(i): (str(m), str(c)) for i, m, c in rows}


def _damage(lab: LabCluster, tmp_path: Path, **fields: Any) -> None:
    n = len(list(tmp_path.glob("m-*.json")))
    fields.setdefault("seed", 1)
    simulate.run(SimulateRequest(dsn=lab.dsn(), table="public.test_table", manifest=tmp_path / f"m-{n}.json", **fields))


@pytest.mark.parametrize("version", ["15", "18"])
def test_issue_case(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, version)
    truth = _issue_table(lab)
    lp, mask = sql(
        lab,
        "SELECT lp, t_infomask FROM heap_page_items(get_raw_page('test_table', 6)) WHERE lp_flags = 1 ORDER BY lp",
    )[4]
    multi_row = next(k for k, (_, c) in truth.items() if c == f"(6,{lp})")
    _damage(lab, tmp_path, mode="header", field="random", block=3)
    _damage(lab, tmp_path, mode="item-ids", block=4)
    _damage(lab, tmp_path, mode="tuple-header", field="t_xmin", value=3000000000, clear_hints=True, block=5, item=3)
    # a MultiXact xmax that never existed: the row's data is intact
    _damage(lab, tmp_path, mode="tuple-header", field="t_xmax", value=4000000000, block=6, item=int(lp))
    multi = (int(mask) | 0x1000) & ~0x0C00
    _damage(lab, tmp_path, mode="tuple-header", field="t_infomask", value=multi, block=6, item=int(lp))
    _damage(lab, tmp_path, mode="tuple-header", field="t_infomask", block=7, item=2, seed=3)
    _damage(lab, tmp_path, mode="toast", field="chunk_seq", value=7)
    # what salvage saves
    code, _, err = cli("salvage", "--dsn", lab.dsn(), "--table", "test_table", "--out", str(tmp_path / "salvage"))
    assert code in (0, 2), err
    saved: set[int] = set()
    # the rows it saves, and those it keeps apart after six provenance columns (block, lp, offset, via, …)
    for name, column in (("public.test_table.copy", 0), ("public.test_table.carved.copy", 6)):
        for line in (tmp_path / "salvage" / name).read_bytes().splitlines():
            saved.add(int(line.split(b"\t")[column]))
    assert len(saved) > 4990
    # the dry run lists every row it will lose
    code, out, err = cli("repair", "--dsn", lab.dsn(), "--table", "test_table", "--reinsert", "--format", "json")
    assert code == 0, err
    dry = json.loads(out)
    code, out, err = cli(
        "repair", "--dsn", lab.dsn(), "--table", "test_table", "--reinsert", "--execute", "--yes", "--format", "json",
        "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    ledger = doc["execution"]["ledger"]
    assert doc["execution"]["ledger_check"]["match"]
    assert ledger["rows"] == len(truth) == 5000
    after = {int(i): str(m) for i, m in sql(lab, "SELECT id, md5(r::text) FROM test_table r")}
    missing = set(truth) - set(after)
    lost = {x["ctid"] for x in ledger["lost"]}
    apart = {x["ctid"] for x in ledger["kept_apart"]}
    # no row salvage saved is lost: it is back in the table or kept apart with its bytes
    assert not {k for k in missing if k in saved and truth[k][1] in lost}
    assert {truth[k][1] for k in missing} <= lost | apart
    assert lost <= {x["ctid"] for x in dry["ledger"]["lost"]}, "a row lost that the plan did not list"
    assert not [k for k, m in after.items() if truth[k][0] != m], "a row came back with other values"
    # the damaged MultiXact xmax is frozen (PostgreSQL 15) or put back from its checksum-failed page (18)
    assert after.get(multi_row) == truth[multi_row][0]
    if version == "15":
        assert f"(6,{lp})" in {k["ctid"] for k in doc["plan"]["kept"]}
    kept = (tmp_path / "run" / "kept-apart.copy").read_bytes().splitlines() if apart else []
    assert {line.split(b"\t", 1)[0].decode() for line in kept} == apart


@pytest.mark.pg("15")
def test_ledger_mismatch_fails(pg: LabCluster, labs: CorruptLabs, tmp_path: Path) -> None:
    """A row inserted between the plan and its execution is not in the ledger: the check fails with status 2."""
    lab = get_lab(labs, "15")
    _issue_table(lab)
    _damage(lab, tmp_path, mode="tuple-header", field="t_hoff", block=2)
    plan, ctx = build_plan(RepairRequest(dsn=lab.dsn(), table="test_table", reinsert=True, skip_salvage=True))
    try:
        assert plan.ledger.counted and plan.ledger.total == 5000
        sql(lab, "INSERT INTO test_table (id, a, b, description) VALUES (100000, 1, 1, 'not in the plan')")
        with pytest.raises(LedgerMismatch) as exc:
            execute(plan, ctx, tmp_path / "run", lambda _text: None)
    finally:
        ctx.conn.close()
    assert exc.value.exit_code == Exit.DAMAGE
    assert "more than planned" in exc.value.message and exc.value.hint
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["execution"]["ledger_check"]["match"] is False
