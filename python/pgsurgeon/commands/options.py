"""Options every command spells the same way, as PostgreSQL's own tools spell them (psql, pg_dump, pg_amcheck).

Connection: ``-d/--dbname`` (a database name, or a whole conninfo / postgresql:// URI), ``-h/--host``,
``-p/--port``, ``-U/--username``, ``-w/--no-password``, ``-W/--password``; ``--dsn`` is the old spelling of
``-d``. Whatever is not given is left out of the connection string so that libpq fills it in from the PG*
environment variables, ``~/.pgpass`` and its defaults, exactly as for psql. Because ``-h`` is the host, a
command's help is ``-?/--help`` (as in pg_dump).

Data directory: ``-D/--pgdata``, defaulting to ``$PGDATA`` where a command needs one. Table: ``-t/--table``.
Output on stdout: ``--format text|json``; a file format written to disk: ``-F/--file-format``. Durations: ``500ms``,
``30s``, ``10min``, ``1h``, or a bare number of seconds. Progress: ``-P/--progress``.

:func:`resolve` runs once after parsing (from ``cli.main``) and leaves ``args.dsn`` as the connection string the
command passes on (None when a command's connection is optional and no option was given) and ``args.conn_words``
as the connection options to repeat in the commands printed as next steps.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import shlex
from pathlib import Path

from pgsurgeon.errors import UsageError

_CONN = "_connection"
"""Namespace key: "required" or "optional" for commands with connection options."""
_PGDATA = "_pgdata_default"
"""Namespace key: True when -D defaults to $PGDATA."""

_POSITIONAL = "_pgdata_positional"
"""Namespace key: the positional argument that may give the data directory instead of -D."""

_CONNINFO_RE = re.compile(r"^\s*(?:postgres(?:ql)?://|[A-Za-z_]+\s*=)")


def is_conninfo(text: str) -> bool:
    """True for a connection string (``key=value …`` or a URI), as libpq decides for ``dbname``."""
    return bool(_CONNINFO_RE.match(text))


def add_connection(p: argparse.ArgumentParser, *, optional: bool = False, purpose: str = "") -> None:
    """The connection options. ``optional``: the command works offline and connects only when one is given."""
    title = "connection options (PG* environment variables and ~/.pgpass fill in the rest, as for psql)"
    if optional:
        title = "connection options, optional" + (f" ({purpose})" if purpose else "") + "; PG* variables apply"
    g = p.add_argument_group(title)
    g.add_argument(
        "-d",
        "--dbname",
        dest="dbname",
        metavar="DBNAME",
        help="database name, or a connection string ('host=… dbname=…' or postgresql://…)",
    )
    g.add_argument("--dsn", dest="dbname", help=argparse.SUPPRESS)  # the old spelling of -d
    g.add_argument("-h", "--host", metavar="HOSTNAME", help="database server host or socket directory")
    g.add_argument("-p", "--port", metavar="PORT", help="database server port")
    g.add_argument("-U", "--username", metavar="USERNAME", help="user name to connect as")
    w = g.add_mutually_exclusive_group()
    w.add_argument(
        "-w",
        "--no-password",
        dest="password_prompt",
        action="store_const",
        const=False,
        default=None,
        help="never prompt for a password",
    )
    w.add_argument(
        "-W", "--password", dest="password_prompt", action="store_const", const=True, help="prompt for a password"
    )
    p.set_defaults(**{_CONN: "optional" if optional else "required"})


def add_pgdata(p: argparse.ArgumentParser, *, env_default: bool, help: str, positional: str | None = None) -> None:
    """``-D/--pgdata``; with ``env_default`` it falls back on ``$PGDATA`` (as pg_ctl and pg_controldata do).
    ``positional``: the attribute of a positional argument that also names it (the older spelling, kept)."""
    if env_default:
        help += " (default: $PGDATA)"
    p.add_argument("-D", "--pgdata", type=Path, metavar="DATADIR", help=help)
    p.set_defaults(**{_PGDATA: env_default, _POSITIONAL: positional})


def add_rebuild(p: argparse.ArgumentParser, *, example: str) -> None:
    """The options of a command that rebuilds a bookkeeping segment: the data directory, which segment, a dry run
    unless ``--execute``, where the undo manifest goes, and the output format."""
    p.add_argument("datadir", nargs="?", type=Path, metavar="PGDATA", help="the data directory (or -D)")
    add_pgdata(p, env_default=True, help="the data directory", positional="datadir")
    p.add_argument(
        "--segment", metavar="NAME", help=f"the segment to rebuild, e.g. {example} (default: the first missing)"
    )
    p.add_argument("--execute", action="store_true", help="write the segment (the server must be stopped)")
    p.add_argument("--manifest", type=Path, help="where the undo manifest goes (default: ./pgsurgeon-….json)")
    add_format(p)


def add_table(p: argparse._ActionsContainer, *, required: bool = False, repeat: bool = False, help: str) -> None:
    if repeat:
        p.add_argument("-t", "--table", action="append", default=[], metavar="TABLE", help=help + " (repeatable)")
    else:
        p.add_argument("-t", "--table", required=required, metavar="TABLE", help=help)


def add_format(
    p: argparse.ArgumentParser,
    *,
    help: str = "output on stdout (default: text)",
    choices: tuple[str, ...] = ("text", "json"),
) -> None:
    p.add_argument("--format", choices=choices, default="text", help=help)


def add_progress(p: argparse.ArgumentParser, *, help: str) -> None:
    p.add_argument("-P", "--progress", action="store_true", help=help)


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|min|h)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A duration in seconds: ``500ms``, ``30s``, ``10min``, ``1h`` or a bare number of seconds (0 is none)."""
    m = _DURATION.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 500ms, 30s, 10min, or seconds)")
    return float(m.group(1)) * _UNIT_S[m.group(2) or "s"]


def add_duration(p: argparse.ArgumentParser, flag: str, *, default: float, help: str) -> None:
    shown = "none" if not default else _show_duration(default)
    p.add_argument(flag, type=duration, default=default, metavar="DURATION", help=f"{help} (default: {shown})")


def _show_duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}min"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


# ------------------------------------------------------------------------------------------ after parsing


def build_conninfo(
    dbname: str | None = None,
    host: str | None = None,
    port: str | None = None,
    username: str | None = None,
    password: str | None = None,
) -> str:
    """A libpq connection string from the options; options given separately override those inside a conninfo
    passed as ``dbname`` (libpq's rule for expand_dbname). Empty when nothing is given: libpq's defaults apply."""
    from pgsurgeon import db

    base = ""
    params: dict[str, str] = {}
    if dbname:
        if is_conninfo(dbname):
            db.parse_dsn(dbname)  # a malformed one is a usage error with the driver's reason
            base = dbname
        else:
            params["dbname"] = dbname
    for key, value in (("host", host), ("port", port), ("user", username), ("password", password)):
        if value:
            params[key] = value
    if not params:
        return base
    from psycopg.conninfo import make_conninfo

    return make_conninfo(base, **params)


def conn_words(dsn: str | None) -> str:
    """The connection as options to paste into a next command (``-h … -p … -U … -d …``), never the password;
    parameters psql has no option for stay in a ``-d`` conninfo. Empty for no connection string (PG* apply)."""
    if not dsn:
        return ""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        info = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None and k != "password"}
    except Exception:  # a malformed string was refused earlier; never fail while printing advice
        return ""
    words: list[str] = []
    for key, flag in (("host", "-h"), ("port", "-p"), ("user", "-U")):
        if key in info:
            words += [flag, info.pop(key)]
    dbname = info.pop("dbname", None)
    if info:
        words += ["-d", make_conninfo("", **({"dbname": dbname} if dbname else {}), **info)]
    elif dbname:
        words += ["-d", dbname]
    return shlex.join(words)


def resolve(args: argparse.Namespace) -> None:
    """Turn the parsed options into what the commands use: ``args.dsn``, ``args.conn_words`` and ``args.pgdata``."""
    mode = getattr(args, _CONN, None)
    if mode is not None:
        given = any(getattr(args, k, None) for k in ("dbname", "host", "port", "username"))
        password = None
        if args.password_prompt:
            password = getpass.getpass("Password: ")
        if mode == "optional" and not given and password is None:
            args.dsn = None
        else:
            args.dsn = build_conninfo(args.dbname, args.host, args.port, args.username, password)
        args.conn_words = conn_words(args.dsn) if args.dsn is not None else ""
    positional = getattr(args, _POSITIONAL, None)
    if positional and getattr(args, positional, None) is not None:
        if args.pgdata is not None:
            raise UsageError("give the data directory once: as an argument or with -D, not both")
        args.pgdata = getattr(args, positional)
    if getattr(args, _PGDATA, False) and getattr(args, "pgdata", None) is None:
        env = os.environ.get("PGDATA")
        args.pgdata = Path(env) if env else None


def require_pgdata(args: argparse.Namespace, what: str = "the data directory") -> Path:
    """``args.pgdata`` (from -D, a positional argument or $PGDATA), or a usage error saying how to give it."""
    pgdata: Path | None = getattr(args, "pgdata", None)
    if pgdata is None:
        raise UsageError(f"no data directory given for {what}", hint="pass -D DATADIR or set PGDATA")
    return pgdata
