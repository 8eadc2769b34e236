"""Every command's exit statuses match the one table in ``pgsurgeon.exitcodes`` (README, docs/errors.md): one test
per command, each driving the command into clean, damage found, could not run and usage error where it has them.

One PostgreSQL 15 lab cluster for the module with three tables: ``ok_t`` healthy, ``hdr_t`` with a page header the
server refuses (block 2), ``zero_t`` with a zeroed page (its rows silently gone)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import PLAIN, CorruptLabs, cli, make_table, sql, wait_ready
from pgsurgeon import exitcodes
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

ROOT = Path(__file__).resolve().parent.parent
BAD_DSN = "host=127.0.0.1 port=1 dbname=postgres connect_timeout=2"


@dataclass
class Lab:
    cluster: LabCluster
    manifest: Path

    def dsn(self) -> str:
        return self.cluster.dsn()

    def file(self, table: str) -> Path:
        (path,) = sql(self.cluster, f"SELECT pg_relation_filepath('{table}'::regclass)")[0]
        return self.cluster.pgdata / str(path)


@pytest.fixture(scope="module")
def lab(lab_base_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    labs = CorruptLabs(lab_base_dir, "exit")
    try:
        cluster = labs.get("15")
        sql(cluster, *(f"CREATE EXTENSION IF NOT EXISTS {e}" for e in ("amcheck", "pageinspect", "pg_surgery")))
        for table in ("ok_t", "hdr_t", "zero_t"):
            make_table(cluster, PLAIN, table)
        manifests = tmp_path_factory.mktemp("manifests")
        for table, args in (("hdr_t", ("header", "--field", "pd_special")), ("zero_t", ("zero",))):
            code, _, err = cli(
                "corrupt", *args, "--dsn", cluster.dsn(), "--table", table, "--block", "2", "--seed", "1",
                "--manifest", str(manifests / f"{table}.json"),
            )  # fmt: skip
            assert code == Exit.CLEAN, err
        wait_ready(cluster)
        yield Lab(cluster, manifests / "hdr_t.json")
    finally:
        labs.close()


def usage(*args: str) -> None:
    """argparse's own error (an unknown option) and the command's exit the usage status, not "damage found"."""
    with pytest.raises(SystemExit) as exc:
        cli(*args, "--no-such-option")
    assert exc.value.code == Exit.USAGE


def codes(*args: str) -> tuple[int, str, str]:
    code, out, err = cli(*args)
    if code in (Exit.FAILED, Exit.USAGE):
        assert err.startswith("pgsurgeon: error: ") and err.count("\n") <= 2, err
    return code, out, err


def test_table_is_documented() -> None:
    """The README and docs/errors.md show the table as the module renders it, and every status is distinct."""
    assert len({s.code for s in exitcodes.TABLE}) == len(exitcodes.TABLE) == len(Exit)
    table = exitcodes.markdown()
    assert table in (ROOT / "README.md").read_text(encoding="utf-8")
    assert table in (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def test_scan(lab: Lab) -> None:
    pgdata, dsn = str(lab.cluster.pgdata), lab.dsn()
    assert codes("scan", pgdata, "--live", "--dsn", dsn, "--relation", "ok_t")[0] == Exit.CLEAN
    assert codes("scan", pgdata, "--live", "--dsn", dsn, "--relation", "hdr_t")[0] == Exit.DAMAGE
    code, _, err = codes("scan", pgdata)  # a running server without --live
    assert code == Exit.FAILED and "running" in err
    assert codes("scan", pgdata, "--jobs", "0")[0] == Exit.USAGE
    usage("scan", pgdata)


def test_inspect(lab: Lab) -> None:
    assert codes("inspect", str(lab.file("ok_t")), "--block", "2")[0] == Exit.CLEAN
    assert codes("inspect", str(lab.file("hdr_t")), "--block", "2")[0] == Exit.DAMAGE
    assert codes("inspect", str(lab.file("ok_t")) + ".missing", "--block", "0")[0] == Exit.FAILED
    assert codes("inspect", str(lab.file("ok_t")), "--block", "-1")[0] == Exit.USAGE
    usage("inspect", str(lab.file("ok_t")), "--block", "0")


def test_control(lab: Lab, tmp_path: Path) -> None:
    assert codes("control", str(lab.cluster.pgdata))[0] == Exit.CLEAN
    image = bytearray((lab.cluster.pgdata / "global" / "pg_control").read_bytes())
    image[40] ^= 0xFF  # inside the checkpoint copy, before the CRC
    (tmp_path / "pg_control").write_bytes(bytes(image))
    assert codes("control", str(tmp_path / "pg_control"))[0] == Exit.DAMAGE
    assert codes("control", str(tmp_path / "nowhere"))[0] == Exit.FAILED
    usage("control", str(lab.cluster.pgdata))


def test_files(lab: Lab, tmp_path: Path) -> None:
    """files only lists: clean, could not run, usage; never "damage found"."""
    assert codes("files", str(lab.cluster.pgdata))[0] == Exit.CLEAN
    assert codes("files", str(tmp_path))[0] == Exit.FAILED
    usage("files", str(lab.cluster.pgdata))


def test_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGSURGEON_LAB_DIR", str(tmp_path))
    assert codes("lab", "status")[0] == Exit.CLEAN
    assert codes("lab", "status", "nosuch")[0] == Exit.FAILED
    assert codes("lab", "--modes", "nosuch")[0] == Exit.USAGE
    usage("lab", "status")


def test_corrupt(lab: Lab) -> None:
    base = ("corrupt", "zero", "--dsn", lab.dsn(), "--table", "ok_t", "--dry-run")
    assert codes(*base, "--block", "1")[0] == Exit.CLEAN
    code, _, err = codes(*base, "--block", "99")
    assert code == Exit.FAILED and "beyond the end" in err
    assert codes(*base, "--block", "1", "--count", "2")[0] == Exit.USAGE
    usage(*base)


def test_undo(lab: Lab, tmp_path: Path) -> None:
    assert codes("undo", str(lab.manifest), "--dry-run")[0] == Exit.CLEAN
    assert codes("undo", str(tmp_path / "none.json"))[0] == Exit.FAILED
    usage("undo", str(lab.manifest))


def test_diagnose(lab: Lab) -> None:
    assert codes("diagnose", "--dsn", lab.dsn(), "--table", "ok_t")[0] == Exit.CLEAN
    assert codes("diagnose", "--dsn", lab.dsn(), "--table", "hdr_t")[0] == Exit.DAMAGE
    assert codes("diagnose", "--dsn", BAD_DSN, "--table", "ok_t")[0] == Exit.FAILED
    code, _, err = codes("diagnose", "--dsn", lab.dsn(), "--table", "no_such_table")
    assert code == Exit.USAGE and "no table" in err
    usage("diagnose", "--dsn", lab.dsn())


def test_explain(tmp_path: Path) -> None:
    """explain never finds damage itself: a message it knows is clean, one it does not know could not run."""
    assert codes("explain", "invalid page in block 3 of relation base/5/16384")[0] == Exit.CLEAN
    assert codes("explain", "all is well")[0] == Exit.FAILED
    (tmp_path / "log").write_text("x\n")
    assert codes("explain", "text", "--file", str(tmp_path / "log"))[0] == Exit.USAGE
    usage("explain", "x")


def test_salvage(lab: Lab, tmp_path: Path) -> None:
    def salvage(table: str, *extra: str) -> int:
        return codes("salvage", "--dsn", lab.dsn(), "--table", table, "--out", str(tmp_path / table), *extra)[0]

    assert salvage("ok_t") == Exit.CLEAN
    assert salvage("zero_t") == Exit.DAMAGE  # the zeroed page's rows are lost
    assert codes("salvage", "--dsn", BAD_DSN, "--table", "ok_t", "--out", str(tmp_path / "bad"))[0] == Exit.FAILED
    assert salvage("ok_t", "--jobs", "0") == Exit.USAGE
    usage("salvage", "--dsn", lab.dsn(), "--table", "ok_t", "--out", str(tmp_path / "u"))


def test_dump_tables(lab: Lab, tmp_path: Path) -> None:
    def dump(out: str, *extra: str, dsn: str | None = None) -> int:
        return codes("dump-tables", "--dsn", dsn or lab.dsn(), "--out", str(tmp_path / out), *extra)[0]

    assert dump("ok", "--table", "public.ok_t") == Exit.CLEAN
    assert dump("bad", "--table", "public.hdr_t", "--retries", "0") == Exit.DAMAGE  # pg_dump stops at the page
    assert dump("none", dsn=BAD_DSN) == Exit.FAILED
    assert dump("jobs", "--jobs", "0") == Exit.USAGE
    usage("dump-tables", "--dsn", lab.dsn(), "--out", str(tmp_path / "u"))


def test_repair(lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clean: a healthy table needs no step. Damage: the check after the repair still finds an error (made to, by
    adding one to what the real after-check's diagnose returns). Could not run: no server. Usage: --yes alone."""
    # the package re-exports the function execute under the submodule's name
    executing = importlib.import_module("pgsurgeon.repair.execute")

    def repair(table: str, *extra: str) -> tuple[int, str, str]:
        return codes("repair", "--dsn", lab.dsn(), "--table", table, "--run-dir", str(tmp_path / table), *extra)

    assert repair("ok_t")[0] == Exit.CLEAN
    real = executing.diagnose

    def still_damaged(ctx: Any) -> Any:
        outcome = real(ctx)
        outcome.findings.append({**FAKE_FINDING, "relation": ctx.table.regclass})
        return outcome

    monkeypatch.setattr(executing, "diagnose", still_damaged)
    code, out, err = repair("hdr_t", "--execute", "--yes", "--skip-salvage", "--format", "json")
    assert code == Exit.DAMAGE, err
    assert json.loads(out)["execution"]["after"]["clean"] is False
    assert codes("repair", "--dsn", BAD_DSN, "--table", "ok_t")[0] == Exit.FAILED
    assert repair("ok_t", "--yes")[0] == Exit.USAGE
    # no terminal to confirm on: refused before planning (else the unreachable server would be the error)
    code, _, err = codes("repair", "--dsn", BAD_DSN, "--table", "ok_t", "--execute")
    assert code == Exit.USAGE and "stdin is not a terminal" in err, err
    usage("repair", "--dsn", lab.dsn(), "--table", "ok_t")


FAKE_FINDING: dict[str, Any] = {
    "severity": "error",
    "code": "amcheck.heap",
    "message": "made up by the test",
    "block": 0,
    "item": 1,
}
