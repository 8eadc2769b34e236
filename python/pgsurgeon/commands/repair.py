"""``pgsurgeon repair``: plan (and with --execute, carry out) the repair of a damaged table — salvage first, pages
saved, tuples removed or frozen with pg_surgery, pages zeroed with an undo manifest, indexes rebuilt, verified."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pgsurgeon import paths
from pgsurgeon.commands import options
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.exitcodes import Exit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "repair",
        help="plan and run the repair of a damaged table (dry run by default): salvage, remove, rebuild, verify",
        description="Diagnose a table (amcheck, raw pages, the files when they are here) and plan its repair: salvage "
        "first, the touched pages saved; damaged tuples frozen or killed with pg_surgery (ctids built from block and "
        "line pointer); pages with a damaged header or item-ID array zeroed (in the files with the server stopped, "
        "undoable with 'pgsurgeon undo', or through SQL with zero_damaged_pages and VACUUM FULL); indexes rebuilt; "
        "VACUUM; then diagnose again. Without --execute it only prints the plan: every statement, every page write, "
        "every row lost by ctid. Needs a superuser and the amcheck and pageinspect extensions, and pg_surgery to "
        "execute a plan that kills or freezes tuples.",
    )
    options.add_connection(p)
    options.add_table(p, required=True, help='the table, as SQL text (sales."Orders") or its exact name')
    p.add_argument("--execute", action="store_true", help="carry the plan out (after confirmation, or --yes)")
    p.add_argument("-y", "--yes", action="store_true", help="with --execute: do not ask")
    p.add_argument(
        "--reinsert",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="insert the rows carved with certainty from the removed tuples back into the table (the default; "
        "--no-reinsert leaves them in the backup directory's carved.copy and prints the command that loads them)",
    )
    p.add_argument(
        "--skip-salvage",
        action="store_true",
        help="do not salvage the whole table first (the touched pages and carved rows are still saved)",
    )
    dest = p.add_mutually_exclusive_group()
    dest.add_argument("--salvage-into", metavar="NEW_TABLE", help="salvage into this new table (default: files)")
    dest.add_argument("--salvage-out", type=Path, metavar="DIR", help="salvage into files here (default: run dir)")
    p.add_argument(
        "--method",
        choices=("auto", "file", "sql"),
        default="auto",
        help="page-level damage: file (zero pages in the files, server stopped, undoable) or sql (zero_damaged_pages "
        "and VACUUM FULL, WAL-logged); auto: file for a lab cluster on this host, else sql",
    )
    p.add_argument(
        "--force-file-writes",
        action="store_true",
        help="allow page writes on a cluster that is not a lab: you stop the server when asked, repair waits",
    )
    copies = p.add_mutually_exclusive_group()
    copies.add_argument(
        "--from-standby",
        metavar="CONNINFO",
        help="restore damaged pages from this streaming standby of the cluster where its copy is good (read-only: "
        "nothing is written to it); a page without a good copy keeps the plan it would have had",
    )
    p.add_argument(
        "--standby-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait for the standby to replay up to the primary's position before refusing (default 300)",
    )
    copies.add_argument(
        "--from-backup",
        type=Path,
        metavar="BACKUP",
        help="restore damaged pages from this base backup (plain or tar) where its copy is good: it is recovered in a "
        "scratch directory up to the primary's position by PostgreSQL's own redo, then removed",
    )
    p.add_argument(
        "--wal-archive",
        type=Path,
        metavar="DIR",
        help="with --from-backup: the WAL archive archive_command fills (the primary's pg_wal is read after it)",
    )
    p.add_argument(
        "--accept-older",
        action="store_true",
        help="with --from-backup whose WAL ends before the primary's position: restore pages that may have changed "
        "since all the same (the ledger lists their rows as possibly stale)",
    )
    p.add_argument(
        "--recovery-timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="how long the backup's recovery may take before repair refuses (default 3600)",
    )
    p.add_argument(
        "--no-freeze",
        dest="freeze",
        action="store_false",
        help="kill tuples whose only damage is their visibility fields instead of freezing them",
    )
    p.add_argument(
        "--reindex",
        choices=("auto", "concurrently", "plain"),
        default="auto",
        help="REINDEX TABLE CONCURRENTLY when possible (auto), always, or never",
    )
    p.add_argument(
        "--backup-dir",
        "--run-dir",
        dest="run_dir",
        type=Path,
        metavar="DIR",
        help="where the saved pages, the undo manifest, carved rows, the plan and the report go (default: "
        "<lab>/repairs/… for a lab cluster, else $XDG_STATE_HOME/pgsurgeon/repairs/…, never the current directory)",
    )
    options.add_pgdata(p, env_default=False, help="the server's data directory as mounted here, if not at its own path")
    options.add_format(p)
    options.add_progress(p, help="say on stderr what is being done")
    p.set_defaults(func=run)


def state_home() -> Path:
    """$XDG_STATE_HOME, or ~/.local/state (the XDG base directory default): the user's, not the current directory,
    which may be a source checkout or the data directory's parent."""
    env = os.environ.get("XDG_STATE_HOME", "")
    return Path(env) if os.path.isabs(env) else Path.home() / ".local" / "state"


def default_run_dir(lab_dir: Path | None, table: str) -> Path:
    """``<lab>/repairs/<stamp>-<table>`` for a lab cluster, else ``<state home>/pgsurgeon/repairs/<stamp>-<table>``."""
    from pgsurgeon.lab.marker import utc_now
    from pgsurgeon.paths import safe_name

    stamp = utc_now().replace(":", "").replace("-", "").replace("+0000", "Z")
    base = lab_dir / "repairs" if lab_dir is not None else state_home() / "pgsurgeon" / "repairs"
    stem = f"{stamp}-{safe_name(table)}"
    path = base / stem
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stem}-{n}"
    return path


def _can_confirm(args: argparse.Namespace) -> None:
    """Refuse before planning, which can take a while, when the confirmation could not be asked afterwards."""
    if args.execute and not args.yes and not sys.stdin.isatty():
        raise UsageError(
            "--execute asks for confirmation and stdin is not a terminal", hint="pass --yes to execute without asking"
        )


def _confirm(args: argparse.Namespace, steps: int, table: str) -> bool:
    if args.yes:
        return True
    answer = input(f"execute these {steps} steps on {table}? type yes to go on: ")
    return answer.strip().lower() == "yes"


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.repair import RepairRequest, build_plan, execute
    from pgsurgeon.repair.execute import carved_load_command
    from pgsurgeon.repair.render import plan_lines

    if args.yes and not args.execute:
        raise UsageError("--yes goes with --execute")
    _can_confirm(args)
    if (args.wal_archive is not None or args.accept_older) and args.from_backup is None:
        raise UsageError("--wal-archive and --accept-older go with --from-backup")
    if args.pgdata is not None:
        paths.existing_dir(args.pgdata, "--pgdata")
    for option, path in (("--backup-dir", args.run_dir), ("--salvage-out", args.salvage_out)):
        if path is not None:
            paths.output_dir(path, option)
    out = sys.stderr if args.format == "json" else sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    def progress(text: str) -> None:
        print(f"pgsurgeon: {text}", file=sys.stderr, flush=True)

    req = RepairRequest(
        dsn=args.dsn,
        table=args.table,
        reinsert=args.reinsert is not False,
        reinsert_required=args.reinsert is True,
        skip_salvage=args.skip_salvage,
        salvage_into=args.salvage_into,
        salvage_out=args.salvage_out,
        method=args.method,
        force_file_writes=args.force_file_writes,
        freeze=args.freeze,
        reindex=args.reindex,
        run_dir=args.run_dir,
        pgdata=args.pgdata,
        on_progress=progress if args.progress else None,
        from_standby=args.from_standby,
        standby_timeout=args.standby_timeout,
        from_backup=args.from_backup,
        wal_archive=args.wal_archive,
        accept_older=args.accept_older,
        recovery_timeout=args.recovery_timeout,
    )
    plan, ctx = build_plan(req)
    try:
        run_dir = args.run_dir or default_run_dir(ctx.lab.lab_dir if ctx.lab is not None else None, plan.table)
        plan.run_dir = str(run_dir)
        if args.format == "text":
            for line in plan_lines(plan, executing=args.execute, run_dir=str(run_dir)):
                say(line)
        if not args.execute:
            if args.format == "json":
                print(json.dumps(plan.to_json(), indent=2, default=str))
            if plan.blockers and plan.steps:
                message, hint = plan.blockers[0]
                raise PgSurgeonError(f"this plan cannot be executed: {message}", hint=hint)
            return Exit.CLEAN
        if plan.blockers:
            message, hint = plan.blockers[0]
            raise PgSurgeonError(f"refusing to execute: {message}", hint=hint)
        if not plan.steps:
            if args.format == "json":
                print(json.dumps({"plan": plan.to_json(), "execution": None}, indent=2, default=str))
            return Exit.CLEAN
        if not _confirm(args, len(plan.steps), plan.table):
            say("not executed")
            return Exit.FAILED
        report: dict[str, Any] = execute(plan, ctx, run_dir, say)
    finally:
        ctx.conn.close()
        if ctx.source is not None:
            ctx.source.close()
    after = report.get("after") or {}
    if plan.carved_rows and not plan.options.get("reinsert"):
        say(f"{len(plan.carved_rows)} row(s) carved with certainty were not put back; load them into the table:")
        say("  " + carved_load_command(ctx, run_dir, getattr(args, "conn_words", "")))
    say(f"report: {run_dir / 'report.json'}")
    if args.format == "json":
        print(json.dumps({"plan": plan.to_json(), "execution": report}, indent=2, default=str))
    return Exit.CLEAN if after.get("clean") else Exit.DAMAGE
