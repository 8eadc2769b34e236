"""`pgsurgeon health` for hash, GIN and GiST indexes (issue 33) against PostgreSQL's own functions, on real PostgreSQL
15 and 18: pgstattuple of every hash and GiST index, pgstathashindex of every hash index and pgstatginindex of every
GIN index equal the figures counted from the files, with the server running (its files read in place) and stopped
(counting only, and in the pass that checks the pages).

The database: hash indexes big enough to split their buckets, one on a column of many duplicates (overflow pages),
rows deleted and the dead entries killed by index scans (LP_DEAD items); GIN indexes with fastupdate on and rows
inserted after they were built (a pending list); GiST indexes on boxes and ranges, and one small enough to be all
root (which pgstattuple never counts)."""

from __future__ import annotations

from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon.commands.health import relation_json
from pgsurgeon.health import HealthRequest, RelationFigures, run_health
from pgsurgeon.lab import LabCluster

SETUP = """
CREATE EXTENSION IF NOT EXISTS pgstattuple;
-- built empty, so that the inserts split their buckets (an index built on rows is sized for them at once)
CREATE TABLE hx (id int, k int, note text);
CREATE INDEX hx_id ON hx USING hash (id);
CREATE INDEX hx_k ON hx USING hash (k);
INSERT INTO hx SELECT g, g % 100, md5(g::text) FROM generate_series(1, 60000) g;
CREATE INDEX hx_note ON hx USING hash (note);
DELETE FROM hx WHERE id % 10 = 0;
CREATE TABLE docs (id int, tsv tsvector, doc jsonb);
INSERT INTO docs SELECT g, to_tsvector('simple', 'word' || g % 300 || ' term' || g % 17 || ' common'),
  jsonb_build_object('n', g, 'tag', 't' || g % 40) FROM generate_series(1, 5000) g;
CREATE INDEX docs_tsv ON docs USING gin (tsv) WITH (fastupdate = on);
CREATE INDEX docs_doc ON docs USING gin (doc jsonb_path_ops) WITH (fastupdate = on);
CREATE INDEX docs_doc_nofast ON docs USING gin (doc) WITH (fastupdate = off);
INSERT INTO docs SELECT g, to_tsvector('simple', 'late' || g % 50 || ' common'),
  jsonb_build_object('n', g, 'late', true) FROM generate_series(5001, 6500) g;
CREATE TABLE shapes (id int, b box, r int4range);
INSERT INTO shapes SELECT g, box(point(g % 300, g / 300), point(g % 300 + 1 + g % 7, g / 300 + 2)),
  int4range(g, g + 1 + g % 90) FROM generate_series(1, 30000) g;
CREATE INDEX shapes_b ON shapes USING gist (b);
CREATE INDEX shapes_r ON shapes USING gist (r);
DELETE FROM shapes WHERE id % 4 = 0;
CREATE TABLE tiny (r int4range);
INSERT INTO tiny SELECT int4range(g, g + 5) FROM generate_series(1, 20) g;
CREATE INDEX tiny_r ON tiny USING gist (r);
"""

# index scans over the deleted rows, once their deletion is committed and visible to all: the scans mark their
# entries LP_DEAD (_hash_kill_items, gistkillitems)
KILL = """
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM generate_series(0, 99) g, LATERAL (SELECT 1 FROM hx WHERE k = g) x;
SELECT count(*) FROM generate_series(0, 60000, 10) g, LATERAL (SELECT 1 FROM hx WHERE id = g) x;
SELECT count(*) FROM generate_series(0, 299) g,
  LATERAL (SELECT 1 FROM shapes WHERE b && box(point(g, 0), point(g, 200))) x;
SELECT count(*) FROM generate_series(0, 30000, 100) g,
  LATERAL (SELECT 1 FROM shapes WHERE r && int4range(g, g + 100)) x;
"""


def build(lab: LabCluster) -> None:
    """SETUP (one implicit transaction), the killing scans in another, then a CHECKPOINT of its own (it flushes
    the commits to pg_xact and the pages to their files)."""
    exec_sql(lab, SETUP)
    exec_sql(lab, KILL)
    exec_sql(lab, "CHECKPOINT")


def row(lab: LabCluster, sql: str, name: str) -> dict[str, Any]:
    with lab.connect("postgres") as conn:
        cur = conn.execute(sql, (name,))
        cols = [d.name for d in cur.description or []]
        return dict(zip(cols, cur.fetchone() or (), strict=True))


def indexes(lab: LabCluster) -> dict[str, str]:
    """Every index of the public schema: qualified name → access method."""
    rows = exec_sql(
        lab,
        "SELECT 'public.' || c.relname, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
        "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'i'",
    )
    return {str(n): str(am) for n, am in rows}


def server_figures(lab: LabCluster, ams: dict[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """(index, function) → the row the server's function returns."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name, am in ams.items():
        if am in ("hash", "gist"):
            out[name, "pgstattuple"] = row(lab, "SELECT * FROM pgstattuple(%s::regclass)", name)
        if am == "hash":
            out[name, "pgstathashindex"] = row(lab, "SELECT * FROM pgstathashindex(%s::regclass)", name)
        if am == "gin":
            out[name, "pgstatginindex"] = row(lab, "SELECT * FROM pgstatginindex(%s::regclass)", name)
    return out


def ours(lab: LabCluster, **kw: Any) -> dict[str, RelationFigures]:
    out = run_health(HealthRequest(pgdata=lab.pgdata, databases=["postgres"], **kw))
    return {f.name: f for f in out.relations}


def disagreements(theirs: dict[tuple[str, str], dict[str, Any]], mine: dict[str, RelationFigures]) -> list[Any]:
    diffs: list[Any] = []
    for (name, fn), their_row in theirs.items():
        f = mine.get(name)
        assert f is not None, f"{name} not counted (counted: {sorted(mine)})"
        got = getattr(f, fn)()
        assert got is not None, (name, fn, f.counted)
        assert set(got) == set(their_row), (name, fn, sorted(got), sorted(their_row))
        # every figure exactly: pgstattuple's percentages as it prints them, pgstathashindex's free_percent as the
        # float8 it computes (the same operations in the same order give the same bits)
        diffs += [(name, fn, k, v, got[k]) for k, v in their_row.items() if float(v) != float(got[k])]
    return diffs


@pytest.mark.parametrize("version", ["15", "18"])
def test_hash_gin_gist_figures_equal_the_servers(version: str, make_lab: MakeLab) -> None:
    lab = make_lab(version)
    build(lab)
    ams = indexes(lab)
    assert sorted(ams.values()) == ["gin", "gin", "gin", "gist", "gist", "gist", "hash", "hash", "hash"]
    theirs = server_figures(lab, ams)
    live = ours(lab, live=True, dsn=lab.dsn("postgres"))
    assert not disagreements(theirs, live)
    lab.stop()
    offline = ours(lab)
    assert not disagreements(theirs, offline)
    # the same counted in the pass that checks every page for damage
    assert not disagreements(theirs, ours(lab, checks=True))

    # what the data was made to show, so the agreement above is not of zeros
    hx_k = theirs["public.hx_k", "pgstathashindex"]
    assert hx_k["overflow_pages"] > 0 and hx_k["dead_items"] > 0
    hx_id = theirs["public.hx_id", "pgstathashindex"]
    # split from its first buckets, with pages of split points allocated ahead and never written (unused)
    assert hx_id["bucket_pages"] > 100 and hx_id["unused_pages"] > 0 and hx_id["dead_items"] > 0
    assert 0 < hx_id["free_percent"] < 100
    assert theirs["public.hx_id", "pgstattuple"]["dead_tuple_count"] == hx_id["dead_items"]
    assert theirs["public.docs_tsv", "pgstatginindex"]["pending_tuples"] == 1500
    assert theirs["public.docs_tsv", "pgstatginindex"]["pending_pages"] > 0
    assert theirs["public.docs_doc_nofast", "pgstatginindex"]["pending_pages"] == 0
    assert theirs["public.shapes_b", "pgstattuple"]["tuple_count"] > 0
    assert theirs["public.shapes_r", "pgstattuple"]["dead_tuple_count"] > 0
    # the root is never counted: a GiST index of one page has no tuples in pgstattuple
    assert theirs["public.tiny_r", "pgstattuple"]["tuple_count"] == 0
    # GIN is refused by pgstattuple, and has no pgstattuple row here either
    assert offline["public.docs_tsv"].pgstattuple() is None
    assert offline["public.docs_tsv"].kind == "gin" and offline["public.hx_id"].kind == "hash"
    # and `pgsurgeon health --format json` carries the rows
    assert relation_json(offline["public.hx_k"])["pgstathashindex"] == offline["public.hx_k"].pgstathashindex()
    assert relation_json(offline["public.shapes_b"])["pgstattuple"] == offline["public.shapes_b"].pgstattuple()
    assert relation_json(offline["public.docs_tsv"])["pgstatginindex"]["pending_tuples"] == 1500
