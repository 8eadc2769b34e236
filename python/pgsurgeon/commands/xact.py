"""``pgsurgeon xact PGDATA``: rebuild a missing pg_xact segment from evidence (dry run unless ``--execute``)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from pgsurgeon.commands import options
from pgsurgeon.errors import UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.rescue.xact import ABORTED, COMMITTED, XactRebuild, XactRebuildRequest, XidFate, rebuild_xact

SHOWN = 20
"""Undecided XIDs listed in the text report (the JSON has all)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "xact",
        help="rebuild a missing pg_xact segment from hint bits and WAL (dry run unless --execute)",
        description="Rebuild a missing pg_xact (commit status) segment of a stopped cluster from evidence: hint\n"
        "bits on heap tuples, then commit and abort records in the WAL left in pg_wal. What nothing decides is\n"
        "listed with its rows and written as aborted (rows it inserted stay hidden, rows it deleted stay\n"
        "visible; nothing aborted comes back) unless you decide otherwise. Save the rows first: 'pgsurgeon\n"
        "unload' keeps the rows of undecided transactions apart. Nothing is written without --execute, and then\n"
        "a manifest comes first: 'pgsurgeon undo MANIFEST' removes the rebuilt file.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add_rebuild(p, example="0000")
    p.add_argument(
        "--decide",
        action="append",
        default=[],
        metavar="XID=STATUS",
        help="your decision for one XID: committed or aborted (repeatable)",
    )
    p.add_argument(
        "--undecided",
        choices=(ABORTED, COMMITTED),
        default=ABORTED,
        help="what every XID the evidence does not decide becomes (default: aborted, which resurrects nothing)",
    )
    p.add_argument("--no-wal", action="store_true", help="do not read commit records from pg_wal (hint bits only)")
    p.set_defaults(func=run)


def _decisions(items: list[str]) -> dict[int, str]:
    out = {}
    for item in items:
        xid, _, status = item.partition("=")
        if status not in (COMMITTED, ABORTED) or not xid.strip().isdigit():
            raise UsageError(f"--decide {item!r} is not XID=committed or XID=aborted", hint="e.g. --decide 745=aborted")
        out[int(xid)] = status
    return out


def run(args: argparse.Namespace) -> int:
    pgdata = options.require_pgdata(args)
    req = XactRebuildRequest(
        pgdata=pgdata,
        segment=args.segment,
        decide=_decisions(args.decide),
        undecided=args.undecided,
        wal=not args.no_wal,
        execute=args.execute,
        manifest=args.manifest,
    )
    out = rebuild_xact(req)
    if args.format == "json":
        print(json.dumps(_doc(out), indent=2))
    else:
        print("\n".join(_text(out, pgdata, args)))
    return Exit.DAMAGE if out.undecided or out.conflicts else Exit.CLEAN


def _fate(f: XidFate, names: dict[tuple[int, int], str]) -> dict[str, Any]:
    return {
        "xid": f.xid,
        "status": f.status,
        "source": f.source,
        "inserted": f.inserted,
        "deleted": f.deleted,
        "rows": [{**r, "relation": names.get((r["database_oid"], r["relfilenode"]))} for r in f.rows],
    }


def _doc(out: XactRebuild) -> dict[str, Any]:
    return {
        "segment": f"pg_xact/{out.segment}",
        "xids": [out.lo, out.hi],
        "bytes": out.size,
        "heap_pages_read": out.pages_read,
        "wal": {
            "tool": out.wal.tool,
            "first_segment": out.wal.first_segment,
            "records": out.wal.records,
            "note": out.wal.note,
        },
        "decided": [_fate(f, out.names) for f in out.decided],
        "undecided": [_fate(f, out.names) for f in out.undecided],
        "prepared": out.prepared,
        "conflicts": out.conflicts,
        "manifest": str(out.manifest) if out.manifest else None,
    }


def _text(out: XactRebuild, pgdata: Path, args: argparse.Namespace) -> list[str]:
    seg = f"pg_xact/{out.segment}"
    lines = [
        f"{seg}: XIDs {out.lo}..{out.hi}, {out.size} bytes "
        + (
            f"written (undo: pgsurgeon undo {shlex.quote(str(out.manifest))})"
            if out.manifest
            else "(dry run: nothing written)"
        ),
        f"  evidence: {out.pages_read} heap page(s) read for hint bits; "
        + (
            f"{out.wal.records} commit/abort record(s) from {out.wal.first_segment} on"
            if out.wal.tool
            else out.wal.note
        ),
    ]
    by_source: dict[str, list[XidFate]] = {}
    for f in out.decided:
        by_source.setdefault(f.source, []).append(f)
    for source, fates in sorted(by_source.items()):
        committed = sum(1 for f in fates if f.status == COMMITTED)
        lines.append(f"  decided by {source}: {committed} committed, {len(fates) - committed} not")
    undecided = out.undecided
    if undecided:
        inserted = sum(f.inserted for f in undecided)
        deleted = sum(f.deleted for f in undecided)
        lines.append(
            f"  undecided: {len(undecided)} XID(s), written as {args.undecided}; they inserted {inserted} row(s) "
            f"and deleted {deleted} whose fate depends on them:"
        )
        for f in undecided[:SHOWN]:
            rows = ", ".join(
                f"{out.names.get((r['database_oid'], r['relfilenode']), r['path'])} ({r['block']},{r['offset']}) "
                f"{r['role']}"
                for r in f.rows
            )
            lines.append(f"    XID {f.xid}: {f.inserted} inserted, {f.deleted} deleted: {rows}")
        if len(undecided) > SHOWN:
            lines.append(f"    … and {len(undecided) - SHOWN} more (--format json lists them all)")
    if out.prepared:
        lines.append(f"  prepared transactions left in progress: {', '.join(map(str, out.prepared))}")
    lines += [f"  conflict: {c}" for c in out.conflicts]
    d = shlex.quote(str(pgdata))
    if not out.manifest:
        lines += [
            "next:",
            "  1. save every row first; rows of undecided transactions go to the .kept_apart.copy files (read-only)",
            f"     $ pgsurgeon unload -D {d} --out unloaded -P",
            "  2. decide what you know (--decide XID=committed), then write the segment with the server stopped",
            f"     $ pgsurgeon xact -D {d} --execute",
        ]
    else:
        lines += [
            "next:",
            "  1. check it end to end: every page, the server starting, rows against the files, amcheck, pg_dumpall",
            f"     $ pgsurgeon verify {d}",
        ]
    return lines
