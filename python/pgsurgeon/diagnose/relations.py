"""Which relations a run checks, and how big each is now (one statement for all, one by one when a lock is in
the way)."""

from __future__ import annotations

from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import ROLE_HEAP_OF_INDEX
from pgsurgeon.catalog.sql import lookup_relation, not_found
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import Refused, runner
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.session import ServerError


def _lookup(d: Diagnosis, text: str) -> tuple[int, str] | None:
    def query(sql_text: str, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
        rows = d.main.rows(sql_text, params)
        return None if isinstance(rows, ServerError) else rows

    return lookup_relation(query, text)


def resolve_tables(d: Diagnosis) -> tuple[list[int], list[int]]:
    tables: list[int] = []
    indexes: list[int] = []
    for text in d.req.tables:
        found = _lookup(d, text)
        if found is None:
            raise not_found(text, d.server.database)
        oid, relkind = found
        if relkind == "p":
            tables.extend(catalog.leaf_partitions(runner(d.main), oid))
        elif relkind in ("i", "I"):
            indexes.append(oid)
        elif relkind in ("r", "m", "t"):
            tables.append(oid)
        else:
            raise UsageError(f"{text} is not a table, materialized view or index (relkind {relkind})")
    return tables, indexes


def load_relations(d: Diagnosis) -> None:
    tables, indexes = resolve_tables(d)
    if d.req.tables and not tables and not indexes:
        raise UsageError("none of the given tables has storage", hint="a partitioned table without partitions?")
    found = catalog.relatives(
        runner(d.main), tables or None, indexes or None, database=d.server.database, block_size=d.server.block_size
    )
    d.rels.extend(Checked(r) for r in found if r.role != ROLE_HEAP_OF_INDEX and r.filepath and r.relfilenode)
    load_sizes(d)


def load_sizes(d: Diagnosis) -> None:
    """Sizes for all relations in one statement; when another session's lock makes it time out, one by one,
    and a relation that stays locked is marked so (and not checked)."""
    run = runner(d.main)
    try:
        catalog.read_sizes(run, [r.relation for r in d.rels])
    except Refused as exc:
        if exc.error.sqlstate != "55P03":
            raise PgSurgeonError(f"reading relation sizes failed: {exc.error.message}") from None
        for rel in d.rels:
            try:
                catalog.read_sizes(run, [rel.relation])
            except Refused as alone:
                rel.locked = alone.error
    empty = [r.relation.oid for r in d.rels if r.relation.size == 0 and r.locked is None]
    missing = d.main.rows(db.load_sql("diagnose_missing_files"), {"oids": empty}) if empty else []
    gone = {} if isinstance(missing, ServerError) else {int(o): str(p) for o, p in missing}
    for rel in d.rels:
        if rel.relation.oid in gone:
            d.add(
                [
                    fmod.make(
                        "file.missing_segment",
                        rel.relation,
                        0,
                        None,
                        f"the relation's file {gone[rel.relation.oid]} is missing: every row in it is lost, and any "
                        "read fails",
                        source=fmod.SOURCE_SERVER,
                        observed_error=f'could not open file "{gone[rel.relation.oid]}": No such file or directory',
                    )
                ]
            )
        if rel.locked is not None:
            rel.amcheck = "not checked: locked by another session"
            d.add(
                [
                    fmod.make(
                        "server.timeout",
                        rel.relation,
                        None,
                        None,
                        f"not checked: {rel.locked.message} (another session holds a conflicting lock, e.g. "
                        "ALTER TABLE, VACUUM FULL, CLUSTER or REINDEX)",
                        source=fmod.SOURCE_SERVER,
                        observed_error=rel.locked.observed,
                    )
                ]
            )
