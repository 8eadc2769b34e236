"""What the server says when a damaged GIN, GiST, SP-GiST, hash or BRIN index is used (``observed_error``): amcheck
has no checker for these kinds (gin_index_check on 18 aside), so each row's key is looked up through the index, as a
query with that key in its WHERE clause would, and the server's ERROR, or the rows the index no longer returns, is
what it said. Only indexes with damage found, and only over a table whose pages all passed (the probe reads its
rows with the executor)."""

from __future__ import annotations

import contextlib
import re

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.db import quote_ident
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import Refused, runner
from pgsurgeon.session import BackendLost, ServerError

PROBED_AMS = frozenset({"gin", "gist", "spgist", "hash", "brin"})
_NO_ANSWER = frozenset({"57014", "55P03"})  # statement_timeout, lock_timeout: no word about the index
# Only the index can answer the inner lookup: no sequential or TID scan of the table (the outer one may still scan it).
# The probe looks every row up: on a key shared by many rows that is quadratic, so it gets a budget of its own; a
# probe cut short by it says nothing (the findings stand without the server's word).
_PROBE_TIMEOUT = "30s"
_PLANNER = f"SET enable_seqscan = off; SET enable_tidscan = off; SET statement_timeout = '{_PROBE_TIMEOUT}'"
_RESET = "RESET enable_seqscan; RESET enable_tidscan; RESET statement_timeout"


def probe_phase(d: Diagnosis, indexes: list[Checked]) -> None:
    """Each damaged index of the kinds above probed; its findings without a server's word get the probe's."""
    with d.findings_lock:
        damaged = {f["relfilenode"] for f in d.findings if f["severity"] == "error"}
    for index in indexes:
        heap = d.heap_of(index)
        if index.relation.relfilenode not in damaged or index.locked is not None or not index.relation.usable:
            continue
        if heap is None or heap.suspect or heap.refused or heap.locked is not None:
            index.notes.append("not used through SQL: its table has damaged pages")
            continue
        said = probe(d, index, heap)
        if said is None:
            continue
        index.observe(said)
        with d.findings_lock:
            for f in d.findings:
                if f["relfilenode"] == index.relation.relfilenode and f["observed_error"] is None:
                    f["observed_error"] = said


def probe(d: Diagnosis, index: Checked, heap: Checked) -> str | None:
    """The server's ERROR when every row's key is looked up through ``index``, else how many rows it did not return;
    None when the index cannot be used that way (no operator holds between a key and itself)."""
    try:
        how = catalog.index_probe(runner(d.main), index.relation.oid)
    except Refused:
        return None
    if how is None:
        return None
    key, predicate, op, tsvector = how
    probe_key: db.sql.Composable = db.sql.SQL(key)
    if op is None and tsvector:
        op = "OPERATOR(pg_catalog.@@)"  # a document matches the OR of its own lexemes
        probe_key = db.sql.SQL(db.load_sql("diagnose_probe_tsquery")).format(key=probe_key)
    if op is None:
        return None
    name, table = index.relation.regclass, heap.relation.regclass
    query = db.sql.SQL(db.load_sql("diagnose_index_probe")).format(
        table=heap.relation.ident(),
        key=db.sql.SQL(key),
        probe_key=probe_key,
        pred=db.sql.SQL(predicate or "true"),
        op=db.sql.SQL(op),
    )
    session = d.main
    try:
        session.rows(_PLANNER)
        plan = session.rows(db.sql.SQL("EXPLAIN ") + query)
        if isinstance(plan, ServerError):
            # planning opens the index (an SP-GiST metapage is read then): an error naming it is what it said
            return plan.observed if index.relation.name in plan.message else None
        names = "|".join(re.escape(n) for n in (index.relation.name, quote_ident(index.relation.name)))
        used = re.compile(rf"\b(?:on|using) (?:{names})(?![\w$])")
        if not any(used.search(str(row[0])) for row in plan):
            # another index of the same key is cheaper: no query would meet this one's damage that way
            index.notes.append("not used through SQL: the planner answers its key with another index")
            return None
        rows = session.rows(query)
    except BackendLost as lost:
        return f"the backend crashed: {lost.message}"
    finally:
        with contextlib.suppress(BackendLost):
            session.rows(_RESET, again=True)
    if isinstance(rows, ServerError):
        return None if rows.sqlstate in _NO_ANSWER else rows.observed
    missing = int(rows[0][0]) if rows else 0
    if missing:
        return f"no error, but {missing} row(s) of {table} not found through index {name}"
    return f"no error: every row of {table} found through index {name}"
