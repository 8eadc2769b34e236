"""The end of a run: amcheck's findings folded into the page decoder's, and the outcome (findings in order, the
relations' accounts, the summary)."""

from __future__ import annotations

import time
from typing import Any

from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import DiagnoseOutcome
from pgsurgeon.loss import reword_zero_pages


def fold_amcheck(d: Diagnosis) -> None:
    """An amcheck finding about a line pointer that the page decoder also found damaged (same area) is one
    problem: the decoder's finding keeps amcheck's words as what the server said."""
    decoded: dict[tuple[int, int | None, int | None, str], list[dict[str, Any]]] = {}
    for f in d.findings:
        if f["source"] in (fmod.SOURCE_PAGE, fmod.SOURCE_FILE):
            decoded.setdefault((f["relfilenode"], f["block"], f["item"], f["area"]), []).append(f)
    kept = []
    for f in d.findings:
        if f["source"] == fmod.SOURCE_AMCHECK and f["item"] is not None:
            twins = decoded.get((f["relfilenode"], f["block"], f["item"], f["area"]))
            if twins:
                for t in twins:
                    if t["observed_error"] is None:
                        t["observed_error"] = f["observed_error"]
                continue
        kept.append(f)
    d.findings = kept


def relation_summaries(d: Diagnosis) -> list[dict[str, Any]]:
    out = []
    for rel in d.rels:
        mine = [f for f in d.findings if f["relfilenode"] == rel.relation.relfilenode]
        out.append(
            {
                "relation": rel.relation.regclass,
                "oid": rel.relation.oid,
                "role": rel.relation.role,
                "table": (d.rel_by_oid(rel.relation.table_oid) or rel).relation.regclass,
                "access_method": rel.relation.amname,
                "path": rel.path,
                "relfilenode": rel.relation.relfilenode,
                "blocks": rel.relation.nblocks,
                "pages_read": rel.pages_read,
                "pages_refused": sorted(rel.refused),
                "amcheck": rel.amcheck,
                "errors": sum(1 for f in mine if f["severity"] == "error"),
                "warnings": sum(1 for f in mine if f["severity"] == "warning"),
                "damaged_blocks": sorted(
                    {f["block"] for f in mine if f["block"] is not None and f["severity"] == "error"}
                ),
                "observed_errors": rel.observed,
                "notes": rel.notes,
            }
        )
    return out


def outcome(d: Diagnosis) -> DiagnoseOutcome:
    """The findings in order, a summary of the run, the server's facts and each relation's account."""
    findings = sorted(d.findings, key=fmod.sort_key)
    if d.pgdata is not None:  # the account reads the table's index files and visibility map
        reword_zero_pages(findings, d.pgdata)
    reconnects = sum(s.reconnects for s in d.sessions)
    summary = {
        "database": d.server.database,
        "relations": len(d.rels),
        "blocks": sum(r.relation.nblocks for r in d.rels),
        "pages_read": sum(r.pages_read for r in d.rels),
        "pages_refused": sum(len(r.refused) for r in d.rels),
        "findings": len(findings),
        "errors": sum(1 for f in findings if f["severity"] == "error"),
        "warnings": sum(1 for f in findings if f["severity"] == "warning"),
        "damaged_relations": sorted({f["relation"] for f in findings if f["severity"] == "error"}),
        "files_used": d.pgdata is not None,
        "scan": d.scan_note,
        "visibility": d.visibility_note,
        "crashes": d.crashes,
        "reconnects": reconnects,
        "amcheck_stopped": d.amcheck_stopped,
        "seconds": round(time.monotonic() - d.started, 3),
    }
    server = {**d.server.to_json(), "database_oid": d.server.database_oid}
    del server["superuser"]
    return DiagnoseOutcome(server, relation_summaries(d), findings, summary)
