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
    env = {**os.environ, "COLUMNS": "200"}
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


def _roundtrip(make_lab: MakeLab, version: str, source: LabCluster, expected: dict[str, Any], out: Path) -> None:
    r = _unload(source.pgdata, out)
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["complete"] is True
    assert report["kept_apart"] == 0
    target = _restore(make_lab, version, out)
    got = _snapshot(target, ["shop", "hr"])
    assert got.keys() == expected.keys()
    for key, rows in expected.items():
        assert got[key] == rows, key
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
    assert len(expected) == 12
    source.stop()
    _roundtrip(make_lab, version, source, expected, tmp_path / "out")

    # The catalogs rewritten (new file numbers in the relation maps): the same result.
    source.start()
    with source.connect("shop") as conn:
        conn.execute("VACUUM FULL pg_class, pg_attribute, pg_type")
    source.stop()
    _roundtrip(make_lab, version, source, expected, tmp_path / "out-vacuumed")

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
