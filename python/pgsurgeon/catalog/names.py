"""Naming relation files: (tablespace, database, relfilenode) -> the relation, through SQL (catalog.files answers
the same from the data files: ``names_from_files``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog.relation import PAGE_KIND, Relation

if TYPE_CHECKING:
    from pgsurgeon.catalog.sql import Source

RelKey = tuple[int, int, int]
"""(tablespace oid, database oid or 0 for shared catalogs, relfilenode), as in the file path."""


def name_map(dsn: str, databases: list[str] | None = None) -> dict[RelKey, Relation]:
    """Names for every relation with storage in every database that accepts connections (or ``databases``)."""
    with db.connect(dsn) as conn:
        rows = conn.execute(db.load_sql("databases")).fetchall()
    names: dict[RelKey, Relation] = {}
    for datname, _oid in rows:
        if databases is not None and datname not in databases:
            continue
        with db.connect(db.dsn_for_database(dsn, datname)) as conn:
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
    return names


def keys_named(names: dict[RelKey, Relation], text: str) -> list[RelKey]:
    """The files a ``--table`` argument names in a name map (from a server or the data files): the relation whose
    stored name or schema.name it is, in every database that has one."""
    return [k for k, n in names.items() if text in (n.name, n.qualified)]


def scan_catalog(dsn: str, only: list[str]) -> tuple[dict[RelKey, Relation], list[Any]]:
    """Names and metadata of the relations of every database, or of those ``only`` names (by name or OID)."""
    with db.connect(dsn) as conn:
        dbs = conn.execute(db.load_sql("databases")).fetchall()
    if only:
        dbs = [(n, o) for n, o in dbs if n in only or str(o) in only]
    names = name_map(dsn, [str(n) for n, _o in dbs] if only else None)
    metas: list[Any] = []
    for datname, _oid in dbs:
        with db.connect(db.dsn_for_database(dsn, datname)) as conn:
            metas.extend(scan_metas(conn))
    return names, metas


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
