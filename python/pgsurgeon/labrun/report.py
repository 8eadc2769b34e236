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


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _found(d: dict[str, Any]) -> str:
    if not d:
        return "-"
    if not d.get("found"):
        return "nothing"
    codes = ", ".join(d.get("codes", []))
    return f"{d['errors']} error(s): {codes}"


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


def print_matrix(run: LabRun, console: Any) -> None:
    from pgsurgeon.render import term

    t = term.table(*COLUMNS, title=f"pgsurgeon lab — seed {run.seed}, {run.seconds:.0f}s", show_lines=True)
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


def _svg(r: Result) -> str:
    m = r.block_map
    if m is None or m.nblocks == 0:
        return ""
    per_row, size, gap = 32, 14, 2
    rows = (m.nblocks + per_row - 1) // per_row
    width, height = per_row * (size + gap), rows * (size + gap)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="block map of {html.escape(m.relation)}">'
    ]
    for b in range(m.nblocks):
        x, y = (b % per_row) * (size + gap), (b // per_row) * (size + gap)
        area = m.flagged.get(b)
        colour = AREA_COLOURS.get(area, "#999") if area else (DAMAGED_UNFOUND if b in m.damaged else HEALTHY)
        stroke = ' stroke="#000" stroke-width="2"' if b in m.damaged else ""
        title = f"block {b}" + (f": {area}" if area else "") + (" (damaged by the simulator)" if b in m.damaged else "")
        parts.append(
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{colour}"{stroke}>'
            f"<title>{html.escape(title)}</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render_html(run: LabRun) -> str:
    legend = "".join(
        f'<span class="key" style="background:{c}"></span>{html.escape(a)} ' for a, c in AREA_COLOURS.items()
    )
    legend += (
        f'<span class="key" style="background:{HEALTHY}"></span>healthy '
        f'<span class="key" style="background:{DAMAGED_UNFOUND}"></span>damaged, not reported; '
        "a black border marks the blocks the simulator changed"
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
                f"{_svg(r)}</section>"
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
