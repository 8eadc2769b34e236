"""A lost pg_xact segment rebuilt from evidence (issue 29), on real PostgreSQL 15 and 18.

The table ``h`` is written by committed and aborted transactions and then read (its tuples carry hint bits); ``u``
the same, never read (no hint bits); a last transaction is still inserting into both when the server stops
immediately. The true statuses are the original segment's bytes. With pg_xact/0000 removed the server does not
start; ``pgsurgeon xact``:
- with WAL: decides every transaction that ended, correctly; the one in progress at the crash is undecided and listed
  with its rows;
- without WAL (``--no-wal``): decides exactly the transactions whose rows carry hint bits, correctly, and lists the
  others with the number of rows each inserted or deleted;
- ``--execute``: the server starts, and both tables hold exactly the committed rows; undo removes the file.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon import simulate
from pgsurgeon.cli import main
from pgsurgeon.errors import LabError
from pgsurgeon.lab import LabCluster

PER_SEGMENT = 8192 * 4 * 32


def _xact(pgdata: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["xact", "-D", str(pgdata), "--format", "json", *extra])
    return code, json.loads(out.getvalue())


def _workload(lab: LabCluster, table: str, first_id: int) -> list[tuple[int, str]]:
    """35 transactions, each XID with its fate: 20 committed inserts of 5 rows, 8 rolled back, then 4 committed
    deletes of two rows of the first 4 inserts and 3 rolled-back deletes of the next 3's. The rows fit one page with
    room to spare, so no read prunes them (heap_page_prune_opt waits for a page under a tenth free), and the deletes
    reach their rows by TID: no scan sets hint bits on the other rows."""
    out: list[tuple[int, str]] = []
    n = first_id
    with lab.connect("postgres", autocommit=False) as conn:
        for i in range(35):
            if i < 28:
                conn.execute(f"INSERT INTO {table} SELECT g FROM generate_series({n}, {n + 4}) g")
                n += 5
            else:
                j = i - 28  # the rows of insert j sit at offsets 5j+1..5j+5 of block 0
                conn.execute(
                    f'DELETE FROM {table} WHERE ctid = ANY (\'{{"(0,{5 * j + 1})","(0,{5 * j + 2})"}}\'::tid[])'
                )
            xid = int(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
            if 20 <= i < 28 or i >= 32:
                conn.rollback()
                out.append((xid, "aborted"))
            else:
                conn.commit()
                out.append((xid, "committed"))
    return out


def _ids(lab: LabCluster, table: str) -> list[int]:
    return [int(r[0]) for r in exec_sql(lab, f"SELECT id FROM {table} ORDER BY id")]


@pytest.mark.parametrize("version", ["15", "18"])
def test_lost_xact_segment_rebuilt(version: str, make_lab: MakeLab, tmp_path: Path) -> None:
    lab = make_lab(version)
    exec_sql(lab, "CREATE TABLE h (id int); CREATE TABLE u (id int)")
    hinted = dict(_workload(lab, "h", 1))
    truth_h = _ids(lab, "h")  # reading h sets its hint bits
    exec_sql(lab, "CHECKPOINT")  # hint bits on disk; u never read
    u_work = _workload(lab, "u", 100_000)
    unhinted = dict(u_work)
    exec_sql(lab, "CHECKPOINT")
    open_tx = lab.connect("postgres", autocommit=False)
    open_tx.execute("INSERT INTO u SELECT g FROM generate_series(900000, 900004) g")
    open_tx.execute("INSERT INTO h SELECT g FROM generate_series(900000, 900004) g")
    crashed = int(open_tx.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
    exec_sql(lab, "CHECKPOINT")  # its uncommitted rows on disk, as a crash after a checkpoint leaves them
    lab.stop("immediate")
    open_tx.close()
    original = (lab.pgdata / "pg_xact" / "0000").read_bytes()

    def true_status(xid: int) -> int:
        return (original[xid // 4] >> (2 * (xid % 4))) & 3 if xid // 4 < len(original) else 0

    for xid, fate in {**hinted, **unhinted}.items():
        assert true_status(xid) == (1 if fate == "committed" else 2), (xid, fate)
    simulate.run(simulate.SimulateRequest(mode="xact", field="remove", pgdata=lab.pgdata, seed=1))
    with pytest.raises(LabError):
        lab.start()

    # hint bits only: exactly h's transactions are decided, all correctly; u's are listed with their rows
    code, doc = _xact(lab.pgdata, "--no-wal")
    assert code == 2 and doc["manifest"] is None and not (lab.pgdata / "pg_xact" / "0000").exists()
    decided = {f["xid"]: f["status"] for f in doc["decided"]}
    assert set(hinted) <= set(decided), sorted(set(hinted) - set(decided))
    assert {x for x, f in hinted.items() if f == "committed"} == {x for x in hinted if decided[x] == "committed"}
    for xid, status in decided.items():
        assert (status == "committed") == (true_status(xid) == 1), (xid, status)
    undecided = {f["xid"]: f for f in doc["undecided"]}
    for xid, _fate in u_work[7:28]:  # inserts no other statement touched: every row depends on the lost status
        assert undecided[xid]["inserted"] == 5, (xid, undecided.get(xid))
    for xid, _fate in u_work[28:]:  # the deletes: the two rows each deleted depend on it
        assert undecided[xid]["deleted"] == 2, (xid, undecided.get(xid))
    assert undecided[crashed]["inserted"] == 10  # 5 in u (no hint) and 5 in h (written after h was read)

    # with the WAL: every transaction that ended is decided, correctly; the one cut by the crash is not
    code, doc = _xact(lab.pgdata)
    decided = {f["xid"]: f["status"] for f in doc["decided"]}
    for xid, fate in {**hinted, **unhinted}.items():
        assert decided.get(xid) == fate, (xid, fate, decided.get(xid))
    for xid, status in decided.items():
        assert (status == "committed") == (true_status(xid) == 1), (xid, status)
    assert [f["xid"] for f in doc["undecided"]] == [crashed], doc["undecided"]
    assert doc["undecided"][0]["rows"], doc["undecided"]
    assert not doc["conflicts"], doc["conflicts"]

    # written: a manifest first; undo removes the file; written again, the server starts with the true rows
    manifest = tmp_path / "xact.json"
    code, doc = _xact(lab.pgdata, "--execute", "--manifest", str(manifest))
    assert doc["manifest"] == str(manifest) and (lab.pgdata / "pg_xact" / "0000").is_file()
    assert main(["undo", str(manifest)]) == 0 and not (lab.pgdata / "pg_xact" / "0000").exists()
    manifest.unlink()
    # the steps the dry run prints, run as printed from a scratch directory: the unload keeps the undecided rows
    # apart, then the write (its manifest goes to the current directory)
    printed = _printed_steps(lab.pgdata)
    assert [c.split()[:2] for c in printed] == [["pgsurgeon", "unload"], ["pgsurgeon", "xact"]], printed
    work = tmp_path / "steps"
    work.mkdir()
    for step in printed:
        ran = subprocess.run(["bash", "-c", step.replace("pgsurgeon", f"{sys.executable} -m pgsurgeon", 1)],
                             cwd=work, capture_output=True, text=True)  # fmt: skip
        assert ran.returncode in (0, 2), step + ran.stdout + ran.stderr
    assert list(work.glob("unloaded/**/*u.kept_apart.copy")), sorted(work.rglob("*"))
    assert len(list(work.glob("pgsurgeon-xact-rebuild-*.json"))) == 1
    rebuilt = (lab.pgdata / "pg_xact" / "0000").read_bytes()
    for xid in decided:
        assert ((rebuilt[xid // 4] >> (2 * (xid % 4))) & 3 == 1) == (true_status(xid) == 1), xid
    # verified as the DBA would after the rescue: scan clean, the server starts, the rows the files hold are the
    # rows it serves, amcheck and pg_dumpall pass
    done = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "verify", str(lab.pgdata), "--format", "json"],
        capture_output=True,
        text=True,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"], done.stdout + done.stderr
    counted = {c["table"]: (c["files"], c["server"]) for c in report["counts"]}
    assert counted["public.h"] == (len(truth_h), len(truth_h)), counted
    lab.start()
    assert _ids(lab, "h") == truth_h
    committed_u = sorted(i for i in _ids_written(unhinted, 100_000) if i not in _deleted(unhinted, 100_000))
    assert _ids(lab, "u") == committed_u
    done = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "scan", str(lab.pgdata), "--live"], capture_output=True, text=True
    )
    assert done.returncode in (0, 2), done.stderr


def _printed_steps(pgdata: Path) -> list[str]:
    """The commands ``pgsurgeon xact`` prints under "next:", as a DBA would copy them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["xact", "-D", str(pgdata)])
    return [ln.strip()[2:] for ln in out.getvalue().splitlines() if ln.strip().startswith("$ ")]


def _ids_written(fates: dict[int, str], first_id: int) -> list[int]:
    """The ids the committed inserts of :func:`_workload` wrote (its first 20 transactions)."""
    return [first_id + k for k in range(100)]


def _deleted(fates: dict[int, str], first_id: int) -> set[int]:
    """The ids its 4 committed deletes removed."""
    return {first_id + 5 * j + d for j in range(4) for d in (0, 1)}
