"""``pgsurgeon explain "<error text>"``: what an error about damaged data means, which kinds of damage produce it,
and the next commands to run, with the block, file and table taken from the message."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.commands import options
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term

if TYPE_CHECKING:
    from rich.console import Console

    from pgsurgeon.explain import Explanation

PLACEHOLDERS = (
    "commands use the connection options given to explain (none: the PG* environment variables), -D or $PGDATA for "
    "the data directory"
)
SHELL_VARIABLES = "; $DB and $REL are set by the commands shown before them"
PGLOG = (
    "; $PGLOG is the server log (explain --file LOG, or a connection to a server whose logging collector runs, "
    "names it)"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="explain a PostgreSQL error about damaged data: what it means, what causes it, what to run next",
        description="Explain error messages from a server log, psql, pg_amcheck or pg_checksums: what they mean in "
        "plain words, which kinds of damage produce them (the 'pgsurgeon corrupt' modes that reproduce them) and "
        "the next commands to run, with the block, file and table from the message filled in. Several messages at "
        "once (a log excerpt) are explained line by line; DETAIL and HINT lines are read with their message.",
    )
    p.add_argument("text", nargs="*", help="the error message(s); read from --file or standard input when omitted")
    p.add_argument("--file", type=Path, help="a log file or excerpt to explain ('-' for standard input)")
    p.add_argument("--list", action="store_true", help="list the messages pgsurgeon knows")
    options.add_format(p)
    options.add_connection(
        p, optional=True, purpose="put into the next commands; with one, relations are named through the server"
    )
    options.add_pgdata(p, env_default=True, help="the data directory, put into the next commands")
    p.set_defaults(func=run)


def _read_input(args: argparse.Namespace) -> str:
    if args.text and args.file:
        raise UsageError("give the message as arguments or with --file, not both")
    if args.text:
        return "\n".join(args.text)
    if args.file is not None:
        path: Path = args.file
        if str(path) == "-":
            return sys.stdin.read()
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise PgSurgeonError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    if not sys.stdin.isatty():
        return sys.stdin.read()
    raise UsageError(
        "give an error message to explain",
        hint="pgsurgeon explain 'invalid page in block 285 of relation base/16384/29724', or --file postgresql.log",
    )


def _mode_lines(exp: Explanation) -> list[str]:
    """Modes that share a condition on one line: 'item-ids, item-id, … — with data checksums on …'."""
    groups: dict[str, list[str]] = {}
    for m in exp.pattern.modes:
        name = m.mode + (f" ({', '.join(m.fields)})" if m.fields else "")
        groups.setdefault(m.when, []).append(name)
    return [", ".join(names) + (f" — {when}" if when else "") for when, names in groups.items()]


def render_text(found: list[Explanation], unknown: int, console: Console) -> None:
    for n, exp in enumerate(found):
        if n:
            console.print()
        times = f"  (x{exp.count})" if exp.count > 1 else ""
        console.print(f"● {exp.line}{times}", style="bold", markup=False, highlight=False)
        console.print(f"  {exp.pattern.title}", style="cyan", markup=False)
        console.print(f"  {exp.meaning()}", markup=False)
        if exp.pattern.kind == "ordinary":
            console.print("  not a sign of damaged data: no corruption diagnosis", style="dim", markup=False)
        elif exp.pattern.modes:
            console.print("  produced by (pgsurgeon corrupt modes):", style="dim", markup=False)
            for line in _mode_lines(exp):
                console.print(f"    - {line}", style="dim", markup=False)
        else:
            console.print(
                "  not reproduced by pgsurgeon corrupt (the damage is outside table and index pages)",
                style="dim",
                markup=False,
            )
        steps = exp.steps()
        if steps:
            console.print("  next:", markup=False)
            for i, s in enumerate(steps, 1):
                console.print(f"    {i}. {s.what}" + (f" (only when {s.when})" if s.when else ""), markup=False)
                prefix = {"shell": "$ ", "sql": "SQL> ", "note": "   "}[s.kind]
                console.print(
                    f"       {prefix}{s.command}",
                    style="green" if s.kind != "note" else "yellow",
                    markup=False,
                    soft_wrap=True,
                )
    console.print()
    commands = " ".join(s.command for exp in found for s in exp.steps())
    footer = PLACEHOLDERS + (SHELL_VARIABLES if "$REL" in commands or "$DB" in commands else "")
    console.print(footer + (PGLOG if "$PGLOG" in commands else ""), style="dim", markup=False)
    if unknown:
        console.print(f"{unknown} other line(s) not recognised", style="dim", markup=False)


def _render_list(console: Console) -> None:
    from pgsurgeon.explain import catalogue

    for entry in catalogue():
        modes = ", ".join(sorted({m["mode"] for m in entry["modes"]})) or "-"
        console.print(f"{entry['id']:22} {entry['title']}  [modes: {modes}]", markup=False)


def run(args: argparse.Namespace) -> int:
    from pgsurgeon.explain import Where, catalogue, explain_text, resolver

    if args.list:
        if args.format == "json":
            print(json.dumps(catalogue(), indent=1))
        else:
            _render_list(term.console())
        return Exit.CLEAN
    text = _read_input(args)
    where = Where(
        conn=args.conn_words,
        pgdata=str(args.pgdata) if args.pgdata else None,
        resolve=resolver(args.dsn) if args.dsn is not None else None,
        log=str(Path(args.file).resolve()) if args.file is not None and str(args.file) != "-" else None,
    )
    found, unknown = explain_text(text, where)
    if args.format == "json":
        doc: dict[str, Any] = {
            "explained": [e.to_json() for e in found],
            "unrecognised": unknown,
            "placeholders": PLACEHOLDERS,
        }
        print(json.dumps(doc, indent=1))
    if not found:
        if args.format == "json":
            return Exit.FAILED
        raise PgSurgeonError(
            "no known error about damaged data in the text",
            hint="paste the ERROR line itself (e.g. 'invalid page in block 285 of relation base/16384/29724'); "
            "'pgsurgeon explain --list' shows the known messages",
        )
    if args.format == "text":
        render_text(found, len(unknown), term.console())
    return Exit.CLEAN
