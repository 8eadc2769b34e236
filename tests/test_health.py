"""`pgsurgeon health` (issue 33) against PostgreSQL's own statistics functions, on real PostgreSQL 15 and 18: after a
CHECKPOINT on a quiet database, every figure pgstattuple and pgstatindex give for every table and btree index equals
the one counted from the files, with the server running (its files read in place) and stopped; and the same from a
base backup of it. The database: pgbench-like accounts with updates and deletes, the failed-insert article's table
and its five indexes (seed-storage-health.md), UUIDv4 and time-ordered UUID keys, TOAST-heavy rows."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon.cli import main
from pgsurgeon.health import HealthRequest, run_health
from pgsurgeon.lab import LabCluster

SETUP = """
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
INSERT INTO accounts SELECT g, g % 10, 0, '' FROM generate_series(1, 40000) g;
CREATE INDEX accounts_bid ON accounts (bid);
UPDATE accounts SET abalance = abalance + 1 WHERE aid % 7 = 0;
DELETE FROM accounts WHERE aid % 13 = 0;
-- the failed-insert article: unique violations leave dead heap tuples and index entries behind
CREATE TABLE failed (id int PRIMARY KEY, a int, b text, c timestamptz DEFAULT now(), d int);
CREATE INDEX failed_a ON failed (a);
CREATE INDEX failed_b ON failed (b);
CREATE INDEX failed_c ON failed (c);
CREATE UNIQUE INDEX failed_d ON failed (d);
INSERT INTO failed (id, a, b, d) SELECT g, g % 100, md5(g::text), g FROM generate_series(1, 1000) g;
DO $$ BEGIN
  FOR i IN 1..5000 LOOP
    BEGIN
      -- fails on the unique index created last: every index before it keeps an entry for the dead row
      INSERT INTO failed (id, a, b, d) VALUES (100000 + i, i, md5(i::text), 1 + i % 1000);
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
  END LOOP;
END $$;
CREATE TABLE uuid_v4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int);
INSERT INTO uuid_v4 (n) SELECT g FROM generate_series(1, 30000) g;
-- a time-ordered UUID (v7's layout: milliseconds first), made in SQL so that 15 has it too
CREATE TABLE uuid_v7 (id uuid PRIMARY KEY, n int);
INSERT INTO uuid_v7 SELECT (lpad(to_hex(1700000000000 + g), 12, '0') || '7' ||
  substr(md5(g::text), 1, 19))::uuid, g FROM generate_series(1, 30000) g;
CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs SELECT g, (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 200 + g % 50) i)
  FROM generate_series(1, 300) g;
DELETE FROM docs WHERE id % 5 = 0;
"""


def build(lab: LabCluster) -> None:
    """SETUP (one implicit transaction), then a CHECKPOINT of its own: it flushes the commit to pg_xact."""
    exec_sql(lab, SETUP)
    exec_sql(lab, "CHECKPOINT")


HEAP_FIELDS = ("table_len", "tuple_count", "tuple_len", "tuple_percent", "dead_tuple_count", "dead_tuple_len",
               "dead_tuple_percent", "free_space", "free_percent")  # fmt: skip
INDEX_FIELDS = ("version", "tree_level", "index_size", "root_block_no", "internal_pages", "leaf_pages", "empty_pages",
                "deleted_pages", "avg_leaf_density", "leaf_fragmentation")  # fmt: skip


def server_figures(lab: LabCluster) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """pgstattuple of every user table, TOAST table and btree index, and pgstatindex of every btree index."""
    with lab.connect("postgres") as conn:
        rels = conn.execute(
            "SELECT c.oid::regclass::text, n.nspname || '.' || c.relname, c.relkind, a.amname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_am a ON a.oid = c.relam "
            "WHERE (n.nspname = 'public' OR c.oid IN (SELECT reltoastrelid FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace)) AND c.relkind IN ('r', 't', 'i') "
            "AND (c.relkind <> 'i' OR a.amname = 'btree') AND c.relpersistence = 'p'"
        ).fetchall()
        tuples: dict[str, dict[str, Any]] = {}
        index: dict[str, dict[str, Any]] = {}
        for regclass, qualified, relkind, _am in rels:
            cur = conn.execute("SELECT * FROM pgstattuple(%s::regclass)", (regclass,))
            cols = [d.name for d in cur.description or []]
            tuples[qualified] = dict(zip(cols, cur.fetchone() or (), strict=True))
            if relkind == "i":
                cur = conn.execute("SELECT * FROM pgstatindex(%s)", (regclass,))
                cols = [d.name for d in cur.description or []]
                index[qualified] = dict(zip(cols, cur.fetchone() or (), strict=True))
    return tuples, index


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return float(a) == float(b)


def ours(lab: LabCluster, **kw: Any) -> dict[str, Any]:
    out = run_health(HealthRequest(pgdata=lab.pgdata, databases=["postgres"], **kw))
    assert out.relations, "no relation counted"
    return {f.name: f for f in out.relations}


def assert_agree(theirs: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]], mine: dict[str, Any]) -> None:
    tuples, index = theirs
    diffs = []
    for name, row in tuples.items():
        f = mine.get(name)
        assert f is not None, f"{name} not counted (counted: {sorted(mine)[:10]})"
        got = f.pgstattuple()
        diffs += [(name, k, row[k], got[k]) for k in HEAP_FIELDS if not same(row[k], got[k])]
    for name, row in index.items():
        got = mine[name].pgstatindex()
        diffs += [(name, k, row[k], got[k]) for k in INDEX_FIELDS if not same(row[k], got[k])]
    assert not diffs, diffs
    assert len(index) >= 9 and any(n.startswith("pg_toast.") for n in tuples)


@pytest.mark.parametrize("version", ["15", "18"])
def test_every_figure_equals_pgstattuple_and_pgstatindex(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version, extra_conf={"wal_level": "replica", "max_wal_senders": 2})
    build(lab)
    theirs = server_figures(lab)
    # the running server's files, read in place (after the CHECKPOINT nothing is newer than its redo point)
    assert_agree(theirs, ours(lab, live=True, dsn=lab.dsn("postgres")))
    backups = {form: lab.lab_dir / f"backup-{form}" for form in ("plain", "tar")}
    lab.run_tool("pg_basebackup", "-D", str(backups["plain"]), "-c", "fast", "-Fp", timeout=300)
    lab.run_tool("pg_basebackup", "-D", str(backups["tar"]), "-c", "fast", "-Ft", "-z", timeout=300)
    lab.stop()
    offline = ours(lab)
    assert_agree(theirs, offline)
    for backup in backups.values():
        from_backup = run_health(HealthRequest(pgdata=backup, databases=["postgres"]))
        assert {f.name: repr((f.pgstattuple(), f.pgstatindex())) for f in from_backup.relations} == {
            n: repr((f.pgstattuple(), f.pgstatindex())) for n, f in offline.items()
        }, backup
    assert all(f.counted["heap"]["undecided"] == 0 for f in offline.values() if "heap" in f.counted)
    # the failed inserts: 5000 dead heap tuples, and their entries in every index but the unique one they hit
    failed = offline["public.failed"].pgstattuple()
    assert failed is not None and failed["tuple_count"] == 1000 and failed["dead_tuple_count"] == 5000
    assert offline["public.failed"].counted["upkeep"]["never_live"] == 5000  # unique violations: never live
    dead_entries = {n: offline[f"public.failed_{n}"].dead_entries for n in ("pkey", "a", "b", "c", "d")}
    assert dead_entries == {"pkey": 5000, "a": 5000, "b": 5000, "c": 5000, "d": 0}, dead_entries
    accounts = offline["public.accounts"].counted["upkeep"]
    assert accounts["never_live"] == 0 and accounts["newest_deleter"] is not None
    assert offline["public.docs"].toast_share > 90  # the documents live out of line
    assert offline["public.accounts"].index_bytes == sum(
        f.size for f in offline.values() if f.owner == "public.accounts" and f.kind == "btree"
    )


UUID_ROWS = 1_000_000


def test_uuid_keys_at_the_articles_scale(make_lab: MakeLab) -> None:
    """The seed's measure, at its scale (1 M rows each, PostgreSQL 18's uuidv7()): random UUIDs split leaves
    everywhere (leaves ~71 % full, half of them out of order, each pointing into as many heap pages as it has
    entries), time-ordered ones fill them in order (~90 %, the default fillfactor, none out of order, a few heap pages
    per leaf). The server's pgstatindex agrees."""
    lab = make_lab("18")
    exec_sql(
        lab,
        "CREATE EXTENSION pgstattuple; "
        "CREATE TABLE uuid_v4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), ord bigint); "
        "CREATE TABLE uuid_v7 (id uuid PRIMARY KEY DEFAULT uuidv7(), ord bigint); "
        f"INSERT INTO uuid_v4 (ord) SELECT g FROM generate_series(1, {UUID_ROWS}) g; "
        f"INSERT INTO uuid_v7 (ord) SELECT g FROM generate_series(1, {UUID_ROWS}) g",
    )
    exec_sql(lab, "VACUUM ANALYZE uuid_v4")
    exec_sql(lab, "VACUUM ANALYZE uuid_v7")
    exec_sql(lab, "CHECKPOINT")
    server = {n: exec_sql(lab, f"SELECT avg_leaf_density, leaf_fragmentation FROM pgstatindex('{n}')")[0]
              for n in ("uuid_v4_pkey", "uuid_v7_pkey")}  # fmt: skip
    lab.stop()
    mine = ours(lab)
    v4, v7 = mine["public.uuid_v4_pkey"], mine["public.uuid_v7_pkey"]
    i4, i7 = v4.pgstatindex(), v7.pgstatindex()
    assert i4 is not None and i7 is not None
    assert (i4["avg_leaf_density"], i4["leaf_fragmentation"]) == tuple(float(x) for x in server["uuid_v4_pkey"])
    assert (i7["avg_leaf_density"], i7["leaf_fragmentation"]) == tuple(float(x) for x in server["uuid_v7_pkey"])
    assert 68 < float(i4["avg_leaf_density"]) < 74 and 45 < float(i4["leaf_fragmentation"]) < 55
    assert 89 < float(i7["avg_leaf_density"]) < 91 and float(i7["leaf_fragmentation"]) == 0
    assert v7.in_order_leaves() > 99 and v4.in_order_leaves() < 1
    assert v7.heap_order_percent() > 99 and 40 < v4.heap_order_percent() < 60
    assert v7.heap_pages_per_leaf() < 5 and v4.heap_pages_per_leaf() > 100
    assert int(i4["index_size"]) > 1.2 * int(i7["index_size"])  # the article: v4 ~26 % bigger


@pytest.mark.parametrize("version", ["15"])
def test_the_command_text_and_json(version: str, make_lab: MakeLab, tmp_path: Any) -> None:
    lab = make_lab(version)
    build(lab)
    lab.stop()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["health", str(lab.pgdata), "--database", "postgres", "--format", "json"]) == 0
    doc = json.loads(buf.getvalue())
    rel = {r["name"]: r for r in doc["relations"]}
    assert rel["public.accounts"]["pgstattuple"]["dead_tuple_count"] > 0
    assert rel["public.accounts_pkey"]["pgstatindex"]["leaf_pages"] > 0
    assert rel["public.accounts_pkey"]["leaf_items"]
    text = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "health", str(lab.pgdata), "--database", "postgres", "-t", "failed"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "public.failed" in text.stdout and "public.failed_a" in text.stdout
    assert "public.accounts" not in text.stdout
    assert "checksums: data checksums are off; run health --check" in text.stdout


def readiness_of(lab: LabCluster) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["health", str(lab.pgdata), "--check", "--format", "json"])
    out: dict[str, Any] = json.loads(buf.getvalue())["checksums"]
    return out


@pytest.mark.parametrize("version", ["15"])
def test_checksum_readiness(version: str, make_lab: MakeLab) -> None:
    """Checksums off (15's default here): safe to enable while every page is sound; after one page's line pointers
    are garbled, enabling would stamp a valid checksum on it, so: repair first, naming one page."""
    lab = make_lab(version)
    build(lab)
    path = lab.pgdata / exec_sql(lab, "SELECT pg_relation_filepath('accounts')")[0][0]
    lab.stop()
    ready = readiness_of(lab)
    assert (ready["enabled"], ready["verdict"], ready["damaged_pages"]) == (False, "safe", 0), ready
    assert ready["seconds_estimate"] > 0 and "safe to enable" in ready["words"]
    with path.open("r+b") as fh:
        fh.seek(3 * 8192 + 24)
        fh.write(bytes([0xFF]) * 64)  # line pointers 1-16 of block 3 point past the page
    ready = readiness_of(lab)
    assert (ready["verdict"], ready["damaged_pages"]) == ("repair-first", 1), ready
    assert "repair first: 1 damaged page(s)" in ready["words"]


@pytest.mark.parametrize("version", ["18"])
def test_checksums_on_are_said(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    lab.stop()
    assert readiness_of(lab)["verdict"] == "on"
