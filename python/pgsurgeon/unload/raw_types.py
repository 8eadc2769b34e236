"""Values of types the row engine cannot print (an extension's base types: hstore, citext, PostGIS's geometry…),
printed by their own output functions in the catalog copy's server, which has the extension's library.

The row engine writes such a column's stored bytes (detoasted, decompressed) as bytea hex. In the copy, a varlena
type with bytea's input and output routines and the column type's alignment is created once per alignment, with a
binary cast to the column's type (``CREATE CAST … WITHOUT FUNCTION``: the bytes are the value, as the table stored it).
The data file is loaded into a temporary table (every other column as text, which COPY gives back as it took it)
and written again through ``raw::type::text``: the type's own output. Only the throwaway copy is written."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon.catalog.files import FIRST_NORMAL_OID, DbCatalog
from pgsurgeon.db import quote_ident

if TYPE_CHECKING:
    import psycopg

    from pgsurgeon.boundary import TypeDesc

BYTEA = 17
_ALIGNMENTS = {"c": "char", "s": "int2", "i": "int4", "d": "double"}


@dataclass(frozen=True)
class RawColumn:
    type_name: str
    """The column's (base) type, schema-qualified and quoted."""
    typalign: str


@dataclass
class RawTable:
    """A data file with columns carved as bytes: printed again by the copy's server."""

    database: str
    path: Path
    csv: bool
    columns: list[str]
    raw: dict[str, RawColumn]


def raw_desc(cat: DbCatalog, desc: TypeDesc) -> tuple[TypeDesc, RawColumn] | None:
    """For a base type the row engine does not know (defined after initdb, printed by an output function of its
    own) and stored as a varlena: bytea's description instead (its bytes as hex), and how to print it again."""
    oid = int(desc["oid"])
    row = cat.types.get(oid)
    if oid < FIRST_NORMAL_OID or desc.get("typtype") != "b" or desc.get("elem") or row is None or row.typlen != -1:
        return None
    if row.typalign not in _ALIGNMENTS:
        return None
    raw: TypeDesc = {**desc, "oid": BYTEA, "name": "bytea"}
    return raw, RawColumn(quote_ident(cat.namespaces.get(row.nspoid, "public"), row.name), row.typalign)


@dataclass
class Handoff:
    """The tables carved with raw columns, handed from the carving (main thread) to the schema step while its
    server still runs; what it printed again, and why not where it failed."""

    tables: list[RawTable] = field(default_factory=list)
    decoded: list[Path] = field(default_factory=list)
    failed: dict[Path, str] = field(default_factory=dict)
    _ready: threading.Event = field(default_factory=threading.Event)

    def give(self, tables: list[RawTable]) -> None:
        self.tables = tables
        self._ready.set()

    def take(self, cancelled: threading.Event) -> list[RawTable] | None:
        """The tables, once the carving is done; None when cancelled first."""
        while not self._ready.wait(0.2):
            if cancelled.is_set():
                return None
        return self.tables


def print_again(dsn_for: dict[str, str], tables: list[RawTable], handoff: Handoff) -> None:
    """Each table's raw columns printed by their types' output functions in the copy (``dsn_for``: database →
    connection string)."""
    import psycopg

    by_db: dict[str, list[RawTable]] = {}
    for t in tables:
        by_db.setdefault(t.database, []).append(t)
    for database, group in by_db.items():
        try:
            conn = psycopg.connect(dsn_for[database], autocommit=True)
        except (psycopg.Error, KeyError) as exc:
            handoff.failed.update({t.path: f"cannot connect to the copy: {exc}" for t in group})
            continue
        with conn:
            conn.execute("SET default_transaction_read_only = off")
            # the database's own event triggers must not fire on these statements (they would write to its tables,
            # whose indexes the copy does not hold): replica mode skips the ones not enabled ALWAYS, 17+ skips all
            conn.execute("SET session_replication_role = replica")
            if conn.info.server_version >= 170000:
                conn.execute("SET event_triggers = off")
            casts: set[tuple[str, str]] = set()
            for t in group:
                try:
                    _prepare(conn, t, casts)
                    _rewrite(conn, t)
                    handoff.decoded.append(t.path)
                except psycopg.Error as exc:
                    handoff.failed[t.path] = str(exc).strip().splitlines()[0]


_SCHEMA = "pgsurgeon_raw"


def _carrier(col: RawColumn) -> str:
    """The type carrying the bytes: a varlena printed and read as bytea, with the column type's alignment (a cast
    WITHOUT FUNCTION wants both alike)."""
    return f"{_SCHEMA}.bytes_{col.typalign}"


def _prepare(conn: psycopg.Connection[tuple[object, ...]], t: RawTable, casts: set[tuple[str, str]]) -> None:
    for col in t.raw.values():
        carrier = _carrier(col)
        if (carrier, col.type_name) in casts:
            continue
        if not casts:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_SCHEMA}")
        if not any(c == carrier for c, _ in casts):
            # bytea's own C routines, declared for the new type (an input routine must return its type)
            conn.execute(f"CREATE TYPE {carrier}")
            conn.execute(
                f"CREATE FUNCTION {carrier}_in(cstring) RETURNS {carrier} LANGUAGE internal IMMUTABLE STRICT "
                "AS 'byteain'"
            )
            conn.execute(
                f"CREATE FUNCTION {carrier}_out({carrier}) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT "
                "AS 'byteaout'"
            )
            conn.execute(
                f"CREATE TYPE {carrier} (INPUT = {carrier}_in, OUTPUT = {carrier}_out, INTERNALLENGTH = VARIABLE, "
                f"ALIGNMENT = {_ALIGNMENTS[col.typalign]}, STORAGE = plain)"
            )
        conn.execute(f"CREATE CAST ({carrier} AS {col.type_name}) WITHOUT FUNCTION")
        casts.add((carrier, col.type_name))


def _rewrite(conn: psycopg.Connection[tuple[object, ...]], t: RawTable) -> None:
    cols = [f"c{i}" for i in range(len(t.columns))]
    defs = ", ".join(
        f"{c} {_carrier(t.raw[name])}" if name in t.raw else f"{c} text"
        for c, name in zip(cols, t.columns, strict=True)
    )
    outs = ", ".join(
        f"{c}::{t.raw[name].type_name}::text" if name in t.raw else c for c, name in zip(cols, t.columns, strict=True)
    )
    fmt = "(FORMAT csv)" if t.csv else ""
    conn.execute("DROP TABLE IF EXISTS pg_temp.pgsurgeon_raw")
    conn.execute(f"CREATE TEMP TABLE pgsurgeon_raw ({defs})")
    with conn.cursor().copy(f"COPY pg_temp.pgsurgeon_raw FROM STDIN {fmt}") as cp, t.path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            cp.write(chunk)
    tmp = t.path.with_suffix(t.path.suffix + ".printing")
    with (
        conn.cursor().copy(f"COPY (SELECT {outs} FROM pg_temp.pgsurgeon_raw) TO STDOUT {fmt}") as cp,
        tmp.open("wb") as out,
    ):
        for data in cp:
            out.write(data)
    tmp.replace(t.path)
