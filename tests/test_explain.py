"""`pgsurgeon explain`: each error text the corruption simulator's issue lists maps to the modes that produce it, the
values of the message are put into the next commands, log excerpts are explained line by line, and every pattern
of the catalogue recognises its own example and names only real simulator modes. No server needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pgsurgeon.cli import main
from pgsurgeon.explain import EXAMPLES, PATTERNS, explain_text, markdown
from pgsurgeon.simulate.modes import MODES

DOCS = Path(__file__).resolve().parent.parent / "docs" / "errors.md"


def modes_for(text: str) -> set[str]:
    found, _ = explain_text(text)
    assert found, f"not recognised: {text}"
    return {m.mode for m in found[0].pattern.modes}


# The error texts of the simulator issue (and the symptoms its modes produce on 15 and 18), with the modes that
# must be named for each.
SIMULATOR_ERRORS = [
    ("invalid page in block 3 of relation base/5/16437", {"header"}),
    ('invalid page in block 3 of relation "base/5/16437"', {"header", "checksum", "torn", "misdirected"}),
    ("invalid memory alloc request size 1073741827", {"item-ids", "tuple-data", "tuple-header"}),
    ("server process (PID 4242) was terminated by signal 11: Segmentation fault", {"item-ids", "tuple-header"}),
    ("terminating connection because of crash of another server process", {"item-ids"}),
    ("could not access status of transaction 3000000000", {"tuple-header"}),
    ("MultiXactId 50000 has not been created yet -- apparent wraparound", {"tuple-header"}),
    ("MultiXactId 3 does no longer exist -- apparent wraparound", {"tuple-header"}),
    ("unexpected chunk number 5 (expected 1) for toast value 16472 in pg_toast_16467", {"toast"}),
    ("missing chunk number 0 for toast value 16472 in pg_toast_16467", {"toast"}),
    ("page verification failed, calculated checksum 25135 but expected 36026", {"checksum", "torn", "misdirected"}),
    ('could not read block 21 in file "base/5/16434": read only 0 of 8192 bytes', {"truncate"}),
    ('could not read blocks 21..21 in file "base/5/16434": read only 0 of 8192 bytes', {"truncate"}),
    ('could not open file "base/5/16434.1" (target block 131072): No such file or directory', {"missing-segment"}),
    ('index "t_pkey" contains unexpected zero page at block 4', {"zero"}),
    ('index "t_pkey" contains corrupted page at block 1', {"btree"}),
    ('index "t_hash" contains corrupted page at block 34', {"hash"}),
    ('index "t_hash" is not a hash index', {"hash"}),
    ("corrupted BRIN index: inconsistent range map", {"brin"}),
    ("line pointer redirection to item at offset 5585 exceeds maximum offset 4", {"item-ids", "item-id"}),
    ("found toasted toast chunk for toast value 16472 in pg_toast_16467", {"toast"}),
    ("unexpected chunk size 100 (expected 1996) in chunk 0 of 3 for toast value 1 in pg_toast_2", {"toast"}),
    ("compressed pglz data is corrupt", {"tuple-data"}),
    ("invalid compression method id 3", {"tuple-data"}),
    ("corrupted page pointers: lower = 9000, upper = 1712, special = 8192", {"header"}),
    ("found xmin 3000000000 from before relfrozenxid 716", {"tuple-header"}),
]


@pytest.mark.parametrize(("text", "modes"), SIMULATOR_ERRORS, ids=[t[:40] for t, _ in SIMULATOR_ERRORS])
def test_simulator_errors_map_to_their_modes(text: str, modes: set[str]) -> None:
    assert modes <= modes_for(text)
    assert modes_for("ERROR:  " + text) == modes_for(text)  # with the log's severity prefix


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.id for p in PATTERNS])
def test_each_pattern_explains_its_example_and_names_real_modes(pattern: object) -> None:
    from pgsurgeon.explain import Pattern

    assert isinstance(pattern, Pattern)
    found, unknown = explain_text(EXAMPLES[pattern.id])
    assert [e.pattern.id for e in found] == [pattern.id] and not unknown
    exp = found[0]
    assert "{" not in exp.meaning(), exp.meaning()
    for step in exp.steps():
        assert "{" not in step.command or (step.kind == "sql" and "{" not in step.command.replace("{}", ""))
    for m in exp.pattern.modes:
        assert m.mode in MODES, m.mode
        assert set(m.fields) <= set(MODES[m.mode].fields), (m.mode, m.fields)


def test_invalid_page_next_steps_carry_the_values() -> None:
    (exp,), _ = explain_text(
        "2026-11-22 02:39:14 UTC [6013] ERROR:  invalid page in block 285 of relation base/16384/29724"
    )
    commands = [s.command for s in exp.steps()]
    assert 'pgsurgeon inspect "$PGDATA"/base/16384/29724 -b 285' in commands
    assert any(c.startswith('pgsurgeon scan "$PGDATA" --database 16384 -t 29724') for c in commands)
    assert any("pg_relation_filenode(oid) = 29724" in c and "oid = 16384" in c for c in commands)
    assert 'pgsurgeon salvage -d "$DB" -t "$REL" --out salvage-29724' in commands
    assert 'pgsurgeon repair -d "$DB" -t "$REL"' in commands
    assert any("database with OID 16384" in s.what for s in exp.steps())
    assert exp.values["block"] == "285" and exp.values["dboid"] == "16384"


def test_version_differences_and_forks() -> None:
    (e18,), _ = explain_text('ERROR:  invalid page in block 3 of relation "pg_tblspc/16500/PG_18_202506291/5/16437_vm"')
    assert e18.values["relpath"] == "pg_tblspc/16500/PG_18_202506291/5/16437_vm"
    assert (e18.values["dboid"], e18.values["filenode"], e18.values["fork"]) == ("5", "16437", "vm")
    assert "map the server can rebuild" in e18.meaning()
    (shared,), _ = explain_text("invalid page in block 0 of relation global/1262")
    assert any("shared catalogs" in s.what for s in shared.steps())
    (seg,), _ = explain_text('could not read block 131075 in file "base/5/16384.1": read only 100 of 8192 bytes')
    assert seg.values["relfile"] == "base/5/16384" and seg.values["segment"] == "1"
    (pgc,), _ = explain_text(EXAMPLES["pg_checksums"])
    assert pgc.values["block"] == str(131072 + 12)  # pg_checksums counts blocks within the segment file
    (old_multi,), _ = explain_text("ERROR:  MultiXactId 911379 wasn't created yet -- apparent overflow")  # 9.3's
    assert old_multi.pattern.id == "multixact_future" and old_multi.values["multi"] == "911379"
    # pg_dump's wrapper alone names the table; with the server's line after it, it names that message's table
    (dump,), _ = explain_text(EXAMPLES["pg_dump_table"])
    assert dump.values["table"] == "orders" and any("-t orders" in s.command for s in dump.steps())
    (page,), _ = explain_text(
        EXAMPLES["pg_dump_table"] + "\npg_dump: error: Error message from server: ERROR:  invalid page in block 988 "
        "of relation base/16384/16414"
    )
    assert page.pattern.id == "invalid_page" and page.values["table"] == "orders"


def test_xact_status_names_the_missing_file() -> None:
    (exp,), _ = explain_text(
        "ERROR:  could not access status of transaction 3353862211\n"
        'DETAIL:  Could not open file "pg_xact/0C7E": No such file or directory.'
    )
    assert exp.values["xact_file"] == "pg_xact/0C7E"
    assert exp.values["slru"] == "pg_xact/0C7E"
    assert "pg_xact/0C7E" in exp.meaning()
    assert exp.context and exp.context[0].startswith("DETAIL:")


def test_misdirected_checksum_hint() -> None:
    (exp,), _ = explain_text("page verification failed, calculated checksum 62140 but expected 62139")
    assert "misdirected" in exp.meaning()
    (far,), _ = explain_text("page verification failed, calculated checksum 25135 but expected 36026")
    assert "misdirected write or swapped" not in far.meaning()


def test_log_excerpt_each_line_once() -> None:
    log = "\n".join(
        [
            "2026-11-22 02:39:14 UTC [1] ERROR:  invalid page in block 3 of relation base/5/16434",
            "2026-11-22 02:39:14 UTC [1] STATEMENT:  select * from t",
            "2026-11-22 02:39:15 UTC [2] ERROR:  invalid page in block 3 of relation base/5/16434",
            "2026-11-22 02:39:16 UTC [3] LOG:  checkpoint complete: wrote 3 buffers",
            'heap table "db.public.t", block 5, offset 3:',
            "    line pointer redirection to item at offset 2930 exceeds maximum offset 169",
            "ERROR:  missing chunk number 0 for toast value 16486 in pg_toast_16434",
        ]
    )
    found, unknown = explain_text(log)
    assert [e.pattern.id for e in found] == ["invalid_page", "amcheck_heap", "toast_missing_chunk"]
    assert found[0].count == 2
    assert unknown == ["LOG:  checkpoint complete: wrote 3 buffers"]
    amcheck = found[1]
    assert amcheck.values["table"] == "public.t" and amcheck.values["block"] == "5"
    assert "block 5, line pointer 3 of public.t" in amcheck.meaning()
    commands = [s.command for s in amcheck.steps()]
    assert "pgsurgeon inspect -t public.t -b 5" in commands
    assert "psql -c \"SELECT heap_force_kill('public.t'::regclass, ARRAY['(5,3)']::tid[])\"" in commands
    assert "pgsurgeon salvage -t public.t --out salvage-public.t" in commands


def test_cli_text_json_and_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "invalid page in block 285 of relation base/16384/29724"]) == 0
    out = capsys.readouterr().out
    assert 'pgsurgeon inspect "$PGDATA"/base/16384/29724 -b 285' in out
    assert "header (pd_lower" in out
    log = tmp_path / "postgresql.log"
    log.write_text(EXAMPLES["xact_status"] + "\n" + EXAMPLES["toast_chunk_number"] + "\nunrelated\n")
    assert main(["explain", "--file", str(log), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in doc["explained"]] == ["xact_status", "toast_chunk_number"]
    assert doc["unrecognised"] == ["unrelated"]
    assert {"mode": "toast", "fields": ["chunk_seq"], "when": ""} in doc["explained"][1]["modes"]
    assert main(["explain", "all is well"]) == 1
    assert "no known error" in capsys.readouterr().err
    assert main(["explain", "--list"]) == 0
    assert "invalid_page" in capsys.readouterr().out


def test_docs_match_the_catalogue() -> None:
    assert DOCS.read_text(encoding="utf-8") == markdown(), "regenerate: python -m pgsurgeon.explain > docs/errors.md"


# ------------------------------------------------------------------------------------------ texts as people paste them

SEEDS = Path(__file__).resolve().parent.parent / "docs" / "seed-error-texts.md"


def seed_blocks() -> list[str]:
    """The quoted texts of docs/seed-error-texts.md, without the '-- what this is' lines the document adds."""
    blocks = re.findall(r"```text\n(.*?)```", SEEDS.read_text(encoding="utf-8"), re.S)
    return ["\n".join(ln for ln in b.splitlines() if not ln.startswith("-- ")) for b in blocks]


@pytest.mark.parametrize("block", seed_blocks(), ids=lambda b: b.splitlines()[0][:40])
def test_every_seed_text_is_recognised(block: str) -> None:
    found, unknown = explain_text(block)
    assert not unknown, unknown
    assert found and all(e.pattern.kind == "damage" for e in found)


def test_seed_texts_as_printed() -> None:
    found, _ = explain_text("XX000 \u2013 MultiXactId 1074710815 has not been created yet \u2014 apparent wraparound")
    assert [e.pattern.id for e in found] == ["multixact_future"] and found[0].values["multi"] == "1074710815"
    found, _ = explain_text("WARNING: Concurrent insert in progress within table \u201ctest_table\u201d")
    assert [e.pattern.id for e in found] == ["concurrent_insert"] and found[0].values["table"] == "test_table"
    found, _ = explain_text("58P01 \u2013 could not access status of transaction 3047172894")
    assert found[0].pattern.id == "xact_status" and "--xid 3047172894" in found[0].steps()[0].command


def test_sequences_are_recreated_not_carved() -> None:
    texts = [
        'pg_dump: error: query to get data of sequence "test_table_bytea_id2_seq" returned 0 rows (expected 1)',
        "pg_dump: error: query failed: ERROR:  invalid page in block 0 of relation base/16384/66427\n"
        "pg_dump: error: query was: SELECT last_value, is_called FROM public.test_table_bytea_id_seq",
        'ERROR:  bad magic number in sequence "s1": 00000000',
    ]
    for text in texts:
        (exp,), _ = explain_text(text)
        commands = " ".join(s.command for s in exp.steps())
        assert "salvage" not in commands and "carv" not in commands.lower() and "repair" not in commands, commands
        assert "DROP SEQUENCE" in commands or "IDENTITY" in commands


@pytest.mark.parametrize(
    "text",
    [
        'ERROR:  syntax error at or near "SELEC"',
        "ERROR:  deadlock detected\nDETAIL:  Process 1 waits for ShareLock on transaction 5; blocked by process 2.",
        'ERROR:  duplicate key value violates unique constraint "orders_pkey"\nDETAIL:  Key (id)=(1) already exists.',
        "ERROR:  canceling statement due to statement timeout",
        'ERROR:  relation "nope" does not exist at character 15',
        'FATAL:  password authentication failed for user "app"',
    ],
)
def test_ordinary_errors_get_no_corruption_diagnosis(text: str) -> None:
    found, unknown = explain_text(text)
    assert found and not unknown
    assert all(e.pattern.kind == "ordinary" and not e.steps() and not e.pattern.modes for e in found)


@pytest.mark.parametrize(
    ("text", "pattern_id"),
    [
        # csvlog: fields quoted, quotes inside doubled, DETAIL in its own field
        (
            '2026-11-22 02:39:14.123 UTC,"postgres","shop",6013,"[local]",6740f,1,"SELECT",2026-11-22 02:39:10 UTC,'
            '3/4,0,ERROR,XX001,"invalid page in block 7 of relation ""base/5/16434""",,,,,,"select * from t",,,"psql"',
            "invalid_page",
        ),
        (
            "org.postgresql.util.PSQLException: ERROR: missing chunk number 0 for toast value 16486 in pg_toast_16434\n"
            '  Where: SQL statement "SELECT 1"',
            "toast_missing_chunk",
        ),
        ("psycopg.errors.DataCorrupted: invalid page in block 3 of relation base/5/16434", "invalid_page"),
        (
            # a query's ERROR: the same DETAIL comes with a garbage XID in a tuple header
            "psycopg2.errors.InternalError_: could not access status of transaction 3000000000\n"
            'DETAIL:  Could not open file "pg_xact/0B2D": No such file or directory.',
            "xact_status",
        ),
        (
            # at startup (FATAL): the next XID's page is missing, a lost status file (issue 29)
            "FATAL:  could not access status of transaction 726\n"
            'DETAIL:  Could not open file "pg_xact/0000": No such file or directory.',
            "xact_file_missing",
        ),
        (
            # a pg_multixact file gone: the number is a MultiXactId or a member offset, not a transaction
            "ERROR:  could not access status of transaction 4\n"
            'DETAIL:  Could not open file "pg_multixact/members/0000": No such file or directory.',
            "multixact_file_missing",
        ),
        ("error: MultiXactId 50000 has not been created yet -- apparent wraparound", "multixact_future"),
        ("psql:restore.sql:12: ERROR:  compressed pglz data is corrupt", "compressed_corrupt"),
        ("pg_restore: error: could not execute query: ERROR:  cache lookup failed for type 16999", "cache_lookup"),
        (
            '2026-11-22 02:39:14 UTC [6013] app@shop ERROR:  XX002: index "t_pkey" contains corrupted page at block 1',
            "index_corrupted_page",
        ),
        # wrapped mid-message by a terminal or mail client
        ("ERROR:  could not access status of\ntransaction 3000000000", "xact_status"),
        (
            "ERROR:  unexpected chunk number 5 (expected 1) for toast\nvalue 16472 in pg_toast_16467",
            "toast_chunk_number",
        ),
        # cut off
        ("ERROR:  could not access status of transac", "xact_status"),
        ("ERROR:  invalid page in block 285 of relation base/16384/29", "invalid_page"),
        ('could not open relation mapping file "global/pg_filenode.map": Input/output error', "relmapper_open"),
        ("compressed data is corrupt", "compressed_corrupt"),
        ("uncommitted xmin 741 from before xid cutoff 800 needs to be frozen", "uncommitted_xmin"),
        ('failed to re-find parent key in index "t_pkey" for split pages 4/9', "btree_structure"),
        ('could not seek to end of file "base/5/16434": Input/output error', "seek_failed"),
        ('could not read block 7 in file "base/5/16434": Input/output error', "read_io_error"),
    ],
)
def test_pasted_forms_are_read(text: str, pattern_id: str) -> None:
    found, unknown = explain_text(text)
    assert [e.pattern.id for e in found] == [pattern_id], (found, unknown)
    assert not unknown


def test_next_steps_are_runnable_with_the_options_given() -> None:
    from pgsurgeon.explain import Where

    where = Where(conn="-h db1 -p 5433 -U dba -d shop", pgdata="/srv/pg data")
    for pattern_id, example in EXAMPLES.items():
        found, _ = explain_text(example, where)
        for exp in found:
            for step in exp.steps():
                assert "$DSN" not in step.command and "<the" not in step.command, (pattern_id, step.command)
                if step.command.startswith(("pgsurgeon diagnose", "pgsurgeon salvage", "pgsurgeon repair")):
                    # the database is the one given, or the one the message's path names ($DB, found before)
                    assert "-h db1 -p 5433 -U dba -d " in step.command, step.command
                if "inspect /" in step.command or "scan " in step.command:
                    assert "'/srv/pg data'" in step.command, step.command
    (toast,), _ = explain_text(EXAMPLES["toast_chunk_number"], where)
    commands = [s.command for s in toast.steps()]
    assert any("reltoastrelid = 'pg_toast.pg_toast_16467'" in c and c.startswith("REL=$(psql -h db1") for c in commands)
    assert any("pg_column_toast_chunk_id" in c and "= 16472" in c for c in commands)


# PostgreSQL's own reports about damaged data, in wordings from 9.6 to 18 (heap, btree, GIN/GiST/hash/BRIN/SP-GiST,
# TOAST, transam, bufmgr/smgr/page, relmapper, catcache) and the tools' lines: each is diagnosed as damage and
# answered with next steps.
POSTGRES_DAMAGE_TEXTS = [
    "ERROR:  cache lookup failed for relation 16434",
    "ERROR:  cache lookup failed for type 16999",
    'FATAL:  could not open relation mapping file "global/pg_filenode.map": No such file or directory',
    'FATAL:  relation mapping file "base/5/pg_filenode.map" contains incorrect checksum',
    "ERROR:  right sibling's left-link doesn't match: block 5 links to 9 instead of expected 4 in index \"t_pkey\"",
    'ERROR:  failed to re-find parent key in index "t_pkey" for deletion target page 12',
    'ERROR:  fell off the end of index "t_pkey"',
    'ERROR:  no live root page found in index "t_pkey"',
    'ERROR:  root page 3 of "t_pkey" has level 1, expected 2',
    'ERROR:  could not create unique index "t_pkey"\nDETAIL:  Key (id)=(42) is duplicated.',
    "ERROR:  uncommitted xmin 741 from before xid cutoff 800 needs to be frozen",
    "ERROR:  uncommitted xmin 741 needs to be frozen",
    "ERROR:  found xmin 3000000000 from before relfrozenxid 716",
    "ERROR:  found multixact 12 from before relminmxid 40",
    "ERROR:  multixact 12 from before cutoff 40 found to be still running",
    "ERROR:  cannot freeze committed update xid 745",
    "ERROR:  compressed data is corrupt",
    "ERROR:  compressed lz4 data is corrupt",
    'ERROR:  could not read block 7 in file "base/5/16434": Input/output error',
    'ERROR:  could not read blocks 7..9 in file "base/5/16434": Input/output error',
    'ERROR:  could not seek to end of file "base/5/16434": Input/output error',
    'ERROR:  could not seek to block 7 in file "base/5/16434": Input/output error',
    'ERROR:  could not open file "base/5/16434.3" (target block 400000): previous segment is only 5 blocks',
    "WARNING:  could not write block 0 of base/5/17653\nDETAIL:  Multiple failures --- write error might be permanent.",
    "ERROR:  xlog flush request 2/3A000000 is not satisfied --- flushed only to 0/1A2B3C8",
    "ERROR:  unexpected chunk size 5 (expected 10) in final chunk 3 for toast value 1 in pg_toast_2",
    "ERROR:  unexpected chunk number 7 (out of range 0..3) for toast value 16472 in pg_toast_16467",
    'ERROR:  index "t_gist" contains an inner tuple marked as invalid',
    'ERROR:  failed to re-find parent of a page in index "t_gin", block 17',
    'ERROR:  index "t_hash" contains unexpected zero page at block 3',
    'ERROR:  index "t_hash" has wrong hash version',
    "ERROR:  corrupted BRIN index: inconsistent range map",
    'ERROR:  unexpected page type 0x0000 in BRIN index "t_brin" block 2',
    "ERROR:  unexpected SPGiST tuple state: 9",
    "PANIC:  corrupted item pointer: offset = 9000, size = 40",
    "ERROR:  corrupted line pointer: 9000",
    'ERROR:  page 21 of relation "orders" should be empty but is not',
    "ERROR:  catalog is missing 2 attribute(s) for relid 16434",
    "ERROR:  could not find pg_class tuple for index 2662",
    'ERROR:  duplicate key value violates unique constraint "pg_class_oid_index"',
    'ERROR:  database is not accepting commands to avoid wraparound data loss in database "shop"',
    'pg_checksums: error: checksum verification failed in file "/data/base/5/16440", block 12: calculated '
    "checksum 6225 but block contains 9DC2",
    'pg_checksums: error: could not read block 5 in file "base/5/16440": read 100 of 8192',
    "Bad checksums:  3",
    'heap table "shop.public.orders", block 5, offset 3, attribute 2:\n    toast value 16472 chunk 0 has size 100, '
    "but expected size 1996",
    'pg_amcheck: error: error sending command to database "shop": server closed the connection unexpectedly',
]


@pytest.mark.parametrize("text", POSTGRES_DAMAGE_TEXTS, ids=lambda t: t[:50])
def test_postgres_damage_reports_are_diagnosed(text: str) -> None:
    found, unknown = explain_text(text)
    assert found and not unknown, (found, unknown)
    assert all(e.pattern.kind == "damage" and e.steps() for e in found), [e.pattern.id for e in found]
