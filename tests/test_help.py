"""Golden ``--help`` of every command: a changed option, default or sentence shows in review as a diff of
tests/data/help/, not as a surprise to the DBA reading it. ``PGSURGEON_REGEN_HELP=1 pytest tests/test_help.py``
rewrites the files after an intended change."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from pgsurgeon.cli import get_parser
from pgsurgeon.commands import NAMES

GOLDEN = Path(__file__).parent / "data" / "help"


def _help(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps to the terminal's width
    for name in [n for n in os.environ if n.startswith("PG") and not n.startswith("PGSURGEON")]:
        monkeypatch.delenv(name)  # defaults taken from PG* variables would make the text the machine's
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        get_parser(argv).parse_args(argv)
    assert done.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("command", [None, *NAMES])
def test_help_is_as_reviewed(command: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    text = _help(argv, monkeypatch)
    golden = GOLDEN / f"{command or 'pgsurgeon'}.txt"
    if os.environ.get("PGSURGEON_REGEN_HELP"):
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"no {golden.name}: run PGSURGEON_REGEN_HELP=1 pytest {Path(__file__).name}"
    assert text == golden.read_text(encoding="utf-8"), f"{golden.name} differs: review, then regenerate"


def test_every_golden_file_is_a_command() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == {"pgsurgeon", *NAMES}
