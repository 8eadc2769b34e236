"""GIN indexes checked, simulated, explained and repaired (issue 30, GIN part), on real PostgreSQL 15 and 18.

One table with the four GIN indexes of the acceptance (jsonb_ops, jsonb_path_ops, tsvector, int[]), fastupdate on
so each has a pending list. Each case damages one GIN page type with ``pgsurgeon corrupt gin`` (checksums kept
valid, so the structure is what the server trips over) and checks: ``scan`` exits 2 naming the index, the block and
the finding; ``diagnose`` finds it, with the files and through get_raw_page, with what the server said when the
index was used (on 18 beside gin_index_check, whose every report we report too); the server
then fails a search through the index with the error asserted; ``explain`` explains that error; ``repair`` plans a
REINDEX, and executed leaves scan, diagnose and gin_index_check clean, with every search through the index
returning what a sequential scan returns. PostgreSQL's own gin.sql: tests/test_index_regress.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import cli, sql
from fix_pg import create_test_cluster
from pgsurgeon.diagnose.gincheck import GIN_GENERIC, classify_gin
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

VERSIONS = ("15", "18")

SETUP = (
    "CREATE EXTENSION IF NOT EXISTS amcheck",
    "CREATE EXTENSION IF NOT EXISTS pageinspect",
    "CREATE TABLE docs (id int PRIMARY KEY, doc jsonb, tsv tsvector, tags int[])",
    """INSERT INTO docs SELECT g, jsonb_build_object('n', g, 'tag', 't' || g % 40, 'all', 1),
         to_tsvector('simple', 'word' || g % 300 || ' term' || g % 17 || ' common'),
         ARRAY[g % 50, g % 7, 1000 + g % 3] FROM generate_series(1, 6000) g""",
    "CREATE INDEX docs_doc ON docs USING gin (doc)",
    "CREATE INDEX docs_path ON docs USING gin (doc jsonb_path_ops)",
    "CREATE INDEX docs_tsv ON docs USING gin (tsv) WITH (fastupdate = on)",
    "CREATE INDEX docs_tags ON docs USING gin (tags) WITH (fastupdate = on)",
    "VACUUM ANALYZE docs",
)

# Searches through each index that read all of it (an empty containment or a negated word: GIN's full-index
# mode) or many of its keys one by one (every downlink of the entry tree's root is taken).
QUERIES = {
    "docs_doc": (
        "SELECT count(*) FROM docs WHERE doc @> '{}'",
        "SELECT count(*) FROM docs WHERE doc ? 'late'",
        "SELECT count(*) FROM (SELECT DISTINCT doc -> 'n' AS n FROM docs) k, LATERAL (SELECT 1 FROM docs WHERE "
        "doc @> jsonb_build_object('n', k.n)) x",
        "SELECT count(*) FROM docs WHERE doc ?| ARRAY['n', 'tag', 'all', 'late']",
        "SELECT count(*) FROM generate_series(0, 39) k, LATERAL (SELECT 1 FROM docs WHERE doc @> "
        "jsonb_build_object('tag', 't' || k)) x",
    ),
    "docs_path": (
        "SELECT count(*) FROM docs WHERE doc @> '{}'",
        """SELECT count(*) FROM docs WHERE doc @> '{"all": 1}'""",
        """SELECT count(*) FROM docs WHERE doc @> '{"late": true}'""",
    ),
    "docs_tsv": (
        "SELECT count(*) FROM docs WHERE tsv @@ '!zzz'",
        "SELECT count(*) FROM docs WHERE tsv @@ 'common'",
        "SELECT count(*) FROM docs WHERE tsv @@ 'late3'",
    ),
    "docs_tags": (
        "SELECT count(*) FROM docs WHERE tags @> '{}'",
        "SELECT count(*) FROM docs WHERE tags @> ARRAY[1000]",
        "SELECT count(*) FROM docs WHERE tags @> ARRAY[77]",
    ),
}
_late = count(1)


@dataclass(frozen=True)
class Case:
    index: str
    field: str
    code: str
    """The finding scan reports."""
    metapage: bool
    """The finding is on block 0 (else on the damaged page, not the metapage)."""
    error: str
    """What the server says to one of the index's searches."""
    pattern: str
    """explain's pattern for that message."""


CASES = (
    Case("docs_tags", "entry-leaf", "index.gin_posting_list", False, "number of items mismatch", "gin_item_count"),
    Case("docs_tsv", "posting-list", "index.gin_posting_list", False, "tuple offset out of range", "tid_offset_range"),
    Case("docs_doc", "entry-internal", "index.gin_entry_tuple", False, "could not read block", "short_read"),
    Case("docs_path", "posting-tree", "index.gin_posting_list", False, "tuple offset out of range", "tid_offset_range"),
    Case("docs_tags", "pending-list", "index.gin_pending_list", False, "tuple offset out of range", "tid_offset_range"),
    Case("docs_tsv", "metapage", "index.gin_pending_list", True, "additional pending pages", "gin_pending_list"),
)  # fmt: skip


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[Callable[[str], LabCluster]]:
    made: dict[str, LabCluster] = {}

    def get(version: str) -> LabCluster:
        if version not in made:
            lab = create_test_cluster(lab_base_dir, f"gin{version}", version)
            made[version] = lab
            lab.start()
            sql(lab, *SETUP)
        return made[version]

    yield get
    for lab in made.values():
        lab.destroy()


def add_pending(lab: LabCluster) -> None:
    """Rows inserted after the last VACUUM stay in each index's pending list (fastupdate); then a CHECKPOINT, so
    the files hold what the server holds."""
    first = 100000 * next(_late)
    sql(
        lab,
        "INSERT INTO docs SELECT g, jsonb_build_object('n', g, 'late', true), to_tsvector('simple', 'late' || g % 50),"
        f" ARRAY[g % 5, 77] FROM generate_series({first}, {first + 299}) g",
        "CHECKPOINT",
    )


def run(lab: LabCluster, query: str, index: str | None) -> Any:
    """The query's rows through ``index`` (bitmap scans only; the other GIN indexes dropped inside the
    transaction, which is rolled back, so that the planner cannot take another) or, without one, through a
    sequential scan; a server error's message instead of rows."""
    try:
        with psycopg.connect(lab.dsn(), options="-c statement_timeout=60000") as conn:
            if index is not None:
                for other in QUERIES:
                    if other != index:
                        conn.execute(f"DROP INDEX {other}")
                conn.execute("SET LOCAL enable_seqscan = off")
            else:
                conn.execute("SET LOCAL enable_bitmapscan = off")
                conn.execute("SET LOCAL enable_indexscan = off")
            rows = conn.execute(query).fetchall()
            conn.rollback()
            return rows
    except psycopg.Error as exc:
        return f"ERROR: {str(exc).splitlines()[0]}"


def scan_json(lab: LabCluster) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("scan", "-D", str(lab.pgdata), "-d", lab.dsn(), "--live", "-t", "docs", "--format", "json")
    assert out.startswith("{"), err
    return code, json.loads(out)


def diagnose_json(lab: LabCluster, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("diagnose", "-d", lab.dsn(), "-t", "docs", "--format", "json", *extra)
    assert out.startswith("{"), err
    return code, json.loads(out)


def gin_index_check(lab: LabCluster, index: str) -> str | None:
    """gin_index_check's error on 18 (None when it passes, or before 18 where it does not exist)."""
    if lab.install.major < 18:
        return None
    try:
        sql(lab, f"SELECT gin_index_check('{index}')")
    except psycopg.Error as exc:
        return str(exc).splitlines()[0]
    return None


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.index}-{c.field}")
def test_gin_damage_found_explained_repaired(
    labs: Callable[[str], LabCluster], version: str, case: Case, tmp_path: Path
) -> None:
    lab = labs(version)
    add_pending(lab)
    code, report = scan_json(lab)
    assert (code, report["findings"]) == (Exit.CLEAN, []), report["findings"][:3]

    code, out, err = cli(
        "corrupt", "gin", "--field", case.field, "--dsn", lab.dsn(), "-t", "docs", "--target", "index",
        "--index", case.index, "--seed", "7", "--keep-checksum-valid", "--manifest", str(tmp_path / "m.json"),
    )  # fmt: skip
    assert code == Exit.CLEAN, err + out
    damaged = {c["block"] for c in json.loads((tmp_path / "m.json").read_text())["pages"]}

    # scan: the index, the damaged block, the structure
    code, report = scan_json(lab)
    assert code == Exit.DAMAGE, report
    mine = [f for f in report["findings"] if f["relation"] == f"public.{case.index}"]
    assert [f for f in report["findings"] if f not in mine] == []
    hits = [f for f in mine if f["code"] == case.code]
    assert hits, mine
    want_block = 0 if case.metapage else damaged.pop()
    assert any(f["block"] == want_block for f in hits), (hits, want_block)

    # diagnose: the same, and on 18 every damage gin_index_check reports is reported
    code, diag = diagnose_json(lab)
    assert code == Exit.DAMAGE, diag["findings"]
    found = [f for f in diag["findings"] if f["relation"] == case.index]
    assert any(f["code"] == case.code and f["block"] == want_block for f in found), found
    # what the server said when the index was used, on every finding; docs_doc and docs_path index the same key,
    # and the planner answers @> with docs_path: no query meets docs_doc's damage that way, and diagnose says so
    account = next(r for r in diag["relations"] if r["relation"] == case.index)
    if case.index == "docs_doc":
        assert any("planner answers its key with another index" in n for n in account["notes"]), account
    else:
        assert all(f["observed_error"] for f in found), found
    # the pages through get_raw_page: the same checks, across pages too (links, the pending list's chain)
    code, raw = diagnose_json(lab, "--no-files")
    assert code == Exit.DAMAGE, raw["findings"]
    assert any(
        f["code"] == case.code and f["relation"] == case.index and f["block"] == want_block for f in raw["findings"]
    ), raw["findings"]
    amcheck_error = gin_index_check(lab, case.index)
    if amcheck_error is not None:
        amcheck_code, amcheck_block, _ = classify_gin(amcheck_error)
        assert any(
            (amcheck_code == GIN_GENERIC or f["code"] == amcheck_code)
            and (amcheck_block is None or f["block"] == amcheck_block)
            for f in found
        ), (amcheck_error, found)
    account = next(r for r in diag["relations"] if r["relation"] == case.index)
    if version == "15":
        assert account["amcheck"].startswith("pages only (amcheck has no gin_index_check"), account
    else:
        assert account["amcheck"] == ("corrupt" if amcheck_error else "ok (gin_index_check)"), account

    # the server: a search through the index fails as asserted
    answers = [run(lab, q, case.index) for q in QUERIES[case.index]]
    errors = [a for a in answers if isinstance(a, str)]
    assert any(case.error in e for e in errors), answers

    # explain: that message, by its pattern
    message = next(e for e in errors if case.error in e)
    code, out, _ = cli("explain", message, "--format", "json")
    assert [e["id"] for e in json.loads(out)["explained"]][:1] == [case.pattern], out[:400]

    # repair: REINDEX planned, dry run first; executed, everything is clean and the index answers as the table does
    code, out, err = cli("repair", "-d", lab.dsn(), "-t", "docs")
    assert code == Exit.CLEAN and 'REINDEX TABLE CONCURRENTLY "public"."docs"' in out, err + out
    code, out, err = cli("repair", "-d", lab.dsn(), "-t", "docs", "--execute", "--yes")
    assert code == Exit.CLEAN, err + out
    sql(lab, "CHECKPOINT")
    code, report = scan_json(lab)
    assert (code, report["findings"]) == (Exit.CLEAN, []), report["findings"][:3]
    code, diag = diagnose_json(lab)
    assert (code, diag["findings"]) == (Exit.CLEAN, []), diag["findings"][:3]
    assert gin_index_check(lab, case.index) is None
    for q in QUERIES[case.index]:
        through_index = run(lab, q, case.index)
        assert not isinstance(through_index, str), (q, through_index)
        if "LATERAL" not in q:  # a key at a time by sequential scans would take minutes
            assert through_index == run(lab, q, None), q
