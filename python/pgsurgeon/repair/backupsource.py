"""A base backup brought forward by PostgreSQL's own redo as the source of good pages (``repair --from-backup``).

A backup page is stale until WAL brings it forward, so the backup is restored into a scratch directory (extracted
through the backup reader: plain, tar, compressed) and recovered there by a throwaway instance of its own major
version: ``restore_command`` takes segments from ``--wal-archive`` and then from the damaged cluster's surviving
pg_wal, up to the damaged cluster's last WAL position, then promotes. Once that instance is stopped cleanly (the
shutdown checkpoint writes every replayed page out), the pages are read from its files, read-only. The scratch
directory goes with :meth:`BackupCopySource.close`, on errors, on Ctrl-C and on SIGTERM."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.backup import BackupSource
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.datadir import Geometry, postmaster_pid, segment_name
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.lab.cluster import pick_free_port
from pgsurgeon.pgbin import OsUser, PgInstall, install_of_major, user_owning
from pgsurgeon.repair.copies import SOURCE_BACKUP, lsn_text, parse_lsn

if TYPE_CHECKING:
    from pgsurgeon.repair.waltouch import PageRef

POLL_S = 0.2
SAY_EVERY_S = 5.0
STOP_TIMEOUT_S = 120.0
# the server's words when the WAL ends before recovery_target_lsn (xlogrecovery.c, PerformWalRecovery; FATAL since 14)
TARGET_NOT_REACHED = "recovery ended before configured recovery target was reached"
# files of the backup the throwaway instance must not take over: its settings, the primary's process files, and a
# standby's signal (the scratch recovery is an archive recovery that ends, not a standby)
DROPPED = frozenset(
    {"postgresql.conf", "postgresql.auto.conf", "postmaster.pid", "postmaster.opts", "standby.signal", "recovery.conf"}
)
_RESTORED = re.compile(r'restored log file "(?P<seg>[0-9A-F]{24})"')
_HISTORY = re.compile(r"^[0-9A-F]{8}\.history$")


class BackupCopySource:
    """Pages of a base backup recovered up to the damaged cluster's position; ``short_of`` is that position when the
    WAL ran out before it (the copy is then exact only to ``replayed``)."""

    name = SOURCE_BACKUP
    follows_primary = False

    def __init__(
        self,
        backup: Path,
        wal_archive: Path | None,
        primary_pgdata: Path,
        primary_sysid: str | None,
        accept_older: bool,
        timeout: float,
    ) -> None:
        self.path = backup
        self.wal_archive = wal_archive.absolute() if wal_archive is not None else None
        self.primary_pgdata = primary_pgdata.absolute()
        self.accept_older = accept_older
        self.timeout = timeout
        self.replayed: int | None = None
        self.short_of: int | None = None
        self.scratch: Path | None = None
        self.data: Path | None = None
        self._restore_signal = _sigterm_raises()
        if self.wal_archive is not None and not self.wal_archive.is_dir():
            raise PgSurgeonError(
                f"the WAL archive {self.wal_archive} is not a directory",
                hint="give --wal-archive the directory archive_command copies segments into",
            )
        try:
            self.backup = BackupSource(backup)
        except BaseException:
            self._restore_signal()
            raise
        try:
            self.control = core.read_control(self.backup.root)
            self._refuse_stranger(primary_sysid)
            self.install = self._install()
        except BaseException:
            self.backup.close()
            self._restore_signal()
            raise
        self.user: OsUser = user_owning(self.primary_pgdata)
        primary = core.read_control(self.primary_pgdata)
        self.timeline = int(primary["this_timeline_id"])
        self.wal_seg_size = int(primary["xlog_seg_size"])
        self.geometry = Geometry(int(self.control["blcksz"]), int(self.control["relseg_size"]))

    def _refuse_stranger(self, primary_sysid: str | None) -> None:
        sysid = str(self.control["system_identifier"])
        if primary_sysid is None:
            raise PgSurgeonError(
                "the primary's system identifier cannot be read: the backup cannot be matched",
                hint="run repair on the database server's host (its pg_control is read from --pgdata)",
            )
        if sysid != primary_sysid:
            raise PgSurgeonError(
                f"the backup belongs to another cluster: system identifier {sysid}, the primary's is {primary_sysid}",
                hint="give a base backup of this cluster (pg_controldata of both shows the same database system "
                "identifier)",
            )

    def _install(self) -> PgInstall:
        major = int(self.control["major_version"])
        install = install_of_major(major, program="pg_ctl")
        if install is None:
            raise PgSurgeonError(
                f"no PostgreSQL {major} installation to recover the backup with",
                hint=f"install PostgreSQL {major}'s server, or set PGSURGEON_PG{major}_BIN to its bin directory",
            )
        return install

    # ------------------------------------------------------------------ PageSource

    def wait(self, target: int, what: str, timeout: float, say: Callable[[str], None], streaming: bool = False) -> int:
        """Recover the backup up to ``target``; the position its pages are exact to. While the primary runs its WAL
        still grows and no record starts at ``target`` yet: the recovery then goes to the end of the WAL there is.
        Stopped, ``target`` is its last record (the shutdown checkpoint) and is the recovery target."""
        del streaming  # a backup follows no primary
        if self.replayed is not None and self.replayed >= target:
            return self.replayed
        self._remove_scratch()
        stopped = postmaster_pid(self.primary_pgdata) is None
        exact = self._recover(target if stopped else None, what, say)
        self.replayed = exact
        self.short_of = target if exact < target else None
        if self.short_of is not None:
            say(
                f"  the WAL ends at {lsn_text(exact)}, before the primary's {what} {lsn_text(target)}: the backup's "
                "pages are exact to that position only"
            )
        return exact

    def carry_forward(self, target: int, what: str, pages: list[PageRef], say: Callable[[str], None]) -> bool:
        """With the primary stopped at ``target``: the pages recovered to ``replayed`` are exact to ``target`` too
        when no WAL record in between may change them (its own pg_waldump reads the primary's pg_wal); the backup is
        then not recovered a second time."""
        if self.data is None or self.replayed is None or postmaster_pid(self.primary_pgdata) is not None:
            return False
        from pgsurgeon.repair.waltouch import WalRange, first_touch
        from pgsurgeon.rescue.walstatus import waldump_for

        major = int(self.control["major_version"])
        tool = waldump_for(major)
        since = self.replayed
        if tool is None:
            say(f"  no pg_waldump of PostgreSQL {major} reads the WAL since {lsn_text(since)}: recovering")
            return False
        dirs = [self.primary_pgdata / "pg_wal", *([self.wal_archive] if self.wal_archive is not None else [])]
        why = first_touch(tool, WalRange(dirs, self.timeline, self.wal_seg_size, since, target), pages)
        if why is not None:
            say(f"  the copies recovered to {lsn_text(since)} may be older than the primary's {what}: {why}")
            return False
        say(
            f"  no WAL record from {lsn_text(since)} to the primary's {what} {lsn_text(target)} changes the "
            f"{len(pages)} page(s) to restore: the backup recovered to {lsn_text(since)} holds them as they are now"
        )
        self.replayed, self.short_of = target, None
        return True

    def fetch(self, rel: Relation, block: int) -> tuple[bytes | None, str]:
        return self._page(rel, block, "main")

    def fetch_batch(
        self, rel: Relation, blocks: list[int], fork: str = "main"
    ) -> Iterator[tuple[int, bytes | None, str]]:
        """The recovered files' pages of ``blocks`` of a fork (the visibility map's too): a file read each."""
        for blk in blocks:
            yield (blk, *self._page(rel, blk, fork))

    def _page(self, rel: Relation, block: int, fork: str) -> tuple[bytes | None, str]:
        if self.data is None:
            return None, "the backup is not recovered"
        if rel.filepath is None:
            return None, "the relation has no storage"
        segno, offset = self.geometry.locate(block)
        name = segment_name(rel.filepath, segno, fork)
        try:
            with (self.data / name).open("rb") as fh:
                fh.seek(offset)
                data = fh.read(self.geometry.blcksz)
        except OSError as exc:
            return None, f"the recovered backup has no {name}: {exc.strerror}"
        if len(data) != self.geometry.blcksz:
            return None, f"the recovered backup's {name} ends before block {block}"
        return data, f"recovered backup file {name}"

    def describe(self) -> str:
        where = ""
        if self.replayed is not None:
            where = f" (recovered to {lsn_text(self.replayed)}"
            if self.short_of is not None:
                where += f", short of the primary's {lsn_text(self.short_of)}: the WAL ends there"
            where += ")"
        archive = f" and WAL archive {self.wal_archive}" if self.wal_archive is not None else ""
        return f"backup {self.path} ({self.backup.form}){archive}{where}"

    def close(self) -> None:
        self._remove_scratch()
        self.backup.close()
        self._restore_signal()

    # ------------------------------------------------------------------ the scratch instance

    def _remove_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch = self.data = None

    def _recover(self, target: int | None, what: str, say: Callable[[str], None]) -> int:
        """Restore, recover and stop the throwaway instance; the end of the WAL it replayed (its timeline switch).
        The scratch directory stays for :meth:`fetch` and is removed on any failure."""
        # TMPDIR as it is now (tempfile caches the directory it first found); its parents must let the server user in
        self.scratch = Path(tempfile.mkdtemp(prefix="pgsurgeon-backup-", dir=os.environ.get("TMPDIR") or None))
        try:
            self.data = self.scratch / "data"
            say(f"  restoring the backup {self.path} into {self.scratch}")
            started = time.monotonic()
            copied = extract(self.backup, self.data)
            say(f"  {copied / 1e6:.1f} MB restored in {time.monotonic() - started:.1f}s")
            goal = f"the primary's {what} {lsn_text(target)}" if target is not None else "the end of the WAL there is"
            say(f"  recovering it to {goal} (archive: {self.wal_archive or 'none'}, then {self.primary_pgdata}/pg_wal)")
            if not self._run(target, say):
                say(f"  the WAL ends before {lsn_text(target or 0)}: recovering to the end of the WAL there is")
                self._run(None, say)
            return self._switchpoint()
        except BaseException:
            self._remove_scratch()
            raise

    def _run(self, target: int | None, say: Callable[[str], None]) -> bool:
        """One start of the instance up to its promotion, then a clean stop; False when the WAL ended before
        ``target`` (the server refuses to promote then; its files stay as a restartpoint left them)."""
        assert self.scratch is not None and self.data is not None
        self._configure(target)
        log = self.scratch / "server.log"
        proc = self._start(log)
        deadline = time.monotonic() + self.timeout
        next_say = time.monotonic() + SAY_EVERY_S
        try:
            while not _ready(self.data):
                if proc.poll() is not None:
                    text = _read_text(log)
                    if target is not None and TARGET_NOT_REACHED in text:
                        return False
                    raise PgSurgeonError(
                        f"the backup's recovery failed: {_last_complaint(text)}",
                        hint="the backup needs the WAL from its start onwards: check --wal-archive, and that the "
                        "backup is complete (pg_verifybackup)",
                    )
                now = time.monotonic()
                if now >= deadline:
                    raise PgSurgeonError(
                        f"the backup's recovery did not end within {self.timeout:.0f}s ({_progress(log)})",
                        hint="give it longer with --recovery-timeout, or a backup taken closer to now",
                    )
                if now >= next_say:
                    say(f"  recovering: {_progress(log)}")
                    next_say = now + SAY_EVERY_S
                time.sleep(POLL_S)
            # a fast shutdown writes a shutdown checkpoint: every page replay dirtied is in the files after it
            proc.send_signal(signal.SIGINT)
            proc.wait(STOP_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGQUIT)  # immediate: the directory is removed anyway
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STOP_TIMEOUT_S)
                if proc.poll() is None:
                    proc.kill()
        if proc.returncode != 0:
            raise PgSurgeonError(
                f"the recovered backup's instance did not stop cleanly: {_last_complaint(_read_text(log))}",
                hint=f"see {log}",
            )
        return True

    def _configure(self, target: int | None) -> None:
        assert self.scratch is not None and self.data is not None
        socket_dir = self.scratch / "socket"
        socket_dir.mkdir(exist_ok=True)
        text = scratch_conf().format(
            port=pick_free_port(),
            socket_dir=_conf_quote(str(socket_dir)),
            restore_command=_conf_quote(self._restore_command()),
            timeline=self.timeline,
        )
        if target is not None:
            # inclusive (the default): recovery stops after the record that starts at the target, the primary's
            # shutdown checkpoint (xlogrecovery.c, recoveryStopsAfter)
            text += f"recovery_target_lsn = '{lsn_text(target)}'\n"
        (self.data / "postgresql.conf").write_text(text, encoding="utf-8")
        (self.data / "postgresql.auto.conf").write_text("", encoding="utf-8")
        (self.data / "pg_hba.conf").write_text("local all all trust\n", encoding="utf-8")
        ident = self.data / "pg_ident.conf"
        if not ident.exists():
            ident.write_text("", encoding="utf-8")
        (self.data / "recovery.signal").write_text("", encoding="utf-8")
        _give(self.scratch, self.user)

    def _restore_command(self) -> str:
        """The archive first, then the damaged cluster's pg_wal (read: cp copies out of it)."""
        sources = ([self.wal_archive] if self.wal_archive is not None else []) + [self.primary_pgdata / "pg_wal"]
        return " || ".join(f"cp {shlex.quote(str(d))}/%f %p 2>/dev/null" for d in sources)

    def _start(self, log: Path) -> subprocess.Popen[bytes]:
        assert self.data is not None
        env = self.install.env({"PGDATA": str(self.data)})
        cmd = [str(self.install.tool("postgres")), "-D", str(self.data)]
        as_user: dict[str, Any] = {}
        if self.user.switch:
            env.update({"USER": self.user.name, "LOGNAME": self.user.name, "HOME": str(self.scratch)})
            as_user = {"user": self.user.uid, "group": self.user.gid, "extra_groups": []}
        with log.open("ab") as out:
            return subprocess.Popen(
                cmd,
                env=env,
                cwd=self.scratch,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches repair, which stops the instance itself
                **as_user,
            )

    def _switchpoint(self) -> int:
        """Where the replayed WAL ends: the switch point the promotion wrote into the new timeline's history file
        (xlog.c, writeTimeLineHistory: EndOfLog, the end of the last record replayed)."""
        assert self.data is not None
        histories = sorted(p for p in (self.data / "pg_wal").iterdir() if _HISTORY.match(p.name))
        if histories:
            lines = [ln for ln in histories[-1].read_text(encoding="utf-8").splitlines() if ln.strip()]
            fields = lines[-1].split() if lines else []
            lsn = parse_lsn(fields[1]) if len(fields) > 1 else None
            if lsn is not None:
                return lsn
        raise PgSurgeonError(
            "the recovered backup's new timeline history cannot be read: where its WAL ended is not known",
            hint="report this; the server log is gone with the scratch directory",
        )


def extract(backup: BackupSource, dest: Path) -> int:
    """The backup's files under ``dest`` through the backup reader (a compressed tar is read in its stream order:
    one pass); the bytes copied. The backup's settings are left out (the scratch instance has its own)."""
    files: list[tuple[int, str]] = []
    for rel, is_dir in _walk(backup.root, ""):
        if is_dir:
            (dest / rel).mkdir(parents=True, exist_ok=True)
        elif rel not in DROPPED:
            order = backup.read_order(rel)
            files.append((order if order is not None else -1, rel))
    dest.mkdir(parents=True, exist_ok=True)
    # a plain backup's files are ordinary files: the kernel copies them (copy_file_range, sendfile), twice as fast as
    # through the backup reader (bench/backup_restore.py: 3.4 s against 7.0 s for 1 GB)
    plain = backup.form == "plain"
    total = 0
    for _order, rel in sorted(files):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if plain:
            shutil.copyfile(backup.root / rel, dest / rel)
            total += (dest / rel).stat().st_size
        else:
            total += core.vfs_copy(backup.root / rel, dest / rel)
    return total


def _walk(root: Path, rel: str) -> Iterator[tuple[str, bool]]:
    for name, is_dir, _size in core.vfs_list(root / rel if rel else root):
        child = f"{rel}/{name}" if rel else name
        yield child, is_dir
        if is_dir:
            yield from _walk(root, child)


def scratch_conf() -> str:
    return resources.files("pgsurgeon").joinpath("repair").joinpath("scratch.conf").read_text(encoding="utf-8")


def _conf_quote(text: str) -> str:
    """A value inside a postgresql.conf string: single quotes doubled (guc-file.l)."""
    return text.replace("'", "''")


def _give(top: Path, user: OsUser) -> None:
    """The scratch directory to the server user, the data directory private to it (postmaster.c refuses others)."""
    os.chmod(top, 0o700)
    (top / "data").chmod(0o700)
    if not user.switch:
        return
    for dirpath, _dirs, names in os.walk(top):
        os.chown(dirpath, user.uid, user.gid)
        for n in names:
            os.chown(os.path.join(dirpath, n), user.uid, user.gid)


def _ready(pgdata: Path) -> bool:
    """postmaster.pid's status line says ``ready``: with hot_standby off, only once recovery ended and the instance
    promoted (pidfile.h, LOCK_FILE_LINE_PM_STATUS)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _last_complaint(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "FATAL:" in line or "PANIC:" in line or "ERROR:" in line:
            return line.split(":  ", 1)[-1].strip()
    return (text.strip().splitlines() or ["no output"])[-1]


def _progress(log: Path) -> str:
    found = _RESTORED.findall(_read_text(log))
    return f"last segment restored {found[-1]}, {len(found)} so far" if found else "no segment restored yet"


class Interrupted(KeyboardInterrupt):
    """SIGTERM while the scratch instance runs: raised so that it is stopped and its directory removed."""


def _sigterm_raises() -> Callable[[], None]:
    """SIGTERM raises (as Ctrl-C does) while the source is open, so that the scratch instance is stopped and its
    directory removed on the way out; the function returned puts the previous handler back. Only in the main thread,
    where Python delivers signals."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def raise_it(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, raise_it)

    def put_back() -> None:
        signal.signal(signal.SIGTERM, previous)

    return put_back
