"""The one relation model: a table, TOAST table, index or sequence as the catalog describes it, read through SQL
(catalog.sql) or from the data files (catalog.files), and the one column model.

Commands keep what only they need beside a ``Relation`` (diagnose's per-relation findings, salvage's columns and
keys) instead of copying its fields into a model of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg.sql import Composed

    from pgsurgeon.boundary import TypeDesc

# A relation's place beside the one a command was asked about (catalog_relatives.sql).
ROLE_TABLE = "table"
ROLE_TOAST = "toast"
ROLE_TOAST_INDEX = "toast-index"
ROLE_INDEX = "index"
ROLE_HEAP_OF_INDEX = "heap-of-index"

# Page kind of each access method's pages, by pg_am.amname (sequences have relam 0: named "sequence" here).
PAGE_KIND = {
    "heap": "heap",
    "btree": "btree",
    "hash": "hash",
    "gist": "gist",
    "spgist": "spgist",
    "gin": "gin",
    "brin": "brin",
    "sequence": "sequence",
}
TID_CHECKED_AMS = frozenset({"btree", "gist", "spgist", "hash", "gin"})
"""Index access methods whose leaf entries' heap TIDs are checked against their table's line pointers."""
HEAP_RELKINDS = frozenset({"r", "m", "t"})
"""pg_class.relkind of relations whose main fork holds heap pages: tables, materialized views, TOAST tables."""


@dataclass
class Relation:
    """One relation. Only ``oid``, ``schema``, ``name`` and ``relkind`` are always known; the rest is filled by
    whichever source read it (sizes, for instance, take a lock and are read apart: catalog.sql.sizes)."""

    oid: int
    schema: str
    name: str
    relkind: str
    amname: str | None = None
    """pg_am.amname; "heap" for tables without one (before 12), "sequence" for sequences."""
    amhandler: str = ""
    """pg_am.amhandler as text, when read through SQL."""
    database: str = ""
    """The database it lives in; "" for shared catalogs (global/)."""
    role: str = ROLE_TABLE
    table_oid: int = 0
    """The relation it was found as a relative of (itself for a table)."""
    regclass_text: str = ""
    """The server's ``oid::regclass::text``, when read through SQL (see ``regclass``)."""
    filepath: str | None = None
    """Segment 0 of the main fork, relative to the data directory (pg_relation_filepath); None: no storage."""
    relfilenode: int = 0
    size: int = 0
    """Main fork in bytes, when read."""
    vm_size: int = 0
    block_size: int = 8192
    natts: int = 0
    persistence: str = "p"
    toast_oid: int = 0
    primary_key: bool = False
    exclusion: bool = False
    valid: bool = True
    """pg_index.indisvalid (true for relations that are not indexes)."""
    usable: bool = True
    """indisvalid and indisready: the index can be checked."""
    partial: bool = False
    """An index with a WHERE clause: it has no entry for the rows outside it."""
    system: bool = False
    nspoid: int = 0
    reltype: int = 0
    is_partition: bool = False
    partbound: str | None = None

    @property
    def regclass(self) -> str:
        """The relation as the server prints it (``oid::regclass::text``: qualified only when off the search_path),
        or its quoted qualified name when it was not read through SQL."""
        if not self.regclass_text:
            from pgsurgeon.db import quote_ident

            self.regclass_text = quote_ident(self.schema, self.name)
        return self.regclass_text

    @property
    def qualified(self) -> str:
        """schema.name for people."""
        return f"{self.schema}.{self.name}"

    def ident(self) -> Composed:
        """The relation as a quoted SQL identifier (any name works)."""
        from pgsurgeon import db

        return db.sql.SQL("{}.{}").format(db.sql.Identifier(self.schema), db.sql.Identifier(self.name))

    @property
    def nblocks(self) -> int:
        return max(0, self.size) // self.block_size

    @property
    def kind(self) -> str | None:
        """The page kind of its main fork (crates/core/src/format/page.rs PageKind), None when unknown."""
        return PAGE_KIND.get(self.amname or "")

    @property
    def is_heap(self) -> bool:
        return self.relkind in HEAP_RELKINDS

    @property
    def is_index(self) -> bool:
        return self.relkind in ("i", "I")

    @property
    def is_btree(self) -> bool:
        return self.relkind == "i" and self.amname == "btree"

    @classmethod
    def from_row(cls, row: dict[str, Any], **more: Any) -> Relation:
        """A row of catalog_relatives.sql (or any query naming the same columns)."""
        fields = {k: v for k, v in row.items() if k in _FIELDS and v is not None}
        if row.get("regclass"):
            fields["regclass_text"] = row["regclass"]
        return cls(**fields, **more)


_FIELDS = frozenset(Relation.__dataclass_fields__)


@dataclass
class Column:
    """One pg_attribute row as catalog_columns.sql reads it (dropped columns too: old tuples still hold them)."""

    attnum: int
    name: str
    attlen: int
    attalign: str
    attbyval: bool = False
    dropped: bool = False
    storage: str = "p"
    typid: int = 0
    typname: str = ""
    missing: str | None = None
    """attmissingval's value as text, for rows written before the column was added."""
    generated: str = ""
    """pg_attribute.attgenerated: 's' stored, 'v' virtual (PostgreSQL 18), '' for an ordinary column."""
    identity: str = ""
    type_sql: str = ""
    """The column's type as SQL text, typmod included (format_type: ``numeric(10,2)``)."""
    type: TypeDesc | None = None
    """How the row engine prints it (crates/core/src/datum/mod.rs), None when it cannot (filled by salvage)."""
