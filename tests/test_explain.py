"""`pgsurgeon explain`: each error text the corruption simulator's issue lists maps to the modes that produce it, the
values of the message are put into the next commands, log excerpts are explained line by line, and every pattern
of the catalogue recognises its own example and names only real simulator modes. No server needed."""

from __future__ import annotations

import json
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
    assert 'pgsurgeon inspect "$PGDATA/base/16384/29724" --block 285' in commands
    assert any(c.startswith('pgsurgeon scan "$PGDATA" --database 16384 --relation 29724') for c in commands)
    assert (
        "SELECT oid::regclass AS relation, relkind FROM pg_class WHERE pg_relation_filenode(oid) = 29724;" in commands
    )
    assert any("database with OID 16384" in s.what for s in exp.steps())
    assert exp.values["block"] == "285" and exp.values["dboid"] == "16384"


def test_version_differences_and_forks() -> None:
    (e18,), _ = explain_text('ERROR:  invalid page in block 3 of relation "pg_tblspc/16500/PG_18_202506291/5/16437_vm"')
    assert e18.values["relpath"] == "pg_tblspc/16500/PG_18_202506291/5/16437_vm"
    assert (e18.values["dboid"], e18.values["filenode"], e18.values["fork"]) == ("5", "16437", "vm")
    assert "map the server can rebuild" in e18.meaning()
    (shared,), _ = explain_text("invalid page in block 0 of relation global/1262")
    assert "shared catalogs" in shared.steps()[2].what
    (seg,), _ = explain_text('could not read block 131075 in file "base/5/16384.1": read only 100 of 8192 bytes')
    assert seg.values["relfile"] == "base/5/16384" and seg.values["segment"] == "1"
    (pgc,), _ = explain_text(EXAMPLES["pg_checksums"])
    assert pgc.values["block"] == str(131072 + 12)  # pg_checksums counts blocks within the segment file


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
    assert unknown == ["2026-11-22 02:39:16 UTC [3] LOG:  checkpoint complete: wrote 3 buffers"]
    amcheck = found[1]
    assert amcheck.values["table"] == "public.t" and amcheck.values["block"] == "5"
    assert "block 5, line pointer 3 of public.t" in amcheck.meaning()
    assert any("--table public.t --block 5" in s.command for s in amcheck.steps())


def test_cli_text_json_and_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "invalid page in block 285 of relation base/16384/29724"]) == 0
    out = capsys.readouterr().out
    assert 'pgsurgeon inspect "$PGDATA/base/16384/29724" --block 285' in out
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
