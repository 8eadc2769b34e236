"""From a diagnosis to a repair plan, read-only.

For each heap relation (the table and its TOAST table) every damaged block is judged:

* **page level** — the server refuses the page (bad header, checksum), or its header or item-ID array is damaged:
  the page is zeroed (``file`` method: in the relation file with the server stopped, the old page kept in an undo
  manifest; ``sql`` method: ``zero_damaged_pages`` and ``VACUUM FULL``). Every row of the page is lost.
* **line pointers** — a REDIRECT or DEAD line pointer that leads nowhere (pg_surgery only takes LP_NORMAL items): the
  line pointer is cleared in the file (``file``), or left behind by the rewrite (``sql``).
* **tuple level** — a damaged tuple behind a sound line pointer: ``heap_force_freeze`` when only its visibility
  fields are wrong (the row comes back as it was), else ``heap_force_kill`` (the row is lost).

TOAST chunks that go take the rows whose values they held (found by the TOAST pointers in the table's tuples); index
entries that point at nothing are rows already gone. Everything lost is listed by ctid, built from the block and line
pointer number. Where each removed row ends is settled in placement.py, the steps are built in steps.py.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db, loss
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import Column, Relation
from pgsurgeon.catalog.sql import ServerFacts, resolve_relation
from pgsurgeon.errors import UsageError
from pgsurgeon.repair import exclusion, facts, ledger, pages, placement
from pgsurgeon.repair.evidence import Evidence, UniqueKeys, gone_rows, read_evidence
from pgsurgeon.repair.maps import FSM_CODES
from pgsurgeon.repair.model import (
    CAUSE_CLEARED,
    CAUSE_GONE,
    CAUSE_KILLED,
    CAUSE_TOAST,
    CAUSE_ZEROED,
    FREEZE,
    KILL,
    METHOD_FILE,
    METHOD_SQL,
    Loss,
    Plan,
    Tid,
    tid_text,
)
from pgsurgeon.repair.pages import LP_DEAD, LP_NORMAL, LP_REDIRECT, LP_UNUSED, PageReader
from pgsurgeon.repair.steps import plan_steps

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.lab import LabCluster
    from pgsurgeon.repair.backupsource import BackupCopySource
    from pgsurgeon.repair.copies import PageCopy, PageSource
    from pgsurgeon.repair.standby import StandbySource

# Finding codes that condemn a whole page (with item None): the header, the checksum, the item-ID array as a whole.
PAGE_CODES = frozenset(
    {
        "server.invalid_page",
        "server.crash",
        "server.error",
        "line_pointer.many_invalid",
        "line_pointer.count",
    }
)
# Codes that are evidence of rows already gone, or that only the indexes need to answer for.
EVIDENCE_CODES = frozenset(
    {
        "page_header.zeroed_referenced",
        "page_header.zeroed_all_visible",
        "file.heap_truncated",
        "file.vm_beyond_end",
        "file.partial_page",
        "file.short_segment",
        "server.read_error",
    }
)
GONE_CODES = frozenset(
    {"index.tid_unused", "index.tid_beyond_heap", "page_header.zeroed_referenced", "file.heap_truncated"}
)
# Damage heap_force_freeze repairs: it resets xmin (frozen), xmax (invalid), t_ctid (itself) and the visibility bits.
FREEZABLE = frozenset(
    {
        "tuple_header.xmin_old",
        "tuple_header.xmin_old_hinted",
        "tuple_header.xmin_future",
        "tuple_header.xmax_future",
        "tuple_header.xmax_old",
        "tuple_header.multi_future",
        "tuple_header.multi_old",
        "tuple_header.ctid_not_self",
        "tuple_header.ctid",
    }
)
UNREPAIRED_CODES = {
    "page_header.lsn_future": "a page LSN in the future (checkpoints fail once the page is written): the rows are "
    "intact, so repair leaves the page; restore it from a backup or rewrite its pd_lsn by hand",
}
# MaxHeapTuplesPerPage (src/include/access/htup_details.h): no page holds more line pointers to tuples
PAGE_HEADER, HEAP_TUPLE_HEADER, ITEM_ID = 24, 24, 4


@dataclass
class RepairRequest:
    dsn: str
    table: str
    reinsert: bool = True
    """Put the rows carved with certainty back into the table."""
    reinsert_required: bool = False
    """--reinsert was asked for: where it cannot be done, refuse (by default, keep the rows in carved.copy)."""
    skip_salvage: bool = False
    salvage_into: str | None = None
    salvage_out: Path | None = None
    method: str = "auto"
    """auto, file or sql: how page-level damage is repaired."""
    force_file_writes: bool = False
    freeze: bool = True
    reindex: str = "auto"
    """auto (CONCURRENTLY when possible), concurrently or plain."""
    run_dir: Path | None = None
    pgdata: Path | None = None
    on_progress: Callable[[str], None] | None = None
    from_standby: str | None = None
    """Connection string of a streaming standby: damaged pages are restored from its copies where they are good."""
    standby_timeout: float = 300.0
    """Seconds to wait for the standby to replay up to the primary's position before refusing."""
    from_backup: Path | None = None
    """A base backup of the cluster: recovered in a scratch directory up to the primary's position, its pages restore
    the damaged ones where they are good."""
    wal_archive: Path | None = None
    """Where archive_command put the WAL since the backup (the primary's pg_wal is read after it)."""
    accept_older: bool = False
    """Restore pages from a backup whose WAL ends before the primary's position even where they may be older."""
    recovery_timeout: float = 3600.0
    """Seconds the backup's recovery may take before repair refuses."""


@dataclass
class Context:
    """What planning learned that execution needs too (the open connection among them)."""

    req: RepairRequest
    conn: Connection[tuple[Any, ...]]
    server: ServerFacts
    rels: list[Relation]
    table: Relation
    cols: list[Column]
    reader: PageReader
    lab: LabCluster | None
    source: PageSource | None = None
    """Where good copies of damaged pages come from (--from-standby, --from-backup), or None."""

    def rel(self, role: str) -> Relation | None:
        return next((r for r in self.rels if r.role == role), None)

    @property
    def toast(self) -> Relation | None:
        return self.rel("toast")

    @property
    def indexes(self) -> list[Relation]:
        return [r for r in self.rels if r.role == "index"]

    def sql_text(self, query: Any) -> str:
        text: str = query.as_string(self.conn) if hasattr(query, "as_string") else str(query)
        return text

    def progress(self, text: str) -> None:
        if self.req.on_progress is not None:
            self.req.on_progress(text)


@dataclass
class HeapDamage:
    rel: Relation
    zero: dict[int, list[str]] = field(default_factory=dict)
    """block -> why the whole page goes."""
    clear: dict[int, dict[int, str]] = field(default_factory=dict)
    """block -> line pointer -> why it is cleared (REDIRECT/DEAD/beyond pd_lower: pg_surgery cannot take it)."""
    kill: dict[Tid, str] = field(default_factory=dict)
    freeze: dict[Tid, str] = field(default_factory=dict)
    refused: set[int] = field(default_factory=set)
    images: dict[int, bytes] = field(default_factory=dict)
    """The page as planned from (the server's copy, else the file's)."""
    items: dict[int, list[pages.Item]] = field(default_factory=dict)
    damaged_items: set[Tid] = field(default_factory=set)
    """Tuples with findings of their own: what carving reads through their line pointer is not trusted."""
    freezable_items: set[Tid] = field(default_factory=set)
    """Damaged tuples whose only damage is in their visibility fields (on a page that goes whole): carved whole,
    they are put back as heap_force_freeze would have kept them."""
    zero_blocks_present: set[int] = field(default_factory=set)
    gone_items: dict[Tid, str] = field(default_factory=dict)
    """Findings on line pointers that are already unused: nothing to write, the row (or chunk) is gone."""
    restore: dict[int, PageCopy] = field(default_factory=dict)
    """block -> the good copy that replaces it whole (--from-standby)."""

    @property
    def touched(self) -> set[int]:
        tuples = {b for b, _ in self.kill} | {b for b, _ in self.freeze}
        return set(self.zero) | set(self.clear) | tuples | set(self.restore)


# ---------------------------------------------------------------------------------------------- entry point


def build_plan(req: RepairRequest) -> tuple[Plan, Context]:
    """Connect, check, diagnose and plan; nothing is changed. The caller closes ``ctx.conn``."""
    conn = facts.connect(req.dsn, read_only=True)
    ctx: Context | None = None
    try:
        server = facts.server_facts(conn, req.pgdata)
        facts.preflight(server)
        oid, relkind = resolve_relation(conn, req.table)
        if relkind == "p":
            raise UsageError(
                f"{req.table} is a partitioned table: it holds no rows itself",
                hint="repair the damaged partition (diagnose names it)",
            )
        if relkind not in ("r", "m"):
            raise UsageError(
                f"{req.table} is not a table (relkind {relkind})",
                hint="repair takes a table; a damaged index alone is rebuilt with REINDEX INDEX",
            )
        rels = facts.relations(conn, oid, server.block_size)
        table = next(r for r in rels if r.role == "table")
        if table.system:
            raise UsageError(
                f"{table.regclass} is a system catalog: repair does not touch catalogs",
                hint="salvage what you can and restore the cluster from a backup",
            )
        ctx = Context(
            req=req,
            conn=conn,
            server=server,
            rels=rels,
            table=table,
            cols=catalog.columns(conn, oid),
            reader=PageReader(conn, server),
            lab=_lab(server),
        )
        if req.from_standby is not None:
            ctx.source = open_standby(ctx)
        elif req.from_backup is not None:
            ctx.source = open_backup(ctx)
        plan = Planner(ctx).plan()
    except BaseException:
        conn.close()
        if ctx is not None and ctx.source is not None:
            ctx.source.close()
        raise
    return plan, ctx


def open_standby(ctx: Context) -> StandbySource:
    """The standby of --from-standby, refused when it is of another cluster, and waited for until it has
    replayed to the primary's WAL position now (the plan takes its pages from there)."""
    from pgsurgeon.repair.copies import parse_lsn
    from pgsurgeon.repair.standby import StandbySource

    assert ctx.req.from_standby is not None
    sysid = ctx.server.system_identifier
    if ctx.server.pgdata is not None:
        with contextlib.suppress(OSError, ValueError):
            sysid = str(core.read_control(str(ctx.server.pgdata))["system_identifier"])
    source = StandbySource(ctx.req.from_standby, ctx.server, sysid)
    try:
        row = ctx.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        target = parse_lsn(row[0] if row else None) or 0
        ctx.progress(f"waiting for the standby to replay to the primary's position {row[0] if row else '?'}")
        source.wait(target, "current WAL position", ctx.req.standby_timeout, ctx.progress)
    except BaseException:
        source.close()
        raise
    return source


def open_backup(ctx: Context) -> BackupCopySource:
    """The backup of --from-backup, refused when it is of another cluster, recovered up to the primary's WAL
    position now (the plan takes its pages from there; the WAL may end before: the copy says where)."""
    from pgsurgeon.repair.backupsource import BackupCopySource
    from pgsurgeon.repair.copies import parse_lsn

    req = ctx.req
    assert req.from_backup is not None
    pgdata = ctx.server.pgdata
    if pgdata is None:
        raise UsageError(
            "--from-backup needs the primary's data directory (its pg_control and its surviving pg_wal)",
            hint="run repair on the database server's host, with --pgdata when it is not found by itself",
        )
    sysid: str | None = None
    with contextlib.suppress(OSError, ValueError):
        sysid = str(core.read_control(str(pgdata))["system_identifier"])
    source = BackupCopySource(req.from_backup, req.wal_archive, pgdata, sysid, req.accept_older, req.recovery_timeout)
    try:
        row = ctx.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        target = parse_lsn(row[0] if row else None) or 0
        ctx.progress(f"recovering the backup {req.from_backup} to the primary's position {row[0] if row else '?'}")
        source.wait(target, "current WAL position", req.recovery_timeout, ctx.progress)
    except BaseException:
        source.close()
        raise
    return source


def _lab(server: ServerFacts) -> LabCluster | None:
    if server.pgdata is None:
        return None
    from pgsurgeon.journal.server import lab_cluster_for
    from pgsurgeon.lab.marker import is_lab_cluster

    if not is_lab_cluster(server.pgdata):  # the marker says "made to be broken"; without it, no restarts
        return None
    return lab_cluster_for(server.pgdata)


def diagnose(ctx: Context) -> Any:
    from pgsurgeon.diagnose import DiagnoseRequest, run_diagnose

    return run_diagnose(
        DiagnoseRequest(
            dsn=ctx.req.dsn,
            tables=[ctx.table.regclass],
            heapallindexed=True,
            pgdata=ctx.req.pgdata,
            on_progress=ctx.req.on_progress,
        )
    )


# ---------------------------------------------------------------------------------------------- planning


class Planner:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.server = ctx.server
        self.reader = ctx.reader
        # a materialized view takes no INSERT (REFRESH rebuilds it): --reinsert there is refused below
        self.reinsert = ctx.req.reinsert and ctx.table.relkind != "m"
        self.notes: list[str] = []
        self.unrepaired: list[str] = []
        self.blockers: list[tuple[str, str]] = []
        self.keyinfo: ledger.KeyInfo | None = None
        self.keys = UniqueKeys(ctx.reader, ctx.table, None)
        """The entries of the unique key's index the plan asks about (read with the evidence)."""
        self.early_count: ledger.EarlyCount

    def plan(self) -> Plan:
        ctx = self.ctx
        ctx.progress(f"diagnosing {ctx.table.regclass}")
        outcome = diagnose(ctx)
        errors = [f for f in outcome.findings if f["severity"] == "error"]
        by_rel: dict[str, list[dict[str, Any]]] = {}
        for f in errors:
            by_rel.setdefault(str(f["relation"]), []).append(f)
        table, toast = ctx.table, ctx.toast
        ctx.progress("judging the damaged blocks")
        main = self.heap_damage(table, by_rel.get(table.regclass, []))
        tdmg = self.heap_damage(toast, by_rel.get(toast.regclass, [])) if toast is not None else None
        index_names = {r.regclass for r in ctx.rels if not r.is_heap}
        index_findings = [f for f in errors if f["relation"] in index_names or str(f["code"]).startswith("index.")]
        copies: list[PageCopy] = []
        if ctx.source is not None:
            from pgsurgeon.repair import restore

            ctx.progress(f"fetching good copies of the damaged pages from {ctx.source.describe()}")
            heaps = [d for d in (main, tdmg) if d is not None]
            copies, errors, index_findings = restore.offer(
                # the primary's position: a backup whose WAL ends before it is exact to less (short_of says how far)
                self,
                ctx.source,
                heaps,
                errors,
                index_findings,
                ctx.source.short_of or ctx.source.replayed,
            )
        for f in errors:
            if f["code"] == "server.timeout":
                self.blockers.append(
                    (
                        f"the diagnosis is incomplete: {f['message']}",
                        "another session held a lock or a statement timed out; run repair again when the table is "
                        "quiet",
                    )
                )
        method = self.choose_method(main, tdmg)
        if method == METHOD_SQL and any(c.accepted for c in copies):
            self.blockers.append(
                (
                    "the good copies are written into the relation files with the server stopped: that needs the file "
                    "method",
                    "run repair on the database server's host with --force-file-writes (you stop the server when "
                    "asked), or without --from-standby",
                )
            )
        plan = Plan(
            table=table.regclass,
            oid=table.oid,
            server=self.server.to_json(),
            relations=ctx.rels,
            method=method,
            diagnosis={**outcome.summary, "relation_details": outcome.relations},
            # a wrong free space map is a warning (a hint the server corrects), repaired all the same
            findings=errors + [f for f in outcome.findings if f["code"] in FSM_CODES],
        )
        plan.copies = copies
        plan.options = {
            "reinsert": self.reinsert,
            "skip_salvage": ctx.req.skip_salvage,
            "freeze": ctx.req.freeze,
            "reindex": ctx.req.reindex,
            "force_file_writes": ctx.req.force_file_writes,
            "lab": ctx.lab.name if ctx.lab is not None else None,
            "from_standby": ctx.source.describe() if ctx.source is not None else None,
        }
        losses: dict[Tid, Loss] = {}

        def lose(tid: Tid, cause: str, reason: str) -> None:
            if tid not in losses:
                losses[tid] = Loss(tid[0], tid[1], cause, reason)

        # tuples of the table, then whole pages and line pointers
        for tid, why in sorted(main.kill.items()):
            lose(tid, CAUSE_KILLED, why)
        try:
            self.keyinfo = ledger.unique_key(ctx.conn, table.oid)
        except db.Error:
            self.keyinfo = None
        self.early_count = self.start_count(main)
        evidence = self.index_evidence(main, errors)
        for blk in sorted(main.zero):
            for tid in self.rows_on_page(main, blk, evidence):
                lose(tid, CAUSE_ZEROED, f"on block {blk}, whose page is zeroed: {'; '.join(main.zero[blk][:2])}")
        for blk, lps in sorted(main.clear.items()):
            for lp, why in sorted(lps.items()):
                lose((blk, lp), CAUSE_CLEARED, why)
        # the TOAST table: chunks that go, and the rows whose values they held
        if tdmg is not None and toast is not None:
            values = self.toast_values_lost(tdmg, plan)
            if values:
                ctx.progress(f"finding the rows that hold {len(values)} damaged TOAST value(s)")
                for tid, valueid in self.rows_with_toast(table, main, values).items():
                    if tid in main.freeze:
                        del main.freeze[tid]
                    if tid not in losses and (tid[0] not in main.zero) and tid not in main.kill:
                        main.kill[tid] = f"its TOAST value {valueid} loses chunks in {toast.regclass}"
                        lose(tid, CAUSE_TOAST, main.kill[tid])
        # rows already gone: line pointers found unused, index entries that lead nowhere
        for tid, why in sorted(main.gone_items.items()):
            lose(tid, CAUSE_GONE, why)
        damaged = {str(f["relation"]) for f in index_findings if not str(f["code"]).startswith("index.")}
        for tid, why in sorted(gone_rows(evidence, self.btrees, damaged).items()):
            if tid[0] not in main.restore:  # the copy holds the row the entry points to
                lose(tid, CAUSE_GONE, why)
        for f in errors:
            if f["code"] in UNREPAIRED_CODES:
                self.unrepaired.append(f"{f['relation']} block {f['block']}: {UNREPAIRED_CODES[f['code']]}")
        # what carving recovers, then where every row ends
        placement.carve(self, plan, main, losses, lose)
        plan.lost = sorted(losses.values(), key=lambda x: x.tid)
        plan.kept = [
            {"ctid": tid_text(t), "relation": r.regclass, "reason": why}
            for r, d in ((table, main), (toast, tdmg))
            if r is not None and d is not None
            for t, why in sorted(d.freeze.items())
        ]
        placement.count_in_place(self, plan, main)
        plan.page_losses = self.account(plan)
        # rows an exclusion constraint should have refused are evidence against its index too: it is rebuilt
        violated = self.exclusion_check(plan)
        plan_steps(self, plan, main, tdmg, index_findings + violated)
        surgery = facts.surgery_missing(self.server)
        if surgery is not None and any(st.kind in (KILL, FREEZE) for st in plan.steps):
            self.blockers.append(surgery)
        if ctx.req.reinsert_required and table.relkind == "m" and plan.carved_rows:
            self.blockers.append(
                (
                    f"{table.regclass} is a materialized view: rows cannot be inserted back",
                    "drop --reinsert; REFRESH MATERIALIZED VIEW rebuilds it from its query",
                )
            )
        plan.unrepaired = self.unrepaired
        plan.blockers = self.blockers
        plan.notes = self.notes
        return plan

    def exclusion_check(self, plan: Plan) -> list[dict[str, Any]]:
        """The rows that violate each exclusion constraint of the table, listed by ctid: a damaged index lets them
        in, and its REINDEX fails on them. A blocker while there are any; the constraints violated, as evidence for
        the REINDEX."""
        ctx = self.ctx
        excl = {r.regclass for r in ctx.rels if r.relkind == "i" and r.exclusion}
        if not excl:
            return []
        ctx.progress("comparing the rows under the exclusion constraints (sequential scans)")
        violated: list[dict[str, Any]] = []
        for v in exclusion.violations(ctx.conn, ctx.table.oid, ctx.table.ident(), excl):
            plan.exclusion_violations.append(v.to_json())
            if v.error is not None:
                self.notes.append(f"exclusion constraint {v.constraint}: {v.error}")
            elif v.count:
                violated.append({"relation": v.index, "code": "exclusion", "constraint": v.constraint})
                self.blockers.append(
                    (
                        f"{v.count} pair(s) of rows violate exclusion constraint {v.constraint}, which its damaged "
                        f"index {v.index} let in: REINDEX would fail",
                        "delete or change one row of each pair listed (by ctid) under exclusion violations, then run "
                        "repair again",
                    )
                )
        return violated

    def account(self, plan: Plan) -> list[dict[str, Any]]:
        """The loss account of the pages whose rows the ledger loses, in the words every command uses (read from
        the files when the data directory is on this host)."""
        pgdata = self.server.pgdata
        blocks = sorted({t[0] for t in plan.ledger.lost})
        if pgdata is None or not blocks:
            return []
        try:
            pages = loss.from_server(
                self.ctx.conn, pgdata, self.ctx.table, self.ctx.indexes, blocks, set(plan.recoverable)
            )
        except (OSError, ValueError, db.Error) as exc:
            self.notes.append(f"the loss account could not read the index files: {exc}")
            return []
        return [p.to_json() for p in pages if p.gone]

    def start_count(self, main: HeapDamage) -> ledger.EarlyCount:
        """Count the rows on the blocks the plan surely leaves alone beside the rest of planning (placement takes
        the count, less the blocks the evidence adds)."""
        known = main.touched | main.zero_blocks_present | {b for b, _ in main.gone_items}
        key = self.keyinfo.columns if self.keyinfo is not None else None
        dsn = self.ctx.req.dsn
        return ledger.EarlyCount(lambda: facts.connect(dsn, read_only=True), self.ctx.table, key, known)

    # ------------------------------------------------------------------ blocks

    def heap_damage(self, rel: Relation, found: list[dict[str, Any]]) -> HeapDamage:
        dmg = HeapDamage(rel)
        blocks: dict[int, list[dict[str, Any]]] = {}
        for f in found:
            if f["block"] is None or f["code"] in EVIDENCE_CODES or f["code"] in UNREPAIRED_CODES:
                continue
            if str(f["code"]).startswith("index.") or f["code"] == "server.timeout":
                continue  # the indexes answer for these (REINDEX)
            if str(f["code"]).startswith(("vm.", "fsm.")):
                continue  # the map is wrong, not the page (repair/maps.py)
            if f.get("fork", "main") != "main" or int(f["block"]) >= rel.nblocks:
                continue
            blocks.setdefault(int(f["block"]), []).append(f)
        for blk, fs in sorted(blocks.items()):
            self.judge_block(dmg, blk, fs)
        return dmg

    def judge_block(self, dmg: HeapDamage, blk: int, fs: list[dict[str, Any]]) -> None:
        rel = dmg.rel
        page, source = self.reader.page(rel, blk)
        refused = any(f["code"] in ("server.invalid_page",) for f in fs) or source != "server"
        if refused:
            dmg.refused.add(blk)
        if page is None:
            dmg.zero[blk] = [f"the server refuses it and its file cannot be read here ({source})"]
            return
        dmg.images[blk] = page
        if pages.is_all_zero(page):
            dmg.zero_blocks_present.add(blk)
            return
        items = pages.heap_items(page, blk)
        dmg.items[blk] = items
        by_lp = {it.lp: it for it in items}
        page_reasons = [
            f"{f['code']}: {f['message']}"
            for f in fs
            if f["item"] is None
            and (
                f["code"] in PAGE_CODES
                or str(f["code"]).startswith("page_header.")
                or str(f["code"]).startswith("checksum.")
                or str(f["code"]).startswith("line_pointer.")
            )
        ]
        if refused and not page_reasons:
            page_reasons = ["the server refuses the page"]
        per_item: dict[int, list[dict[str, Any]]] = {}
        for f in fs:
            if f["item"] is not None:
                per_item.setdefault(int(f["item"]), []).append(f)
        loose = [f for f in fs if f["item"] is None]
        if loose and not page_reasons:
            if per_item and not refused and all(f["code"] == "server.error" for f in loose):
                # verify_heapam stopped on the block (a tuple's xmin or MultiXact it cannot look up), and the raw
                # checks name the damaged tuples: they are frozen or killed one by one, the rest of the page stays
                self.notes.append(
                    f"{dmg.rel.regclass} block {blk}: {loose[0]['message'][:160]}; the damaged tuples are repaired "
                    "one by one, the page stays"
                )
            else:
                page_reasons.append(f"{loose[0]['code']}: {loose[0]['message']}")
        copied = self.copied_from(blk, per_item)
        if copied is not None and not page_reasons:
            page_reasons.append(copied)
        for lp, ifs in per_item.items():
            if any(f["area"] in ("tuple_header", "tuple_data", "toast") for f in ifs):
                dmg.damaged_items.add((blk, lp))
                it = by_lp.get(lp)
                codes = sorted({str(f["code"]) for f in ifs})
                if self.ctx.req.freeze and it is not None and it.flags == LP_NORMAL and self.freezable(codes, it):
                    dmg.freezable_items.add((blk, lp))
        if page_reasons:
            dmg.zero[blk] = page_reasons
            return
        for lp, ifs in sorted(per_item.items()):
            codes = sorted({str(f["code"]) for f in ifs})
            why = "; ".join(f"{f['code']}: {f['message']}" for f in ifs[:3])
            it = by_lp.get(lp)
            if it is not None and it.flags == LP_UNUSED:
                dmg.gone_items[(blk, lp)] = f"line pointer {lp} is unused: the tuple is gone ({why})"
                if it.off or it.length:
                    # an unused line pointer with an offset or length left in it is still damage (past the page,
                    # overlapping): it is cleared to zeroes like the others
                    dmg.clear.setdefault(blk, {})[lp] = f"line pointer {lp} is unused with storage ({why})"
                continue
            if it is None or it.flags != LP_NORMAL:
                state = "beyond pd_lower" if it is None else {LP_REDIRECT: "a redirect", LP_DEAD: "dead"}[it.flags]
                dmg.clear.setdefault(blk, {})[lp] = f"line pointer {lp} is {state} and leads nowhere ({why})"
                continue
            freeze_why = self.freezable(codes, it) if self.ctx.req.freeze else None
            heap_only = it.header is not None and int(it.header.get("t_infomask2", 0)) & pages.HEAP_ONLY_TUPLE
            if freeze_why is not None and not heap_only:
                dmg.freeze[(blk, lp)] = f"{freeze_why} ({why})"
            elif freeze_why is not None:
                # heap_force_freeze clears HEAP_UPDATED with the other transaction bits: a heap-only tuple left
                # without it is damage of its own (amcheck: "heap-only tuple that is not the result of an update").
                # Its data is whole: it is killed and put back from carving.
                dmg.kill[(blk, lp)] = f"a heap-only tuple whose visibility fields are damaged ({why})"
            else:
                dmg.kill[(blk, lp)] = why

    @staticmethod
    def copied_from(blk: int, per_item: dict[int, list[dict[str, Any]]]) -> str | None:
        """Why the page is a copy of another block's (a misdirected or torn write), or None: several never-updated
        tuples name their own item number in one other block. Freezing them would keep a second copy of that
        block's rows (duplicate keys); the page goes whole, its own rows carved."""
        named: dict[int, int] = {}
        for lp, ifs in per_item.items():
            for f in ifs:
                m = _CTID.search(str(f["message"])) if f["code"] == "tuple_header.ctid_not_self" else None
                if m and int(m.group(1)) != blk and int(m.group(2)) == lp:
                    named[int(m.group(1))] = named.get(int(m.group(1)), 0) + 1
        source, n = max(named.items(), key=lambda x: x[1], default=(None, 0))
        if source is None or n < 2:
            return None
        return f"the page holds copies of block {source}'s rows ({n} tuples name their own item number there)"

    @staticmethod
    def freezable(codes: list[str], it: pages.Item) -> str | None:
        """Why heap_force_freeze gives this tuple back as it was, or None (kill it)."""
        if not codes or any(c not in FREEZABLE for c in codes) or it.header is None:
            return None
        mask = int(it.header.get("t_infomask", 0))
        mask2 = int(it.header.get("t_infomask2", 0))
        if mask & pages.HEAP_XMIN_INVALID and not mask & pages.HEAP_XMIN_COMMITTED:
            return None  # inserted by a transaction that aborted: not a row
        if not mask & pages.HEAP_XMAX_INVALID and mask2 & (pages.HEAP_HOT_UPDATED | pages.HEAP_KEYS_UPDATED):
            return None  # updated: freezing would bring back an old version next to the new one
        return "only its visibility fields are damaged; freezing makes it visible again with its data"

    # ------------------------------------------------------------------ rows

    @property
    def btrees(self) -> list[Relation]:
        return [r for r in self.ctx.indexes if r.is_btree]

    def index_evidence(self, dmg: HeapDamage, errors: list[dict[str, Any]]) -> Evidence:
        """What the table's btree indexes say of the damaged pages and the rows already gone, when rows may be gone
        or pages go (else nothing)."""
        wanted = bool(dmg.zero or dmg.clear or dmg.zero_blocks_present) or any(f["code"] in GONE_CODES for f in errors)
        if not wanted:
            return Evidence()
        indexes = self.btrees
        if not indexes:
            self.notes.append(
                f"{dmg.rel.regclass} has no btree index: rows on zeroed pages are counted from the page alone"
            )
            return Evidence()
        keyed = next((ix for ix in indexes if self.keyinfo is not None and ix.oid == self.keyinfo.index_oid), None)
        self.keys = UniqueKeys(self.reader, dmg.rel, keyed)
        self.ctx.progress(
            f"reading {dmg.rel.nblocks} table page(s) and {sum(r.nblocks for r in indexes)} index page(s) for "
            "evidence of rows"
        )
        key_blocks = dmg.touched | {b for b, _ in dmg.gone_items}
        return read_evidence(self.reader, dmg, indexes, self.keys, key_blocks)

    def rows_on_page(self, dmg: HeapDamage, blk: int, evidence: Evidence) -> list[Tid]:
        """Every row a zeroed page takes: its sound line pointers, the index entries into it, what carving finds."""
        tids: set[Tid] = {t for t in evidence.named if t[0] == blk}
        most = (self.server.block_size - PAGE_HEADER) // (HEAP_TUPLE_HEADER + ITEM_ID)
        for it in dmg.items.get(blk, []):
            if it.flags == LP_NORMAL and it.header is not None and it.length > 0 and it.lp <= most:
                tids.add((blk, it.lp))
        return sorted(tids)

    def toast_values_lost(self, tdmg: HeapDamage, plan: Plan) -> dict[int, str]:
        """TOAST value ids that lose chunks: on zeroed pages, killed or cleared chunk tuples (from the chunks
        themselves and from the TOAST index's entries)."""
        gone_tids: dict[Tid, str] = {}
        for tid, why in [*tdmg.kill.items(), *tdmg.gone_items.items()]:
            gone_tids[tid] = why
        for blk, lps in tdmg.clear.items():
            for lp, why in lps.items():
                gone_tids[(blk, lp)] = why
        values: dict[int, str] = {}
        for tid, why in gone_tids.items():
            it = next((i for i in tdmg.items.get(tid[0], []) if i.lp == tid[1]), None)
            cid = pages.toast_chunk_id(tdmg.images[tid[0]], it) if it is not None and tid[0] in tdmg.images else None
            if cid is not None:
                values.setdefault(cid, why)
        for blk in tdmg.zero:
            page = tdmg.images.get(blk)
            for it in tdmg.items.get(blk, []):
                cid = pages.toast_chunk_id(page, it) if page is not None else None
                if cid is not None:
                    values.setdefault(cid, f"chunk on zeroed block {blk}")
        tindex = self.ctx.rel("toast-index")
        if (tdmg.zero or gone_tids) and tindex is not None:
            for blk, got in self.reader.all_pages(tindex):
                if blk == 0 or isinstance(got, str):
                    continue
                for hblk, hoff, key in core.leaf_keys(got):
                    if (hblk in tdmg.zero or (hblk, hoff) in gone_tids) and len(key) >= 4:
                        values.setdefault(int.from_bytes(key[:4], "little"), f"chunk at {tid_text((hblk, hoff))}")
        toast_losses = [Loss(b, lp, CAUSE_KILLED, why) for (b, lp), why in sorted(tdmg.kill.items())]
        toast_losses += [
            Loss(b, lp, CAUSE_CLEARED, why) for b, lps in sorted(tdmg.clear.items()) for lp, why in sorted(lps.items())
        ]
        toast_losses += [
            Loss(b, it.lp, CAUSE_ZEROED, f"on zeroed block {b}")
            for b in sorted(tdmg.zero)
            for it in tdmg.items.get(b, [])
            if it.flags == LP_NORMAL and it.header is not None
        ]
        plan.toast_lost = toast_losses
        return values

    def rows_with_toast(self, rel: Relation, dmg: HeapDamage, values: dict[int, str]) -> dict[Tid, int]:
        """Rows of the table whose TOAST pointers name one of ``values`` (raw pages, never the executor)."""
        out: dict[Tid, int] = {}
        unreadable = 0
        for blk, got in self.reader.all_pages(rel):
            page = got if isinstance(got, bytes) else dmg.images.get(blk)
            if page is None:
                unreadable += 1
                continue
            for it in pages.heap_items(page, blk):
                if it.flags != LP_NORMAL or it.header is None or it.off + it.length > len(page):
                    continue
                ptrs = pages.toast_pointers(page[it.off : it.off + it.length], self.ctx.cols)
                for v in ptrs or []:
                    if v in values:
                        out[(blk, it.lp)] = v
        if unreadable:
            self.notes.append(f"{unreadable} block(s) of {rel.regclass} could not be read for TOAST pointers")
        return out

    # ------------------------------------------------------------------ method

    def choose_method(self, main: HeapDamage, tdmg: HeapDamage | None) -> str:
        req, server = self.ctx.req, self.server
        heaps = [d for d in (main, tdmg) if d is not None]
        pagework = any(d.zero or d.clear or d.restore for d in heaps)
        local = server.pgdata is not None
        can_file = local and (self.ctx.lab is not None or req.force_file_writes)
        if req.method == METHOD_FILE:
            if not local:
                self.blockers.append(
                    (
                        "--method file needs the data directory on this host",
                        "run repair on the database server, or pass --pgdata where it is mounted",
                    )
                )
            elif not can_file and pagework:
                self.blockers.append(
                    (
                        f"{server.pgdata} is not a lab cluster: pgsurgeon does not stop servers it did not create",
                        "--force-file-writes writes the pages once you have stopped the server yourself (repair "
                        "waits for it), or use --method sql (zero_damaged_pages and VACUUM FULL)",
                    )
                )
            return METHOD_FILE
        if req.method == METHOD_SQL or not can_file:
            return METHOD_SQL
        return METHOD_FILE


_CTID = re.compile(r"t_ctid \((\d+),(\d+)\)")
