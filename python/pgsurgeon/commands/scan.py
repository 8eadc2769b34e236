"""``pgsurgeon scan``: offline corruption detection over a stopped cluster, a base backup or relation files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.backup import is_backup
from pgsurgeon.commands import options
from pgsurgeon.datadir import find_pgdata
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.findings import Finding
from pgsurgeon.render import findings, jsondoc, term
from pgsurgeon.scan import ScanOutcome, ScanRequest, run_scan

if TYPE_CHECKING:
    from rich.console import Console

MAX_JOBS = 256
"""Scan threads: beyond this many, threads only contend for the disk and memory (one chunk buffer each)."""

CONTROL_FIELDS = (
    "major_version",
    "state",
    "checkpoint",
    "redo",
    "next_xid",
    "oldest_xid",
    "next_multi",
    "oldest_multi",
    "data_checksum_version",
    "blcksz",
    "relseg_size",
    "crc_ok",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scan",
        help="find damaged pages and tuples in a stopped cluster, a base backup or relation files",
        description="Read relation files directly and report every damaged page and tuple: what is wrong, the "
        "error PostgreSQL raises when it reads it, and what to do. Works with or without data checksums.",
    )
    p.add_argument(
        "targets",
        nargs="*",
        type=Path,
        metavar="PGDATA|BACKUP|FILE",
        help="data directory, base backup (pg_basebackup -Fp directory, or the directory holding "
        "base.tar[.gz|.lz4|.zst]), or relation files (default: -D)",
    )
    options.add_pgdata(p, env_default=True, help="the data directory")
    p.add_argument("-j", "--jobs", type=int, help="threads (default: all cores)")
    options.add_progress(p, help="show bytes, MB/s and ETA on stderr (a line every 5 s when not a terminal)")
    options.add_format(p)
    options.add_connection(p, optional=True, purpose="to name relations and know their types")
    p.add_argument("--database", action="append", default=[], help="only this database (name when connected, or OID)")
    options.add_table(
        p,
        repeat=True,
        help="only this relation (name, or relfilenode); a table's name brings its TOAST table and indexes, as "
        "pg_amcheck -t does",
    )
    p.add_argument("--relation", dest="table", action="append", help=argparse.SUPPRESS)  # the old spelling of -t
    p.add_argument(
        "--checksums",
        choices=("auto", "on", "off"),
        default="auto",
        help="verify page checksums (auto: when pg_control says they are enabled)",
    )
    p.add_argument(
        "--live",
        action="store_true",
        help="the server is running: skip pages written after the last checkpoint, re-read mismatches",
    )
    p.set_defaults(func=run)


def check_jobs(jobs: int | None) -> int | None:
    """``-j`` of the commands that read every page on threads: 1 to :data:`MAX_JOBS`, or every core."""
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}", hint="leave it out to use every core")
    return jobs


def request_from_args(args: argparse.Namespace) -> ScanRequest:
    check_jobs(args.jobs)
    targets: list[Path] = args.targets or [options.require_pgdata(args)]
    files: list[Path] = []
    if len(targets) == 1 and (targets[0].is_dir() or is_backup(targets[0])):
        pgdata = targets[0]
    else:
        for t in targets:
            if not t.is_file():
                raise PgSurgeonError(f"no such relation file: {t}", hint="pass one data directory, or relation files")
        found = {find_pgdata(t.resolve().parent) for t in targets}
        if None in found or len(found) != 1:
            raise PgSurgeonError(
                "relation files must all lie inside one data directory",
                hint="the scan needs that directory's global/pg_control for block size and horizons",
            )
        root = found.pop()
        assert root is not None
        pgdata = root
        files = [t.resolve().relative_to(pgdata.resolve()) for t in targets]
    return ScanRequest(
        pgdata=pgdata,
        files=files,
        checksums=args.checksums,
        dsn=args.dsn,
        databases=args.database,
        relations=args.table,
        live=args.live,
        jobs=args.jobs,
    )


def to_json(outcome: ScanOutcome) -> dict[str, Any]:
    return {
        "pgdata": str(outcome.pgdata),
        "control": {k: outcome.control.get(k) for k in CONTROL_FIELDS},
        "summary": outcome.summary,
        "warnings": outcome.warnings,
        "findings": outcome.findings,
        "zero_pages_inside": [{"relation": name, **z} for name, z in outcome.zero_inside_named()],
        **({"backup": outcome.backup} if outcome.backup is not None else {}),
    }


def render_text(outcome: ScanOutcome, console: Console, conn: str = "") -> None:
    s = outcome.summary
    console.print(
        f"scanned {s['files']} files, {s['blocks']} blocks, {s['bytes'] / 1e6:.1f} MB in {s['seconds']:.2f}s "
        f"({s['bytes'] / 1e6 / max(s['seconds'], 1e-6):.0f} MB/s)"
    )
    if s.get("zero_pages_inside"):
        console.print(
            f"{s['zero_pages_inside']} all-zero page(s) before in-use pages: normal after concurrent inserts extend a "
            "table, reported as damage only when the visibility map or an index says rows were there",
            style="dim",
        )
        for line in findings.zero_pages_lines(outcome.zero_inside_named()):
            console.print(f"  {line}", style="dim", markup=False)
    if outcome.backup is not None:
        b = outcome.backup
        m = b["manifest"]
        start = (b.get("label") or {}).get("start_lsn")
        where = f", start LSN {start >> 32:X}/{start & 0xFFFFFFFF:X}" if start is not None else ""
        checked = (
            f"; manifest: {m['files_checked']} files checked ({', '.join(m['algorithms']) or 'NONE'})"
            if m["present"]
            else "; no manifest"
        )
        console.print(f"base backup ({b['form']}){where}{checked}", markup=False)
    if s.get("after_backup_start"):
        console.print(
            f"{s['after_backup_start']} page(s) newer than the backup's start: written while the backup ran, WAL "
            "replay rewrites them (information, not damage; not checked)",
            style="dim",
        )
    _print_truncated(outcome, console)
    if s.get("skipped_live"):
        console.print(f"[yellow]{s['skipped_live']} pages skipped: written after the scan began (--live)[/]")
    if not outcome.findings:
        console.print("[green]no damage found[/]")
        return

    def title(path: str, fs: list[Finding]) -> str:
        rel = fs[0].get("relation")
        return f"{path} ({rel})" if rel else path

    findings.print_groups(
        console,
        findings.group_by(outcome.findings, "path"),
        title=title,
        steps=lambda path, fs: findings.offline_steps(
            str(outcome.pgdata), path, fs, conn, outcome.owners, outcome.findings
        ),
    )
    findings.print_code_summary(console, outcome.findings, s["errors"], s["warnings"])


def _print_truncated(outcome: ScanOutcome, console: Console) -> None:
    """Findings a VACUUM truncation during the copy explains: one line per relation and code, with the first."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in (outcome.backup or {}).get("truncated_while_copied", []):
        groups.setdefault((f["relation"] or str(f["path"]), f["code"]), []).append(f)
    for (rel, code), fs in groups.items():
        line = f"{rel}: {len(fs)} {code} (information, not damage): {fs[0]['message']}"
        console.print(line, style="dim", markup=False)


def run(args: argparse.Namespace) -> int:
    req = request_from_args(args)
    if args.progress:
        with term.byte_progress("scan") as show:
            outcome = run_scan(req, lambda done, total, _pages: show(done, total))
    else:
        outcome = run_scan(req)
    for warning in outcome.warnings:
        term.console(stderr=True).print(f"pgsurgeon: warning: {warning}", markup=False, soft_wrap=True)
    if args.format == "json":
        print(jsondoc.dumps(to_json(outcome)))
    else:
        render_text(outcome, term.console(), conn=args.conn_words)
    return Exit.DAMAGE if outcome.summary["errors"] else Exit.CLEAN
