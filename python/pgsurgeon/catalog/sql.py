"""The catalog through SQL: how every command that takes ``--table`` finds the relation the user means (diagnose,
repair and salvage share it). The files source (catalog.files) answers the same questions with no server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.errors import UsageError

if TYPE_CHECKING:
    from psycopg import Connection

Query = Callable[[str, dict[str, Any]], "list[tuple[Any, ...]] | None"]
"""Runs one catalog query: its rows, or None when the server refused it."""


def lookup_relation(query: Query, text: str) -> tuple[int, str] | None:
    """OID and relkind of a ``--table`` argument: SQL text first (``public."Mixed Case"``), then the exact stored
    name, ``schema.name`` split at each dot (names may hold dots and spaces) or a name the search_path shows."""
    rows = query(db.load_sql("catalog_regclass"), {"sqlname": text})  # to_regclass raises on bad syntax before 16
    if rows:
        return int(rows[0][0]), str(rows[0][1])
    candidates: list[tuple[str | None, str]] = [(None, text)]
    candidates += [(text[:i], text[i + 1 :]) for i, ch in enumerate(text) if ch == "."]
    for schema, name in candidates:
        rows = query(db.load_sql("catalog_resolve"), {"schema": schema, "name": name})
        if rows:
            return int(rows[0][0]), str(rows[0][1])
    return None


def not_found(text: str, database: str) -> UsageError:
    return UsageError(
        f"no table {text!r} in database {database}",
        hint='give the name as SQL text (schema."Mixed Case") or exactly as stored (my schema.My Table)',
    )


def resolve_relation(conn: Connection[tuple[Any, ...]], text: str) -> tuple[int, str]:
    """:func:`lookup_relation` on a connection; a usage error when nothing matches."""

    def query(sql_text: str, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
        try:
            with conn.transaction():
                return conn.execute(sql_text, params).fetchall()
        except db.DatabaseError:
            return None

    found = lookup_relation(query, text)
    if found is None:
        raise not_found(text, conn.info.dbname)
    return found
