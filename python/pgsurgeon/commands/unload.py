"""``pgsurgeon unload``: every table of a stopped cluster (or one whose server will not start) to files, with a
the schema from the cluster's own pg_dump run on a throwaway copy of the catalog, and restore.sql."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon.backup import is_backup
from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term

if TYPE_CHECKING:
    from pgsurgeon.unload import UnloadRequest, UnloadResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "unload",
        help="unload every database of a data directory with no server: rows to files, schema, restore.sql",
        description="Read the catalog from the data files (relation maps, pg_class, pg_attribute, pg_type…) and "
        "every table's rows with the row engine, visibility from pg_xact. Writes one data file per table, "
        "the schema as pg_dump writes it (from a started throwaway copy of the catalog; the original is never "
        "written), restore.sql (psql -X -v ON_ERROR_STOP=1 -d postgres -f DIR/restore.sql "
        "rebuilds them in a fresh cluster) and report.json/report.txt. Opens everything read-only.",
    )
    p.add_argument(
        "source",
        nargs="?",
        type=Path,
        metavar="PGDATA|BACKUP|FILE",
        help="the data directory (the server stopped; or -D, or $PGDATA), a base backup read in place "
        "(pg_basebackup -Fp directory, or the directory holding base.tar[.gz|.lz4|.zst]), or with --layout one "
        "relation file",
    )
    options.add_pgdata(p, env_default=True, help="the data directory, the server stopped", positional="source")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new or empty directory for the files")
    p.add_argument("--database", action="append", default=[], help="only this database (repeatable)")
    options.add_table(p, repeat=True, help="only this table, as schema.table or name")
    p.add_argument(
        "-F", "--file-format", choices=("copy", "csv"), default="copy", help="data file format (default: copy)"
    )
    p.add_argument("-j", "--jobs", type=int, default=2, help="threads carving each table (default: 2)")
    options.add_progress(p, help="show the bytes read and the time left on stderr")
    p.add_argument("--pg-version", type=int, help="major version, when pg_control and PG_VERSION cannot say")
    p.add_argument("--block-size", type=int, help="block size in bytes, when pg_control is damaged")
    p.add_argument(
        "--live", action="store_true", help="read although the server runs (rows changed since may be missed)"
    )
    p.add_argument(
        "--deleted",
        action="store_true",
        help="also write each table's row versions that committed DELETEs and UPDATEs removed and VACUUM has not "
        "reclaimed yet (to <table>.deleted.<format>)",
    )
    p.add_argument(
        "--deleted-by",
        type=int,
        metavar="XID",
        help="only the row versions this transaction removed, in its subtransactions too (implies --deleted)",
    )
    p.add_argument(
        "--catalog-from",
        type=Path,
        metavar="PGDATA|BACKUP",
        help="read the catalog from this copy (an older data directory or base backup) when the cluster's own is "
        "damaged",
    )
    p.add_argument(
        "--schema",
        choices=("pg_dump", "files"),
        default="pg_dump",
        help="pg_dump (default): the schema as the cluster's own pg_dump writes it, taken from a started throwaway "
        "copy of the catalog (functions, views, triggers, constraints, grants…); files: only what unload builds "
        "from the catalog files (tables, types, keys), with no PostgreSQL binaries",
    )
    p.add_argument(
        "--pg-bin",
        type=Path,
        metavar="DIR",
        help="the bin directory of the cluster's PostgreSQL version, for the schema (default: PATH, "
        "/usr/lib/postgresql/N/bin, /usr/pgsql-N/bin, the embedded 18)",
    )
    p.add_argument(
        "--layout",
        metavar="TYPES",
        help="decode FILE with these column types, e.g. 'int4,text,timestamptz' (no catalog needed)",
    )
    p.set_defaults(func=run)


def request_from_args(args: argparse.Namespace) -> UnloadRequest:
    from pgsurgeon.unload import UnloadRequest

    if not 1 <= args.jobs <= 64:
        raise UsageError("--jobs must be between 1 and 64")
    if args.pg_version is not None and not 10 <= args.pg_version <= 99:
        raise UsageError(
            f"--pg-version {args.pg_version} is not a PostgreSQL major version", hint="e.g. --pg-version 15"
        )
    if args.deleted_by is not None and not 3 <= args.deleted_by < 1 << 63:
        raise UsageError("--deleted-by takes a normal transaction id (3 or more)", hint="e.g. from txid_current()")
    if args.block_size is not None and args.block_size not in (1024, 2048, 4096, 8192, 16384, 32768):
        raise UsageError("--block-size must be a power of two from 1024 to 32768", hint="the default build uses 8192")
    return UnloadRequest(
        pgdata=options.require_pgdata(args),
        out=args.out,
        databases=args.database,
        tables=args.table,
        format=args.file_format,
        jobs=args.jobs,
        pg_version=args.pg_version,
        block_size=args.block_size,
        live=args.live,
        deleted=args.deleted,
        deleted_by=args.deleted_by,
        catalog_from=args.catalog_from,
        schema=args.schema,
        pg_bin=args.pg_bin,
    )


def render(res: UnloadResult) -> None:
    term.line(
        f"unloaded {res.rows} rows from {len(res.tables)} tables into {res.out} in {res.seconds:.1f} s"
        + (f"; {res.kept_apart} rows kept apart" if res.kept_apart else ""),
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
            term.line(f"  {t.rel.database}: {t.rel.qualified}: " + "; ".join(extra))
    deleted = [t for t in res.tables if t.deleted_file]
    if deleted:
        total = sum(t.deleted_rows for t in deleted)
        term.line(
            f"removed row versions: {total} (files *.deleted.*, leading columns: block, lp, xmin, xmin_committed_at, "
            "deleted_by, deleted_at, how)",
        )
    _render_schema(res)
    for n in res.notes:
        term.line(f"note: {n}")
    term.line(
        f"load it into a fresh cluster: psql -X -v ON_ERROR_STOP=1 -d postgres -f {res.out / 'restore.sql'}",
    )


def _render_schema(res: UnloadResult) -> None:
    schema = res.schema
    if schema.get("method") == "pg_dump":
        objects = schema.get("objects", {})
        total = sum(sum(kinds.values()) for kinds in objects.values())
        term.line(
            f"schema: {total} objects in {len(objects)} databases, from pg_dump run on a copy of the catalog "
            f"({schema.get('server')}, {schema.get('seconds', 0):.1f} s): restore.sql recreates them",
        )
    elif schema.get("fell_back"):
        term.line(
            f"unload: the schema comes from the files only: {schema.get('why')}; functions, views, triggers, "
            "CHECK constraints, grants and more are not recreated (listed in report.txt)",
            stderr=True,
        )
        if schema.get("hint"):
            term.line(f"hint: {schema['hint']}", stderr=True)


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.unload import run as run_unload

    if args.layout is not None:
        return _run_layout(args)
    if args.pgdata is not None and args.pgdata.is_file() and not is_backup(args.pgdata):
        raise UsageError(f"{args.pgdata} is a file", hint="give --layout 'int4,text,…' to decode one relation file")
    if args.catalog_from is not None and not ((args.catalog_from / "global").is_dir() or is_backup(args.catalog_from)):
        raise UsageError(f"--catalog-from {args.catalog_from} is neither a data directory nor a base backup")
    req = request_from_args(args)

    def say(line: str) -> None:
        term.line(f"pgsurgeon: {line}", stderr=True)

    if args.progress:
        with term.byte_progress("unload") as show:
            res = run_unload(req, show, say)
    else:
        res = run_unload(req, say=say)
    render(res)
    return Exit.DAMAGE if res.incomplete else Exit.CLEAN


def _run_layout(args: argparse.Namespace) -> int:
    from pgsurgeon.unload.layout import run_layout

    if args.pgdata is None or not args.pgdata.is_file():
        raise UsageError("--layout decodes one relation file", hint="pass the file, e.g. PGDATA/base/16384/29724")
    res = run_layout(
        args.pgdata, args.layout, args.out, fmt=args.file_format, jobs=args.jobs, block_size=args.block_size
    )
    term.line(
        f"decoded {res.rows} rows from {args.pgdata} into {res.out / res.file}"
        + (f"; {res.kept_apart} kept apart" if res.kept_apart else "")
        + f" (columns {', '.join(res.columns)})",
    )
    return Exit.DAMAGE if res.kept_apart or res.lost else Exit.CLEAN
