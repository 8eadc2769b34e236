"""``pgsurgeon repair`` against real servers: PostgreSQL 15 without checksums, 18 with checksums (the stored checksum
left as corrupt wrote it, so the server refuses every damaged page) and 18 with ``--keep-checksum-valid``.

Each case builds a table, records its ground truth (ctid -> key and row digest), damages it with the simulator,
runs ``repair --execute --yes`` and checks the acceptance criteria of the issue: ``SELECT *``, ``pg_dump`` of the
table and ``pg_amcheck --heapallindexed`` (heap, TOAST, indexes) succeed; the keys missing against the ground truth
are exactly those at the ctids the plan listed as lost (minus those ``--reinsert`` put back, with their original
values); the repair's own re-diagnosis says clean. Other tests: a dry run changes nothing (WAL position and the
files' sha256), ``pgsurgeon undo`` of the page writes restores the bytes, and the refusals.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import NULLS, PLAIN, TOASTY, CorruptLabs, cli, digest, make_table, relation_files, sql, unique
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

Tid = tuple[int, int]
EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery")


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "repair")
    try:
        yield labs
    finally:
        labs.close()


def get_lab(labs: CorruptLabs, version: str) -> LabCluster:
    lab = labs.get(version)
    sql(lab, *(f"CREATE EXTENSION IF NOT EXISTS {e}" for e in EXTENSIONS))
    return lab


def parse_tid(text: str) -> Tid:
    b, lp = text.strip("()").split(",")
    return int(b), int(lp)


def ground_truth(lab: LabCluster, table: str) -> dict[Tid, tuple[int, str]]:
    rows = sql(lab, f"SELECT ctid::text, id, md5(t::text) FROM {table} t")
    return {parse_tid(str(c)): (int(i), str(m)) for c, i, m in rows}


def corrupt(lab: LabCluster, table: str, args: tuple[str, ...], variant: str, manifest: Path) -> None:
    keep = ("--keep-checksum-valid",) if variant == "pg18-keep" else ()
    code, _, err = cli("corrupt", *args, *keep, "--dsn", lab.dsn(), "--table", table, "--manifest", str(manifest))
    assert code == 0, err


def repair(lab: LabCluster, table: str, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli("repair", "--dsn", lab.dsn(), "--table", table, "--format", "json", *args)
    doc: dict[str, Any] = json.loads(out) if out.strip() else {}
    return code, doc, err


def _record(case: Case, doc: dict[str, Any], missing: int) -> None:
    """With PGSURGEON_RECORD_REPAIRS=FILE, append what the repair did (for docs/repair.md)."""
    target = os.environ.get("PGSURGEON_RECORD_REPAIRS")
    if target:
        plan = doc["plan"]
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {
                        "case": case.id,
                        "variant": case.variant,
                        "steps": [s["kind"] for s in plan["steps"]],
                        "lost": plan["lost_count"],
                        "kept": len(plan["kept"]),
                        "reinserted": len(doc["execution"]["reinserted"]),
                        "missing": missing,
                    }
                )
                + "\n"
            )


def assert_repaired(
    lab: LabCluster, table: str, truth: dict[Tid, tuple[int, str]], doc: dict[str, Any], exact: bool
) -> int:
    """Check the acceptance criteria; the number of keys missing."""
    plan, execution = doc["plan"], doc["execution"]
    assert execution["after"]["clean"], execution["after"]
    # SELECT *, pg_dump and pg_amcheck (heap, TOAST and indexes, heapallindexed) all succeed
    rows = sql(lab, f"SELECT *, md5(t::text) FROM {table} t")
    dump = lab.run_tool("pg_dump", "-d", "postgres", "-t", table, "-f", "/dev/null", check=False)
    assert dump.returncode == 0, dump.stderr
    check = lab.run_tool("pg_amcheck", "-d", "postgres", "-t", f"public.{table}", "--heapallindexed", check=False)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
    # the keys missing are exactly the ones the ledger keeps apart or lists as lost, and it accounts for every row
    ledger = execution["ledger"]
    assert execution["ledger_check"]["match"], execution["ledger_check"]
    removed = {parse_tid(x["ctid"]) for x in plan["lost"]}
    reinserted = {parse_tid(c) for c in execution["reinserted"]}
    assert reinserted <= removed and {parse_tid(c) for c in ledger["reinserted"]} == reinserted
    apart = {parse_tid(x["ctid"]) for x in ledger["kept_apart"]}
    lost = {parse_tid(x["ctid"]) for x in ledger["lost"]}
    assert not (apart & lost) and not (reinserted & (apart | lost))
    after = {int(r[0]): str(r[-1]) for r in rows}
    missing = {i for i, _ in truth.values()} - set(after)
    planned = {truth[t][0] for t in apart | lost if t in truth}
    assert missing == planned, (
        f"missing {sorted(missing)[:20]} ({len(missing)}), kept apart or lost {sorted(planned)[:20]} ({len(planned)})"
    )
    assert ledger["rows"] == len(truth), f"the ledger counts {ledger['rows']} rows, the table had {len(truth)}"
    if exact:  # rows put back carry their original values
        for t in reinserted:
            if t in truth:
                key, digest_before = truth[t]
                assert after[key] == digest_before, f"row {key} from {t} came back different"
    assert set(after) <= {i for i, _ in truth.values()}, "rows with keys the table never had"
    return len(missing)


@dataclass(frozen=True)
class Case:
    id: str
    variant: str
    args: tuple[str, ...]
    table: str = PLAIN
    repair: tuple[str, ...] = ()
    exact: bool = True
    lost: int | None = None
    """How many rows the plan lists as lost (None: not checked)."""
    kept: int | None = None
    """How many tuples are repaired in place with heap_force_freeze."""
    recovers: bool = True
    """With --reinsert: carving brings rows back (not from torn or misdirected pages: those rows belong elsewhere)."""


R = ("--reinsert",)
CASES = [
    # ------------------------------------------------------------ PostgreSQL 15, checksums off
    Case("header-random", "pg15", ("header", "--seed", "11"), repair=R, lost=185),
    Case("pd_lower-shrunk", "pg15", ("header", "--field", "pd_lower", "--value", "28", "--block", "0"), lost=184),
    Case("item-ids", "pg15", ("item-ids", "--seed", "1"), repair=R, lost=185),
    Case("lp_off", "pg15", ("item-id", "--field", "lp_off", "--seed", "1"), repair=R),
    Case("lp_flags-redirect", "pg15", ("item-id", "--field", "lp_flags", "--seed", "1"), repair=R, lost=1),
    Case("lp_flags-unused", "pg15", ("item-id", "--field", "lp_flags", "--seed", "2"), repair=R, lost=1),
    # four line pointers of one page overwritten: unused with an offset left, dead, normal past the page (issue 13:
    # no line_pointer.past_page may be left behind)
    Case(
        "item-id-x4", "pg15", ("item-id", "--field", "random", "--block", "3", "--count", "4", "--seed", "1"), repair=R
    ),
    Case(
        "t_xmin-old",
        "pg15",
        ("tuple-header", "--field", "t_xmin", "--value", "3000000000", "--clear-hints", "--seed", "1"),
        lost=0,
        kept=1,
    ),
    Case("t_xmin-future", "pg15", ("tuple-header", "--field", "t_xmin", "--seed", "1"), lost=0, kept=1),
    Case("t_infomask2-natts", "pg15", ("tuple-header", "--field", "t_infomask2", "--value", "1"), lost=1),
    Case("t_hoff", "pg15", ("tuple-header", "--field", "t_hoff", "--seed", "1"), lost=1),
    Case("t_bits", "pg15", ("tuple-header", "--field", "t_bits", "--seed", "1"), table=NULLS, lost=1),
    Case("tuple-random", "pg15", ("tuple-header", "--seed", "1"), lost=1),
    Case("data-random", "pg15", ("tuple-data", "--seed", "1"), lost=1),
    Case(
        "varlena-huge",
        "pg15",
        ("tuple-data", "--field", "varlena", "--column", "c", "--value", "0x3FFFFFFF", "--seed", "1"),
        table=TOASTY,
        lost=1,
    ),
    Case("toast-chunk_seq", "pg15", ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1"), table=TOASTY),
    Case("toast-chunk_size", "pg15", ("toast", "--field", "chunk_size", "--seed", "1"), table=TOASTY, lost=1),
    Case("toast-missing", "pg15", ("toast", "--field", "missing", "--seed", "1"), table=TOASTY, lost=1),
    Case("btree-item", "pg15", ("btree", "--field", "item", "--seed", "2"), lost=0),
    Case("btree-special", "pg15", ("btree", "--field", "special", "--seed", "1"), lost=0),
    Case("zero", "pg15", ("zero", "--seed", "1"), lost=185),
    Case("torn", "pg15", ("torn", "--seed", "1"), repair=R, lost=185, recovers=False),
    Case("misdirected", "pg15", ("misdirected", "--seed", "1"), repair=R, lost=185, recovers=False),
    Case("truncate", "pg15", ("truncate", "--block", "2"), lost=630),
    # random bit flips may change values no check can see (seed 2 does not touch a key)
    Case("bitflips", "pg15", ("bitflips", "--count", "20", "--seed", "2"), table=TOASTY, repair=R, exact=False),
    Case("sql-header-random", "pg15", ("header", "--seed", "11"), repair=(*R, "--method", "sql"), lost=185),
    Case("sql-item-ids", "pg15", ("item-ids", "--seed", "1"), repair=("--method", "sql"), lost=185),
    # ------------------------------------------------------------ PostgreSQL 18, checksums on: pages refused whole
    Case("header-random", "pg18", ("header", "--seed", "11"), repair=R, lost=185),
    Case(
        "t_xmin-old",
        "pg18",
        ("tuple-header", "--field", "t_xmin", "--value", "3000000000", "--clear-hints", "--seed", "1"),
        repair=R,
        lost=185,
    ),
    Case("checksum", "pg18", ("checksum", "--seed", "1"), repair=R, lost=185),
    Case("toast-chunk_seq", "pg18", ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1"), table=TOASTY),
    Case("toast-missing", "pg18", ("toast", "--field", "missing", "--seed", "1"), table=TOASTY),
    Case("btree-item", "pg18", ("btree", "--field", "item", "--seed", "2"), lost=0),
    Case("misdirected", "pg18", ("misdirected", "--seed", "1"), repair=R, lost=185, recovers=False),
    Case("zero", "pg18", ("zero", "--seed", "1"), lost=185),
    Case("truncate", "pg18", ("truncate", "--block", "2"), lost=630),
    Case("bitflips", "pg18", ("bitflips", "--count", "20", "--seed", "2"), table=TOASTY, repair=R, exact=False),
    Case(
        "sql-toast-chunk_seq",
        "pg18",
        ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1"),
        table=TOASTY,
        repair=("--method", "sql"),
    ),
    # ------------------------------------------------------------ PostgreSQL 18, checksums kept valid
    Case("item-ids", "pg18-keep", ("item-ids", "--seed", "1"), repair=R, lost=185),
    Case("lp_flags-redirect", "pg18-keep", ("item-id", "--field", "lp_flags", "--seed", "1"), lost=1),
    Case("tuple-random", "pg18-keep", ("tuple-header", "--seed", "1"), lost=1),
    Case(
        "t_xmin-old",
        "pg18-keep",
        ("tuple-header", "--field", "t_xmin", "--value", "3000000000", "--clear-hints", "--seed", "1"),
        lost=0,
        kept=1,
    ),
    Case(
        "toast-chunk_seq",
        "pg18-keep",
        ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1"),
        table=TOASTY,
        lost=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.id}-{c.variant}" for c in CASES])
def test_repair_mode(case: Case, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, "15" if case.variant == "pg15" else "18")
    table = make_table(lab, case.table)
    truth = ground_truth(lab, table)
    corrupt(lab, table, case.args, case.variant, tmp_path / "corrupt.json")
    code, doc, err = repair(lab, table, "--execute", "--yes", "--run-dir", str(tmp_path / "run"), *case.repair)
    assert code == 0, err
    plan = doc["plan"]
    assert plan["steps"], "the plan does nothing"
    if case.lost is not None:
        assert plan["lost_count"] == case.lost, plan["lost"][:5]
    if case.kept is not None:
        assert len(plan["kept"]) == case.kept, plan["kept"]
    missing = assert_repaired(lab, table, truth, doc, case.exact)
    _record(case, doc, missing)
    if "--reinsert" in case.repair:
        assert bool(doc["execution"]["reinserted"]) == case.recovers, doc["execution"]["reinserted"][:5]
    kinds = [s["kind"] for s in plan["steps"]]
    assert kinds[0] == "salvage" and kinds[-2:] == ["verify", "check-ledger"]
    for s in plan["steps"]:
        if s["kind"] in ("kill", "freeze", "rewrite-table"):
            assert s["irreversible"] and s["wal_logged"], s
    sql(lab, f"DROP TABLE {table}")


# ------------------------------------------------------------------------------------------ dry run, undo


def _wal_and_files(lab: LabCluster, table: str) -> tuple[str, dict[str, str | None]]:
    (lsn,) = sql(lab, "SELECT pg_current_wal_insert_lsn()::text")[0]
    return str(lsn), digest(relation_files(lab, table))


def _wal_changes(lab: LabCluster, table: str, start: str, end: str) -> list[str]:
    """WAL records between two positions about the table, its TOAST table or their indexes, except hint-bit page
    images. (Reads the server does for any query log a few records of their own: with checksums, a hint bit set on
    a catalog page logs the page first, and on-access pruning of catalog pages is WAL-logged too.)"""
    if start == end:
        return []
    nodes = {f"/{p.name.split('.')[0]} " for p in relation_files(lab, table)}
    out = lab.run_tool("pg_waldump", "-p", str(lab.pgdata / "pg_wal"), "-s", start, "-e", end, check=False).stdout
    return [
        line
        for line in out.splitlines()
        if line.startswith("rmgr:") and "FPI_FOR_HINT" not in line and any(n in line + " " for n in nodes)
    ]


@pytest.mark.parametrize(
    ("version", "kind", "args"),
    [
        ("15", PLAIN, ("header", "--seed", "11")),
        ("15", PLAIN, ("tuple-header", "--field", "t_hoff", "--seed", "1")),
        ("18", TOASTY, ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1")),
    ],
    ids=["pg15-header", "pg15-t_hoff", "pg18-toast"],
)
def test_dry_run_changes_nothing(
    version: str, kind: str, args: tuple[str, ...], labs: CorruptLabs, tmp_path: Path
) -> None:
    lab = get_lab(labs, version)
    table = make_table(lab, kind)
    corrupt(lab, table, args, f"pg{version}", tmp_path / "corrupt.json")
    lsn, files = _wal_and_files(lab, table)
    code, out, err = cli(
        "repair", "--dsn", lab.dsn(), "--table", table, "--reinsert", "--backup-dir", str(tmp_path / "r")
    )
    assert code == 0, err
    assert "DRY RUN" in out and "ledger:" in out and "rows removed from their place" in out
    assert f"backups: {tmp_path / 'r'} " in out, "the plan names where backups go before anything is written"
    assert re.search(r"heap_force_kill|zero the page", out), out
    code, doc, err = repair(lab, table)
    assert code == 0, err
    assert doc["steps"] and doc["lost"]
    lsn_after, _ = _wal_and_files(lab, table)
    assert not _wal_changes(lab, table, lsn, lsn_after), "the dry run wrote WAL about the table"
    sql(lab, "CHECKPOINT")  # anything the dry run dirtied in shared buffers now reaches the files
    assert digest(relation_files(lab, table)) == files, "the dry run changed the files"
    assert not (tmp_path / "r").exists(), "the dry run wrote its run directory"
    sql(lab, f"DROP TABLE {table}")


def _block_bytes(lab: LabCluster, table: str, block: int) -> bytes:
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{table}')")[0]
    with (lab.pgdata / str(path)).open("rb") as fh:
        fh.seek(block * 8192)
        return fh.read(8192)


@pytest.mark.parametrize("version", ["15", "18"])
def test_undo_restores_the_pages(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, version)
    table = make_table(lab, PLAIN)
    corrupt(lab, table, ("item-ids", "--block", "2", "--seed", "1"), f"pg{version}", tmp_path / "corrupt.json")
    sql(lab, "CHECKPOINT")
    damaged = _block_bytes(lab, table, 2)
    code, doc, err = repair(
        lab, table, "--execute", "--yes", "--skip-salvage", "--no-reinsert", "--run-dir", str(tmp_path / "run")
    )
    assert code == 0, err
    manifest = doc["execution"]["manifest"]
    assert manifest and Path(manifest).is_file()
    assert _block_bytes(lab, table, 2) == bytes(8192)
    code, _, err = cli("undo", manifest)
    assert code == 0, err
    assert hashlib.sha256(_block_bytes(lab, table, 2)).digest() == hashlib.sha256(damaged).digest()
    # the corruption's own manifest still applies on top: the original page is back
    code, _, err = cli("undo", str(tmp_path / "corrupt.json"), "--force")
    assert code == 0, err
    sql(lab, f"DROP TABLE {table}")


# ------------------------------------------------------------------------------------------ identifiers, options


@pytest.mark.pg("15")
def test_weird_identifiers(pg: LabCluster, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, "15")
    schema, name = 'Rep "air', "Tab le.X"
    qs, qn = '"Rep ""air"', '"Tab le.X"'
    sql(
        lab,
        f"CREATE SCHEMA IF NOT EXISTS {qs}",
        f'CREATE TABLE {qs}.{qn} (id int PRIMARY KEY, "b c" text)',
        f"INSERT INTO {qs}.{qn} SELECT g, 'row ' || g FROM generate_series(1, 600) g",
        f"SELECT count(*) FROM {qs}.{qn}",
        "CHECKPOINT",
    )
    table = f"{qs}.{qn}"
    corrupt(lab, table, ("tuple-header", "--field", "t_hoff", "--seed", "1"), "pg15", tmp_path / "c.json")
    code, doc, err = repair(lab, f"{schema}.{name}", "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    assert doc["plan"]["lost_count"] == 1 and doc["execution"]["after"]["clean"]
    assert sql(lab, f"SELECT count(*) FROM {table}")[0][0] == 599
    sql(lab, f"DROP SCHEMA {qs} CASCADE")


@pytest.mark.pg("15")
def test_execute_asks_first_and_nothing_to_do(pg: LabCluster, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, "15")
    table = make_table(lab, PLAIN)
    code, doc, err = repair(lab, table)
    assert code == 0 and doc["steps"] == [] and doc["lost"] == [], err
    corrupt(lab, table, ("tuple-header", "--field", "t_hoff", "--seed", "1"), "pg15", tmp_path / "c.json")
    code, _, err = cli("repair", "--dsn", lab.dsn(), "--table", table, "--execute")
    assert code == Exit.USAGE and "--yes" in err
    sql(lab, f"DROP TABLE {table}")


# ------------------------------------------------------------------------------------------ refusals


@pytest.mark.pg("15")
def test_rows_kept_out_come_with_a_load_command_that_runs(pg: LabCluster, labs: CorruptLabs, tmp_path: Path) -> None:
    """--no-reinsert leaves the carved rows in carved.copy and prints the command that loads them; run as printed
    (with the cluster's psql first on PATH) it puts every one back, values intact, generated column recomputed."""
    lab = get_lab(labs, "15")
    table = make_table(lab, PLAIN)
    sql(lab, f"ALTER TABLE {table} ADD COLUMN twice bigint GENERATED ALWAYS AS (id * 2) STORED", "CHECKPOINT")
    truth = ground_truth(lab, table)
    corrupt(lab, table, ("item-ids", "--seed", "1"), "pg15", tmp_path / "corrupt.json")
    conn = ("-h", "127.0.0.1", "-p", str(lab.port), "-U", "postgres", "-d", "postgres")
    run = tmp_path / "run"
    code, out, err = cli("repair", *conn, "-t", table, "--execute", "--yes", "--no-reinsert", "--backup-dir", str(run))
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "were not put back; load them into the table:" in line)
    kept = int(lines[at].split()[0])
    assert kept > 100 and len(sql(lab, f"SELECT 1 FROM {table}")) == len(truth) - kept
    load = subprocess.run(["bash", "-c", lines[at + 1].strip()], env=lab.install.env(), capture_output=True, text=True)
    assert load.returncode == 0, load.stderr
    after = {int(r[0]): str(r[1]) for r in sql(lab, f"SELECT id, md5(t::text) FROM {table} t")}
    assert after == {key: digest for key, digest in truth.values()}
    assert sql(lab, f"SELECT count(*) FROM {table} WHERE twice IS DISTINCT FROM id * 2")[0][0] == 0
    sql(lab, f"DROP TABLE {table}")


@pytest.mark.pg("15")
def test_refuses_without_extensions_or_superuser(pg: LabCluster, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = get_lab(labs, "15")
    db = unique("noext")
    sql(lab, f"CREATE DATABASE {db}")
    try:
        dsn = lab.dsn(db)
        code, _, err = cli("repair", "--dsn", dsn, "--table", "t")
        assert code == 1
        assert "amcheck and pageinspect are not installed" in err and "even for a dry run" in err, err
        assert "CREATE EXTENSION pageinspect;" in err and ";;" not in err, err
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION amcheck")
            conn.execute("CREATE EXTENSION pageinspect")
            conn.execute("CREATE ROLE repair_nosu LOGIN")
        nosu = re.sub(r"user=\S+", "user=repair_nosu", dsn)
        code, _, err = cli("repair", "--dsn", nosu, "--table", "t")
        assert code == 1 and "is not a superuser" in err, err
        code, _, err = cli("repair", "--dsn", dsn, "--table", "no_such_table")
        assert code == Exit.USAGE and "no table" in err, err
    finally:
        sql(lab, f"DROP DATABASE {db}")
        sql(lab, "DROP ROLE IF EXISTS repair_nosu")


@pytest.mark.pg("15")
def test_the_dry_run_needs_no_pg_surgery_and_says_execute_does(
    pg: LabCluster, labs: CorruptLabs, tmp_path: Path
) -> None:
    """Planning reads with amcheck and pageinspect; pg_surgery is only needed to run a kill or freeze step."""
    lab = get_lab(labs, "15")
    table = make_table(lab, PLAIN)
    corrupt(lab, table, ("tuple-header", "--field", "t_hoff", "--seed", "1"), "pg15", tmp_path / "corrupt.json")
    sql(lab, "DROP EXTENSION pg_surgery")
    try:
        code, out, err = cli("repair", "--dsn", lab.dsn(), "--table", table)
        assert code == 1 and "DRY RUN" in out, err
        assert re.search(r"SELECT heap_force_kill\('", out), out  # the statement --execute will run, unqualified
        assert "this plan cannot be executed: pg_surgery is not installed" in err, err
        assert "CREATE EXTENSION pg_surgery;" in err, err
        code, _, err = cli("repair", "--dsn", lab.dsn(), "--table", table, "--execute", "--yes")
        assert code == 1 and "refusing to execute: pg_surgery is not installed" in err, err
    finally:
        sql(lab, "CREATE EXTENSION pg_surgery")
    code, out, err = cli("repair", "--dsn", lab.dsn(), "--table", table)
    assert code == 0 and re.search(r"SELECT \"?\w+\"?\.\"?heap_force_kill\"?\('", out), err
    sql(lab, f"DROP TABLE {table}")


def test_refuses_old_servers() -> None:
    from pgsurgeon.catalog.sql import ServerFacts
    from pgsurgeon.repair.facts import preflight

    server = ServerFacts(
        version_num=130015,
        version="13.15",
        database="postgres",
        database_oid=5,
        usename="postgres",
        superuser=True,
        read_server_files=True,
        in_recovery=False,
        data_directory=None,
        system_identifier="1",
        checksums=False,
        block_size=8192,
        segment_blocks=131072,
        encoding="UTF8",
        next_xid=1000,
        schemas={"amcheck": "public", "pageinspect": "public", "pg_surgery": None},
        pg_surgery_available=False,
    )
    with pytest.raises(PgSurgeonError, match="repair needs postgresql 14 or later"):
        preflight(server)


@pytest.mark.pg("15")
def test_file_steps_need_a_lab(pg: LabCluster, make_lab: Any, tmp_path: Path) -> None:
    """Without the lab marker pgsurgeon does not stop the server: --method file is refused, auto picks SQL."""
    lab = make_lab("15")
    sql(lab, *(f"CREATE EXTENSION IF NOT EXISTS {e}" for e in EXTENSIONS))
    table = make_table(lab, PLAIN)
    corrupt(lab, table, ("header", "--seed", "11"), "pg15", tmp_path / "c.json")
    (lab.pgdata / "pgsurgeon_lab.json").unlink()
    code, doc, err = repair(lab, table, "--method", "file")
    assert code == 1 and "not a lab cluster" in err and "--force-file-writes" in err, err
    code, doc, err = repair(lab, table)
    assert code == 0 and doc["method"] == "sql", err
    assert any(s["kind"] == "rewrite-table" for s in doc["steps"])


@pytest.mark.pg("15")
def test_force_file_writes_waits_for_the_dba(pg: LabCluster, make_lab: Any, tmp_path: Path) -> None:
    """On a cluster that is not a lab, --force-file-writes asks the DBA to stop the server, writes the pages, and
    waits for it to start again (here a thread plays the DBA)."""
    import threading
    import time

    lab = make_lab("15")
    sql(lab, *(f"CREATE EXTENSION IF NOT EXISTS {e}" for e in EXTENSIONS))
    table = make_table(lab, PLAIN)
    truth = ground_truth(lab, table)
    corrupt(lab, table, ("header", "--seed", "11"), "pg15", tmp_path / "c.json")
    (lab.pgdata / "pgsurgeon_lab.json").unlink()
    manifest = tmp_path / "run" / "undo-manifest.json"
    errors: list[BaseException] = []

    def dba() -> None:
        try:
            deadline = time.monotonic() + 120
            while not (tmp_path / "run" / "carved.copy").exists():
                assert time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(0.5)
            lab.stop()
            while not (manifest.exists() and json.loads(manifest.read_text())["state"] == "applied"):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            lab.start()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=dba)
    thread.start()
    code, doc, err = repair(lab, table, "--execute", "--yes", "--force-file-writes", "--run-dir", str(tmp_path / "run"))
    thread.join()
    assert not errors, errors
    assert code == 0, err
    assert doc["plan"]["method"] == "file" and doc["execution"]["manifest"] == str(manifest)
    assert_repaired(lab, table, truth, doc, exact=True)


def test_backups_default_to_the_state_home_never_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgsurgeon.commands.repair import default_run_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = default_run_dir(None, 'public."Orders"')
    assert path.parent == tmp_path / "state" / "pgsurgeon" / "repairs"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the spec says relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = default_run_dir(None, "t")
    assert path.parent == tmp_path / "home" / ".local" / "state" / "pgsurgeon" / "repairs"
    assert tmp_path not in (path, *path.parents[:3]) and not path.exists(), "nothing is written to choose it"
    lab = default_run_dir(tmp_path / "lab", "t")
    assert lab.parent == tmp_path / "lab" / "repairs"
