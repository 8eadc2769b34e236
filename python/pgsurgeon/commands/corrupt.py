"""``pgsurgeon corrupt``: damage chosen parts of a lab cluster's files, seeded, recorded and undoable.

Every mode and the symptom it produces on PostgreSQL 15 and 18 is in docs/corruption-modes.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pgsurgeon import simulate
from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.simulate.modes import MODES, TARGETS, modes_help


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "corrupt",
        help="damage a lab cluster's pages on purpose (seeded, recorded, undoable)",
        description="Damage chosen parts of a relation's files in a lab cluster, to reproduce the errors real\n"
        "corruption causes. Choose the relation with a connection (-d, -h, -p, -U) and -t (its TOAST table\n"
        "or an index with --target) or with -D and --file. The modes control, wal, xact, subtrans, multixact,\n"
        "relmap and orphan-file damage the cluster's own files: -D alone (--file picks a segment).\n"
        "Every change goes into a manifest first; 'pgsurgeon undo\n"
        "MANIFEST' puts the bytes back. A running lab cluster is stopped and started again around the\n"
        "write, so the server sees the damage.",
        epilog="modes:\n"
        + modes_help()
        + "\n\nsymptoms of each mode on PostgreSQL 15 and 18: docs/corruption-modes.md",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("mode", choices=list(MODES), metavar="MODE", help="what to damage (list below)")
    p.add_argument("--field", help="the part of the structure to damage (each mode lists its fields; default: first)")
    where = p.add_argument_group("target")
    options.add_connection(p, optional=True, purpose="of the server holding the table")
    options.add_table(where, help="relation name as SQL text, e.g. public.orders (a table or an index)")
    where.add_argument(
        "--target",
        choices=TARGETS,
        help="with --table: damage the table, its TOAST table or TOAST index, or an index "
        "(default: toast for mode toast, index for mode btree, else the table)",
    )
    where.add_argument("--index", metavar="NAME", help="with --target index: which index (default: the primary key)")
    options.add_pgdata(p, env_default=False, help="data directory, with --file instead of a connection and -t")
    where.add_argument(
        "--file",
        type=Path,
        help="relation file relative to --pgdata, e.g. base/5/16384 (bookkeeping modes: the segment, e.g. "
        "pg_xact/0000, or for orphan-file the database directory)",
    )
    where.add_argument(
        "--kind",
        choices=("heap", "btree", "gin", "gist", "spgist", "hash", "brin"),
        help="with --file: the page kind (default: guessed)",
    )
    choose = p.add_argument_group("what to damage")
    choose.add_argument("--block", type=int, help="block number, counted across segments (default: seeded random)")
    choose.add_argument("--item", type=int, help="line pointer (offset number from 1) in --block (default: random)")
    choose.add_argument("--segment", type=int, help="missing-segment: the segment number (default: the last)")
    choose.add_argument("--count", type=int, default=1, help="blocks, tuples or bit flips to damage (default: 1)")
    choose.add_argument("--seed", type=int, help="seed for every random choice and byte (default: a random one)")
    choose.add_argument("--value", help="exact value to write instead of a random one: a number, or BLOCK,OFFSET")
    choose.add_argument("--column", help="tuple-data varlena: the column to damage (default: random)")
    choose.add_argument("--length", type=int, help="bytes of random data for the random-bytes fields")
    choose.add_argument("--flips", type=int, help="tuple-data bitflip: bits to flip per tuple (default: 1)")
    choose.add_argument(
        "--tear-at",
        type=int,
        metavar="BYTES",
        help="torn: where the other copy starts (default: half a page); "
        "truncate: keep this many bytes of the cut block",
    )
    choose.add_argument("--source-block", type=int, help="torn/misdirected: the block the bytes come from")
    choose.add_argument("--source-file", type=Path, help="torn: an older copy of the relation file to take bytes from")
    choose.add_argument(
        "--clear-hints",
        action="store_true",
        help="t_xmin/t_xmax: also clear that XID's hint bits (damage "
        "from before the hint bits were set, so the server looks the XID up)",
    )
    p.add_argument(
        "--keep-checksum-valid",
        action="store_true",
        help="recompute the page checksum after the damage (as if it happened in memory before the write); "
        "default: keep the stored checksum, like damage on disk",
    )
    p.add_argument("--dry-run", action="store_true", help="show what would change and write nothing")
    p.add_argument("--force-non-lab", action="store_true", help="damage a data directory without the lab marker")
    p.add_argument("--manifest", type=Path, help="where to write the manifest (default: <lab>/corruptions/…json)")
    options.add_format(p, help="json: print the manifest")
    p.set_defaults(func=run)


def _parse_value(text: str | None) -> tuple[int | None, tuple[int, int] | None]:
    if text is None:
        return None, None
    try:
        if "," in text:
            block, offset = (int(x.strip().strip("()"), 0) for x in text.split(","))
            if not (0 <= block <= 0xFFFFFFFF and 0 <= offset <= 0xFFFF):
                raise ValueError
            return None, (block, offset)
        value = int(text, 0)
    except ValueError:
        raise UsageError(
            f"--value {text!r} is not a number or BLOCK,OFFSET",
            hint="e.g. --value 3000000000, --value 0x3FFFFFFF or --value 12,3",
        ) from None
    if not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise UsageError(f"--value {text} is out of range", hint="values are unsigned, 64 bits at most")
    return value, None


def _request(args: argparse.Namespace) -> simulate.SimulateRequest:
    value, tid = _parse_value(args.value)
    return simulate.SimulateRequest(
        mode=args.mode,
        field=args.field,
        dsn=args.dsn,
        table=args.table,
        target=args.target,
        index=args.index,
        pgdata=args.pgdata,
        file=args.file,
        kind=args.kind,
        block=args.block,
        item=args.item,
        segment=args.segment,
        count=args.count,
        seed=args.seed,
        value=value,
        tid=tid,
        column=args.column,
        length=args.length,
        flips=args.flips,
        tear_at=args.tear_at,
        source_block=args.source_block,
        source_file=args.source_file,
        clear_hints=args.clear_hints,
        keep_checksum_valid=args.keep_checksum_valid,
        dry_run=args.dry_run,
        force_non_lab=args.force_non_lab,
        manifest=args.manifest,
    )


def run(args: argparse.Namespace) -> int:
    if args.table and args.dsn is None:
        args.dsn = options.build_conninfo()  # no connection option: libpq's PG* variables and defaults
    req = _request(args)
    out = sys.stderr if args.format == "json" else sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    result = simulate.run(req, say)
    if not req.dry_run:
        say(f"manifest: {result.manifest.path}")
        say(f"undo with: pgsurgeon undo {result.manifest.path}")
    if args.format == "json":
        # a dry run has no side file for the bytes it would write: its plan shows them inline
        print(json.dumps(result.manifest.to_json(with_bytes=req.dry_run), indent=2))
    return Exit.CLEAN
