"""``pgsurgeon salvage``: save every readable row of a damaged table, carving what SQL cannot read."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pgsurgeon import paths
from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term

MAX_JOBS = 64
"""Parallel connections: each is a backend on a server that may be damaged and short of slots."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "salvage",
        help="save every readable row of a damaged table (SQL in TID ranges, carving from raw pages)",
        description="Read a table in TID-range chunks through SQL, in parallel; a chunk that fails is split down "
        "to the block and the block down to single tuples. Blocks whose pages are damaged (checked first, "
        "without the executor, because they can crash the backend) are carved from the raw pages: line pointers "
        "recovered from tuple headers, columns decoded by type, TOAST values reassembled, visibility decided "
        "from hint bits and pg_xact. Never writes to the source table; a rerun resumes.",
    )
    options.add_connection(p)
    options.add_table(p, required=True, help="the table as SQL text (public.orders, '\"My Table\"') or exact name")
    dest = p.add_mutually_exclusive_group(required=True)
    dest.add_argument("--into", metavar="NEW_TABLE", help="save into this new table (and NEW_TABLE_carved)")
    dest.add_argument("--out", type=Path, metavar="DIR", help="save into files in this directory")
    p.add_argument(
        "-F", "--file-format", choices=("copy", "csv"), default="copy", help="file format with --out (default: copy)"
    )
    p.add_argument("--into-dsn", help="with --into: another server or database for the new table")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel connections (default: 2)")
    p.add_argument("--chunk-blocks", type=int, default=0, help="blocks per SQL chunk (default: from the table size)")
    p.add_argument(
        "--files",
        choices=("auto", "local", "remote", "none"),
        default="auto",
        help="where raw pages come from: the data directory when it is local, else pg_read_binary_file (auto); "
        "none reads through SQL only and cannot carve",
    )
    options.add_pgdata(p, env_default=False, help="the server's data directory as seen from here (default: asked)")
    p.add_argument(
        "--no-precheck",
        action="store_true",
        help="send SQL first and carve only what fails or crashes (skips reading the pages beforehand; a damaged "
        "page may then crash the server, which salvage survives)",
    )
    p.add_argument(
        "--deleted",
        action="store_true",
        help="with --out: also write the row versions committed DELETEs and UPDATEs removed and VACUUM has not "
        "reclaimed yet (read through the server's buffers with pageinspect), to TABLE.deleted.copy",
    )
    p.add_argument(
        "--deleted-by",
        type=int,
        metavar="XID",
        help="only the row versions this transaction removed, in its subtransactions too (implies --deleted)",
    )
    p.add_argument(
        "--carve-all",
        action="store_true",
        help="carve every block from the raw pages instead of reading through SQL (a cross-check)",
    )
    p.add_argument("--restart", action="store_true", help="discard the parts of an interrupted salvage in --out")
    p.add_argument("--keep-parts", action="store_true", help="keep the per-chunk part files after finishing")
    options.add_duration(p, "--statement-timeout", default=0, help="per statement")
    p.add_argument("--report", type=Path, metavar="FILE", help="write the JSON report here too")
    # --format names the report on stdout in every command; salvage's older --format copy|csv (now -F) and
    # --report-format are still accepted.
    p.add_argument(
        "--format",
        choices=("text", "json", "copy", "csv"),
        default="text",
        metavar="{text,json}",
        help="report on stdout (default: text)",
    )
    p.add_argument("--report-format", choices=("text", "json"), help=argparse.SUPPRESS)
    options.add_progress(p, help="show progress on stderr (a line every 5 s when not a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.paths import safe_name
    from pgsurgeon.salvage.engine import SalvageOptions, Stats, salvage
    from pgsurgeon.salvage.report import render_text

    if args.format in ("copy", "csv"):  # the old spelling of -F
        args.file_format, args.format = args.format, "text"
    if args.report_format:  # the old spelling of --format
        args.format = args.report_format
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}", hint="each job is one connection")
    if args.chunk_blocks < 0:
        raise UsageError("--chunk-blocks must be 1 or more, or 0 to size the chunks from the table")
    if args.statement_timeout < 0:
        raise UsageError("--statement-timeout must be 0 (none) or more seconds")
    if args.into_dsn and not args.into:
        raise UsageError("--into-dsn needs --into")
    if args.pgdata is not None:
        paths.existing_dir(args.pgdata, "--pgdata")
    if args.out is not None:
        paths.output_dir(args.out, "--out")
    if args.report is not None:
        paths.output_file(args.report, "--report")
    opts = SalvageOptions(
        dsn=args.dsn,
        table=args.table,
        into=args.into,
        into_dsn=args.into_dsn,
        out=args.out,
        fmt=args.file_format,
        jobs=args.jobs,
        chunk_blocks=args.chunk_blocks,
        pgdata=args.pgdata,
        files=args.files,
        restart=args.restart,
        statement_timeout_s=args.statement_timeout,
        keep_parts=args.keep_parts,
        carve_all=args.carve_all,
        precheck=not args.no_precheck,
        deleted=args.deleted,
        deleted_by=args.deleted_by,
    )
    progress: Any = None
    live = term.stderr_is_terminal()
    tick = term.Ticker("salvage")
    if args.progress:

        def progress(s: Stats) -> None:
            import time

            elapsed = max(time.monotonic() - s.started, 1e-6)
            pct = 100.0 * s.blocks_done / max(1, s.blocks_total)
            text = (
                f"{s.blocks_done} of {s.blocks_total} blocks ({pct:.0f}%), {s.rows_sql} rows, "
                f"{s.rows_sql / elapsed:.0f} rows/s, crashes {s.crashes} "
                f"{term.eta(s.blocks_done, s.blocks_total, elapsed)}"
            ).strip()
            if live:
                sys.stderr.write(f"\r{text}   ")
                sys.stderr.flush()
            else:  # a log or a pipe: a line per interval
                tick(text)

    report = salvage(opts, progress)
    if args.progress and live:
        sys.stderr.write("\n")
    text = render_text(report)
    doc = json.dumps(report, indent=1, default=str)
    if args.out is not None:
        base = safe_name(report["table"])
        (args.out / f"{base}.report.json").write_text(doc)
        (args.out / f"{base}.report.txt").write_text(text)
    if args.report is not None:
        args.report.write_text(doc)
    print(doc if args.format == "json" else text, end="" if args.format == "text" else "\n")
    if args.format == "text":
        for line in announce(report, args) + copy_commands(report, args):
            print(line)
    return Exit.CLEAN if report.get("complete") else Exit.DAMAGE


def copy_commands(report: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The repair that restores the pages salvage could only carve from a good copy, when the server shows one."""
    import shlex

    from pgsurgeon.render.findings import copy_steps

    copies = report.get("good_copies")
    if not copies:
        return []
    conn = f" {args.conn_words}" if getattr(args, "conn_words", "") else ""
    table = shlex.quote(str(report.get("table") or args.table))
    return ["restore the damaged pages whole instead (repair, a dry run first):"] + [
        f"  {line}" for line in copy_steps(conn, table, copies)
    ]


def announce(report: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """What salvage left behind, by name, and how to use it: the tables it created, or the command that loads the
    files into a new table."""
    import shlex

    outputs = report.get("outputs") or {}
    conn = f" {args.conn_words}" if getattr(args, "conn_words", "") else ""
    into_conn = conn if not args.into_dsn else " " + options.conn_words(args.into_dsn)
    if args.into:
        lines = ["tables created:"]
        if outputs.get("table"):
            lines.append(f"  {outputs['table']}: the saved rows")
        if outputs.get("carved_table"):
            lines.append(
                f"  {outputs['carved_table']}: carved rows kept apart, with where each came from; check them before "
                "copying any back"
            )
        if outputs.get("progress_table"):
            lines.append(
                f"  {outputs['progress_table']}: salvage's progress, so that a rerun resumes; drop it when done:"
            )
            lines.append(f'    psql{into_conn} -c "DROP TABLE {outputs["progress_table"]}"')
        return lines if len(lines) > 1 else []
    rows_file = outputs.get("rows_file")
    if not rows_file:
        return []
    table = str(report.get("table") or args.table)
    target = table + "_restored" if not table.endswith('"') else table[:-1] + '_restored"'
    opts = " WITH (FORMAT csv, HEADER true)" if args.file_format == "csv" else ""
    path = str(Path(rows_file).resolve()).replace("'", "''")
    create = shlex.quote(f"CREATE TABLE {target} (LIKE {table} INCLUDING ALL)")
    load = shlex.quote(f"\\copy {target} FROM '{path}'{opts}")
    lines = [
        f"files written: {rows_file} (the saved rows)",
        "load them into a new table next to the damaged one:",
        f"  psql{conn} -c {create}",
        f"  psql{conn} -c {load}",
    ]
    if outputs.get("carved_file"):
        lines.append(
            f"rows kept apart (uncertain, with where each came from): {outputs['carved_file']}; check them before "
            "loading any"
        )
    deleted = report.get("deleted")
    if deleted:
        lines.append(
            f"removed row versions: {deleted['rows']} in {deleted['file']} (leading columns: "
            + ", ".join(deleted["columns"][:7])
            + ", then the table's)"
        )
    return lines
