"""``pgsurgeon health --format html``: one self-contained page (inline CSS and SVG: no script, font or network, so it
opens the same from a mail attachment or an air-gapped host). Per database the text report's table; for every btree
index with enough leaves, two plots side by side: how many items its leaves hold, and where its leaves lie in the
file in key order (the two measures the UUIDv4 against UUIDv7 article draws, seed-storage-health.md)."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

from pgsurgeon.health.figures import size_text

if TYPE_CHECKING:
    from pgsurgeon.health import HealthOutcome, RelationFigures

HIST_COLOUR = "#2e86ab"
"""The histogram's bars; no other mark of the page has this colour, so a screenshot can find the bars by it."""
ORDER_COLOUR = "#d1495b"
"""The leaf-order plot's points; likewise used for nothing else."""
WIDTH, HEIGHT = 460, 290
LEFT, RIGHT, TOP, BOTTOM = 70, 18, 40, 52
"""Room around the plotting area for the title (top) and the axes' numbers and names."""
MAX_BARS = 60
"""A histogram draws at most this many bars; a wider range of items per leaf is grouped into equal bins."""


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round numbers (1, 2 or 5 times a power of ten apart, whole: every axis counts items, leaves or blocks) from
    lo to hi, about ``count`` of them."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = max(1, next(m * power for m in (1, 2, 5, 10) if m * power >= raw))
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) // step) + 1)]


def _round_up(v: float) -> float:
    """The first round number (as ``_ticks`` makes them) at or above v: a histogram's top, so its top is labelled."""
    ticks = _ticks(0, v)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1
    return float(math.ceil(v / step) * step)


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.1f}"


class _Plot:
    """An SVG plot's frame: the data ranges mapped onto the plotting area, the axes with their numbers and names."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        self.x0, self.x1 = x
        self.y0, self.y1 = y
        self.w, self.h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(self, v: float) -> float:
        span = self.x1 - self.x0 or 1
        return LEFT + (v - self.x0) / span * self.w

    def py(self, v: float) -> float:
        span = self.y1 - self.y0 or 1
        return TOP + self.h - (v - self.y0) / span * self.h

    def frame(self, kind: str, index: str, title: str, x_name: str, y_name: str) -> list[str]:
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'data-plot="{kind}" data-index="{html.escape(index)}" aria-label="{html.escape(title)}" '
            'font-family="system-ui, sans-serif" font-size="11">',
            f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">'
            f"{html.escape(title)}</text>",
            f'<rect x="{LEFT}" y="{TOP}" width="{self.w}" height="{self.h}" fill="#fafafa" stroke="#999"/>',
        ]
        bottom = TOP + self.h
        for t in _ticks(self.x0, self.x1):
            x = self.px(t)
            parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#666"/>')
            parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="#444">{_num(t)}</text>')
        for t in _ticks(self.y0, self.y1):
            y = self.py(t)
            parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + self.w}" y2="{y:.1f}" stroke="#e4e4e4"/>')
            parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#444">{_num(t)}</text>')
        parts.append(
            f'<text x="{LEFT + self.w / 2}" y="{HEIGHT - 10}" text-anchor="middle">{html.escape(x_name)}</text>'
        )
        parts.append(
            f'<text transform="translate(14 {TOP + self.h / 2}) rotate(-90)" text-anchor="middle">'
            f"{html.escape(y_name)}</text>"
        )
        return parts


def histogram_svg(f: RelationFigures) -> str:
    """Leaf pages by the items they hold (after the high key; a posting list is one item), in at most MAX_BARS
    bars: a freshly built or in-order index is one tall bar at its fillfactor, random inserts spread it wide."""
    leaves = f.leaf_histogram()
    lo, hi = leaves[0][0], leaves[-1][0]
    width = max(1, -(-(hi - lo + 1) // MAX_BARS))
    bins: dict[int, int] = {}
    for items, pages in leaves:
        start = lo + (items - lo) // width * width
        bins[start] = bins.get(start, 0) + pages
    plot = _Plot((lo, lo + (-(-(hi - lo + 1) // width)) * width), (0, _round_up(max(bins.values()))))
    unit = "items" if width == 1 else f"items, bars of {width}"
    parts = plot.frame(
        "histogram", f.name, f"{f.name}: items per leaf page", f"items on a leaf page ({unit})", "leaf pages"
    )
    for start, pages in sorted(bins.items()):
        # at least two pixels high: a bin of one leaf among thousands still shows
        x0, x1, y = plot.px(start), plot.px(start + width), min(plot.py(pages), plot.py(0) - 2)
        what = f"{start} items" if width == 1 else f"{start} to {start + width - 1} items"
        parts.append(
            f'<rect x="{x0:.1f}" y="{y:.1f}" width="{max(1.0, x1 - x0 - 1):.1f}" height="{plot.py(0) - y:.1f}" '
            f'fill="{HIST_COLOUR}" shape-rendering="crispEdges"><title>{what}: {pages:,} leaf pages</title></rect>'
        )
    parts.append("</svg>")
    return "".join(parts)


def order_svg(f: RelationFigures) -> str:
    """Each sampled leaf at (its position in key order, its block number): a rising line when the leaves lie in
    the file in key order (a range scan reads forwards), a cloud when they were split off at random places."""
    points = f.leaf_order()
    leaves = int(f.counted["btree"]["leaf_pages"])
    plot = _Plot((0, max(leaves - 1, points[-1][0], 1)), (0, max(f.counted["blocks"] - 1, 1)))
    parts = plot.frame(
        "leaf-order",
        f.name,
        f"{f.name}: physical order of leaves",
        "leaf position in key order (first key at 0)",
        "block number in the index file",
    )
    for pos, block in points:
        # squares rather than circles: drawn without anti-aliasing, each keeps its exact colour on screen
        parts.append(
            f'<rect x="{plot.px(pos) - 1.5:.1f}" y="{plot.py(block) - 1.5:.1f}" width="3" height="3" '
            f'fill="{ORDER_COLOUR}" shape-rendering="crispEdges"><title>leaf {pos:,}: block {block:,}</title></rect>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _pct(v: int | float) -> str:
    return "n/a" if isinstance(v, float) and math.isnan(v) else f"{v:.2f}"


def _row(f: RelationFigures) -> str:
    t = f.pgstattuple() or {}
    i = f.pgstatindex()
    cells = [
        f'<td class="{"sub" if f.owner else "top"}">{html.escape(f.name)}</td>',
        f"<td>{html.escape(f.kind)}</td>",
        f'<td class="n">{size_text(f.size)}</td>',
        f'<td class="n">{int(t["tuple_count"]):,}</td>',
        f'<td class="n">{_pct(t["dead_tuple_percent"])}</td>',
        f'<td class="n">{_pct(t["free_percent"])}</td>',
        f'<td class="n">{_pct(i["avg_leaf_density"]) if i else ""}</td>',
        f'<td class="n">{_pct(i["leaf_fragmentation"]) if i else ""}</td>',
    ]
    return f"<tr>{''.join(cells)}</tr>"


def _index_section(f: RelationFigures) -> str:
    i = f.pgstatindex() or {}
    leaves, samples = int(i["leaf_pages"]), len(f.leaf_order())
    shown = "every leaf" if samples >= leaves else f"{samples} of the {leaves:,} leaves, evenly spaced in key order"
    caption = (
        f"{leaves:,} leaf pages, on average {_pct(i['avg_leaf_density'])} % full; "
        f"{_pct(i['leaf_fragmentation'])} % of them followed in key order by a leaf at an earlier block "
        f"(fragmentation), {_pct(f.in_order_leaves())} % by the very next block. The items on a leaf are its index "
        f"tuples after the high key (a posting list of duplicates is one). The right plot shows {shown}: "
        "a line rising from left to right means a scan in key order reads the file forwards; a cloud, that it "
        "jumps around the file."
    )
    return (
        f'<section class="index"><h3>{html.escape(f.name)} <small>on {html.escape(f.owner)}, '
        f"{size_text(f.size)}</small></h3>"
        f'<div class="pair">{histogram_svg(f)}{order_svg(f)}</div><p>{html.escape(caption)}</p></section>'
    )


HEAD = (
    "relation",
    "kind",
    "size",
    "live tuples",
    "dead %",
    "free %",
    "leaf density %",
    "fragmentation %",
)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #bbb; padding: 3px 8px; text-align: left; }
th { background: #eee; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.sub { padding-left: 2em; }
.pair { display: flex; flex-wrap: wrap; gap: 16px; }
.pair svg { border: 1px solid #ddd; background: #fff; }
section.index { margin: 1.5em 0; max-width: 960px; }
section.index p { font-size: 13px; color: #444; }
small { font-weight: normal; color: #666; }
code { background: #f3f3f3; padding: 1px 4px; }
"""


def render_html(outcome: HealthOutcome, suggestions: list[str], *, min_leaves: int = 10) -> str:
    """The page: what was read, per database the table and the plots of every btree index with at least
    ``min_leaves`` leaves (fewer say nothing about order), then the suggested commands."""
    s = outcome.scan.summary
    if s["findings"]:
        checked = (
            f"{s['findings']} damage finding(s) in the same pages: their figures count only what the pages still "
            f"show (pgsurgeon scan {outcome.scan.pgdata} lists them)."
        )
    elif outcome.checked:
        checked = "Every page was checked for damage in the same pass: none found."
    else:
        checked = "Pages not checked for damage (--check does it in the same pass)."
    body = [
        "<h1>pgsurgeon storage health</h1>",
        f"<p>{html.escape(str(outcome.scan.pgdata))}: read {s['blocks']:,} blocks ({s['bytes'] / 1e6:.1f} MB) in "
        f"{s['seconds']:.2f} s. {html.escape(checked)} Figures as pgstattuple and pgstatindex give them.</p>",
    ]
    body += [f'<p class="warning">warning: {html.escape(w)}</p>' for w in outcome.scan.warnings]
    databases: dict[str, list[RelationFigures]] = {}
    for f in outcome.relations:
        if f.pgstattuple() is not None:
            databases.setdefault(f.database, []).append(f)
    head = "".join(f"<th>{h}</th>" for h in HEAD)
    for database, rels in databases.items():
        body.append(f"<h2>database {html.escape(database or '(shared catalogs)')}</h2>")
        body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(_row(f) for f in rels)}</tbody></table>")
        plotted = [f for f in rels if (i := f.pgstatindex()) is not None and int(i["leaf_pages"]) >= min_leaves]
        body += [_index_section(f) for f in plotted if f.leaf_order() and f.leaf_histogram()]
    if suggestions:
        items = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in suggestions)
        body.append(f"<h2>next</h2><ul>{items}</ul>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>pgsurgeon storage health</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
