"""Throwaway PostgreSQL clusters to break and repair.

Layout of a lab named ``NAME`` under the base directory::

    <base>/<NAME>/
        data/        PGDATA (contains the lab marker pgsurgeon_lab.json and pgsurgeon_lab.conf)
        run/         unix socket directory
        server.log   pg_ctl -l log
        lab.json     name, port, bin dir, version, checksums, created_at, ...
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

from pgsurgeon import __version__, db, versions
from pgsurgeon.datadir import postmaster_pid
from pgsurgeon.errors import LabError
from pgsurgeon.lab.marker import new_marker, read_lab_marker, write_lab_marker
from pgsurgeon.pgbin import (
    OsUser,
    PgInstall,
    find_install,
    is_root,
    make_dirs_0755,
    run_as,
    server_user,
    user_owning,
)

log = logging.getLogger(__name__)

SUPERUSER = "postgres"
LAB_EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery", "pg_visibility", "pgstattuple")
"""The contrib extensions a rescue uses, installed in lab clusters: checks (amcheck), raw pages (pageinspect),
tuple surgery (pg_surgery), visibility map (pg_visibility) and free space and dead tuples (pgstattuple)."""
"""Database superuser of every lab cluster (``initdb -U postgres``)."""
CONF_NAME = "pgsurgeon_lab.conf"
META_NAME = "lab.json"
STOP_MODES = ("smart", "fast", "immediate")
ConfValue = str | int | float | bool

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_SUN_PATH_MAX = 107  # sizeof(sockaddr_un.sun_path) - 1
_PORT_RANGE = (20000, 32000)  # below the usual ephemeral range, so clients do not grab them
_START_TIMEOUT = 60


class ToolError(LabError):
    """A PostgreSQL program run by :meth:`LabCluster.run_tool` failed; ``result`` has its output."""

    def __init__(self, message: str, hint: str | None, result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(message, hint)
        self.result = result


def default_base_dir() -> Path:
    """``$PGSURGEON_LAB_DIR``, else ``/var/lib/pgsurgeon/labs`` as root, else
    ``$XDG_DATA_HOME/pgsurgeon/labs`` (``~/.local/share/pgsurgeon/labs``)."""
    env = os.environ.get("PGSURGEON_LAB_DIR")
    if env:
        return Path(env).expanduser().absolute()
    if is_root():
        return Path("/var/lib/pgsurgeon/labs")
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "pgsurgeon" / "labs"


def _base(base_dir: str | Path | None) -> Path:
    return Path(base_dir).expanduser().absolute() if base_dir is not None else default_base_dir()


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise LabError(
            f"invalid lab name {name!r}",
            hint="use 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit",
        )


def port_is_free(port: int) -> bool:
    """Can a server listen on 127.0.0.1:``port`` right now?"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_free_port(reserved: set[int] | None = None) -> int:
    """A free TCP port on 127.0.0.1 that no other lab uses."""
    taken = reserved or set()
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(*_PORT_RANGE)
        if port not in taken and port_is_free(port):
            return port
    raise LabError("cannot find a free tcp port on 127.0.0.1", hint="pass one with --port N")


def _conf_value(value: ConfValue) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def _tail(text: str, lines: int) -> list[str]:
    return [line for line in text.strip().splitlines() if line.strip()][-lines:]


@dataclass(eq=False)
class LabCluster:
    """One lab cluster: a PGDATA made by pgsurgeon, with its own port, socket dir and log."""

    name: str
    lab_dir: Path
    install: PgInstall
    port: int
    checksums: bool
    created_at: str
    id: str
    port_auto: bool = False
    extra_conf: dict[str, ConfValue] = field(default_factory=dict)

    # ---------------------------------------------------------------- paths and properties

    @property
    def pgdata(self) -> Path:
        return self.lab_dir / "data"

    @property
    def run_dir(self) -> Path:
        """Unix socket directory."""
        return self.lab_dir / "run"

    @property
    def log_path(self) -> Path:
        return self.lab_dir / "server.log"

    @property
    def meta_path(self) -> Path:
        return self.lab_dir / META_NAME

    @property
    def version(self) -> int:
        """Major PostgreSQL version."""
        return self.install.major

    @property
    def user(self) -> OsUser:
        """OS user the server runs as."""
        return user_owning(self.lab_dir)

    def __repr__(self) -> str:
        return f"LabCluster({self.name!r}, version={self.version}, port={self.port}, pgdata='{self.pgdata}')"

    # ---------------------------------------------------------------- creation and loading

    @classmethod
    def create(
        cls,
        name: str,
        *,
        base_dir: str | Path | None = None,
        pg_bin: str | Path | PgInstall | None = None,
        checksums: bool = True,
        port: int | None = None,
        extra_conf: Mapping[str, ConfValue] | None = None,
    ) -> LabCluster:
        """initdb a new lab cluster (not started). ``pg_bin`` None means the embedded PostgreSQL 18."""
        _check_name(name)
        base = _base(base_dir)
        lab_dir = base / name
        if lab_dir.exists():
            raise LabError(
                f"lab cluster {name} already exists in {base}",
                hint=f"start it: 'pgsurgeon lab up {name}', or drop it: 'pgsurgeon lab down {name} --remove'"
                if (lab_dir / META_NAME).exists()
                else f"{lab_dir} is not a lab; remove it or pick another name",
            )
        install = pg_bin if isinstance(pg_bin, PgInstall) else find_install(pg_bin)
        sock = lab_dir / "run" / f".s.PGSQL.{65535}"
        if len(str(sock)) > _SUN_PATH_MAX:
            raise LabError(
                f"lab directory path is too long for a unix socket: {lab_dir}",
                hint="use a shorter base directory (PGSURGEON_LAB_DIR) or lab name",
            )
        reserved = {lab.port for lab in list_labs(base)} if base.is_dir() else set()
        if port is None:
            port_auto, port = True, pick_free_port(reserved)
        else:
            port_auto = False
            if not 1 <= port <= 65535:
                raise LabError(f"invalid port {port}", hint="pass a tcp port between 1024 and 65535")
            if not port_is_free(port):
                raise LabError(f"port {port} on 127.0.0.1 is in use", hint="pick another with --port N or omit it")
            if port in reserved:
                raise LabError(f"port {port} is already used by another lab", hint="pick another with --port N")

        user = server_user()
        try:
            make_dirs_0755(base)
        except OSError as exc:
            raise LabError(
                f"cannot create the lab directory {base}: {exc.strerror or exc}",
                hint="set PGSURGEON_LAB_DIR to a writable directory",
            ) from exc
        marker = new_marker(name)
        lab = cls(
            name=name,
            lab_dir=lab_dir,
            install=install,
            port=port,
            checksums=checksums,
            created_at=marker["created_at"],
            id=marker["id"],
            port_auto=port_auto,
            extra_conf=dict(extra_conf or {}),
        )
        try:
            lab_dir.mkdir(mode=0o755)
        except FileExistsError as exc:
            raise LabError(f"lab cluster {name} already exists in {base}") from exc
        try:
            lab_dir.chmod(0o755)
            lab.run_dir.mkdir(mode=0o755)
            lab._chown(lab_dir, lab.run_dir)
            lab._check_reachable(user)
            lab._initdb(user)
            lab._write_conf()
            write_lab_marker(
                lab.pgdata,
                marker,
                uid=user.uid if user.switch else None,
                gid=user.gid if user.switch else None,
            )
            lab._write_meta()
        except BaseException:
            shutil.rmtree(lab_dir, ignore_errors=True)
            raise
        log.info("created lab cluster %s (postgresql %s) in %s", name, install.major, lab_dir)
        return lab

    @classmethod
    def load(cls, name: str, base_dir: str | Path | None = None) -> LabCluster:
        """The existing lab ``name`` in ``base_dir``."""
        _check_name(name)
        base = _base(base_dir)
        return cls._from_dir(base / name, base)

    @classmethod
    def _from_dir(cls, lab_dir: Path, base: Path) -> LabCluster:
        meta_path = lab_dir / META_NAME
        if not meta_path.is_file():
            raise LabError(
                f"no lab cluster named {lab_dir.name} in {base}",
                hint=f"list them with 'pgsurgeon lab status' or create it: 'pgsurgeon lab up {lab_dir.name}'",
            )
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            bin_dir = Path(meta["bin_dir"])
            major = int(meta["version"])
            port = int(meta["port"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LabError(
                f"cannot read {meta_path}: {exc}", hint=f"remove {lab_dir} if the lab is no longer needed"
            ) from exc
        try:
            install = find_install(bin_dir)
        except LabError:
            if meta.get("source") != "embedded":
                raise
            install = find_install(None)  # the wheel moved (new venv, new mirror): same major is fine
        if install.major != major:
            raise LabError(
                f"lab cluster {lab_dir.name} needs postgresql {major}, {install.bin_dir} has {install.major}",
                hint=f"reinstall postgresql {major} or run 'pgsurgeon lab down {lab_dir.name} --remove'",
            )
        return cls(
            name=str(meta.get("name", lab_dir.name)),
            lab_dir=lab_dir,
            install=install,
            port=port,
            checksums=bool(meta.get("checksums", True)),
            created_at=str(meta.get("created_at", "")),
            id=str(meta.get("id", "")),
            port_auto=bool(meta.get("port_auto", False)),
            extra_conf=dict(meta.get("extra_conf") or {}),
        )

    # ---------------------------------------------------------------- server control

    def start(self) -> LabCluster:
        """Start the server (no-op when running); waits until it accepts connections."""
        if self.is_running():
            return self
        self._require_pgdata()
        if not port_is_free(self.port):
            if not self.port_auto:
                raise LabError(
                    f"port {self.port} on 127.0.0.1 is in use, cannot start lab cluster {self.name}",
                    hint="stop whatever listens there, or recreate the lab with another --port",
                )
            others = {lab.port for lab in list_labs(self.lab_dir.parent) if lab.name != self.name}
            self.port = pick_free_port(others)
            self._write_conf()
            self._write_meta()
        proc = self._pg_ctl(
            "start", "-w", "-t", str(_START_TIMEOUT), "-l", str(self.log_path), timeout=_START_TIMEOUT + 30
        )
        if proc.returncode != 0 or not self.is_running():
            lines = _tail(self.log_text(), 3) or _tail(proc.stderr + proc.stdout, 3)
            last = lines[-1] if lines else "no output"
            raise LabError(
                f"lab cluster {self.name} failed to start: {last}",
                hint=f"see {self.log_path}; last lines: " + " | ".join(lines),
            )
        return self

    def stop(self, mode: str = "fast") -> LabCluster:
        """Stop the server (no-op when stopped). ``mode``: smart, fast or immediate."""
        if mode not in STOP_MODES:
            raise LabError(f"invalid stop mode {mode!r}", hint="use one of: " + ", ".join(STOP_MODES))
        if not self.is_running():
            return self
        proc = self._pg_ctl("stop", "-w", "-t", str(_START_TIMEOUT), "-m", mode, timeout=_START_TIMEOUT + 30)
        if proc.returncode != 0 and self.is_running():
            last = (_tail(proc.stderr + proc.stdout, 1) or ["no output"])[0]
            raise LabError(
                f"lab cluster {self.name} did not stop: {last}",
                hint=f"try 'pgsurgeon lab down {self.name}' again or see {self.log_path}",
            )
        return self

    def restart(self) -> LabCluster:
        self.stop()
        return self.start()

    def postmaster_pid(self) -> int | None:
        """PID of the running postmaster, or None."""
        return postmaster_pid(self.pgdata)

    def is_running(self) -> bool:
        return self.postmaster_pid() is not None

    def destroy(self) -> None:
        """Stop the server if needed and delete the whole lab directory."""
        if self.is_running():
            try:
                self.stop("fast")
            except LabError:
                with contextlib.suppress(LabError):
                    self.stop("immediate")
            pid = self.postmaster_pid()
            if pid is not None:  # we started it; make sure it is gone before deleting its files
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                for _ in range(50):
                    if self.postmaster_pid() is None:
                        break
                    time.sleep(0.1)
        if not (self.meta_path.exists() or (self.pgdata / "pgsurgeon_lab.json").exists()):
            raise LabError(f"refusing to delete {self.lab_dir}: it is not a lab directory")
        try:
            shutil.rmtree(self.lab_dir)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise LabError(f"cannot delete {self.lab_dir}: {exc.strerror or exc}") from exc

    # ---------------------------------------------------------------- information

    def install_extensions(self, dbnames: tuple[str, ...] = ("template1", "postgres")) -> list[str]:
        """CREATE EXTENSION for each of :data:`LAB_EXTENSIONS` the installation ships, in ``dbnames`` (template1
        so that databases created later have them too). Returns the ones installed; the server must be running."""
        installed: list[str] = []
        for dbname in dbnames:
            with self.connect(dbname) as conn:
                available = {
                    str(r[0])
                    for r in conn.execute(
                        "SELECT name FROM pg_available_extensions WHERE name = ANY(%s)", [list(LAB_EXTENSIONS)]
                    )
                }
                for ext in LAB_EXTENSIONS:
                    if ext in available:
                        conn.execute(db.sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(db.sql.Identifier(ext)))
                        if ext not in installed:
                            installed.append(ext)
        return installed

    def dsn(self, dbname: str = "postgres") -> str:
        return db.make_dsn(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname=dbname)

    def connect(self, dbname: str = "postgres", autocommit: bool = True) -> psycopg.Connection[tuple[Any, ...]]:
        return db.connect(self.dsn(dbname), autocommit=autocommit)

    def status(self) -> dict[str, Any]:
        pid = self.postmaster_pid()
        return {
            "name": self.name,
            "version": self.version,
            "version_string": self.install.short_version,
            "checksums": self.checksums,
            "port": self.port,
            "running": pid is not None,
            "pid": pid,
            "pgdata": str(self.pgdata),
            "dsn": self.dsn(),
            "socket_dir": str(self.run_dir),
            "log": str(self.log_path),
            "bin_dir": str(self.install.bin_dir),
            "created_at": self.created_at,
            "lab_dir": str(self.lab_dir),
        }

    def marker(self) -> dict[str, Any]:
        return read_lab_marker(self.pgdata)

    def log_text(self, tail: int | None = None) -> str:
        """The server log (last ``tail`` lines when given); empty when there is none yet."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        if tail is not None:
            text = "\n".join(text.splitlines()[-tail:])
        return text

    def controldata(self) -> dict[str, str]:
        """``pg_controldata`` output as a dict (``"Data page checksum version"`` → ``"1"`` …)."""
        out = self.run_tool("pg_controldata", "-D", str(self.pgdata)).stdout
        result: dict[str, str] = {}
        for line in out.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                result[key.strip()] = value.strip()
        return result

    # ---------------------------------------------------------------- running programs

    def tool_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for this cluster's programs: libpq variables point at this cluster."""
        env = self.install.env(
            {
                "PGHOST": "127.0.0.1",
                "PGPORT": str(self.port),
                "PGUSER": SUPERUSER,
                "PGDATABASE": "postgres",
                "PGDATA": str(self.pgdata),
            }
        )
        if extra:
            env.update(extra)
        return env

    def run_tool(
        self,
        name: str,
        *args: str | Path,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run program ``name`` of this cluster's installation as the server user (text output captured).

        With ``check`` a non-zero exit raises :class:`ToolError` (its ``result`` holds the output).
        """
        cmd: list[str | Path] = [self.install.tool(name), *args]
        proc = run_as(self.user, cmd, env=self.tool_env(env), cwd=self.lab_dir, input=input, timeout=timeout)
        if check and proc.returncode != 0:
            last = (_tail(proc.stderr, 1) or _tail(proc.stdout, 1) or ["no output"])[0]
            raise ToolError(f"{name} failed with exit code {proc.returncode}: {last}", None, proc)
        return proc

    # ---------------------------------------------------------------- internals

    def _require_pgdata(self) -> None:
        if not (self.pgdata / "PG_VERSION").is_file():
            raise LabError(
                f"lab cluster {self.name} has no data directory at {self.pgdata}",
                hint=f"delete it with 'pgsurgeon lab down {self.name} --remove' and create it again",
            )

    def _pg_ctl(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        cmd: list[str | Path] = [self.install.tool("pg_ctl"), "-D", str(self.pgdata), *args]
        return run_as(self.user, cmd, env=self.tool_env(), cwd=self.lab_dir, timeout=timeout, new_session=True)

    def _chown(self, *paths: Path) -> None:
        user = server_user()
        if user.switch:
            for p in paths:
                os.chown(p, user.uid, user.gid)

    def _check_reachable(self, user: OsUser) -> None:
        if not user.switch:
            return
        proc = run_as(user, ["/bin/sh", "-c", 'test -w "$1"', "sh", str(self.lab_dir)], env={"PATH": "/usr/bin:/bin"})
        if proc.returncode != 0:
            raise LabError(
                f"user {user.name} cannot reach {self.lab_dir}",
                hint="use a base directory whose parents everyone can traverse (chmod o+x), "
                "e.g. set PGSURGEON_LAB_DIR=/var/lib/pgsurgeon/labs",
            )

    def _initdb(self, user: OsUser) -> None:
        args: list[str | Path] = [
            self.install.tool("initdb"),
            "-D",
            str(self.pgdata),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]
        if self.checksums:
            args.append("--data-checksums")
        elif versions.facts(self.version).initdb_no_data_checksums:
            args.append("--no-data-checksums")
        proc = run_as(user, args, env=self.install.env(), cwd=self.lab_dir, timeout=300)
        if proc.returncode != 0:
            lines = _tail(proc.stderr, 3) or _tail(proc.stdout, 3) or ["no output"]
            raise LabError(
                f"initdb failed for lab cluster {self.name}: {lines[-1]}",
                hint="initdb said: " + " | ".join(lines),
            )

    def _settings(self) -> dict[str, ConfValue]:
        settings: dict[str, ConfValue] = {
            "listen_addresses": "127.0.0.1",
            "port": self.port,
            "unix_socket_directories": str(self.run_dir),
            "shared_buffers": "32MB",
            "max_connections": 40,
            "fsync": False,
            "logging_collector": False,
        }
        settings.update(self.extra_conf)
        return settings

    def _write_conf(self) -> None:
        lines = [
            "# written by pgsurgeon for lab cluster " + self.name + "; regenerated on port changes",
            *(f"{key} = {_conf_value(value)}" for key, value in self._settings().items()),
        ]
        conf = self.pgdata / CONF_NAME
        conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
        conf.chmod(0o600)
        main_conf = self.pgdata / "postgresql.conf"
        include = f"include = '{CONF_NAME}'"
        text = main_conf.read_text(encoding="utf-8")
        if include not in text:
            text = text.rstrip("\n") + f"\n\n# pgsurgeon lab settings\n{include}\n"
            main_conf.write_text(text, encoding="utf-8")
        user = user_owning(self.lab_dir)
        if user.switch:
            os.chown(conf, user.uid, user.gid)

    def _write_meta(self) -> None:
        meta = {
            "name": self.name,
            "port": self.port,
            "port_auto": self.port_auto,
            "bin_dir": str(self.install.bin_dir),
            "source": self.install.source,
            "version": self.version,
            "version_string": self.install.short_version,
            "checksums": self.checksums,
            "created_at": self.created_at,
            "id": self.id,
            "extra_conf": self.extra_conf,
            "pgsurgeon_version": __version__,
        }
        tmp = self.meta_path.with_name(f".{META_NAME}.tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        tmp.chmod(0o644)
        user = user_owning(self.lab_dir)
        if user.switch:
            os.chown(tmp, user.uid, user.gid)
        tmp.replace(self.meta_path)


def list_labs(base_dir: str | Path | None = None) -> list[LabCluster]:
    """All readable lab clusters in ``base_dir``, sorted by name (broken ones are logged and skipped)."""
    base = _base(base_dir)
    try:
        entries = sorted(p for p in base.iterdir() if (p / META_NAME).is_file())
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise LabError(f"cannot read the lab directory {base}: {exc.strerror}") from exc
        raise
    labs: list[LabCluster] = []
    for entry in entries:
        try:
            labs.append(LabCluster._from_dir(entry, base))
        except LabError as exc:
            log.warning("skipping lab %s: %s", entry.name, exc.message)
    return labs


def run_sql(
    cluster: LabCluster,
    query: str | db.sql.SQL | db.sql.Composed,
    dbname: str = "postgres",
    params: Sequence[Any] | None = None,
) -> list[tuple[Any, ...]]:
    """Run ``query`` on ``cluster`` in autocommit mode and return the rows of its last statement.

    Without ``params`` several ``;``-separated statements may be sent at once.
    """
    with cluster.connect(dbname) as conn, conn.cursor() as cur:
        cur.execute(query, params)
        rows = cur.fetchall() if cur.description is not None else []
        while cur.nextset():
            rows = cur.fetchall() if cur.description is not None else []
        return rows
