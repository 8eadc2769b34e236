"""The visibility map online: the file scan's verdict (``vm.all_visible_wrong`` / ``vm.all_frozen_wrong``, the
core's judgement of each marked page's tuples, crates/core/src/checks/maps/vm.rs) compared with pg_visibility's
``pg_check_visible()`` and ``pg_check_frozen()`` where the extension is installed. Both are reported: a block
pg_visibility names that the files did not (a page written since the last checkpoint is read through the server,
not judged against the map there) becomes a finding of its own, and every disagreement is said in a note.
"""

from __future__ import annotations

from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.diagnose import findings as fmod
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import Refused, runner
from pgsurgeon.session import ServerError

SOURCE_PG_VISIBILITY = "pg_visibility"
CHECKS = (("pg_check_visible", "vm.all_visible_wrong"), ("pg_check_frozen", "vm.all_frozen_wrong"))


def _schema(d: Diagnosis) -> str | None:
    try:
        return catalog.extension_schema(runner(d.main), "pg_visibility")
    except Refused:
        return None


def _reported(d: Diagnosis, rel: Checked, code: str) -> dict[int, int]:
    """Blocks of ``rel`` the file scan reported under ``code``, with their tuple counts."""
    out: dict[int, int] = {}
    for f in d.findings:
        if f["relfilenode"] == rel.relation.relfilenode and f["code"] == code and f["block"] is not None:
            msg = str(f["message"])
            n = msg.split(", but ", 1)[-1].split(" of its tuples", 1)[0]
            out[int(f["block"])] = int(n) if n.isdigit() else 1
    return out


def _sound(d: Diagnosis, rel: Checked) -> bool:
    """No page of ``rel`` refused or suspect, and no error found in it: safe to read every tuple through SQL."""
    if rel.refused or rel.suspect:
        return False
    with d.findings_lock:
        return not any(
            f["relfilenode"] == rel.relation.relfilenode
            and f["severity"] == "error"
            and not f["code"].startswith("vm.")
            for f in d.findings
        )


def visibility_phase(d: Diagnosis, heaps: list[Checked]) -> None:
    """pg_check_visible and pg_check_frozen on every table, against the file scan's findings."""
    schema = _schema(d)
    tables = [r for r in heaps if r.relation.relkind in ("r", "m", "t") and r.locked is None]
    if schema is None:
        if tables:
            d.visibility_note = "pg_visibility is not installed: the visibility map was judged from the files only"
        return
    notes: list[str] = []
    agreed = 0
    for rel in tables:
        if not _sound(d, rel):
            # pg_visibility reads every tuple through its line pointer and sets hint bits as it goes: on a damaged
            # page that writes into whatever a garbled pointer names (another row's data, in the server's buffer),
            # or crashes the backend. The files' verdict stands alone there.
            notes.append(f"{rel.relation.regclass}: not asked of pg_visibility, its pages are damaged")
            continue
        for fn, code in CHECKS:
            q = db.sql.SQL(
                "SELECT (t_ctid::text::point)[0]::bigint AS blk, count(*) FROM {}(%(oid)s) GROUP BY 1"
            ).format(db.sql.Identifier(schema, fn))
            rows = d.main.rows(q, {"oid": rel.relation.oid}, again=True)
            if isinstance(rows, ServerError):
                notes.append(f"{fn}({rel.relation.regclass}) failed: {rows.message}")
                continue
            theirs = {int(b): int(n) for b, n in rows}
            ours = _reported(d, rel, code) if d.pgdata is not None else {}
            agreed += _compare(d, rel, fn, code, theirs, ours, notes)
    d.visibility_note = f"pg_visibility: {fn_names()} agree with the files' verdict on {agreed} relation check(s)" + (
        "; " + "; ".join(notes) if notes else ""
    )


def fn_names() -> str:
    return " and ".join(fn for fn, _ in CHECKS)


def _compare(
    d: Diagnosis, rel: Checked, fn: str, code: str, theirs: dict[int, int], ours: dict[int, int], notes: list[str]
) -> int:
    """1 when both name the same blocks with the same tuple counts; otherwise notes (and findings for the blocks
    only pg_visibility names)."""
    name = rel.relation.regclass
    if theirs == ours:
        return 1
    only_theirs = sorted(set(theirs) - set(ours))
    only_ours = sorted(set(ours) - set(theirs))
    counts = sorted(b for b in set(theirs) & set(ours) if theirs[b] != ours[b])
    found: list[dict[str, Any]] = []
    for b in only_theirs:
        found.append(
            fmod.make(
                code,
                rel.relation,
                b,
                None,
                f"{fn} reports {theirs[b]} tuple(s) of this page as not {_what(fn)} while the visibility map marks it",
                source=SOURCE_PG_VISIBILITY,
            )
        )
    d.add(found)
    if only_theirs:
        notes.append(f"{name}: only {fn} names block(s) {_blocks(only_theirs)}")
    if only_ours:
        notes.append(f"{name}: only the files' verdict names block(s) {_blocks(only_ours)} ({fn} does not)")
    if counts:
        notes.append(
            f"{name}: tuple counts differ on block(s) "
            + ", ".join(f"{b} ({fn} {theirs[b]}, files {ours[b]})" for b in counts[:8])
        )
    return 0


def _what(fn: str) -> str:
    return "frozen" if fn == "pg_check_frozen" else "visible to every transaction"


def _blocks(blocks: list[int]) -> str:
    return ", ".join(map(str, blocks[:8])) + (" …" if len(blocks) > 8 else "")
