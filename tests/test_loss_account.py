"""One loss account (issue 28): a page zeroed by hand and a page whose line pointers are garbled, on a table with a
primary key and a secondary index, data checksums on. scan, inspect, unload, diagnose, salvage and the repair plan
all tell the zeroed page's loss in the same words: the number of rows certainly gone and their keys, and so do
scan and unload of a base backup of the damaged cluster."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fix_pg import MakeLab
from fix_shop import shop
from pgsurgeon.cli import main


def account_of(text: str, block: int) -> tuple[int, str]:
    """The loss account's words about ``block`` in a command's output: (rows certainly gone, their keys)."""
    hit = re.search(rf"block {block}\b.*?(\d+) row\(s\) certainly gone \([^)]*\): id ([\d.,\s]+)", text, re.S)
    assert hit, text[-3000:]
    return int(hit.group(1)), hit.group(2).strip().rstrip(",")


@pytest.mark.parametrize("version", ["15", "18"])
def test_every_command_tells_the_same_loss_for_a_zeroed_page(
    make_lab: MakeLab, version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = shop(make_lab, version, wal=True)
    cluster, path, zeroed, keys = case.cluster, case.orders, case.zeroed, case.keys
    assert len(keys) > 50 and keys == list(range(keys[0], keys[-1] + 1))
    want = (len(keys), f"{keys[0]}..{keys[-1]}")
    told: dict[str, tuple[int, str]] = {}

    # offline, the server stopped
    assert main(["scan", str(cluster.pgdata)]) == 2
    told["scan"] = account_of(capsys.readouterr().out, zeroed)
    assert main(["inspect", str(path), "-b", str(zeroed)]) == 2
    told["inspect"] = account_of(f"block {zeroed} " + capsys.readouterr().out, zeroed)
    assert main(["unload", str(cluster.pgdata), "-t", "public.orders", "--out", str(tmp_path / "unload")]) == 2
    capsys.readouterr()
    report = (tmp_path / "unload" / "report.txt").read_text()
    told["unload"] = account_of(report, zeroed)
    doc = json.loads((tmp_path / "unload" / "report.json").read_text())
    (table,) = [t for t in doc["tables"] if t["name"] == "orders"]
    assert [len(p["certain"]) for p in table["pages_lost"] if p["block"] == zeroed] == [len(keys)]

    # online
    cluster.start()
    dsn = cluster.dsn()
    assert main(["diagnose", "-d", dsn, "-t", "orders"]) == 2
    told["diagnose"] = account_of(capsys.readouterr().out, zeroed)
    assert main(["salvage", "-d", dsn, "-t", "orders", "--out", str(tmp_path / "salvage")]) == 2
    told["salvage"] = account_of(capsys.readouterr().out, zeroed)
    assert main(["salvage", "-d", dsn, "-t", "orders", "--out", str(tmp_path / "s2"), "--format", "json"]) == 2
    salvaged = json.loads(capsys.readouterr().out)
    assert salvaged["lost_count"] == len(keys) and not [x for x in salvaged["maybe_lost"] if x["block"] == zeroed]
    assert sorted(int(x["key"]) for x in salvaged["lost"] if x["block"] == zeroed) == keys
    assert main(["repair", "-d", dsn, "-t", "orders", "--backup-dir", str(tmp_path / "repair")]) in (0, 2)
    told["repair"] = account_of(capsys.readouterr().out, zeroed)

    # a plain base backup of the damaged cluster tells the same, read in place
    backup = cluster.lab_dir / "backup"
    cluster.run_tool("pg_basebackup", "-D", str(backup), "-Fp", "--no-verify-checksums", "-c", "fast", timeout=300)
    assert main(["scan", str(backup)]) == 2
    told["scan of a base backup"] = account_of(capsys.readouterr().out, zeroed)
    assert main(["unload", str(backup), "-t", "public.orders", "--out", str(tmp_path / "unload-backup")]) == 2
    capsys.readouterr()
    told["unload of a base backup"] = account_of((tmp_path / "unload-backup" / "report.txt").read_text(), zeroed)

    assert told == {cmd: want for cmd in told}, told

    # the repair, executed: every row salvage saved is in the table after it, and only the rows certainly gone
    # are missing
    out = tmp_path / "executed"
    assert main(["repair", "-d", dsn, "-t", "orders", "--execute", "--yes", "--backup-dir", str(out)]) == 0
    capsys.readouterr()
    with cluster.connect() as conn:
        ids = {int(i) for (i,) in conn.execute("SELECT id FROM orders").fetchall()}
    assert ids == set(range(1, 30_001)) - set(keys), (len(ids), sorted(set(range(1, 30_001)) - ids - set(keys))[:5])
