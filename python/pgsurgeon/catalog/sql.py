"""The catalog through SQL, the one layer every command asks: how a ``--table`` argument names a relation (the one
resolver), its relatives, their sizes, the server's facts and a relation's columns, each from one query in sql/.
The files source (catalog.files) answers the same questions with no server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from pgsurgeon import db
from pgsurgeon.catalog.relation import Column, Relation
from pgsurgeon.datadir import DEFAULT_BLCKSZ
from pgsurgeon.errors import UsageError

if TYPE_CHECKING:
    from psycopg import Connection

Query = Callable[[str, dict[str, Any]], "list[tuple[Any, ...]] | None"]
"""Runs one catalog query: its rows, or None when the server refused it."""

Runner = Callable[[str, dict[str, Any]], "list[tuple[Any, ...]]"]
"""Runs one catalog query and returns its rows (raising what the server raised): how a command with sessions of
its own (diagnose's survive a crashed backend) has the catalog queries run on them."""
Source: TypeAlias = "Connection[tuple[Any, ...]] | Runner"
"""Where catalog queries run: a connection, or a command's :data:`Runner`."""


def rows_of(src: Source, name: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of sql/``name``.sql run on ``src``."""
    text = db.load_sql(name)  # always run with parameters: a literal % is written %% in every catalog query
    if callable(src):
        return src(text, params or {})
    return src.execute(text, params or {}).fetchall()


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


def query_on(conn: Connection[tuple[Any, ...]]) -> Query:
    """A :data:`Query` on a plain connection: each statement in a savepoint, a refused one answering None."""

    def query(sql_text: str, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
        try:
            with conn.transaction():
                return conn.execute(sql_text, params).fetchall()
        except db.DatabaseError:
            return None

    return query


def resolve_relation(conn: Connection[tuple[Any, ...]], text: str) -> tuple[int, str]:
    """:func:`lookup_relation` on a connection; a usage error when nothing matches."""
    found = lookup_relation(query_on(conn), text)
    if found is None:
        raise not_found(text, conn.info.dbname)
    return found


# ------------------------------------------------------------------------------------------- relatives, sizes

_RELATIVE_COLUMNS = (
    "role",
    "oid",
    "table_oid",
    "regclass",
    "schema",
    "name",
    "relkind",
    "persistence",
    "amname",
    "amhandler",
    "filepath",
    "relfilenode",
    "natts",
    "toast_oid",
    "primary_key",
    "exclusion",
    "valid",
    "usable",
    "partial",
    "system",
)


def relatives_params(tables: list[int] | None, indexes: list[int] | None = None) -> dict[str, Any]:
    """catalog_relatives.sql's parameters: the chosen tables and indexes (both None: every table)."""
    return {"tables": tables, "indexes": indexes}


def relatives_from_rows(rows: list[tuple[Any, ...]], *, database: str, block_size: int) -> list[Relation]:
    """The relations catalog_relatives.sql returned, in its order (table, then its relatives, table by table)."""
    return [
        Relation.from_row(dict(zip(_RELATIVE_COLUMNS, row, strict=True)), database=database, block_size=block_size)
        for row in rows
    ]


def relatives(
    conn: Source,
    tables: list[int] | None,
    indexes: list[int] | None = None,
    *,
    database: str = "",
    block_size: int = DEFAULT_BLCKSZ,
) -> list[Relation]:
    """The chosen relations and their relatives (TOAST table and index, indexes, an index's table)."""
    rows = rows_of(conn, "catalog_relatives", relatives_params(tables, indexes))
    return relatives_from_rows(rows, database=database, block_size=block_size)


def find(conn: Connection[tuple[Any, ...]], text: str, facts: ServerFacts) -> Relation | None:
    """The relation a ``--table`` argument names (any relkind), read like its relatives; None when none matches."""
    found = lookup_relation(query_on(conn), text)
    if found is None:
        return None
    rels = relatives(conn, [found[0]], database=facts.database, block_size=facts.block_size)
    return next((r for r in rels if r.role == "table"), None)


@dataclass(frozen=True)
class Owned:
    """A relation as the server names it, its relkind, and the table its rows belong to (itself for a table)."""

    name: str
    relkind: str
    table: str
    system: bool

    @property
    def is_index(self) -> bool:
        return self.relkind in ("i", "I")


def owner_of(src: Source, *, filenode: int | None = None, toast: str | None = None) -> Owned | None:
    """The relation with this filenode (in the connection's database) or the TOAST table of this name
    (``pg_toast_16414``), with the table it belongs to: an index's table, a TOAST table's (or its index's) owner."""
    rows = rows_of(src, "catalog_owner", {"filenode": filenode, "toast": toast})
    if not rows:
        return None
    rel, relkind, table, system = rows[0]
    return Owned(str(rel), str(relkind), str(table), bool(system))


def database_name(src: Source, oid: int) -> str | None:
    """The name of the database with OID ``oid``, or None when none has it."""
    rows = rows_of(src, "catalog_database_name", {"oid": oid})
    return str(rows[0][0]) if rows else None


def index_candidates(src: Source, ams: list[str], limit: int) -> list[str]:
    """Up to ``limit`` user indexes of the access methods ``ams``, by name."""
    return [str(r[0]) for r in rows_of(src, "catalog_index_candidates", {"ams": ams, "limit": limit})]


def current_logfile(src: Source) -> str | None:
    """The absolute path of the log file the server's logging collector writes, or None."""
    rows = rows_of(src, "server_current_logfile")
    return str(rows[0][0]) if rows else None


def user_tables(conn: Source) -> list[tuple[str, str, str, int]]:
    """(schema, name, relkind, total size) of every table and materialized view that holds user data, biggest
    first (catalog_tables.sql)."""
    rows = rows_of(conn, "catalog_tables")
    return [(str(s), str(n), str(k), int(size)) for s, n, k, size in rows]


@dataclass(frozen=True)
class Key:
    """A table's unique key (catalog_key.sql)."""

    index_oid: int
    columns: list[str]
    typids: list[int]
    attnums: list[int]


def unique_key(conn: Source, oid: int) -> Key | None:
    """The primary key, else a unique btree index over plain NOT NULL columns; None when the table has neither."""
    found = rows_of(conn, "catalog_key", {"oid": oid})
    if not found:
        return None
    row = found[0]
    return Key(int(row[0]), [str(c) for c in row[1]], [int(t) for t in row[2]], [int(n) for n in row[3]])


def extension_schema(conn: Source, name: str) -> str | None:
    """The schema extension ``name`` is installed in (its functions are called schema-qualified), or None."""
    found = rows_of(conn, "catalog_extension", {"name": name})
    return str(found[0][0]) if found else None


def size_or_missing(conn: Connection[tuple[Any, ...]], oid: int) -> int:
    """pg_relation_size, or -1 when the server cannot tell (one of its segment files is missing)."""
    try:
        with conn.transaction():
            (row,) = rows_of(conn, "catalog_size", {"oid": oid})
    except db.DatabaseError:
        return -1
    return int(row[0]) if row[0] is not None else -1


def relation_size(src: Source, oid: int) -> int | None:
    """A relation's main fork in bytes now (None: it is gone); raises what the server raised (a missing segment)."""
    rows = rows_of(src, "catalog_size", {"oid": oid})
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def relfilenode_now(src: Source, oid: int) -> int | None:
    """The relation's file number now (TRUNCATE, VACUUM FULL, CLUSTER and REINDEX give it a new one; None once
    dropped)."""
    rows = rows_of(src, "catalog_relfilenode", {"oid": oid})
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def leaf_partitions(src: Source, oid: int) -> list[int]:
    """The leaf partitions of a partitioned table (they hold the rows; the parent has no storage)."""
    return [int(r[0]) for r in rows_of(src, "catalog_partitions", {"oid": oid})]


def allindexed_candidates(src: Source, oids: list[int]) -> list[tuple[Any, ...]]:
    """Of the btree indexes ``oids``, those whose heapallindexed the core can check from the files, with their key
    attnums and both pg_attribute descriptions (catalog_allindexed.sql)."""
    return rows_of(src, "catalog_allindexed", {"oids": oids})


def exclusion_constraints(src: Source, table_oid: int) -> list[tuple[Any, ...]]:
    """The exclusion constraints of a table: (name, index regclass text, the index's predicate or None, key column
    names in index order (None for an expression), their operators schema-qualified) (catalog_exclusion_constraints)."""
    return rows_of(src, "catalog_exclusion_constraints", {"table": table_oid})


def index_probe(src: Source, index_oid: int) -> tuple[str, str | None, str | None, bool] | None:
    """How to use an index from SQL: (its first key column's text, its predicate or None, an operator that holds
    between a key and itself or None, whether the key is a tsvector) (catalog_index_probe.sql); None when it is
    gone."""
    rows = rows_of(src, "catalog_index_probe", {"index": index_oid})
    if not rows:
        return None
    key, predicate, op, tsvector = rows[0]
    return str(key), predicate, op, bool(tsvector)


def read_sizes(conn: Source, rels: list[Relation]) -> None:
    """Fill the main fork and visibility map sizes of ``rels`` (this takes AccessShareLock on each)."""
    by_oid = {r.oid: r for r in rels}
    for oid, main, vm in rows_of(conn, "catalog_sizes", {"oids": list(by_oid)}):
        by_oid[int(oid)].size = int(main or 0)
        by_oid[int(oid)].vm_size = int(vm or 0)


# ---------------------------------------------------------------------------------------------- server facts


@dataclass
class ServerFacts:
    """What every command asks of the server first (catalog_server.sql); NULL there is None here."""

    version_num: int
    version: str
    database: str
    database_oid: int
    usename: str
    superuser: bool
    read_server_files: bool
    in_recovery: bool
    data_directory: str | None
    """None when the role may not read the setting."""
    system_identifier: str | None
    checksums: bool
    block_size: int
    segment_blocks: int
    encoding: str
    next_xid: int
    """The next transaction ID now, its low 32 bits."""
    schemas: dict[str, str | None]
    """Schema of each extension pgsurgeon calls (amcheck, pageinspect, pg_surgery); None when not installed."""
    pg_surgery_available: bool
    pgdata: Path | None = None
    """The data directory as readable on this host, once :func:`local_pgdata` found it (None: not here)."""
    standbys: int = 0
    """Rows of pg_stat_replication: standbys streaming from this server now (repair --from-standby)."""
    archiving: bool = False
    """archive_mode is on with an archive_command or archive_library (repair --from-backup)."""

    @property
    def segment_bytes(self) -> int:
        return self.segment_blocks * self.block_size

    def to_json(self) -> dict[str, Any]:
        """What a report says about the server."""
        return {
            "version": self.version,
            "version_num": self.version_num,
            "database": self.database,
            "checksums": self.checksums,
            "block_size": self.block_size,
            "data_directory": self.data_directory,
            "data_directory_here": self.pgdata is not None,
            "superuser": self.superuser,
            "standbys": self.standbys,
            "archiving": self.archiving,
        }


def local_pgdata(facts: ServerFacts, override: Path | None, probe: str | None = None) -> Path | None:
    """The server's data directory when it is on this host and is this server's (same system identifier, checked
    when the role may see it), and ``probe`` (a file relative to it) can be opened there; else None."""
    from pgsurgeon import core

    candidate = override or (Path(facts.data_directory) if facts.data_directory else None)
    if candidate is None:
        return None
    try:
        control = core.read_control(candidate)
        if facts.system_identifier is not None and str(control.get("system_identifier")) != facts.system_identifier:
            return None
        if probe is not None:
            with (candidate / probe).open("rb"):
                pass
    except (OSError, ValueError):
        return None
    return candidate


def server_facts_from_row(row: tuple[Any, ...]) -> ServerFacts:
    (
        version_num,
        version,
        database,
        database_oid,
        usename,
        superuser,
        read_server_files,
        in_recovery,
        data_directory,
        sysid,
        checksums,
        block_size,
        segment_blocks,
        encoding,
        next_xid,
        amcheck,
        pageinspect,
        pg_surgery,
        surgery_available,
        standbys,
        archiving,
    ) = row
    return ServerFacts(
        version_num=int(version_num),
        version=str(version),
        database=str(database),
        database_oid=int(database_oid),
        usename=str(usename),
        superuser=bool(superuser),
        read_server_files=bool(read_server_files),
        in_recovery=bool(in_recovery),
        data_directory=data_directory,
        system_identifier=None if sysid is None else str(sysid),
        checksums=bool(checksums),
        block_size=int(block_size),
        segment_blocks=int(segment_blocks),
        encoding=str(encoding),
        next_xid=int(next_xid or 0),
        schemas={"amcheck": amcheck, "pageinspect": pageinspect, "pg_surgery": pg_surgery},
        pg_surgery_available=bool(surgery_available),
        standbys=int(standbys or 0),
        archiving=bool(archiving),
    )


def server_facts(conn: Source) -> ServerFacts:
    (row,) = rows_of(conn, "catalog_server")  # a SELECT without FROM returns one row
    return server_facts_from_row(row)


# --------------------------------------------------------------------------------------------------- columns


def columns_from_rows(rows: list[tuple[Any, ...]]) -> list[Column]:
    """catalog_columns.sql's rows, in attnum order."""
    out = []
    for attnum, name, attlen, attalign, attbyval, dropped, storage, typid, typname, missing, gen, ident, tsql in rows:
        out.append(
            Column(
                attnum=int(attnum),
                name=str(name),
                attlen=int(attlen),
                attalign=str(attalign),
                attbyval=bool(attbyval),
                dropped=bool(dropped),
                storage=str(storage),
                typid=int(typid),
                typname=str(typname),
                missing=missing,
                generated=str(gen or ""),
                identity=str(ident or ""),
                type_sql=str(tsql or ""),
            )
        )
    return out


def columns(conn: Source, oid: int) -> list[Column]:
    return columns_from_rows(rows_of(conn, "catalog_columns", {"oid": oid}))


def table_stats(conn: Connection[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """What the statistics say of every table of the connected database, and what governs its vacuuming
    (catalog_table_stats.sql): schema, name, n_live_tup, n_dead_tup, last_vacuum, last_autovacuum, autovacuum_count,
    frozen_age, autovacuum_enabled."""
    cur = conn.execute(db.load_sql("catalog_table_stats"))
    cols = [d.name for d in cur.description or []]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
