"""The relation files on this host, read with the rules of ``scan --live``: the offline scan's findings merged,
each block it shows damaged compared with the server's copy."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pgsurgeon.catalog import sql as catalog
from pgsurgeon.datadir import read_block
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked, Crossref
from pgsurgeon.diagnose.pages import check_batch, raw_phase, refused_findings, server_page
from pgsurgeon.diagnose.server import Refused, one, runner
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.session import ServerError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pgsurgeon.boundary import CheckedChunk, ZeroPagesNote

STRUCTURAL_AREAS = frozenset({"page_header", "line_pointer", "tuple_header", "checksum"})
# File findings that compare several pages: on a live server the files mix pages from different moments, and
# diagnose checks the same things through the server (bt_index_check; the visibility map against the table's
# length). Index entries without their row are re-read through the server before they are believed.
SCAN_RECHECKED = frozenset({"index.sibling_link", "file.vm_beyond_end"})
_TID = re.compile(r"points to heap \((\d+),(\d+)\)")  # the core's index.tid_* messages (crates/core/src/checks/scan/)


def files_phase(
    d: Diagnosis, rels: list[Checked], on_checked: Callable[[list[CheckedChunk]], None] | None = None
) -> bool:
    """Check the relation files on this host in the core (the live scan: pages written after the last
    checkpoint are skipped there and read through the server instead). A page the files show damaged is
    compared with the server's copy: the server refusing it confirms it, a different copy (written since) is
    checked instead. Index entries without their row are re-read through the server later. False when the
    files could not be read (the caller reads every page through the server)."""
    from pgsurgeon.catalog.names import scan_metas
    from pgsurgeon.scan import ScanRequest, run_scan

    assert d.pgdata is not None
    by_node = {r.relation.relfilenode: r for r in rels}

    def next_xid() -> int:
        (row,) = one(d.main, "server_next_xid")
        return int(row[0]) % (1 << 32)

    try:
        outcome = run_scan(
            ScanRequest(
                pgdata=d.pgdata,
                dsn=d.req.dsn,
                databases=[str(d.server.database_oid)],
                relations=[str(n) for n in by_node],
                live=True,
                jobs=d.req.jobs,
                metadata=scan_metas(runner(d.main)),
                next_xid=next_xid,
                on_checked=on_checked,
            )
        )
    except PgSurgeonError as exc:
        d.scan_note = f"relation files not read ({exc.message}): every page read through the server"
        return False
    pending: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for f in outcome.findings:
        rel = by_node.get(f["relfilenode"] or 0)
        if rel is None or f["code"] in SCAN_RECHECKED:
            continue
        if f["code"] == "file.unreadable" and _rewritten(d, rel):
            continue  # its files were replaced while they were read: not damage
        if f["code"] in ("index.tid_unused", "index.tid_beyond_heap"):
            m = _TID.search(str(f["message"]))
            if m and f["block"] is not None:
                past = f["code"] == "index.tid_beyond_heap"
                # a GIN posting tree leaf's items have no line pointer: item 0 (core.leaf_tids says the same)
                item = int(f["item"] or 0)
                rel.candidates.append(Crossref(int(f["block"]), item, int(m[1]), int(m[2]), past))
            continue
        finding = {
            **{k: f.get(k) for k in fmod.FINDING_KEYS},
            "path": f["path"],
            "relation": rel.relation.regclass,
            "database": d.server.database,
            "observed_error": None,
            "source": fmod.SOURCE_SCAN,
            "attnum": None,
        }
        if str(f["code"]).startswith("vm."):
            # about the map's bits, not the page's bytes: the server's copy of the page differs from the file's as
            # soon as a scan sets hint bits, and says nothing about the map
            d.add([finding])
        elif f["fork"] == "main" and f["block"] is not None:
            pending.setdefault((rel.relation.oid, int(f["block"])), []).append(finding)
        else:
            d.add([finding])
    for rel in rels:
        rel.pages_read = rel.relation.nblocks
    zero_page_notes(d, by_node, outcome.zero_inside)
    by_oid = {r.relation.oid: r for r in rels}
    for (oid, blk), found in sorted(pending.items()):
        confirm_page(d, by_oid[oid], blk, found)
    spans: dict[int, list[tuple[int, int]]] = {}
    for s in outcome.skipped:
        rel = by_node.get(int(s["relfilenode"]))
        if rel is not None and s["fork"] == "main" and int(s["first"]) < rel.relation.nblocks:
            spans.setdefault(rel.relation.oid, []).append(
                (int(s["first"]), min(int(s["last"]), rel.relation.nblocks - 1))
            )
    skipped = sum(b - a + 1 for v in spans.values() for a, b in v)
    if spans:
        for rel in rels:
            rel.pages_read -= sum(b - a + 1 for a, b in spans.get(rel.relation.oid, []))
        raw_phase(d, [r for r in rels if r.relation.oid in spans], spans)
    d.scan_note = (
        f"relation files read here ({outcome.summary['files']} file(s)); {skipped} page(s) written since the last "
        "checkpoint read through the server"
    )
    return True


def _rewritten(d: Diagnosis, rel: Checked) -> bool:
    """Whether the relation has other files now than when diagnose started (or is gone)."""
    try:
        now = catalog.relfilenode_now(runner(d.main), rel.relation.oid)
    except Refused:
        return False
    return now != rel.relation.relfilenode


def confirm_page(d: Diagnosis, rel: Checked, blk: int, found: list[dict[str, Any]]) -> None:
    """Findings of the file's copy of a block, against the server's copy: a refusal confirms them, an equal
    copy keeps them, a different one (written since the file's copy) is checked instead."""
    got = server_page(d, rel, blk)
    if isinstance(got, ServerError):
        rel.refused[blk] = got
        rel.suspect.add(blk)
        d.add(refused_findings(d, rel, blk, got, decoded=found))
        return
    if got is not None and d.geometry is not None:
        try:
            disk = read_block(d.pgdata / rel.path, blk, d.geometry).data if d.pgdata else b""
        except PgSurgeonError:
            disk = b""
        # pd_checksum aside: a buffer keeps the checksum it was read with, the file gets a fresh one per write
        if not (disk[:8] == got[:8] and disk[10:] == got[10:]):
            batch = check_batch(d, rel, got, blk)
            rel.suspect.update(batch.suspect)
            rel.zero.update(batch.zero)
            d.add(fmod.from_core(f, rel.relation, source=fmod.SOURCE_PAGE) for f in batch.findings)
            # A TOAST finding is about the value's chunks, not this page's bytes (hint bits set since the
            # file's copy make the copies differ): it is checked again against the TOAST table (heap_done).
            if rel.relation.role == "table":
                rel.toast_scan.extend(f for f in found if str(f["code"]).startswith("toast."))
            return
    if any(f["severity"] == "error" and f["area"] in STRUCTURAL_AREAS for f in found):
        rel.suspect.add(blk)
    # A table row's TOAST finding also depends on the TOAST table's pages, read at another moment: the server's
    # own TOAST check decides when it runs (heap_done).
    toast_rows = [f for f in found if str(f["code"]).startswith("toast.") and rel.relation.role == "table"]
    rel.toast_scan.extend(toast_rows)
    d.add(f for f in found if f not in toast_rows)


def zero_page_notes(d: Diagnosis, by_node: dict[int, Checked], notes: list[ZeroPagesNote]) -> None:
    """A note on each table with all-zero pages before in-use pages that no index entry or all-visible bit names
    rows on: the only trace of rows lost from it. A page the server extended but has not written yet is all-zero in
    the file too, so only the blocks the server's own copy shows all-zero are named."""
    for z in notes:
        rel = by_node.get(z["relfilenode"])
        if rel is None:
            continue
        zero = [b for b in z["blocks"] if _all_zero(server_page(d, rel, b))]
        if not zero:
            continue
        unchecked = z["count"] - len(z["blocks"])
        more = f" (and {unchecked} more in the file)" if unchecked > 0 else ""
        rel.notes.append(
            f"all-zero page(s) before in-use pages at block(s) {', '.join(map(str, zero))}{more}, and no index entry "
            "or all-visible bit names rows there: normal after concurrent inserts extend a table; where one session "
            "at a time filled it, rows were probably on them (compare its row count with what the application "
            "expects)"
        )


def _all_zero(page: bytes | ServerError | None) -> bool:
    return isinstance(page, bytes) and page.count(0) == len(page)
