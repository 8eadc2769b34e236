"""`pgsurgeon lab` end to end on a reduced set of scenarios: the report's numbers against the ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgsurgeon.cli import main


@pytest.fixture(scope="module")
def lab_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("lab")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(
            [
                "lab",
                "--modes",
                "zero,header,checksum,item-ids,btree",
                "--seed",
                "7",
                "--out",
                str(out),
                "--format",
                "json",
            ]
        )
    report = json.loads(buf.getvalue())
    assert code == 0, [r["error"] for r in report["results"] if r["error"]]
    return report, out


def results(report: dict[str, Any], name: str) -> dict[bool, dict[str, Any]]:
    """The scenario's result on each cluster; asserts both clusters ran it, so a loop over them never runs empty."""
    by = {r["checksums"]: r for r in report["results"] if r["scenario"]["name"] == name}
    assert set(by) == {True, False}, f"scenario {name} ran on {sorted(by)} only"
    return by


def test_both_clusters_ran_every_scenario(lab_report: tuple[dict[str, Any], Path]) -> None:
    report, out = lab_report
    assert {(c["checksums"], c["version"].split(".")[0]) for c in report["clusters"]} == {(True, "18"), (False, "18")}
    assert len(report["results"]) == 10
    for r in report["results"]:
        assert r["error"] is None
        assert r["rows"] == 2400
        assert r["timings"]["corrupt"] > 0
    assert {p.name for p in out.iterdir()} >= {"lab-report.md", "lab-report.html", "lab-report.json"}


def test_zeroed_page_loses_exactly_its_rows_silently(lab_report: tuple[dict[str, Any], Path]) -> None:
    for r in results(lab_report[0], "zero").values():
        sel = r["observation"]["select"]
        assert sel["error"] is None and not sel["crashed"]
        assert r["rows_on_damaged_blocks"] > 0
        assert sel["missing"] == r["rows_on_damaged_blocks"] and sel["wrong"] == 0
        assert r["observation"]["pg_dump"]["code"] == 0  # pg_dump is fooled too
        assert r["scan"]["found"] and "page_header.zeroed_referenced" in r["scan"]["codes"]
        assert r["block_map"]["damaged"] == [9] and 9 in {int(b) for b in r["block_map"]["flagged"]}


def test_header_damage_is_refused_and_found(lab_report: tuple[dict[str, Any], Path]) -> None:
    for r in results(lab_report[0], "header").values():
        assert "invalid page in block 3" in (r["observation"]["select"]["error"] or "")
        assert r["observation"]["pg_dump"]["code"] != 0
        assert r["scan"]["found"] and r["diagnose"]["found"]
        assert 3 in {int(b) for b in r["block_map"]["flagged"]}


def test_checksum_flip_depends_on_checksums(lab_report: tuple[dict[str, Any], Path]) -> None:
    by = results(lab_report[0], "checksum")
    assert "invalid page in block 8" in (by[True]["observation"]["select"]["error"] or "")
    assert by[True]["scan"]["codes"] == ["checksum.mismatch"]
    off = by[False]
    assert off["observation"]["select"]["error"] is None and off["observation"]["select"]["missing"] == 0
    assert off["scan"]["found"] is False


def test_html_report_is_self_contained_with_block_maps(lab_report: tuple[dict[str, Any], Path]) -> None:
    page = (lab_report[1] / "lab-report.html").read_text()
    assert page.count("<svg") == 10
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "<script" not in page
    md = (lab_report[1] / "lab-report.md").read_text()
    assert "| zero | on |" in md


def test_salvage_and_repair_against_ground_truth(lab_report: tuple[dict[str, Any], Path]) -> None:
    assert len(lab_report[0]["results"]) == 10  # five scenarios on two clusters: the loop below cannot run empty
    for r in lab_report[0]["results"]:
        s, rep = r["salvage"], r["repair"]
        assert s["duplicates"] == 0 and s["wrong"] == 0, r["scenario"]["name"]
        assert s["saved"] + s["apart"] + s["lost"] == r["rows"]
        assert rep["readable"] and rep["clean"], (r["scenario"]["name"], rep)
        assert rep["lost"] == rep["planned_lost"], (r["scenario"]["name"], rep)
        assert rep["wrong"] == 0 and rep["extra"] == 0
    for r in results(lab_report[0], "header").values():  # a destroyed header: every row carved back
        # (kept apart when the page failed its checksum: its values may be altered)
        s = r["salvage"]
        assert s["lost"] == 0 and s["carved"] + s["apart"] == r["rows_on_damaged_blocks"] > 0
        assert s["apart"] == (r["rows_on_damaged_blocks"] if r["checksums"] else 0)
        assert r["repair"]["lost"] == 0
    for r in results(lab_report[0], "zero").values():  # a zeroed page: its rows are gone, and said so
        assert r["salvage"]["lost"] == r["rows_on_damaged_blocks"]
        assert r["repair"]["lost"] == r["rows_on_damaged_blocks"]


def test_the_matrix_piped_is_one_whole_line_per_result() -> None:
    """Piped, the matrix is plain lines, never a table folded mid-word into 80 columns (issue 28)."""
    import io

    from rich.console import Console

    from pgsurgeon.labrun import report
    from pgsurgeon.labrun.runner import LabRun, Result
    from pgsurgeon.labrun.scenarios import SCENARIOS

    results = [Result(s, "checksums", True, f"lab_{s.name.replace('-', '_')}", 2400) for s in SCENARIOS]
    run = LabRun(1, list(SCENARIOS), results, [], 3.0, Path("/tmp"))
    buf = io.StringIO()
    report.print_matrix(run, Console(file=buf, width=80), plain=True)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 + len(SCENARIOS) and "│" not in buf.getvalue()
    assert all(
        ln.startswith(f"{s.name} (checksums on): SELECT *: ") for ln, s in zip(lines[1:], SCENARIOS, strict=True)
    )
    assert any(len(ln) > 80 for ln in lines[1:])  # whole, not folded to the console's width


def test_index_kinds_and_maps_run_as_lab_scenarios(tmp_path: Path) -> None:
    """Issue 30's modes are lab scenarios: a GIN index's entry and the visibility map, each on its own copy of the
    seeds' table, found by scan and diagnose (the right structure, on the scenario's own index or the table) and
    repaired with every row kept."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["lab", "--modes", "gin,vm", "--seed", "7", "--out", str(tmp_path), "--format", "json"])
    report = json.loads(buf.getvalue())
    assert code == 0, [r["error"] for r in report["results"] if r["error"]]
    want = {"gin": ("index.gin_posting_list", "lab_gin_ix"), "vm": ("vm.all_frozen_wrong", "lab_vm")}
    for name, (finding, relation) in want.items():
        for r in results(report, name).values():
            assert r["error"] is None
            for step in ("scan", "diagnose"):
                assert r[step]["found"] and any(b.startswith(f"{relation}:") for b in r[step]["blocks"]), r[step]
            assert finding in r["scan"]["codes"], r["scan"]
            assert r["repair"]["clean"] and r["repair"]["lost"] == 0 and r["repair"]["ledger_match"], r["repair"]
            assert r["block_map"]["relation"] == f"public.{relation}"
