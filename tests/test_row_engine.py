"""The row engine (``salvage --carve-all``) on healthy tables built for it, against what SQL returns, on real
PostgreSQL 15 and 18: every row exactly once, none resurrected, values exact.

* a million identical rows inserted by one statement (equal xmin, cmin and data) are a million rows, not one;
* random data from several seeds (NULLs, TOAST-ed and compressed text, updates HOT and not, deletes, an aborted
  update) carves to exactly ``COPY (SELECT * FROM ONLY t)``;
* all-zero pages at the end of a table (relation extension leaves them) are no loss: exit 0;
* a table whose access method is a copy of heap is read like heap.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from fix_corrupt import CorruptLabs, cli, wait_ready
from test_salvage import SETTINGS, sql


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "rows")
    yield labs
    labs.close()


def sql_lines(dsn: str, table: str) -> list[str]:
    out: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in SETTINGS:
            conn.execute(s)  # type: ignore[arg-type]
        with conn.cursor().copy(f"COPY (SELECT * FROM ONLY {table}) TO STDOUT") as cp:  # type: ignore[arg-type]
            out.extend(bytes(raw).decode().rstrip("\n") for raw in cp)
    return out


def carve_all(dsn: str, table: str, out: Path, *extra: str) -> tuple[int, dict[str, object], list[str]]:
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, err = cli(
        "salvage", "--dsn", dsn, "--table", table, "--out", str(out), "--carve-all", "--report-format", "json", *extra
    )
    assert code in (0, 2), err
    report = json.loads(stdout)
    lines = [ln for ln in Path(report["outputs"]["rows_file"]).read_text().split("\n") if ln]
    return code, report, lines


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_million_identical_rows(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS same",
        "CREATE TABLE same (a integer, b text)",
        "INSERT INTO same SELECT 1, 'identical' FROM generate_series(1, 1000000)",
        "INSERT INTO same SELECT 2, NULL FROM generate_series(1, 12000)",
        "CHECKPOINT",
    )
    code, report, lines = carve_all(lab.dsn(), "same", tmp_path / "out", "-j", "2")
    assert code == 0
    assert Counter(lines) == Counter({"1\tidentical": 1_000_000, "2\t\\N": 12_000})
    assert report["rows"]["carved"] == 1_012_000  # type: ignore[index]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("version", ["15", "18"])
def test_random_tables_carve_to_what_sql_returns(labs: CorruptLabs, tmp_path: Path, version: str, seed: int) -> None:
    rng = random.Random(seed)
    lab = labs.get(version)
    name = f"rnd_{seed}"
    n = rng.randint(5_000, 30_000)
    compression = rng.choice(["pglz", "lz4"])
    sql(
        lab,
        f"DROP TABLE IF EXISTS {name}",
        f"CREATE TABLE {name} (id integer PRIMARY KEY, k integer, t text COMPRESSION {compression}, "
        "f float8, n numeric, b bytea, ts timestamptz, j jsonb, arr integer[])",
        f"SELECT setseed({rng.random() * 2 - 1})",
    )
    # NULLs at random, long texts (external and inline-compressed), numbers at their edges
    sql(
        lab,
        f"SELECT setseed({rng.random() * 2 - 1})",
        f"INSERT INTO {name} SELECT g, (random() * 10)::int, "
        "CASE WHEN random() < 0.1 THEN NULL WHEN random() < 0.05 THEN repeat(md5(g::text), 300) "
        "WHEN random() < 0.05 THEN (SELECT string_agg(md5((g * i)::text), '') FROM generate_series(1, 90) i) "
        "ELSE md5(random()::text) END, "
        "CASE WHEN random() < 0.1 THEN NULL ELSE (random() - 0.5) * 1e300 END, "
        "CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 1e12)::numeric, (random() * 8)::int) END, "
        "CASE WHEN random() < 0.2 THEN NULL ELSE decode(md5(g::text), 'hex') END, "
        "'2000-01-01'::timestamptz + random() * interval '100 years', "
        "jsonb_build_object('g', g, 'r', random()), "
        "CASE WHEN random() < 0.3 THEN NULL ELSE ARRAY[g, NULL, (random() * 100)::int] END "
        f"FROM generate_series(1, {n}) g",
    )
    sql(
        lab,
        f"UPDATE {name} SET k = k + 1 WHERE id % {rng.randint(3, 9)} = 0",
        f"UPDATE {name} SET t = 'moved ' || id WHERE id % {rng.randint(10, 30)} = 0",
        f"DELETE FROM {name} WHERE id % {rng.randint(7, 19)} = 0",
    )
    with psycopg.connect(lab.dsn()) as conn:
        conn.execute(f"UPDATE {name} SET k = -1 WHERE id % 5 = 1")  # type: ignore[arg-type]
        conn.rollback()
    sql(lab, "CHECKPOINT")
    want = sql_lines(lab.dsn(), name)
    code, report, got = carve_all(lab.dsn(), name, tmp_path / "out", "-j", str(rng.choice([1, 2])))
    assert code == 0, report
    assert Counter(got) == Counter(want)


@pytest.mark.parametrize("version", ["15", "18"])
def test_zero_pages_from_extension_are_no_loss(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """Pages the table was extended by but never filled are all zeroes; the server reads them as empty. With no
    index entry pointing into them they are no loss."""
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS ext",
        "CREATE TABLE ext (id integer PRIMARY KEY, v text)",
        "INSERT INTO ext SELECT g, 'v' || g FROM generate_series(1, 5000) g",
        "CHECKPOINT",
    )
    ((path,),) = sql(lab, "SELECT pg_relation_filepath('ext')")
    lab.stop()
    try:
        with (lab.pgdata / str(path)).open("ab") as fh:
            fh.write(bytes(8192 * 3))
    finally:
        lab.start()
        wait_ready(lab)
    want = sql_lines(lab.dsn(), "ext")
    for extra in ((), ("--carve-all",)):
        shutil.rmtree(tmp_path / "o", ignore_errors=True)
        code, stdout, err = cli(
            "salvage",
            "--dsn",
            lab.dsn(),
            "--table",
            "ext",
            "--out",
            str(tmp_path / "o"),
            "--report-format",
            "json",
            *extra,
        )
        report = json.loads(stdout)
        assert code == 0, (extra, report["lost"][:3], err)
        assert report["lost_count"] == 0 and report["blocks"]["zero"] == 3
        got = [ln for ln in Path(report["outputs"]["rows_file"]).read_text().split("\n") if ln]
        assert Counter(got) == Counter(want)


@pytest.mark.parametrize("version", ["15", "18"])
def test_heap_copy_access_method(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS via_heap2",
        "DROP ACCESS METHOD IF EXISTS heap2",
        "CREATE ACCESS METHOD heap2 TYPE TABLE HANDLER heap_tableam_handler",
        "CREATE TABLE via_heap2 (id integer, v text) USING heap2",
        "INSERT INTO via_heap2 SELECT g, 'x' || g FROM generate_series(1, 3000) g",
        "CHECKPOINT",
    )
    code, _, got = carve_all(lab.dsn(), "via_heap2", tmp_path / "out")
    assert code == 0
    assert Counter(got) == Counter(sql_lines(lab.dsn(), "via_heap2"))


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_row_whose_line_pointer_was_lost_is_found(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """A line pointer set to unused leaves the row's bytes in the tuple area: the server silently returns one row
    less. salvage carves the tuple out of the page body and saves every row; diagnose names the page and the index
    entry that points at the unused line pointer."""
    lab = labs.get(version)
    sql(
        lab,
        "CREATE EXTENSION IF NOT EXISTS amcheck",
        "CREATE EXTENSION IF NOT EXISTS pageinspect",
        "DROP TABLE IF EXISTS lostlp",
        "CREATE TABLE lostlp (id integer PRIMARY KEY, v text)",
        "INSERT INTO lostlp SELECT g, 'value ' || g FROM generate_series(1, 1500) g",
        "CHECKPOINT",
    )
    want = sql_lines(lab.dsn(), "lostlp")
    code, _, err = cli(
        "corrupt",
        "item-id",
        "--dsn",
        lab.dsn(),
        "--table",
        "lostlp",
        "--block",
        "2",
        "--item",
        "2",
        "--value",
        "0",
        "--keep-checksum-valid",
        "--seed",
        "1",
    )
    assert code == 0, err
    wait_ready(lab)
    assert len(sql_lines(lab.dsn(), "lostlp")) == len(want) - 1  # the server says nothing
    shutil.rmtree(tmp_path / "o", ignore_errors=True)
    code, stdout, err = cli(
        "salvage", "--dsn", lab.dsn(), "--table", "lostlp", "--out", str(tmp_path / "o"), "--report-format", "json"
    )
    assert code == 0, err
    report = json.loads(stdout)
    got = [ln for ln in Path(report["outputs"]["rows_file"]).read_text().split("\n") if ln]
    assert Counter(got) == Counter(want), err
    assert any(b["block"] == 2 and "line_pointer.unreferenced_tuple" in b["codes"] for b in report["damaged_blocks"]), (
        report["damaged_blocks"]
    )
    code, out, err = cli("diagnose", "--dsn", lab.dsn(), "--table", "lostlp", "--format", "json")
    assert out, err
    doc = json.loads(out)
    codes = {(f["code"], f["block"]) for f in doc["findings"]}
    assert code == 2
    assert ("line_pointer.unreferenced_tuple", 2) in codes, codes
    # the primary key's entry for the row now points at an unused line pointer (found on the index's page)
    assert any(f["code"] == "index.tid_unused" and "(2,2)" in f["message"] for f in doc["findings"]), codes


@pytest.mark.parametrize("version", ["15", "18"])
def test_frozen_rows_of_aborted_updates_stay_in_the_file(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """Found by carving PostgreSQL's regression database after VACUUM (FREEZE): freezing clears an aborted updater's
    xmax but leaves t_ctid naming the discarded new version, on the same page (HOT) or in another block. Such rows
    are healthy; they used to be kept apart, and scanned, as torn or misdirected copies."""
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS froz",
        "CREATE TABLE froz (a int, b text) WITH (fillfactor = 100)",
        "INSERT INTO froz SELECT i, repeat('x', 40) || i FROM generate_series(1, 400) i",
        # block 0 is full: these new versions go to other blocks; then the last page's rows are updated in place
        "BEGIN; UPDATE froz SET b = b || '!' WHERE a <= 20; ROLLBACK",
        "BEGIN; UPDATE froz SET b = 'hot' WHERE a >= 395; ROLLBACK",
        "VACUUM (FREEZE) froz",
        "CHECKPOINT",
    )
    moved = sql(lab, "SELECT count(*) FROM froz WHERE ctid < '(1,0)' AND xmax = 0")[0][0]
    assert moved > 0
    code, report, lines = carve_all(lab.dsn(), "froz", tmp_path / "out")
    assert code == 0
    assert Counter(lines) == Counter(sql_lines(lab.dsn(), "froz"))
    assert report["rows"]["carved"] == 400  # type: ignore[index]
    # nor does scan take them for a torn or misdirected write
    ((path,),) = sql(lab, "SELECT pg_relation_filepath('froz')")
    code, out, err = cli("scan", str(lab.pgdata / str(path)), "--live", "--format", "json")
    assert code == 0, out + err
    assert "ctid_not_self" not in out
