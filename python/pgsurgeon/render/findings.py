"""Findings as people read them: grouped by file or relation, then a summary per code with the server's error
and what to do. Shared by scan and diagnose."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# The fields every finding carries in JSON output (scan; diagnose adds observed_error, source, attnum).
FINDING_FIELDS = (
    "code",
    "area",
    "severity",
    "path",
    "relfilenode",
    "fork",
    "block",
    "item",
    "message",
    "pg_error",
    "remedy",
    "relation",
    "database",
)

# At most this many findings are printed per group; JSON output has all of them.
PER_GROUP = 200


def where(f: dict[str, Any]) -> str:
    """``block 3 lp 7 att 2``, or ``file`` for findings about a whole file."""
    if f.get("block") is None:
        return "file"
    text = f"block {f['block']}"
    if f.get("item") is not None:
        text += f" lp {f['item']}"
    if f.get("attnum") is not None:
        text += f" att {f['attnum']}"
    return text


def print_groups(
    console: Console,
    groups: dict[str, list[dict[str, Any]]],
    *,
    title: Callable[[str, list[dict[str, Any]]], str],
    note: Callable[[dict[str, Any]], str | None] | None = None,
) -> None:
    """Each group under its title, one line per finding; ``note`` adds a dim line under a finding."""
    from rich.markup import escape

    for key, fs in groups.items():
        console.print(f"\n[bold]{escape(title(key, fs))}[/] — {len(fs)} finding(s)")
        for f in fs[:PER_GROUP]:
            colour = "red" if f["severity"] == "error" else "yellow"
            console.print(f"  [{colour}]{f['severity']:7}[/] {where(f):24} {f['code']}: {escape(f['message'])}")
            extra = note(f) if note else None
            if extra:
                console.print(f"          {extra}", style="dim", markup=False)
        if len(fs) > PER_GROUP:
            console.print(f"  … {len(fs) - PER_GROUP} more (use --format json for all)")


def print_code_summary(console: Console, findings: Iterable[dict[str, Any]], errors: int, warnings: int) -> None:
    """How many of each code, with the server's error and the remedy once per code."""
    found = list(findings)
    console.print(f"\n[bold]{errors} error(s), {warnings} warning(s)[/]")
    for code, n in Counter(f["code"] for f in found).most_common():
        example = next(f for f in found if f["code"] == code)
        console.print(f"  {n:6} {code}")
        if example["pg_error"]:
            console.print(f"         server: {example['pg_error']}", style="dim", markup=False)
        console.print(f"         what to do: {example['remedy']}", style="dim", markup=False)


def group_by(findings: Iterable[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        groups.setdefault(str(f.get(key) or ""), []).append(f)
    return groups
