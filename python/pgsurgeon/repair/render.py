"""A repair plan as people read it: the server, what the diagnosis found, every step with its SQL or page writes
and what it costs, then the rows lost by ctid."""

from __future__ import annotations

from collections import Counter

from pgsurgeon.repair.ledger import CARVED_FILE
from pgsurgeon.repair.model import (
    CAUSE_CLEARED,
    CAUSE_GONE,
    CAUSE_KILLED,
    CAUSE_TOAST,
    CAUSE_ZEROED,
    METHOD_FILE,
    REWRITE_SQL,
    Plan,
    tid_ranges,
)

CAUSES = {
    CAUSE_KILLED: "killed (damaged tuple)",
    CAUSE_ZEROED: "on a zeroed page",
    CAUSE_CLEARED: "line pointer cleared",
    CAUSE_TOAST: "TOAST value destroyed",
    CAUSE_GONE: "already gone before the repair",
}


def plan_lines(plan: Plan, *, executing: bool, run_dir: str | None) -> list[str]:
    s = plan.server
    out = [
        f"repair plan for {plan.table} (oid {plan.oid}) in database {s['database']}: PostgreSQL {s['version']}, "
        f"data checksums {'on' if s['checksums'] else 'off'}",
    ]
    where = s.get("data_directory") or "?"
    if s.get("data_directory_here"):
        lab = plan.options.get("lab")
        out.append(f"data directory {where}: on this host" + (f" (lab cluster {lab})" if lab else ""))
    else:
        out.append(f"data directory {where}: not readable here (file-level steps impossible)")
    d = plan.diagnosis
    out.append(
        f"diagnosis: {d.get('errors', 0)} error(s), {d.get('warnings', 0)} warning(s) in {d.get('relations', 0)} "
        f"relation(s)" + (f"; pages refused by the server: {d.get('pages_refused')}" if d.get("pages_refused") else "")
    )
    if run_dir is not None and plan.steps:
        out.append(f"backups: {run_dir} (saved pages, undo manifest, carved rows, report; --backup-dir to choose)")
    codes = Counter(f"{f['relation']}: {f['code']}" for f in plan.findings)
    for code, n in sorted(codes.items()):
        out.append(f"  {n:5} x {code}")
    if not plan.steps:
        out.append("")
        out.append("nothing to repair: the diagnosis found no damage repair acts on")
    else:
        out.append("")
        head = "steps" if executing else "steps (DRY RUN: nothing is changed; --execute does it)"
        if any(st.writes or st.kind == REWRITE_SQL for st in plan.steps):
            method = "page writes in the files (server stopped)" if plan.method == METHOD_FILE else "SQL only"
            head += f"; page-level damage: {method}"
        out.append(head)
        for st in plan.steps:
            tags = []
            if st.irreversible:
                tags.append("IRREVERSIBLE")
            if st.wal_logged:
                tags.append("WAL-logged")
            if st.server_stopped:
                tags.append("server stopped")
            title = st.title.replace("<run directory>", run_dir or "<run directory>")
            out.append(f"  {st.id:>2}. {title}" + (f"  [{', '.join(tags)}]" if tags else ""))
            for q in st.sql:
                out.append(f"        {q};")
            for w in st.writes[:20]:
                what = (
                    "zero the page"
                    if w.action == "zero"
                    else f"clear line pointers {w.lps}"
                    if w.action == "clear"
                    else f"write the {w.copy.source if w.copy is not None else 'good'} copy"
                )
                out.append(
                    f"        {w.file} block {w.block} (offset {w.offset}): {what}; sha256 now {w.sha256_before or '?'}"
                )
            if len(st.writes) > 20:
                out.append(f"        … {len(st.writes) - 20} more page(s)")
            if st.cost:
                out.append(f"        cost: {st.cost}")
            for note in st.notes:
                out.append(f"        note: {note}")
    led = plan.ledger
    if plan.steps:
        out.append("")
        out.append(f"ledger: {led.summary()}")
        out.append(
            f"  after the repair {plan.table} must hold {led.expected_after} row(s)"
            + (f" and their keys ({', '.join(led.key)})" if led.key else "")
            + "; the last step checks it"
        )
        if led.apart:
            where = sorted({why.rsplit("saved in ", 1)[-1] for why in led.apart.values() if "saved in " in why})
            out.append(f"  kept apart: {len(led.apart)}: {tid_ranges(list(led.apart), 20)} (in {', '.join(where)})")
        if led.lost:
            out.append(f"  lost: {len(led.lost)}: {tid_ranges(list(led.lost), 20)}")
            counted = {p["block"] for p in plan.page_losses}
            out += [f"    block {p['block']}: {p['text']}" for p in plan.page_losses[:20]]
            for tid, why in [x for x in sorted(led.lost.items()) if x[0][0] not in counted][:30]:
                out.append(f"    ({tid[0]},{tid[1]}): {why[:160]}")
    out += copy_lines(plan)
    lost = plan.lost_tids
    if lost:
        out.append("")
        out.append(f"rows removed from their place: {len(lost)} (by ctid, the physical position)")
        by_cause: dict[str, list[tuple[int, int]]] = {}
        for loss in plan.lost:
            by_cause.setdefault(loss.cause, []).append(loss.tid)
        for cause, tids in by_cause.items():
            out.append(f"  {CAUSES.get(cause, cause)}: {len(tids)}: {tid_ranges(tids)}")
        if plan.recoverable:
            verb = "put back into the table" if plan.options.get("reinsert") else f"kept in {CARVED_FILE}"
            out.append(f"  recovered by carving: {len(plan.recoverable)}: {tid_ranges(plan.recoverable)}; {verb}")
        counted = {p["block"] for p in plan.page_losses}
        shown = [loss for loss in plan.lost if loss.cause != CAUSE_ZEROED and loss.block not in counted][:30]
        for loss in shown:
            out.append(f"    ({loss.block},{loss.lp}): {loss.reason[:160]}")
    if plan.kept:
        out.append("")
        out.append(f"tuples repaired in place (rows kept): {len(plan.kept)}")
        for k in plan.kept[:30]:
            out.append(f"  {k['relation']} {k['ctid']}: {k['reason'][:160]}")
    if plan.toast_lost:
        out.append(f"TOAST chunks removed: {len(plan.toast_lost)} ({tid_ranges([x.tid for x in plan.toast_lost], 10)})")
    for v in plan.exclusion_violations:
        if v["count"]:
            out.append("")
            out.append(f"exclusion violations: {v['count']} pair(s) of rows violate {v['constraint']} (by ctid):")
            out += [f"  {a} and {b}" for a, b in v["pairs"][:30]]
            if v["count"] > len(v["pairs"][:30]):
                out.append(f"  … {v['count'] - len(v['pairs'][:30])} more; all of them: {v['query']}")
    for u in plan.unrepaired:
        out.append(f"not repaired: {u}")
    for note in plan.notes:
        out.append(f"note: {note}")
    for message, hint in plan.blockers:
        out.append(f"BLOCKED: {message}")
        out.append(f"  hint: {hint}")
    return out


def copy_lines(plan: Plan) -> list[str]:
    """Each damaged page offered a good copy: its source (or none, and why), the LSNs, and what today's plan would
    have lost."""
    if not plan.copies and not plan.options.get("from_standby"):
        return []
    used = [c for c in plan.copies if c.accepted]
    out = [
        "",
        f"good copies from {plan.options.get('from_standby')}: {len(used)} of {len(plan.copies)} damaged page(s)",
    ]
    for c in plan.copies[:60]:
        j = c.to_json()
        lsns = f"LSN damaged {j['lsn_damaged'] or 'unreadable'}, copy {j['lsn_copy'] or '-'}"
        rows = f"; {c.rows} row(s) on the copy" if c.rows is not None else ""
        fork = "" if c.fork == "main" else f" ({c.fork} fork)"
        out.append(f"  {c.relation}{fork} block {c.block}: source {c.source} ({lsns}{rows})")
        if c.accepted:
            out.append(f"    without it: {c.would_lose}")
            if c.stale:
                out.append(f"    taken with --accept-older though {c.stale}: its rows are listed as possibly stale")
        else:
            out.append(f"    not used: {c.why}; today's plan for it: {c.would_lose}")
            if c.stale and c.row_items:
                ctids = ", ".join(f"({c.block},{lp})" for lp in c.row_items[:20])
                more = f" and {len(c.row_items) - 20} more" if len(c.row_items) > 20 else ""
                out.append(f"    the copy holds {len(c.row_items)} row(s) as of the WAL's end: ctid {ctids}{more}")
    if len(plan.copies) > 60:
        out.append(f"  … {len(plan.copies) - 60} more page(s)")
    return out
