"""A primary and its streaming standby on localhost, as lab clusters run by the unprivileged server user: the
primary with ``wal_level = replica`` (and WAL archiving on, into nowhere), the standby made with
``pg_basebackup -R`` (it streams from the primary and replays, a hot standby)."""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from fix_pg import create_test_cluster
from pgsurgeon.lab import LabCluster, run_sql

# archiving on too (its command keeps nothing): the next steps name --from-backup where the settings show an archive
REPLICATION: dict[str, str | int | bool] = {
    "wal_level": "replica",
    "max_wal_senders": 4,
    "hot_standby": True,
    # no replication slot: a standby that lags when the primary restarts (corrupt stops it) finds its WAL kept
    "wal_keep_size": "512MB",
    "archive_mode": "on",
    "archive_command": "true",
}
EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery", "pg_visibility")


@dataclass
class Pair:
    primary: LabCluster
    standby: LabCluster

    def caught_up(self, timeout: float = 60) -> None:
        """Wait until the standby has replayed everything the primary has written."""
        (target,) = run_sql(self.primary, "SELECT pg_current_wal_lsn()")[0]
        deadline = time.monotonic() + timeout
        while True:
            (ok,) = run_sql(self.standby, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", params=[str(target)])[0]
            if ok:
                return
            assert time.monotonic() < deadline, "the standby did not catch up"
            time.sleep(0.2)

    def streaming(self, timeout: float = 60) -> None:
        """Wait until the primary lists the standby in pg_stat_replication (it reconnects a few seconds after the
        primary restarts)."""
        deadline = time.monotonic() + timeout
        while not run_sql(self.primary, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")[0][0]:
            assert time.monotonic() < deadline, "the standby does not stream"
            time.sleep(0.2)

    def close(self) -> None:
        for lab in (self.standby, self.primary):
            lab.destroy()


def make_pair(base: Path, name: str, version: str, checksums: bool) -> Pair:
    primary = create_test_cluster(base, f"{name}-p", version, checksums=checksums, extra_conf=REPLICATION)
    primary.start()
    try:
        for ext in EXTENSIONS:
            run_sql(primary, f"CREATE EXTENSION IF NOT EXISTS {ext}")
        standby = standby_of(primary, base, f"{name}-s")
    except BaseException:
        primary.destroy()
        raise
    return Pair(primary, standby)


def standby_of(primary: LabCluster, base: Path, name: str) -> LabCluster:
    """A lab cluster whose data directory is a pg_basebackup -R of ``primary``'s, started as its standby."""
    standby = create_test_cluster(base, name, str(primary.version), checksums=primary.checksums, extra_conf=REPLICATION)
    try:
        shutil.rmtree(standby.pgdata)
        primary.run_tool("pg_basebackup", "-D", str(standby.pgdata), "-R", "-c", "fast", "-X", "stream", timeout=300)
        standby._write_conf()  # its own port and socket directory: the backup copied the primary's settings
        standby.start()
    except BaseException:
        standby.destroy()
        raise
    return standby


def standby_files(standby: LabCluster, paths: list[str]) -> dict[str, str]:
    """sha256 of the standby's files of these relations (every fork and segment)."""
    out: dict[str, str] = {}
    for rel in paths:
        base = standby.pgdata / rel
        for p in sorted(base.parent.glob(base.name + "*")):
            out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
    assert out, "no relation files on the standby"
    return out
