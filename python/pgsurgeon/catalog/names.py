"""Naming relation files: (tablespace, database, relfilenode) -> the relation, through SQL (catalog.files answers
the same from the data files: ``names_from_files``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog.relation import PAGE_KIND, Relation

if TYPE_CHECKING:
    from pgsurgeon.catalog.sql import Source
    from pgsurgeon.db import Connection

RelKey = tuple[int, int, int]
"""(tablespace oid, database oid or 0 for shared catalogs, relfilenode), as in the file path."""


def name_map(dsn: str, databases: list[str] | None = None) -> dict[RelKey, Relation]:
    """Names for every relation with storage in every database that accepts connections (or ``databases``)."""
    names: dict[RelKey, Relation] = {}
    with _Connections(dsn) as conns:
        for datname, _oid in conns.databases:
            if databases is None or datname in databases:
                _names_in(conns.to(datname), datname, names)
    return names


def _names_in(conn: Connection[Any], datname: str, names: dict[RelKey, Relation]) -> None:
    for spc, dboid, filenode, oid, schema, name, relkind, amname, persistence, toast in conn.execute(
        db.load_sql("catalog_relation_names")
    ):
        names[(int(spc), int(dboid), int(filenode))] = Relation(
            oid=int(oid),
            schema=schema,
            name=name,
            relkind=relkind,
            amname=amname,
            database="" if dboid == 0 else datname,
            relfilenode=int(filenode),
            persistence=persistence,
            toast_oid=int(toast),
        )


class _Connections:
    """One connection per database, the one of the dsn first (it also lists the databases) and reused for its own
    database: a connection costs the server a backend, ~5-10 ms here, and naming the relations of two databases
    took five of them."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.first = db.connect(dsn)
        self.databases: list[tuple[str, int]] = [
            (str(n), int(o)) for n, o in self.first.execute(db.load_sql("databases")).fetchall()
        ]
        self.opened: list[Connection[Any]] = [self.first]

    def to(self, datname: str) -> Connection[Any]:
        """A connection to ``datname``: the first one when it is its database, else a new one (closed on exit)."""
        if datname == self.first.info.dbname:
            return self.first
        conn = db.connect(db.dsn_for_database(self.dsn, datname))
        self.opened.append(conn)
        return conn

    def __enter__(self) -> _Connections:
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self.opened:
            conn.close()


def keys_named(names: dict[RelKey, Relation], text: str) -> list[RelKey]:
    """The files a ``--table`` argument names in a name map (from a server or the data files): the relation whose
    stored name or schema.name it is, in every database that has one."""
    return [k for k, n in names.items() if text in (n.name, n.qualified)]


def scan_catalog(dsn: str, only: list[str]) -> tuple[dict[RelKey, Relation], list[Any], dict[str, int]]:
    """Names and metadata of the relations of every database, or of those ``only`` names (by name or OID), and
    every database that accepts connections by name; one connection per database."""
    names: dict[RelKey, Relation] = {}
    metas: list[Any] = []
    with _Connections(dsn) as conns:
        for datname, oid in conns.databases:
            if only and datname not in only and str(oid) not in only:
                continue
            conn = conns.to(datname)
            _names_in(conn, datname, names)
            metas.extend(scan_metas(conn))
        return names, metas, dict(conns.databases)


def scan_metas(src: Source) -> list[Any]:
    """The scanner's relation descriptions (boundary.RelMeta by file key) of the connected database."""
    metas: list[Any] = []
    from pgsurgeon.catalog.sql import rows_of  # the SQL layer only when a server is asked: scan's start stays light

    rows = rows_of(src, "catalog_scan_metadata")
    for spc, dboid, node, amname, natts, hspc, hdb, hnode, desc, tspc, tnode, toast_name, gin_key in rows:
        meta = {
            "kind": PAGE_KIND.get(amname or ""),
            "natts": natts,
            "heap": [int(hspc), int(hdb), int(hnode)] if hnode is not None else None,
            "desc": desc,
            "toast": [int(tspc), int(dboid), int(tnode)] if tnode is not None else None,
            "toast_name": toast_name,
            "gin_key": gin_key,
        }
        metas.append([[int(spc), int(dboid), int(node)], meta])
    return metas
