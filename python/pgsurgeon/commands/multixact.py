"""``pgsurgeon multixact PGDATA``: rebuild a lost or damaged pg_multixact members segment from the heap's update
chains (dry run unless ``--execute``)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from pgsurgeon.commands import options
from pgsurgeon.exitcodes import Exit
from pgsurgeon.rescue.multixact import MembersRebuild, MembersRebuildRequest, rebuild_members

SHOWN = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "multixact",
        help="rebuild a lost pg_multixact members segment from the heap's update chains (dry run unless --execute)",
        description="Rebuild a missing (or, with --replace, damaged) pg_multixact members segment of a stopped\n"
        "cluster. Lockers need no members once the server is down; the updater of a row updated under a lock\n"
        "is the xmin of its newer version, found through t_ctid. A row deleted in place under a lock names no\n"
        "deleter: it is listed and stays visible. Nothing is written without --execute, and then a manifest\n"
        "comes first: 'pgsurgeon undo MANIFEST' puts the old state back.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add_rebuild(p, example="0000")
    p.add_argument("--replace", action="store_true", help="rebuild an existing (damaged) segment, keeping its bytes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    pgdata = options.require_pgdata(args)
    req = MembersRebuildRequest(pgdata, args.segment, args.replace, args.execute, args.manifest)
    out = rebuild_members(req)
    if args.format == "json":
        print(json.dumps(_doc(out), indent=2))
    else:
        print("\n".join(_text(out, pgdata, args)))
    return Exit.DAMAGE if out.unknown else Exit.CLEAN


def _doc(out: MembersRebuild) -> dict[str, Any]:
    return {
        "segment": f"pg_multixact/members/{out.segment}",
        "multis": list(out.multis),
        "bytes": out.size,
        "heap_pages_read": out.pages_read,
        "evidence": out.evidence,
        "updaters": len(out.updaters),
        "unknown": [e["multi"] for e in out.unknown],
        "manifest": str(out.manifest) if out.manifest else None,
    }


def _text(out: MembersRebuild, pgdata: Path, args: argparse.Namespace) -> list[str]:
    seg = f"pg_multixact/members/{out.segment}"
    written = f"written (undo: pgsurgeon undo {shlex.quote(str(out.manifest))})" if out.manifest else "(dry run)"
    locked = sum(e["locked"] for e in out.evidence)
    lines = [
        f"{seg}: MultiXacts {out.multis[0]}..{out.multis[1]}, {out.size} bytes {written}",
        f"  evidence: {out.pages_read} heap page(s) read; {locked} tuple(s) only locked (no member needed), "
        f"{len(out.updaters)} MultiXact(s) with their updater found through t_ctid",
    ]
    for e in out.unknown[:SHOWN]:
        rows = ", ".join(
            f"{out.names.get((r['database_oid'], r['relfilenode']), r['path'])} ({r['block']},{r['offset']})"
            for r in e["rows"]
        )
        why = "its newer versions name different updaters" if e["conflicting"] else "deleted in place: no deleter named"
        lines.append(f"  MultiXact {e['multi']}: {why}; its rows stay visible: {rows}")
    d = shlex.quote(str(pgdata))
    if not out.manifest:
        lines += [
            "next:",
            "  1. save every row first (read-only)",
            f"     $ pgsurgeon unload -D {d} --out unloaded -P",
            "  2. write the segment with the server stopped",
            f"     $ pgsurgeon multixact -D {d} --execute" + (" --replace" if args.replace else ""),
        ]
    else:
        lines += [
            "next:",
            "  1. check it end to end: every page, the server starting, rows against the files, amcheck, pg_dumpall",
            f"     $ pgsurgeon verify {d}",
        ]
    return lines
