"""A base backup taken while the server is busy is not damage (issue 32): pg_basebackup runs while pgbench -c 4 and
a TOAST-ed table's updates change the files, throttled (--max-rate) so that the copy overlaps the writes. Pages the
server wrote while they were copied are newer than backup_label's START WAL LOCATION: the scan notes them and does
not judge them, nor any other page against them (btree siblings, index entries into the heap, TOAST pointers into
their chunks). Five backups per form, each scanned with no error and no warning, each having skipped pages newer
than its start (else the load was not concurrent and the test would prove nothing); and a page damaged before the
backup is still an error in a busy backup. Real PostgreSQL 15 and 18, data checksums on."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_pg import create_test_cluster
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

BLCKSZ = 8192
# backups taken in a row per version and form: two in CI, five with `make soak` (the "five times in a row")
ROUNDS = int(os.environ.get("PGSURGEON_BUSY_ROUNDS", "2"))
FORMS = {"plain": ("-Fp",), "tar": ("-Ft",)}
# pgbench -s 10 is ~160 MB of files: at 40 MB/s the copy takes about four seconds, all of it under load
MAX_RATE = "40M"


@dataclass
class Busy:
    cluster: LabCluster
    victim: Path
    """The file of a table no load touches (the damage case writes into it)."""
    victim_index: Path


@contextlib.contextmanager
def _load(cluster: LabCluster) -> Iterator[list[Any]]:
    """pgbench -c 4 in back-to-back rounds and a TOAST-ed table's values rewritten in a loop, until the block ends;
    yields pgbench's finished rounds."""
    stop = threading.Event()
    rounds: list[Any] = []
    failures: list[BaseException] = []

    def bench() -> None:
        while not stop.is_set():
            rounds.append(cluster.run_tool("pgbench", "-c", "4", "-T", "2", "postgres", check=False, timeout=120))

    def toast() -> None:
        try:
            with cluster.connect() as conn:
                i = 0
                while not stop.is_set():
                    conn.execute(
                        "UPDATE docs SET body = repeat(md5((id + %s)::text), 100) WHERE id %% 400 = %s", [i, i % 400]
                    )
                    i += 1
                    time.sleep(0.02)  # a steady trickle: the table must not grow backup after backup
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    workers = [threading.Thread(target=bench), threading.Thread(target=toast)]
    for w in workers:
        w.start()
    try:
        time.sleep(0.5)  # the load is running before the backup starts
        yield rounds
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert not failures, failures
    assert rounds
    for proc in rounds:
        assert proc.returncode == 0, proc.stderr


def _backup(cluster: LabCluster, name: str, form: str) -> Path:
    target = cluster.lab_dir / name
    shutil.rmtree(target, ignore_errors=True)
    # with its checksum verification (the default), as users take backups: a page older than the start that fails
    # its checksum is read again, so a copy torn under its old header does not stay (basebackup.c, sendFile)
    args = ("-c", "fast", f"--max-rate={MAX_RATE}", *FORMS[form])
    cluster.run_tool("pg_basebackup", "-D", str(target), *args, timeout=300)
    return target


def _scan(path: Path) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["scan", str(path), "--format", "json"])
    doc: dict[str, Any] = json.loads(buf.getvalue())
    assert code == (Exit.DAMAGE if doc["summary"]["errors"] else Exit.CLEAN)
    return doc


def _brief(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(f["code"], f["relation"], f["block"], f["message"]) for f in doc["findings"][:8]]


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def busy(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Busy]:
    version = request.param
    # autovacuum on, as on a busy server: it prunes, sets hint bits and truncates while the backup copies
    conf: dict[str, str | int | bool] = {"wal_level": "replica", "max_wal_senders": 4, "autovacuum": True}
    cluster = create_test_cluster(lab_base_dir, f"busy{version}", version, checksums=True, extra_conf=conf)
    try:
        cluster.start()
        cluster.run_tool("pgbench", "-i", "-q", "-s", "10", "postgres", timeout=300)
        with cluster.connect() as conn:
            conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
            conn.execute("ALTER TABLE docs ALTER body SET STORAGE EXTERNAL")
            conn.execute("INSERT INTO docs SELECT g, repeat(md5(g::text), 100) FROM generate_series(1, 2000) g")
            conn.execute("CREATE TABLE victim (id int PRIMARY KEY, label text)")
            conn.execute("INSERT INTO victim SELECT g, repeat('v', 80) || g FROM generate_series(1, 3000) g")
            conn.execute("VACUUM victim")
            conn.execute("CHECKPOINT")
            paths = conn.execute(
                "SELECT pg_relation_filepath('victim'), pg_relation_filepath('victim_pkey')"
            ).fetchone() or ("", "")
        yield Busy(cluster, cluster.pgdata / str(paths[0]), cluster.pgdata / str(paths[1]))
    finally:
        cluster.destroy()


@pytest.mark.parametrize("form", list(FORMS))
def test_a_backup_taken_under_load_scans_clean(busy: Busy, form: str) -> None:
    for n in range(ROUNDS):
        with _load(busy.cluster):
            path = _backup(busy.cluster, f"busy-{form}", form)
        doc = _scan(path)
        summary = doc["summary"]
        # the load overlapped the copy: pages were written while they were copied (else this proves nothing)
        assert summary["after_backup_start"] > 0, (form, n, summary)
        assert doc["backup"]["after_backup_start"], (form, n)
        assert (summary["errors"], summary["warnings"]) == (0, 0), (form, n, _brief(doc))


def _write_at(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def _restamped(page: bytearray, block: int) -> bytes:
    """The page with a valid checksum over its damage: damage "in memory before the write", which only the page
    checks can see."""
    checksum = core.page_checksum(bytes(page), block)
    assert checksum is not None
    page[8:10] = checksum.to_bytes(2, "little")
    return bytes(page)


def test_damage_before_the_backup_is_still_an_error(busy: Busy) -> None:
    """The victim table (no load touches it, its pages older than any backup's start): a heap page's pd_lower above
    pd_upper and a leaf's right-sibling link into nowhere, written into the running server's files (the pages are
    clean in its buffers, so it never writes them back). In a busy backup both are errors, and nothing else is."""
    cluster = busy.cluster
    heap_page = bytearray(busy.victim.read_bytes()[3 * BLCKSZ : 4 * BLCKSZ])
    heap_page[12:14] = (8000).to_bytes(2, "little")  # pd_lower above pd_upper
    leaf_page = bytearray(busy.victim_index.read_bytes()[1 * BLCKSZ : 2 * BLCKSZ])
    special = int.from_bytes(leaf_page[16:18], "little")
    leaf_page[special + 4 : special + 8] = (4000).to_bytes(4, "little")  # btpo_next: past the index's end
    _write_at(busy.victim, 3 * BLCKSZ, _restamped(heap_page, 3))
    _write_at(busy.victim_index, 1 * BLCKSZ, _restamped(leaf_page, 1))
    for form in FORMS:
        with _load(cluster):
            path = _backup(cluster, f"busy-damaged-{form}", form)
        doc = _scan(path)
        assert doc["summary"]["after_backup_start"] > 0, form
        # the two damaged pages, and nothing else (the header's damage takes its line pointers along)
        assert {(f["relation"], f["block"]) for f in doc["findings"]} == {
            ("public.victim", 3),
            ("public.victim_pkey", 1),
        }, (form, _brief(doc))
        found = {(f["code"], f["relation"], f["block"], f["severity"]) for f in doc["findings"]}
        assert ("page_header.lower_gt_upper", "public.victim", 3, "error") in found, form
        assert ("index.sibling_link", "public.victim_pkey", 1, "error") in found, form
