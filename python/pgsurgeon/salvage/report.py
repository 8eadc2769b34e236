"""The salvage report for people: what was saved through SQL, what was carved, what is lost and why."""

from __future__ import annotations

from collections import Counter
from typing import Any


def _fmt_seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


def render_text(report: dict[str, Any]) -> str:
    if report.get("already_complete"):
        return f"salvage of {report['table']}: already complete ({report['outputs']})\n"
    b = report["blocks"]
    r = report["rows"]
    sec = report["seconds"]
    lines = [
        f"salvage of {report['table']} ({report['file']}, {b['total']} blocks) -> {report['output']}",
        f"  blocks: {b['healthy']} healthy, {b['damaged']} damaged, {b['zero']} all-zero, {b['missing']} missing; "
        f"{b['carved']} carved (raw pages from: {report['pages_from']})",
        f"  rows saved: {r['saved']} ({r['sql']} through SQL, {r['carved']} carved)",
    ]
    if r["carved_kept_apart"]:
        lines.append(
            f"  carved rows kept apart (uncertain, not in the main output): {r['carved_kept_apart']}"
            + (f" -> {report['outputs'].get('carved_file') or report['outputs'].get('carved_table')}")
        )
    if r["carved_invisible_skipped"]:
        lines.append(
            "  dead tuples seen while carving (deleted, updated or aborted; not saved): "
            f"{r['carved_invisible_skipped']}"
        )
    lines.extend(_account_lines(report))
    lost = [x for x in report["lost"] if not x.get("account")]
    if lost:
        lines.append(f"  lost: {len(lost)}")
        reasons = Counter(x["reason"] for x in lost)
        for reason, n in reasons.most_common(6):
            ctids = [x["ctid"] for x in lost if x["reason"] == reason]
            shown = ", ".join(ctids[:8]) + (" …" if len(ctids) > 8 else "")
            lines.append(f"    {n} x {reason}: {shown}")
    elif not report.get("pages_lost"):
        lines.append("  lost: nothing known")
    maybe = [x for x in report.get("maybe_lost", []) if not x.get("account")]
    if maybe:
        lines.append(f"  maybe lost (index entries point to rows not found; they may have been dead): {len(maybe)}")
        reasons = Counter(x["reason"] for x in maybe)
        for reason, n in reasons.most_common(4):
            ctids = [x["ctid"] for x in maybe if x["reason"] == reason]
            shown = ", ".join(ctids[:8]) + (" …" if len(ctids) > 8 else "")
            lines.append(f"    {n} x {reason}: {shown}")
    fails = report["failures"]
    if fails:
        lines.append(f"  failed reads: {len(fails)} (backend crashes: {report['crashes']})")
        for f in fails[:6]:
            where = f.get("ctid") or (
                f"block {f['blocks'][0]}"
                if f["blocks"][1] - f["blocks"][0] == 1
                else f"blocks {f['blocks'][0]}..{f['blocks'][1] - 1}"
            )
            lines.append(f"    {where}: {f['error']} -> {f['action']}")
        if len(fails) > 6:
            lines.append(f"    … {len(fails) - 6} more in the JSON report")
    copies = report.get("good_copies")
    if copies:
        where = [f"{copies['standbys']} standby(s) stream from this server"] if copies["standbys"] else []
        where += ["WAL archiving is on"] if copies["archiving"] else []
        lines.append(
            f"  good copies: {' and '.join(where)}: repair can restore the damaged pages whole from them instead of "
            "carving (commands below)"
        )
    for n in report["notes"]:
        lines.append(f"  note: {n}")
    lines.append(
        f"  time: {_fmt_seconds(sec['total'])} (classify {_fmt_seconds(sec['classify'])}, "
        f"SQL {_fmt_seconds(sec['sql'])}, "
        f"carve {_fmt_seconds(sec['carve'])})"
    )
    return "\n".join(lines) + "\n"


def _account_lines(report: dict[str, Any]) -> list[str]:
    """The loss account, page by page, in the words scan, diagnose and inspect use."""
    pages = report.get("pages_lost", [])
    if not pages:
        return []
    certain = sum(len(p["certain"]) for p in pages)
    possible = sum(len(p["possible"]) for p in pages)
    out = [f"  rows lost: {certain} certainly gone, {possible} possibly gone, on {len(pages)} page(s)"]
    out += [f"    block {p['block']}: {p['text']}" for p in pages[:20]]
    if len(pages) > 20:
        out.append(f"    … {len(pages) - 20} more page(s) in the JSON report")
    return out
