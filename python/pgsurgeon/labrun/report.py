"""The lab report: a matrix in the terminal, Markdown, JSON, and a self-contained HTML page with a block map per
damaged relation (no scripts, no fonts, no network: inline CSS and SVG)."""

from __future__ import annotations

import html
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pgsurgeon.labrun.runner import LabRun, Result

COLUMNS = (
    "scenario",
    "checksums",
    "SELECT *",
    "count(*)",
    "pg_dump",
    "pg_amcheck",
    "scan",
    "diagnose",
    "salvage",
    "repair",
)
AREA_COLOURS = {
    "page_header": "#d7263d",
    "checksum": "#f46036",
    "line_pointer": "#c2185b",
    "tuple_header": "#8e44ad",
    "tuple_data": "#5b6cdb",
    "toast": "#1b998b",
    "index": "#2e86ab",
    "file": "#6d4c41",
}
HEALTHY = "#cfe8cf"
DAMAGED_UNFOUND = "#222222"
MISSING = "#ffffff"
AREA_WORDS = {
    "page_header": "page header",
    "checksum": "checksum failure",
    "line_pointer": "line pointers (item IDs)",
    "tuple_header": "tuple header",
    "tuple_data": "column data",
    "toast": "TOAST value",
    "index": "index",
    "file": "file (size, segments)",
}
MAX_CELLS = 2048
"""A map draws at most this many cells; a bigger relation is drawn with several blocks per cell."""


def words(code: str) -> str:
    """A finding code in words: 'tuple_header.xmin_old' -> 'tuple header: xmin old'."""
    area, _, rest = code.partition(".")
    head = AREA_WORDS.get(area, area.replace("_", " "))
    return f"{head}: {rest.replace('_', ' ')}" if rest else head


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _found(d: dict[str, Any]) -> str:
    if not d:
        return "-"
    if not d.get("found"):
        return "nothing"
    what = "; ".join(words(c) for c in d.get("codes", []))
    return f"{d['errors']} error(s): {what}"


def _salvage(d: dict[str, Any]) -> str:
    if not d or not d.get("available", True):
        return "not run"
    if d.get("error"):
        return f"failed: {d['error']}"
    text = f"{d['saved']} saved ({d.get('carved', 0)} carved), {d['lost']} lost"
    if d.get("wrong") or d.get("duplicates"):
        text += f", {d.get('wrong', 0)} wrong, {d.get('duplicates', 0)} duplicated"
    if d.get("kept_apart"):
        text += f", {d['kept_apart']} kept apart"
    return text


def _repair(d: dict[str, Any]) -> str:
    if not d or not d.get("available", True):
        return "not run"
    if d.get("error"):
        return f"failed: {d['error']}"
    state = "clean" if d.get("clean") else "NOT clean"
    return f"{state}, {d.get('lost', 0)} rows lost (planned {d.get('planned_lost', 0)})"


def row(r: Result) -> list[str]:
    o = r.observation
    if r.error or o is None:
        return [
            r.scenario.name,
            "on" if r.checksums else "off",
            f"lab step failed: {r.error}",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ]
    return [
        r.scenario.name,
        "on" if r.checksums else "off",
        o.select.text(),
        o.count.text(),
        o.pg_dump.text(),
        o.amcheck.text(),
        _found(r.scan),
        _found(r.diagnose),
        _salvage(r.salvage),
        _repair(r.repair),
    ]


def print_matrix(run: LabRun, console: Any, plain: bool = False) -> None:
    """The matrix, fitted to a terminal's width (rich folds each cell within its column); ``plain`` (piped, no
    $COLUMNS): one line a scenario and cluster, each cell whole, for a file or grep."""
    from pgsurgeon.render import term

    if plain:
        console.print(f"pgsurgeon lab — seed {run.seed}, {run.seconds:.0f}s", markup=False)
        for r in run.results:
            cells = row(r)
            rest = "; ".join(f"{name}: {value}" for name, value in zip(COLUMNS[2:], cells[2:], strict=True))
            console.print(f"{cells[0]} (checksums {cells[1]}): {rest}", markup=False, soft_wrap=True)
        return
    t = term.table(title=f"pgsurgeon lab — seed {run.seed}, {run.seconds:.0f}s", show_lines=True)
    for name in COLUMNS:
        t.add_column(name, overflow="fold", ratio=2 if name in ("scenario", "checksums") else 3)
    t.columns[1].header = "sums"
    for r in run.results:
        t.add_row(*(_short(c, 48) for c in row(r)))
    console.print(t)


def to_json(run: LabRun) -> dict[str, Any]:
    def result(r: Result) -> dict[str, Any]:
        d = asdict(r)
        d["scenario"] = asdict(r.scenario)
        d["summary"] = dict(zip(COLUMNS, row(r), strict=True))
        return d

    return {
        "seed": run.seed,
        "seconds": run.seconds,
        "clusters": run.clusters,
        "results": [result(r) for r in run.results],
    }


def _ascii_map(r: Result) -> str:
    m = r.block_map
    if m is None:
        return ""
    cells = []
    for b in range(m.nblocks):
        if b in m.flagged:
            cells.append("X" if b in m.damaged else "!")
        else:
            cells.append("#" if b in m.damaged else ".")
    return "".join(cells)


def markdown(run: LabRun) -> str:
    lines = [
        f"# pgsurgeon lab report (seed {run.seed})",
        "",
        "Clusters: "
        + "; ".join(
            f"{c['name']} (PostgreSQL {c['version']}, data checksums {'on' if c['checksums'] else 'off'})"
            for c in run.clusters
        ),
        f"Total time: {run.seconds:.0f}s",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in run.results:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row(r)) + " |")
    lines += [
        "",
        "## Block maps",
        "",
        "`.` healthy, `#` damaged and not reported, `X` damaged and reported, `!` reported (no damage written)",
        "",
    ]
    for r in run.results:
        if r.block_map:
            lines.append(
                f"- {r.scenario.name} ({'checksums' if r.checksums else 'no checksums'}), "
                f"{r.block_map.relation}: `{_ascii_map(r)}`"
            )
    lines += ["", "## Timings (seconds)", ""]
    for r in run.results:
        steps = ", ".join(f"{k} {v}" for k, v in r.timings.items())
        lines.append(f"- {r.scenario.name} ({'on' if r.checksums else 'off'}): {steps}")
    return "\n".join(lines) + "\n"


def _cell(m: Any, blocks: range) -> tuple[str, str, bool]:
    """(colour, words, changed by the simulator) of a map cell covering ``blocks``."""
    missing = [b for b in blocks if b in m.missing]
    areas = [m.flagged[b] for b in blocks if b in m.flagged]
    changed = any(b in m.damaged for b in blocks)
    if missing and len(missing) == len(blocks):
        return MISSING, "missing (cut off the file)", changed
    if areas:
        worst = max(areas, key=lambda a: list(AREA_COLOURS).index(a) * -1 if a in AREA_COLOURS else -99)
        text = AREA_WORDS.get(worst, worst)
        if any(b in m.checksum for b in blocks) and worst != "checksum":
            text += ", checksum failure"
        return AREA_COLOURS.get(worst, "#999"), text, changed
    if changed:
        return DAMAGED_UNFOUND, "damaged, not reported", changed
    return HEALTHY, "healthy", changed


def _svg(r: Result) -> str:
    m = r.block_map
    if m is None or m.nblocks == 0:
        return ""
    step = max(1, -(-m.nblocks // MAX_CELLS))
    cells = -(-m.nblocks // step)
    per_row, size, gap, label = 32, 16, 2, 64
    rows = (cells + per_row - 1) // per_row
    width, height = label + per_row * (size + gap), 16 + rows * (size + gap)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="block map of {html.escape(m.relation)}" font-family="monospace" font-size="9">'
    ]
    for col in range(0, per_row, 8):  # column ticks: the block offset within a row
        parts.append(f'<text x="{label + col * (size + gap)}" y="10" fill="#555">+{col * step}</text>')
    for row in range(rows):  # row labels: the first block of the row
        y = 16 + row * (size + gap)
        parts.append(f'<text x="0" y="{y + size - 4}" fill="#555">block {row * per_row * step}</text>')
    for c in range(cells):
        blocks = range(c * step, min(m.nblocks, (c + 1) * step))
        x, y = label + (c % per_row) * (size + gap), 16 + (c // per_row) * (size + gap)
        colour, what, changed = _cell(m, blocks)
        stroke = ' stroke="#000" stroke-width="2"' if changed else ""
        dash = ' stroke="#888" stroke-dasharray="3,2"' if colour == MISSING else ""
        name = f"block {blocks.start}" if step == 1 else f"blocks {blocks.start}-{blocks.stop - 1}"
        title = f"{name}: {what}" + (" (changed by the simulator)" if changed else "")
        parts.append(
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{colour}"{stroke or dash}>'
            f"<title>{html.escape(title)}</title></rect>"
        )
        if any(b in m.checksum for b in blocks) and colour != AREA_COLOURS["checksum"]:
            # a checksum failure beside another cause: a corner in the checksum colour
            parts.append(
                f'<polygon points="{x + size - 7},{y} {x + size},{y} {x + size},{y + 7}" '
                f'fill="{AREA_COLOURS["checksum"]}"/>'
            )
        if colour != HEALTHY and step == 1 and m.nblocks <= 512:
            ink = "#fff" if colour not in (MISSING, HEALTHY) else "#000"
            parts.append(f'<text x="{x + 2}" y="{y + size - 5}" fill="{ink}" font-size="7">{blocks.start}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _listing(r: Result) -> str:
    """The damaged and reported blocks by number, in words."""
    m = r.block_map
    if m is None:
        return ""
    by_what: dict[str, list[int]] = {}
    for b in sorted(set(m.flagged) | set(m.damaged) | set(m.missing)):
        _colour, what, changed = _cell(m, range(b, b + 1))
        key = what + ("" if changed or what.startswith("missing") else " (not changed by the simulator)")
        if changed and b not in m.flagged and b not in m.missing:
            key = "damaged, not reported"
        by_what.setdefault(key, []).append(b)
    items = []
    for what, blocks in by_what.items():
        shown = ", ".join(str(b) for b in blocks[:40]) + (f" … ({len(blocks)} blocks)" if len(blocks) > 40 else "")
        items.append(f"<li>{html.escape(what)}: block{'s' if len(blocks) > 1 else ''} {shown}</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _messages(r: Result) -> str:
    """What the server and the tools said, in full."""
    o = r.observation
    if o is None:
        return ""
    out = []
    for label, read in (("SELECT *", o.select), ("count(*)", o.count)):
        if read.error:
            out.append(f"<dt>{label}</dt><dd><pre>{html.escape(read.error)}</pre></dd>")
    for label, tool in (("pg_dump", o.pg_dump), ("pg_amcheck", o.amcheck)):
        lines = getattr(tool, "output", None) or ([tool.first_error] if tool.first_error else [])
        if tool.code and lines:
            more = f"\n… {tool.lines - len(lines)} more lines" if tool.lines > len(lines) else ""
            out.append(
                f"<dt>{label} (exit {tool.code})</dt><dd><pre>{html.escape(chr(10).join(lines) + more)}</pre></dd>"
            )
    return f"<details><summary>full messages</summary><dl>{''.join(out)}</dl></details>" if out else ""


def render_html(run: LabRun) -> str:
    legend = "".join(
        f'<span class="key" style="background:{c}"></span>{html.escape(AREA_WORDS[a])} '
        for a, c in AREA_COLOURS.items()
    )
    legend += (
        f'<span class="key" style="background:{HEALTHY}"></span>healthy '
        f'<span class="key" style="background:{DAMAGED_UNFOUND}"></span>damaged, not reported '
        f'<span class="key missing" style="background:{MISSING}"></span>missing (cut off the file); '
        "a black border marks the blocks the simulator changed, a corner a checksum failure beside another cause; "
        "rows are labelled with their first block number"
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for r in run.results:
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in row(r))
        body.append(f"<tr>{cells}</tr>")
    maps = []
    for r in run.results:
        if r.block_map:
            timing = ", ".join(f"{k} {v}s" for k, v in r.timings.items())
            maps.append(
                f"<section><h3>{html.escape(r.scenario.name)} — {html.escape(r.scenario.title)} "
                f"({'checksums on' if r.checksums else 'checksums off'})</h3>"
                f"<p>{html.escape(r.block_map.relation)}, {r.block_map.nblocks} blocks; {html.escape(timing)}</p>"
                f"{_svg(r)}{_listing(r)}{_messages(r)}</section>"
            )
    clusters = "; ".join(f"{html.escape(c['name'])}: PostgreSQL {html.escape(c['version'])}" for c in run.clusters)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pgsurgeon lab report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #bbb; padding: 4px 6px; text-align: left; vertical-align: top; }}
th {{ background: #eee; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 10px; vertical-align: middle; }}
.missing {{ outline: 1px dashed #888; }}
pre {{ white-space: pre-wrap; margin: 0; }}
section {{ margin: 1.5em 0; }}
</style></head><body>
<h1>pgsurgeon lab report</h1>
<p>Seed {run.seed}; {clusters}; total {run.seconds:.0f}s. Every cell records what happened in this run.</p>
<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>
<h2>Block maps</h2><p>{legend}</p>
{"".join(maps)}
</body></html>
"""


def write_reports(run: LabRun) -> dict[str, Path]:
    run.out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "markdown": run.out_dir / "lab-report.md",
        "html": run.out_dir / "lab-report.html",
        "json": run.out_dir / "lab-report.json",
    }
    paths["markdown"].write_text(markdown(run), encoding="utf-8")
    paths["html"].write_text(render_html(run), encoding="utf-8")
    paths["json"].write_text(json.dumps(to_json(run), indent=1, default=str), encoding="utf-8")
    return paths
