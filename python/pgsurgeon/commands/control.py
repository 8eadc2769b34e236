"""``pgsurgeon control PGDATA``: pg_control decoded for its version, CRC checked, like pg_controldata."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.commands import options
from pgsurgeon.datadir import XIDS_PER_XACT_FILE
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile
    from pgsurgeon.rescue.plan import ResetPlan

FIRST_NORMAL_XID = 3
"""0 invalid, 1 bootstrap, 2 frozen (transam.h)."""

_TIMES = ("time", "checkpoint_time")
_ONOFF = ("full_page_writes", "wal_log_hints", "track_commit_timestamp", "float8_by_val", "backup_end_required")


def _precedes(a: int, b: int) -> bool:
    """a is older than b in the circular 32-bit space, as TransactionIdPrecedes (transam.c) compares them."""
    diff = (a - b) & 0xFFFFFFFF
    return diff >= 0x80000000


def _xid32(value: Any) -> int:
    """next_xid is printed 'epoch:xid'."""
    return int(str(value).rsplit(":", 1)[-1])


def horizon(kind: str, n: int, oldest: int, nxt: int, pgdata: Path | None) -> tuple[bool, str]:
    """(within, sentence) for transaction or MultiXact ``n`` against the cluster's oldest and next values."""
    name, oldest_name, next_name = (
        ("transaction", "oldestXID", "NextXID") if kind == "xid" else ("MultiXactId", "oldestMulti", "NextMultiXactId")
    )
    if kind == "xid" and n < FIRST_NORMAL_XID:
        return True, f"{name} {n} is a special value (0 invalid, 1 bootstrap, 2 frozen), never looked up"
    if not 0 <= n <= 0xFFFFFFFF:
        return False, f"{n} is not a 32-bit {name} number: the value in the message is not an id"
    if _precedes(n, oldest):
        return False, (
            f"{name} {n} is older than {oldest_name} {oldest}: the cluster keeps no status for it, so no real row "
            f"can still name it unfrozen. A tuple naming it is damaged (its xmin/xmax or infomask), not a real "
            f"{'transaction' if kind == 'xid' else 'MultiXact'}"
        )
    if n == nxt and kind == "xid":
        # StartupCLOG/TrimCLOG read the pg_xact page of the next XID at startup: a server that cannot start says
        # "could not access status of transaction <NextXID>" when that file is gone (issue 29)
        text = (
            f"{name} {n} is the cluster's {next_name}: the server reads its commit-status page at startup, so an "
            "error naming it at startup means the status file is missing or short, not a damaged tuple"
        )
        return True, text + _xact_file(n, pgdata)
    if n == nxt:
        # TrimMultiXact (multixact.c) reads the offsets page of the next MultiXactId at startup
        return True, (
            f"{name} {n} is the cluster's {next_name}: the server reads its offsets page "
            f"(pg_multixact/offsets) at startup, so an error naming it at startup means that file is missing or "
            "short, not a damaged tuple"
        )
    if not _precedes(n, nxt):
        return False, (
            f"{name} {n} is not older than {next_name} {nxt}: it has not been handed out yet. A tuple naming it is "
            "damaged (its xmin/xmax or infomask)"
        )
    text = f"{name} {n} lies within the horizons ({oldest_name} {oldest} .. {next_name} {nxt}): a real id"
    return True, text + (_xact_file(n, pgdata) if kind == "xid" else "")


def _xact_file(xid: int, pgdata: Path | None) -> str:
    """Where transaction ``xid``'s commit status is kept, and whether that file is there."""
    if pgdata is None or not pgdata.is_dir():
        return ""
    seg = pgdata / "pg_xact" / f"{xid // XIDS_PER_XACT_FILE:04X}"
    return f"; its commit status is in {seg.relative_to(pgdata)}" + ("" if seg.exists() else ", which is MISSING")


def _shown(key: str, value: Any) -> str:
    import datetime

    if value is None:  # a field older or newer layouts lack (checkpoint_wal_level before 17, …)
        return "(not in this version's pg_control)"
    if key in _TIMES and isinstance(value, int):
        stamp = datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
        return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")
    if key in _ONOFF and isinstance(value, bool):
        return "on" if value else "off"
    if key == "crc_ok" and isinstance(value, bool):
        return "yes" if value else "no (the server will not start)"
    if key == "default_char_signedness" and isinstance(value, bool):
        return "signed" if value else "unsigned"
    if key == "data_checksum_version":
        return f"{value} ({'on' if value else 'off'})"
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "control",
        help="show pg_control (versions 14-18): checkpoint, XID and MultiXact horizons, checksums, CRC",
        description="Decode PGDATA/global/pg_control without a server, for PostgreSQL 14 to 18, and check its CRC.",
    )
    p.add_argument(
        "datadir", nargs="?", type=Path, metavar="PGDATA", help="data directory or a pg_control file (or -D)"
    )
    options.add_pgdata(p, env_default=True, help="the data directory", positional="datadir")
    options.add_format(p)
    p.add_argument(
        "--xid",
        type=int,
        metavar="N",
        help="say whether transaction N (from an error message) lies within the cluster's XID horizons",
    )
    p.add_argument("--multi", type=int, metavar="N", help="the same for MultiXactId N against the MultiXact horizons")
    p.add_argument(
        "--plan",
        action="store_true",
        help="plan pg_resetwal for a cluster that does not start: each value derived from the files and checked "
        "against pg_control, what a wrong one risks, and the alternatives as commands (nothing is run or written)",
    )
    p.add_argument(
        "--copy",
        type=Path,
        metavar="DIR",
        help="with --plan: where the copy that pg_resetwal runs on goes (default: PGDATA.rescue beside it)",
    )
    p.add_argument(
        "--pg-bin",
        type=Path,
        metavar="DIR",
        help="with --plan: the bin directory of the cluster's postgresql (default: the usual places)",
    )
    p.set_defaults(func=run)


def load(path: Path) -> ControlFile:
    try:
        if path.is_file():
            return core.parse_control(path.read_bytes())
        return core.read_control(path)
    except FileNotFoundError:
        raise PgSurgeonError(
            f"no pg_control under {path}", hint="pass the data directory (the one holding global/pg_control)"
        ) from None
    except core.FormatError as exc:
        raise PgSurgeonError(f"pg_control is not readable: {exc}") from None


def run(args: argparse.Namespace) -> int:
    pgdata = options.require_pgdata(args)
    if args.plan:
        if args.xid is not None or args.multi is not None:
            raise UsageError("--plan does not take --xid or --multi", hint="run them separately")
        return _plan(args, pgdata)
    if args.copy is not None or args.pg_bin is not None:
        raise UsageError("--copy and --pg-bin go with --plan", hint="pgsurgeon control --plan PGDATA --copy DIR")
    control = load(pgdata)
    checks = []
    if args.xid is not None:
        checks.append(
            (
                "xid",
                args.xid,
                *horizon("xid", args.xid, int(control["oldest_xid"]), _xid32(control["next_xid"]), pgdata),
            )
        )
    if args.multi is not None:
        checks.append(
            (
                "multi",
                args.multi,
                *horizon("multi", args.multi, int(control["oldest_multi"]), int(control["next_multi"]), pgdata),
            )
        )
    if checks:
        if args.format == "json":
            print(json.dumps([{"kind": k, "value": n, "within": ok, "text": t} for k, n, ok, t in checks], indent=2))
        else:
            for _k, _n, ok, text in checks:
                print(("" if ok else "outside: ") + text)
        return Exit.CLEAN if all(ok for _k, _n, ok, _t in checks) else Exit.DAMAGE
    # the files the server needs besides pg_control (a restored backup's checkpoint is in its backup_label)
    files = core.cluster_checks(pgdata, wal=not (pgdata / "backup_label").exists()) if pgdata.is_dir() else []
    if args.format == "json":
        print(json.dumps({**control, "findings": files}, indent=2))
    else:
        console = term.console()
        table = term.table(title=f"pg_control of {pgdata}", header_style="bold")
        table.add_column("field")
        table.add_column("value")
        for key, value in control.items():
            table.add_row(key, _shown(key, value))
        console.print(table)
        if not control.get("crc_ok", True):
            console.print(
                "[red]the CRC does not match: the server will refuse to start (incorrect checksum in control file)[/]"
            )
        for f in files:
            console.print(f"{f['code']}: {f['message']}", style="red", markup=False, soft_wrap=True)
            console.print(f"  what to do: {f['remedy']}", markup=False, soft_wrap=True)
    # a warning (a missing timeline history the server starts without) is no damage: scan's rule too
    damaged = any(f["severity"] == "error" for f in files)
    return Exit.CLEAN if control.get("crc_ok", True) and not damaged else Exit.DAMAGE


def _plan(args: argparse.Namespace, pgdata: Path) -> int:
    from pgsurgeon.rescue.plan import PlanRequest, plan_resetwal

    plan = plan_resetwal(PlanRequest(pgdata, copy=args.copy, pg_bin=args.pg_bin))
    if args.format == "json":
        print(json.dumps(plan.as_dict(), indent=2))
    else:
        _render_plan(plan)
    # a plan made without a sound pg_control is itself a finding: the cluster's control file is damaged
    return Exit.CLEAN if plan.control_ok else Exit.DAMAGE


def _render_plan(plan: ResetPlan) -> None:
    console = term.console()

    def say(text: str = "", style: str | None = None) -> None:
        console.print(text, style=style, markup=False, soft_wrap=True, highlight=False)

    say(f"pg_resetwal plan for {plan.pgdata} (postgresql {plan.major}); nothing has been run or written", "bold")
    if plan.control_ok:
        say(f"pg_control: CRC good, state {plan.state}; each value below is checked against it")
    else:
        say(f"pg_control: NOT USED: {plan.control_problem}; every value comes from the files alone", "red")
    say(f"block size {plan.blcksz} ({plan.blcksz_source}), WAL segment {plan.wal_seg_size >> 20} MB "
        f"({plan.wal_seg_source})")  # fmt: skip
    say()
    say(("-f needed: " if plan.force else "-f ") + plan.force_why, "yellow" if plan.force else None)
    say()
    for s in plan.settings:
        if s.value is None and s.chosen == "none" and s.key.startswith("commit_ts") and plan.control_ok:
            continue
        shown = "not passed" if s.value is None else str(s.value)
        say(f"{s.option} {s.what}: {shown}  [{s.chosen}]", "bold")
        say(f"    from: {s.source}")
        say(f"    risk: {s.risk}")
    for line in plan.not_derived:
        say(f"not derived: {line}", "red")
    for line in plan.warnings:
        say(f"note: {line}", "yellow")
    say()
    say("pg_resetwal " + " ".join(plan.arguments()) + " DATADIR", "bold")
    for alt in plan.alternatives:
        say()
        say(alt.title, "bold red" if alt.last_resort else "bold")
        say(f"  {alt.summary}")
        for step in alt.steps:
            if step.command:
                say(f"  # {step.what}")
                say(f"  $ {step.command}")
            else:
                say(f"  note: {step.what}")
