"""Keeping the server out of the way while files are damaged or restored.

A stopped cluster is written directly. A running *lab* cluster is stopped (its shutdown checkpoint
writes every dirty buffer, so the files are current), written, and started again, so the server
reads the damage from disk. Any other running server is refused: pgsurgeon does not stop servers it
did not create.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from pgsurgeon.datadir import postmaster_pid as postmaster_pid  # re-exported for the commands
from pgsurgeon.errors import LabError, PgSurgeonError
from pgsurgeon.lab import META_NAME, LabCluster


def lab_cluster_for(pgdata: Path) -> LabCluster | None:
    """The lab cluster whose data directory is ``pgdata`` (``<lab>/data`` next to ``<lab>/lab.json``)."""
    lab_dir = pgdata.resolve().parent
    if not (lab_dir / META_NAME).is_file():
        return None
    try:
        lab = LabCluster.load(lab_dir.name, lab_dir.parent)
    except PgSurgeonError:
        return None
    return lab if lab.pgdata.resolve() == pgdata.resolve() else None


@contextlib.contextmanager
def server_stopped(
    pgdata: Path, say: Callable[[str], None], *, may_refuse: bool = False
) -> Iterator[LabCluster | None]:
    """Run the body with no server on ``pgdata``: stop a running lab cluster and start it again after
    (also when the body fails); refuse any other running server. Yields the lab that was stopped. ``may_refuse``:
    the body damaged what the server needs to start, so a refusal is reported with the server's own words."""
    pid = postmaster_pid(pgdata)
    if pid is None:
        yield None
        return
    lab = lab_cluster_for(pgdata)
    if lab is None:
        raise PgSurgeonError(
            f"a server is running on {pgdata} (pid {pid}) and it is not a lab cluster pgsurgeon can restart",
            hint="stop it yourself (pg_ctl stop -D …), run again with --pgdata and --file, then start it",
        )
    say(f"server: lab cluster {lab.name} is running; stopping it (its shutdown checkpoint writes all buffers)")
    lab.stop()
    try:
        yield lab
    finally:
        try:
            lab.start()
        except LabError:
            if not may_refuse:
                raise
            say(f"server: lab cluster {lab.name} does not start now: {last_complaint(lab.log_path)}")
        else:
            say(f"server: lab cluster {lab.name} started again; it reads the files as they are now")


def last_complaint(log: Path) -> str:
    """The server log's last FATAL or PANIC line (what it said when it refused to start)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no server log)"
    for line in reversed(lines[-200:]):
        for word in ("PANIC:", "FATAL:"):
            if word in line:
                return line[line.index(word) :].strip()
    return "(the log names no reason)"
