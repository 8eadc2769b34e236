"""``pgsurgeon health --format html`` (issue 33) on a real PostgreSQL 18: two tables of 200,000 rows keyed by
``uuidv7()`` and by ``gen_random_uuid()`` (the seed article's UUIDv7 against UUIDv4). The time-ordered key's leaves
lie in the file in key order, the random key's do not, as the counted leaf order says; the page holds both indexes'
plots, and a headless browser draws them: bars and points in their colours, each index's histogram beside its
leaf-order plot, the v7 points a rising line and the v4 points a cloud."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fix_browser import browser_or_skip, png_pixels, rgb, screenshot
from fix_pg import create_test_cluster, exec_sql
from pgsurgeon.health.html import HIST_COLOUR, ORDER_COLOUR

ROWS = 200_000
V7, V4 = "public.ids_v7_pkey", "public.ids_v4_pkey"
SETUP = f"""
CREATE TABLE ids_v7 (id uuid PRIMARY KEY DEFAULT uuidv7(), n int);
CREATE TABLE ids_v4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int);
INSERT INTO ids_v7 (n) SELECT g FROM generate_series(1, {ROWS}) g;
INSERT INTO ids_v4 (n) SELECT g FROM generate_series(1, {ROWS}) g;
"""


def _pgsurgeon(*argv: str) -> str:
    run = subprocess.run([sys.executable, "-m", "pgsurgeon", *argv], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.fixture(scope="module")
def report(lab_base_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The two tables on a stopped PostgreSQL 18 (make_lab's cluster, made once for the module), its health as
    HTML in a file and as JSON. The cluster is removed after the module."""
    lab = create_test_cluster(lab_base_dir, "health-html-pg18", "18")
    try:
        lab.start()
        exec_sql(lab, SETUP)
        exec_sql(lab, "CHECKPOINT")
        lab.stop()
        out = tmp_path_factory.mktemp("health-html") / "health.html"
        out.write_text(_pgsurgeon("health", str(lab.pgdata), "--database", "postgres", "--format", "html"))
        doc = json.loads(_pgsurgeon("health", str(lab.pgdata), "--database", "postgres", "--format", "json"))
        yield {"path": out, "html": out.read_text(), "json": {r["name"]: r for r in doc["relations"]}}
    finally:
        lab.destroy()


def test_the_leaf_order_of_v7_rises_and_of_v4_does_not(report: dict[str, Any]) -> None:
    rel = report["json"]
    for name in (V7, V4):
        order, leaves = rel[name]["leaf_order"], rel[name]["pgstatindex"]["leaf_pages"]
        # a 200k-row uuid index has about 600 (v7) to 900 (v4) leaves: sampled down to 512, both ends kept
        assert leaves > 512 and len(order) == 512, (name, leaves, len(order))
        assert order[0][0] == 0 and order[-1][0] == leaves - 1
        assert all(a[0] < b[0] for a, b in itertools.pairwise(order))
    v7 = [block for _, block in rel[V7]["leaf_order"]]
    v4 = [block for _, block in rel[V4]["leaf_order"]]
    assert all(a < b for a, b in itertools.pairwise(v7)), "v7's leaves are not in block order"
    falls = sum(a > b for a, b in itertools.pairwise(v4))
    assert falls > len(v4) // 4, f"v4's leaves fall back in the file only {falls} times of {len(v4) - 1}"


def test_the_page_holds_both_indexes_plots_and_no_script(report: dict[str, Any]) -> None:
    page = report["html"]
    for name in (V7, V4):
        assert f'data-plot="histogram" data-index="{name}"' in page
        assert f'data-plot="leaf-order" data-index="{name}"' in page
        assert f"{name}: items per leaf page" in page and f"{name}: physical order of leaves" in page
    assert page.count(f'fill="{ORDER_COLOUR}"') == 2 * 512
    assert "leaf position in key order" in page and "block number in the index file" in page
    assert "items on a leaf page" in page and ">leaf pages<" in page
    # the table as the text report has it, the tables with their indexes
    assert re.search(r">public\.ids_v4</td><td>heap</td>", page) and f">{V4}</td><td>btree</td>" in page
    # self-contained: nothing to run and nothing fetched
    assert "<script" not in page and not re.search(r"\b(?:src|href)=", page)


def _bands(pixels: list[tuple[int, int, int]], width: int, colours: set[tuple[int, int, int]]) -> list[range]:
    """The horizontal bands of the screenshot where any of ``colours`` appears: rows with it, joined across gaps
    smaller than a plot."""
    rows = sorted({i // width for i, p in enumerate(pixels) if p in colours})
    bands: list[range] = []
    for y in rows:
        if bands and y - bands[-1].stop < 60:
            bands[-1] = range(bands[-1].start, y + 1)
        else:
            bands.append(range(y, y + 1))
    return bands


def _correlation(points: list[tuple[int, int]]) -> float:
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxy = sum((x - mx) * (y - my) for x, y in points)
    sxx, syy = sum((x - mx) ** 2 for x, _ in points), sum((y - my) ** 2 for _, y in points)
    return sxy / (sxx * syy) ** 0.5


def test_a_headless_browser_draws_the_plots(report: dict[str, Any], tmp_path: Path) -> None:
    browser = browser_or_skip()
    shot = tmp_path / "health.png"
    screenshot(browser, report["path"], shot, 1400, 2000)
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 2000)
    bars, points = rgb(HIST_COLOUR), rgb(ORDER_COLOUR)
    bands = _bands(pixels, width, {bars, points})
    # the indexes in the order the page lists them
    listed = re.findall(r'data-plot="histogram" data-index="([^"]+)"', report["html"])
    assert sorted(listed) == sorted([V4, V7]) and len(bands) == 2, (listed, bands)
    for name, band in zip(listed, bands, strict=True):
        at = [(i % width, i // width, pixels[i]) for i in range(band.start * width, band.stop * width)]
        hist = [(x, y) for x, y, p in at if p == bars]
        order = [(x, y) for x, y, p in at if p == points]
        assert len(hist) > 500 and len(order) > 500, (name, len(hist), len(order))
        # side by side: the histogram on the left, the leaf order on the right
        assert max(x for x, _ in hist) < min(x for x, _ in order), name
        r = _correlation(order)
        # screen y grows downwards: a rising line has a strongly negative correlation, a cloud about none
        if name == V7:
            assert r < -0.95, (name, r)
        else:
            assert abs(r) < 0.5, (name, r)
