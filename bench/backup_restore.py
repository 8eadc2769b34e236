"""The scratch recovery of ``repair --from-backup`` against a plain restore plus PostgreSQL's own replay (issue 31).

    python bench/backup_restore.py --gb 1 --forms plain tar-gz

A PostgreSQL 15 lab cluster with ``archive_mode = on`` (archive_command copying into a directory) and a table of
about ``--gb`` GB; one ``pg_basebackup`` per form; then work after the backup (an UPDATE of ``--update`` of the
rows: WAL to replay, part archived, part in pg_wal), and the primary stopped cleanly. Side by side, per form:

* **scratch recovery**: ``BackupCopySource.wait`` up to the primary's shutdown checkpoint, as ``repair --execute``
  runs it (extraction through the backup reader, the throwaway instance recovering from the archive and pg_wal,
  promoted, stopped);
* **plain restore + replay**: ``cp -a`` of the plain backup (``tar -xzf`` of a gzip tar), the same recovery
  settings (repair/scratch.conf, same restore_command and target), ``pg_ctl start -w`` until promoted, ``pg_ctl
  stop``: what a DBA would run by hand.

Each is timed once per form after a warm-up read of the backup (the page cache holds it for both)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fix_archive import wal_archive
from fix_pg import create_test_cluster
from pgsurgeon import core
from pgsurgeon.lab import LabCluster
from pgsurgeon.pgbin import run_as, server_user
from pgsurgeon.repair.backupsource import POLL_S, BackupCopySource, _ready, scratch_conf
from pgsurgeon.repair.copies import lsn_text, parse_lsn
from pgsurgeon.repair.waltouch import PageRef

FORMS = {"plain": (), "tar-gz": ("-Ft", "-z")}


def build(base: Path, gb: float, update: float) -> tuple[LabCluster, Path, dict[str, Path]]:
    archive = base / "archive"
    conf = {**wal_archive(archive), "max_wal_size": "4GB"}
    c = create_test_cluster(base, "restore", "15", checksums=False, extra_conf=conf)
    c.start()
    rows = int(gb * 1e9 / 150)  # ~150 bytes a row on disk (tuple, line pointer, primary key entry)
    with c.connect() as conn:
        conn.execute("CREATE TABLE big (id int PRIMARY KEY, a int, label text) WITH (autovacuum_enabled = off)")
        conn.execute(f"INSERT INTO big SELECT g, g % 7, repeat('x', 80) || g FROM generate_series(1, {rows}) g")
        conn.execute("VACUUM FREEZE big")
        conn.execute("CHECKPOINT")
        size = conn.execute("SELECT pg_database_size('postgres') / 1000000").fetchone()
    print(f"database {size[0] if size else '?'} MB, {rows} rows")
    backups: dict[str, Path] = {}
    for form, args in FORMS.items():
        dest = c.lab_dir / f"base-{form}"
        c.run_tool("pg_basebackup", "-D", str(dest), "-c", "fast", "-X", "stream", *args, timeout=3600)
        backups[form] = dest
    with c.connect() as conn:
        conn.execute(f"UPDATE big SET a = a + 1 WHERE id % {max(1, round(1 / update))} = 0")
        wal = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    c.stop()
    print(f"after the backups: UPDATE of {update:.0%} of the rows, WAL up to {wal[0] if wal else '?'}")
    return c, archive, backups


def scratch(c: LabCluster, backup: Path, archive: Path, checkpoint: int) -> tuple[float, float, int]:
    """(seconds in all, of which extracting the backup, the LSN the copy is exact to)."""
    sysid = str(core.read_control(c.pgdata)["system_identifier"])
    source = BackupCopySource(backup, archive, c.pgdata, sysid, False, 7200)
    marks: list[float] = []

    def say(line: str) -> None:
        if "restoring the backup" in line or "recovering it to" in line:
            marks.append(time.monotonic())

    try:
        started = time.monotonic()
        exact = source.wait(checkpoint, "shutdown checkpoint", 7200, say)
        return time.monotonic() - started, marks[1] - marks[0], exact
    finally:
        source.close()


def second_pass(c: LabCluster, backup: Path, archive: Path, blocks: int) -> tuple[float, float, float]:
    """``repair --execute``'s two recoveries: the plan's while the primary runs, then, once it is stopped, the copies
    of ``blocks`` pages of ``big`` brought to its shutdown checkpoint. (plan recovery s, second recovery s as it was
    done before, pg_waldump over the WAL since s, as now)."""
    sysid = str(core.read_control(c.pgdata)["system_identifier"])
    c.start()
    with c.connect() as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()::text, pg_relation_filepath('big')").fetchone()
    assert row is not None
    target, path = parse_lsn(row[0]) or 0, str(row[1])
    timings: list[float] = []
    for carry in (False, True):
        source = BackupCopySource(backup, archive, c.pgdata, sysid, False, 7200)
        try:
            if not c.is_running():
                c.start()
            started = time.monotonic()
            source.wait(target, "current WAL position", 7200, lambda _line: None)
            planned = time.monotonic() - started
            c.stop()
            checkpoint = parse_lsn(str(core.read_control(c.pgdata)["checkpoint"])) or 0
            pages = [PageRef(path, "main", b) for b in range(0, blocks * 97, 97)]
            started = time.monotonic()
            if carry:
                assert source.carry_forward(checkpoint, "shutdown checkpoint", pages, lambda _line: None)
            else:
                source.wait(checkpoint, "shutdown checkpoint", 7200, lambda _line: None)
            timings += [planned, time.monotonic() - started]
        finally:
            source.close()
    return timings[0], timings[1], timings[3]


def by_hand(c: LabCluster, form: str, backup: Path, archive: Path, checkpoint: int, work: Path) -> tuple[float, float]:
    """(restore seconds, replay seconds) of the same recovery run by hand."""
    user = server_user()
    data = work / "data"
    started = time.monotonic()
    if form == "plain":
        subprocess.run(["cp", "-a", str(backup), str(data)], check=True)
    else:
        data.mkdir()
        subprocess.run(["tar", "-xzf", str(backup / "base.tar.gz"), "-C", str(data)], check=True)
        subprocess.run(["tar", "-xzf", str(backup / "pg_wal.tar.gz"), "-C", str(data / "pg_wal")], check=True)
    restored = time.monotonic() - started
    sock = work / "socket"
    sock.mkdir()
    restore = f"cp {archive}/%f %p 2>/dev/null || cp {c.pgdata}/pg_wal/%f %p 2>/dev/null"
    timeline = int(core.read_control(c.pgdata)["this_timeline_id"])
    text = scratch_conf().format(port=c.port + 1, socket_dir=str(sock), restore_command=restore, timeline=timeline)
    (data / "postgresql.conf").write_text(text + f"recovery_target_lsn = '{lsn_text(checkpoint)}'\n")
    (data / "postgresql.auto.conf").write_text("")
    (data / "recovery.signal").write_text("")
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(work)], check=True)
    data.chmod(0o700)
    env = c.install.env({})
    started = time.monotonic()
    pg_ctl = str(c.install.tool("pg_ctl"))
    log = str(work / "log")
    # pg_ctl -w returns at the consistent state already (the postmaster says "standby" there, hot_standby or not):
    # the replay is done once postmaster.pid says "ready", after the promotion, as repair waits for it
    r = run_as(user, [pg_ctl, "-D", str(data), "-l", log, "-W", "start"], env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr + (work / "log").read_text()
    while not _ready(data):
        time.sleep(POLL_S)
    r = run_as(user, [pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    if os.environ.get("BENCH_LOG"):
        print((work / "log").read_text()[-3000:])
    return restored, time.monotonic() - started


def warm(path: Path) -> None:
    subprocess.run(["sh", "-c", f"find {path} -type f -exec cat {{}} + > /dev/null"], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--update", type=float, default=0.1, help="fraction of the rows updated after the backup")
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pgsurgeon-bench-restore-", dir="/var/tmp"))
    base.chmod(0o755)
    os.environ["TMPDIR"] = str(base)  # both restores on one file system
    try:
        c, archive, backups = build(base, args.gb, args.update)
        checkpoint = parse_lsn(str(core.read_control(c.pgdata)["checkpoint"]))
        assert checkpoint is not None
        print(
            "| form | backup MB | scratch recovery s (extraction s) | plain restore s | replay s | restore + replay s "
            "| ratio |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for form in args.forms:
            backup = backups[form]
            mb = sum(p.stat().st_size for p in backup.rglob("*") if p.is_file()) / 1e6
            warm(backup)
            warm(archive)
            seconds, extracting, exact = scratch(c, backup, archive, checkpoint)
            assert exact >= checkpoint, (lsn_text(exact), lsn_text(checkpoint))
            work = Path(tempfile.mkdtemp(prefix="by-hand-", dir=base))
            work.chmod(0o755)
            restored, replayed = by_hand(c, form, backup, archive, checkpoint, work)
            shutil.rmtree(work)
            total = restored + replayed
            print(
                f"| {form} | {mb:.0f} | {seconds:.1f} ({extracting:.1f}) | {restored:.1f} | {replayed:.1f} | "
                f"{total:.1f} | {seconds / total:.2f} |"
            )
        if "plain" in args.forms:
            planned, again, carried = second_pass(c, backups["plain"], archive, 20)
            print(
                f"\nrepair --execute, plain backup, 20 pages: the plan's recovery {planned:.1f} s; with the primary "
                f"stopped, recovering again {again:.1f} s (before), pg_waldump over the WAL since {carried:.3f} s (now)"
            )
    finally:
        for lab_dir in base.iterdir():
            if (lab_dir / "lab.json").exists():
                LabCluster.load(lab_dir.name, base).destroy()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
