"""Findings as people read them: one entry per damaged structure, the root cause first and its consequences
grouped under it, on real pages of a real table (damaged in memory, never on disk)."""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess

import pytest

from fix_pg import MakeLab, exec_sql
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster
from pgsurgeon.render.findings import root_causes


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def real_page(pg: LabCluster) -> bytes:
    exec_sql(pg, "DROP TABLE IF EXISTS rc_t; CREATE TABLE rc_t AS SELECT g AS id, md5(g::text) AS v "
             "FROM generate_series(1, 300) g")  # fmt: skip
    exec_sql(pg, "CHECKPOINT")
    path = exec_sql(pg, "SELECT pg_relation_filepath('rc_t')")[0][0]
    return (pg.pgdata / path).read_bytes()[:8192]


def findings(page: bytes) -> list[dict[str, object]]:
    out = core.inspect_page(page, 0, checksums=False)["findings"]
    for f in out:
        f["block"] = 0
    return out


def test_a_destroyed_header_is_one_structure_with_its_consequences(pg: LabCluster) -> None:
    page = bytearray(real_page(pg))
    assert not [f for f in findings(bytes(page)) if f["severity"] == "error"]
    rng = random.Random(5)
    page[12:24] = bytes(rng.getrandbits(8) for _ in range(12))  # pd_lower, pd_upper, pd_special, pd_pagesize
    fs = findings(bytes(page))
    assert len(fs) > 1
    causes = root_causes(fs)
    assert len(causes) == 1
    root, consequences = causes[0]
    assert root["area"] == "page_header" and len(consequences) == len(fs) - 1


def test_separate_tuples_stay_separate_and_a_garbage_item_array_is_the_cause(pg: LabCluster) -> None:
    page = bytearray(real_page(pg))
    # two tuples' t_hoff made impossible: two damaged structures on one page
    lower = int.from_bytes(page[12:14], "little")
    items = [(24 + 4 * i) for i in range((lower - 24) // 4)]
    for lp in (items[2], items[7]):
        off = int.from_bytes(page[lp : lp + 4], "little") & 0x7FFF
        page[off + 22] = 3  # t_hoff below the header's own size
    fs = findings(bytes(page))
    causes = root_causes(fs)
    assert {c[0]["item"] for c in causes if c[0]["area"] == "tuple_header"} >= {3, 8}
    # now the item-ID array itself overwritten: the array is the cause, the tuples its consequences
    page = bytearray(real_page(pg))
    rng = random.Random(9)
    page[24 : 24 + 4 * 20] = bytes(rng.getrandbits(8) for _ in range(80))
    causes = root_causes(findings(bytes(page)))
    assert causes[0][0]["area"] in ("line_pointer", "page_header"), causes[0][0]


SEED_TABLE = (
    "CREATE TABLE {t} (id int PRIMARY KEY, d text, payload bytea); INSERT INTO {t} SELECT g, md5(g::text), "
    "CASE WHEN g % 8 = 0 THEN (SELECT string_agg(decode(md5((g * i)::text), 'hex'), '') "
    "FROM generate_series(1, 300) i) ELSE decode(md5(g::text), 'hex') END FROM generate_series(1, 2400) g"
)
SEED_KINDS = {  # table -> (corrupt's arguments, the area the first printed finding must name)
    "k_header": (("header", "--field", "random", "--block", "3"), "page_header."),
    "k_items": (("item-ids", "--block", "4"), "line_pointer."),
    "k_tuple": (("tuple-header", "--field", "random", "--block", "6"), "tuple_header."),
    "k_toast": (("toast", "--field", "chunk_seq"), "toast."),
}


@pytest.mark.parametrize("version", ["15", "18"])
def test_the_first_finding_names_the_damaged_structure(version: str, make_lab: MakeLab) -> None:
    """The seeds' four damage kinds (page header, item-ID array, tuple header, TOAST), with and without checksums:
    diagnose's first printed finding for the table is the damaged structure, not a consequence."""
    lab = make_lab(version)
    exec_sql(lab, "CREATE EXTENSION amcheck; CREATE EXTENSION pageinspect")
    for table in SEED_KINDS:
        exec_sql(lab, SEED_TABLE.format(t=table))
    exec_sql(lab, "CHECKPOINT")
    conn = ("-h", "127.0.0.1", "-p", str(lab.port), "-U", "postgres", "-d", "postgres")
    for table, (args, _area) in SEED_KINDS.items():
        code, _, err = cli("corrupt", *args, *conn, "-t", table, "--seed", "1")
        assert code == 0, err
    for table, (_args, area) in SEED_KINDS.items():
        code, out, err = cli("diagnose", *conn, "-t", table)
        assert code == 2, err
        first = next(ln for ln in out.splitlines() if ln.startswith("  error ") or ln.startswith("  warning"))
        assert area in first, (table, first)
    # offline, the scan ends each damaged file with the page to decode and, named through the connection, the
    # commands for its table
    code, out, err = cli("scan", "-D", str(lab.pgdata), "--live", *conn)
    assert code == 2, err
    header_path = exec_sql(lab, "SELECT pg_relation_filepath('k_header')")[0][0]
    assert f"pgsurgeon inspect {lab.pgdata}/{header_path} -b 3" in out, out
    assert f"pgsurgeon salvage {' '.join(conn)} -t public.k_header" in out or "-t k_header" in out
    # the damaged TOAST value: the row is kept, only the value is set to NULL, with the command diagnose printed;
    # with checksums the TOAST page itself is refused, and then only the repair can go first
    code, out, _ = cli("diagnose", *conn, "-t", "k_toast")
    with pytest.raises(Exception, match=r"chunk|invalid page"):
        exec_sql(lab, "SELECT count(md5(payload)) FROM k_toast")
    if lab.checksums:
        assert "SET %I = NULL" not in out and "refuses: the repair above deals with them first" in out
        return
    update = next(ln.strip() for ln in out.splitlines() if "SET %I = NULL" in ln)
    run = subprocess.run(
        ["bash", "-c", update],
        env={**os.environ, "PATH": f"{lab.install.bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "UPDATE 1" in run.stdout, (update, run.stdout, run.stderr)
    assert exec_sql(lab, "SELECT count(*), count(payload) FROM k_toast")[0] == (2400, 2399)
