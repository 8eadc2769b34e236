"""explain reads a damage message out of every log format and wrapper issue 28 names: stderr with several
log_line_prefix values, csvlog (a WARNING too), jsonlog, syslog, psql, pg_dump/pg_restore, JDBC, psycopg,
Greenplum and Citus, in the server's own language or another, and the output of pg_checksums, pg_amcheck and
pg_verifybackup. Each line is real in shape; none needs a server."""

from __future__ import annotations

import pytest

from pgsurgeon.explain import explain_text

MSG = "invalid page in block 285 of relation base/16384/29724"
GERMAN = "ungültige Seite in Block 285 von Relation base/16384/29724"

WRAPPED = {
    "stderr_default_prefix": f"2024-05-01 10:00:00.123 UTC [4242] ERROR:  {MSG}",
    "stderr_user_db_prefix": (
        f"2024-05-01 10:00:00 UTC [4242]: [3-1] user=app,db=shop,app=psql,client=10.0.0.7 ERROR:  {MSG}"
    ),
    "stderr_pid_only": f"[4242] ERROR:  {MSG}",
    "csvlog": '2024-05-01 10:00:00.123 UTC,"app","shop",4242,"[local]",6634a0b0.1092,1,"SELECT",2024-05-01 10:00:00 '
    f'UTC,3/7,0,ERROR,XX001,"{MSG}",,,,,,"SELECT * FROM orders;",,,"psql","client backend",,0',
    "csvlog_warning": '2024-05-01 10:00:00.123 UTC,"app","shop",4242,"[local]",6634a0b0.1092,1,"SELECT",2024-05-01 '
    f'10:00:00 UTC,3/7,0,WARNING,XX001,"{MSG}; zeroing out page",,,,,,,,,"psql","client backend",,0',
    "jsonlog": '{"timestamp":"2024-05-01 10:00:00.123 UTC","user":"app","dbname":"shop","pid":4242,'
    f'"error_severity":"ERROR","state_code":"XX001","message":"{MSG}","backend_type":"client backend"}}',
    "syslog": f"May  1 10:00:00 db1 postgres[4242]: [5-1] 2024-05-01 10:00:00 UTC [4242] ERROR:  {MSG}",
    "psql": f"psql:restore.sql:12: ERROR:  {MSG}",
    "pg_restore": f"pg_restore: error: could not execute query: ERROR:  {MSG}",
    "jdbc": f"org.postgresql.util.PSQLException: ERROR: {MSG}\n  Where: SQL statement",
    "psycopg": f"psycopg.errors.DataCorrupted: {MSG}",
    "psycopg2": f"psycopg2.errors.DataCorrupted: {MSG}",
    "greenplum": f"ERROR:  {MSG}  (seg3 10.0.0.5:40003 pid=1234)",
    "citus": f"ERROR:  {MSG}\nCONTEXT:  while executing command on worker-1:5432",
    "stderr_german": f"2024-05-01 10:00:00.123 CEST [4242] FEHLER:  {GERMAN}",
    "csvlog_german_warning": '2024-05-01 10:00:00.123 CEST,"app","shop",4242,"[local]",6634a0b0.1092,1,"SELECT",'
    f'2024-05-01 10:00:00 CEST,3/7,0,WARNUNG,XX001,"{GERMAN}; fülle Seite mit Nullen",,,,,,,,,"psql",'
    '"client backend",,0',
    "stderr_russian": "2024-05-01 10:00:00 UTC [4242] ОШИБКА:  неверная страница в блоке 285 отношения "
    "base/16384/29724",
    "stderr_french": "2024-05-01 10:00:00 UTC [4242] ERREUR:  page invalide dans le bloc 285 de la relation "
    "base/16384/29724",
}


@pytest.mark.parametrize("name", WRAPPED)
def test_every_format_and_wrapper_gives_the_message_and_its_values(name: str) -> None:
    found, _ = explain_text(WRAPPED[name])
    assert [e.pattern.id for e in found][:1] == ["invalid_page"], (name, found)
    assert found[0].values["block"] == "285" and found[0].values["relpath"] == "base/16384/29724"


def test_pg_dump_in_english() -> None:
    text = (
        'pg_dump: error: Dumping the contents of table "orders" failed: PQgetResult() failed.\n'
        f"pg_dump: detail: Error message from server: ERROR:  {MSG}\n"
        "pg_dump: detail: Command was: COPY public.orders (id) TO stdout;"
    )
    found, _ = explain_text(text)
    assert "invalid_page" in {e.pattern.id for e in found}


TOOLS = {
    "pg_checksums": (
        'pg_checksums: error: checksum verification failed in file "/data/base/5/16440.1", block 12: calculated '
        "checksum 5C1A but block contains 9F22",
        "pg_checksums",
    ),
    "pg_checksums_summary": ("Bad checksums:  3", "pg_checksums_summary"),
    "pg_amcheck_heap": (
        'heap table "shop.public.orders", block 3, offset 7:\n    xmin 3000000000 precedes relation freeze '
        "threshold 0:716",
        "amcheck_heap",
    ),
    "pg_amcheck_btree": (
        'btree index "shop.public.orders_pkey":\n    ERROR:  item order invariant violated for index "orders_pkey"',
        "btree_amcheck",
    ),
    "pg_verifybackup_checksum": ('pg_verifybackup: error: checksum mismatch for file "base/5/16440"', "verifybackup"),
    "pg_verifybackup_size": (
        'pg_verifybackup: error: "base/5/16440" has size 8192 on disk but size 16384 in the manifest',
        "verifybackup",
    ),
    "base_backup_checksum": (
        'WARNING:  checksum verification failed in file "./base/5/16440", block 3: calculated 5C1A but expected 9F22',
        "pg_checksums",
    ),
}


@pytest.mark.parametrize("name", TOOLS)
def test_tool_output_is_recognised(name: str) -> None:
    text, pattern = TOOLS[name]
    assert [e.pattern.id for e in explain_text(text)[0]][:1] == [pattern]


FIELD_REPORT = [
    ("ERROR:  MultiXactId 1285 wasn't created yet -- apparent overflow", "multixact_future"),
    ("ERROR:  invalid page header in block 3 of relation 1663/18421/31582", "invalid_page"),
    ("ERROR:  invalid memory alloc request size 1073741827", "alloc_size"),
    ("ERROR:  cache lookup failed for relation 16434", "cache_lookup"),
    ('ERROR:  cache lookup failed for attribute "x" of relation 16434', "cache_lookup"),
    ("ERROR:  corrupted item pointer: offset = 9000, size = 40", "line_pointer"),
]


@pytest.mark.parametrize(("text", "pattern"), FIELD_REPORT, ids=[t[8:40] for t, _ in FIELD_REPORT])
def test_the_field_report_messages(text: str, pattern: str) -> None:
    assert [e.pattern.id for e in explain_text(text)[0]] == [pattern]


ORDINARY = [
    "ERROR:  could not serialize access due to concurrent update",
    "ERROR:  out of memory\nDETAIL:  Failed on request of size 8192.",
    "FEHLER:  doppelter Schlüsselwert verletzt Unique-Constraint »orders_pkey«",
    'ERROR:  could not open file "base/16384/29724": maximum nesting depth exceeded',
    # two sessions creating the same name at once (CREATE TABLE IF NOT EXISTS, CREATE SCHEMA IF NOT EXISTS)
    'ERROR:  duplicate key value violates unique constraint "pg_type_typname_nsp_index"\n'
    "DETAIL:  Key (typname, typnamespace)=(orders, 2200) already exists.",
    'ERROR:  duplicate key value violates unique constraint "pg_namespace_nspname_index"',
    "ERROR:  RADIUS response from 10.0.0.1 has corrupt length: 20 (actual length 12)",
]


def test_a_duplicate_in_a_catalog_index_on_oids_is_damage() -> None:
    (exp,), _ = explain_text('ERROR:  duplicate key value violates unique constraint "pg_class_oid_index"')
    assert exp.pattern.id == "catalog_duplicate"


@pytest.mark.parametrize("text", ORDINARY, ids=[t[:30] for t in ORDINARY])
def test_ordinary_errors_stay_ordinary(text: str) -> None:
    assert all(e.pattern.kind != "damage" for e in explain_text(text)[0])
