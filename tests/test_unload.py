"""``pgsurgeon unload``: a stopped cluster's tables to files and back into a fresh cluster, with no server reading
the source: the catalog from the data files (relation maps, pg_attribute describing itself), rows through the row
engine. Real PostgreSQL 15 and 18; the source cluster is stopped before unloading."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.cluster import LabCluster, LabError

DATA = Path(__file__).parent / "data"


def _build(lab: LabCluster) -> None:
    with lab.connect() as conn:
        conn.execute("CREATE DATABASE shop")
        conn.execute("CREATE DATABASE hr")
    with lab.connect("shop") as conn:
        conn.execute((DATA / "unload_cluster.sql").read_text())
    with lab.connect("hr") as conn:
        conn.execute((DATA / "unload_hr.sql").read_text())


def _tables(lab: LabCluster, dbname: str) -> list[str]:
    with lab.connect(dbname) as conn:
        rows = conn.execute(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        ).fetchall()
    return [r[0] for r in rows]


def _snapshot(lab: LabCluster, dbnames: list[str]) -> dict[str, list[str]]:
    """Every user table's rows as sorted COPY text lines (and its column list), per database."""
    out: dict[str, list[str]] = {}
    for d in dbnames:
        with lab.connect(d) as conn:
            for t in _tables(lab, d):
                cols = conn.execute(
                    "SELECT string_agg(quote_ident(attname), ',' ORDER BY attnum) FROM pg_attribute"
                    " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
                    (t,),
                ).fetchone()
                lines: list[str] = []
                with conn.cursor().copy(f"COPY {t} TO STDOUT") as cp:
                    for chunk in cp:
                        lines.extend(bytes(chunk).decode().splitlines())
                out[f"{d}:{t}"] = [str(cols[0] if cols else ""), *sorted(lines)]
    return out


def _unload(pgdata: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PGSURGEON_PROGRESS_INTERVAL": "0"}
    return subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "unload", str(pgdata), "--out", str(out), "-j", "2", *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _restore(make_lab: MakeLab, version: str, out: Path) -> LabCluster:
    target = make_lab(version)
    psql = target.install.tool("psql")
    r = subprocess.run(
        [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", target.dsn(), "-f", str(out / "restore.sql")],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert r.returncode == 0, r.stderr
    return target


def _indexes(lab: LabCluster) -> list[str]:
    """Index and constraint definitions of database shop."""
    with lab.connect("shop") as conn:
        rows = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            " UNION ALL SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE contype IN ('p', 'u', 'f') AND connamespace <> 'pg_catalog'::regnamespace ORDER BY 1"
        ).fetchall()
    return [r[0] for r in rows]


def _roundtrip(
    make_lab: MakeLab, version: str, source: LabCluster, expected: dict[str, Any], out: Path, indexes: list[str]
) -> None:
    r = _unload(source.pgdata, out, "-P")
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    assert r.stderr.splitlines()[-1] == "unload: done" and "MB/s" in r.stderr  # -P without a terminal: lines
    report = json.loads((out / "report.json").read_text())
    assert report["complete"] is True
    assert report["kept_apart"] == 0
    target = _restore(make_lab, version, out)
    got = _snapshot(target, ["shop", "hr"])
    assert got.keys() == expected.keys()
    for key, rows in expected.items():
        assert got[key] == rows, key
    # keys, indexes and foreign keys as they were (foreign keys come back NOT VALID until validated)
    assert [x.replace(" NOT VALID", "") for x in _indexes(target)] == indexes
    with target.connect("shop") as conn:
        # partitions and inheritance came back as such, with the sequence where it was
        assert conn.execute("SELECT count(*) FROM sales.events").fetchone() == (1000,)
        assert conn.execute("SELECT count(*) FROM vehicles").fetchone() == (3,)
        nextval = conn.execute("SELECT nextval('sales.orders_id_seq')").fetchone()
        assert nextval == (3101,)
        assert conn.execute("INSERT INTO sales.orders (customer) VALUES ('new') RETURNING mood, added").fetchone() == (
            "ok",
            42,
        )


@pytest.mark.parametrize("version", ["15", "18"])
def test_unload_round_trip(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    source = make_lab(version)
    _build(source)
    expected = _snapshot(source, ["shop", "hr"])
    assert len(expected) == 13
    indexes = _indexes(source)
    source.stop()
    _roundtrip(make_lab, version, source, expected, tmp_path / "out", indexes)

    # The catalogs rewritten (new file numbers in the relation maps): the same result.
    source.start()
    with source.connect("shop") as conn:
        conn.execute("VACUUM FULL pg_class, pg_attribute, pg_type")
    source.stop()
    _roundtrip(make_lab, version, source, expected, tmp_path / "out-vacuumed", indexes)

    # A server that will not start: pg_wal emptied, then pg_control's CRC damaged (overrides given).
    wal = source.pgdata / "pg_wal"
    for f in wal.iterdir():
        if f.is_file():
            f.unlink()
    with pytest.raises(LabError):
        source.start()
    control = source.pgdata / "global" / "pg_control"
    raw = bytearray(control.read_bytes())
    raw[300] ^= 0xFF
    control.write_bytes(bytes(raw))
    r = _unload(source.pgdata, tmp_path / "out-broken", "--pg-version", version, "--block-size", "8192")
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    target = _restore(make_lab, version, tmp_path / "out-broken")
    assert _snapshot(target, ["shop", "hr"]) == expected


def test_unload_refuses_a_running_server_and_a_used_directory(make_lab: MakeLab, tmp_path: Path) -> None:
    lab = make_lab("15")
    r = _unload(lab.pgdata, tmp_path / "out")
    assert r.returncode == Exit.FAILED
    assert "server is running" in r.stderr and "hint:" in r.stderr
    assert not (tmp_path / "out").exists()
    lab.stop()
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("keep")
    r = _unload(lab.pgdata, tmp_path / "used")
    assert r.returncode == Exit.FAILED and "not empty" in r.stderr
    assert (tmp_path / "used" / "x").read_text() == "keep"
    shutil.rmtree(tmp_path / "used")


def _rows(path: Path, skip: int = 0) -> list[str]:
    """Lines of a COPY text file, without their first ``skip`` columns, sorted."""
    lines = path.read_text().splitlines() if path.exists() else []
    return sorted("\t".join(line.split("\t")[skip:]) for line in lines)


@pytest.mark.parametrize("version", ["15", "18"])
def test_undelete(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """DELETE without WHERE, committed and not vacuumed: --deleted gives back every row with its values; after an
    UPDATE of every row the old versions come back exactly; --deleted-by returns only that transaction's rows."""
    lab = make_lab(version, extra_conf={"track_commit_timestamp": True})
    with lab.connect() as conn:
        conn.execute("CREATE TABLE gone (id int PRIMARY KEY, label text, n numeric, doc jsonb)")
        conn.execute(
            "INSERT INTO gone SELECT g, 'label ' || g, g / 7.0, jsonb_build_object('g', g)"
            " FROM generate_series(1, 2000) g"
        )
        conn.execute("CREATE TABLE kept (id int, v text)")
        conn.execute("INSERT INTO kept SELECT g, md5(g::text) FROM generate_series(1, 500) g")
        original = _copy(conn, "gone")
        kept_original = _copy(conn, "kept")
        with conn.transaction():
            deleter = int(conn.execute("SELECT txid_current()").fetchone()[0])  # type: ignore[index]
            conn.execute("DELETE FROM gone")
        # the last statement: any later read of the page would prune the old versions (as HOT pruning does)
        conn.execute("UPDATE kept SET v = upper(v)")
    lab.stop()

    out = tmp_path / "all"
    r = _unload(lab.pgdata, out, "--deleted")
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report = json.loads((out / "report.json").read_text())
    by_name = {t["name"]: t for t in report["tables"]}
    assert by_name["gone"]["rows"] == 0
    gone = out / by_name["gone"]["deleted_file"]
    width = len(report["deleted_columns"])
    assert _rows(gone, width) == original
    first = gone.read_text().splitlines()[0].split("\t")
    assert int(first[4]) == deleter % (1 << 32) and first[6] == "delete"
    assert first[3] != "\\N" and first[5] != "\\N"  # commit times, track_commit_timestamp being on
    # kept: exactly the 500 versions before the update, marked as updated
    kept_file = out / by_name["kept"]["deleted_file"]
    assert _rows(kept_file, width) == kept_original
    assert {line.split("\t")[6] for line in kept_file.read_text().splitlines()} == {"update"}
    assert by_name["kept"]["rows"] == 500

    out = tmp_path / "by"
    r = _unload(lab.pgdata, out, "--deleted-by", str(deleter), "--table", "public.gone", "--table", "kept")
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report = json.loads((out / "report.json").read_text())
    by_name = {t["name"]: t for t in report["tables"]}
    assert _rows(out / by_name["gone"]["deleted_file"], width) == original
    assert by_name["kept"]["deleted_rows"] == 0


def _copy(conn: Any, table: str) -> list[str]:
    lines: list[str] = []
    with conn.cursor().copy(f"COPY {table} TO STDOUT") as cp:
        for chunk in cp:
            lines.extend(bytes(chunk).decode().splitlines())
    return sorted(lines)


def _zero_file(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


@pytest.mark.parametrize("version", ["15", "18"])
def test_catalog_from_an_older_copy(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """pg_class destroyed: the tables that existed when an older copy was taken still unload with today's rows,
    using that copy's catalog; a table created since is an orphan file, which --layout decodes."""
    from pgsurgeon.catalog.files import FilesCatalog

    lab = make_lab(version)
    with lab.connect() as conn:
        conn.execute("CREATE TABLE t1 (id int, v text)")
        conn.execute("INSERT INTO t1 SELECT g, 'v' || g FROM generate_series(1, 1000) g")
    lab.stop()
    older = tmp_path / "older"
    shutil.copytree(lab.pgdata, older, symlinks=True)
    lab.start()
    with lab.connect() as conn:
        conn.execute("INSERT INTO t1 SELECT g, 'w' || g FROM generate_series(1001, 1500) g")
        conn.execute("CREATE TABLE t2 (a int4, b text)")
        conn.execute("INSERT INTO t2 SELECT g, 'b' || g FROM generate_series(1, 300) g")
        t1_rows = _copy(conn, "t1")
        t2_rows = _copy(conn, "t2")
        (t2_path,) = conn.execute("SELECT pg_relation_filepath('t2')").fetchone()  # type: ignore[misc]
        (descr_path,) = conn.execute("SELECT pg_relation_filepath('pg_description')").fetchone()  # type: ignore[misc]
    lab.stop()
    handle = FilesCatalog(lab.pgdata).handle
    loc = handle.locate(5, 1259)
    assert loc is not None
    _zero_file(lab.pgdata / loc[3])  # pg_class of database postgres
    _zero_file(lab.pgdata / descr_path)  # and a non-essential catalog

    r = _unload(lab.pgdata, tmp_path / "plain")
    report = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert not [t for t in report["tables"] if t["database"] == "postgres"]
    assert r.returncode == Exit.DAMAGE
    assert any("catalog is damaged" in n for n in report["notes"]), report["notes"]

    out = tmp_path / "from-copy"
    r = _unload(lab.pgdata, out, "--catalog-from", str(older))
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report = json.loads((out / "report.json").read_text())
    (t1,) = [t for t in report["tables"] if t["name"] == "t1"]
    assert _rows(out / t1["file"]) == t1_rows
    orphans = {o["path"] for o in report["orphans"]}
    assert t2_path in orphans

    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "unload", str(lab.pgdata / t2_path), "--layout", "int4,text",
         "--out", str(tmp_path / "t2")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    assert _rows(tmp_path / "t2" / f"{Path(t2_path).name}.copy") == t2_rows


@pytest.mark.parametrize("version", ["15"])
def test_rows_whose_transaction_status_is_lost_are_kept_apart(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """pg_xact gone: rows without commit hints cannot be judged; they are kept apart with the reason, never
    guessed, and the unload says it is incomplete."""
    lab = make_lab(version)
    with lab.connect() as conn:
        conn.execute("CREATE TABLE hinted (id int)")
        conn.execute("INSERT INTO hinted SELECT generate_series(1, 100)")
        conn.execute("SELECT count(*) FROM hinted")  # sets the commit hints
        conn.execute("CREATE TABLE unhinted (id int)")
        conn.execute("SELECT count(*) FROM pg_class")
    with lab.connect() as conn:
        conn.execute("INSERT INTO unhinted SELECT generate_series(1, 100)")  # never read again: no hints
        conn.execute("CHECKPOINT")
    lab.stop()
    for seg in (lab.pgdata / "pg_xact").iterdir():
        seg.unlink()
    out = tmp_path / "out"
    r = _unload(lab.pgdata, out)
    assert r.returncode == Exit.DAMAGE, r.stderr + r.stdout
    report = json.loads((out / "report.json").read_text())
    by_name = {t["name"]: t for t in report["tables"]}
    assert by_name["hinted"]["rows"] == 100
    assert by_name["unhinted"]["rows"] == 0 and by_name["unhinted"]["kept_apart"] == 100
    apart = (out / by_name["unhinted"]["apart_file"]).read_text()
    assert "pg_xact" in apart
    assert report["complete"] is False


def _two_deleters(lab: LabCluster, table: str) -> tuple[list[str], int]:
    """A table whose rows two transactions delete, both open at once (a scan by one does not prune what the other
    deletes before it commits). Returns its rows and the first deleter's XID."""
    with lab.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, t text)")
        conn.execute(f"INSERT INTO {table} SELECT g, repeat('x', g % 40) || g FROM generate_series(1, 3000) g")
        conn.execute("CHECKPOINT")
        original = _copy(conn, table)
    with lab.connect(autocommit=False) as a, lab.connect(autocommit=False) as b:
        first = int(a.execute("SELECT txid_current()").fetchone()[0])  # type: ignore[index]
        a.execute(f"DELETE FROM {table} WHERE id <= 1000")
        b.execute(f"DELETE FROM {table} WHERE id > 1000")
        a.commit()
        b.commit()
    return original, first


def _salvage_deleted(lab: LabCluster, table: str, out: Path, *extra: str) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "salvage", "-d", lab.dsn(), "-t", table, "--out", str(out), *extra,
         "--format", "json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report: dict[str, Any] = json.loads(r.stdout)
    return report


@pytest.mark.parametrize("version", ["15", "18"])
def test_salvage_deleted_from_a_running_server(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """salvage --deleted on a running server: the rows of committed DELETEs come back, read through the server's
    buffers (the deletions need not be on disk yet), before salvage's own reads prune them; --deleted-by keeps one
    transaction's."""
    lab = make_lab(version)
    original, _first = _two_deleters(lab, "d1")
    report = _salvage_deleted(lab, "d1", tmp_path / "all", "--deleted")
    assert report["rows"]["saved"] == 0
    assert _rows(Path(report["deleted"]["file"]), 7) == original
    original, first = _two_deleters(lab, "d2")
    report = _salvage_deleted(lab, "d2", tmp_path / "by", "--deleted-by", str(first))
    got = _rows(Path(report["deleted"]["file"]), 7)
    assert got == sorted(line for line in original if int(line.split("\t")[0]) <= 1000)
