"""The fixed start-up of a command (issue 35): what a command that never connects leaves unimported, and the
quoting that lets it (psycopg's own, without a connection).

The driver alone takes ~0.1 s to import, rich ~0.03 s and the resetwal planner ~0.01 s, against a budget of
0.15 s for the interpreter, imports, catalog and connection of a command on an empty cluster. Each command runs in
a fresh interpreter (an in-process run would see what earlier tests imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import MakeLab
from pgsurgeon.lab import LabCluster

# Runs the command line as the console script does, then lists the modules the run imported.
PROBE = """
import json, sys
from pgsurgeon.cli import main
code = main(sys.argv[2:])
Path = __import__("pathlib").Path
Path(sys.argv[1]).write_text(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported(argv: list[str], out: Path) -> set[str]:
    """The top-level packages and pgsurgeon modules a fresh interpreter imported to run ``pgsurgeon argv``."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(out), *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    assert got["code"] in (0, 2), (argv, got["code"], done.stderr)
    return {m.split(".")[0] for m in got["modules"]} | {m for m in got["modules"] if m.startswith("pgsurgeon.")}


@pytest.mark.parametrize("version", ["15", "18"])
def test_offline_scan_and_health_import_neither_the_driver_nor_rich(
    version: str, make_lab: MakeLab, tmp_path: Path
) -> None:
    """Fails when a module on the path of an offline scan or health imports psycopg (or rich with --format json,
    or the resetwal planner with the WAL reader) at its top instead of where it is used."""
    lab = make_lab(version)
    with lab.connect() as conn:
        conn.execute("CREATE TABLE t (a int, b text)")
        conn.execute("INSERT INTO t SELECT g, 'x' FROM generate_series(1, 100) g")
        conn.execute("CHECKPOINT")
    lab.stop()
    pgdata = str(lab.pgdata)
    for argv in (["scan", pgdata, "--format", "json"], ["health", pgdata, "--format", "json"]):
        mods = imported(argv, tmp_path / "modules.json")
        assert "pgsurgeon.scan" in mods, argv  # the probe ran the command
        assert "psycopg" not in mods, argv
        assert "rich" not in mods, argv
        assert "pgsurgeon.rescue.plan" not in mods, argv
    # the text output draws with rich, and still never connects
    assert "psycopg" not in imported(["scan", pgdata], tmp_path / "modules.json")
    # restore.sql's names and paths are quoted without the driver
    unload = imported(["unload", pgdata, "--out", str(tmp_path / "out"), "--schema", "files"], tmp_path / "m.json")
    assert "pgsurgeon.unload.restore_sql" in unload
    assert "psycopg" not in unload
    # its text output is sentences (no rich); the schema step's private server and salvage's engine stay unimported
    # with --schema files
    assert not {"rich", "pgsurgeon.rescue.private", "pgsurgeon.salvage.deleted", "pgsurgeon.rescue.walstatus"} & unload
    restore = (tmp_path / "out" / "restore.sql").read_text()
    assert f"\\set dir '{tmp_path / 'out'}'" in restore
    assert '\\copy "public"."t" ("a", "b") FROM \'' in restore


# Names and strings that need quoting: quotes, backslashes (E'' strings), non-ASCII, a dot, a space, control bytes.
AWKWARD = [
    "",
    "a",
    "it's",
    "C:\\x\\y",
    "b\\'s",
    "\\",
    "'",
    '"q"',
    "schéma 日本",
    "a.b",
    "tab\tnew\nline",
    "/tmp/o d/t.copy",
]

# What quote_ident and quote_literal give against psycopg's own quoting without a connection, in this interpreter.
COMPARE = """
import json, sys
from psycopg import sql
from pgsurgeon import db
values = json.loads(sys.argv[1])
bad = [v for v in values if db.quote_literal(v) != sql.Literal(v).as_string(None)]
bad += [v for v in values if v and db.quote_ident(v, "s") != sql.Identifier(v, "s").as_string(None)]
print(json.dumps(bad))
"""


@pytest.mark.pg(18)
def test_quoting_without_the_driver_is_the_drivers(pg: LabCluster) -> None:
    """quote_ident and quote_literal stand in for psycopg.sql's quoting where no connection formats the text (so
    offline commands need not import it). Fails when they differ from psycopg's Identifier/Literal.as_string(None)
    for any awkward value: in a fresh interpreter, and in one that connected to a server first (libpq then knows
    standard_conforming_strings, which changes how it escapes backslashes)."""
    fresh = subprocess.run(
        [sys.executable, "-c", COMPARE, json.dumps(AWKWARD)], capture_output=True, text=True, check=True
    )
    assert json.loads(fresh.stdout) == []
    connected = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import psycopg; psycopg.connect({pg.dsn()!r}).close()\n{COMPARE}",
            json.dumps(AWKWARD),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(connected.stdout) == []
