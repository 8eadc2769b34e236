"""``pgsurgeon diagnose``: find every damaged block and tuple of a live database through SQL, read-only."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import paths
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import findings, term

if TYPE_CHECKING:
    from rich.console import Console

    from pgsurgeon.diagnose import DiagnoseOutcome

MAX_JOBS = 64
"""Parallel connections: each is a backend on a server that may be damaged and short of slots."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|min)?$")


def _duration_ms(text: str) -> int:
    m = _DURATION.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 500ms, 30s, 10min)")
    value, unit = float(m.group(1)), m.group(2) or "s"
    return int(value * {"ms": 1, "s": 1000, "min": 60_000}[unit])


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diagnose",
        help="find every damaged block and tuple of a live database through SQL (read-only, safe under load)",
        description="Check tables, their TOAST tables and btree indexes on a running server: every page is read raw "
        "and decoded by pgsurgeon first (so damaged pages never reach the executor), then amcheck's verify_heapam "
        "runs over the pages the server accepts and bt_index_check over the indexes. Where amcheck stops at an "
        "ERROR, the range is bisected to the failing blocks and the rest is checked. When the data directory is on "
        "this host, pages the server refuses are decoded from the files and the offline scan is merged. Needs the "
        "amcheck and pageinspect extensions and a superuser (or grants on their functions).",
    )
    p.add_argument("--dsn", required=True, help="connection string of the database to check")
    p.add_argument(
        "--table",
        action="append",
        default=[],
        help="only this table, materialized view, partitioned table or index (repeatable; SQL text like "
        "'sales.\"Orders\"' or the exact name); default: every table of the database",
    )
    p.add_argument("-j", "--jobs", type=int, default=1, help="connections to check with in parallel (default: 1)")
    p.add_argument(
        "--heapallindexed",
        action="store_true",
        help="also verify that every row is in each btree index (reads the table; only over tables with no damage)",
    )
    p.add_argument(
        "--statement-timeout", type=_duration_ms, default=600_000, metavar="DURATION", help="per statement (10min)"
    )
    p.add_argument(
        "--lock-timeout", type=_duration_ms, default=2_000, metavar="DURATION", help="wait for a lock at most (2s)"
    )
    p.add_argument(
        "--pgdata", type=Path, help="where the server's data directory is on this host, if not at its own path"
    )
    p.add_argument(
        "--no-files",
        action="store_true",
        help="never read the data directory, even when it is on this host (SQL only)",
    )
    p.add_argument("-P", "--progress", action="store_true", help="say on stderr what is being checked")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def to_json(outcome: DiagnoseOutcome) -> dict[str, Any]:
    return {
        "server": outcome.server,
        "summary": outcome.summary,
        "relations": outcome.relations,
        "findings": outcome.findings,
    }


def render_text(outcome: DiagnoseOutcome, console: Console) -> None:
    from rich.markup import escape

    s, srv = outcome.summary, outcome.server
    console.print(
        f"diagnosed database {s['database']} on PostgreSQL {srv['version']} (checksums "
        f"{'on' if srv['checksums'] else 'off'}): {s['relations']} relation(s), {s['blocks']} block(s) in "
        f"{s['seconds']:.2f}s"
    )
    console.print(
        "data directory on this host: refused pages decoded from the files, offline scan merged"
        if s["files_used"]
        else "data directory not on this host: pages the server refuses are named, not decoded",
        style="dim",
    )
    if s["crashes"] or s["amcheck_stopped"]:
        console.print(f"[red]{s['crashes']} backend(s) lost during the checks; {s['amcheck_stopped'] or ''}[/]")
    t = term.table("relation", "role", "blocks", "refused", "amcheck", "errors", "damaged blocks", title="relations")
    for r in outcome.relations:
        if not (r["errors"] or r["warnings"] or r["role"] == "table" or r["amcheck"] not in ("ok", "empty")):
            continue
        blocks = r["damaged_blocks"]
        shown = ", ".join(str(b) for b in blocks[:12]) + (f" … ({len(blocks)})" if len(blocks) > 12 else "")
        colour = "red" if r["errors"] else "green"
        t.add_row(
            escape(r["relation"]),
            r["role"],
            str(r["blocks"]),
            str(len(r["pages_refused"])),
            r["amcheck"],
            f"[{colour}]{r['errors']}[/]",
            shown,
        )
    console.print(t)
    for r in outcome.relations:
        for text in r["notes"]:
            console.print(f"note: {r['relation']}: {text}", style="yellow", markup=False)
    if not outcome.findings:
        console.print("[green]no damage found[/]")
        return

    def title(rel: str, fs: list[dict[str, Any]]) -> str:
        return f"{rel} ({fs[0]['path']})"

    def observed(f: dict[str, Any]) -> str | None:
        seen = f["observed_error"]
        return f"server said: {seen}" if seen and seen not in f["message"] else None

    findings.print_groups(console, findings.group_by(outcome.findings, "relation"), title=title, note=observed)
    findings.print_code_summary(console, outcome.findings, s["errors"], s["warnings"])


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.diagnose import DiagnoseRequest, Limits, run_diagnose

    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}", hint="each job is one connection")
    if args.pgdata is not None:
        paths.existing_dir(args.pgdata, "--pgdata")
    progress = None
    if args.progress:
        err = term.console(stderr=True)

        def progress(text: str) -> None:
            err.print(f"diagnose: {text}", style="dim", markup=False)

    req = DiagnoseRequest(
        dsn=args.dsn,
        tables=args.table,
        jobs=args.jobs,
        heapallindexed=args.heapallindexed,
        use_files=not args.no_files,
        pgdata=args.pgdata,
        limits=Limits(statement_timeout_ms=args.statement_timeout, lock_timeout_ms=args.lock_timeout),
        on_progress=progress,
    )
    outcome = run_diagnose(req)
    if args.format == "json":
        print(json.dumps(to_json(outcome), indent=1, default=str))
    else:
        render_text(outcome, term.console())
    return Exit.DAMAGE if outcome.summary["errors"] else Exit.CLEAN
