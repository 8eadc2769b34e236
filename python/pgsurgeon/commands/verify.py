"""``pgsurgeon verify PGDATA``: after a rescue, check the files, start the server on a private socket, count the
rows through SQL against the files, run amcheck and pg_dumpall, and stop it."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from pgsurgeon.commands import options
from pgsurgeon.exitcodes import Exit
from pgsurgeon.rescue.verify import Verification, VerifyRequest, verify


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify",
        help="after a rescue: scan, start the server privately, count rows against the files, amcheck, pg_dumpall",
        description="Check a rescued cluster end to end: every page of the stopped cluster read (scan) and each\n"
        "table's rows counted from the files; then the server started on a private socket (no TCP) as the data\n"
        "directory's owner, the rows counted again through SQL, pg_amcheck run over every table and index (it\n"
        "installs the amcheck extension where missing; --no-amcheck skips it) and pg_dumpall to nowhere; then the\n"
        "server is stopped. Starting the server writes to the data directory: run it on the rescued copy.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("datadir", nargs="?", type=Path, metavar="PGDATA", help="the data directory (or -D)")
    options.add_pgdata(p, env_default=True, help="the data directory", positional="datadir")
    p.add_argument("--pg-bin", type=Path, metavar="DIR", help="the bin directory of the cluster's PostgreSQL version")
    p.add_argument("--no-amcheck", action="store_true", help="do not run pg_amcheck (it installs the extension)")
    options.add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    pgdata = options.require_pgdata(args)
    out = verify(VerifyRequest(pgdata, args.pg_bin, amcheck=not args.no_amcheck))
    if args.format == "json":
        doc = {
            "ok": out.ok,
            "started": out.started,
            "start_error": out.start_error or None,
            "findings": out.findings,
            "counts": [asdict(c) for c in out.counts],
            "amcheck": {"ran": out.amcheck_ran, "error": out.amcheck},
            "pg_dumpall": {"error": out.dump},
            "notes": out.notes,
        }
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(_text(out)))
    return Exit.CLEAN if out.ok else Exit.DAMAGE


def _text(out: Verification) -> list[str]:
    errors = [f for f in out.findings if f["severity"] == "error"]
    mark = {True: "ok", False: "FAILED"}
    lines = [f"scan of the files: {mark[not errors]}" + (f" ({len(errors)} error finding(s))" if errors else "")]
    lines += [f"  {f['code']}: {f['message']}" for f in errors[:10]]
    lines.append(f"server starts: {mark[out.started]}" + (f" ({out.start_error})" if out.start_error else ""))
    if out.started:
        bad = out.mismatches
        lines.append(f"rows, files against the server: {mark[not bad]} ({len(out.counts)} table(s))")
        lines += [f"  {c.database}: {c.table}: files {c.files}, server {c.server}" for c in bad]
        undecided = [c for c in out.counts if c.undecided]
        lines += [
            f"  {c.database}: {c.table}: {c.undecided} row(s) whose fate the files could not settle" for c in undecided
        ]
        if out.amcheck_ran:
            lines.append(
                f"amcheck (pg_amcheck --heapallindexed): {mark[out.amcheck is None]}"
                + (f": {out.amcheck}" if out.amcheck else "")
            )
        lines.append(f"pg_dumpall: {mark[out.dump is None]}" + (f": {out.dump}" if out.dump else ""))
    lines += [f"note: {n}" for n in out.notes]
    lines.append("verified: the cluster holds up" if out.ok else "NOT verified: see the lines marked FAILED")
    return lines
