"""``pgsurgeon dump-tables``: one pg_dump per table in parallel; a damaged table (one whose pages raise an error,
one whose data crashes the backend) does not stop the healthy ones, which are all saved."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fix_corrupt import CorruptLabs, cli, wait_ready
from pgsurgeon.salvage.dump import find_pg_dump
from test_salvage import break_jsonb, make_table, sql, truth_of


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "dump")
    yield labs
    labs.close()


@pytest.mark.parametrize("version", ["15", "18"])
def test_healthy_tables_saved_when_others_are_damaged(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    lab = labs.get(version)
    sql(lab, 'CREATE SCHEMA IF NOT EXISTS "Other S"')
    healthy = ["public.ok_one", "public.ok_two", 'Other S.Mixed "Case" t']
    sql(
        lab,
        "CREATE TABLE ok_one AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g",
        "CREATE TABLE ok_two AS SELECT g AS id, g * 2 AS v FROM generate_series(1, 5000) g",
        'CREATE TABLE "Other S"."Mixed ""Case"" t" (a int, "B c" text)',
        'INSERT INTO "Other S"."Mixed ""Case"" t" SELECT g, \'x\' FROM generate_series(1, 100) g',
    )
    make_table(lab, "bad_page", n=600)
    make_table(lab, "bad_value", n=600)
    (path,) = sql(lab, "SELECT pg_relation_filepath('bad_page'::regclass)")[0]
    code, _, err = cli(
        "corrupt",
        "header",
        "--field",
        "pd_special",
        "--pgdata",
        str(lab.pgdata),
        "--file",
        str(path),
        "--block",
        "2",
        "--seed",
        "1",
    )
    assert code == 0, err
    wait_ready(lab)
    break_jsonb(lab, "bad_value", truth_of(lab, "bad_value"), "40")
    out = tmp_path / "dumps"
    code, stdout, err = cli("dump-tables", "--dsn", lab.dsn(), "--out", str(out), "-j", "3", "--format", "json")
    assert code == 2, err
    summary = json.loads(stdout)
    by_table = {t["table"]: t for t in summary["tables"]}
    assert set(healthy) <= set(by_table)
    for name in healthy:
        t = by_table[name]
        assert t["status"] == "ok", t
        assert Path(t["file"]).is_file() and Path(t["log"]).is_file()
    failed = {t["table"] for t in summary["tables"] if t["status"] != "ok"}
    # PostgreSQL 15 reads a page with pd_special 8000 without complaint (the rows come back) and may crash on
    # the damaged jsonb; 18 refuses the page (checksums) and errors or crashes on the jsonb
    assert "public.bad_value" in failed
    assert failed <= {"public.bad_page", "public.bad_value"}
    if version == "18":
        assert "public.bad_page" in failed
    assert summary["saved"] == len(summary["tables"]) - len(failed)
    assert (out / "summary.json").is_file() and (out / "schema.sql").is_file()
    bad_log = Path(by_table["public.bad_value"]["log"]).read_text()
    assert "exit status" in bad_log and by_table["public.bad_value"]["error"]
    # the dumps restore: their TOC lists the table data
    pg_dump = find_pg_dump(int(version), None)
    restore = pg_dump.with_name("pg_restore")
    lib = pg_dump.resolve().parent.parent / "lib"
    env = {"LD_LIBRARY_PATH": str(lib)} if lib.is_dir() else {}
    toc = subprocess.run(
        [str(restore), "--list", by_table["public.ok_one"]["file"]], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert "TABLE DATA public ok_one" in toc


@pytest.mark.parametrize("version", ["15", "18"])
def test_password_never_on_the_command_line(
    labs: CorruptLabs, tmp_path: Path, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19, point 6: pg_dump's argv is readable by every local user (ps), so a password in the dsn reaches
    pg_dump through its environment only. The role must authenticate with scram-sha-256, so the dump succeeding
    proves the password did arrive."""
    from psycopg.conninfo import make_conninfo

    import pgsurgeon.salvage.dump as dumping

    lab = labs.get(version)
    secret = "s3cr=t 'pass' word"
    sql(
        lab,
        "DROP ROLE IF EXISTS dump_pw",
        "SET password_encryption = 'scram-sha-256'",
        "CREATE ROLE dump_pw LOGIN SUPERUSER PASSWORD " + "'" + secret.replace("'", "''") + "'",
        "CREATE TABLE IF NOT EXISTS pw_t AS SELECT g AS id FROM generate_series(1, 10) g",
    )
    hba = lab.pgdata / "pg_hba.conf"
    original = hba.read_text()
    rules = "".join(
        f"{kind} all dump_pw {addr} scram-sha-256\n"
        for kind, addr in (("local", ""), ("host", "127.0.0.1/32"), ("host", "::1/128"))
    )
    hba.write_text(rules + original)
    sql(lab, "SELECT pg_reload_conf()")
    seen: list[tuple[list[str], dict[str, str]]] = []
    real_run = dumping.subprocess.run

    def spy(cmd: list[str], *args: object, **kwargs: object) -> object:
        env = kwargs.get("env")
        seen.append((list(cmd), dict(env) if isinstance(env, dict) else {}))
        return real_run(cmd, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(dumping.subprocess, "run", spy)
    try:
        dsn = make_conninfo(lab.dsn(), user="dump_pw", password=secret)
        out = tmp_path / "dumps"
        code, stdout, err = cli("dump-tables", "--dsn", dsn, "--out", str(out), "--table", "public.pw_t")
        assert code == 0, stdout + err
    finally:
        hba.write_text(original)
        sql(lab, "SELECT pg_reload_conf()")
    dumps = [(cmd, env) for cmd, env in seen if "--dbname" in " ".join(cmd)]
    assert len(dumps) == 2  # the schema and the table
    for cmd, env in dumps:
        assert not any("s3cr" in arg for arg in cmd), cmd
        assert env.get("PGPASSWORD") == secret
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in (".log", ".json", ".sql"):
            assert "s3cr" not in written.read_text(errors="replace"), written
