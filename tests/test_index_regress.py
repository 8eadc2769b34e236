"""No false positives on PostgreSQL's own regression databases (issue 30): gin.sql, gist.sql, spgist.sql,
hash_index.sql, brin.sql and brin_multi.sql (18.3's, tests/data/regress) leave every index kind in the states the
server's own tests drive them to (GIN pending lists and posting trees after deletes and VACUUM, deleted GiST pages,
buffered builds, SP-GiST redirects and placeholders, hash splits and overflow pages, BRIN minmax, minmax-multi,
inclusion and bloom over many types, unsummarized ranges). On 15 and 18: diagnose of each database while it runs,
with the files and through get_raw_page (--no-files), and scan of the stopped cluster report nothing at warning or
error. It fails when any check of these index kinds (or of the maps beside their tables) judges a healthy
structure damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fix_corrupt import cli, sql, stopped
from fix_schema import REGRESS_AM, regress_load, regress_load_am

PLAIN = ("gin", "gist", "spgist")  # regress_load: no data files needed
KINDS = ("gin", "gist", "spgist", "hash", "brin")


def _loud(findings: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [
        (f["code"], f.get("relation"), f["block"], f["message"])
        for f in findings
        if f["severity"] in ("warning", "error")
    ]


@pytest.mark.parametrize("version", ["15", "18"])
def test_every_index_kind_of_the_regression_databases_has_no_finding(
    version: str, lab_base_dir: Path, tmp_path: Path
) -> None:
    from fix_pg import create_test_cluster

    lab = create_test_cluster(lab_base_dir, f"idxregress{version}", version)
    lab.start()
    try:
        for name in PLAIN:
            regress_load(lab, f"regress_{name}", name)
        for name in REGRESS_AM:
            assert regress_load_am(lab, f"regress_{name}", name, tmp_path) > 0  # the files test errors too
        names = (*PLAIN, *REGRESS_AM)
        kinds: dict[str, int] = {}
        for name in names:
            with lab.connect(f"regress_{name}") as conn:
                conn.execute("CREATE EXTENSION amcheck; CREATE EXTENSION pageinspect")
                for am, n in conn.execute(
                    "SELECT a.amname, count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
                    "WHERE c.relkind = 'i' GROUP BY 1"
                ):
                    kinds[am] = kinds.get(am, 0) + int(n)
        assert all(kinds.get(k, 0) >= 1 for k in KINDS), kinds  # every kind the files leave behind
        sql(lab, "CHECKPOINT")
        for name in names:
            for extra in ((), ("--no-files",)):
                code, out, err = cli("diagnose", "-d", lab.dsn(f"regress_{name}"), *extra, "--format", "json")
                loud = _loud(json.loads(out)["findings"]) if out else [err]
                assert (code, loud) == (0, []), (name, extra, loud[:5], err[-2000:])
        with stopped(lab):
            code, out, err = cli("scan", str(lab.pgdata), "--format", "json")
        loud = _loud(json.loads(out)["findings"])
        assert (code, loud) == (0, []), (loud[:5], err[-2000:])
    finally:
        lab.destroy()
