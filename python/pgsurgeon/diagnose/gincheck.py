"""amcheck's ``gin_index_check`` (amcheck 1.5, PostgreSQL 18) on every GIN index, its ERROR mapped to pgsurgeon's
codes as bt_index_check's are (contrib/amcheck/verify_gin.c's messages). Before 18 there is no GIN checker in core:
the pages were checked in the core only, and the index's account says so."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.btreecheck import not_to_check, unfinished
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import one, run_locked
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.session import BackendLost, ServerError, Session

if TYPE_CHECKING:
    from pgsurgeon.boundary import CheckedChunk

GIN_GENERIC = "amcheck.gin"

# verify_gin.c's messages, most specific first: (pattern, code); the block is the first "block N"/"page N"/"blk N"
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), c)
    for p, c in (
        (r"contains unexpected zero page at block", "index.zero_page"),
        (r"contains corrupted page at block", "index.special_size"),
        (r"number of items mismatch in GIN entry tuple", "index.gin_posting_list"),
        (r"posting list contains invalid heap pointer", "index.gin_posting_list"),
        (r"tid exceeds parent's high key in postingTree leaf", "index.gin_posting_list"),
        (r"wrong tuple order on entry tree page|inconsistent records on page", "index.gin_entry_order"),
        (r"inconsistent tuple sizes", "index.gin_entry_tuple"),
        (r"posting tree|postingTree", "index.gin_posting_tree"),
        (r"traversal encountered leaf page|deleted internal page|deleted page \d+ with tuples", "index.gin_page_flags"),
        (r"exceeding count of tuples", "index.gin_page_flags"),
    )
)
_BLOCK = re.compile(r"\b(?:block|blk|page) (\d+)(?:,? offset (\d+))?")
_READ = re.compile(r"could not read blocks? \d+")


def classify_gin(message: str) -> tuple[str, int | None, int | None]:
    """(code, index block, item) of one gin_index_check ERROR; a short read names the missing block, not the page
    that led there, so it gets no block."""
    code = next((c for rx, c in _RULES if rx.search(message)), GIN_GENERIC)
    if _READ.search(message):
        return code, None, None
    m = _BLOCK.search(message)
    if m is None:
        return code, None, None
    return code, int(m.group(1)), int(m.group(2)) if m.group(2) else None


def _has_gin_check(d: Diagnosis) -> bool:
    """Whether the installed amcheck has gin_index_check (extension version 1.5, shipped with 18); asked once."""
    if d.gin_check is None:
        schema = d.server.schemas.get("amcheck")
        try:
            rows = None if schema is None else one(d.main, "amcheck_has_gin_check", {"schema": str(schema)})
        except PgSurgeonError:
            rows = None
        d.gin_check = bool(rows and rows[0][0])
    return d.gin_check


def start_gin_early(d: Diagnosis, indexes: list[Checked]) -> Callable[[list[CheckedChunk]], None] | None:
    """With -j 2 or more, gin_index_check on an index starts as soon as the scan has checked every one of its pages
    and found nothing on any (the scan hands its chunks over as they are done), instead of after the whole scan:
    the server still reads no page of it the core has not checked first. An index with a damaged or skipped page
    waits for the GIN phase as before."""
    if d.req.jobs <= 1 or not indexes or not _has_gin_check(d):
        return None
    by_node = {i.relation.relfilenode: i for i in indexes if i.relation.usable and i.relation.nblocks > 0}
    clean: dict[int, int] = {}
    spoiled: set[int] = set()

    def started(chunks: list[CheckedChunk]) -> None:
        for c in chunks:
            index = by_node.get(c["relfilenode"])
            if index is None or c["database_oid"] != d.server.database_oid:
                continue
            oid = index.relation.oid
            if c["blocks_found"] or c["blocks_skipped"]:
                spoiled.add(oid)
            clean[oid] = clean.get(oid, 0) + c["count"]
            if clean[oid] >= index.relation.nblocks and oid not in spoiled and oid not in d.early_gin:
                d.early_gin[oid] = d.workers().submit(lambda i: gin_task(d, d.session(), i), index)

    return started


def gin_phase(d: Diagnosis, indexes: list[Checked]) -> None:
    if not indexes:
        return
    if not _has_gin_check(d):
        for index in indexes:
            index.amcheck = "pages only (amcheck has no gin_index_check before PostgreSQL 18)"
        return
    rest = [i for i in indexes if i.relation.oid not in d.early_gin]
    for res in d.parallel(partial(gin_task, d), rest):
        d.add(res)
    for index in indexes:  # those started while the scan went on (start_gin_early)
        if (early := d.early_gin.get(index.relation.oid)) is not None:
            d.add(early.result())
    _fold(d)


def _fold(d: Diagnosis) -> None:
    """gin_index_check's finding of a damage the page checks found too (same index, same code, the same block or
    none named) is one problem: the page checks' finding keeps the server's words as what it said."""
    with d.findings_lock:
        mine = [f for f in d.findings if f["source"] != fmod.SOURCE_AMCHECK]
        kept = []
        for f in d.findings:
            if f["source"] == fmod.SOURCE_AMCHECK and str(f["observed_error"] or "").startswith("gin_index_check"):
                twins = [
                    t
                    for t in mine
                    if t["relfilenode"] == f["relfilenode"]
                    and t["code"] == f["code"]
                    and (f["block"] is None or t["block"] == f["block"])
                ]
                if twins:
                    for t in twins:
                        t["observed_error"] = t["observed_error"] or f["observed_error"]
                    continue
            kept.append(f)
        d.findings = kept


def gin_task(d: Diagnosis, session: Session, index: Checked) -> list[dict[str, Any]]:
    if not_to_check(d, index):
        return []
    if index.locked is not None:
        index.amcheck = "not checked: it is locked by another session"
        return []
    query = db.sql.SQL("SELECT {fn}(%(rel)s::oid::regclass)").format(fn=d.fn("amcheck", "gin_index_check"))
    try:
        rows = run_locked(session, query, {"rel": index.relation.oid})
    except BackendLost as lost:
        return [d.crashed(index, 0, max(index.relation.nblocks - 1, 0), lost.message, "gin_index_check")]
    index.amcheck = "ok (gin_index_check)"
    if not isinstance(rows, ServerError):
        return []
    err = rows
    cut_short = unfinished(index, "gin_index_check", err)
    if cut_short is not None:
        return cut_short
    index.amcheck = "corrupt"
    code, block, item = classify_gin(err.message)
    return [
        fmod.make(
            code,
            index.relation,
            block,
            item,
            err.message + (f" ({err.detail})" if err.detail else ""),
            source=fmod.SOURCE_AMCHECK,
            observed_error=f"gin_index_check: {err.observed}",
        )
    ]
