"""``pgsurgeon salvage`` outputs and operation: into a new table (weird identifiers, provenance, idempotent rerun),
resuming an interrupted salvage into files, CSV, and raw pages read through the server (pg_read_binary_file)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import CorruptLabs, cli, wait_ready
from pgsurgeon.exitcodes import Exit
from test_salvage import SETTINGS, make_table, read_output, salvage, sql, truth_of

SCHEMA = "My Schéma"
TABLE = 'Wéird "T" x'
SQL_NAME = '"My Schéma"."Wéird ""T"" x"'
INTO = '"My Schéma"."Sav ""ed"""'


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "salvi")
    yield labs
    labs.close()


def damage(lab, table: str, mode: str, block: int, *extra: str) -> None:  # type: ignore[no-untyped-def]
    (path,) = sql(lab, f"SELECT pg_relation_filepath({psycopg.sql.Literal(table).as_string()}::regclass)")[0]
    code, _, err = cli(
        "corrupt", mode, "--pgdata", str(lab.pgdata), "--file", str(path), "--block", str(block), "--seed", "3", *extra
    )
    assert code == 0, err
    wait_ready(lab)


@pytest.mark.parametrize("version", ["15", "18"])
def test_into_new_table_with_weird_names(labs: CorruptLabs, version: str) -> None:
    lab = labs.get(version)
    sql(lab, f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"')
    sql(
        lab,
        f'CREATE TABLE {SQL_NAME} ("Id" integer PRIMARY KEY, "the value" text, "Ünï" numeric)',
        f"INSERT INTO {SQL_NAME} SELECT g, 'v ' || g || E'\\ttab', g * 1.5 FROM generate_series(1, 3000) g",
        f'DELETE FROM {SQL_NAME} WHERE "Id" % 10 = 0',
        "CHECKPOINT",
    )
    truth = truth_of(lab, SQL_NAME)
    # the checksum kept valid: the rows found in the page body are saved (a failed checksum would keep them apart)
    damage(lab, SQL_NAME, "item-ids", 2, "--keep-checksum-valid")
    code, out, err = cli("salvage", "--dsn", lab.dsn(), "--table", SQL_NAME, "--into", INTO, "--report-format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"]["carved"] > 0 and report["blocks"]["damaged"] == 1
    with psycopg.connect(lab.dsn(), autocommit=True) as conn:
        for s in SETTINGS:
            conn.execute(s)  # type: ignore[arg-type]
        got = {}
        with conn.cursor().copy(f"COPY {INTO} TO STDOUT") as cp:  # type: ignore[arg-type]
            for raw in cp:
                line = bytes(raw).decode().rstrip("\n")
                assert line.split("\t", 1)[0] not in got
                got[line.split("\t", 1)[0]] = line
        assert got == {k: v[2] for k, v in truth.rows.items()}
        carved = conn.execute(
            'SELECT salvage_block, salvage_lp, salvage_via, salvage_certainty, "Id" '
            f'FROM "{SCHEMA}"."Sav ""ed""_carved"'
        ).fetchall()
        # the kept-apart table holds only rows kept apart: the carved rows all went to the new table
        assert carved == []
    # a second run finds the salvage complete and adds nothing
    code, out, err = cli("salvage", "--dsn", lab.dsn(), "--table", SQL_NAME, "--into", INTO)
    assert code == 0, err
    assert "already complete" in out
    (n,) = sql(lab, f"SELECT count(*) FROM {INTO}")[0]
    assert n == len(truth.rows)
    # the source table was never written to
    (n,) = sql(lab, f"SELECT count(*) FROM {SQL_NAME} WHERE ctid >= '(3,0)'")[0]
    assert n == len([1 for b, _, _ in truth.rows.values() if b >= 3])
    # the saved table dropped by hand, its progress table left: a rerun refuses, it does not report a salvage of
    # no rows as complete
    sql(lab, f"DROP TABLE {INTO}")
    code, out, err = cli("salvage", "--dsn", lab.dsn(), "--table", SQL_NAME, "--into", INTO)
    assert code == Exit.USAGE and "cannot be resumed" in err and "is gone" in err, (code, out, err)
    assert "hint: drop" in err


@pytest.mark.pg("18")
def test_resume_after_interruption(labs: CorruptLabs, tmp_path: Path) -> None:
    """A salvage killed halfway (SIGKILL, maybe in the middle of appending a chunk) resumes: the rerun reads only
    the chunks not logged as done, and the output holds every row exactly once."""
    lab = labs.get("18")
    make_table(lab, "resume_t", n=30000)
    truth = truth_of(lab, "resume_t")
    damage(lab, "resume_t", "header", 40, "--field", "random", "--keep-checksum-valid")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pgsurgeon", "salvage", "--dsn", lab.dsn(), "--table", "resume_t", "--out", str(out)]
    proc = subprocess.Popen([*cmd, "--chunk-blocks", "2", "-j", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = out / ".public.resume_t.parts" / "done.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 20:
            break
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    assert not (out / "public.resume_t.copy").exists(), "the first run finished before it could be interrupted"
    logged = len(log.read_text().splitlines())
    assert logged >= 20
    code, stdout, err = cli(
        "salvage",
        "--dsn",
        lab.dsn(),
        "--table",
        "resume_t",
        "--out",
        str(out),
        "--chunk-blocks",
        "8",
        "--report-format",
        "json",
    )
    assert code == 0, err
    second = json.loads(stdout)
    assert 0 < second["rows"]["sql"] < len(truth.rows)
    lines = read_output(out / "public.resume_t.copy")
    ids = [ln.split("\t", 1)[0] for ln in lines]
    assert len(ids) == len(set(ids)) == len(truth.rows)
    assert {ln.split("\t", 1)[0]: ln for ln in lines} == {k: v[2] for k, v in truth.rows.items()}
    # an interrupted salvage of another format is refused rather than mixed in
    proc = subprocess.Popen([*cmd, "--chunk-blocks", "2", "-j", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.exists() and log.read_text().strip()):
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    code, _, err = cli("salvage", "--dsn", lab.dsn(), "--table", "resume_t", "--out", str(out), "--format", "csv")
    assert code == Exit.USAGE and "--restart" in err
    # starting over removes the interrupted run's parts (and the server-written staging directory)
    state = json.loads((out / ".public.resume_t.parts" / "state.json").read_text())
    code, _, err = cli("salvage", "--dsn", lab.dsn(), "--table", "resume_t", "--out", str(out), "--restart")
    assert code == 0, err
    assert not (out / ".public.resume_t.parts").exists()
    assert state["stage"] is None or not Path(state["stage"]).exists()


@pytest.mark.pg("18")
def test_csv_and_remote_pages(labs: CorruptLabs, tmp_path: Path) -> None:
    """CSV output, with raw pages read through pg_read_binary_file instead of the data directory: the same rows."""
    lab = labs.get("18")
    make_table(lab, "csv_t", n=1500)
    damage(lab, "csv_t", "item-ids", 3, "--keep-checksum-valid")
    with psycopg.connect(lab.dsn(), autocommit=True) as conn:
        for s in SETTINGS:
            conn.execute(s)  # type: ignore[arg-type]
        # ground truth from the other copy: the table as it was, rebuilt from a local salvage
    local = salvage(lab, "csv_t", tmp_path / "local")
    remote = salvage(lab, "csv_t", tmp_path / "remote", "--files", "remote")
    assert remote.report["pages_from"] == "remote" and local.report["pages_from"] == "local"
    assert remote.report["rows"] == local.report["rows"]
    assert sorted(remote.lines) == sorted(local.lines)
    shutil.rmtree(tmp_path / "csv", ignore_errors=True)
    code, _, err = cli(
        "salvage",
        "--dsn",
        lab.dsn(),
        "--table",
        "csv_t",
        "--out",
        str(tmp_path / "csv"),
        "--format",
        "csv",
        "--report-format",
        "json",
    )
    assert code == 0, err
    rows = list(csv.reader(io.StringIO((tmp_path / "csv" / "public.csv_t.csv").read_text())))
    header, body = rows[0], rows[1:]
    assert header[0] == "id" and "dropped" not in " ".join(header) and header[-1] == "o"
    assert len(body) == len(local.lines)
    carved = list(csv.reader(io.StringIO((tmp_path / "csv" / "public.csv_t.carved.csv").read_text())))
    assert carved[0][:3] == ["salvage_block", "salvage_lp", "salvage_offset"]
    assert all(r[0] == "3" for r in carved[1:])
    # the same values as the COPY text output (NULL as an empty field, strings as they are)
    by_id = {r[0]: r for r in body}
    for line in local.lines[:50]:
        fields = line.split("\t")
        assert by_id[fields[0]][2] == fields[2]


def _rows(lab: Any, table: str, dbname: str = "postgres") -> dict[str, str]:
    got: dict[str, str] = {}
    with psycopg.connect(lab.dsn(dbname), autocommit=True) as conn:
        for s in SETTINGS:
            conn.execute(s)  # type: ignore[arg-type]
        with conn.cursor().copy(f"COPY {table} TO STDOUT") as cp:  # type: ignore[arg-type]
            for raw in cp:
                line = bytes(raw).decode().rstrip("\n")
                assert line.split("\t", 1)[0] not in got
                got[line.split("\t", 1)[0]] = line
    return got


@pytest.mark.parametrize("version", ["15", "18"])
def test_into_copies_inside_the_server_or_pipes_copy_to_another(labs: CorruptLabs, version: str) -> None:
    """--into the same database: the rows copied inside the server in one transaction (INSERT … SELECT over TID
    ranges, like CREATE TABLE AS). --into-dsn elsewhere: COPY piped into COPY FROM STDIN, every row as it was."""
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS pipe_src",
        "CREATE TABLE pipe_src (id integer PRIMARY KEY, t text, n numeric, ts timestamptz, b bytea)",
        "INSERT INTO pipe_src SELECT g, 'a\tb\nc\\d ' || g || repeat('x', g % 300), g / 7.0, "
        "'2021-03-04 05:06:07+02'::timestamptz + g * interval '1 minute', decode(md5(g::text), 'hex') "
        "FROM generate_series(1, 20000) g",
        "DELETE FROM pipe_src WHERE id % 97 = 0",
        "CHECKPOINT",
    )
    truth = {k: v[2] for k, v in truth_of(lab, "pipe_src").rows.items()}
    for name in ("pipe_same", "pipe_same_carved", "pipe_same_salvage"):
        sql(lab, f"DROP TABLE IF EXISTS {name}")
    args = ("salvage", "--dsn", lab.dsn(), "--table", "pipe_src", "-j", "2", "--report-format", "json")
    code, out, err = cli(*args, "--into", "pipe_same")
    assert code == 0, err
    assert json.loads(out)["rows"]["saved"] == len(truth)
    assert _rows(lab, "pipe_same") == truth
    # one transaction wrote the rows and the record of the ranges done
    assert sql(lab, "SELECT count(DISTINCT xmin::text) FROM pipe_same") == [(1,)]
    assert sql(
        lab, "SELECT count(DISTINCT s.xmin::text), min(first_block), max(end_block) FROM pipe_same_salvage s "
        "WHERE kind = 'sql'"
    ) == [(1, 0, truth_of(lab, "pipe_src").nblocks)]  # fmt: skip
    assert sql(lab, "SELECT xmin::text FROM pipe_same LIMIT 1") == sql(
        lab, "SELECT xmin::text FROM pipe_same_salvage WHERE kind = 'sql' LIMIT 1"
    )

    sql(lab, "DROP DATABASE IF EXISTS pipe_dest", "CREATE DATABASE pipe_dest")
    code, out, err = cli(*args, "--into", "pipe_other", "--into-dsn", lab.dsn("pipe_dest"), "--chunk-blocks", "16")
    assert code == 0, err
    assert json.loads(out)["rows"]["saved"] == len(truth)
    assert _rows(lab, "pipe_other", "pipe_dest") == truth
    ranges = sql(lab, "SELECT count(*) FROM pipe_other_salvage WHERE kind = 'sql'", dbname="pipe_dest")
    assert ranges[0][0] > 1  # range by range, each committed with its rows


@pytest.mark.parametrize("version", ["15", "18"])
def test_out_reads_region_by_region_around_damage(
    labs: CorruptLabs, version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--out checks the pages a region at a time while the SQL sessions read the regions before (regions of 8
    blocks, chunks of 3): damaged blocks at a region's edge and inside one are carved, an all-zero one reported,
    every other row saved exactly once."""
    from pgsurgeon.salvage import engine

    monkeypatch.setattr(engine, "CLASSIFY_REGION", 8)
    lab = labs.get(version)
    sql(
        lab,
        "DROP TABLE IF EXISTS regions_out",
        "CREATE TABLE regions_out (id integer PRIMARY KEY, t text)",
        "INSERT INTO regions_out SELECT g, repeat('o', 60) || g FROM generate_series(1, 6000) g",
        "CHECKPOINT",
    )
    truth = truth_of(lab, "regions_out")
    damage(lab, "regions_out", "item-ids", 15)  # the last block of a region
    damage(lab, "regions_out", "header", 19, "--field", "pd_lower", "--value", "2")
    damage(lab, "regions_out", "zero", 30)
    got = salvage(lab, "regions_out", tmp_path / "out", "-j", "2", "--chunk-blocks", "3")
    ids = [ln.split("\t", 1)[0] for ln in got.lines]
    assert len(ids) == len(set(ids))
    sound = {k for k, v in truth.rows.items() if v[0] not in (15, 19, 30)}
    assert sound <= set(ids) and set(ids) <= set(truth.rows)
    # the zeroed page's rows, in the loss account (possibly gone: no VACUUM has set the visibility map)
    assert {x["block"] for x in got.report["lost"] + got.report["maybe_lost"]} >= {30}
    assert 30 in {p["block"] for p in got.report["pages_lost"]} and not got.report["complete"]
    assert got.report["blocks"]["carved"] >= 2
