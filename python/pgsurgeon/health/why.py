"""Why the pages are as they are, asked of the running server and set beside what the files hold:

- statistics that disagree with the pages (autovacuum decides by them: a table whose dead tuples the statistics do
  not count is never vacuumed — the seeds' broken statistics collector);
- what holds back the xmin horizon (open and prepared transactions, replication slots, standbys' feedback), named
  as the cause where the pages hold dead tuples deleted after the holder's snapshot: VACUUM must keep them;
- tables with many dead tuples that autovacuum has not visited;
- rows that were never live (failed inserts) and their index entries;
- tables nearing an anti-wraparound VACUUM.

The connection is the health command's ``-d``: statistics are per database, so the tables judged are those of the
database it names; the holders are the whole cluster's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog_sql
from pgsurgeon.health.figures import pct

if TYPE_CHECKING:
    from datetime import datetime

    from pgsurgeon.health import HealthOutcome, RelationFigures

DEAD_TOLERANCE = 0.5
"""The statistics disagree when they count fewer than this share of the dead tuples the pages hold…"""
DEAD_MIN = 1000
"""…and the difference is at least this many tuples (small tables' counts are approximate)."""
DEAD_PERCENT = 20.0
"""A table whose dead tuples take this share of it, unvisited by autovacuum for a day, is named."""
NEVER_LIVE_MIN = 1000
"""Never-live tuples (failed inserts) worth naming."""
FREEZE_SHARE = 0.5
"""A table whose oldest unfrozen row is older than this share of autovacuum_freeze_max_age is named."""
DAY = 86400


@dataclass
class Cause:
    """One reason the pages look as they do, in words, with the relation it concerns and what to run."""

    kind: str
    """stats, horizon, autovacuum, failed-inserts, freeze"""
    text: str
    relation: str = ""
    command: str = ""


@dataclass
class Holder:
    kind: str
    name: str
    state: str
    xmin: int
    xmin_age: int
    catalogs_only: bool
    seconds: int | None
    detail: str | None

    def words(self) -> str:
        held = f", for {self.seconds} s" if self.seconds is not None else ""
        what = f"{self.kind} {self.name}" + (f" ({self.state})" if self.state else "")
        return f"{what}{held}, xmin {self.xmin} ({self.xmin_age} transactions old)"


def xid_precedes(a: int, b: int) -> bool:
    """``TransactionIdPrecedes`` for normal 32-bit XIDs: circular."""
    return ((a - b) & 0xFFFFFFFF) >= 0x80000000


def causes(outcome: HealthOutcome, dsn: str) -> list[Cause]:
    """Every cause found for the tables of ``dsn``'s database, most pressing first."""
    with db.connect(dsn) as conn:
        settings = _row(conn, "health_settings")
        stats = {(r["schema"], r["name"]): r for r in catalog_sql.table_stats(conn)}
        database = str(conn.info.dbname)
        holders = [Holder(**r) for r in _rows(conn, "health_horizon")]
    tables = [f for f in outcome.relations if "heap" in f.counted and f.database == database and f.relation]
    out: list[Cause] = []
    out += held_back(tables, holders)
    for f in tables:
        assert f.relation is not None
        row = stats.get((f.relation.schema, f.relation.name))
        if row is not None:
            out += _stats_disagree(f, row, settings) + _unvacuumed(f, row, settings)
            out += _freeze(f, row, settings)
        out += _never_live(f, [i for i in outcome.relations if i.owner == f.name and i.database == database])
    return out


def _rows(conn: Any, name: str) -> list[dict[str, Any]]:
    cur = conn.execute(db.load_sql(name))
    cols = [d.name for d in cur.description or []]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _row(conn: Any, name: str) -> dict[str, Any]:
    rows = _rows(conn, name)
    return rows[0] if rows else {}


def held_back(tables: list[RelationFigures], holders: list[Holder]) -> list[Cause]:
    """Each holder whose snapshot is older than the newest delete a table's pages still hold: VACUUM cannot remove
    those dead tuples while the holder lasts (a logical slot's catalog_xmin holds the system catalogs only)."""
    out = []
    for h in holders:
        held = []
        for f in tables:
            assert f.relation is not None
            u = f.counted.get("upkeep")
            if u is None or u["newest_deleter"] is None or f.counted["heap"]["dead_tuple_count"] == 0:
                continue
            if h.catalogs_only and f.relation.schema != "pg_catalog":
                continue
            if not xid_precedes(u["newest_deleter"], h.xmin):  # deleted at or after the holder's xmin
                held.append(f)
        if held:
            names = ", ".join(f"{f.name} ({f.counted['heap']['dead_tuple_count']} dead)" for f in held[:5])
            more = f" and {len(held) - 5} more" if len(held) > 5 else ""
            out.append(Cause("horizon", f"{h.words()} holds back VACUUM: {names}{more}", command=_release(h)))
    return out


def _release(h: Holder) -> str:
    if h.kind == "transaction":
        return f"SELECT pg_terminate_backend({h.name});  -- or end that transaction in its application"
    if h.kind == "prepared transaction":
        return f"COMMIT PREPARED '{h.name}';  -- or ROLLBACK PREPARED, whichever its application intended"
    if h.kind == "replication slot":
        return f"SELECT pg_drop_replication_slot('{h.name}');  -- if nothing will consume it again"
    return "-- the standby's long queries hold it (hot_standby_feedback): end them there"


def _stats_disagree(f: RelationFigures, row: dict[str, Any], settings: dict[str, Any]) -> list[Cause]:
    t = f.counted["heap"]
    u = f.counted.get("upkeep")
    # n_dead_tup also counts what pruning has already made stubs of
    pages_dead = t["dead_tuple_count"] + (u["dead_stubs"] if u else 0)
    said = int(row["n_dead_tup"] or 0)
    if pages_dead - said < DEAD_MIN or said >= DEAD_TOLERANCE * pages_dead:
        return []
    why = "track_counts is off: no statistics are kept" if settings.get("track_counts") is False else ""
    reset: datetime | None = settings.get("stats_reset")
    if not why and reset is not None:
        why = f"the database's statistics were reset at {reset:%Y-%m-%d %H:%M:%S}"
    why = why or "the statistics were lost or reset (a crash, pg_stat_reset_single_table_counters, a restore)"
    text = (
        f"the statistics say {said} dead tuples ({int(row['n_live_tup'] or 0)} live), the pages hold {pages_dead} "
        f"({t['tuple_count']} live): autovacuum, which decides by the statistics, will not vacuum it; {why}"
    )
    return [Cause("stats", text, f.name, f"VACUUM (VERBOSE, ANALYZE) {_sql_name(f)};")]


def _unvacuumed(f: RelationFigures, row: dict[str, Any], settings: dict[str, Any]) -> list[Cause]:
    dead = pct(f.counted["heap"]["dead_tuple_len"], f.size)
    last = row["last_autovacuum"]
    now: datetime | None = settings.get("now")
    if dead < DEAD_PERCENT or (last is not None and now is not None and (now - last).total_seconds() < DAY):
        return []
    when = f"last autovacuum {last:%Y-%m-%d %H:%M}" if last is not None else "never autovacuumed"
    off = []
    if settings.get("autovacuum") is False:
        off.append("autovacuum is off")
    if str(row["autovacuum_enabled"]).lower() in ("false", "off", "0", "no"):
        off.append("autovacuum_enabled = false on the table")
    why = f" ({'; '.join(off)})" if off else ""
    text = f"{dead}% of it is dead tuples, {when}{why}"
    return [Cause("autovacuum", text, f.name, f"VACUUM (VERBOSE) {_sql_name(f)};")]


def _never_live(f: RelationFigures, indexes: list[RelationFigures]) -> list[Cause]:
    u = f.counted.get("upkeep")
    if u is None or u["never_live"] < NEVER_LIVE_MIN:
        return []
    bloated = [(i.name, i.dead_entries) for i in indexes if i.dead_entries]
    entries = "; dead entries: " + ", ".join(f"{n} {d}" for n, d in bloated) if bloated else ""
    text = (
        f"{u['never_live']} dead tuples were never live (inserts that failed or rolled back: each left its row and "
        f"an entry in every index before the failing one{entries}); INSERT … ON CONFLICT DO NOTHING avoids them"
    )
    return [Cause("failed-inserts", text, f.name, f"VACUUM (VERBOSE) {_sql_name(f)};")]


def _freeze(f: RelationFigures, row: dict[str, Any], settings: dict[str, Any]) -> list[Cause]:
    limit = int(settings.get("freeze_max_age") or 200_000_000)
    age = int(row["frozen_age"] or 0)
    if age < FREEZE_SHARE * limit:
        return []
    u = f.counted.get("upkeep")
    oldest = f", its oldest unfrozen row {u['oldest_xmin_age']} transactions old" if u and u["oldest_xmin"] else ""
    text = f"relfrozenxid is {age} transactions old{oldest}: an anti-wraparound VACUUM comes at {limit}"
    return [Cause("freeze", text, f.name, f"VACUUM (FREEZE, VERBOSE) {_sql_name(f)};")]


def _sql_name(f: RelationFigures) -> str:
    return f.relation.regclass if f.relation is not None else f.name
