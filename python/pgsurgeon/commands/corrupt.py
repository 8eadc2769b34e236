"""``pgsurgeon corrupt``: damage chosen parts of a lab cluster's files, seeded, recorded and undoable.

Every mode and the symptom it produces on PostgreSQL 15 and 18 is in docs/corruption-modes.md.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.lab.marker import is_lab_cluster, read_lab_marker, utc_now
from pgsurgeon.simulate import apply as applying
from pgsurgeon.simulate.manifest import Manifest, default_path
from pgsurgeon.simulate.modes import MODES, TARGETS, UNIT_FILE, UNIT_ITEM, UNIT_PAGE, modes_help
from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan
from pgsurgeon.simulate.server import lab_cluster_for, postmaster_pid, server_stopped
from pgsurgeon.simulate.target import Resolved, checkpoint, from_dsn, from_file

MAX_SEED = 2**64 - 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "corrupt",
        help="damage a lab cluster's pages on purpose (seeded, recorded, undoable)",
        description="Damage chosen parts of a relation's files in a lab cluster, to reproduce the errors real\n"
        "corruption causes. Choose the relation with --dsn and --table (its TOAST table or an index with\n"
        "--target) or with --pgdata and --file. Every change goes into a manifest first; 'pgsurgeon undo\n"
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
    where.add_argument("--dsn", help="connection string of the server holding the table")
    where.add_argument("--table", help="relation name as SQL text, e.g. public.orders (a table or an index)")
    where.add_argument(
        "--target",
        choices=TARGETS,
        help="with --table: damage the table, its TOAST table or TOAST index, or an index "
        "(default: toast for mode toast, index for mode btree, else the table)",
    )
    where.add_argument("--index", metavar="NAME", help="with --target index: which index (default: the primary key)")
    where.add_argument("--pgdata", type=Path, help="data directory, with --file instead of --dsn/--table")
    where.add_argument("--file", type=Path, help="relation file relative to --pgdata, e.g. base/5/16384")
    where.add_argument("--kind", choices=("heap", "btree"), help="with --file: the page kind (default: guessed)")
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
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: print the manifest")
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


def _check_args(args: argparse.Namespace) -> None:
    mode = MODES[args.mode]
    by_sql = args.dsn is not None or args.table is not None
    by_file = args.pgdata is not None or args.file is not None
    if by_sql == by_file or (by_sql and not (args.dsn and args.table)) or (by_file and not (args.pgdata and args.file)):
        raise UsageError(
            "name the relation with --dsn and --table, or with --pgdata and --file",
            hint="e.g. pgsurgeon corrupt zero --dsn 'host=… dbname=…' --table public.t",
        )
    if by_file and (args.target or args.index):
        raise UsageError("--target and --index go with --table", hint="with --file, pass the file to damage")
    if args.kind and not by_file:
        raise UsageError("--kind goes with --file")
    if args.count < 1:
        raise UsageError("--count must be 1 or more")
    for name in ("block", "item", "segment", "length", "flips", "tear_at", "source_block"):
        v = getattr(args, name)
        if v is not None and v < (1 if name in ("item", "length", "flips", "tear_at") else 0):
            raise UsageError(f"--{name.replace('_', '-')} {v} is out of range")
    if args.field is not None and args.field not in mode.fields:
        raise UsageError(
            f"mode {mode.name} has no field {args.field}",
            hint=f"its fields: {', '.join(mode.fields)}" if mode.fields else f"mode {mode.name} takes no --field",
        )
    field = args.field or mode.default_field()
    unit = mode.unit_for(field)
    if args.item is not None and unit != UNIT_ITEM:
        raise UsageError(f"mode {mode.name}{' field ' + field if field else ''} damages pages, not items: drop --item")
    if args.item is not None and args.block is None:
        raise UsageError("--item needs --block", hint="line pointer numbers are per page")
    if args.segment is not None and mode.name != "missing-segment":
        raise UsageError("--segment goes with mode missing-segment", hint="other modes take --block")
    if (args.source_block is not None or args.source_file is not None) and mode.name not in ("torn", "misdirected"):
        raise UsageError("--source-block and --source-file go with modes torn and misdirected")
    if args.source_file is not None and mode.name != "torn":
        raise UsageError("--source-file goes with mode torn", hint="misdirected takes --source-block")
    if args.tear_at is not None and mode.name not in ("torn", "truncate"):
        raise UsageError("--tear-at goes with modes torn and truncate")
    if args.clear_hints and not (mode.name == "tuple-header" and field in ("t_xmin", "t_xmax")):
        raise UsageError("--clear-hints goes with mode tuple-header and field t_xmin or t_xmax")
    if args.keep_checksum_valid and mode.name == "checksum":
        raise UsageError("mode checksum with --keep-checksum-valid would change nothing")
    if args.keep_checksum_valid and mode.unit == UNIT_FILE:
        raise UsageError(f"mode {mode.name} changes no page: --keep-checksum-valid does not apply")
    if args.column is not None and not (mode.name == "tuple-data" and field == "varlena" and by_sql):
        raise UsageError("--column goes with tuple-data --field varlena and --dsn/--table")
    value, tid = _parse_value(args.value)
    if value is not None and field not in mode.value_fields:
        what = f"mode {mode.name}" + (f" field {field}" if field else "")
        raise UsageError(
            f"{what} takes no --value" + (" number" if field in mode.tid_fields else ""),
            hint="it writes random bytes; pass --seed to repeat them"
            if field not in mode.tid_fields
            else "pass the TID as --value BLOCK,OFFSET",
        )
    if tid is not None and field not in mode.tid_fields:
        raise UsageError(
            "--value BLOCK,OFFSET goes with tuple-header --field t_ctid and btree --field item",
            hint="other fields take a number",
        )
    if unit == UNIT_PAGE and args.block is not None and args.count > 1:
        raise UsageError(
            f"--count {args.count} with --block: mode {mode.name} damages one page per block",
            hint="drop --block to damage several random pages",
        )
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise UsageError("--seed must be between 0 and 2**64-1")


def _resolve(args: argparse.Namespace) -> Resolved:
    mode = MODES[args.mode]
    if args.table:
        return from_dsn(args.dsn, args.table, args.target or mode.default_target, args.index)
    return from_file(args.pgdata, args.file, args.kind)


def _refuse_non_lab(pgdata: Path, force: bool) -> dict[str, Any] | None:
    """The lab marker of ``pgdata``; refuses a directory without one unless ``force``."""
    if is_lab_cluster(pgdata):
        marker = read_lab_marker(pgdata)
        return {"name": marker.get("name"), "id": marker.get("id")}
    if not force:
        raise PgSurgeonError(
            f"{pgdata} is not a pgsurgeon lab cluster (no lab marker): refusing to damage it",
            hint="pgsurgeon damages only clusters made by 'pgsurgeon lab up'; --force-non-lab overrides this "
            "for a copy you can afford to lose",
        )
    return None


def _request(args: argparse.Namespace, res: Resolved, seed: int) -> CorruptRequest:
    value, tid = _parse_value(args.value)
    attnum = None
    if args.column is not None:
        cols = {a["attname"]: a["attnum"] for a in res.relation.attrs or [] if not a["attisdropped"]}
        if args.column not in cols:
            raise UsageError(
                f"{res.relation.name} has no column {args.column}", hint="columns: " + ", ".join(cols) or "none"
            )
        attnum = int(cols[args.column])
    return CorruptRequest(
        mode=args.mode,
        field=args.field,
        block=args.block,
        item=args.item,
        segment=args.segment,
        count=args.count,
        seed=seed,
        value=value,
        tid=tid,
        attnum=attnum,
        length=args.length,
        flips=args.flips,
        tear_at=args.tear_at,
        source_block=args.source_block,
        source_file=args.source_file,
        clear_hints=args.clear_hints,
        keep_checksum_valid=args.keep_checksum_valid,
    )


def _header(args: argparse.Namespace, req: CorruptRequest, plan: Plan, lab: dict[str, Any] | None) -> dict[str, Any]:
    res = plan.resolved
    try:
        major = (res.pgdata / "PG_VERSION").read_text(encoding="utf-8").strip()
    except OSError:
        major = None
    options = {
        k: v
        for k, v in {
            "block": req.block,
            "item": req.item,
            "segment": req.segment,
            "value": req.value,
            "tid": list(req.tid) if req.tid else None,
            "attnum": req.attnum,
            "length": req.length,
            "flips": req.flips,
            "tear_at": req.tear_at,
            "source_block": req.source_block,
            "source_file": str(req.source_file) if req.source_file else None,
            "clear_hints": req.clear_hints or None,
        }.items()
        if v is not None
    }
    return {
        "created_at": utc_now(),
        "pgdata": str(res.pgdata),
        "lab": lab,
        "force_non_lab": lab is None,
        "postgresql_major": major,
        "checksums": res.geometry.checksums,
        "blcksz": res.geometry.blcksz,
        "relseg_size": res.geometry.relseg_size,
        "mode": plan.mode.name,
        "field": plan.field,
        "seed": req.seed,
        "count": req.count,
        "keep_checksum_valid": req.keep_checksum_valid and bool(res.geometry.checksums),
        "options": options,
        "relation": {
            "name": res.relation.name,
            "role": res.relation.role,
            "kind": res.relation.kind,
            "file": res.relpath(res.relation.path),
            "nblocks": plan.nblocks,
        },
        "notes": plan.lines,
        "warnings": plan.warnings,
    }


def _print_plan(plan: Plan, req: CorruptRequest, say: Any) -> None:
    res = plan.resolved
    rel = res.relation
    what = plan.mode.name + (f" (field {plan.field})" if plan.field else "")
    say(f"corrupt {what}, seed {req.seed}")
    checks = "on" if res.geometry.checksums else "off"
    say(
        f"target: {rel.name} ({rel.role}, {rel.kind or 'other'} pages) -> {res.relpath(rel.path)}, "
        f"{plan.nblocks} block(s); data checksums {checks}"
    )
    for line in plan.lines:
        say(f"  {line}")
    for w in plan.warnings:
        say(f"note: {w}")
    if res.geometry.checksums and plan.unit != UNIT_FILE and plan.mode.name != "checksum":
        if req.keep_checksum_valid:
            say("checksums recomputed: only the structural damage shows")
        else:
            say("stored checksums left as they were (damage on disk): expect checksum failures")


def _apply(
    args: argparse.Namespace, res: Resolved, req: CorruptRequest, lab: dict[str, Any] | None, say: Any
) -> Manifest:
    pgdata = res.pgdata
    lab_cluster = lab_cluster_for(pgdata)
    stamp = utc_now().replace(":", "").replace("-", "").replace("+0000", "Z")
    path = args.manifest or default_path(pgdata, lab_cluster.lab_dir if lab_cluster else None, stamp, req.mode)
    if path.exists():
        raise UsageError(f"manifest {path} already exists", hint="pass another --manifest or leave it out")
    with server_stopped(pgdata, say):
        plan = make_plan(req, res)
        _print_plan(plan, req, say)
        manifest = Manifest(path.absolute(), _header(args, req, plan, lab), plan.changes, plan.pages)
        applying.apply(manifest, say)
    return manifest


def corrupt(argv: list[str], say: Any = None) -> Manifest:
    """Apply ``pgsurgeon corrupt ARGV`` (without the command word) and return its manifest; for callers
    that compose the simulator (the end-to-end lab). ``say`` receives the progress lines."""
    from pgsurgeon.cli import get_parser

    args = get_parser().parse_args(["corrupt", *argv])
    _check_args(args)
    res = _resolve(args)
    lab = _refuse_non_lab(res.pgdata, args.force_non_lab)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    return _apply(args, res, _request(args, res, seed), lab, say or (lambda _text: None))


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    out = sys.stderr if args.format == "json" else sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    res = _resolve(args)
    pgdata = res.pgdata
    lab = _refuse_non_lab(pgdata, args.force_non_lab)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    req = _request(args, res, seed)
    if args.dry_run:
        if res.dsn is not None and postmaster_pid(pgdata) is not None:
            checkpoint(res.dsn)  # so the files hold what the buffers hold
        plan = make_plan(req, res)
        _print_plan(plan, req, say)
        if postmaster_pid(pgdata) is not None:
            say("note: the server is running; the real run stops it first and reads the files then")
        say(f"dry run: {len(plan.changes)} change(s) planned, nothing written")
        if args.format == "json":
            doc = Manifest(Path("-"), {**_header(args, req, plan, lab), "state": "planned"}, plan.changes, plan.pages)
            print(json.dumps(doc.to_json(), indent=2))
        return 0
    manifest = _apply(args, res, req, lab, say)
    say(f"manifest: {manifest.path}")
    say(f"undo with: pgsurgeon undo {manifest.path}")
    if args.format == "json":
        print(json.dumps(manifest.to_json(), indent=2))
    return 0
