"""Hash and BRIN indexes on real PostgreSQL 15 and 18: every page type damaged with `pgsurgeon corrupt` (hash
metapage, bucket, overflow and bitmap pages and an item's hash code; BRIN metapage, revmap and regular pages, on
minmax, minmax-multi and inclusion opclasses) is named by scan (exit 2, relation, block, code) and by diagnose, the
server then fails or returns wrong rows as asserted, explain names the mode from the server's message, and repair
(dry run, then executed) leaves scan clean and the index returning what a sequential scan returns.

One cluster per version, one small table and index per damage: they are damaged together, then judged together."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import cli, observe, sql, stopped
from pgsurgeon.lab import LabCluster

N = 3000


@dataclass(frozen=True)
class Case:
    table: str
    create: str
    """The table's column, its rows and its index (the index is named <table>_ix)."""
    where: str
    """A condition every row meets and the index can answer."""
    corrupt: tuple[str, ...]
    code: str
    server: str | None
    """What the server says on a scan through the index (a regex), None: it returns rows (see fewer_rows)."""
    fewer_rows: bool = False
    catalog: bool = False
    """Found only with the catalog (an index's heap TIDs against its table): scan --live --dsn, diagnose."""


def _hash(col: str, values: str) -> str:
    return f"CREATE TABLE {{t}} ({col}); INSERT INTO {{t}} SELECT {values} FROM generate_series(1, {N}) i; "


_BRIN = "CREATE TABLE {{t}} ({col}); INSERT INTO {{t}} SELECT {values} FROM generate_series(1, {n}) i; "
CASES = (
    Case(
        "h_meta",
        _hash("v int", "i % 40") + "CREATE INDEX {t}_ix ON {t} USING hash (v)",
        "v >= 0",
        ("hash", "--field", "metapage"),
        "index.hash_metapage",
        r'index "h_meta_ix" is not a hash index',
    ),
    Case(
        "h_bucket",
        _hash("s text", "'val' || (i % 40)") + "CREATE INDEX {t}_ix ON {t} USING hash (s)",
        "s <> ''",
        ("hash", "--field", "bucket"),
        "index.hash_page_type",
        r'index "h_bucket_ix" contains corrupted page at block \d+',
    ),
    Case(
        "h_ovfl",
        _hash("v int", "i % 5") + "CREATE INDEX {t}_ix ON {t} USING hash (v)",
        "v >= 0",
        ("hash", "--field", "overflow", "--value", "0"),
        "index.hash_chain",
        r'index "h_ovfl_ix" contains corrupted page at block 0',
    ),
    Case(
        "h_bitmap",
        _hash("v int", "i % 5") + "CREATE INDEX {t}_ix ON {t} USING hash (v)",
        "v >= 0",
        ("hash", "--field", "bitmap"),
        "index.hash_bitmap",
        None,
    ),
    Case(
        "h_code",
        _hash("s text", "'val' || (i % 40)") + "CREATE INDEX {t}_ix ON {t} USING hash (s)",
        "s <> ''",
        ("hash", "--field", "hash_code"),
        "index.hash_code",
        None,
        fewer_rows=True,
    ),
    Case(
        "h_tid",
        _hash("v int", "i % 40") + "CREATE INDEX {t}_ix ON {t} USING hash (v)",
        "v >= 0",
        ("hash", "--field", "heap_tid", "--value", "100000,1"),
        "index.tid_beyond_heap",
        r"could not read blocks? 100000",
        catalog=True,
    ),
    Case(
        "b_minmax",
        _BRIN.format(col="id int", values="i", n=N * 3)
        + "CREATE INDEX {t}_ix ON {t} USING brin (id) WITH (pages_per_range = 2)",
        "id >= 0",
        ("brin", "--field", "metapage", "--value", "3"),
        "index.brin_metapage",
        "corrupted BRIN index: inconsistent range map",
    ),
    Case(
        "b_multi",
        _BRIN.format(col="x int8", values="i", n=N * 3)
        + "CREATE INDEX {t}_ix ON {t} USING brin (x int8_minmax_multi_ops) WITH (pages_per_range = 2)",
        "x >= 0",
        ("brin", "--field", "revmap"),
        "index.brin_revmap",
        "corrupted BRIN index: inconsistent range map",
    ),
    Case(
        "b_box",
        _BRIN.format(col="b box", values="box(point(i, i), point(i + 1, i + 1))", n=N * 2)
        + "CREATE INDEX {t}_ix ON {t} USING brin (b box_inclusion_ops) WITH (pages_per_range = 2)",
        "b && box '((-1,-1),(100000,100000))'",
        ("brin", "--field", "regular"),
        "index.brin_revmap",
        "corrupted BRIN index: inconsistent range map",
    ),
    Case(
        "b_inet",
        _BRIN.format(col="n inet", values="('10.' || (i / 250) || '.' || (i % 250) || '.1')::inet", n=N * 3)
        + "CREATE INDEX {t}_ix ON {t} USING brin (n inet_inclusion_ops) WITH (pages_per_range = 2)",
        "n <<= '10.0.0.0/8'",
        ("brin", "--field", "revmap"),
        "index.brin_revmap",
        "corrupted BRIN index: inconsistent range map",
    ),
)


def _through_index(c: Case) -> list[str]:
    """The count and a digest of the matching ctids, read through the index only."""
    off = "SET enable_bitmapscan = off" if c.table.startswith("h_") else "SET enable_indexscan = off"
    return [
        "SET enable_seqscan = off",
        off,
        f"SELECT count(*), md5(string_agg(ctid::text, ',' ORDER BY ctid)) FROM {c.table} WHERE {c.where}",
    ]


def _sequential(c: Case) -> list[str]:
    return [
        "SET enable_indexscan = off",
        "SET enable_bitmapscan = off",
        f"SELECT count(*), md5(string_agg(ctid::text, ',' ORDER BY ctid)) FROM {c.table} WHERE {c.where}",
    ]


def _hash_lookups(c: Case) -> list[str]:
    """Every distinct key looked up through a hash index (a hash index answers equality only)."""
    col = "v" if "v int" in c.create else "s"
    return [
        "SET enable_seqscan = off",
        "SET enable_bitmapscan = off",
        f"SELECT sum(n) FROM (SELECT DISTINCT {col} AS k FROM {c.table}) d, "
        f"LATERAL (SELECT count(*) AS n FROM {c.table} WHERE {col} = d.k) x",
    ]


def _probe(c: Case) -> list[str]:
    return _hash_lookups(c) if c.table.startswith("h_") else _through_index(c)


def _scan(lab: LabCluster, *extra: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = cli("scan", str(lab.pgdata), "--format", "json", *extra)
    assert code in (0, 2), err
    return code, json.loads(out)["findings"]


@pytest.fixture(scope="module", params=["15", "18"])
def damaged(request: pytest.FixtureRequest, lab_base_dir: Path) -> LabCluster:
    from fix_pg import create_test_cluster

    lab = create_test_cluster(lab_base_dir, f"hashbrin{request.param}", request.param)
    lab.start()
    request.addfinalizer(lab.destroy)
    for c in CASES:
        sql(lab, *c.create.format(t=c.table).split("; "))
    sql(lab, "CREATE EXTENSION IF NOT EXISTS amcheck", "CREATE EXTENSION IF NOT EXISTS pageinspect", "CHECKPOINT")
    files = {c.table: sql(lab, f"SELECT pg_relation_filepath('{c.table}_ix')")[0][0] for c in CASES}
    with stopped(lab):
        code, found = _scan(lab)
        assert code == 0 and found == [], found  # healthy first: no false positive on any of them
        for c in CASES:
            code, out, err = cli(
                "corrupt", *c.corrupt, "--pgdata", str(lab.pgdata), "--file", files[c.table], "--seed", "1",
                "--keep-checksum-valid",
            )  # fmt: skip
            assert code == 0, out + err
    return lab


@pytest.mark.parametrize("c", CASES, ids=[c.table for c in CASES])
def test_scan_names_relation_block_and_structure(damaged: LabCluster, c: Case) -> None:
    if c.catalog:
        sql(damaged, "CHECKPOINT")
        code, found = _scan(damaged, "--live", "--dsn", damaged.dsn())
    else:
        with stopped(damaged):
            code, found = _scan(damaged)
    assert code == 2
    mine = [f for f in found if f["relation"] == f"public.{c.table}_ix"]
    assert c.code in {f["code"] for f in mine}, mine
    assert all(f["block"] is not None for f in mine)
    # nothing else of the cluster is blamed
    others = {str(f["relation"]) for f in found} - {f"public.{x.table}_ix" for x in CASES}
    assert not others, others


@pytest.mark.parametrize("c", CASES, ids=[c.table for c in CASES])
def test_the_server_fails_or_returns_wrong_rows_and_explain_names_the_mode(damaged: LabCluster, c: Case) -> None:
    got = observe(damaged, _probe(c))
    if c.server is None:
        assert got.kind == "rows", got
        total = sql(damaged, f"SELECT count(*) FROM {c.table}")[0][0]
        assert (got.rows[0][0] < total) if c.fewer_rows else (got.rows[0][0] == total), (got, total)
        return
    assert got.kind == "error" and re.search(c.server, got.message), got
    code, out, _ = cli("explain", "--format", "json", got.message)
    assert code == 0
    modes = {m["mode"] for e in json.loads(out)["explained"] for m in e["modes"]}
    assert c.corrupt[0] in modes, out
    if f'"{c.table}_ix"' in got.message:  # hash's messages name the index, BRIN's and a short read's do not
        assert f"{c.table}_ix" in json.dumps([e["next"] for e in json.loads(out)["explained"]])


def test_diagnose_finds_every_damage(damaged: LabCluster) -> None:
    code, out, err = cli("diagnose", "-d", damaged.dsn(), "--format", "json")
    assert code == 2, err
    findings = json.loads(out)["findings"]
    found = {(f["relation"], f["code"]) for f in findings}
    for c in CASES:
        assert (f"{c.table}_ix", c.code) in found, (c.table, sorted(found))
    # what the server said when the index was used, on every finding of an index
    assert all(f["observed_error"] for f in findings if str(f["relation"]).endswith("_ix")), findings
    # through the server only (get_raw_page): the same checks, across pages too (chains, bitmaps, the range map)
    code, out, err = cli("diagnose", "-d", damaged.dsn(), "--no-files", "--format", "json")
    assert code == 2, err
    found = {(f["relation"], f["code"]) for f in json.loads(out)["findings"]}
    for c in CASES:
        assert (f"{c.table}_ix", c.code) in found, (c.table, sorted(found))


def test_repair_rebuilds_and_the_index_agrees_with_a_sequential_scan(damaged: LabCluster) -> None:
    for c in CASES:
        code, out, err = cli("repair", "-d", damaged.dsn(), "-t", c.table)
        assert code == 0 and "REINDEX TABLE CONCURRENTLY" in out, out + err
        code, out, err = cli("repair", "-d", damaged.dsn(), "-t", c.table, "--execute", "-y", "--skip-salvage")
        assert code == 0 and f"{c.table} is clean" in out, out + err
        by_index = observe(damaged, _through_index(c))
        assert by_index.kind == "rows" and by_index.rows == observe(damaged, _sequential(c)).rows, by_index
        assert observe(damaged, _probe(c)).kind == "rows"
    sql(damaged, "CHECKPOINT")
    with stopped(damaged):
        code, found = _scan(damaged)
    assert code == 0 and found == [], found


FIELDS = {
    "h_ovfl": [("hash", f) for f in ("metapage", "bucket", "overflow", "bitmap", "hash_code")],
    "b_multi": [("brin", f) for f in ("metapage", "revmap", "regular")],
}


@pytest.mark.parametrize("version", ["15", "18"])
def test_each_field_is_seeded_recorded_and_undone_byte_for_byte(
    version: str, lab_base_dir: Path, tmp_path: Path
) -> None:
    import hashlib

    from fix_pg import create_test_cluster

    lab = create_test_cluster(lab_base_dir, f"hbseed{version}", version)
    lab.start()
    try:
        cases = {c.table: c for c in CASES}
        for table in FIELDS:
            sql(lab, *cases[table].create.format(t=table).split("; "))
        sql(lab, "CHECKPOINT")
        files = {t: lab.pgdata / sql(lab, f"SELECT pg_relation_filepath('{t}_ix')")[0][0] for t in FIELDS}
        lab.stop()

        def digest(t: str) -> str:
            return hashlib.sha256(files[t].read_bytes()).hexdigest()

        for table, fields in FIELDS.items():
            before = digest(table)
            for mode, field in fields:
                damaged = []
                for run in range(2):
                    manifest = tmp_path / f"{table}-{field}-{run}.json"
                    code, out, err = cli(
                        "corrupt", mode, "--field", field, "--pgdata", str(lab.pgdata), "--file",
                        str(files[table].relative_to(lab.pgdata)), "--seed", "7", "--manifest", str(manifest),
                    )  # fmt: skip
                    assert code == 0, out + err
                    damaged.append(digest(table))
                    assert damaged[-1] != before
                    code, _, err = cli("undo", str(manifest))
                    assert code == 0, err
                    assert digest(table) == before, (field, "not undone byte for byte")
                assert damaged[0] == damaged[1], (field, "the same seed gave other bytes")
    finally:
        lab.destroy()


def test_diagnose_under_pgbench_load_finds_nothing_in_its_index_kinds(make_lab: Any) -> None:
    """A busy healthy database with a hash index, a GIN index (fastupdate: its pending list fills and is cleaned)
    and a GiST index whose keys every pgbench update changes (bucket splits, overflow pages, page splits), and BRIN
    indexes summarized while rows arrive: diagnose reads them as they change, over and over, from the files and
    through get_raw_page (--no-files) in turn, and reports nothing at all; no pgbench transaction fails."""
    lab = make_lab("18")
    dbname = "postgres"
    lab.run_tool("pgbench", "-i", "-q", "-s", "1", dbname, timeout=120)
    sql(
        lab,
        "CREATE EXTENSION amcheck",
        "CREATE EXTENSION pageinspect",
        "CREATE INDEX acc_balance_hash ON pgbench_accounts USING hash (abalance)",
        "CREATE INDEX hist_mtime_brin ON pgbench_history USING brin (mtime) WITH (pages_per_range = 1)",
        "CREATE INDEX acc_aid_brin ON pgbench_accounts USING brin (aid int4_minmax_multi_ops) "
        "WITH (pages_per_range = 2)",
        "CREATE INDEX acc_gin ON pgbench_accounts USING gin ((ARRAY[bid, abalance]))",
        "CREATE INDEX acc_gist ON pgbench_accounts USING gist (int4range(abalance, abalance, '[]'))",
        "CREATE INDEX hist_gist ON pgbench_history USING gist (box(point(aid, delta), point(aid, delta)))",
    )
    stop = threading.Event()
    rounds: list[Any] = []

    def bench() -> None:
        while not stop.is_set():
            rounds.append(lab.run_tool("pgbench", "-c", "3", "-T", "3", dbname, check=False, timeout=120))

    def summarize() -> None:
        while not stop.is_set():
            sql(lab, "SELECT brin_summarize_new_values('hist_mtime_brin')")
            time.sleep(0.2)

    workers = [threading.Thread(target=bench), threading.Thread(target=summarize)]
    for w in workers:
        w.start()
    runs = 0
    started = time.monotonic()
    try:
        time.sleep(1.0)
        while runs < 4 or time.monotonic() - started < 8:
            files = () if runs % 2 == 0 else ("--no-files",)
            code, out, err = cli("diagnose", "-d", lab.dsn(), "-j", "2", *files, "--format", "json")
            runs += 1
            found = json.loads(out)["findings"] if out else []
            assert code == 0 and found == [], (err, [(f["code"], f["relation"], f["message"]) for f in found[:5]])
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert runs >= 4 and rounds
    for proc in rounds:
        m = re.search(r"number of failed transactions: (\d+)", proc.stdout)
        assert proc.returncode == 0 and m is not None and m.group(1) == "0", proc.stdout + proc.stderr
