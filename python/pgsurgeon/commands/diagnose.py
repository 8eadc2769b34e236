"""``pgsurgeon diagnose``: find every damaged block and tuple of a live database through SQL, read-only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pgsurgeon import paths
from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import findings, jsondoc, term

if TYPE_CHECKING:
    from rich.console import Console

    from pgsurgeon.diagnose import DiagnoseOutcome

MAX_JOBS = 64
"""Parallel connections: each is a backend on a server that may be damaged and short of slots."""


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
    options.add_connection(p)
    options.add_table(
        p,
        repeat=True,
        help="only this table, materialized view, partitioned table or index (SQL text like 'sales.\"Orders\"' or "
        "the exact name); default: every table of the database",
    )
    p.add_argument("-j", "--jobs", type=int, default=1, help="connections to check with in parallel (default: 1)")
    p.add_argument(
        "--heapallindexed",
        action="store_true",
        help="also verify that every row is in each btree index, as amcheck's heapallindexed (from the files when "
        "they are here and settle it, through the server otherwise; only over tables with no damage)",
    )
    options.add_duration(p, "--statement-timeout", default=600, help="per statement")
    options.add_duration(p, "--lock-timeout", default=2, help="wait for a lock at most")
    options.add_pgdata(
        p, env_default=False, help="where the server's data directory is on this host, if not at its own path"
    )
    p.add_argument(
        "--no-files",
        action="store_true",
        help="never read the data directory, even when it is on this host (SQL only)",
    )
    options.add_progress(p, help="say on stderr what is being checked")
    options.add_format(p)
    p.set_defaults(func=run)


def to_json(outcome: DiagnoseOutcome) -> dict[str, Any]:
    return {
        "server": outcome.server,
        "summary": outcome.summary,
        "relations": outcome.relations,
        "findings": outcome.findings,
    }


def render_text(outcome: DiagnoseOutcome, console: Console, conn: str = "") -> None:
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

    owners = {str(r["relation"]): str(r["table"]) for r in outcome.relations}
    findings.print_groups(
        console,
        findings.group_by(outcome.findings, "relation"),
        title=title,
        note=observed,
        steps=lambda rel, fs: findings.next_steps(rel, fs, conn, outcome.findings, owners.get(rel), outcome.server),
    )
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
        limits=Limits(
            statement_timeout_ms=int(args.statement_timeout * 1000), lock_timeout_ms=int(args.lock_timeout * 1000)
        ),
        on_progress=progress,
    )
    outcome = run_diagnose(req)
    if args.format == "json":
        print(jsondoc.dumps(to_json(outcome), default=str))
    else:
        render_text(outcome, term.console(), conn=args.conn_words)
    return Exit.DAMAGE if outcome.summary["errors"] else Exit.CLEAN
