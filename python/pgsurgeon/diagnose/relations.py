"""Which relations a run checks, and how big each is now (one statement for all, one by one when a lock is in
the way)."""

from __future__ import annotations

from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog.sql import lookup_relation, not_found
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.findings import RelContext
from pgsurgeon.diagnose.model import Rel
from pgsurgeon.diagnose.server import one
from pgsurgeon.diagnose.session import ServerError
from pgsurgeon.errors import PgSurgeonError, UsageError


def _lookup(d: Diagnosis, text: str) -> tuple[int, str] | None:
    def query(sql_text: str, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
        rows = d.main.run(sql_text, params)
        return None if isinstance(rows, ServerError) else rows

    return lookup_relation(query, text)


def resolve_tables(d: Diagnosis) -> tuple[list[int], list[int]]:
    tables: list[int] = []
    indexes: list[int] = []
    for text in d.req.tables:
        found = _lookup(d, text)
        if found is None:
            raise not_found(text, str(d.server["database"]))
        oid, relkind = found
        if relkind == "p":
            parts = one(d.main, "diagnose_partitions", {"oid": oid})
            tables.extend(int(r[0]) for r in parts)
        elif relkind in ("i", "I"):
            indexes.append(oid)
        elif relkind in ("r", "m", "t"):
            tables.append(oid)
        else:
            raise UsageError(f"{text} is not a table, materialized view or index (relkind {relkind})")
    return tables, indexes


def load_relations(d: Diagnosis) -> None:
    tables, indexes = resolve_tables(d)
    params = {"tables": tables or None, "indexes": indexes or None}
    if d.req.tables and not tables and not indexes:
        raise UsageError("none of the given tables has storage", hint="a partitioned table without partitions?")
    rows = one(d.main, "diagnose_relations", params)
    bs = int(d.server["block_size"])
    for role, oid, table_oid, relname, schema, name, relkind, amname, path, node, natts, ok in rows:
        if path is None or node is None:
            continue
        ctx = RelContext(path=str(path), relfilenode=int(node), relation=str(relname), database=d.server["database"])
        d.rels.append(
            Rel(
                role=role,
                oid=int(oid),
                table_oid=int(table_oid),
                relname=str(relname),
                schema=str(schema),
                name=str(name),
                relkind=str(relkind),
                amname=amname,
                path=str(path),
                relfilenode=int(node),
                size=0,
                vm_size=0,
                natts=int(natts or 0),
                usable=bool(ok),
                ctx=ctx,
                block_size=bs,
            )
        )
    load_sizes(d)


def load_sizes(d: Diagnosis) -> None:
    """Sizes for all relations in one statement; when another session's lock makes it time out, one by one,
    and a relation that stays locked is marked so (and not checked)."""
    query = db.load_sql("diagnose_sizes")
    rows = d.main.run(query, {"oids": [r.oid for r in d.rels]})
    if isinstance(rows, ServerError) and rows.sqlstate != "55P03":
        raise PgSurgeonError(f"reading relation sizes failed: {rows.message}")
    sizes: dict[int, tuple[int, int]] = {}
    if isinstance(rows, ServerError):
        for rel in d.rels:
            alone = d.main.run(query, {"oids": [rel.oid]})
            if isinstance(alone, ServerError):
                rel.locked = alone
                continue
            sizes.update({int(o): (int(m or 0), int(v or 0)) for o, m, v in alone})
    else:
        sizes = {int(o): (int(m or 0), int(v or 0)) for o, m, v in rows}
    empty = [r.oid for r in d.rels if sizes.get(r.oid, (0, 0))[0] == 0 and r.locked is None]
    missing = d.main.run(db.load_sql("diagnose_missing_files"), {"oids": empty}) if empty else []
    gone = {} if isinstance(missing, ServerError) else {int(o): str(p) for o, p in missing}
    for rel in d.rels:
        rel.size, rel.vm_size = sizes.get(rel.oid, (0, 0))
        if rel.oid in gone:
            d.add(
                [
                    fmod.make(
                        "file.missing_segment",
                        rel.ctx,
                        0,
                        None,
                        f"the relation's file {gone[rel.oid]} is missing: every row in it is lost, and any read fails",
                        source=fmod.SOURCE_SERVER,
                        observed_error=f'could not open file "{gone[rel.oid]}": No such file or directory',
                    )
                ]
            )
        if rel.locked is not None:
            rel.amcheck = "not checked: locked by another session"
            d.add(
                [
                    fmod.make(
                        "server.timeout",
                        rel.ctx,
                        None,
                        None,
                        f"not checked: {rel.locked.message} (another session holds a conflicting lock, e.g. "
                        "ALTER TABLE, VACUUM FULL, CLUSTER or REINDEX)",
                        source=fmod.SOURCE_SERVER,
                        observed_error=rel.locked.observed,
                    )
                ]
            )
