"""Undelete on a running server is exact: ``salvage --deleted`` with no CHECKPOINT since the rows were written and
removed (their heap and TOAST pages, their commit times only in the server's memory) returns what ``unload --deleted``
returns from the cluster stopped cleanly afterwards, line for line: the rows, their TOAST values, their commit times.
``--deleted-by XID`` finds what the transaction removed inside released savepoints (their xmax is the
subtransaction's XID), labelled with XID, and not what a savepoint rolled back: through pg_subtrans, else through
XID's commit record in pg_wal, never through commit times. Real PostgreSQL 15 and 18.

A session holding a snapshot from before the removals keeps every page from being pruned while salvage reads the
table through SQL, so the stopped cluster still has every removed version for unload to compare against."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_cli import salvage_json
from fix_pg import MakeLab
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.cluster import LabCluster

PREFIX = 7  # block, lp, xmin, xmin_committed_at, deleted_by, deleted_at, how


def _unload(lab: LabCluster, table: str, out: Path, *extra: str) -> tuple[list[str], dict[str, Any]]:
    """The lines of ``table``'s .deleted file from the stopped cluster, sorted, and its entry in the report."""
    env = {**os.environ, "PGSURGEON_PROGRESS_INTERVAL": "0"}
    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "unload", str(lab.pgdata), "--out", str(out), "-t", table, *extra],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    (entry,) = [t for t in json.loads((out / "report.json").read_text())["tables"] if t["name"] == table.split(".")[-1]]
    return _lines(out / entry["deleted_file"]), entry


def _lines(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


def _hold_snapshot(lab: LabCluster) -> psycopg.Connection[tuple[Any, ...]]:
    """A session whose snapshot predates what follows: nothing removed after it can be pruned while it is open."""
    holder = lab.connect(autocommit=False)
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT 1")
    return holder


def _lagging_pages(lab: LabCluster, conn: psycopg.Connection[tuple[Any, ...]], rel: str) -> int:
    """Blocks of ``rel`` whose copy on disk differs from the server's (not written since they changed)."""
    (path, nblocks) = conn.execute(
        "SELECT pg_relation_filepath(%s::regclass), pg_relation_size(%s::regclass) / 8192", (rel, rel)
    ).fetchone() or ("", 0)
    disk = (lab.pgdata / str(path)).read_bytes()
    lagging = 0
    for b in range(int(nblocks)):
        row = conn.execute("SELECT get_raw_page(%s, 'main', %s)", (rel, b)).fetchone()
        server = bytes(row[0]) if row else b""
        lagging += disk[b * 8192 : (b + 1) * 8192] != server
    return lagging


@pytest.mark.parametrize("version", ["15", "18"])
def test_online_undelete_is_exact_without_a_checkpoint(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """6,000 removed row versions (3,000 deleted, 3,000 updated away), every fifth with a 2,560-byte out-of-line
    value, removed by several transactions with track_commit_timestamp on and no checkpoint since the table was
    empty: salvage --deleted on the running server gives the same lines as unload --deleted once it is stopped."""
    lab = make_lab(version, extra_conf={"track_commit_timestamp": True})
    with lab.connect() as conn:
        conn.execute("CREATE EXTENSION pageinspect")
        conn.execute("CREATE TABLE u (id int PRIMARY KEY, v text, big text)")
        conn.execute("ALTER TABLE u ALTER COLUMN big SET STORAGE EXTERNAL")  # out of line, never compressed
        conn.execute("CHECKPOINT")  # the last one: the rows below are only in the server's buffers and WAL
        conn.execute(
            "INSERT INTO u SELECT g, md5(g::text), CASE WHEN g % 5 = 0 THEN"
            " (SELECT string_agg(md5(g::text || i), '') FROM generate_series(1, 80) i) END"
            " FROM generate_series(1, 9000) g"
        )
        holder = _hold_snapshot(lab)
        for r in range(3):  # deleters and updaters: several transactions
            conn.execute("DELETE FROM u WHERE id %% 3 = 0 AND id %% 9 = %s", (3 * r,))
            # updated away: half the TOAST-ed ones get a new value (the old one's chunks deleted), half keep theirs
            conn.execute(
                "UPDATE u SET v = upper(v), big = CASE WHEN id %% 10 = 0 THEN reverse(big) ELSE big END"
                " WHERE id %% 3 = 1 AND id %% 9 = %s",
                (3 * r + 1,),
            )
        toast = str(
            (conn.execute("SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'u'::regclass").fetchone() or [""])[
                0
            ]
        )
        # what the test is about: the TOAST table's pages on disk are behind the server's
        assert _lagging_pages(lab, conn, toast) > 0
    online = salvage_json(lab, "u", tmp_path / "online", "--deleted")
    holder.close()
    lab.stop()
    offline, entry = _unload(lab, "public.u", tmp_path / "offline", "--deleted")
    assert entry["deleted_rows"] == 6000 and not entry["deleted_apart"]
    assert online["deleted"]["kept_apart"] == 0, online["deleted"]
    got = _lines(Path(online["deleted"]["file"]))
    assert len(got) == 6000 and got == offline
    cols = [line.split("\t") for line in got]
    assert sum(1 for c in cols if c[PREFIX + 2] != "\\N") == 1200  # the removed versions with a TOAST value
    assert all(len(c[PREFIX + 2]) == 2560 for c in cols if c[PREFIX + 2] != "\\N")
    assert all(c[3] != "\\N" and c[5] != "\\N" for c in cols)  # every commit time
    assert {c[6] for c in cols} == {"delete", "update"}


SUBTRANS_PER_SEGMENT = 8192 // 4 * 32  # subtrans.c: a 4-byte parent per XID, 32 pages a segment (BLCKSZ 8192)
COMMIT_TS_PER_PAGE = 8192 // 10  # commit_ts.c: SizeOfCommitTimestampEntry (8-byte time, 2-byte origin)
WAL_SUFFIX = "(from the commit record in WAL)"


def _subtrans_parent(pgdata: Path, xid: int) -> int:
    """The parent pg_subtrans on disk names for ``xid`` (0: none, or no such segment)."""
    path = pgdata / "pg_subtrans" / f"{xid // SUBTRANS_PER_SEGMENT:04X}"
    at = xid % SUBTRANS_PER_SEGMENT * 4
    data = path.read_bytes()[at : at + 4] if path.exists() else b""
    return int.from_bytes(data, "little") if len(data) == 4 else 0


def _commit_ts_at(pgdata: Path, xid: int) -> tuple[Path, int]:
    page = xid // COMMIT_TS_PER_PAGE
    return pgdata / "pg_commit_ts" / f"{page // 32:04X}", page % 32 * 8192 + xid % COMMIT_TS_PER_PAGE * 10


def _set_commit_time(pgdata: Path, xid: int, like: int) -> None:
    """Give ``xid`` in pg_commit_ts on disk the commit time of ``like``: two transactions committed in the same
    microsecond."""
    src, a = _commit_ts_at(pgdata, like)
    dst, b = _commit_ts_at(pgdata, xid)
    time = src.read_bytes()[a : a + 8]
    assert time != bytes(8)
    data = bytearray(dst.read_bytes())
    data[b : b + 8] = time
    dst.write_bytes(bytes(data))


def _wipe_subtrans(pgdata: Path) -> None:
    """pg_subtrans as a checkpoint leaves it in a cluster whose XIDs went far past these: nothing about them."""
    for f in (pgdata / "pg_subtrans").iterdir():
        f.write_bytes(bytes(f.stat().st_size))


def _xid(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    return int((conn.execute("SELECT txid_current()").fetchone() or [0])[0]) % (1 << 32)


def _savepoint_work(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    """One transaction: deletes 1-10 itself, 11-20 in a released savepoint, 21-30 in a rolled-back one, updates
    31-40 in a nested pair of released savepoints; returns its XID."""
    with conn.transaction():
        top = _xid(conn)
        conn.execute("DELETE FROM s WHERE id <= 10")
        conn.execute("SAVEPOINT a")
        conn.execute("DELETE FROM s WHERE id BETWEEN 11 AND 20")
        conn.execute("RELEASE a")
        conn.execute("SAVEPOINT b")
        conn.execute("DELETE FROM s WHERE id BETWEEN 21 AND 30")
        conn.execute("ROLLBACK TO b")
        conn.execute("SAVEPOINT c")
        conn.execute("SAVEPOINT d")
        conn.execute("UPDATE s SET v = 'changed' WHERE id BETWEEN 31 AND 40")
        conn.execute("RELEASE d")
        conn.execute("RELEASE c")
    return top


def _check_savepoint_lines(lines: list[str], before: dict[int, str], top: int) -> dict[int, list[str]]:
    """The rows ``_savepoint_work`` removed, each labelled with ``top``: ids -> ``how`` split at spaces for the
    ones removed in a subtransaction."""
    cols = [line.split("\t") for line in lines]
    assert sorted("\t".join(c[PREFIX:]) for c in cols) == sorted(before[i] for i in [*range(1, 21), *range(31, 41)])
    assert {int(c[4]) for c in cols} == {top}
    by_id = {int(c[PREFIX]): c[6] for c in cols}
    assert all(by_id[i] == "delete" for i in range(1, 11))
    subs = {i: by_id[i].split(" ") for i in [*range(11, 21), *range(31, 41)]}
    assert all(
        s[0] == ("delete" if i <= 20 else "update") and s[1:3] == ["in", "subtransaction"] for i, s in subs.items()
    )
    assert all(int(s[3]) > top for s in subs.values())
    return subs


@pytest.mark.parametrize(("version", "commit_ts"), [("15", True), ("15", False), ("18", True), ("18", False)])
def test_deleted_by_includes_released_savepoints(
    make_lab: MakeLab, tmp_path: Path, version: str, commit_ts: bool
) -> None:
    """One transaction deletes rows itself, in a released savepoint and in a rolled-back one, and updates rows in
    a nested pair of released savepoints: --deleted-by its XID returns the rows it removed itself and in the
    released savepoints, labelled with its XID and the subtransaction, online (no checkpoint since: pg_subtrans on
    disk names no parent, its commit record in pg_wal does) and offline (pg_subtrans from the shutdown checkpoint);
    not the rolled-back savepoint's rows (still there), nor another transaction's. With track_commit_timestamp on
    or off: commit times play no part."""
    lab = make_lab(version, extra_conf={"track_commit_timestamp": commit_ts})
    with lab.connect() as conn:
        conn.execute("CREATE EXTENSION pageinspect")
        conn.execute("CREATE TABLE s (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO s SELECT g, 'row ' || g FROM generate_series(1, 400) g")
        conn.execute("CHECKPOINT")
        before = {int(line.split("\t")[0]): line for line in _copy(conn, "s")}
        holder = _hold_snapshot(lab)
        top = _savepoint_work(conn)
        conn.execute("DELETE FROM s WHERE id BETWEEN 41 AND 50")  # another transaction
        assert int((conn.execute("SELECT count(*) FROM s WHERE id BETWEEN 21 AND 30").fetchone() or [0])[0]) == 10

    online = salvage_json(lab, "s", tmp_path / "online", "--deleted-by", str(top))
    subs = _check_savepoint_lines(_lines(Path(online["deleted"]["file"])), before, top)
    # what the test is about: pg_subtrans on disk (still, after salvage read it) names no parent of these
    sub_xids = {int(s[3]) for s in subs.values()}
    assert all(_subtrans_parent(lab.pgdata, x) == 0 for x in sub_xids)
    assert all(" ".join(s[4:]) == WAL_SUFFIX for s in subs.values())
    record = online["deleted"]["commit_record"]
    assert record["xid"] == top and sub_xids <= set(record["subxacts"]), record
    holder.close()
    lab.stop()
    offline, _ = _unload(lab, "public.s", tmp_path / "offline", "--deleted-by", str(top))
    # the shutdown checkpoint wrote pg_subtrans: parents from there
    assert {" ".join(s[4:]) for s in _check_savepoint_lines(offline, before, top).values()} == {""}
    every, _ = _unload(lab, "public.s", tmp_path / "every", "--deleted")
    assert len(every) == 40 and {int(line.split("\t")[4]) for line in every if int(line.split("\t")[PREFIX]) <= 40} == {
        top
    }


@pytest.mark.parametrize("version", ["15", "18"])
def test_back_to_back_transactions_are_never_mixed(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    """Two transactions with released savepoints commit back to back, the second given the first's commit time in
    pg_commit_ts (the same microsecond), and pg_subtrans knows neither's subtransactions (as after XIDs went far
    past them): --deleted-by each returns only its own rows, its subtransactions tied to it by its commit record in
    pg_wal. Without pg_wal, the subtransactions' rows are not listed and the report says why."""
    lab = make_lab(version, extra_conf={"track_commit_timestamp": True})
    with lab.connect() as conn:
        conn.execute("CREATE TABLE s (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO s SELECT g, 'row ' || g FROM generate_series(1, 400) g")
        before = {int(line.split("\t")[0]): line for line in _copy(conn, "s")}
        holder = _hold_snapshot(lab)
        first = _savepoint_work(conn)
        with conn.transaction():
            second = _xid(conn)
            conn.execute("DELETE FROM s WHERE id BETWEEN 101 AND 110")
            conn.execute("SAVEPOINT e")
            conn.execute("DELETE FROM s WHERE id BETWEEN 111 AND 120")
            conn.execute("RELEASE e")
    holder.close()
    lab.stop()
    _wipe_subtrans(lab.pgdata)
    _set_commit_time(lab.pgdata, second, like=first)
    for x in range(first + 1, second + 1):  # its subtransactions, and the second transaction's own
        _set_commit_time(lab.pgdata, x, like=first)

    got, _ = _unload(lab, "public.s", tmp_path / "first", "--deleted-by", str(first))
    subs = _check_savepoint_lines(got, before, first)
    assert {" ".join(s[4:]) for s in subs.values()} == {WAL_SUFFIX}
    got, _ = _unload(lab, "public.s", tmp_path / "second", "--deleted-by", str(second))
    cols = [line.split("\t") for line in got]
    assert sorted(int(c[PREFIX]) for c in cols) == list(range(101, 121))
    assert {int(c[4]) for c in cols} == {second}
    assert {c[6].split(" in subtransaction ")[0] for c in cols} == {"delete"}
    assert sum(1 for c in cols if c[6].endswith(WAL_SUFFIX)) == 10

    # WAL recycled: only what the first transaction removed itself, and a note with the next step
    (lab.pgdata / "pg_wal").rename(lab.pgdata / "pg_wal.away")
    (lab.pgdata / "pg_wal").mkdir()
    got, _ = _unload(lab, "public.s", tmp_path / "nowal", "--deleted-by", str(first))
    assert sorted(int(line.split("\t")[PREFIX]) for line in got) == list(range(1, 11))
    notes = json.loads((tmp_path / "nowal" / "report.json").read_text())["notes"]
    (note,) = [n for n in notes if "commit record" in n]
    assert f"the commit record of XID {first} is no longer in pg_wal" in note and "without --deleted-by" in note


def _copy(conn: psycopg.Connection[tuple[Any, ...]], table: str) -> list[str]:
    lines: list[str] = []
    with conn.cursor().copy(f"COPY {table} TO STDOUT") as cp:
        for chunk in cp:
            lines.extend(bytes(chunk).decode().splitlines())
    return lines
