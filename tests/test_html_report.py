"""The lab's reports as people read them, from a real lab run (PostgreSQL 18, with and without checksums): the
HTML speaks in words (no finding codes), numbers the blocks on its maps, colours every damaged area including
checksum failures, draws truncated blocks as missing and quotes the tools' messages in full; a headless browser
renders it and the screenshot shows those colours. The terminal matrix fits the width it is given and the progress
says "n of N"."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from pgsurgeon.cli import main
from pgsurgeon.labrun.report import AREA_COLOURS, HEALTHY

CODE = re.compile(r"\b(?:page|page_header|checksum|line_pointer|tuple_header|tuple_data|toast|index|file|server|"
                  r"amcheck|btree)\.[a-z_]+\b")  # fmt: skip
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


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


def _png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit RGB/RGBA PNG (what a browser screenshot is)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    pixels = [(r[i], r[i + 1], r[i + 2]) for r in rows for i in range(0, stride, bpp)]
    return width, height, pixels


def test_a_headless_browser_shows_the_maps(lab_run: dict[str, Any], tmp_path: Path) -> None:
    browser = next((b for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        if os.environ.get("PGSURGEON_REQUIRE_BROWSER"):
            pytest.fail("no headless browser (apt-get install chromium-headless-shell)")
        pytest.skip("no headless browser installed (apt-get install chromium-headless-shell)")
    page = lab_run["out"] / "lab-report.html"
    shot = tmp_path / "report.png"
    flags = ["--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"]
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1400,6000", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 6000)
    seen = set(pixels)

    def rgb(colour: str) -> tuple[int, int, int]:
        return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)

    for name in ("page_header", "checksum"):
        assert rgb(AREA_COLOURS[name]) in seen, name
    assert rgb(HEALTHY) in seen
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "block 0" in dom and "checksum failure" in dom and not CODE.findall(dom)
