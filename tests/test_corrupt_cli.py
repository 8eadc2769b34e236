"""``pgsurgeon corrupt`` / ``undo`` as tools: seeds, dry runs, the lab marker, server handling, manifests.

The symptoms of each mode are tested in test_corrupt_modes.py; this module checks the safety rules: the same
seed gives the same bytes, a data directory without the lab marker is left alone, a running server that is
not a lab cluster is refused, undo refuses bytes that changed since and restores byte for byte.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import PLAIN, TOASTY, CorruptLabs, cli, digest, make_table, observe, relation_files, sql
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import MARKER_NAME, LabCluster

COUNT = "SELECT count(*), sum(a) FROM {t}"


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "cli")
    try:
        yield labs
    finally:
        labs.close()


@pytest.fixture
def lab15(labs: CorruptLabs) -> LabCluster:
    return labs.get("15")


def filepath(lab: LabCluster, table: str) -> str:
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{table}')")[0]
    return str(path)


def corrupt(lab: LabCluster, table: str, *args: str) -> tuple[int, str, str]:
    return cli("corrupt", *args, "--dsn", lab.dsn(), "--table", table)


def changes(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a manifest (or a dry run's plan) writes: where each change goes, and each page's digests before and
    after (the manifest keeps no bytes inline: the digests say which bytes were written)."""
    return [(c["file"], c["offset"], c["length"]) for c in doc["changes"]] + [
        (p["file"], p["block"], p["sha256_before"], p["sha256_after"]) for p in doc["pages"]
    ]


# ------------------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["zero"], "name the relation with --dsn and --table, or with --pgdata and --file"),
        (["zero", "--dsn", "x", "--pgdata", "/x", "--file", "f"], "name the relation"),
        (["tuple-header", "--pgdata", "/x", "--file", "f", "--item", "3"], "--item needs --block"),
        (["zero", "--pgdata", "/x", "--file", "f", "--item", "3", "--block", "0"], "damages pages, not items"),
        (["zero", "--pgdata", "/x", "--file", "f", "--segment", "1"], "--segment goes with mode missing-segment"),
        (["header", "--field", "nope", "--pgdata", "/x", "--file", "f"], "mode header has no field nope"),
        (["zero", "--field", "x", "--pgdata", "/x", "--file", "f"], "mode zero has no field x"),
        (["tuple-header", "--field", "t_hoff", "--clear-hints", "--pgdata", "/x", "--file", "f"], "--clear-hints"),
        (["checksum", "--keep-checksum-valid", "--pgdata", "/x", "--file", "f"], "would change nothing"),
        (["truncate", "--keep-checksum-valid", "--pgdata", "/x", "--file", "f"], "changes no page"),
        (["header", "--value", "lots", "--pgdata", "/x", "--file", "f"], "is not a number or BLOCK,OFFSET"),
        (["zero", "--count", "0", "--pgdata", "/x", "--file", "f"], "--count must be 1 or more"),
        (["zero", "--tear-at", "512", "--pgdata", "/x", "--file", "f"], "--tear-at goes with modes torn and truncate"),
        (["misdirected", "--source-file", "/x", "--pgdata", "/x", "--file", "f"], "--source-file goes with mode torn"),
        (["tuple-data", "--field", "varlena", "--column", "c", "--pgdata", "/x", "--file", "f"], "--column goes"),
        (["zero", "--target", "toast", "--pgdata", "/x", "--file", "f"], "--target and --index go with --table"),
        (["zero", "--value", "1", "--pgdata", "/x", "--file", "f"], "mode zero takes no --value"),
        (["tuple-header", "--field", "t_ctid", "--value", "5", "--pgdata", "/x", "--file", "f"], "no --value number"),
        (["header", "--field", "pd_lower", "--value", "1,2", "--pgdata", "/x", "--file", "f"], "BLOCK,OFFSET goes"),
        (["zero", "--block", "1", "--count", "2", "--pgdata", "/x", "--file", "f"], "one page per block"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    code, out, err = cli("corrupt", *args)
    assert code == Exit.USAGE, (out, err)
    assert message in err
    assert err.startswith("pgsurgeon: error: ") and err.count("\n") <= 2


def test_help_lists_every_mode() -> None:
    with pytest.raises(SystemExit):
        cli("corrupt", "--help")
    from pgsurgeon.simulate.modes import MODES, modes_help

    text = modes_help()
    for name in MODES:
        assert f"  {name} " in text


# ------------------------------------------------------------------------------------------ seeds


@pytest.mark.parametrize("version", ["15", "18"])
def test_same_seed_same_bytes(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    lab = labs.get(version)
    table = make_table(lab, TOASTY)
    files = relation_files(lab, table)
    before = digest(files)
    for args in (
        ("tuple-header", "--count", "3"),
        ("bitflips", "--count", "6"),
        ("toast", "--field", "chunk_data"),
        ("header", "--field", "pd_lower", "--keep-checksum-valid"),
    ):
        runs = {}
        for n, seed in enumerate(("1234", "1234", "1235")):
            manifest = tmp_path / f"{args[0]}-{n}.json"
            code, _, err = corrupt(lab, table, *args, "--seed", seed, "--manifest", str(manifest))
            assert code == 0, err
            runs[n] = changes(json.loads(manifest.read_text()))
            code, _, err = cli("undo", str(manifest))
            assert code == 0, err
            assert digest(files) == before
        assert runs[0] == runs[1], f"{args}: same seed, other bytes"
        assert runs[0] != runs[2], f"{args}: another seed, same bytes"
    # the dry run plans exactly those bytes and writes nothing
    code, out, err = corrupt(
        lab, table, "tuple-header", "--count", "3", "--seed", "1234", "--dry-run", "--format", "json"
    )
    assert code == 0, err
    planned = json.loads(out)
    assert planned["state"] == "planned"
    assert changes(planned) == changes(json.loads((tmp_path / "tuple-header-0.json").read_text()))
    # a dry run has no side file: its plan shows each change's bytes inline
    for page in planned["pages"]:
        page_runs = [c for c in planned["changes"] if c["block"] == page["block"]]
        assert page_runs and all(len(c["old"]) == len(c["new"]) == 2 * c["length"] for c in page_runs)
    assert "nothing written" in err
    assert digest(files) == before
    sql(lab, f"DROP TABLE {table}")


def test_seed_is_chosen_and_printed_when_absent(lab15: LabCluster) -> None:
    table = make_table(lab15, PLAIN)
    code, out, err = corrupt(lab15, table, "header", "--dry-run")
    assert code == 0, err
    seed = out.split("seed ", 1)[1].split()[0]
    code, again, err = corrupt(lab15, table, "header", "--dry-run", "--seed", seed)
    assert code == 0, err
    assert out.splitlines()[:3] == again.splitlines()[:3]


# ------------------------------------------------------------------------------------------ safety


def test_without_the_lab_marker_nothing_changes(lab15: LabCluster, tmp_path: Path) -> None:
    table = make_table(lab15, PLAIN)
    files = relation_files(lab15, table)
    before = digest(files)
    pid = lab15.postmaster_pid()
    marker = lab15.pgdata / MARKER_NAME
    hidden = lab15.lab_dir / "marker.hidden"
    manifest = tmp_path / "m.json"
    marker.rename(hidden)
    try:
        for args in (
            ("--dsn", lab15.dsn(), "--table", table),
            ("--pgdata", str(lab15.pgdata), "--file", filepath(lab15, table)),
        ):
            for mode in ("zero", "missing-segment"):
                code, _, err = cli("corrupt", mode, *args, "--manifest", str(manifest))
                assert code == 1
                assert "is not a pgsurgeon lab cluster (no lab marker): refusing to damage it" in err
                assert "--force-non-lab" in err
        assert not manifest.exists()
        assert digest(files) == before
        assert lab15.postmaster_pid() == pid  # the server was not even stopped
    finally:
        hidden.rename(marker)
    # undo checks the marker too
    code, _, err = corrupt(lab15, table, "zero", "--manifest", str(manifest))
    assert code == 0, err
    marker.rename(hidden)
    try:
        code, _, err = cli("undo", str(manifest))
        assert code == 1 and "not a pgsurgeon lab cluster" in err
    finally:
        hidden.rename(marker)
    code, _, err = cli("undo", str(manifest))
    assert code == 0, err
    assert digest(files) == before


def test_running_server_that_is_no_lab_is_refused(lab15: LabCluster, tmp_path: Path) -> None:
    """Without lab.json pgsurgeon cannot restart the server: with --force-non-lab it still refuses to write
    under a running server, and writes a stopped one directly (leaving it stopped)."""
    table = make_table(lab15, PLAIN)
    files = relation_files(lab15, table)
    before = digest(files)
    rel = filepath(lab15, table)
    hidden = [
        (lab15.pgdata / MARKER_NAME, lab15.lab_dir / "marker.hidden"),
        (lab15.meta_path, lab15.lab_dir / "meta.hidden"),
    ]
    for src, dst in hidden:
        src.rename(dst)
    manifest = tmp_path / "m.json"
    target = ("--pgdata", str(lab15.pgdata), "--file", rel, "--force-non-lab", "--manifest", str(manifest))
    try:
        code, _, err = cli("corrupt", "zero", "--block", "1", *target)
        assert code == 1 and "a server is running on" in err and "not a lab cluster" in err, err
        assert "pg_ctl stop" in err
        assert digest(files) == before and not manifest.exists()
        lab15.stop()
        code, _, err = cli("corrupt", "zero", "--block", "1", *target)
        assert code == 0, err
        assert not lab15.is_running()
        data = (lab15.pgdata / rel).read_bytes()
        assert data[8192:16384] == bytes(8192) and data[:8192] != bytes(8192)
        doc = json.loads(manifest.read_text())
        assert doc["lab"] is None and doc["force_non_lab"] is True
        code, _, err = cli("undo", str(manifest))
        assert code == 1 and "--force-non-lab" in err
        code, _, err = cli("undo", str(manifest), "--force-non-lab")
        assert code == 0, err
        assert not lab15.is_running()
        assert digest(files) == before
    finally:
        for src, dst in hidden:
            dst.rename(src)
        lab15.start()


def test_a_stopped_lab_is_written_directly(lab15: LabCluster, tmp_path: Path) -> None:
    table = make_table(lab15, PLAIN)
    files = relation_files(lab15, table)
    before = digest(files)
    rel = filepath(lab15, table)
    manifest = tmp_path / "m.json"
    lab15.stop()
    code, out, err = cli(
        "corrupt", "zero", "--block", "0", "--pgdata", str(lab15.pgdata), "--file", rel, "--manifest", str(manifest)
    )
    assert code == 0, err
    assert "server:" not in out and not lab15.is_running()
    lab15.start()
    assert observe(lab15, COUNT.format(t=table)).rows[0][0] < 1000
    code, out, err = cli("undo", str(manifest))
    assert code == 0, err
    assert "stopping it" in out and lab15.is_running()
    assert digest(files) == before


def test_undo_refuses_bytes_changed_since(lab15: LabCluster, tmp_path: Path) -> None:
    table = make_table(lab15, PLAIN)
    files = relation_files(lab15, table)
    before = digest(files)
    path = lab15.pgdata / filepath(lab15, table)
    manifest = tmp_path / "m.json"
    code, _, err = corrupt(
        lab15, table, "header", "--field", "pd_flags", "--block", "2", "--seed", "5", "--manifest", str(manifest)
    )
    assert code == 0, err
    damaged = digest(files)
    lab15.stop()
    with path.open("r+b") as fh:  # someone else writes into the page
        fh.seek(2 * 8192 + 10)
        fh.write(b"\x01\x00")
    lab15.start()
    tampered = digest(files)
    code, _, err = cli("undo", str(manifest))
    assert code == 1
    assert f"{filepath(lab15, table)} block 2 is no longer what corrupt left: refusing to restore" in err
    assert "--force" in err
    assert digest(files) == tampered != damaged
    code, _, err = cli("undo", "--dry-run", str(manifest))
    assert code == 0 and "1 page(s) or file(s) changed since" in err + _
    code, out, err = cli("undo", "--force", str(manifest))
    assert code == 0, err
    assert "its original image is back" in out
    assert digest(files) == before
    # a second undo is refused; forced, it finds everything in place
    code, _, err = cli("undo", str(manifest))
    assert code == 1 and "was already undone" in err
    code, out, err = cli("undo", "--force", str(manifest))
    assert code == 0 and "already in place" in out
    assert digest(files) == before


def test_manifest_records_everything(lab15: LabCluster, tmp_path: Path) -> None:
    table = make_table(lab15, PLAIN)
    files = relation_files(lab15, table)
    before = digest(files)
    code, out, err = corrupt(lab15, table, "zero", "--count", "2", "--seed", "9", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    path = Path(err.split("manifest: ", 1)[1].splitlines()[0])
    assert path.parent == lab15.lab_dir / "corruptions" and path.is_file()
    assert json.loads(path.read_text()) == doc
    assert doc["format"] == "pgsurgeon-corruption-manifest" and doc["state"] == "applied"
    assert (doc["mode"], doc["seed"], doc["count"], doc["lab"]["name"]) == ("zero", 9, 2, lab15.name)
    assert doc["relation"]["file"] == filepath(lab15, table)
    assert len(doc["pages"]) == 2 and len({p["block"] for p in doc["pages"]}) == 2
    # no bytes in the manifest: the original pages are in pages.bin, the zeroed ones in the file, both as digested
    assert all("old" not in c and "new" not in c for c in doc["changes"])
    saved = (path.with_name(path.name + ".data") / "pages.bin").read_bytes()
    assert len(saved) == 2 * 8192
    data = (lab15.pgdata / doc["pages"][0]["file"]).read_bytes()
    for p in doc["pages"]:
        original, now = saved[p["saved_at"] :][: p["length"]], data[p["offset"] :][: p["length"]]
        assert set(now) == {0} and original != now
        assert (sha256(original).hexdigest(), sha256(now).hexdigest()) == (p["sha256_before"], p["sha256_after"])
    code, _, err = cli("undo", str(path))
    assert code == 0, err
    assert digest(files) == before


def test_item_and_block_choice(lab15: LabCluster) -> None:
    table = make_table(lab15, PLAIN)

    def plan(*args: str) -> dict[str, Any]:
        code, out, err = corrupt(lab15, table, *args, "--dry-run", "--format", "json", "--seed", "3")
        assert code == 0, err
        doc: dict[str, Any] = json.loads(out)
        return doc

    doc = plan("tuple-header", "--field", "t_xmin", "--count", "5")
    assert len(doc["notes"]) == 5 and len(set(doc["notes"])) == 5
    doc = plan("tuple-header", "--field", "t_xmin", "--count", "4", "--block", "2")
    assert {n.split(":")[0] for n in doc["notes"]} == {"block 2"} and len(doc["notes"]) == 4
    doc = plan("item-id", "--field", "lp_flags", "--block", "3", "--item", "7")
    assert doc["notes"] == [doc["notes"][0]] and doc["notes"][0].startswith("block 3: item 7 line pointer")
    lp = 3 * 8192 + 24 + 6 * 4
    assert lp <= doc["changes"][0]["offset"] < lp + 4
    doc = plan("zero", "--count", "3")
    assert len({p["block"] for p in doc["pages"]}) == 3
    doc = plan("bitflips", "--count", "7")
    flipped = sum(bin(int(c["old"], 16) ^ int(c["new"], 16)).count("1") for c in doc["changes"])
    assert flipped == 7
    doc = plan("header", "--field", "pd_special", "--value", "8000", "--block", "1")
    assert doc["notes"] == ["block 1: pd_special 8192 -> 8000"]
    # an item that is not there, a block beyond the end, too many items
    # (what the table holds decides: could not run; a column that does not exist is a wrong argument: usage)
    for args, message, status in (
        (("tuple-header", "--block", "0", "--item", "999"), "item 999 does not exist", Exit.FAILED),
        (("zero", "--block", "99"), "block 99 is beyond the end", Exit.FAILED),
        (("tuple-header", "--block", "0", "--count", "500"), "of 500 item(s)", Exit.FAILED),
        (("tuple-data", "--field", "varlena", "--column", "nope"), "has no column nope", Exit.USAGE),
    ):
        code, _, err = corrupt(lab15, table, *args, "--dry-run")
        assert code == status and message in err, (code, err)
    # a failure after the server was stopped: nothing written, the server runs again
    files = relation_files(lab15, table)
    before = digest(files)
    code, _, err = corrupt(lab15, table, "tuple-header", "--block", "0", "--item", "999")
    assert code == 1 and "item 999 does not exist" in err
    assert lab15.is_running() and digest(files) == before
    assert not list((lab15.lab_dir / "corruptions").glob("*tuple-header*"))
    # --keep-checksum-valid on a cluster without checksums says so
    code, out, err = corrupt(lab15, table, "header", "--keep-checksum-valid", "--dry-run")
    assert code == 0 and "data checksums are off" in out


def test_targets_toast_and_indexes(lab15: LabCluster) -> None:
    table = make_table(lab15, TOASTY)
    (toast, toast_index) = sql(
        lab15,
        f"SELECT c.reltoastrelid::regclass::text, i.indexrelid::regclass::text FROM pg_class c "
        f"JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE c.oid = '{table}'::regclass",
    )[0]

    def target(*args: str) -> str:
        code, out, err = corrupt(lab15, table, *args, "--dry-run", "--format", "json", "--seed", "1")
        assert code == 0, err
        name: str = json.loads(out)["relation"]["name"]
        return name

    assert target("toast") == toast
    assert target("header", "--target", "toast") == toast
    assert target("header", "--target", "toast-index") == toast_index
    assert target("btree") == f"{table}_pkey"
    assert target("header", "--target", "index") == f"{table}_pkey"
    sql(lab15, f"CREATE INDEX {table}_a ON {table} (a)")
    assert target("btree", "--index", f"{table}_a") == f"{table}_a"
    code, out, err = cli("corrupt", "btree", "--dsn", lab15.dsn(), "--table", f"{table}_a", "--dry-run")
    assert code == 0 and f"target: {table}_a (index, btree pages)" in out
    code, _, err = corrupt(lab15, table, "btree", "--index", "nope", "--dry-run")
    assert code == 1 and "has no index named nope" in err
    code, _, err = corrupt(lab15, table, "tuple-header", "--target", "index", "--dry-run")
    assert code == 1 and "damages heap pages" in err
    code, _, err = cli("corrupt", "zero", "--dsn", lab15.dsn(), "--table", "no_such_table", "--dry-run")
    assert code == 1 and "does not exist" in err


def test_torn_page_from_an_older_copy(lab15: LabCluster, tmp_path: Path) -> None:
    """The first half of block 0 is new, the second half comes from a copy of the file taken before an update."""
    table = make_table(lab15, PLAIN)
    rel = filepath(lab15, table)
    older = tmp_path / "older"
    lab15.stop()
    shutil.copyfile(lab15.pgdata / rel, older)
    lab15.start()
    sql(lab15, f"UPDATE {table} SET a = a + 100 WHERE id <= 100", f"SELECT count(*) FROM {table}", "CHECKPOINT")
    files = relation_files(lab15, table)
    before = digest(files)
    new = (lab15.pgdata / rel).read_bytes()[:8192]
    manifest = tmp_path / "m.json"
    code, out, err = corrupt(
        lab15,
        table,
        "torn",
        "--block",
        "0",
        "--source-file",
        str(older),
        "--tear-at",
        "4096",
        "--manifest",
        str(manifest),
    )
    assert code == 0, err
    assert f"block 0 of {older}" in out
    torn = (lab15.pgdata / rel).read_bytes()[:8192]
    assert torn == new[:4096] + older.read_bytes()[4096:8192]
    code, _, err = cli("undo", "--force", str(manifest))
    assert code == 0, err
    assert digest(files) == before
