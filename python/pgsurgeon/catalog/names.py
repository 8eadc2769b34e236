"""Naming relation files: (tablespace, database, relfilenode) -> the relation, through SQL (catalog.files answers
the same from the data files: ``names_from_files``)."""

from __future__ import annotations

from pgsurgeon import db
from pgsurgeon.catalog.relation import Relation

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
                db.load_sql("relation_names")
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
