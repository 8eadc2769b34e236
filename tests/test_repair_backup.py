"""``repair --from-backup`` against a real primary with a WAL archive (archive_mode on, archive_command copying into
a directory) and base backups of it (pg_basebackup plain, and tar with gzip): PostgreSQL 15 without data checksums,
18 with them.

Work done after the backup updates rows on the pages that are then damaged (a zeroed heap page, a destroyed item-ID
array, a zeroed TOAST page, a btree page); the repair recovers the backup in a scratch directory with PostgreSQL's
own redo up to the primary's shutdown checkpoint and restores each page from it. Every row comes back with its
current values (against the rows read before the damage), the ledger loses none, and the scratch directories are
gone. With the archive cut short the pages changed after its end are refused unless --accept-older, and listed; with
it they are restored and the ledger names their rows possibly stale. A backup of another cluster is refused. A
repair killed with SIGKILL in the middle of its page writes is undone byte for byte; one stopped with SIGTERM while
its scratch instance recovers leaves no scratch directory behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_archive import wal_archive
from fix_corrupt import TOASTY, cli, digest, make_table, relation_files, sql
from fix_pg import create_test_cluster
from pgsurgeon.lab import LabCluster, run_sql
from pgsurgeon.pgbin import server_user
from test_repair_standby import DRIVER

VERSIONS = [("15", False), ("18", True)]
EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery")


@dataclass
class Archived:
    """A primary whose archive_command copies every finished WAL segment into ``archive``."""

    primary: LabCluster
    archive: Path

    def backup(self, name: str, *tar: str) -> Path:
        """pg_basebackup of the primary: plain, or with ``tar`` (``-Ft -z``) a directory holding base.tar.gz."""
        dest = self.primary.lab_dir / name
        # the checksums of pages other tests damaged on purpose are not the backup's business
        args = ("-D", str(dest), "-c", "fast", "-X", "stream", "--no-verify-checksums", *tar)
        self.primary.run_tool("pg_basebackup", *args, timeout=300)
        return dest


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"pg{v}" for v, _ in VERSIONS])
def archived(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Archived]:
    version, checksums = request.param
    archive = lab_base_dir / f"archive{version}"
    # no timed checkpoint while a repair runs: after one, the first read setting a hint bit on a page to restore logs
    # it whole, and the main test's quiet stop (copies exact by pg_waldump) would depend on the clock
    conf = {**wal_archive(archive), "checkpoint_timeout": "1h"}
    primary = create_test_cluster(lab_base_dir, f"bk{version}", version, checksums=checksums, extra_conf=conf)
    primary.start()
    try:
        for ext in EXTENSIONS:
            run_sql(primary, f"CREATE EXTENSION IF NOT EXISTS {ext}")
        yield Archived(primary, archive)
    finally:
        primary.destroy()


@pytest.fixture
def scratch(lab_base_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR for the run (the server user reaches it): the scratch directories go there, and must be gone after."""
    tmp = Path(tempfile.mkdtemp(prefix="tmpdir-", dir=lab_base_dir))
    tmp.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(tmp))
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


def leftovers(tmp: Path) -> list[Path]:
    """The scratch directories repair made in ``tmp`` (pytest's own go there too)."""
    return sorted(tmp.glob("pgsurgeon-backup-*"))


def truth(lab: LabCluster, table: str) -> dict[int, str]:
    return {int(i): str(m) for i, m in sql(lab, f"SELECT id, md5(t::text) FROM {table} t")}


def damage(lab: LabCluster, table: str, *modes: tuple[str, ...]) -> None:
    for args in modes:
        code, _, err = cli("corrupt", *args, "--dsn", lab.dsn(), "--table", table)
        assert code == 0, err


def repair(a: Archived, table: str, backup: Path, *args: str, archive: Path | None = None) -> tuple[int, Any, str]:
    code, out, err = cli(
        "repair", "--dsn", a.primary.dsn(), "--table", table, "--from-backup", str(backup),
        "--wal-archive", str(archive or a.archive), "--format", "json", *args,
    )  # fmt: skip
    return code, (json.loads(out) if out.strip() else {}), err


def after_backup(lab: LabCluster, table: str) -> None:
    """Work after the backup: every page of the table updated (the damaged ones among them), rows added and gone,
    TOAST values rewritten, and the segment switched so that part of it is archived and part is in pg_wal only."""
    sql(
        lab,
        f"UPDATE {table} SET b = b || ' updated' WHERE id % 3 = 0",
        f"UPDATE {table} SET c = md5(c) || c WHERE id % 20 = 0",
        f"DELETE FROM {table} WHERE id % 11 = 0",
        f"INSERT INTO {table} SELECT g, g % 7, 'late ' || g, NULL FROM generate_series(1001, 1100) g",
        "SELECT pg_switch_wal()",
        f"UPDATE {table} SET a = a + 100 WHERE id % 5 = 0",
        f"SELECT count(*) FROM (SELECT md5(x::text) FROM {table} x) s",
        "CHECKPOINT",
    )


@pytest.mark.parametrize("form", ["plain", "tar"])
def test_every_current_row_comes_back_from_the_backup_and_its_wal(
    archived: Archived, scratch: Path, tmp_path: Path, form: str
) -> None:
    p = archived.primary
    table = make_table(p, TOASTY)
    sql(p, f"CREATE INDEX {table}_a ON {table} (a, id)", "CHECKPOINT")
    backup = archived.backup(f"{table}-base", *(("-Ft", "-z") if form == "tar" else ()))
    after_backup(p, table)
    before = truth(p, table)
    damage(
        p, table,
        ("zero", "--block", "1"),
        ("item-ids", "--block", "3", "--seed", "1"),
        ("zero", "--target", "toast", "--block", "2"),
        ("btree", "--field", "special", "--seed", "1", "--index", f"{table}_a"),
    )  # fmt: skip
    code, doc, err = repair(archived, table, backup, "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    plan = doc["plan"]
    sources = {(c["role"], c["block"]) for c in plan["copies"]}
    assert {("table", 1), ("table", 3), ("toast", 2)} <= sources, sources
    assert any(c["relation"] == f"{table}_a" for c in plan["copies"]), plan["copies"]
    assert {c["source"] for c in plan["copies"]} == {"backup + WAL"}, [c["rejected"] for c in plan["copies"]]
    assert all(c["lsn_copy"] and c["would_lose"] and not c["stale"] for c in plan["copies"])
    assert "backup" in plan["options"]["from_standby"] and "short of" not in plan["options"]["from_standby"]
    # nothing wrote to those pages between the plan's recovery and the primary's stop: that recovery is not redone
    execution = doc["execution"]
    assert [s["copies_exact_by"] for s in execution["steps"] if "copies_exact_by" in s] == ["pg_waldump"], err
    assert execution["after"]["clean"], execution["after"]
    assert execution["ledger_check"]["match"] and execution["ledger"]["lost"] == []
    assert execution["ledger"]["restored"] > 0 and execution["ledger"]["possibly_stale"] == []
    assert truth(p, table) == before
    check = p.run_tool("pg_amcheck", "-d", "postgres", "-t", f"public.{table}", "--heapallindexed", check=False)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
    assert leftovers(scratch) == [], "a scratch directory was left behind"


def cut_archive(a: Archived, table: str, dest: Path) -> tuple[str, dict[int, str]]:
    """A copy of the archive that ends before the segment holding a delete on ``table``'s block 1, that segment
    gone from pg_wal too; (the first segment missing, the rows of block 1 before the update)."""
    (seg,) = sql(a.primary, "SELECT pg_walfile_name(pg_current_wal_insert_lsn())")[0]
    block1 = "ctid >= '(1,0)' AND ctid < '(2,0)'"
    stale_rows = {int(i): str(m) for i, m in sql(a.primary, f"SELECT id, md5(t::text) FROM {table} t WHERE {block1}")}
    # rows deleted after the archive's end: a stale copy of the page brings them back (an update would too, beside
    # the new versions on other pages: a duplicate key the repair's REINDEX refuses). Rows without a TOAST value:
    # the TOAST chunks of a deleted row are deleted with it, and the stale row would point at nothing.
    sql(a.primary, f"DELETE FROM {table} WHERE {block1} AND id % 2 = 1")
    for _ in range(3):  # pg_wal recycles the segment once two checkpoints are past it
        sql(a.primary, "CREATE TABLE wal_filler AS SELECT 1 AS x", "DROP TABLE wal_filler", "SELECT pg_switch_wal()")
        sql(a.primary, "CHECKPOINT")
    deadline = time.monotonic() + 30
    while not (a.archive / seg).exists():
        assert time.monotonic() < deadline, "the segment was not archived"
        time.sleep(0.2)
    assert not (a.primary.pgdata / "pg_wal" / seg).exists(), "pg_wal still holds the segment"
    dest.mkdir()
    for f in a.archive.iterdir():
        if f.name < seg:
            shutil.copy(f, dest / f.name)
    user = server_user()
    os.chown(dest, user.uid, user.gid)
    return seg, stale_rows


def test_an_archive_cut_short_refuses_pages_changed_after_its_end_unless_accepted(
    archived: Archived, scratch: Path, tmp_path: Path
) -> None:
    p = archived.primary
    table = make_table(p, TOASTY)
    backup = archived.backup(f"{table}-base")
    _seg, stale_rows = cut_archive(archived, table, tmp_path / "cut")
    before = truth(p, table)
    damage(p, table, ("item-ids", "--block", "1", "--seed", "1"), ("item-ids", "--block", "4", "--seed", "1"))
    code, doc, err = repair(archived, table, backup, archive=tmp_path / "cut")
    assert code == 0, err
    by_block = {c["block"]: c for c in doc["copies"] if c["role"] == "table"}
    assert "short of" in doc["options"]["from_standby"]
    # block 1 changed after the archive's end: refused, with what the copy holds
    assert by_block[1]["source"] == "none" and "--accept-older" in by_block[1]["rejected"], by_block[1]
    assert "changed on the primary after" in by_block[1]["rejected"] and by_block[1]["lsn_damaged"], by_block[1]
    assert by_block[1]["stale"] and by_block[1]["rows"] == len(stale_rows) and by_block[1]["row_ctids"], by_block[1]
    # block 4 did not: its copy is exact
    assert by_block[4]["source"] == "backup + WAL" and not by_block[4]["stale"], by_block[4]
    assert leftovers(scratch) == []

    code, doc, err = repair(
        archived, table, backup, "--accept-older", "--execute", "--yes", "--run-dir", str(tmp_path / "run"),
        archive=tmp_path / "cut",
    )  # fmt: skip
    assert code == 0, err
    # the WAL the archive lacks is gone from pg_wal too: what changed since cannot be read, so the backup is recovered
    # again up to the primary's stop
    steps = doc["execution"]["steps"]
    assert [s["copies_exact_by"] for s in steps if "copies_exact_by" in s] == ["replay"]
    copies = {c["block"]: c for c in doc["plan"]["copies"] if c["role"] == "table"}
    assert copies[1]["source"] == "backup + WAL" and copies[1]["stale"], copies[1]
    ledger = doc["execution"]["ledger"]
    assert ledger["lost"] == [] and doc["execution"]["ledger_check"]["match"]
    assert {x["ctid"] for x in ledger["possibly_stale"]} == set(copies[1]["row_ctids"])
    # the rows of block 1 are back as they were before the delete the archive lacks; the others are current
    now = truth(p, table)
    assert set(now) == set(before) | set(stale_rows) and set(stale_rows) - set(before)
    assert {i: now[i] for i in stale_rows} == stale_rows
    assert {i: m for i, m in now.items() if i not in stale_rows} == {
        i: m for i, m in before.items() if i not in stale_rows
    }
    assert leftovers(scratch) == []


def test_a_backup_of_another_cluster_is_refused(archived: Archived, lab_base_dir: Path, scratch: Path) -> None:
    p = archived.primary
    table = make_table(p, TOASTY)
    other = create_test_cluster(
        lab_base_dir, f"other{p.version}", str(p.version), extra_conf={"wal_level": "replica", "max_wal_senders": 2}
    )
    try:
        other.start()
        dest = other.lab_dir / "base"
        other.run_tool("pg_basebackup", "-D", str(dest), "-c", "fast", "-X", "stream", timeout=300)
        code, doc, err = repair(archived, table, dest)
    finally:
        other.destroy()
    assert code == 1 and not doc, err
    assert "error: the backup belongs to another cluster: system identifier" in err, err
    assert leftovers(scratch) == []


def test_kill_9_in_the_middle_of_the_writes_then_undo(archived: Archived, tmp_path: Path, scratch: Path) -> None:
    p = archived.primary
    table = make_table(p, TOASTY)
    backup = archived.backup(f"{table}-base")
    after_backup(p, table)
    damage(p, table, ("zero", "--block", "1"), ("item-ids", "--block", "3", "--seed", "1"))
    paths = [str(x) for x in relation_files(p, table)]
    run = tmp_path / "run"
    args = ["repair", "--dsn", p.dsn(), "--table", table, "--from-backup", str(backup)]
    args += ["--wal-archive", str(archived.archive), "--execute", "--yes", "--skip-salvage", "--run-dir", str(run)]
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "PGS_KILL": "write:2",  # one page written
            "PGS_PATHS": json.dumps(paths),
            "PGS_FOUND": str(tmp_path / "found.json"),
        },
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not p.is_running()
    found = json.loads((tmp_path / "found.json").read_text())
    assert digest([Path(x) for x in paths]) != found
    code, _, err = cli("undo", str(run / "undo-manifest.json"))
    assert code == 0, err
    assert digest([Path(x) for x in paths]) == found
    p.start()
    # SIGKILL leaves the scratch directory (nothing runs on the way out); its instance was stopped before the writes
    for d in scratch.iterdir():
        assert not (d / "data" / "postmaster.pid").exists()


def test_sigterm_while_the_backup_recovers_removes_the_scratch(archived: Archived, scratch: Path) -> None:
    p = archived.primary
    table = make_table(p, TOASTY)
    backup = archived.backup(f"{table}-base")
    after_backup(p, table)
    damage(p, table, ("zero", "--block", "1"))
    args = ["repair", "--dsn", p.dsn(), "--table", table, "--from-backup", str(backup), "--progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgsurgeon", *args, "--wal-archive", str(archived.archive)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "recovering it to" in line:
            break
    assert any("recovering it to" in s for s in seen), "".join(seen)
    assert leftovers(scratch), "no scratch directory while recovering"
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    proc.wait(60)
    assert proc.returncode != 0, rest
    assert leftovers(scratch) == [], "".join(seen) + rest
    # nor the scratch instance: no process runs on a directory in it
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            assert str(scratch) not in cmdline.read_bytes().decode(errors="replace"), cmdline
