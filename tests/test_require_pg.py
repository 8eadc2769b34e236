"""``PGSURGEON_REQUIRE_PG=1`` turns a missing PostgreSQL into a failed run: proven on a nested pytest run whose
PostgreSQL 15 points at an empty directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

NEEDS_PG15 = """
import pytest

@pytest.mark.pg("15")
def test_needs_pg15(pg):
    pass
"""


def nested_pytest(tmp_path: Path, require: str | None) -> subprocess.CompletedProcess[str]:
    """pytest on one test that needs PostgreSQL 15, with PGSURGEON_PG15_BIN an empty directory."""
    empty = tmp_path / "no-postgres"
    empty.mkdir(exist_ok=True)
    (tmp_path / "test_needs_pg15.py").write_text(NEEDS_PG15, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    pg: versions\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PGSURGEON_REQUIRE_PG"}
    env["PGSURGEON_PG15_BIN"] = str(empty)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    if require is not None:
        env["PGSURGEON_REQUIRE_PG"] = require
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fix_pg", "-p", "no:cacheprovider", "-rsf", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("require", [None, "0"])
def test_missing_postgres_skips_without_the_flag(tmp_path: Path, require: str | None) -> None:
    proc = nested_pytest(tmp_path, require)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout and "postgresql 15 is not available" in proc.stdout, proc.stdout


def test_missing_postgres_fails_with_the_flag(tmp_path: Path) -> None:
    proc = nested_pytest(tmp_path, "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "skipped" not in proc.stdout, proc.stdout
    assert "postgresql 15 is not available" in proc.stdout and "PGSURGEON_REQUIRE_PG is set" in proc.stdout
