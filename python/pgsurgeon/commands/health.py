"""``pgsurgeon health``: pgstattuple's and pgstatindex's figures for every table and btree index, from the files (and
pgstattuple's, pgstathashindex's and pgstatginindex's for hash, GiST and GIN indexes; JSON only for GIN)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.commands import options
from pgsurgeon.commands.scan import check_jobs
from pgsurgeon.exitcodes import Exit
from pgsurgeon.health import HealthOutcome, HealthRequest, RelationFigures, run_health
from pgsurgeon.health.figures import size_text
from pgsurgeon.health.html import render_html
from pgsurgeon.health.readiness import readiness
from pgsurgeon.render import jsondoc, term

if TYPE_CHECKING:
    from rich.console import Console

DEAD_PERCENT_TO_VACUUM = 20.0
"""A table whose dead tuples take this much of it: VACUUM is suggested (autovacuum's default scale factor)."""
LEAF_DENSITY_TO_REINDEX = 50.0
"""A btree whose leaves are on average less full than this (of at least ``MIN_LEAVES``): REINDEX is suggested."""
MIN_LEAVES = 10


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "health",
        help="pgstattuple and pgstatindex figures for every table and index, from the files",
        description="Count, from the data files, what pgstattuple and pgstatindex report for every table, TOAST "
        "table and btree index (and pgstattuple, pgstathashindex and pgstatginindex for hash, GiST and GIN indexes): "
        "live and dead tuples, free space, leaf density and fragmentation, with the same "
        "definitions and rounding as the server's version. Works on a stopped cluster, a base backup, or a running "
        "server's files (--live), in one pass that also finds damage.",
    )
    p.add_argument(
        "targets",
        nargs="?",
        type=Path,
        metavar="PGDATA|BACKUP",
        help="data directory or base backup (default: -D)",
    )
    options.add_pgdata(p, env_default=True, help="the data directory")
    p.add_argument("-j", "--jobs", type=int, help="threads (default: all cores)")
    options.add_progress(p, help="show bytes, MB/s and ETA on stderr")
    options.add_format(
        p,
        choices=("text", "json", "html"),
        help="output on stdout (default: text); html: a page with a histogram of items per leaf and the physical "
        "order of the leaves of every btree index",
    )
    options.add_connection(p, optional=True, purpose="to name relations (without one, names come from the files)")
    p.add_argument("--database", action="append", default=[], help="only this database (name, or OID)")
    options.add_table(p, repeat=True, help="only this table (name, or relfilenode), with its TOAST table and indexes")
    p.add_argument(
        "--check",
        action="store_true",
        help="check every page for damage in the same pass, as scan does (slower); exit 2 when damage is found",
    )
    p.add_argument("--system", action="store_true", help="the system catalogs too (pg_catalog, information_schema)")
    p.add_argument(
        "--live",
        action="store_true",
        help="the server is running: read its files in place, skipping pages written after the last checkpoint",
    )
    p.set_defaults(func=run)


def request_from_args(args: argparse.Namespace) -> HealthRequest:
    return HealthRequest(
        pgdata=args.targets or options.require_pgdata(args),
        dsn=args.dsn,
        databases=args.database,
        relations=args.table or [],
        live=args.live,
        jobs=check_jobs(args.jobs),
        system=args.system,
        checks=args.check,
    )


def _json_number(v: int | float) -> int | float | None:
    return None if isinstance(v, float) and math.isnan(v) else v


def relation_json(f: RelationFigures) -> dict[str, Any]:
    doc: dict[str, Any] = {"database": f.database, "name": f.name, "kind": f.kind, "size": f.size}
    doc["relfilenode"] = f.key[2]
    if (t := f.pgstattuple()) is not None:
        doc["pgstattuple"] = t
    if (i := f.pgstatindex()) is not None:
        doc["pgstatindex"] = {k: _json_number(v) for k, v in i.items()}
        doc["leaf_items"] = f.leaf_histogram()
        doc["leaf_order"] = f.leaf_order()
        doc["in_order_leaves_percent"] = _json_number(f.in_order_leaves())
        doc["heap_pages_per_leaf"] = _json_number(f.heap_pages_per_leaf())
        doc["heap_order_percent"] = _json_number(f.heap_order_percent())
        doc["dead_entries"] = f.dead_entries
    if (h := f.pgstathashindex()) is not None:
        doc["pgstathashindex"] = h
    if (g := f.pgstatginindex()) is not None:
        doc["pgstatginindex"] = g
    if "heap" in f.counted and not f.owner:
        doc["toast_bytes"], doc["index_bytes"] = f.toast_bytes, f.index_bytes
        doc["toast_share_percent"] = f.toast_share
    if "heap" in f.counted:
        doc["undecided"] = f.counted["heap"]["undecided"]
        doc["upkeep"] = f.counted.get("upkeep")
        doc["vm_all_visible"] = f.counted["vm_all_visible"]
        doc["vm_all_frozen"] = f.counted["vm_all_frozen"]
    doc["zero_pages"] = f.counted["zero_pages"]
    return doc


def to_json(outcome: HealthOutcome) -> dict[str, Any]:
    return {
        "pgdata": str(outcome.scan.pgdata),
        "seconds": outcome.scan.summary["seconds"],
        "checked": outcome.checked,
        "damage_findings": outcome.scan.summary["findings"] if outcome.checked else None,
        "warnings": outcome.scan.warnings,
        "relations": [relation_json(f) for f in outcome.relations],
        "suggestions": suggestions(outcome),
        "causes": [dataclasses.asdict(c) for c in outcome.causes],
        "checksums": {**dataclasses.asdict(ready := readiness(outcome)), "words": ready.words()},
    }


def _line(f: RelationFigures, width: int) -> str:
    t = f.pgstattuple()
    name = f"  {f.name}" if f.owner else f.name  # an index or TOAST table under its table
    cols = f"{name:<{width}} {f.kind:<7} {size_text(f.size):>10}"
    if t is None:
        return cols
    cols += f" {t['tuple_count']:>11} {t['dead_tuple_percent']:>7.2f} {t['free_percent']:>7.2f}"
    if (i := f.pgstatindex()) is not None:
        cols += f" {i['avg_leaf_density']:>8.2f} {i['leaf_fragmentation']:>8.2f}"
    return cols


def suggestions(outcome: HealthOutcome) -> list[str]:
    """What a DBA would run next, with the relations' real names."""
    out: list[str] = []
    for f in outcome.relations:
        if f.relation is None or f.relation.schema == "pg_toast":
            continue
        t, i = f.pgstattuple(), f.pgstatindex()
        if "heap" in f.counted and t is not None and t["dead_tuple_percent"] >= DEAD_PERCENT_TO_VACUUM:
            out.append(f"VACUUM (VERBOSE) {f.relation.regclass};  -- {f.database}: {t['dead_tuple_percent']}% dead")
        if (
            i is not None
            and int(i["leaf_pages"]) >= MIN_LEAVES
            and float(i["avg_leaf_density"]) < LEAF_DENSITY_TO_REINDEX
        ):
            out.append(
                f"REINDEX INDEX CONCURRENTLY {f.relation.regclass};  -- {f.database}: leaves "
                f"{i['avg_leaf_density']}% full"
            )
    return out


def render_text(outcome: HealthOutcome, console: Console) -> None:
    s = outcome.scan.summary
    console.print(f"read {s['blocks']} blocks ({s['bytes'] / 1e6:.1f} MB) in {s['seconds']:.2f}s", markup=False)
    width = max((len(f.name) + 2 for f in outcome.relations), default=8)
    header = (
        f"{'relation':<{width}} {'kind':<7} {'size':>10} {'live tuples':>11} {'dead %':>7} {'free %':>7}"
        f" {'density':>8} {'frag %':>8}"
    )
    # an empty TOAST table and its index say nothing (the JSON keeps them)
    no_toast = {(f.database, f.name) for f in outcome.relations if not f.owner and not f.toast_bytes}
    # one print per database: a print per relation was most of the report's time with hundreds of relations
    by_database: dict[str, list[str]] = {}
    for f in outcome.relations:
        if f.pgstattuple() is None or (f.name.startswith("pg_toast.") and (f.database, f.owner) in no_toast):
            continue
        by_database.setdefault(f.database, []).append(_line(f, width))
    for database, lines in by_database.items():
        console.print(f"\ndatabase {database or '(shared catalogs)'}", markup=False, style="bold")
        console.print(header, markup=False, style="dim", soft_wrap=True)
        console.print("\n".join(lines), markup=False, soft_wrap=True)
    if s["findings"]:
        console.print(
            f"\n{s['findings']} damage finding(s) in the same pages: their figures count only what the pages still "
            f"show (pgsurgeon scan {outcome.scan.pgdata} lists them)",
            markup=False,
            style="yellow",
        )
    elif not outcome.checked:
        console.print("\npages not checked for damage (--check does it in the same pass)", markup=False, style="dim")
    console.print(f"checksums: {readiness(outcome).words()}", markup=False, soft_wrap=True)
    if outcome.causes:
        console.print("\nwhy:", markup=False, style="bold")
        for c in outcome.causes:
            console.print(f"  {c.relation + ': ' if c.relation else ''}{c.text}", markup=False, soft_wrap=True)
            if c.command:
                console.print(f"    {c.command}", markup=False, soft_wrap=True, style="cyan")
    said = {c.command.split(";")[0] for c in outcome.causes}
    todo = [s for s in suggestions(outcome) if s.split(";")[0] not in said]
    if todo:
        console.print("\nnext:", markup=False)
        for line in todo:
            console.print(f"  {line}", markup=False, soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    req = request_from_args(args)
    if args.progress:
        with term.byte_progress("health") as show:
            outcome = run_health(req, lambda done, total, _pages: show(done, total))
    else:
        outcome = run_health(req)
    for warning in outcome.scan.warnings:
        term.console(stderr=True).print(f"pgsurgeon: warning: {warning}", markup=False, soft_wrap=True)
    if args.format == "json":
        print(jsondoc.dumps(to_json(outcome)))
    elif args.format == "html":
        print(render_html(outcome, suggestions(outcome), min_leaves=MIN_LEAVES), end="")
    else:
        render_text(outcome, term.console())
    return Exit.DAMAGE if outcome.scan.summary["errors"] else Exit.CLEAN
