"""``pgsurgeon dump-tables``: one pg_dump per table, in parallel, past failures, with a log per table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pgsurgeon import paths
from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit

MAX_JOBS = 64
"""pg_dump processes at once: each holds a server connection, and a damaged server has few to spare."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dump-tables",
        help="pg_dump every table on its own, in parallel, so one damaged table does not stop the rest",
        description="Run one pg_dump per table (custom format by default) with N in parallel, a log per table and "
        "a summary of what was saved and what failed. Dumps that lose their connection because another table "
        "crashed the server are retried one at a time once it is back. Also dumps the schema on its own.",
    )
    options.add_connection(p)
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="directory for the dumps and logs")
    p.add_argument("-j", "--jobs", type=int, default=2, help="pg_dump processes at once (default: 2)")
    p.add_argument("--pg-bin", type=Path, help="directory (or path) of the pg_dump to use (default: found)")
    p.add_argument(
        "-F",
        "--file-format",
        choices=("custom", "plain", "tar"),
        default="custom",
        help="pg_dump's file format (default: custom)",
    )
    p.add_argument(  # the old spelling of -F
        "--dump-format",
        dest="file_format",
        choices=("custom", "plain", "tar"),
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    options.add_table(p, repeat=True, help="only tables matching this glob (schema.name)")
    p.add_argument("--exclude", action="append", default=[], help="skip tables matching this glob")
    p.add_argument("--no-schema", action="store_true", help="do not dump the whole schema to schema.sql")
    p.add_argument("--retries", type=int, default=2, help="rounds of retrying dumps that lost their connection")
    options.add_duration(p, "--timeout", default=0, help="per table")
    options.add_format(p, help="summary on stdout (default: text)")
    p.add_argument("-P", "--progress", action="store_true", help="one line per finished table on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.salvage.dump import Dumper, DumpOptions, TableDump, render_text

    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}", hint="each job is one pg_dump and one connection")
    paths.output_dir(args.out, "--out")
    opts = DumpOptions(
        dsn=args.dsn,
        out=args.out,
        jobs=args.jobs,
        pg_dump=args.pg_bin,
        fmt=args.file_format,
        schema=not args.no_schema,
        include=args.table,
        exclude=args.exclude,
        retries=args.retries,
        timeout_s=args.timeout,
    )

    def event(td: TableDump) -> None:
        if args.progress:
            print(f"{td.status:>6} {td.display} ({td.seconds:.1f} s)", file=sys.stderr, flush=True)

    summary = Dumper(opts).run(event)
    if args.format == "json":
        print(json.dumps(summary, indent=1))
    else:
        print(render_text(summary), end="")
    return Exit.CLEAN if summary["failed"] == 0 else Exit.DAMAGE
