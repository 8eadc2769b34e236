"""The simulator's bookkeeping modes (issue 29) on real PostgreSQL 15 and 18: pg_control, WAL, pg_xact, pg_subtrans,
pg_multixact, pg_filenode.map and an orphan relation file.

For each mode and field, on one stopped cluster holding rows from 100 transactions (never read, so without hint
bits) and rows locked FOR SHARE by two transactions at once (MultiXacts):
- the damage is planned from the seed alone (twice the same changes), written, found by ``scan`` where the
  scanner knows the structure (exit 2 naming the file), and undone byte for byte (every file of the data directory
  hashed before and after);
- then written again and the real server started: what it does is asserted (it refuses with its own words, or it
  starts and a query shows the consequence: silent loss, an error, or nothing);
- the directory is put back from a pristine copy before the next case.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from fix_locks import lock_from_two_sessions, update_under_key_share
from fix_pg import MakeLab, exec_sql
from pgsurgeon import simulate
from pgsurgeon.cli import main
from pgsurgeon.db import ConnectError
from pgsurgeon.errors import LabError
from pgsurgeon.explain import explain_text
from pgsurgeon.journal import apply as applying
from pgsurgeon.journal.manifest import Manifest
from pgsurgeon.journal.server import last_complaint
from pgsurgeon.lab import LabCluster

ROWS = 1000
LOCKED = 100
SEED = 29

Probe = Callable[[LabCluster], None]


def count(lab: LabCluster, table: str = "t") -> int:
    return int(exec_sql(lab, f"SELECT count(*) FROM {table}")[0][0])


def rows_intact(lab: LabCluster) -> None:
    assert count(lab) == ROWS and count(lab, "m") == LOCKED


def rows_lost(lab: LabCluster) -> None:
    """Silent loss: every row of t is gone without an error, or the catalog rows naming the database or the table
    vanished with them."""
    try:
        assert count(lab) == 0
    except (psycopg.errors.UndefinedTable, ConnectError) as exc:
        assert "does not exist" in str(exc)


def rows_changed(lab: LabCluster) -> None:
    """Commit statuses garbled: t shows another set of rows, or the catalog rows naming it are gone."""
    with contextlib.suppress(psycopg.errors.UndefinedTable):
        assert count(lab) != ROWS


def versions_back(lab: LabCluster) -> None:
    """The updater's XID is lost with the members: old versions of m's rows are visible again beside the new
    ones (or reading m fails)."""
    with contextlib.suppress(psycopg.Error):
        assert count(lab, "m") > LOCKED


def connect_fails(text: str) -> Probe:
    def probe(lab: LabCluster) -> None:
        with pytest.raises((psycopg.Error, ConnectError), match=text):
            count(lab)

    return probe


def read_fails(table: str, text: str) -> Probe:
    """Reading ``table`` fails with ``text`` (within 3 s: a reader that would wait forever counts as failing)."""

    def probe(lab: LabCluster) -> None:
        with lab.connect("postgres") as conn, pytest.raises(psycopg.Error, match=text):
            conn.execute("SET statement_timeout = '3s'")
            conn.execute(f"SELECT count(*) FROM {table}").fetchall()

    return probe


def update_fails(text: str) -> Probe:
    """The rows still read (a lock-only xmax needs no member), but changing a locked row asks for the members."""

    def probe(lab: LabCluster) -> None:
        assert count(lab, "m") == LOCKED
        with pytest.raises(psycopg.Error, match=text):
            exec_sql(lab, "UPDATE m SET v = v + 1")

    return probe


@dataclass(frozen=True)
class Case:
    mode: str
    field: str | None
    refuses: str | None = None
    """The server does not start and logs this (a regular expression)."""
    probe: Probe | None = None
    """The server starts; this asserts what it then does."""
    scan: tuple[str, ...] = ()
    """The finding codes scan may report for it (one at least; a file finding names the damaged file)."""
    exit: int = 2
    """scan's exit status."""
    names_file: bool = True
    """A file finding names the damaged file (not for pg_control, whose damage shows in the files it points to, nor
    for garbled offsets, which point into members segments that never existed)."""
    file: str | None = None


NOT_STATUS = r"could not access status of transaction"
NOT_CREATED = r"MultiXactId \d+ has not been created yet -- apparent wraparound"
RELMAP = r"relation mapping file .* contains (invalid data|incorrect checksum)"
CHECKPOINT = "could not locate a valid checkpoint record"
TABLES = ("tuple_header.",)
"""Findings that name the tables whose rows the damage reaches, not the damaged file."""
CASES = [
    Case("control", "crc", refuses="incorrect checksum in control file", scan=("file.control_crc",)),
    Case(
        "control",
        "truncate",
        refuses=r'could not read file "global/pg_control": read \d+ of \d+',
        scan=("file.control_unreadable",),
    ),
    Case("control", "checkpoint", refuses=CHECKPOINT, scan=("file.wal_checkpoint_record",), names_file=False),
    Case(
        "control",
        "version",
        refuses="database files are incompatible with server",
        scan=("file.control_crc", "file.control_anomaly"),
    ),
    Case("control", "next-xid", probe=rows_lost, scan=("tuple_header.xmin_future",)),
    Case("control", "next-multi", probe=read_fails("m", NOT_CREATED), scan=("tuple_header.multi_future",)),
    Case("wal", "checkpoint-segment", refuses=CHECKPOINT, scan=("file.wal_missing",)),
    Case("wal", "empty", refuses=CHECKPOINT, scan=("file.wal_missing",)),
    Case("wal", "truncate", refuses=CHECKPOINT, scan=("file.wal_short",)),
    Case("wal", "checkpoint-record", refuses=CHECKPOINT, scan=("file.wal_checkpoint_record",)),
    Case("wal", "checkpoint-rmid", refuses=CHECKPOINT, scan=("file.wal_checkpoint_record",)),
    Case("wal", "page-header", refuses=CHECKPOINT, scan=("file.wal_page_header",)),
    Case("wal", "record", probe=rows_intact, scan=("file.wal_record",)),
    Case("xact", "remove", refuses=NOT_STATUS, scan=("file.xact_missing",)),
    Case("xact", "zero", probe=rows_lost, scan=("tuple_header.hint_contradiction",)),
    Case("xact", "page", probe=rows_changed, scan=("tuple_header.hint_contradiction",)),
    # the startup process zeroes pg_subtrans (StartupSUBTRANS): nothing to find, and scan finds nothing
    Case("subtrans", "remove", probe=rows_intact, scan=(), exit=0),
    Case("subtrans", "page", probe=rows_intact, scan=(), exit=0),
    Case("multixact", "offsets-remove", refuses=NOT_STATUS, scan=("file.multixact_missing",)),
    Case(
        "multixact",
        "offsets-page",
        probe=read_fails("m", "."),
        scan=("file.multixact_missing", "file.multixact_offsets", "tuple_header.multi_updater"),
        names_file=False,
    ),
    Case("multixact", "members-page", probe=versions_back, scan=("tuple_header.multi_updater",)),
    Case("multixact", "offsets-zero", probe=rows_intact, scan=("tuple_header.multi_updater",)),
    Case("multixact", "members-remove", refuses=NOT_STATUS, scan=("file.multixact_missing",)),
    Case("multixact", "members-zero", probe=versions_back, scan=("tuple_header.multi_updater",)),
    Case("relmap", "database", probe=connect_fails(RELMAP), file="5", scan=("file.relmap",)),
    Case("relmap", "global", probe=connect_fails(RELMAP), scan=("file.relmap",)),
    # an orphan wastes space and harms no row: a warning, exit 0
    Case("orphan-file", None, probe=rows_intact, file="base", scan=("file.orphan",), exit=0),
]


def _digest(pgdata: Path) -> dict[str, str]:
    return {
        str(p.relative_to(pgdata)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(pgdata.rglob("*"))
        if p.is_file() and p.name not in ("postmaster.pid", "postmaster.opts")
    }


def _cluster(make_lab: MakeLab, version: str) -> LabCluster:
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE t (id int)")
    for start in range(0, ROWS, ROWS // 100):  # 100 transactions, so a garbled status page decides many XIDs
        exec_sql(lab, f"INSERT INTO t SELECT g FROM generate_series({start + 1}, {start + ROWS // 100}) g")
    exec_sql(lab, f"CREATE TABLE m AS SELECT g AS id, 0 AS v FROM generate_series(1, {LOCKED}) g")
    for _ in range(3):  # three MultiXacts (one per round), so pg_control's next one can be set back
        lock_from_two_sessions(lab, "m")
    update_under_key_share(lab, "m", "v = v + 1")
    exec_sql(lab, "CHECKPOINT")
    assert int(exec_sql(lab, "SELECT next_multixact_id FROM pg_control_checkpoint()")[0][0]) > 3
    lab.stop()
    return lab


def _file_for(case: Case) -> Path | None:
    """The database postgres (OID 5 from PostgreSQL 15 on) for the modes that pick one: the probes connect there."""
    return {"5": Path("base/5/pg_filenode.map"), "base": Path("base/5")}.get(case.file or "")


def _changes(result: simulate.SimulateResult) -> list[tuple[str, str, int, int, bytes, bytes]]:
    return [(c.kind, c.file, c.offset, c.length, c.old, c.new) for c in result.manifest.changes]


def _scan_codes(lab: LabCluster) -> tuple[int, list[tuple[str, str]]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["scan", str(lab.pgdata), "--format", "json"])
    doc = json.loads(out.getvalue())
    return code, [(f["code"], f.get("path") or "") for f in doc["findings"]]


def _corrupt(lab: LabCluster, case: Case, *, dry_run: bool = False) -> simulate.SimulateResult:
    req = simulate.SimulateRequest(
        mode=case.mode,
        field=case.field,
        pgdata=lab.pgdata,
        seed=SEED,
        file=_file_for(case),
        dry_run=dry_run,
    )
    return simulate.run(req)


@pytest.mark.parametrize("version", ["15", "18"])
def test_bookkeeping_modes(version: str, make_lab: MakeLab, scratch: Path) -> None:
    lab = _cluster(make_lab, version)
    pristine = scratch / "pristine"
    subprocess.run(["cp", "-a", str(lab.pgdata), str(pristine)], check=True)
    clean = _digest(lab.pgdata)
    assert _scan_codes(lab)[0] == 0
    seen = []
    for case in CASES:
        what = f"{case.mode} {case.field}"
        try:
            _one_case(lab, case, clean)
        except (AssertionError, psycopg.Error, LabError) as exc:
            raise AssertionError(f"case {what}: {exc}") from exc
        seen.append(what)
        subprocess.run(["rm", "-rf", str(lab.pgdata)], check=True)
        subprocess.run(["cp", "-a", str(pristine), str(lab.pgdata)], check=True)
    assert len(seen) == len(CASES)


def _one_case(lab: LabCluster, case: Case, clean: dict[str, str]) -> None:
    what = f"{case.mode} {case.field}"
    planned = _corrupt(lab, case, dry_run=True)
    result = _corrupt(lab, case)
    assert _changes(planned) == _changes(result), f"{what}: the seed does not decide the damage"
    assert _digest(lab.pgdata) != clean, what
    code, found = _scan_codes(lab)
    assert code == case.exit, (what, code, found)
    hits = [(c, f) for c, f in found if c in case.scan]
    assert bool(hits) == bool(case.scan), (what, found)
    changed = {Path(ch.file).name for ch in result.manifest.changes}
    files = {Path(f).name for c, f in hits if not c.startswith(TABLES)}
    assert not files or files & changed or not case.names_file, (what, found)
    applying.undo(Manifest.load(result.manifest.path), force=False)
    assert _digest(lab.pgdata) == clean, f"{what}: undo is not byte-exact"
    # the same damage again, and what the real server does with it
    again = _corrupt(lab, case)
    assert _changes(again) == _changes(result), what
    logged = lab.log_path.stat().st_size if lab.log_path.exists() else 0
    try:
        lab.start()
    except LabError:
        assert case.refuses is not None, f"{what}: the server refused: {last_complaint(lab.log_path)}"
        with lab.log_path.open("rb") as fh:
            fh.seek(logged)
            said = fh.read().decode(errors="replace")
        assert re.search(case.refuses, said), (what, said[-2000:])
        # explained: the refusal is read as the damage it is, not only as "the server did not start"
        ids = {e.pattern.id for e in explain_text(said)[0] if e.pattern.kind == "damage"}
        assert ids - {"startup_failed", "generic_damage", "xx_sqlstate"}, (what, ids, said[-1500:])
    else:
        try:
            assert case.probe is not None, f"{what}: the server started"
            case.probe(lab)
        finally:
            lab.stop()
