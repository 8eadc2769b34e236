"""Thin database helpers: connecting, the packaged SQL files, and the driver's exceptions.

Other modules import exceptions and ``sql`` from here, not from the driver, so the driver stays in one place.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.errors import PgSurgeonError, UsageError

if TYPE_CHECKING:
    import psycopg
    from psycopg import errors, sql

    Connection = psycopg.Connection
    Error = psycopg.Error
    DatabaseError = psycopg.DatabaseError
    OperationalError = psycopg.OperationalError
    ProgrammingError = psycopg.ProgrammingError
    InterfaceError = psycopg.InterfaceError
    DataCorrupted = errors.DataCorrupted  # SQLSTATE XX001: invalid page in block, checksum failures
    IndexCorrupted = errors.IndexCorrupted  # SQLSTATE XX002
    InternalError = errors.InternalError_  # SQLSTATE XX000: could not access status of transaction
    QueryCanceled = errors.QueryCanceled
    UndefinedFile = errors.UndefinedFile
    UndefinedTable = errors.UndefinedTable
    FeatureNotSupported = errors.FeatureNotSupported
else:
    # The driver takes ~140 ms to import; commands that never touch a server (scan, inspect of a file)
    # should not pay for it, so these names resolve on first use (PEP 562).
    _LAZY = {
        "Connection": ("psycopg", "Connection"),
        "Error": ("psycopg", "Error"),
        "DatabaseError": ("psycopg", "DatabaseError"),
        "OperationalError": ("psycopg", "OperationalError"),
        "ProgrammingError": ("psycopg", "ProgrammingError"),
        "InterfaceError": ("psycopg", "InterfaceError"),
        "DataCorrupted": ("psycopg.errors", "DataCorrupted"),
        "IndexCorrupted": ("psycopg.errors", "IndexCorrupted"),
        "InternalError": ("psycopg.errors", "InternalError_"),
        "QueryCanceled": ("psycopg.errors", "QueryCanceled"),
        "UndefinedFile": ("psycopg.errors", "UndefinedFile"),
        "UndefinedTable": ("psycopg.errors", "UndefinedTable"),
        "FeatureNotSupported": ("psycopg.errors", "FeatureNotSupported"),
        "errors": ("psycopg", "errors"),
        "sql": ("psycopg", "sql"),
        "psycopg": ("psycopg", None),
    }

    def __getattr__(name: str) -> Any:
        try:
            module_name, attr = _LAZY[name]
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        import importlib

        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value


def quote_ident(*parts: str) -> str:
    """``parts`` as one (qualified) SQL identifier, always quoted, for text no connection formats: pg_dump
    patterns, commands printed for the user, the DDL unload writes. Exactly ``sql.Identifier(*parts)
    .as_string(None)``: psycopg/sql.py ``Identifier._escape_identifier``, its quoting without a connection
    (tests/test_startup.py holds the two equal), without importing the driver (~0.1 s) into commands that never
    connect. SQL sent to a server composes its identifiers with ``sql.Identifier``."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in parts)


def quote_literal(value: str) -> str:
    """``value`` as an SQL string literal for text no connection formats (restore.sql): exactly
    ``sql.Literal(value).as_string(None)``, psycopg/adapt.py ``Dumper.quote`` without a connection (quotes
    doubled; with a backslash, `` E'…'`` and backslashes doubled, whatever standard_conforming_strings libpq last
    saw), held equal to it by tests/test_startup.py, without importing the driver."""
    body = value.replace("'", "''")
    if "\\" not in value:
        return "'" + body + "'"
    return " E'" + body.replace("\\", "\\\\") + "'"


__all__ = [
    "ConnectError",
    "Connection",
    "DataCorrupted",
    "DatabaseError",
    "Error",
    "FeatureNotSupported",
    "IndexCorrupted",
    "InterfaceError",
    "InternalError",
    "OperationalError",
    "ProgrammingError",
    "QueryCanceled",
    "UndefinedFile",
    "UndefinedTable",
    "connect",
    "describe_dsn",
    "dsn_for_database",
    "errors",
    "load_sql",
    "make_dsn",
    "parse_dsn",
    "quote_ident",
    "quote_literal",
    "sql",
]

_SQL_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class ConnectError(PgSurgeonError):
    """Connecting to the server failed; ``__cause__`` holds the driver's exception."""


def make_dsn(**params: str | int) -> str:
    """A libpq connection string from keyword parameters, values quoted as needed."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", **{k: str(v) for k, v in params.items()})


def dsn_for_database(dsn: str, dbname: str) -> str:
    """The same connection string pointed at another database."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, dbname=dbname)


def describe_dsn(dsn: str) -> str:
    """``host:port/dbname`` for messages (never the password)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the server"
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    dbname = info.get("dbname") or info.get("user") or ""
    return f"{host}:{port}/{dbname}"


DSN_HINT = "a dsn is 'host=… port=… dbname=… user=…' or postgresql://user@host:port/dbname"


def parse_dsn(dsn: str) -> dict[str, Any]:
    """The parameters of a connection string; a malformed one is a usage error (the driver's own message, which
    never repeats the password)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        return conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        detail = (str(exc).strip().splitlines() or ["malformed"])[0]
        raise UsageError(f"the dsn is malformed: {detail}", hint=DSN_HINT) from None


def connect(dsn: str, autocommit: bool = True, **kwargs: Any) -> psycopg.Connection[tuple[Any, ...]]:
    """Open a connection; a malformed dsn is a :class:`UsageError`, a failure to connect a :class:`ConnectError`
    (one line plus hint)."""
    import psycopg

    parse_dsn(dsn)
    try:
        return psycopg.connect(dsn, autocommit=autocommit, **kwargs)
    except psycopg.OperationalError as exc:
        detail = (str(exc).strip().splitlines() or ["connection failed"])[0]
        raise ConnectError(
            f"cannot connect to {describe_dsn(dsn)}: {detail}",
            hint="check that the server is running ('pgsurgeon lab status' for lab clusters) and the dsn",
        ) from exc


@functools.cache
def load_sql(name: str) -> str:
    """Text of ``pgsurgeon/sql/<name>.sql`` shipped with the package (cached)."""
    if not _SQL_NAME_RE.match(name):
        raise ValueError(f"invalid sql file name: {name!r}")
    # beside this module (importlib.resources costs every command ~5 ms of imports for the same path)
    resource = Path(__file__).with_name("sql") / f"{name}.sql"
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PgSurgeonError(
            f"packaged sql file {name}.sql is missing",
            hint="reinstall pgsurgeon; the installation is incomplete",
        ) from exc
