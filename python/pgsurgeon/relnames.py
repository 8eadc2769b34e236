"""Naming relation files: (tablespace, database, relfilenode) -> schema.relation, through SQL."""

from __future__ import annotations

from dataclasses import dataclass

from pgsurgeon import db

RelKey = tuple[int, int, int]
"""(tablespace oid, database oid or 0 for shared catalogs, relfilenode), as in the file path."""


@dataclass(frozen=True)
class RelName:
    oid: int
    schema: str
    name: str
    relkind: str
    amname: str | None
    database: str

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def name_map(dsn: str, databases: list[str] | None = None) -> dict[RelKey, RelName]:
    """Names for every relation with storage in every database that accepts connections (or ``databases``)."""
    with db.connect(dsn) as conn:
        rows = conn.execute(db.load_sql("databases")).fetchall()
    names: dict[RelKey, RelName] = {}
    for datname, _oid in rows:
        if databases is not None and datname not in databases:
            continue
        with db.connect(db.dsn_for_database(dsn, datname)) as conn:
            for spc, dboid, filenode, oid, schema, name, relkind, amname, _p, _t in conn.execute(
                db.load_sql("relation_names")
            ):
                names[(int(spc), int(dboid), int(filenode))] = RelName(
                    int(oid), schema, name, relkind, amname, "" if dboid == 0 else datname
                )
    return names
