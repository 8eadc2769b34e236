"""``pgsurgeon unload``: every table of a stopped cluster (or one whose server will not start) to files, with a
schema.sql and restore.sql, from the data files alone."""

from __future__ import annotations

import argparse
from pathlib import Path

from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term
from pgsurgeon.unload import UnloadRequest, UnloadResult
from pgsurgeon.unload import run as run_unload


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "unload",
        help="unload every table of a data directory to files, with no server (schema.sql, restore.sql)",
        description="Read the catalog from the data files (relation maps, pg_class, pg_attribute, pg_type…) and "
        "every table's rows with the row engine, visibility from pg_xact. Writes one data file per table, "
        "schema.sql per database, restore.sql (psql -X -v ON_ERROR_STOP=1 -d postgres -f DIR/restore.sql "
        "rebuilds them in a fresh cluster) and report.json/report.txt. Opens everything read-only.",
    )
    p.add_argument(
        "pgdata",
        type=Path,
        metavar="PGDATA|BACKUP",
        help="the data directory (the server stopped), or a base backup read in place (pg_basebackup -Fp directory, or "
        "the directory holding base.tar[.gz|.lz4|.zst])",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new or empty directory for the files")
    p.add_argument("--database", action="append", default=[], help="only this database (repeatable)")
    p.add_argument("--table", action="append", default=[], help="only this table, as schema.table or name (repeatable)")
    p.add_argument("--format", choices=("copy", "csv"), default="copy", help="data file format (default: copy)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="threads carving each table (default: 2)")
    p.add_argument("-P", "--progress", action="store_true", help="show blocks done and ETA on stderr")
    p.add_argument("--pg-version", type=int, help="major version, when pg_control and PG_VERSION cannot say")
    p.add_argument("--block-size", type=int, help="block size in bytes, when pg_control is damaged")
    p.add_argument(
        "--live", action="store_true", help="read although the server runs (rows changed since may be missed)"
    )
    p.set_defaults(func=run)


def request_from_args(args: argparse.Namespace) -> UnloadRequest:
    if not 1 <= args.jobs <= 64:
        raise UsageError("--jobs must be between 1 and 64")
    if args.pg_version is not None and not 10 <= args.pg_version <= 99:
        raise UsageError(
            f"--pg-version {args.pg_version} is not a PostgreSQL major version", hint="e.g. --pg-version 15"
        )
    if args.block_size is not None and args.block_size not in (1024, 2048, 4096, 8192, 16384, 32768):
        raise UsageError("--block-size must be a power of two from 1024 to 32768", hint="the default build uses 8192")
    return UnloadRequest(
        pgdata=args.pgdata,
        out=args.out,
        databases=args.database,
        tables=args.table,
        format=args.format,
        jobs=args.jobs,
        pg_version=args.pg_version,
        block_size=args.block_size,
        live=args.live,
    )


def render(res: UnloadResult) -> None:
    console = term.console()
    console.print(
        f"unloaded {res.rows} rows from {len(res.tables)} tables into {res.out} in {res.seconds:.1f} s"
        + (f"; {res.kept_apart} rows kept apart" if res.kept_apart else ""),
        markup=False,
    )
    for t in res.tables:
        if t.kept_apart or t.lost or t.skipped or t.checksum_failures:
            extra = []
            if t.kept_apart:
                extra.append(f"{t.kept_apart} kept apart in {t.apart_file}")
            if t.checksum_failures:
                extra.append(f"{t.checksum_failures} pages failed their checksum")
            if t.lost:
                extra.append(f"{len(t.lost)} lost")
            if t.skipped:
                extra.append(t.skipped)
            console.print(f"  {t.database}: {t.schema}.{t.name}: " + "; ".join(extra), markup=False)
    for n in res.notes:
        console.print(f"note: {n}", markup=False)
    console.print(
        f"load it into a fresh cluster: psql -X -v ON_ERROR_STOP=1 -d postgres -f {res.out / 'restore.sql'}",
        markup=False,
    )


def run(args: argparse.Namespace) -> int:
    req = request_from_args(args)
    if args.progress:
        with term.transfer_progress(console=term.console(stderr=True), transient=True) as bar:
            task = bar.add_task("unloading", total=None)

            def show(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total or None)

            res = run_unload(req, show)
    else:
        res = run_unload(req)
    render(res)
    return Exit.DAMAGE if res.incomplete else Exit.CLEAN
