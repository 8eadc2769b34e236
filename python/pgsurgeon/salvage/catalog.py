"""What salvage knows about the table it saves: the relation and its TOAST table and btree indexes, the columns
with their types, the key, and what the server says about reading it. Everything comes from the catalog layer
(pgsurgeon.catalog); this module only gathers it for one table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgsurgeon import db, loss
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import ROLE_INDEX, ROLE_TABLE, ROLE_TOAST, ROLE_TOAST_INDEX, Column, Relation
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.catalog.types import load_types, type_desc
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composed

    from pgsurgeon.boundary import ColumnOut, RelDesc

# The handler of heap itself: an access method made with CREATE ACCESS METHOD over it stores heap pages too.
HEAP_HANDLER = "heap_tableam_handler"


@dataclass
class Table:
    """A table to salvage."""

    rel: Relation
    facts: ServerFacts
    toast: Relation | None = None
    toast_index: Relation | None = None
    """The TOAST table's index on (chunk_id, chunk_seq): salvage --deleted finds deleted values through its pages."""
    columns: list[Column] = field(default_factory=list)
    indexes: list[Relation] = field(default_factory=list)
    """Its valid btree indexes: their leaf entries tell which rows a lost page held."""
    key: list[str] = field(default_factory=list)
    """The columns of the primary key, or of a unique index over NOT NULL columns (empty: none)."""
    key_desc: loss.KeyDesc | None = None
    """That key as the loss account reads it from index entries."""

    @property
    def toast_nblocks(self) -> int:
        return self.toast.nblocks if self.toast is not None else 0

    def toast_ident(self) -> Composed | None:
        return self.toast.ident() if self.toast is not None else None

    @property
    def live_columns(self) -> list[Column]:
        """The columns a salvage file holds, in order: those ``COPY table TO`` writes and ``COPY table FROM`` reads,
        so every column but dropped and generated ones. A virtual generated column (PostgreSQL 18) has no value on
        disk and a stored one is recomputed on reload, so neither belongs in a file meant for ``\\copy t FROM``."""
        return [c for c in self.columns if not c.dropped and not c.generated]

    def select_list(self) -> Composed:
        """The live columns as a SQL select list (what reading rows through SQL must use instead of ``*``)."""
        return db.sql.SQL(", ").join(db.sql.Identifier(c.name) for c in self.live_columns)

    def rel_desc(self) -> RelDesc:
        """RelDesc for the core (crates/core/src/format/tuple/)."""
        return {
            "natts": self.rel.natts,
            "has_toast": self.rel.toast_oid != 0,
            "toast_relid": self.rel.toast_oid,
            "attrs": [
                {
                    "attnum": c.attnum,
                    "attlen": c.attlen,
                    "attalign": c.attalign,
                    "attbyval": c.attbyval,
                    "attisdropped": c.dropped,
                    "typname": c.typname,
                    "attstorage": c.storage,
                }
                for c in self.columns
            ],
        }

    def columns_out(self, generated: bool = False) -> list[ColumnOut]:
        """ColumnOut list for the carver: the live columns, and with ``generated`` the generated ones too (in attnum
        order; a virtual one carves as NULL, its value is not on disk, so only for callers that recompute it)."""
        cols = [c for c in self.columns if not c.dropped and (generated or not c.generated)]
        return [{"attnum": c.attnum, "name": c.name, "type": c.type, "missing": c.missing} for c in cols]

    @property
    def unsupported_columns(self) -> list[str]:
        return [f"{c.name} ({c.typname})" for c in self.live_columns if c.type is None]


def load_table(conn: Connection[tuple[Any, ...]], oid: int) -> Table:
    """The table ``oid`` and everything salvage reads it with; a clear error for what salvage cannot read."""
    facts = catalog.server_facts(conn)
    rels = catalog.relatives(conn, [oid], database=facts.database, block_size=facts.block_size)
    rel = next((r for r in rels if r.role == ROLE_TABLE), None)
    if rel is None:
        raise PgSurgeonError(f"table with oid {oid} disappeared", hint="run salvage again")
    if rel.relkind not in ("r", "m", "t"):
        kinds = {"p": "a partitioned table (salvage its partitions)", "v": "a view", "f": "a foreign table"}
        raise PgSurgeonError(
            f"{rel.qualified} is {kinds.get(rel.relkind, 'not a table')}",
            hint="salvage reads heap tables (and materialized views) block by block",
        )
    if rel.filepath is None:
        raise PgSurgeonError(f"{rel.qualified} has no storage", hint="salvage reads a table's files block by block")
    if rel.amhandler not in (HEAP_HANDLER, ""):
        raise PgSurgeonError(
            f"{rel.qualified} uses table access method {rel.amname}, not heap", hint="salvage only knows heap pages"
        )
    t = Table(
        rel,
        facts,
        toast=next((r for r in rels if r.role == ROLE_TOAST), None),
        toast_index=next((r for r in rels if r.role == ROLE_TOAST_INDEX), None),
    )
    # sizes apart: they fail when a segment file is missing (-1 then: the files say)
    rel.size = catalog.size_or_missing(conn, rel.oid)
    if t.toast is not None:
        t.toast.size = max(0, catalog.size_or_missing(conn, t.toast.oid))
    t.indexes = sorted(
        (r for r in rels if r.role == ROLE_INDEX and r.amname == "btree" and r.usable), key=lambda r: r.name
    )
    catalog.read_sizes(conn, t.indexes)
    t.columns = catalog.columns(conn, oid)
    types = load_types(conn, {c.typid for c in t.columns if not c.dropped and c.typid})
    for c in t.columns:
        if not c.dropped:
            c.type = type_desc(c.typid, types)
    key = catalog.unique_key(conn, oid)
    t.key = key.columns if key is not None else []
    t.key_desc = loss.key_from_sql(
        key, {r.oid: r.name for r in t.indexes}, {c.attnum: c.type for c in t.columns}, facts.version_num
    )
    return t
