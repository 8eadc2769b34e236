"""Carving damaged pages that hold dead and updated tuples, on real PostgreSQL 15 and 18.

A table gets HOT updates (some twice), non-HOT updates, updated-then-deleted rows, deletes, aborted updates,
aborted deletes and aborted inserts; every row version carries its own value, so a dead version that comes back is
seen. The ground truth is ``SELECT`` before the damage. Then the simulator destroys the line pointer array of some of
those blocks and the page header of others, and the table is salvaged (SQL for the healthy blocks, carving for the
damaged ones; then everything carved). Nothing that was not live may come back, nothing may come twice, and a live
row missing from the output must sit on a damaged block and be reported lost or maybe-lost there (or kept apart as
uncertain).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import cli
from fix_pg import MakeLab, exec_sql
from pgsurgeon.lab import LabCluster
from pgsurgeon.salvage.engine import SalvageOptions, salvage

T = "dd"


def build(lab: LabCluster) -> None:
    exec_sql(
        lab,
        f"CREATE TABLE {T} (id int PRIMARY KEY, k int, v text, pad text) WITH (fillfactor = 70);"
        f"CREATE INDEX ON {T} (k);"
        f"INSERT INTO {T} SELECT g, g, 'v' || g || '.0', repeat('x', 60 + g % 40) FROM generate_series(1, 300) g;",
    )
    for st in (
        f"UPDATE {T} SET v = 'v' || id || '.1' WHERE id % 3 = 0",  # HOT where the page has room
        f"UPDATE {T} SET v = 'v' || id || '.2' WHERE id % 9 = 0",  # a second HOT update: a chain
        f"UPDATE {T} SET k = k + 10000, v = 'v' || id || '.k' WHERE id % 7 = 0",  # non-HOT (indexed column)
        f"UPDATE {T} SET v = 'v' || id || '.d' WHERE id % 11 = 0",
        f"DELETE FROM {T} WHERE id % 11 = 0",  # updated, then the new version deleted
        f"DELETE FROM {T} WHERE id % 5 = 0",
        f"BEGIN; UPDATE {T} SET v = 'v' || id || '.aborted' WHERE id % 4 = 1; ROLLBACK",
        f"BEGIN; DELETE FROM {T} WHERE id % 13 = 0; ROLLBACK",
        f"BEGIN; INSERT INTO {T} SELECT g, g, 'aborted insert ' || g, 'y' FROM generate_series(1000, 1040) g; ROLLBACK",
        f"INSERT INTO {T} SELECT g, g, 'late ' || g, 'z' FROM generate_series(2000, 2010) g",
    ):
        exec_sql(lab, st)


def truth(lab: LabCluster) -> dict[str, tuple[int, int, str]]:
    """id -> (block, lp, COPY line)."""
    out: dict[str, tuple[int, int, str]] = {}
    with lab.connect() as conn, conn.cursor().copy(f"COPY (SELECT ctid, * FROM {T}) TO STDOUT") as cp:  # type: ignore[arg-type]
        for raw in cp:
            ctid, line = bytes(raw).decode().rstrip("\n").split("\t", 1)
            b, lp = ctid.strip("()").split(",")
            out[line.split("\t", 1)[0]] = (int(b), int(lp), line)
    return out


def check(report: dict[str, Any], lines: list[str], want: dict[str, tuple[int, int, str]], damaged: set[int]) -> None:
    ids = [ln.split("\t", 1)[0] for ln in lines]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    assert dup == [], f"rows saved twice: {dup}"
    good = {w[2] for w in want.values()}
    resurrected = sorted(ln for ln in lines if ln not in good)
    assert resurrected == [], f"rows that were not live (dead versions, deleted or aborted rows): {resurrected[:10]}"
    reported = [x for x in report["lost"] + report["maybe_lost"]]
    # rows kept apart: the provenance columns (block first) before the row
    apart = [
        {"block": int(ln.split("\t", 1)[0])} for ln in Path(report["outputs"]["carved_file"]).read_text().splitlines()
    ]
    missing = sorted(set(want) - set(ids), key=int)
    for i in missing:
        b, lp, _ = want[i]
        assert b in damaged, f"row {i} at ({b},{lp}) on an undamaged block is missing"
        accounted = any(x["block"] == b and x["lp"] in (None, lp) for x in reported) or any(
            c["block"] == b for c in apart
        )
        assert accounted, f"row {i} at ({b},{lp}) is missing and not reported lost, maybe lost or kept apart"


def corrupt(lab: LabCluster, mode: str, block: int, *extra: str) -> None:
    code, _, err = cli("corrupt", mode, *extra, "--dsn", lab.dsn(), "--table", T, "--block", str(block), "--seed", "7")
    assert code == 0, err


def salvage_to(lab: LabCluster, out: Path, *, carve_all: bool) -> tuple[dict[str, Any], list[str]]:
    report = salvage(SalvageOptions(dsn=lab.dsn(), table=T, out=out, fmt="copy", carve_all=carve_all, jobs=1))
    lines = [ln for ln in (out / f"public.{T}.copy").read_text().split("\n") if ln]
    return report, lines


@pytest.mark.parametrize("carve_all", [False, True], ids=["precheck", "carve-all"])
def test_damaged_pages_with_dead_versions(pg: LabCluster, make_lab: MakeLab, tmp_path: Path, carve_all: bool) -> None:
    lab = make_lab(pg.version)
    build(lab)
    want = truth(lab)
    ((nblocks,),) = exec_sql(lab, f"SELECT pg_relation_size('{T}') / 8192")
    nblocks = int(nblocks)
    assert nblocks >= 6
    # the damaged blocks hold dead versions: deleted ids and old versions of updated ones were there
    exec_sql(lab, "CHECKPOINT")
    last = nblocks - 1
    corrupt(lab, "item-ids", 0)
    corrupt(lab, "header", 1, "--field", "random")
    corrupt(lab, "header", 2, "--field", "pd_lower")
    corrupt(lab, "item-ids", last)
    damaged = {0, 1, 2, last}
    report, lines = salvage_to(lab, tmp_path / "out", carve_all=carve_all)
    check(report, lines, want, damaged)
    # the carver saw the dead versions on those pages and kept them out
    assert report["rows"]["carved_invisible_skipped"] > 0
    # the block whose line pointers alone were destroyed: its body is intact, every live row comes back
    on0 = {w[2] for w in want.values() if w[0] == 0}
    if lab.checksums:
        # the page failed its checksum: its rows come back kept apart (after the six provenance columns)
        carved_file = Path(report["outputs"]["carved_file"])
        kept = {ln.split("\t", 6)[6] for ln in carved_file.read_text().splitlines()}
        assert on0 <= kept, f"rows of block 0 not carved back: {sorted(on0 - kept)[:5]}"
        assert not on0 & set(lines)
        return
    assert on0 <= set(lines), f"rows of block 0 not carved back: {sorted(on0 - set(lines))[:5]}"
