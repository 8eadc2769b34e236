"""Relation file discovery on real data directories: every relation with storage is found at the path the server
reports, segments are counted, and a DSN names each file."""

from __future__ import annotations

import json

import pytest

from fix_data import Seeded
from pgsurgeon.cli import main
from pgsurgeon.commands.files import collect


def test_every_relation_is_found_and_named(seeded: Seeded) -> None:
    cluster = seeded.cluster
    relations = collect(cluster.pgdata, cluster.dsn())
    main_forks = {r["path"]: r for r in relations if r["fork"] == "main" and not r.get("temp")}
    for dbname in ("postgres", "seeds"):
        with cluster.connect(dbname) as conn:
            rows = conn.execute(
                "SELECT pg_relation_filepath(c.oid), n.nspname || '.' || c.relname FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relpersistence <> 't'"
            ).fetchall()
        assert len(rows) > 100
        for path, name in rows:
            assert path in main_forks, f"{dbname}: {name} ({path}) not discovered"
            assert main_forks[path]["name"] == name
    seeds = next(r for r in relations if r["name"] == "public.seeds" and r["fork"] == "main")
    assert seeds["blocks"] == seeded.nblocks("seeds")
    forks = {r["fork"] for r in relations if r["relfilenode"] == seeds["relfilenode"]}
    assert {"main", "fsm", "vm"} <= forks  # VACUUM in the fixture made the maps


def test_cli_lists_files_as_json(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["files", str(seeded.cluster.pgdata), "--fork", "vm", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed and all(r["fork"] == "vm" for r in listed)
