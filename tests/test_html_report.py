"""The lab's reports as people read them, from a real lab run (PostgreSQL 18, with and without checksums): the
HTML speaks in words (no finding codes), numbers the blocks on its maps, colours every damaged area including
checksum failures, draws truncated blocks as missing and quotes the tools' messages in full; a headless browser
renders it and the screenshot shows those colours. The terminal matrix fits the width it is given and the progress
says "n of N"."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fix_browser import browser_or_skip, dump_dom, png_pixels, rgb, screenshot
from pgsurgeon.cli import main
from pgsurgeon.labrun.report import AREA_COLOURS, HEALTHY

CODE = re.compile(r"\b(?:page|page_header|checksum|line_pointer|tuple_header|tuple_data|toast|index|file|server|"
                  r"amcheck|btree)\.[a-z_]+\b")  # fmt: skip


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("lab")
    stdout, stderr = io.StringIO(), io.StringIO()
    mp = pytest.MonkeyPatch()
    mp.setenv("COLUMNS", "100")
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["lab", "--modes", "header,checksum,truncate", "--seed", "7", "--out", str(out)])
    finally:
        mp.undo()
    assert code == 0, stderr.getvalue()[-2000:]
    return {
        "out": out,
        "stdout": stdout.getvalue(),
        "stderr": stderr.getvalue(),
        "html": (out / "lab-report.html").read_text(encoding="utf-8"),
        "json": json.loads((out / "lab-report.json").read_text(encoding="utf-8")),
    }


def test_html_speaks_in_words_with_numbered_blocks(lab_run: dict[str, Any]) -> None:
    page = lab_run["html"]
    assert not CODE.findall(page), sorted(set(CODE.findall(page)))[:10]
    assert "page header" in page and "checksum failure" in page
    assert re.search(r">block 0</text>", page) and re.search(r">\+8</text>", page)
    # the damaged block of the header scenario is numbered on the map and listed
    assert re.search(r">3</text>", page)
    assert re.search(r"<li>page header[^<]*: blocks? [^<]*\b3\b", page)


def test_checksums_truncation_and_full_messages(lab_run: dict[str, Any]) -> None:
    page = lab_run["html"]
    sections = page.split("<section>")[1:]
    checksum_on = next(s for s in sections if s.startswith("<h3>checksum") and "checksums on" in s[:200])
    # the checksum alone was damaged: block 8 is drawn as a checksum failure, not as the header the server refused
    assert re.search(f'<rect [^>]*fill="{AREA_COLOURS["checksum"]}"[^>]*><title>block 8: checksum failure', checksum_on)
    truncated = [s for s in sections if s.startswith("<h3>truncate")]
    assert truncated and all('fill="#ffffff"' in s and "missing (cut off the file)" in s for s in truncated)
    header = next(s for s in sections if s.startswith("<h3>header") and "checksums on" in s[:200])
    assert "<summary>full messages</summary>" in header
    pre = re.findall(r"<pre>(.*?)</pre>", header, re.S)
    assert any("invalid page in block 3 of relation" in p for p in pre), pre


def test_terminal_matrix_fits_and_progress_counts(lab_run: dict[str, Any]) -> None:
    lines = lab_run["stdout"].splitlines()
    assert lines and max(len(ln) for ln in lines if not ln.startswith("reports:")) <= 100
    progress = lab_run["stderr"]
    assert "[1 of 6" in progress and "[6 of 6" in progress
    assert "left]" in progress


def test_a_headless_browser_shows_the_maps(lab_run: dict[str, Any], tmp_path: Path) -> None:
    browser = browser_or_skip()
    page = lab_run["out"] / "lab-report.html"
    shot = tmp_path / "report.png"
    screenshot(browser, page, shot, 1400, 6000)
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 6000)
    seen = set(pixels)
    for name in ("page_header", "checksum"):
        assert rgb(AREA_COLOURS[name]) in seen, name
    assert rgb(HEALTHY) in seen
    dom = dump_dom(browser, page)
    assert "block 0" in dom and "checksum failure" in dom and not CODE.findall(dom)
