"""Rows that violate an exclusion constraint whose index is damaged: listed by ctid before the index is rebuilt.

A damaged GiST index lets a conflicting row in (the insert's check searched the index and missed the row it
conflicts with). REINDEX then fails with ``could not create exclusion constraint``; the plan names the pairs of rows
so the DBA can decide which one goes. The pairs come from a self-join of the table with the constraint's own
operators (pg_constraint.conexclop), read with sequential scans only: the index is the damaged part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog.sql import exclusion_constraints

MAX_PAIRS = 100
"""Pairs listed per constraint; the count says how many more there are."""
TIMEOUT_MS = 60_000
"""How long the self-join may take before the plan says it could not list the pairs."""


@dataclass
class Violations:
    constraint: str
    index: str
    pairs: list[tuple[str, str]] = field(default_factory=list)
    """(ctid, ctid) of rows that conflict, at most MAX_PAIRS."""
    count: int = 0
    query: str = ""
    error: str | None = None
    """Why the pairs could not be listed (an expression key, a timeout)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "constraint": self.constraint,
            "index": self.index,
            "count": self.count,
            "pairs": [list(p) for p in self.pairs],
            "query": self.query,
            "error": self.error,
        }


def _query(
    table: db.sql.Composable, columns: list[str], operators: list[str], predicate: str | None
) -> db.sql.Composed:
    """The self-join: each pair once (a.ctid < b.ctid), every key compared with its constraint operator."""
    conds: list[db.sql.Composable] = [db.sql.SQL("a.ctid < b.ctid")]
    for col, op in zip(columns, operators, strict=True):
        conds.append(db.sql.SQL("a.{c} OPERATOR({op}) b.{c}").format(c=db.sql.Identifier(col), op=db.sql.SQL(op)))
    if predicate:
        # a partial constraint's predicate names the table's columns unqualified: check it on each side
        conds.append(db.sql.SQL("a.ctid IN (SELECT ctid FROM {t} WHERE {p})").format(t=table, p=db.sql.SQL(predicate)))
        conds.append(db.sql.SQL("b.ctid IN (SELECT ctid FROM {t} WHERE {p})").format(t=table, p=db.sql.SQL(predicate)))
    return db.sql.SQL(
        "SELECT a.ctid::text, b.ctid::text, count(*) OVER () FROM {t} a JOIN {t} b ON {on} "
        "ORDER BY a.ctid, b.ctid LIMIT {n}"
    ).format(t=table, on=db.sql.SQL(" AND ").join(conds), n=db.sql.Literal(MAX_PAIRS))


def violations(conn: db.Connection, table_oid: int, table: db.sql.Composable, indexes: set[str]) -> list[Violations]:
    """The pairs of rows violating each exclusion constraint of the table backed by one of ``indexes``."""
    out = []
    for name, index, predicate, columns, operators in exclusion_constraints(conn, table_oid):
        if index not in indexes:
            continue
        v = Violations(str(name), str(index))
        out.append(v)
        if any(c is None for c in columns):
            v.error = "a key of the constraint is an expression: its rows are not compared here"
            continue
        q = _query(table, list(columns), list(operators), predicate)
        v.query = q.as_string(conn)
        try:
            with conn.transaction():
                for setting in ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
                    conn.execute(db.sql.SQL("SET LOCAL {} = off").format(db.sql.Identifier(setting)))
                conn.execute(db.sql.SQL("SET LOCAL statement_timeout = {}").format(db.sql.Literal(TIMEOUT_MS)))
                rows = conn.execute(q).fetchall()
        except db.Error as exc:
            v.error = f"the rows could not be compared: {str(exc).splitlines()[0]}"
            continue
        v.pairs = [(str(a), str(b)) for a, b, _ in rows]
        v.count = int(rows[0][2]) if rows else 0
    return out
