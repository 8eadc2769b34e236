"""salvage on a table pgbench keeps changing (issue 19): every connection and the carver read one shared snapshot,
so the saved rows are one moment of the table: each account exactly once, none missing, on PostgreSQL 15 and 18.
pgbench itself sees no failed transaction."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from fix_corrupt import cli
from fix_pg import MakeLab

SCALE = 2
ROWS = 100_000 * SCALE


@pytest.mark.parametrize("mode", [(), ("--carve-all",)], ids=["sql", "carve-all"])
def test_salvage_under_pgbench_saves_one_snapshot(
    pg_version: str, make_lab: MakeLab, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    lab = make_lab(pg_version)
    pgbench = str(lab.install.tool("pgbench"))
    env = lab.install.env()
    subprocess.run([pgbench, "-i", "-q", "-s", str(SCALE), "-d", lab.dsn()], env=env, check=True, capture_output=True)
    load = subprocess.Popen(
        [pgbench, "-n", "-c", "4", "-T", "15", "-d", lab.dsn()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for run in range(2):
            out = tmp_path / f"out{run}"
            shutil.rmtree(out, ignore_errors=True)
            code, stdout, err = cli(
                "salvage",
                "--dsn",
                lab.dsn(),
                "--table",
                "pgbench_accounts",
                "--out",
                str(out),
                "-j",
                "2",
                "--chunk-blocks",
                "16",
                "--report-format",
                "json",
                *mode,
            )
            assert stdout, err
            report = json.loads(stdout)
            assert code == 0, (report["lost"][:3], report["rows"], report["damaged_blocks"][:3], report["notes"])
            lines = Path(report["outputs"]["rows_file"]).read_text().splitlines()
            aids = Counter(int(ln.split("\t", 1)[0]) for ln in lines)
            twice = [a for a, n in aids.items() if n > 1]
            assert twice == [], f"accounts saved twice: {twice[:10]}"
            assert len(aids) == ROWS, (
                f"{ROWS - len(aids)} accounts missing",
                report["damaged_blocks"][:5],
                report["failures"][:5],
                report["notes"],
            )
    finally:
        stdout_text, stderr_text = load.communicate(timeout=60)
    assert load.returncode == 0, stderr_text
    assert "number of failed transactions: 0" in stdout_text, stdout_text


@pytest.fixture(params=["15", "18"], ids=["pg15", "pg18"])
def pg_version(request: pytest.FixtureRequest) -> str:
    return str(request.param)
