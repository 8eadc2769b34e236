"""What salvage learns about a table and its server through SQL: names, files, columns and their types, TOAST
table, btree indexes, the data directory and the transaction horizon."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog.types import MAX_DEPTH, NAMED_TYPES, Types, type_desc
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composed


@dataclass
class Column:
    attnum: int
    name: str
    attlen: int
    attalign: str
    attbyval: bool
    dropped: bool
    storage: str
    typid: int
    typname: str
    missing: str | None
    generated: str = ""
    """pg_attribute.attgenerated: 's' stored, 'v' virtual (PostgreSQL 18), '' for an ordinary column."""
    type: dict[str, Any] | None = None
    """TypeDesc for the core (crates/core/src/datum/mod.rs), None when the carver cannot print this type."""


@dataclass
class IndexInfo:
    name: str
    filepath: str
    size: int


@dataclass
class TableInfo:
    oid: int
    schema: str
    name: str
    relkind: str
    natts: int
    filepath: str
    size: int
    toast_oid: int
    toast_filepath: str | None
    toast_size: int
    toast_schema: str | None
    toast_name: str | None
    amname: str
    block_size: int
    server_version_num: int
    checksums: bool
    superuser: bool
    read_server_files: bool
    columns: list[Column] = field(default_factory=list)
    indexes: list[IndexInfo] = field(default_factory=list)
    key: list[str] = field(default_factory=list)
    """The columns of the primary key, or of a unique index over NOT NULL columns (empty: none)."""

    @property
    def nblocks(self) -> int:
        return max(0, self.size) // self.block_size

    @property
    def toast_nblocks(self) -> int:
        return self.toast_size // self.block_size

    @property
    def display(self) -> str:
        """schema.name for people."""
        return f"{self.schema}.{self.name}"

    @property
    def sql_name(self) -> str:
        """The table as quoted SQL text."""
        return db.quote_ident(self.schema, self.name)

    def ident(self) -> Composed:
        return db.sql.SQL("{}.{}").format(db.sql.Identifier(self.schema), db.sql.Identifier(self.name))

    def toast_ident(self) -> Composed | None:
        if not self.toast_schema or not self.toast_name:
            return None
        return db.sql.SQL("{}.{}").format(db.sql.Identifier(self.toast_schema), db.sql.Identifier(self.toast_name))

    @property
    def live_columns(self) -> list[Column]:
        """The columns a salvage file holds, in order: those ``COPY table TO`` writes and ``COPY table FROM`` reads,
        so every column but dropped and generated ones. A virtual generated column (PostgreSQL 18) has no value on
        disk and a stored one is recomputed on reload, so neither belongs in a file meant for ``\\copy t FROM``."""
        return [c for c in self.columns if not c.dropped and not c.generated]

    def select_list(self) -> Composed:
        """The live columns as a SQL select list (what reading rows through SQL must use instead of ``*``)."""
        return db.sql.SQL(", ").join(db.sql.Identifier(c.name) for c in self.live_columns)

    def rel_desc(self) -> dict[str, Any]:
        """RelDesc for the core (crates/core/src/format/tuple.rs)."""
        return {
            "natts": self.natts,
            "has_toast": self.toast_oid != 0,
            "toast_relid": self.toast_oid,
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

    def columns_out(self, generated: bool = False) -> list[dict[str, Any]]:
        """ColumnOut list for the carver: the live columns, and with ``generated`` the generated ones too (in attnum
        order; a virtual one carves as NULL, its value is not on disk, so only for callers that recompute it)."""
        cols = [c for c in self.columns if not c.dropped and (generated or not c.generated)]
        return [{"attnum": c.attnum, "name": c.name, "type": c.type, "missing": c.missing} for c in cols]

    @property
    def unsupported_columns(self) -> list[str]:
        return [f"{c.name} ({c.typname})" for c in self.live_columns if c.type is None]


def _load_types(conn: Connection[tuple[Any, ...]], oids: set[int]) -> Types:
    """Every type ``oids`` need to be printed: their base, element, sub and attribute types, transitively."""
    types = Types()
    want = set(oids)
    for _ in range(MAX_DEPTH):
        missing = sorted(o for o in want if o not in types.rows)
        relids = sorted(
            {int(r[10]) for r in types.rows.values() if r[2] == "c" and int(r[10])} - set(types.attrs.keys())
        )
        if not missing and not relids:
            break
        if missing:
            for row in conn.execute(db.load_sql("salvage_types"), {"oids": missing}).fetchall():
                types.rows[int(row[0])] = row
        if relids:
            for relid in relids:
                types.attrs[relid] = []
            for arow in conn.execute(db.load_sql("salvage_type_attrs"), {"relids": relids}).fetchall():
                types.attrs[int(arow[0])].append(arow)
        want = set(types.rows)
        for row in types.rows.values():
            want.update(int(x) for x in (row[7], row[8], row[11]) if int(x) != 0)
        for attrs in types.attrs.values():
            want.update(int(a[6]) for a in attrs if not a[5] and int(a[6]) != 0)
    enums = [o for o, r in types.rows.items() if r[2] == "e"]
    if enums:
        for typid, label_oid, label in conn.execute(db.load_sql("salvage_enums"), {"oids": enums}).fetchall():
            types.labels.setdefault(int(typid), {})[str(int(label_oid))] = label
    named = sorted(o for o in types.rows if o in NAMED_TYPES)
    if named:
        for typid, obj, text in conn.execute(db.load_sql("salvage_reg_names"), {"types": named}).fetchall():
            types.names.setdefault(int(typid), {})[str(int(obj))] = text
    return types


def _size(conn: Connection[tuple[Any, ...]], oid: int) -> int:
    """pg_relation_size, or -1 when the server cannot tell (a segment file is missing)."""
    try:
        with conn.transaction():
            row = conn.execute(db.load_sql("salvage_size"), {"oid": oid}).fetchone()
    except db.DatabaseError:
        return -1
    return int(row[0]) if row else -1


def load_table(conn: Connection[tuple[Any, ...]], oid: int) -> TableInfo:
    row = conn.execute(db.load_sql("salvage_table"), {"oid": oid}).fetchone()
    if row is None:
        raise PgSurgeonError(f"table with oid {oid} disappeared", hint="run salvage again")
    cols = [d.name for d in conn.execute(db.load_sql("salvage_table"), {"oid": oid}).description or []]
    info = dict(zip(cols, row, strict=True))
    if info["relkind"] not in ("r", "m", "t"):
        kinds = {"p": "a partitioned table (salvage its partitions)", "v": "a view", "f": "a foreign table"}
        raise PgSurgeonError(
            f"{info['schema']}.{info['name']} is {kinds.get(info['relkind'], 'not a table')}",
            hint="salvage reads heap tables (and materialized views) block by block",
        )
    if info["amhandler"] not in ("heap_tableam_handler", ""):
        raise PgSurgeonError(
            f"{info['schema']}.{info['name']} uses table access method {info['amname']}, not heap",
            hint="salvage only knows heap pages",
        )
    t = TableInfo(
        oid=int(info["oid"]),
        schema=info["schema"],
        name=info["name"],
        relkind=info["relkind"],
        natts=int(info["natts"]),
        filepath=info["filepath"],
        size=_size(conn, int(info["oid"])),
        toast_oid=int(info["toast_oid"] or 0),
        toast_filepath=info["toast_filepath"],
        toast_size=_size(conn, int(info["toast_oid"])) if info["toast_oid"] else 0,
        toast_schema=info["toast_schema"],
        toast_name=info["toast_name"],
        amname=info["amname"] or "heap",
        block_size=int(info["block_size"]),
        server_version_num=int(info["server_version_num"]),
        checksums=bool(info["checksums"]),
        superuser=bool(info["superuser"]),
        read_server_files=bool(info["read_server_files"]),
    )
    for r in conn.execute(db.load_sql("salvage_columns"), {"oid": oid}).fetchall():
        attnum, name, attlen, attalign, attbyval, dropped, storage, typid, typname, missing, generated = r
        t.columns.append(
            Column(
                int(attnum),
                name,
                int(attlen),
                attalign,
                bool(attbyval),
                bool(dropped),
                storage,
                int(typid),
                typname,
                missing,
                generated or "",
            )
        )
    types = _load_types(conn, {c.typid for c in t.columns if not c.dropped and c.typid})
    for c in t.columns:
        if not c.dropped:
            c.type = type_desc(c.typid, types)
    for name, filepath, size in conn.execute(db.load_sql("salvage_indexes"), {"oid": oid}).fetchall():
        t.indexes.append(IndexInfo(name, filepath, int(size)))
    key = conn.execute(db.load_sql("salvage_key"), {"oid": oid}).fetchone()
    t.key = list(key[0]) if key and key[0] else []
    return t


@dataclass
class ServerFacts:
    next_xid: int
    data_directory: str | None
    system_identifier: str | None
    segment_bytes: int
    """The cluster's segment size (``segment_size``, fixed at build time): pages are read by it."""
    encoding: str


def server_facts(conn: Connection[tuple[Any, ...]]) -> ServerFacts:
    next_xid, data_directory, segment_bytes, encoding = conn.execute(db.load_sql("salvage_server")).fetchone() or (
        None,
        None,
        1 << 30,
        "UTF8",
    )
    sysid: str | None = None
    try:
        row = conn.execute(db.load_sql("salvage_sysid")).fetchone()
        sysid = str(row[0]) if row else None
    except db.DatabaseError:
        sysid = None
    return ServerFacts(int(next_xid or 0), data_directory, sysid, int(segment_bytes), str(encoding))


def local_pgdata(facts: ServerFacts, table: TableInfo, override: Path | None) -> Path | None:
    """The server's data directory when it can be read from here (and is the same cluster), else None."""
    from pgsurgeon import core

    candidate = override or (Path(facts.data_directory) if facts.data_directory else None)
    if candidate is None:
        return None
    try:
        if not (candidate / table.filepath).is_file() or not (candidate / "global" / "pg_control").is_file():
            return None
        if facts.system_identifier is not None:
            control = core.read_control(candidate)
            if str(control.get("system_identifier")) != facts.system_identifier:
                return None
        with (candidate / table.filepath).open("rb"):
            pass
    except (OSError, ValueError):
        return None
    return candidate
