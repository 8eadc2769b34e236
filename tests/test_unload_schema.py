"""``pgsurgeon unload`` gives back the database, not only its rows: the schema as the cluster's own pg_dump writes it,
taken from a started throwaway copy of the catalog, with no server on the original (real PostgreSQL 15 and 18;
the source's pg_wal is emptied, so its server refuses to start). Without binaries, the files-built schema stands in
and the unload says what it leaves out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fix_pg import MakeLab, install_or_skip
from fix_schema import (
    REGRESS_DUMP_DIFFERENCES,
    REGRESS_ERRORS,
    REGRESS_ROW_DIFFERENCES,
    behaviour_failures,
    dump_differences,
    globals_dump,
    load_every_object,
    regress_load,
    rows_of,
    schema_dump,
)
from pgsurgeon.errors import LabError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.cluster import LabCluster
from pgsurgeon.unload.run import exclusive
from test_interrupt import still_running

SMALL = """
CREATE TABLE t (id int PRIMARY KEY, v int CHECK (v >= 0), twice int GENERATED ALWAYS AS (v * 2) STORED);
INSERT INTO t (id, v) SELECT g, g FROM generate_series(1, 50) g;
CREATE FUNCTION bump(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 1';
CREATE VIEW tv AS SELECT id, bump(v) FROM t;
CREATE TABLE audit (id int, at text);
CREATE FUNCTION log_it() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO audit VALUES (NEW.id, TG_OP);
RETURN NEW; END$$;
CREATE TRIGGER t_log AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION log_it();
COMMENT ON TABLE t IS 'the table';
"""


def _unload(pgdata: Path, out: Path, *extra: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "unload", str(pgdata), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _restore(target: LabCluster, out: Path) -> None:
    r = subprocess.run(
        [str(target.install.tool("psql")), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", target.dsn(), "-f",
         str(out / "restore.sql")],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


def _stopped_for_good(lab: LabCluster) -> None:
    """Stop the server and empty pg_wal: it refuses to start (could not locate a valid checkpoint record)."""
    lab.stop()
    for f in (lab.pgdata / "pg_wal").iterdir():
        if f.is_file():
            f.unlink()
    with pytest.raises(LabError):
        lab.start()


@pytest.mark.parametrize("version", ["15", "18"])
def test_small_schema_comes_back_and_nothing_is_left_running(
    make_lab: MakeLab, tmp_path: Path, scratch: Path, version: str
) -> None:
    source = make_lab(version)
    with source.connect() as conn:
        conn.execute(SMALL)
    _stopped_for_good(source)
    r = _unload(source.pgdata, tmp_path / "out", tmpdir=scratch)
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    assert "schema: " in r.stdout and "from pg_dump run on a copy of the catalog" in r.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["schema"]["method"] == "pg_dump"
    objects = report["schema"]["objects"]["postgres"]
    assert objects["FUNCTION"] == 2 and objects["TRIGGER"] == 1 and objects["VIEW"] == 1
    assert objects["COMMENT"] == 1
    assert list(scratch.iterdir()) == []  # the catalog copy is gone, and with it its server's data directory

    target = make_lab(version)
    _restore(target, tmp_path / "out")
    with target.connect() as conn:
        assert conn.execute("SELECT count(*), sum(twice) FROM t").fetchone() == (50, 2550)
        assert conn.execute("SELECT bump FROM tv WHERE id = 7").fetchone() == (8,)
        conn.execute("INSERT INTO t (id, v) VALUES (51, 5)")  # the trigger fires, the generated column computes
        assert conn.execute("SELECT at FROM audit").fetchall() == [("INSERT",)]
        assert conn.execute("SELECT twice FROM t WHERE id = 51").fetchone() == (10,)
        with pytest.raises(Exception, match="violates check constraint"):
            conn.execute("INSERT INTO t (id, v) VALUES (52, -1)")
        assert conn.execute("SELECT obj_description('t'::regclass)").fetchone() == ("the table",)


def test_without_binaries_the_files_schema_stands_in_and_says_what_is_missing(
    make_lab: MakeLab, tmp_path: Path, scratch: Path
) -> None:
    source = make_lab("15")
    with source.connect() as conn:
        conn.execute(SMALL)
    _stopped_for_good(source)
    nowhere = scratch / "no-postgres-here"
    nowhere.mkdir()
    r = _unload(source.pgdata, tmp_path / "out", "--pg-bin", str(nowhere))
    assert r.returncode == Exit.DAMAGE, r.stderr + r.stdout  # incomplete: the schema is not all there
    assert "unload: the schema comes from the files only: no postgresql 15 installation found" in r.stderr
    assert "hint: install postgresql-15" in r.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["complete"] is False
    assert report["schema"]["fell_back"] is True
    missing = report["schema"]["missing"]["postgres"]
    assert missing == {
        "functions and procedures": 2,
        "views": 1,
        "triggers": 1,
        "check constraints": 1,
        "generated columns": 1,
        "comments": 1,
    }
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "postgres: not recreated: 2 functions and procedures, 1 views, 1 triggers" in text
    # the rows still come back, through the files-built schema
    target = make_lab("15")
    _restore(target, tmp_path / "out")
    with target.connect() as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (50,)


def test_a_second_unload_of_the_same_data_directory_is_refused(make_lab: MakeLab, tmp_path: Path) -> None:
    source = make_lab("18", start=False)
    with exclusive(source.pgdata):
        r = _unload(source.pgdata, tmp_path / "out")
    assert r.returncode == Exit.FAILED, r.stderr
    assert f"another pgsurgeon unload of {source.pgdata} is running" in r.stderr
    assert not (tmp_path / "out").exists()


def _corrupt(pgdata: Path, mode: str, relpath: str, block: int) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "corrupt", mode, "-D", str(pgdata), "--file", relpath, "--block",
         str(block), "--seed", "7"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(("version", "mode"), [("15", "zero"), ("18", "item-ids")])
def test_a_damaged_catalog_page_is_kept_from_the_server_and_its_objects_are_named(
    make_lab: MakeLab, tmp_path: Path, version: str, mode: str
) -> None:
    """The pg_proc page of the newest function damaged: the server of the catalog copy never reads it (a garbage
    line pointer array can crash a backend; an all-zero page reads as empty, silently), the schema holds every other
    function, and the lost ones are named: by the name carved from the original's page, or by OID and comment when
    the page holds nothing any more."""
    source = make_lab(version)
    with source.connect() as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        for i in range(80):
            conn.execute(f"CREATE FUNCTION fn_{i:02d}(x int) RETURNS int LANGUAGE sql AS 'SELECT x + {i}'")
        conn.execute("COMMENT ON FUNCTION fn_79(int) IS 'the last one'")
        found = conn.execute(
            "SELECT pg_relation_filepath('pg_proc'), (ctid::text::point)[0]::int FROM pg_proc WHERE proname = 'fn_79'"
        ).fetchone()
        assert found is not None
        path, last = found
        on_it = conn.execute(
            "SELECT oid::int, proname FROM pg_proc WHERE proname LIKE 'fn\\_%%' AND (ctid::text::point)[0] = %s"
            " ORDER BY oid",
            (last,),
        ).fetchall()
    source.stop()
    _corrupt(source.pgdata, mode, path, last)

    r = _unload(source.pgdata, tmp_path / "out")
    assert r.returncode == Exit.DAMAGE, r.stderr + r.stdout
    schema = json.loads((tmp_path / "out" / "report.json").read_text())["schema"]
    assert schema["method"] == "pg_dump"
    damaged = [(p["catalog"], p["kind"], p["block"]) for p in schema["damaged_catalog"]]
    assert ("pg_proc", "table", last) in damaged
    lost = "\n".join(schema["lost_objects"]["postgres"])
    for oid, name in on_it:
        if mode == "zero":  # nothing left to carve: pg_depend still names each by OID
            assert f"a function with OID {oid} (its row is lost" in lost
        else:
            assert f"function {name} (its body: 'SELECT x + {int(name[3:])}')" in lost
    if mode == "zero":
        assert "its comment: 'the last one'" in lost
    assert "lost from the schema: " in r.stdout

    target = make_lab(version)
    _restore(target, tmp_path / "out")
    with target.connect() as conn:
        got = {n for (n,) in conn.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'fn\\_%%'").fetchall()}
    assert got == {f"fn_{i:02d}" for i in range(80)} - {n for _o, n in on_it}


def test_ctrl_c_during_the_schema_step_stops_its_server_and_removes_its_copy(
    make_lab: MakeLab, tmp_path: Path, scratch: Path
) -> None:
    source = make_lab("18")
    with source.connect() as conn:
        for i in range(16):  # one pg_dump each: the copy's server runs for a while
            conn.execute(f"CREATE DATABASE d{i} STRATEGY FILE_COPY")
    source.stop()
    env = {**os.environ, "TMPDIR": str(scratch)}
    # as from a terminal: SIGINT at its default disposition even when this run inherited it ignored (a background
    # job of a non-interactive shell, as a CI script may be); Python then gives no KeyboardInterrupt at all
    at_terminal = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    )
    unload = [sys.executable, "-m", "pgsurgeon", "unload", str(source.pgdata), "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(
        [sys.executable, "-c", at_terminal, *unload],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    pidfile = None
    while pidfile is None and proc.poll() is None and time.monotonic() < deadline:
        pidfile = next(iter(scratch.glob("pgs-unload-*/data/postmaster.pid")), None)
        time.sleep(0.005)
    assert pidfile is not None, "the catalog copy's server was never seen running"
    # Ctrl-C lands while the copy's server runs: unload is held still (its server, in its own session, is not) so
    # that a busy machine cannot let it finish between the look and the signal; the SIGINT is delivered on SIGCONT
    proc.send_signal(signal.SIGSTOP)
    assert pidfile.exists(), "the schema step ended before unload could be held: give the copy more to dump"
    postmaster = int(pidfile.read_text().split()[0])
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGCONT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == Exit.INTERRUPTED, err
    assert still_running([postmaster]) == [], "the copy's server was left running"
    assert list(scratch.iterdir()) == []  # the copy is removed


@pytest.mark.parametrize("version", ["15", "18"])
def test_every_object_kind_and_the_regression_databases_come_back_as_pg_dump_gives_them(
    make_lab: MakeLab, tmp_path: Path, version: str
) -> None:
    """One cluster holding the every-object database twice (tests/data/unload_every_object.sql: every kind pg_dump
    reproduces, several roles, rows in every table) and a database per PostgreSQL regression file (tests/data/regress:
    data we did not design around), unloaded from a server that will not start and restored with ON_ERROR_STOP: the
    same globals, and per database the same pg_dump --schema-only --create and the same rows as the source, but for
    what pg_dump's own round trip does not give back either (fix_schema.REGRESS_*_DIFFERENCES); and it behaves."""
    install_or_skip("15")  # its psql runs the regression scripts
    source = make_lab(version)
    dbnames = ["every", "every_again"]
    for dbname in dbnames:
        load_every_object(source, dbname)
    for name in REGRESS_ERRORS:
        regress_load(source, f"regress_{name}", name)
    every = [*dbnames, *(f"regress_{name}" for name in REGRESS_ERRORS)]
    schemas = {d: schema_dump(source, d) for d in every}
    rows = {d: rows_of(source, d) for d in every}
    roles = globals_dump(source)
    _stopped_for_good(source)

    r = _unload(source.pgdata, tmp_path / "out", "-j", "2")
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    objects = json.loads((tmp_path / "out" / "report.json").read_text())["schema"]["objects"]["every"]
    assert objects["FUNCTION"] >= 10 and objects["TRIGGER"] >= 3 and objects["POLICY"] >= 1

    target = make_lab(version)
    _restore(target, tmp_path / "out")
    assert globals_dump(target) == roles
    for dbname in every:
        name = dbname.removeprefix("regress_")
        assert dump_differences(schemas[dbname], schema_dump(target, dbname)) == REGRESS_DUMP_DIFFERENCES.get(name, [])
        restored = rows_of(target, dbname)
        differ = sorted(k for k in rows[dbname].keys() | restored.keys() if rows[dbname].get(k) != restored.get(k))
        assert differ == REGRESS_ROW_DIFFERENCES.get(name, []), dbname
    assert behaviour_failures(target, "every") == []
    # the kinds the files-built schema got wrong, each as pg_dump writes it (the comparison above holds them too)
    restored = schema_dump(target, "every")
    for line in (
        "CREATE TABLE app.z (\n);",  # zero columns (its three rows are in rows_of)
        "score numeric(3,-6),",  # negative scale
        "ADD CONSTRAINT no_bob CHECK ((name <> 'bob'::text)) NOT VALID;",
        "PARTITION BY RANGE (lower(name));",  # an expression partition key
        "CREATE TYPE app.mytext (",  # a user-defined base type
        "GRANT UPDATE(nick) ON TABLE app.customers TO eo_rls;",  # roles and column grants
    ):
        assert line in restored, line
    assert " INCLUDE (" in restored and " WHERE (" in restored and "text_pattern_ops" in restored  # indexes
