"""salvage on a table pgbench keeps changing (issue 19): every connection and the carver read one shared snapshot,
so the saved rows are one moment of the table: each account exactly once, none missing, on PostgreSQL 15 and 18.
pgbench itself sees no failed transaction."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import cli
from fix_pg import MakeLab
from pgsurgeon import db
from pgsurgeon.salvage import engine as salvage_engine

SCALE = 2
ROWS = 100_000 * SCALE


@pytest.mark.parametrize("mode", [(), ("--carve-all",)], ids=["sql", "carve-all"])
def test_salvage_under_pgbench_saves_one_snapshot(
    pg_version: str, make_lab: MakeLab, tmp_path: Path, mode: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # regions of 256 blocks instead of 8192: the page checks run region by region beside the SQL, and a row
    # pgbench updated into a later region (or into a block added since salvage began) must not read as damage
    monkeypatch.setattr(salvage_engine, "CLASSIFY_REGION", 256)
    lab = make_lab(pg_version)
    pgbench = str(lab.install.tool("pgbench"))
    env = lab.install.env()
    subprocess.run([pgbench, "-i", "-q", "-s", str(SCALE), "-d", lab.dsn()], env=env, check=True, capture_output=True)
    load = subprocess.Popen(
        [pgbench, "-n", "-c", "4", "-T", "15", "-d", lab.dsn()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for run in range(2):
            # the updates so far written out: the files hold rows whose t_ctid names their new version elsewhere
            time.sleep(2)
            with db.connect(lab.dsn()) as conn:
                conn.execute("CHECKPOINT")
            out = tmp_path / f"out{run}"
            shutil.rmtree(out, ignore_errors=True)
            code, stdout, err = cli(
                "salvage",
                "--dsn",
                lab.dsn(),
                "--table",
                "pgbench_accounts",
                "--out",
                str(out),
                "-j",
                "2",
                "--chunk-blocks",
                "16",
                "--report-format",
                "json",
                *mode,
            )
            assert stdout, err
            report = json.loads(stdout)
            assert code == 0, (report["lost"][:3], report["rows"], report["damaged_blocks"][:3], report["notes"])
            assert report["damaged_blocks"] == [], report["damaged_blocks"][:5]
            lines = Path(report["outputs"]["rows_file"]).read_text().splitlines()
            aids = Counter(int(ln.split("\t", 1)[0]) for ln in lines)
            twice = [a for a, n in aids.items() if n > 1]
            assert twice == [], f"accounts saved twice: {twice[:10]}"
            assert len(aids) == ROWS, (
                f"{ROWS - len(aids)} accounts missing",
                report["damaged_blocks"][:5],
                report["failures"][:5],
                report["notes"],
            )
    finally:
        stdout_text, stderr_text = load.communicate(timeout=60)
    assert load.returncode == 0, stderr_text
    assert "number of failed transactions: 0" in stdout_text, stdout_text


@pytest.fixture(params=["15", "18"], ids=["pg15", "pg18"])
def pg_version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_page_damaged_in_the_file_but_newer_in_the_server_is_read_through_sql(
    make_lab: MakeLab, tmp_path: Path, version: str
) -> None:
    """The server changed a page and has not written it out yet; meanwhile its old image in the file reads damaged
    (its line pointer array overwritten). The server's copy is newer (a later page LSN) and sound, so the block is
    read through SQL, not carved from the stale file: every row is saved once with its current values, nothing is
    reported lost."""
    lab = make_lab(version)
    with db.connect(lab.dsn(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute("CREATE TABLE acc (id integer PRIMARY KEY, v integer, pad text)")
        conn.execute("INSERT INTO acc SELECT g, 0, repeat('p', 60) FROM generate_series(1, 5000) g")
        conn.execute("CHECKPOINT")
        conn.execute("UPDATE acc SET v = 7 WHERE ctid >= '(3,0)' AND ctid < '(3,6)'")
        (path,) = conn.execute("SELECT pg_relation_filepath('acc')").fetchone() or ("",)
        truth = dict(conn.execute("SELECT id, v FROM acc").fetchall())
    with (lab.pgdata / str(path)).open("r+b") as fh:
        fh.seek(3 * 8192 + 24)
        fh.write(bytes([0xA5]) * 40)  # ten line pointers of the file's (older) image
    code, stdout, err = cli(
        "salvage", "--dsn", lab.dsn(), "--table", "acc", "--out", str(tmp_path / "out"), "--report-format", "json"
    )
    report = json.loads(stdout)
    assert code == 0, (err, report["lost"][:3], report["notes"])
    saved = [ln.split("\t") for ln in Path(report["outputs"]["rows_file"]).read_text().splitlines()]
    assert len(saved) == len(truth) and {int(i): int(v) for i, v, _ in saved} == truth
    assert any("newer in the server's buffers" in n for n in report["notes"]), report["notes"]


@pytest.mark.parametrize("version", ["15", "18"])
def test_carve_all_sees_changes_not_yet_written_out(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """--carve-all reads every page from the files; rows updated and inserted after the last checkpoint live only in
    the server's buffers until it writes them. The saved rows are the table as the snapshot sees it, not as the
    files held it at the last checkpoint."""
    lab = make_lab(version)
    with db.connect(lab.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE acc (id integer PRIMARY KEY, v integer)")
        conn.execute("INSERT INTO acc SELECT g, 0 FROM generate_series(1, 3000) g")
        conn.execute("CHECKPOINT")
        conn.execute("UPDATE acc SET v = id WHERE id % 7 = 0")
        conn.execute("DELETE FROM acc WHERE id % 11 = 0")
        conn.execute("INSERT INTO acc SELECT g, -1 FROM generate_series(3001, 3100) g")
        truth = dict(conn.execute("SELECT id, v FROM acc").fetchall())
    code, stdout, err = cli(
        "salvage", "--dsn", lab.dsn(), "--table", "acc", "--out", str(tmp_path / "out"), "--report-format", "json",
        "--carve-all",
    )  # fmt: skip
    report = json.loads(stdout)
    assert code == 0, (err, report["lost"][:3], report["notes"])
    saved = [ln.split("\t") for ln in Path(report["outputs"]["rows_file"]).read_text().splitlines()]
    assert len(saved) == len(truth) and {int(i): int(v) for i, v in saved} == truth


@pytest.mark.parametrize("version", ["15", "18"])
@pytest.mark.parametrize("when", ["after", "before", "before-pageinspect"])
def test_blocks_added_after_the_snapshot_are_not_lost(
    make_lab: MakeLab, tmp_path: Path, version: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table grows after the shared snapshot is taken: after the server sizes the table (before salvage counts
    its files), or before (inside the table's length). The new blocks are all zeroes in the file (the server has not
    written them out), their rows are invisible to the snapshot, and the index already points into them. They are
    growth, not segments past a gap nor zeroed pages: nothing is lost, and exactly the rows the snapshot sees are
    saved."""
    lab = make_lab(version)
    with db.connect(lab.dsn(), autocommit=True) as conn:
        if when == "before-pageinspect":  # the server's copy of a page read raw; else rows as of now say it
            conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute("CREATE TABLE acc (id integer PRIMARY KEY, pad text)")
        conn.execute("INSERT INTO acc SELECT g, repeat('p', 100) FROM generate_series(1, 5000) g")
        conn.execute("CHECKPOINT")
        before = {int(r[0]) for r in conn.execute("SELECT id FROM acc").fetchall()}
    load_table = salvage_engine.catalog.load_table

    def grow(size: int) -> None:
        with db.connect(lab.dsn(), autocommit=True) as other:
            other.execute("INSERT INTO acc SELECT g, repeat('q', 100) FROM generate_series(5001, 6000) g")
            # the index pages written out, the new heap pages not yet (as a busy server leaves them between
            # checkpoints): write all, then put back the zeroes extension left in the heap file
            other.execute("CHECKPOINT")
            (path,) = other.execute("SELECT pg_relation_filepath('acc')").fetchone() or ("",)
        with (lab.pgdata / str(path)).open("r+b") as fh:
            end = fh.seek(0, 2)
            fh.seek(size)
            fh.write(bytes(end - size))

    def sized(conn: Any, oid: int) -> Any:
        info = load_table(conn, oid)
        grow(info.rel.size)
        return info if when == "after" else load_table(conn, oid)  # before: the new blocks inside its length

    monkeypatch.setattr(salvage_engine.catalog, "load_table", sized)
    code, stdout, err = cli(
        "salvage", "--dsn", lab.dsn(), "--table", "acc", "--out", str(tmp_path / "out"), "--report-format", "json"
    )
    report = json.loads(stdout)
    assert code == 0, (err, report["lost"][:3], report["notes"])
    assert report["lost"] == [], report["lost"][:3]
    assert not any("segment file is missing" in n for n in report["notes"]), report["notes"]
    if when != "after":
        assert any("snapshot does not see (added after it was taken)" in n for n in report["notes"]), report["notes"]
    saved = {int(ln.split("\t", 1)[0]) for ln in Path(report["outputs"]["rows_file"]).read_text().splitlines()}
    assert saved == before
