"""A headless browser for the HTML reports' tests: find one (failing instead of skipping when CI asks for it),
screenshot a page, and read the screenshot's pixels without an imaging library."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
FLAGS = ("--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1")


def browser_or_skip() -> str:
    """The first headless browser found; without one the test skips, or fails where one is required (CI sets
    PGSURGEON_REQUIRE_BROWSER, or CI=true), so a green CI run means the pages were really drawn."""
    browser = next((b for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        if os.environ.get("PGSURGEON_REQUIRE_BROWSER") or os.environ.get("CI") == "true":
            pytest.fail("no headless browser (apt-get install chromium-headless-shell)")
        pytest.skip("no headless browser installed (apt-get install chromium-headless-shell)")
    return browser


def screenshot(browser: str, page: Path, shot: Path, width: int, height: int) -> None:
    subprocess.run(
        [browser, *FLAGS, f"--screenshot={shot}", f"--window-size={width},{height}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )


def dump_dom(browser: str, page: Path) -> str:
    return subprocess.run(
        [browser, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout


def rgb(colour: str) -> tuple[int, int, int]:
    """'#rrggbb' as an (r, g, b) pixel."""
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels (row by row) of an 8-bit RGB/RGBA PNG (what a browser screenshot is)."""
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
