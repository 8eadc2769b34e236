"""``repair --from-standby`` against a real primary and its streaming standby (pg_basebackup -R) on localhost:
PostgreSQL 15 without data checksums, 18 with them.

The primary is damaged in several ways at once (a zeroed heap page, a destroyed item-ID array, a zeroed TOAST page,
a damaged btree page, a damaged GIN page, visibility map bits set over an aborted insert); the repair restores each
page from the standby's copy. A page of each other index kind (hash, BRIN, GiST, SP-GiST) alone is restored with no
REINDEX. Every row comes back with its exact
values (compared with the rows read before the damage), the ledger loses none, amcheck, pg_dump and diagnose are
clean, and the standby's files are the same before and after (hashed once the repair is done with it, the standby
made to write out its buffers). Refusals: a paused standby is waited for, then refused; a standby of another
cluster is refused; a damaged copy is rejected for its page only. A repair killed with SIGKILL at each point of
its page writes (before the manifest, before the first page, after one, before the manifest says applied) is undone
byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import PLAIN, TOASTY, cli, digest, make_table, relation_filepaths, relation_files, sql
from fix_standby import Pair, make_pair, standby_files
from pgsurgeon.lab import LabCluster

VERSIONS = [("15", False), ("18", True)]
DAMAGE = (
    ("zero", "--block", "1"),
    ("item-ids", "--block", "3", "--seed", "1"),
    ("zero", "--target", "toast", "--block", "2"),
)
# a btree page of a second index: with the only index damaged, nothing would point into the zeroed heap page
BTREE = ("btree", "--field", "special", "--seed", "1", "--index", "{table}_a")
GIN_FIELD = ("gin", "--field", "entry-leaf", "--seed", "7", "--keep-checksum-valid", "--target", "index")


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"pg{v}" for v, _ in VERSIONS])
def pair(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Pair]:
    version, checksums = request.param
    made = make_pair(lab_base_dir, f"sb{version}", version, checksums)
    try:
        yield made
    finally:
        made.close()


def truth(lab: LabCluster, table: str) -> dict[int, str]:
    return {int(i): str(m) for i, m in sql(lab, f"SELECT id, md5(t::text) FROM {table} t")}


def damage(pair: Pair, table: str, *modes: tuple[str, ...]) -> None:
    for args in modes:
        code, _, err = cli("corrupt", *args, "--dsn", pair.primary.dsn(), "--table", table)
        assert code == 0, err


def repair(pair: Pair, table: str, *args: str, standby: LabCluster | None = None) -> tuple[int, dict[str, Any], str]:
    source = (standby or pair.standby).dsn()
    code, out, err = cli(
        "repair", "--dsn", pair.primary.dsn(), "--table", table, "--from-standby", source, "--format", "json", *args
    )
    return code, (json.loads(out) if out.strip() else {}), err


def settled(pair: Pair) -> None:
    """The standby caught up and its buffers written out (a restartpoint)."""
    pair.caught_up()
    sql(pair.standby, "CHECKPOINT")


def aborted_insert(lab: LabCluster, table: str) -> int:
    """The table frozen (every map bit set), then one insert rolled back: the block it landed on (its map bits
    cleared by the insert, on the primary and, replayed, on the standby)."""
    sql(lab, f"VACUUM (FREEZE) {table}")
    with lab.connect(autocommit=False) as conn:
        row = conn.execute(
            f"INSERT INTO {table} (id, a, b) VALUES (1000000, 0, 'aborted') RETURNING (ctid::text::point)[0]::int"
        ).fetchone()
        assert row is not None
        conn.rollback()
    return int(row[0])


def test_every_row_comes_back_from_the_standby(pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = pair.primary
    table = make_table(p, TOASTY)
    sql(
        p,
        f"CREATE INDEX {table}_a ON {table} (a, id)",
        f"CREATE INDEX {table}_g ON {table} USING gin ((ARRAY[a, id % 50]))",
        # no autovacuum on the primary between the hashes below (it would clean the GIN pending list, replayed)
        f"ALTER TABLE {table} SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)",
    )
    before = truth(p, table)
    vm_block = aborted_insert(p, table)
    assert vm_block not in (1, 3)
    sql(p, "CHECKPOINT")
    damage(pair, table, *DAMAGE, tuple(a.format(table=table) for a in BTREE), (*GIN_FIELD, "--index", f"{table}_g"))
    damage(pair, table, ("vm", "--field", "all-frozen", "--block", str(vm_block)))
    # A first dry run: its reads on the primary set hints there (index entries into the zeroed pages marked dead);
    # with checksums the server WAL-logs them (full-page images), and the standby replays them. That is the
    # primary's WAL, not repair writing to the standby: the files are hashed after it.
    assert repair(pair, table)[0] == 0
    settled(pair)
    paths = relation_filepaths(p, table)
    files = standby_files(pair.standby, paths)

    code, doc, err = repair(pair, table)
    assert code == 0, err
    copies = doc["copies"]
    sources = {(c["role"], c["block"]): c["source"] for c in copies}
    assert {("table", 1), ("table", 3), ("toast", 2)} <= set(sources), sources
    assert {f"{table}_a", f"{table}_g"} <= {c["relation"] for c in copies}, copies
    assert any(c["fork"] == "vm" and c["block"] == 0 for c in copies), copies
    assert set(sources.values()) == {"standby"}, [
        (c["relation"], c["fork"], c["block"], c["rejected"]) for c in copies if c["rejected"]
    ]
    # every page comes back: nothing is zeroed, no map bit cleared by hand
    actions = {w["action"] for s in doc["steps"] for w in s["writes"]}
    assert actions == {"restore"}, actions
    assert all(c["lsn_copy"] and c["would_lose"] for c in copies)
    assert doc["ledger"]["lost"] == [] and doc["lost_count"] == 0 and doc["ledger"]["restored"] > 0
    # the dry run read the standby only
    settled(pair)
    assert standby_files(pair.standby, paths) == files

    # The standby's files while the primary is stopped for the page writes: once the standby has replayed the
    # shutdown checkpoint (its restartpoint written out), before repair fetches the copies again and after, nothing
    # else replays. Before the primary stops, its own WAL (hints it WAL-logs as repair's steps read it) may still
    # change them: that is replication, not repair.
    from pgsurgeon.repair import restore

    seen: dict[str, dict[str, str]] = {}
    fetch_again = restore.fetch_again

    def watched(source: Any, writes: Any, rels: Any, pgdata: Path, *args: Any, **kwargs: Any) -> Any:
        source.wait(restore._shutdown_checkpoint(pgdata), "shutdown checkpoint", 60, lambda _: None)
        sql(pair.standby, "CHECKPOINT")
        seen["before"] = standby_files(pair.standby, paths)
        got = fetch_again(source, writes, rels, pgdata, *args, **kwargs)
        sql(pair.standby, "CHECKPOINT")
        seen["after"] = standby_files(pair.standby, paths)
        return got

    monkeypatch.setattr(restore, "fetch_again", watched)
    # without the salvage step: its reads (every TOAST value) would set and WAL-log more hints on the primary
    code, doc, err = repair(pair, table, "--execute", "--yes", "--skip-salvage", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    assert seen["after"] == seen["before"], "the standby's files changed while repair read from it"
    execution = doc["execution"]
    assert execution["after"]["clean"], execution["after"]
    assert execution["ledger_check"]["match"] and execution["ledger"]["lost"] == []
    assert execution["ledger"]["kept_apart"] == [] and execution["reinserted"] == []
    assert truth(p, table) == before
    dump = p.run_tool("pg_dump", "-d", "postgres", "-t", table, "-f", "/dev/null", check=False)
    assert dump.returncode == 0, dump.stderr
    check = p.run_tool("pg_amcheck", "-d", "postgres", "-t", f"public.{table}", "--heapallindexed", check=False)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
    if p.install.major >= 18:
        sql(p, f"SELECT gin_index_check('{table}_g')")
    code, out, err = cli("diagnose", "--dsn", p.dsn(), "--table", table, "--format", "json")
    assert code == 0, out + err
    # the map bits over the aborted insert are clear again: an index-only scan visits the heap and skips it
    assert (
        sql(p, f"SELECT count(*) FROM pg_visibility_map('{table}') WHERE blkno = {vm_block} AND all_visible")[0][0] == 0
    )


def test_a_btree_page_alone_is_restored_without_reindex(pair: Pair, tmp_path: Path) -> None:
    p = pair.primary
    table = make_table(p, PLAIN)
    before = truth(p, table)
    damage(pair, table, ("btree", "--field", "special", "--seed", "1"))
    code, doc, err = repair(pair, table, "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    plan = doc["plan"]
    assert [(c["relation"], c["source"]) for c in plan["copies"]] == [(f"{table}_pkey", "standby")], plan["copies"]
    assert "reindex" not in [s["kind"] for s in plan["steps"]]
    assert doc["execution"]["after"]["clean"] and doc["execution"]["ledger_check"]["match"]
    assert truth(p, table) == before
    check = p.run_tool("pg_amcheck", "-d", "postgres", "-t", f"public.{table}", "--heapallindexed", check=False)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr


# one page of each other index kind damaged (the checksum kept valid: the page checks must see the damage)
KINDS = (
    ("hash", "hash (b)", ("hash", "--field", "bucket")),
    ("brin", "brin (id) WITH (pages_per_range = 2)", ("brin", "--field", "revmap")),
    ("gist", "gist (point(id, a))", ("gist", "--field", "flags")),
    # a damaged inner tuple's downlink shows only as pages no downlink reaches (no copy of those mends it): a
    # damaged page header then, which the page checks see on the page itself
    ("spgist", "spgist (b)", ("header", "--field", "pd_special", "--block", "3")),
)


def test_every_index_kind_is_restored_without_reindex(pair: Pair, tmp_path: Path) -> None:
    p = pair.primary
    table = make_table(p, PLAIN)
    sql(p, f"INSERT INTO {table} SELECT g, g % 7, 'row ' || g FROM generate_series(1001, 6000) g")
    sql(p, *(f"CREATE INDEX {table}_{am} ON {table} USING {how}" for am, how, _ in KINDS), "CHECKPOINT")
    before = truth(p, table)
    for am, _, args in KINDS:
        damage(
            pair,
            table,
            (*args, "--seed", "3", "--keep-checksum-valid", "--target", "index", "--index", f"{table}_{am}"),
        )
    code, doc, err = repair(pair, table)
    assert code == 0, err
    copies = doc["copies"]
    assert {c["relation"] for c in copies} == {f"{table}_{am}" for am, _, _ in KINDS}, copies
    assert {c["source"] for c in copies} == {"standby"}, [c["rejected"] for c in copies]
    assert "reindex" not in [s["kind"] for s in doc["steps"]], doc["steps"]
    for am, _, _ in KINDS:
        assert any(f"index {table}_{am}: its" in n and "no REINDEX is needed" in n for n in doc["notes"]), doc["notes"]
    code, doc, err = repair(pair, table, "--execute", "--yes", "--skip-salvage", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    assert doc["execution"]["after"]["clean"], doc["execution"]["after"]
    assert truth(p, table) == before
    code, out, err = cli("diagnose", "--dsn", p.dsn(), "--table", table, "--format", "json")
    assert code == 0 and not json.loads(out)["findings"], out[:2000]


def test_next_steps_name_the_standby_and_the_archive(pair: Pair, tmp_path: Path) -> None:
    """diagnose, explain and salvage offer repair --from-standby (pg_stat_replication has a row) and --from-backup
    (archive_mode on with a command); the --from-standby line runs as printed once STANDBY is set."""
    p = pair.primary
    table = make_table(p, PLAIN)
    damage(pair, table, ("zero", "--block", "1"))
    pair.streaming()
    conn = ("-h", "127.0.0.1", "-p", str(p.port), "-U", "postgres", "-d", "postgres")
    code, out, err = cli("diagnose", *conn, "-t", table)
    assert code == 2, err
    lines = [ln.strip() for ln in out.splitlines()]
    standby = next(ln for ln in lines if "--from-standby" in ln)
    assert standby.startswith(f'pgsurgeon repair {" ".join(conn)} -t {table} --from-standby "$STANDBY"'), standby
    assert any(f'-t {table} --from-backup "$BACKUP" --wal-archive "$WALARCHIVE"' in ln for ln in lines), out
    bindir = str(Path(sys.executable).parent)
    run = subprocess.run(
        ["bash", "-c", standby],
        env={**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"], "STANDBY": pair.standby.dsn()},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "good copies from standby" in run.stdout and "source standby" in run.stdout, run.stdout
    # explain, with a connection: the same two options for the page the server would name
    (path,) = sql(p, f"SELECT pg_relation_filepath('{table}')")[0]
    code, out, err = cli("explain", *conn, "--format", "json", f"ERROR:  invalid page in block 1 of relation {path}")
    assert code == 0, err
    commands = [s["command"] for e in json.loads(out)["explained"] for s in e["next"]]
    assert f'pgsurgeon repair {" ".join(conn)} -t {table} --from-standby "$STANDBY"' in commands, commands
    assert any("--from-backup" in c for c in commands), commands
    # salvage, which can only carve the zeroed page's rows (from nothing): it offers the copies
    code, out, err = cli("salvage", *conn, "-t", table, "--out", str(tmp_path / "out"))
    assert "good copies: 1 standby(s) stream from this server and WAL archiving is on" in out, out
    assert f'-t public.{table} --from-standby "$STANDBY"' in out, out
    # a server with neither: no such line
    other = pair.standby
    code, out, err = cli(
        "explain", "-d", other.dsn(), "--format", "json", "ERROR:  invalid page in block 1 of relation " + path
    )
    commands = [s["command"] for e in json.loads(out)["explained"] for s in e["next"]]
    assert not any("--from-standby" in c for c in commands), commands


def test_a_damaged_copy_is_rejected_for_its_page_only(pair: Pair, tmp_path: Path) -> None:
    p = pair.primary
    table = make_table(p, PLAIN)
    before = truth(p, table)
    damage(pair, table, ("zero", "--block", "1"), ("item-ids", "--block", "3", "--seed", "1"))
    settled(pair)
    # the standby's own copy of block 3 is damaged too (its item-ID array, on its disk)
    (path,) = sql(p, f"SELECT pg_relation_filepath('{table}')")[0]
    code, _, err = cli(
        "corrupt", "item-ids", "--block", "3", "--seed", "2", "-D", str(pair.standby.pgdata), "--file", path
    )
    assert code == 0, err
    pair.caught_up()
    code, doc, err = repair(pair, table)
    assert code == 0, err
    by_block = {c["block"]: c for c in doc["copies"] if c["role"] == "table"}
    assert by_block[1]["source"] == "standby" and not by_block[1]["rejected"]
    assert by_block[3]["source"] == "none" and by_block[3]["rejected"], by_block[3]
    assert "damaged" in by_block[3]["rejected"] or "checksum" in by_block[3]["rejected"], by_block[3]
    # block 3 gets today's plan (zeroed, its rows carved), block 1 is restored
    writes = {(w["block"], w["action"]) for s in doc["steps"] for w in s["writes"] if w["relation"] == table}
    assert writes == {(1, "restore"), (3, "zero")}
    assert {int(c["ctid"].strip("()").split(",")[0]) for c in doc["lost"]} == {3}
    # executed: block 1 restored, block 3 zeroed with its rows carved and put back; the table is whole again
    code, doc, err = repair(pair, table, "--execute", "--yes", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    execution = doc["execution"]
    assert execution["after"]["clean"] and execution["ledger_check"]["match"], execution["after"]
    assert execution["ledger"]["restored_blocks"] == [1] and execution["ledger"]["restored"] > 0
    assert set(truth(p, table)) == set(before)


def test_a_paused_standby_is_waited_for_then_refused(pair: Pair) -> None:
    p = pair.primary
    table = make_table(p, PLAIN)
    damage(pair, table, ("zero", "--block", "1"))
    pair.caught_up()
    sql(pair.standby, "SELECT pg_wal_replay_pause()")
    try:
        sql(p, "CREATE TABLE wal_after_pause AS SELECT 1 AS x", "DROP TABLE wal_after_pause")
        code, doc, err = repair(pair, table, "--standby-timeout", "3", "--progress")
    finally:
        sql(pair.standby, "SELECT pg_wal_replay_resume()")
    assert code == 1 and not doc, err
    assert "waiting for the standby to replay" in err, err
    assert "error: the standby has replayed to" in err and "its replay is paused" in err, err
    assert "hint: resume replay on the standby" in err, err


def test_a_standby_of_another_cluster_is_refused(pair: Pair, lab_base_dir: Path) -> None:
    p = pair.primary
    table = make_table(p, PLAIN)
    other = make_pair(lab_base_dir, f"other{p.version}", str(p.version), p.checksums)
    try:
        code, doc, err = repair(pair, table, standby=other.standby)
    finally:
        other.close()
    assert code == 1 and not doc, err
    assert "error: the standby belongs to another cluster: system identifier" in err, err
    code, doc, err = repair(pair, table, standby=p)  # the primary itself is no standby
    assert code == 1 and "is not a standby" in err, err


DRIVER = """
import hashlib, json, os, signal, sys
from pgsurgeon.journal import apply
from pgsurgeon.journal.manifest import Manifest
from pgsurgeon.cli import main
where, _, at = os.environ["PGS_KILL"].partition(":")
def found():  # the primary is stopped, nothing written yet: its files as repair found them
    if not os.path.exists(os.environ["PGS_FOUND"]):
        paths = json.loads(os.environ["PGS_PATHS"])
        digests = {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths}
        open(os.environ["PGS_FOUND"], "w").write(json.dumps(digests))
real_write, real_state, calls = apply._write_unsynced, Manifest.write, [0]
def write_at(files, path, offset, data):
    calls[0] += 1
    found()
    if where == "write" and calls[0] == int(at):  # the pages before it written, in the kernel's cache, not fsynced
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(files, path, offset, data)
def write_state(self, state, **extra):
    found()
    if where == "state" and state == at:  # before the manifest is written in that state
        os.kill(os.getpid(), signal.SIGKILL)
    real_state(self, state, **extra)
apply._write_unsynced, Manifest.write = write_at, write_state
sys.exit(main(sys.argv[1:]))
"""

KILL_POINTS = {
    "state:applying": "the old pages saved, no manifest yet: nothing was written",
    "write:1": "the manifest on disk, no page written",
    "write:2": "one page written",
    "state:applied": "every page written and fsynced, the manifest still says applying",
}


@pytest.mark.parametrize("kill", list(KILL_POINTS), ids=list(KILL_POINTS.values()))
def test_kill_9_during_the_writes_then_undo(pair: Pair, tmp_path: Path, kill: str) -> None:
    p = pair.primary
    table = make_table(p, TOASTY)
    damage(pair, table, ("zero", "--block", "1"), ("item-ids", "--block", "3", "--seed", "1"))
    pair.caught_up()
    paths = [str(x) for x in relation_files(p, table)]
    run = tmp_path / "run"
    args = ["repair", "--dsn", p.dsn(), "--table", table, "--from-standby", pair.standby.dsn(), "--execute", "--yes"]
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *args, "--skip-salvage", "--run-dir", str(run)],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "PGS_KILL": kill,
            "PGS_PATHS": json.dumps(paths),
            "PGS_FOUND": str(tmp_path / "found.json"),
        },
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not p.is_running()  # killed while the primary was stopped for the writes
    found = json.loads((tmp_path / "found.json").read_text())
    manifest = run / "undo-manifest.json"
    if kill == "state:applying":
        assert not manifest.exists() and digest([Path(x) for x in paths]) == found
    else:
        assert (digest([Path(x) for x in paths]) == found) == (kill == "write:1")
        code, _, err = cli("undo", str(manifest))
        assert code == 0, err
        assert digest([Path(x) for x in paths]) == found
    p.start()
