"""The result of a salvage as data (report.py renders it for people): blocks by class, rows saved through SQL and
carved, what is lost or may be, the failures SQL met, the notes, and the time each phase took."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgsurgeon.salvage.engine import Salvage


def report(s: Salvage, started: float, already: bool = False) -> dict[str, Any]:
    t = s.table
    if already:
        return {
            "table": t.rel.qualified,
            "complete": True,
            "already_complete": True,
            "outputs": s.sink.finish(),
            "seconds": round(time.time() - started, 3),
        }
    classes = getattr(s, "classes", {})
    everything = sorted(s.lost, key=lambda x: (x["block"], x["lp"] or 0))
    for item in everything:
        item["ctid"] = f"({item['block']},{item['lp'] if item['lp'] is not None else '?'})"
    lost = [x for x in everything if x.get("certain", True)]
    maybe = [x for x in everything if not x.get("certain", True)]
    rows_sql = s.stats.rows_sql
    snap = getattr(s, "snapshot", None)
    if snap is not None and snap.renewed:
        s.notes.append(
            f"the shared snapshot was lost {snap.renewed} time(s) with a crashed backend: rows read after that "
            "come from a later moment (a row changed meanwhile may be missing or saved twice)"
        )
    out = {
        "table": t.rel.qualified,
        "oid": t.rel.oid,
        "file": t.rel.filepath,
        "pages_from": s.pages.kind if s.pages is not None else "none",
        "output": s.sink.describe,
        "outputs": getattr(s, "outputs", {}),
        "blocks": {
            "total": t.rel.nblocks,
            "healthy": t.rel.nblocks - len(classes),
            "zero": sum(1 for c in classes.values() if c["state"] == "zero"),
            "damaged": sum(1 for c in classes.values() if c["state"] == "damaged"),
            "missing": sum(1 for c in classes.values() if c["state"] == "missing"),
            "carved": s.carved.get("pages", 0),
        },
        "damaged_blocks": [
            {"block": b, "codes": c["codes"], "message": c["message"]}
            for b, c in sorted(classes.items())
            if c["state"] == "damaged"
        ][:1000],
        "rows": {
            "sql": rows_sql,
            "carved": s.carved.get("rows", 0),
            "carved_kept_apart": s.carved.get("uncertain", 0),
            "carved_invisible_skipped": s.carved.get("invisible", 0),
            "carved_from_checksum_failures": s.carved.get("checksum_failures", 0),
            "saved": rows_sql + s.carved.get("rows", 0),
        },
        "lost": lost,
        "lost_count": len(lost),
        "pages_lost": [p.to_json() for p in getattr(s, "page_losses", [])],
        "maybe_lost": maybe,
        "maybe_lost_count": len(maybe),
        "failures": [f.to_json() for f in s.failures],
        "crashes": s.stats.crashes,
        "notes": s.notes,
        "seconds": {
            "total": round(time.time() - started, 3),
            "classify": round(getattr(s, "classify_seconds", 0.0), 3),
            "sql": round(getattr(s, "sql_seconds", 0.0), 3),
            "carve": round(getattr(s, "carve_seconds", 0.0), 3),
        },
    }
    if s.deleted is not None:
        out["deleted"] = s.deleted
    copies = good_copies(s, out)
    if copies:
        out["good_copies"] = copies
    # an all-zero page's rows possibly gone leave the salvage incomplete too: nothing says they were dead (on a
    # page whose line pointers are gone, the rows carving found account for the live ones as far as anyone knows)
    possibly = any(x.get("account") and x.get("zero") for x in maybe)
    out["complete"] = not lost and not possibly and s.carved.get("uncertain", 0) == 0
    return out


def good_copies(s: Salvage, out: dict[str, Any]) -> dict[str, Any] | None:
    """Where whole copies of the pages salvage could only carve (or found all zeroes) may be, when the server shows
    any: a standby streaming from it, WAL archiving (repair --from-standby, --from-backup bring them back whole)."""
    facts = getattr(s, "facts", None)
    b = out["blocks"]
    if facts is None or not (b["carved"] or b["zero"] or b["damaged"] or b["missing"]):
        return None
    if not (facts.standbys or facts.archiving):
        return None
    return {"standbys": facts.standbys, "archiving": facts.archiving, "database": facts.database}
