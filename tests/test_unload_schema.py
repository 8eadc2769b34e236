"""``pgsurgeon unload`` gives back the database, not only its rows: the schema as the cluster's own pg_dump writes it,
taken from a started throwaway copy of the catalog, with no server on the original (real PostgreSQL 15 and 18;
the source's pg_wal is emptied, so its server refuses to start). Without binaries, the files-built schema stands in
and the unload says what it leaves out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import MakeLab
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.cluster import LabCluster, LabError
from pgsurgeon.unload.run import exclusive

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
