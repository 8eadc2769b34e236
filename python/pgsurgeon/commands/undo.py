"""``pgsurgeon undo MANIFEST``: put back, byte for byte, what ``pgsurgeon corrupt`` changed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.marker import is_lab_cluster, read_lab_marker

if TYPE_CHECKING:
    from pgsurgeon.journal.manifest import Manifest


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "undo",
        help="restore what 'pgsurgeon corrupt' changed, from its manifest",
        description="Restore every byte a 'pgsurgeon corrupt' run changed (truncated and removed segments too), "
        "last change first, after checking the files still hold what corrupt wrote. A running lab cluster is "
        "stopped and started again around the restore.",
    )
    p.add_argument("manifest", type=Path, help="the manifest .json that corrupt printed")
    p.add_argument(
        "--force",
        action="store_true",
        help="restore even where the bytes changed since corrupt wrote them, or the manifest was already undone",
    )
    p.add_argument("--force-non-lab", action="store_true", help="restore into a data directory without the lab marker")
    p.add_argument("--dry-run", action="store_true", help="check and show what would be restored; write nothing")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _check_cluster(manifest: Manifest, args: argparse.Namespace) -> None:
    pgdata = manifest.pgdata
    if not (pgdata / "global" / "pg_control").is_file():
        raise PgSurgeonError(
            f"the data directory of this manifest is gone: {pgdata}", hint="the cluster was removed or moved"
        )
    lab = manifest.header.get("lab")
    if not is_lab_cluster(pgdata):
        if not args.force_non_lab:
            raise PgSurgeonError(
                f"{pgdata} is not a pgsurgeon lab cluster (no lab marker): refusing to write to it",
                hint="--force-non-lab restores into it anyway (corrupt needed the same option)",
            )
        return
    marker = read_lab_marker(pgdata)
    if lab and lab.get("id") != marker.get("id") and not args.force:
        raise PgSurgeonError(
            f"the manifest was written for lab {lab.get('name')} (id {lab.get('id')}), "
            f"{pgdata} is lab {marker.get('name')} (id {marker.get('id')})",
            hint="the cluster was recreated since; --force restores into it anyway",
        )


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.journal import apply as applying
    from pgsurgeon.journal.manifest import Manifest
    from pgsurgeon.journal.server import server_stopped

    out = sys.stderr if args.format == "json" else sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    manifest = Manifest.load(args.manifest)
    if manifest.state == "undone" and not args.force:
        raise PgSurgeonError(
            f"manifest {args.manifest} was already undone at {manifest.header.get('undone_at')}",
            hint="--force restores its saved bytes again",
        )
    _check_cluster(manifest, args)
    applying.confine(manifest)  # before the server is stopped: a hostile manifest changes nothing at all
    h = manifest.header
    say(
        f"undo {h.get('mode')}{' (field ' + h['field'] + ')' if h.get('field') else ''} on "
        f"{(h.get('relation') or {}).get('name')}: {len(manifest.changes)} change(s) in {manifest.pgdata}"
    )
    if args.dry_run:
        state = applying.check(manifest)
        say(
            f"dry run: {len(state.todo)} change(s) to restore, {len(state.already)} already restored, "
            f"{len(state.other)} page(s) or file(s) changed since corrupt wrote them"
        )
        for what in state.other:
            say(f"  changed since: {what}")
        if args.format == "json":
            doc = {"restore": len(state.todo), "already": len(state.already), "changed_since": state.other}
            print(json.dumps(doc, indent=2))
        return Exit.CLEAN
    with server_stopped(manifest.pgdata, say):
        report = applying.undo(manifest, force=args.force)
    for line in report.mismatched:
        say(f"forced: {line} had changed since corrupt wrote it")
    for note in report.notes:
        say(f"note: {note}")
    in_place = f", {report.already} already in place" if report.already else ""
    say(f"restored {report.restored} change(s){in_place}; manifest marked undone")
    if args.format == "json":
        print(
            json.dumps(
                {
                    "restored": report.restored,
                    "already": report.already,
                    "forced": report.mismatched,
                    "notes": report.notes,
                },
                indent=2,
            )
        )
    return Exit.CLEAN
