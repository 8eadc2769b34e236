"""The simulator's request API: :func:`run` damages what a :class:`SimulateRequest` names and returns the manifest.

``pgsurgeon corrupt`` turns its argv into a request; the lab and the tests build requests directly, so no caller
goes through the command line.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgsurgeon import paths
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.journal import apply as applying
from pgsurgeon.journal.manifest import Manifest, default_path
from pgsurgeon.journal.server import lab_cluster_for, postmaster_pid, server_stopped
from pgsurgeon.lab.marker import is_lab_cluster, read_lab_marker, utc_now
from pgsurgeon.simulate.bookkeeping import BookPlan, BookRequest, plan_bookkeeping, resolved_for
from pgsurgeon.simulate.modes import (
    MODES,
    UNIT_CLUSTER,
    UNIT_FILE,
    UNIT_ITEM,
    UNIT_MAP,
    UNIT_PAGE,
    UNIT_RELATION,
    Mode,
)
from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan
from pgsurgeon.simulate.target import Resolved, checkpoint, from_dsn, from_file, nblocks

MAX_SEED = 2**64 - 1
MAX_BLCKSZ = 32768
"""The largest page PostgreSQL can be built with: no damage count can exceed the bits of one such page."""
Say = Callable[[str], None]


@dataclass(frozen=True)
class SimulateRequest:
    """One simulator run: which relation (``dsn`` and ``table``, or ``pgdata`` and ``file``), what to damage and
    how; the fields are the ``pgsurgeon corrupt`` options of the same names."""

    mode: str
    field: str | None = None
    dsn: str | None = None
    table: str | None = None
    target: str | None = None
    index: str | None = None
    pgdata: Path | None = None
    file: Path | None = None
    kind: str | None = None
    block: int | None = None
    item: int | None = None
    segment: int | None = None
    count: int = 1
    seed: int | None = None
    """None: a random one (recorded in the manifest)."""
    value: int | None = None
    tid: tuple[int, int] | None = None
    """``--value BLOCK,OFFSET``: the TID fields."""
    column: str | None = None
    length: int | None = None
    flips: int | None = None
    tear_at: int | None = None
    source_block: int | None = None
    source_file: Path | None = None
    clear_hints: bool = False
    keep_checksum_valid: bool = False
    dry_run: bool = False
    force_non_lab: bool = False
    manifest: Path | None = None
    """Where the manifest goes (default: ``<lab>/corruptions/…json``)."""


@dataclass
class SimulateResult:
    manifest: Manifest
    """The manifest written; a dry run's is not written (path ``-``, state ``planned``)."""
    plan: Plan


def check(req: SimulateRequest) -> None:
    """Refuse a request whose options do not fit together (:class:`UsageError`), before anything is read."""
    if req.mode not in MODES:
        raise UsageError(f"unknown mode {req.mode}", hint="modes: " + ", ".join(MODES))
    mode = MODES[req.mode]
    if mode.unit == UNIT_CLUSTER:
        _check_bookkeeping(req, mode)
        return
    by_sql = req.dsn is not None or req.table is not None
    by_file = req.pgdata is not None or req.file is not None
    if by_sql == by_file or (by_sql and not (req.dsn and req.table)) or (by_file and not (req.pgdata and req.file)):
        raise UsageError(
            "name the relation with --dsn and --table, or with --pgdata and --file",
            hint="e.g. pgsurgeon corrupt zero --dsn 'host=… dbname=…' --table public.t",
        )
    if by_file and (req.target or req.index):
        raise UsageError("--target and --index go with --table", hint="with --file, pass the file to damage")
    if req.kind and not by_file:
        raise UsageError("--kind goes with --file")
    if req.count < 1:
        raise UsageError("--count must be 1 or more")
    if req.count > MAX_BLCKSZ * 8:
        raise UsageError(
            f"--count {req.count} is more than the {MAX_BLCKSZ * 8} bits of the largest page",
            hint="it counts pages, tuples or bit flips of one relation",
        )
    for name in ("block", "item", "segment", "length", "flips", "tear_at", "source_block"):
        v = getattr(req, name)
        if v is not None and v < (1 if name in ("item", "length", "flips", "tear_at") else 0):
            raise UsageError(f"--{name.replace('_', '-')} {v} is out of range")
    field = _field(req, mode)
    unit = mode.unit_for(field)
    if req.item is not None and unit != UNIT_ITEM:
        raise UsageError(f"mode {mode.name}{' field ' + field if field else ''} damages pages, not items: drop --item")
    if req.item is not None and req.block is None:
        raise UsageError("--item needs --block", hint="line pointer numbers are per page")
    if req.segment is not None and mode.name != "missing-segment":
        raise UsageError("--segment goes with mode missing-segment", hint="other modes take --block")
    if (req.source_block is not None or req.source_file is not None) and mode.name not in ("torn", "misdirected"):
        raise UsageError("--source-block and --source-file go with modes torn and misdirected")
    if req.source_file is not None and mode.name != "torn":
        raise UsageError("--source-file goes with mode torn", hint="misdirected takes --source-block")
    if req.tear_at is not None and mode.name not in ("torn", "truncate"):
        raise UsageError("--tear-at goes with modes torn and truncate")
    if req.clear_hints and not (mode.name == "tuple-header" and field in ("t_xmin", "t_xmax")):
        raise UsageError("--clear-hints goes with mode tuple-header and field t_xmin or t_xmax")
    if req.keep_checksum_valid and mode.name == "checksum":
        raise UsageError("mode checksum with --keep-checksum-valid would change nothing")
    if req.keep_checksum_valid and mode.unit == UNIT_FILE:
        raise UsageError(f"mode {mode.name} changes no page: --keep-checksum-valid does not apply")
    if req.column is not None and not (mode.name == "tuple-data" and field == "varlena" and by_sql):
        raise UsageError("--column goes with tuple-data --field varlena and --dsn/--table")
    if req.value is not None and field not in mode.value_fields:
        what = f"mode {mode.name}" + (f" field {field}" if field else "")
        raise UsageError(
            f"{what} takes no --value" + (" number" if field in mode.tid_fields else ""),
            hint="it writes random bytes; pass --seed to repeat them"
            if field not in mode.tid_fields
            else "pass the TID as --value BLOCK,OFFSET",
        )
    if req.tid is not None and field not in mode.tid_fields:
        raise UsageError(
            "--value BLOCK,OFFSET goes with tuple-header --field t_ctid and btree --field item",
            hint="other fields take a number",
        )
    if unit == UNIT_PAGE and req.block is not None and req.count > 1:
        raise UsageError(
            f"--count {req.count} with --block: mode {mode.name} damages one page per block",
            hint="drop --block to damage several random pages",
        )
    if req.seed is not None and not 0 <= req.seed <= MAX_SEED:
        raise UsageError("--seed must be between 0 and 2**64-1")


def _field(req: SimulateRequest, mode: Mode) -> str | None:
    """The field asked for (checked against the mode's) or the mode's default."""
    if req.field is not None and req.field not in mode.fields:
        raise UsageError(
            f"mode {mode.name} has no field {req.field}",
            hint=f"its fields: {', '.join(mode.fields)}" if mode.fields else f"mode {mode.name} takes no --field",
        )
    return req.field or mode.default_field()


_RELATION_ONLY = ("dsn", "table", "target", "index", "kind", "block", "item", "segment", "column", "length", "flips")


def _check_bookkeeping(req: SimulateRequest, mode: Mode) -> None:
    """A bookkeeping mode takes the data directory, and --file only to pick its segment."""
    if req.pgdata is None:
        raise UsageError(f"mode {mode.name} damages the cluster's own files: pass -D PGDATA")
    extra = [n for n in _RELATION_ONLY if getattr(req, n) is not None]
    extra += [n for n in ("tear_at", "source_block", "source_file") if getattr(req, n) is not None]
    if extra or req.count != 1 or req.clear_hints or req.keep_checksum_valid:
        shown = ", ".join("--" + n.replace("_", "-") for n in extra) or "--count/--clear-hints/--keep-checksum-valid"
        raise UsageError(f"mode {mode.name} takes -D, --field, --file, --seed and --value, not {shown}")
    field = _field(req, mode)
    if req.value is not None and field not in mode.value_fields:
        raise UsageError(f"mode {mode.name}{' field ' + field if field else ''} takes no --value")
    if req.seed is not None and not 0 <= req.seed <= MAX_SEED:
        raise UsageError("--seed must be between 0 and 2**64-1")


def run(req: SimulateRequest, say: Say | None = None) -> SimulateResult:
    """Damage what ``req`` names (or, with ``dry_run``, only plan it) and return the manifest; ``say`` receives the
    progress lines. A running lab cluster is stopped and started again around the write."""
    say = say or (lambda _text: None)
    check(req)
    _check_paths(req)
    if MODES[req.mode].unit == UNIT_CLUSTER:
        return _run_bookkeeping(req, say)
    res = _resolve(req)
    _check_fits(req, res)
    lab = _refuse_non_lab(res.pgdata, req.force_non_lab)
    creq = _corrupt_request(req, res, req.seed if req.seed is not None else secrets.randbits(32))
    if req.dry_run:
        if res.dsn is not None and postmaster_pid(res.pgdata) is not None:
            checkpoint(res.dsn)  # so the files hold what the buffers hold
        plan = make_plan(creq, res)
        _print_plan(plan, creq, say)
        if postmaster_pid(res.pgdata) is not None:
            say("note: the server is running; the real run stops it first and reads the files then")
        say(f"dry run: {len(plan.changes)} change(s) planned, nothing written")
        header = {**_header(creq, plan, lab), "state": "planned"}
        return SimulateResult(Manifest(Path("-"), header, plan.changes, plan.pages), plan)
    path = _manifest_path(req, res.pgdata)
    with server_stopped(res.pgdata, say):
        plan = make_plan(creq, res)
        _print_plan(plan, creq, say)
        manifest = Manifest(path.absolute(), _header(creq, plan, lab), plan.changes, plan.pages)
        applying.apply(manifest, say)
    return SimulateResult(manifest, plan)


def _run_bookkeeping(req: SimulateRequest, say: Say) -> SimulateResult:
    """Damage the cluster's bookkeeping: planned with the server down (its shutdown checkpoint is what pg_control
    and the WAL then say), written through the journal, and the server started again: it may now refuse, which is
    reported, not raised."""
    assert req.pgdata is not None  # check() made sure
    pgdata = req.pgdata.absolute()
    mode = MODES[req.mode]
    lab = _refuse_non_lab(pgdata, req.force_non_lab)
    breq = BookRequest(
        req.mode,
        req.field or mode.default_field() or "",
        req.seed if req.seed is not None else secrets.randbits(32),
        str(req.file) if req.file is not None else None,
        req.value,
    )
    if req.dry_run:
        book = plan_bookkeeping(pgdata, breq)
        result = _book_result(pgdata, breq, book, lab, Path("-"))
        _say_book(result.plan, breq, say)
        if postmaster_pid(pgdata) is not None:
            say("note: the server is running; the real run stops it first (its shutdown checkpoint changes WAL)")
        say(f"dry run: {len(book.changes)} change(s) planned, nothing written")
        result.manifest.header["state"] = "planned"
        return result
    path = _manifest_path(req, pgdata)
    with server_stopped(pgdata, say, may_refuse=True):
        book = plan_bookkeeping(pgdata, breq)
        result = _book_result(pgdata, breq, book, lab, path.absolute())
        _say_book(result.plan, breq, say)
        applying.apply(result.manifest, say)
    return result


def _book_result(
    pgdata: Path, req: BookRequest, book: BookPlan, lab: dict[str, Any] | None, path: Path
) -> SimulateResult:
    res = resolved_for(pgdata, book.target)
    plan = Plan(res, MODES[req.mode], req.field, UNIT_CLUSTER, 0, book.changes, book.pages, book.lines, book.warnings)
    creq = CorruptRequest(mode=req.mode, field=req.field, seed=req.seed, value=req.value)
    header = _header(creq, plan, lab)
    header["relation"]["nblocks"] = None
    return SimulateResult(Manifest(path, header, book.changes, book.pages), plan)


def _say_book(plan: Plan, req: BookRequest, say: Say) -> None:
    say(f"corrupt {req.mode} (field {req.field}), seed {req.seed}")
    for line in plan.lines:
        say(f"  {line}")
    for w in plan.warnings:
        say(f"note: {w}")


def _manifest_path(req: SimulateRequest, pgdata: Path) -> Path:
    """``--manifest``, or a new one in the lab's corruptions directory (refused when it exists)."""
    lab_cluster = lab_cluster_for(pgdata)
    stamp = utc_now().replace(":", "").replace("-", "").replace("+0000", "Z")
    path = req.manifest or default_path(pgdata, lab_cluster.lab_dir if lab_cluster else None, stamp, req.mode)
    if path.exists():
        raise UsageError(f"manifest {path} already exists", hint="pass another --manifest or leave it out")
    return path


def _check_paths(req: SimulateRequest) -> None:
    """The paths named exist and have the right type, before any connection or file is opened."""
    if req.pgdata is not None:
        paths.existing_dir(req.pgdata, "--pgdata")
    if req.manifest is not None:
        paths.output_file(req.manifest, "--manifest", make_parents=True)
    if req.source_file is not None and not req.source_file.is_file():
        raise UsageError(f"--source-file {req.source_file} is not a file", hint="pass an older copy of the relation")


def _check_fits(req: SimulateRequest, res: Resolved) -> None:
    """Refuse numbers the relation cannot hold, from its files as they are now: before the server is stopped for
    the write, and before any planning work. The plan checks again once the server is down (the files are then
    final); a running server only ever makes them longer."""
    mode = MODES[req.mode]
    geo = res.geometry
    if mode.unit == UNIT_RELATION and req.count > geo.blcksz * 8:
        raise UsageError(
            f"--count {req.count} is more bit flips than the {geo.blcksz * 8} bits of a page",
            hint="a few flips per page already make it unreadable; lower --count",
        )
    if req.length is not None and req.length > geo.blcksz:
        raise UsageError(f"--length {req.length} is longer than a page ({geo.blcksz} bytes)")
    if req.block is None or mode.name == "missing-segment":
        return
    n = nblocks(res.relation.path, geo)
    if req.block >= n:  # what the table holds decides, as in the plan: could not run, not a wrong argument
        raise PgSurgeonError(
            f"block {req.block} is beyond the end of {res.relation.name} ({n} blocks)",
            hint=f"blocks are numbered from 0 to {n - 1}" if n else "the relation has no blocks yet",
        )


def _resolve(req: SimulateRequest) -> Resolved:
    mode = MODES[req.mode]
    if req.table:
        assert req.dsn is not None  # check() made sure
        return from_dsn(req.dsn, req.table, req.target or mode.default_target, req.index)
    assert req.pgdata is not None and req.file is not None
    return from_file(req.pgdata, req.file, req.kind)


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


def _corrupt_request(req: SimulateRequest, res: Resolved, seed: int) -> CorruptRequest:
    attnum = None
    if req.column is not None:
        cols = {a.name: a.attnum for a in res.relation.attrs or [] if not a.dropped}
        if req.column not in cols:
            raise UsageError(
                f"{res.relation.name} has no column {req.column}", hint="columns: " + ", ".join(cols) or "none"
            )
        attnum = int(cols[req.column])
    return CorruptRequest(
        mode=req.mode,
        field=req.field,
        block=req.block,
        item=req.item,
        segment=req.segment,
        count=req.count,
        seed=seed,
        value=req.value,
        tid=req.tid,
        attnum=attnum,
        length=req.length,
        flips=req.flips,
        tear_at=req.tear_at,
        source_block=req.source_block,
        source_file=req.source_file,
        clear_hints=req.clear_hints,
        keep_checksum_valid=req.keep_checksum_valid,
    )


def _header(req: CorruptRequest, plan: Plan, lab: dict[str, Any] | None) -> dict[str, Any]:
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


def _print_plan(plan: Plan, req: CorruptRequest, say: Say) -> None:
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
    if res.geometry.checksums and plan.unit not in (UNIT_FILE, UNIT_MAP) and plan.mode.name != "checksum":
        if req.keep_checksum_valid:
            say("checksums recomputed: only the structural damage shows")
        else:
            say("stored checksums left as they were (damage on disk): expect checksum failures")
