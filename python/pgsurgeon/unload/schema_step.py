"""unload's schema step: pg_dump's schema taken in a thread while the rows are carved (the copy's server and
pg_dump run in their own processes), and, when it cannot be taken, what the files-built schema leaves out."""

from __future__ import annotations

import threading

from pgsurgeon.catalog.files import FIRST_NORMAL_OID, DbCatalog
from pgsurgeon.unload.schema import SchemaDump, SchemaRequest, SchemaUnavailable, dump_schema

PG_TRIGGER = 2620
PG_REWRITE = 2618
PG_POLICY = 3256
PG_DESCRIPTION = 2609
"""Catalog OIDs (src/include/catalog/pg_trigger.h, pg_rewrite.h, pg_policy.h, pg_description.h)."""


class SchemaStep:
    """``start()``, carve, then ``outcome()``; ``cancel()`` on errors and Ctrl-C stops it at its next step (its
    scratch directory and server are removed by then)."""

    def __init__(self, req: SchemaRequest) -> None:
        self.req = req
        self.cancelled = threading.Event()
        # waited on instead of Thread.join: a join interrupted by Ctrl-C marks the thread stopped in Python 3.11
        # (threading._wait_for_tstate_lock releases its lock), so the join in cancel() would not wait any more
        self._done = threading.Event()
        self._result: SchemaDump | SchemaUnavailable | None = None
        self._thread = threading.Thread(target=self._work, name="unload-schema", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _work(self) -> None:
        try:
            self._result = dump_schema(self.req, self.cancelled)
        except SchemaUnavailable as exc:
            self._result = exc
        except Exception as exc:  # any other failure costs the schema, not the rows
            self._result = SchemaUnavailable(
                f"the schema step failed: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            )
        finally:
            self._done.set()

    def outcome(self) -> SchemaDump | SchemaUnavailable:
        self._done.wait()
        return self._result or SchemaUnavailable("the schema step ended without a result")

    def cancel(self) -> None:
        self.cancelled.set()
        if self._thread.ident is not None:  # started: wait until its server is stopped and its copy removed
            self._done.wait()


def missing_objects(cat: DbCatalog) -> dict[str, int]:
    """What the files-built schema.sql does not recreate, counted from the catalog's rows (kinds it cannot count,
    such as owners and privileges, are named by the caller)."""
    user_rels = [r for r in cat.relations.values() if r.oid >= FIRST_NORMAL_OID]
    tables = {r.oid for r in user_rels if r.relkind in ("r", "p")}
    system = {oid for oid, name in cat.namespaces.items() if name in ("pg_catalog", "information_schema")}
    user_cons = [c for c in cat.constraints if c.nspoid not in system]  # initdb's domains have CHECKs too
    attrs = [a for oid in tables for a in cat.attributes.get(oid, []) if not a.dropped]
    counts = {
        "functions and procedures": sum(1 for oid in cat.procs if oid >= FIRST_NORMAL_OID),
        "views": sum(1 for r in user_rels if r.relkind == "v"),
        "materialized views": sum(1 for r in user_rels if r.relkind == "m"),
        "triggers": sum(1 for r in cat.read(PG_TRIGGER, ["tgisinternal"]) if r["tgisinternal"] == "f"),
        "rules": sum(
            1
            for r in cat.read(PG_REWRITE, ["rulename", "ev_class"])
            if r["rulename"] != "_RETURN" and int(r["ev_class"] or 0) >= FIRST_NORMAL_OID
        ),
        "policies": len(cat.read(PG_POLICY, ["oid"])),
        "check constraints": sum(1 for c in user_cons if c.contype == "c"),
        "exclusion constraints": sum(1 for c in user_cons if c.contype == "x"),
        "identity columns": sum(1 for a in attrs if a.identity),
        "generated columns": sum(1 for a in attrs if a.generated),
        "expression and partial indexes": sum(1 for i in cat.indexes if i.has_expressions and i.table in tables),
        "comments": sum(1 for r in cat.read(PG_DESCRIPTION, ["objoid"]) if int(r["objoid"] or 0) >= FIRST_NORMAL_OID),
    }
    return {k: v for k, v in counts.items() if v}
