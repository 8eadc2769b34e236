"""`pgsurgeon health -d … --live` says why the pages are as they are (issue 33), on real PostgreSQL 15 and 18:

- statistics that miss dead tuples the pages hold (counted with track_counts off, or reset afterwards) are flagged
  with both numbers, and a table whose statistics are right is not;
- an open transaction, a prepared transaction and an inactive logical replication slot are each named as what holds
  back VACUUM, with the tables whose dead tuples they keep;
- failed inserts are named as never-live rows; tables autovacuum has not visited, with the setting that stops it."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon.cli import main
from pgsurgeon.health import HealthRequest, run_health
from pgsurgeon.health.why import Cause

ROWS = 5000

SETUP = f"""
CREATE TABLE t_counted (id int PRIMARY KEY, pad text);
CREATE TABLE t_untracked (id int PRIMARY KEY, pad text);
CREATE TABLE t_reset (id int PRIMARY KEY, pad text);
CREATE TABLE t_prep (id int PRIMARY KEY, pad text);
CREATE TABLE t_hold (id int PRIMARY KEY, pad text);
CREATE TABLE t_failed (id int PRIMARY KEY, pad text);
INSERT INTO t_counted SELECT g, repeat('x', 50) FROM generate_series(1, {ROWS}) g;
INSERT INTO t_untracked SELECT * FROM t_counted;
INSERT INTO t_reset SELECT * FROM t_counted;
INSERT INTO t_prep SELECT * FROM t_counted;
INSERT INTO t_hold SELECT * FROM t_counted;
INSERT INTO t_failed SELECT g, '' FROM generate_series(1, 100) g;
"""


def by_kind(causes: list[Cause], kind: str) -> list[Cause]:
    return [c for c in causes if c.kind == kind]


@pytest.mark.parametrize("version", ["15", "18"])
def test_causes_are_named(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version, extra_conf={"wal_level": "logical", "max_prepared_transactions": 5, "max_wal_senders": 2})
    exec_sql(lab, SETUP)
    with lab.connect() as conn:
        conn.execute("DELETE FROM t_counted WHERE id % 2 = 0")
        conn.execute("SET track_counts = off")
        conn.execute("DELETE FROM t_untracked WHERE id % 2 = 0")
        conn.execute("RESET track_counts")
        conn.execute("DELETE FROM t_reset WHERE id % 2 = 0")
        conn.execute("SELECT pg_stat_force_next_flush()")
    with lab.connect() as conn:
        conn.execute("SELECT pg_stat_reset_single_table_counters('t_reset'::regclass)")
        # every insert fails on the primary key: each leaves a row that was never live
        conn.execute(
            "DO $$ BEGIN FOR i IN 1..3000 LOOP BEGIN INSERT INTO t_failed VALUES (1 + i % 100, 'dup'); "
            "EXCEPTION WHEN unique_violation THEN NULL; END; END LOOP; END $$"
        )
        conn.execute("SELECT pg_create_logical_replication_slot('idle_slot', 'test_decoding')")
        for i in range(30):  # catalog churn the slot's catalog_xmin keeps
            conn.execute(f"CREATE TABLE churn_{i} (a int, b text); DROP TABLE churn_{i}")
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t_counted VALUES (-1, 'prepared')")
        conn.execute("PREPARE TRANSACTION 'held_2pc'")
        conn.execute("DELETE FROM t_prep WHERE id % 2 = 0")
    holder = lab.connect(autocommit=False)
    try:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM t_hold").fetchone()
        pid = holder.execute("SELECT pg_backend_pid()").fetchone()
        assert pid is not None
        with lab.connect() as conn:
            conn.execute("DELETE FROM t_hold WHERE id % 2 = 0")
            conn.execute("SELECT pg_stat_force_next_flush()")
            conn.execute("CHECKPOINT")
        out = run_health(
            HealthRequest(pgdata=lab.pgdata, dsn=lab.dsn("postgres"), databases=["postgres"], live=True, system=True)
        )
        assert_causes(out.causes, pid[0])
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["health", "--live", "-d", lab.dsn("postgres"), str(lab.pgdata), "--database", "postgres"])
        assert code == 0
        assert "why:" in buf.getvalue() and "COMMIT PREPARED 'held_2pc'" in buf.getvalue()
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["health", "--live", "-d", lab.dsn("postgres"), str(lab.pgdata), "--format", "json", "-t", "t_hold"])
        doc: dict[str, Any] = json.loads(buf.getvalue())
        assert any(c["kind"] == "horizon" and f"transaction {pid[0]}" in c["text"] for c in doc["causes"])
    finally:
        holder.rollback()
        holder.close()
        exec_sql(lab, "ROLLBACK PREPARED 'held_2pc'")
        exec_sql(lab, "SELECT pg_drop_replication_slot('idle_slot')")


def assert_causes(causes: list[Cause], pid: int) -> None:
    stats = {c.relation: c for c in by_kind(causes, "stats")}
    assert "public.t_counted" not in stats, stats["public.t_counted"]
    for name in ("public.t_untracked", "public.t_reset"):
        assert name in stats, [c.text for c in causes]
        assert f"the pages hold {ROWS // 2}" in stats[name].text, stats[name].text
    horizon = [c.text for c in by_kind(causes, "horizon")]
    tx = [t for t in horizon if t.startswith(f"transaction {pid} ")]
    assert tx and "public.t_hold" in tx[0], horizon
    prepared = [t for t in horizon if t.startswith("prepared transaction held_2pc")]
    assert prepared and "public.t_prep" in prepared[0], horizon
    slot = [t for t in horizon if t.startswith("replication slot idle_slot (inactive)")]
    assert slot and "pg_catalog.pg_" in slot[0] and "public." not in slot[0], horizon
    failed = {c.relation: c for c in by_kind(causes, "failed-inserts")}
    assert "3000 dead tuples were never live" in failed["public.t_failed"].text
    unvisited = {c.relation: c.text for c in by_kind(causes, "autovacuum")}
    assert "autovacuum is off" in unvisited["public.t_counted"], unvisited
