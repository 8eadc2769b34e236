"""The README's first three commands stay what CI and a new user run: install, the lab, the test suite; and the
test command brings the test tools the install command does not."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_opens_with_install_lab_and_test() -> None:
    block = (ROOT / "README.md").read_text(encoding="utf-8").split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["pip install .", "pgsurgeon lab", "make test"]


def test_make_test_installs_the_test_extra() -> None:
    # tomllib is 3.11+, and the package supports 3.10: read the one line
    line = re.search(r"^test = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert line is not None
    extra = re.findall(r'"([^"]+)"', line.group(1))
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest-python:", 1)[1].split("\n\n", 1)[0]
    installed = re.findall(r"'([^']+)'", recipe.split("pip install -q", 1)[1])
    assert installed == extra
    assert "import pytest, pytest_timeout" in recipe
