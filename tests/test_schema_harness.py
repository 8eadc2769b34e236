"""The control for issue 34's schema harness (tests/fix_schema.py): pg_dump's own round trip of the every-object
database (tests/data/unload_every_object.sql) gives back a database the harness calls equal, and one it breaks on
purpose it calls different; the round trip of PostgreSQL's own regression files (tests/data/regress) differs only
where pg_dump is known not to give back what was there. Real PostgreSQL 15 and 18."""

from __future__ import annotations

from pathlib import Path

import pytest

from fix_pg import MakeLab, install_or_skip
from fix_schema import (
    REGRESS_DUMP_DIFFERENCES,
    REGRESS_ERRORS,
    REGRESS_ROW_DIFFERENCES,
    behaviour_failures,
    control_restore,
    dump_differences,
    globals_dump,
    load_every_object,
    regress_load,
    rows_of,
    schema_dump,
)


# one version each: tests/test_unload_schema.py holds unload to the same comparisons on both (CI time)
@pytest.mark.parametrize("version", ["18"])
def test_pg_dump_round_trip_of_every_object(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    install_or_skip("18")  # the client programs of every comparison
    source = make_lab(version)
    # twice in one cluster: the roles are created once, every other object per database
    dbnames = ["every", "every_again"]
    for dbname in dbnames:
        load_every_object(source, dbname)
    target = make_lab(version)
    control_restore(source, target, dbnames, tmp_path)

    assert globals_dump(target) == globals_dump(source)
    for dbname in dbnames:
        dumped = schema_dump(source, dbname)
        assert schema_dump(target, dbname) == dumped
        rows = rows_of(source, dbname)
        assert rows_of(target, dbname) == rows
    # what the dumps hold: the objects of every kind, not an empty database compared with another
    for line in (
        "CREATE TYPE app.mytext (",
        "CREATE OPERATOR CLASS app.mytext_ops",
        "CREATE TRANSFORM FOR integer LANGUAGE sql",
        "CREATE EVENT TRIGGER eo_ddl ON ddl_command_end",
        "CREATE SUBSCRIPTION eo_sub",
        "ALTER DATABASE every_again SET lock_timeout TO '10s';",
        "ALTER ROLE eo_app IN DATABASE every_again SET work_mem TO '8MB';",
        "score numeric(3,-6),",
        "PARTITION BY RANGE (lower(name));",
        "ADD CONSTRAINT no_bob CHECK ((name <> 'bob'::text)) NOT VALID;",
    ):
        assert line in dumped, line
    if version == "18":
        assert "ADD CONSTRAINT rooms_t_pkey PRIMARY KEY (room, valid WITHOUT OVERLAPS);" in dumped
        assert "doubled integer GENERATED ALWAYS AS ((a * 2))," in dumped  # VIRTUAL is the default, not printed
    assert rows["app.z"] == ["", "", "", ""]  # no columns, three rows
    assert rows["app.mv_later"] == ["<not populated>"]
    assert rows["app.ticket_seq"] == ["500 True"]
    assert rows["large object 4242001"][0] == "owner eo_app"

    # the checks hold on the restored database and on the one it came from
    assert behaviour_failures(target, "every") == []
    assert behaviour_failures(source, "every") == []

    # and the harness sees what a restore can lose: a constraint, a row, a sequence's place, a role's setting
    with target.connect("every_again") as conn:
        conn.execute("ALTER TABLE app.customers DROP CONSTRAINT no_bob")
        conn.execute("DELETE FROM app.z WHERE ctid = (SELECT min(ctid) FROM app.z)")
        conn.execute("SELECT setval('app.ticket_seq', 10, false)")
        conn.execute("ALTER ROLE eo_app RESET statement_timeout")
    assert schema_dump(target, "every_again") != schema_dump(source, "every_again")
    broken = rows_of(target, "every_again")
    assert sorted(k for k, v in broken.items() if v != rows_of(source, "every_again").get(k)) == [
        "app.ticket_seq",
        "app.z",
    ]
    assert globals_dump(target) != globals_dump(source)
    failures = behaviour_failures(target, "every_again")
    assert [f.split(":")[0] for f in failures] == [
        "sequence with a value",
        "zero-column table",
        "CHECK NOT VALID holds for new rows",
    ]


@pytest.mark.parametrize("version", ["15"])
def test_pg_dump_round_trip_of_regression_files(make_lab: MakeLab, tmp_path: Path, version: str) -> None:
    install_or_skip("18")
    install_or_skip("15")  # its psql runs the scripts
    source = make_lab(version)
    errors = {name: regress_load(source, f"regress_{name}", name) for name in REGRESS_ERRORS}
    assert errors == {name: counts[int(version)] for name, counts in REGRESS_ERRORS.items()}
    target = make_lab(version)
    control_restore(source, target, [f"regress_{name}" for name in REGRESS_ERRORS], tmp_path)

    assert globals_dump(target) == globals_dump(source)
    for name in REGRESS_ERRORS:
        dbname = f"regress_{name}"
        dumped = schema_dump(source, dbname)
        assert dump_differences(dumped, schema_dump(target, dbname)) == REGRESS_DUMP_DIFFERENCES.get(name, []), name
        assert dumped.count("CREATE ") > 10, name  # the file left objects behind
        rows, restored = rows_of(source, dbname), rows_of(target, dbname)
        differ = sorted(k for k in rows.keys() | restored.keys() if rows.get(k) != restored.get(k))
        assert differ == REGRESS_ROW_DIFFERENCES.get(name, []), name
    # the reordered columns, as the rows show them
    assert rows_of(source, "regress_generated")["public.gtestxx_4"][0] == "b,a"
    assert rows_of(target, "regress_generated")["public.gtestxx_4"][0] == "a,b"
