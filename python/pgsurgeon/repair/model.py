"""The repair plan: what will be done to which blocks and tuples, what each step costs, and which rows are lost.

A plan is built read-only (``planner.build_plan``), printed (a dry run stops there), and executed as printed
(``execute.execute``). Everything in it is plain data, so ``--format json`` prints it and tests compare it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgsurgeon.catalog.relation import Relation
from pgsurgeon.repair.copies import PageCopy
from pgsurgeon.repair.ledger import Ledger

Tid = tuple[int, int]
"""(block, line pointer) — a ctid built from the tuple's physical position, never from its (maybe damaged) t_ctid."""

# Step kinds, in execution order.
SALVAGE = "salvage"
SAVE_PAGES = "save-pages"
CARVE = "carve"
FREEZE = "freeze"
KILL = "kill"
ZERO_FILE = "zero-pages"
RESTORE_FILE = "restore-pages"
CLEAR_LPS = "clear-line-pointers"
VM_FILE = "write-maps"
"""The visibility map bits cleared and/or the free space map removed in the files (repair/maps.py)."""
REWRITE_SQL = "rewrite-table"
REINDEX = "reindex"
VACUUM = "vacuum"
REINSERT = "reinsert"
VERIFY = "verify"
CHECK = "check-ledger"

# Why a row is lost (Loss.cause).
CAUSE_KILLED = "killed"
CAUSE_ZEROED = "zeroed"
CAUSE_CLEARED = "cleared"
CAUSE_TOAST = "toast"
CAUSE_GONE = "gone"
"""Already gone before the repair (an index entry points at nothing); REINDEX drops the entry."""

# Page methods.
METHOD_FILE = "file"
METHOD_SQL = "sql"


def tid_text(tid: Tid) -> str:
    return f"({tid[0]},{tid[1]})"


def tid_ranges(tids: list[Tid] | set[Tid], limit: int | None = None) -> str:
    """``(3,1..185) (4,2) (4,7..9)``: ctids with runs of line pointers folded; ``limit`` groups at most."""
    by_block: dict[int, list[int]] = {}
    for b, lp in sorted(set(tids)):
        by_block.setdefault(b, []).append(lp)
    parts: list[str] = []
    for b, lps in by_block.items():
        start = prev = lps[0]
        for lp in lps[1:]:
            if lp == prev + 1:
                prev = lp
                continue
            parts.append(f"({b},{start})" if start == prev else f"({b},{start}..{prev})")
            start = prev = lp
        parts.append(f"({b},{start})" if start == prev else f"({b},{start}..{prev})")
    if limit is not None and len(parts) > limit:
        return " ".join(parts[:limit]) + f" … ({len(parts) - limit} more groups)"
    return " ".join(parts)


def rows_lost(tids: list[Tid] | set[Tid]) -> str:
    """``3 row(s) lost: (3,1..3)``, or ``no row lost`` (not ``0 row(s) lost: ``)."""
    return f"{len(tids)} row(s) lost: {tid_ranges(tids, 12)}" if tids else "no row lost"


@dataclass
class Loss:
    """One row (a ctid of the table) that will not be in the table after the repair."""

    block: int
    lp: int
    cause: str
    reason: str
    step: str | None = None
    """Id of the step that removes it (None: already gone before the repair)."""
    carved: bool = False
    """Carving recovered it from the saved bytes: ``--reinsert`` puts it back."""
    place: str | None = None
    """Where the row ends (``ledger.REINSERTED``, ``KEPT_APART``, ``LOST``), or ``DEAD``: the tuple was no row."""

    @property
    def tid(self) -> Tid:
        return (self.block, self.lp)

    def to_json(self) -> dict[str, Any]:
        return {
            "ctid": tid_text(self.tid),
            "block": self.block,
            "lp": self.lp,
            "cause": self.cause,
            "reason": self.reason,
            "step": self.step,
            "carved": self.carved,
            "place": self.place,
        }


@dataclass
class PageWrite:
    """A whole page written in a relation file (zeroed, or line pointers cleared)."""

    relation: str
    file: str
    """Segment file relative to the data directory."""
    block: int
    offset: int
    action: str
    """``zero``, ``clear`` (line pointers set unused, checksum recomputed) or ``restore`` (the good copy written
    whole, fetched again once the server is stopped)."""
    lps: list[int] = field(default_factory=list)
    sha256_before: str | None = None
    copy: PageCopy | None = field(default=None, repr=False)
    """With ``restore``: the copy as planned (its source and LSNs)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "file": self.file,
            "block": self.block,
            "offset": self.offset,
            "action": self.action,
            "lps": self.lps,
            "sha256_before": self.sha256_before,
            "source": self.copy.source if self.copy is not None else None,
            "lsn_copy": self.copy.to_json()["lsn_copy"] if self.copy is not None else None,
        }


@dataclass
class Step:
    id: str
    kind: str
    title: str
    relation: str | None = None
    sql: list[str] = field(default_factory=list)
    """Statements exactly as they will be sent (parameters inlined)."""
    writes: list[PageWrite] = field(default_factory=list)
    tids: list[Tid] = field(default_factory=list)
    """Tuples the step acts on (kill, freeze)."""
    irreversible: bool = False
    wal_logged: bool = False
    server_stopped: bool = False
    cost: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "relation": self.relation,
            "sql": self.sql,
            "writes": [w.to_json() for w in self.writes],
            "tids": [tid_text(t) for t in self.tids],
            "irreversible": self.irreversible,
            "wal_logged": self.wal_logged,
            "server_stopped": self.server_stopped,
            "cost": self.cost,
            "notes": self.notes,
        }


def relation_json(rel: Relation) -> dict[str, Any]:
    """One relation of the repaired table (the table, its TOAST table and their indexes) in the plan's JSON."""
    return {
        "role": rel.role,
        "oid": rel.oid,
        "name": rel.regclass,
        "relkind": rel.relkind,
        "access_method": rel.amname,
        "file": rel.filepath,
        "blocks": rel.nblocks,
    }


@dataclass
class Plan:
    table: str
    oid: int
    server: dict[str, Any]
    relations: list[Relation]
    method: str
    """How page-level damage is repaired: ``file`` (pages written with the server stopped) or ``sql``."""
    steps: list[Step] = field(default_factory=list)
    lost: list[Loss] = field(default_factory=list)
    """Rows of the table gone after the repair, by ctid (before --reinsert)."""
    kept: list[dict[str, Any]] = field(default_factory=list)
    """Tuples repaired in place (frozen), with why."""
    toast_lost: list[Loss] = field(default_factory=list)
    """TOAST chunks removed (not rows: the rows that used them are in ``lost``)."""
    diagnosis: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    """The diagnosis findings the plan acts on (errors)."""
    unrepaired: list[str] = field(default_factory=list)
    """Damage the plan does nothing about, and why."""
    blockers: list[tuple[str, str]] = field(default_factory=list)
    """(message, hint): why --execute is refused."""
    notes: list[str] = field(default_factory=list)
    run_dir: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    carved_rows: dict[Tid, bytes] = field(default_factory=dict, repr=False)
    """Carved COPY text lines for lost ctids that --reinsert can put back."""
    apart_rows: dict[Tid, list[tuple[bytes, str]]] = field(default_factory=dict, repr=False)
    """Carved COPY text lines (and why) of removed rows that are kept apart, not put back."""
    ledger: Ledger = field(default_factory=Ledger)
    """Where every row of the table ends: the plan's numbers and the check after the repair come from it."""
    page_losses: list[dict[str, Any]] = field(default_factory=list)
    """The loss account (loss.PageLoss.to_json) of the pages whose rows the ledger loses, as scan and salvage
    tell it."""
    touched: dict[str, list[int]] = field(default_factory=dict)
    copies: list[PageCopy] = field(default_factory=list)
    """Every damaged page offered a good copy (--from-standby): used, or rejected and why."""
    """Relation (regclass text) -> the blocks the repair changes: saved before anything is done."""
    exclusion_violations: list[dict[str, Any]] = field(default_factory=list)
    """Per exclusion constraint whose index is rebuilt: the pairs of rows (by ctid) that violate it now."""

    @property
    def lost_tids(self) -> list[Tid]:
        return sorted({loss.tid for loss in self.lost})

    @property
    def recoverable(self) -> list[Tid]:
        return sorted({loss.tid for loss in self.lost if loss.carved})

    def step(self, kind: str) -> Step | None:
        return next((s for s in self.steps if s.kind == kind), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "oid": self.oid,
            "server": self.server,
            "relations": [relation_json(r) for r in self.relations],
            "method": self.method,
            "options": self.options,
            "run_dir": self.run_dir,
            "diagnosis": self.diagnosis,
            "steps": [s.to_json() for s in self.steps],
            "lost": [loss.to_json() for loss in sorted(self.lost, key=lambda x: x.tid)],
            "lost_count": len(self.lost_tids),
            "pages_lost": self.page_losses,
            "ledger": self.ledger.to_json(),
            "recoverable_by_carving": [tid_text(t) for t in self.recoverable],
            "touched_pages": self.touched,
            "copies": [c.to_json() for c in self.copies],
            "kept": self.kept,
            "toast_chunks_removed": [loss.to_json() for loss in self.toast_lost],
            "unrepaired": self.unrepaired,
            "blockers": [{"message": m, "hint": h} for m, h in self.blockers],
            "notes": self.notes,
            "exclusion_violations": self.exclusion_violations,
        }
