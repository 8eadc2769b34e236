"""The options every command shares, spelled as in psql, pg_dump and pg_amcheck: -d (a name or a conninfo), -h, -p,
-U, -w/-W, PG* environment variables and ~/.pgpass (through libpq), --dsn as the old spelling, -D with $PGDATA,
-t, --format text|json, durations. Against real servers, in fresh processes so the environment is the test's own."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import exec_sql
from pgsurgeon.cli import get_parser
from pgsurgeon.commands import options
from pgsurgeon.lab import LabCluster

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def run(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``pgsurgeon ARGV`` in a new process with only ``env`` added to an environment without PG* variables."""
    return subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *argv],
        env={**CLEAN_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def pg_env(lab: LabCluster, **extra: str) -> dict[str, str]:
    return {"PGHOST": "127.0.0.1", "PGPORT": str(lab.port), "PGUSER": "postgres", "PGDATABASE": "postgres", **extra}


@pytest.fixture(scope="module")
def opt_table(pg: LabCluster) -> str:
    exec_sql(
        pg,
        "DROP TABLE IF EXISTS opt_t; CREATE TABLE opt_t AS SELECT g AS id, md5(g::text) AS v FROM "
        "generate_series(1, 500) g; CHECKPOINT; CREATE EXTENSION IF NOT EXISTS amcheck; "
        "CREATE EXTENSION IF NOT EXISTS pageinspect",
    )
    return "opt_t"


def test_pg_environment_variables_alone_connect(pg: LabCluster, opt_table: str, tmp_path: Path) -> None:
    """No connection option at all: libpq takes host, port, user and database from PG*, as psql does."""
    proc = run("inspect", "-t", opt_table, "-b", "0", "--format", "json", env=pg_env(pg))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["header"]["pd_lower"] > 24
    # pg_dump, run by dump-tables, gets the same defaults from the same variables
    out = tmp_path / "dumps"
    dump = run("dump-tables", "--out", str(out), "-t", f"public.{opt_table}", "--pg-bin", str(pg.install.bin_dir),
               env=pg_env(pg))  # fmt: skip
    assert dump.returncode == 0, dump.stderr
    assert any(p.stat().st_size > 0 for p in out.rglob(f"*{opt_table}*"))
    # and without them the same command goes to the default server, which is not there
    proc = run("inspect", "-t", opt_table, "-b", "0", env={"PGHOST": "127.0.0.1", "PGPORT": "1"})
    assert proc.returncode == 1
    assert "cannot connect" in proc.stderr


def test_dbname_takes_a_conninfo_and_options_override_it(pg: LabCluster, opt_table: str) -> None:
    conninfo = f"host=127.0.0.1 port={pg.port} user=postgres dbname=postgres"
    proc = run("diagnose", "-d", conninfo, "-t", opt_table, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["summary"]["errors"] == 0
    assert any(r["relation"].endswith(opt_table) for r in doc["relations"])
    # -p given separately wins over the port inside the conninfo (libpq's rule for an expanded dbname)
    bad = "host=127.0.0.1 port=1 user=postgres dbname=postgres"
    proc = run("diagnose", "-d", bad, "-p", str(pg.port), "-t", opt_table, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    # a URI is a conninfo too
    proc = run("inspect", "-d", f"postgresql://postgres@127.0.0.1:{pg.port}/postgres", "-t", opt_table, "-b", "0")
    assert proc.returncode == 0, proc.stderr


def test_host_port_user_and_a_database_name(pg: LabCluster, opt_table: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run(
        "salvage", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-d", "postgres", "-t", opt_table,
        "--out", str(out), "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows"]["saved"] == 500
    # --dsn, the old spelling of -d, still works; so do --report-format and --format csv (now -F csv)
    proc = run(
        "salvage", "--dsn", pg.dsn(), "--table", opt_table, "--out", str(tmp_path / "o2"), "--format", "csv",
        "--report-format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "o2").glob("*.csv"))


def test_pgpass_and_no_password(pg: LabCluster, opt_table: str, tmp_path: Path) -> None:
    """A role that needs a password: ~/.pgpass supplies it; without it -w fails at once instead of prompting."""
    exec_sql(pg, "DROP ROLE IF EXISTS opt_pw; CREATE ROLE opt_pw LOGIN SUPERUSER PASSWORD 'opt-secret'")
    hba = pg.pgdata / "pg_hba.conf"
    original = hba.read_text()
    stat = hba.stat()
    hba.write_text("host all opt_pw 127.0.0.1/32 scram-sha-256\n" + original)
    os.chown(hba, stat.st_uid, stat.st_gid)
    exec_sql(pg, "SELECT pg_reload_conf()")
    try:
        home = tmp_path / "home"
        home.mkdir()
        args = ("inspect", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "opt_pw", "-d", "postgres", "-t", opt_table)
        proc = run(*args, "-b", "0", "-w", env={"HOME": str(home)})
        assert proc.returncode == 1
        assert "password" in proc.stderr
        pgpass = home / ".pgpass"
        pgpass.write_text(f"127.0.0.1:{pg.port}:*:opt_pw:opt-secret\n")
        pgpass.chmod(0o600)
        proc = run(*args, "-b", "0", "-w", env={"HOME": str(home)})
        assert proc.returncode == 0, proc.stderr
    finally:
        hba.write_text(original)
        exec_sql(pg, "SELECT pg_reload_conf()")


def test_pgdata_from_the_option_and_the_environment(pg: LabCluster) -> None:
    pgdata = str(pg.pgdata)
    by_option = run("control", "-D", pgdata, "--format", "json")
    by_env = run("control", "--format", "json", env={"PGDATA": pgdata})
    by_argument = run("control", pgdata, "--format", "json")
    assert by_option.returncode == by_env.returncode == by_argument.returncode == 0, by_env.stderr
    assert json.loads(by_option.stdout)["system_identifier"] == json.loads(by_env.stdout)["system_identifier"]
    assert by_argument.stdout == by_option.stdout
    files = run("files", "--format", "json", env={"PGDATA": pgdata})
    assert files.returncode == 0, files.stderr
    assert any(r["path"].startswith("base/") for r in json.loads(files.stdout))
    scan = run("scan", "--live", "--format", "json", env={"PGDATA": pgdata})
    assert scan.returncode in (0, 2), scan.stderr
    assert json.loads(scan.stdout)["pgdata"] == pgdata
    nothing = run("control")
    assert nothing.returncode == 64
    assert "-D" in nothing.stderr and "PGDATA" in nothing.stderr
    both = run("control", pgdata, "-D", pgdata)
    assert both.returncode == 64


# ------------------------------------------------------------------------------------------ without a server


def parse(*argv: str) -> argparse.Namespace:
    args = get_parser().parse_args(list(argv))
    options.resolve(args)
    return args


def test_one_spelling_per_option_across_commands() -> None:
    parser = get_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        flags = {s: a for a in command._actions for s in a.option_strings}
        if "--dbname" in flags:
            for short, long in (("-d", "--dbname"), ("-h", "--host"), ("-p", "--port"), ("-U", "--username")):
                assert flags[short] is flags[long], name
        if "--table" in flags:
            assert flags["-t"] is flags["--table"], name
        if "--pgdata" in flags:
            assert flags["-D"] is flags["--pgdata"], name
        if "--progress" in flags:
            assert flags["-P"] is flags["--progress"], name
        if "--format" in flags and name != "salvage":
            assert set(flags["--format"].choices or ()) >= {"text", "json"}, name
        assert "-?" in flags and "--help" in flags, name
        for old in ("--report-format", "--dump-format"):
            assert old not in flags or flags[old].help == argparse.SUPPRESS


def test_conninfo_is_built_as_libpq_reads_it() -> None:
    assert options.build_conninfo() == ""
    assert options.build_conninfo("shop") == "dbname=shop"
    assert "port=6000" in options.build_conninfo("host=a port=5432 dbname=x", port="6000")
    args = parse("diagnose", "-h", "db1", "-p", "5433", "-U", "alice", "-d", "shop")
    assert args.dsn == "dbname=shop host=db1 port=5433 user=alice"
    assert args.conn_words == "-h db1 -p 5433 -U alice -d shop"
    assert parse("diagnose").dsn == ""  # nothing given: PG* variables and libpq defaults
    assert parse("scan", "/x").dsn is None  # optional connection, none given: offline
    with_opts = options.conn_words("host=h dbname='my db' sslmode=require password=secret")
    assert "secret" not in with_opts and "sslmode=require" in with_opts and with_opts.startswith("-h h -d ")


def test_durations_share_one_syntax() -> None:
    assert options.duration("500ms") == 0.5
    assert options.duration("30s") == 30 == options.duration("30")
    assert options.duration("10min") == 600
    assert options.duration("1h") == 3600
    with pytest.raises(argparse.ArgumentTypeError):
        options.duration("ten")
    assert parse("diagnose", "--statement-timeout", "2min").statement_timeout == 120
    assert parse("salvage", "-t", "x", "--out", "/tmp/x", "--statement-timeout", "1500ms").statement_timeout == 1.5
    assert parse("dump-tables", "--out", "/tmp/x", "--timeout", "1min").timeout == 60


def test_progress_without_a_terminal_prints_lines(pg: LabCluster, opt_table: str, tmp_path: Path) -> None:
    """-P with stderr a pipe (a log, CI): plain lines, one per interval, instead of a live bar that shows nothing."""
    env = {"PGSURGEON_PROGRESS_INTERVAL": "0"}
    scan = run("scan", "-D", str(pg.pgdata), "--live", "-P", env=env)
    assert scan.returncode in (0, 2), scan.stderr
    lines = [ln for ln in scan.stderr.splitlines() if ln.startswith("scan: ")]
    assert len(lines) >= 2 and any("MB/s" in ln for ln in lines) and lines[-1] == "scan: done"
    assert "\r" not in scan.stderr
    salvage = run("salvage", "-d", pg.dsn(), "-t", opt_table, "--out", str(tmp_path / "p"), "-P", env=env)
    assert salvage.returncode == 0, salvage.stderr
    assert re.search(r"^salvage: \d+ of \d+ blocks", salvage.stderr, re.M) and "\r" not in salvage.stderr
