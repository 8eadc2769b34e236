"""undo refuses a hostile or damaged manifest before its first write (issue 19, point 5): a path leading outside
the data directory (``..`` or a symbolic link) and a change that cannot be restored (a negative offset) are found
while checking the whole manifest, so nothing is half restored and no file outside the cluster is touched."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_corrupt import PLAIN, CorruptLabs, cli, digest, make_table, relation_files, wait_ready
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster


@dataclass
class Damaged:
    lab: LabCluster
    table: str
    manifest: Path
    doc: dict[str, Any]
    before: dict[str, str | None]
    """Digests of the table's files before corrupt."""
    after: dict[str, str | None]
    """Digests once damaged."""

    @property
    def rel_file(self) -> str:
        return str(self.doc["changes"][0]["file"])


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "undo")
    yield labs
    labs.close()


def _corrupted(
    lab: LabCluster, manifest: Path, mode: str, *args: str
) -> tuple[str, list[Path], dict[str, str | None], dict[str, Any]]:
    """A new table damaged by ``corrupt MODE ARGS`` with its manifest at ``manifest``: the table, its files, their
    digests before the damage, and the manifest."""
    table = make_table(lab, PLAIN)
    files = relation_files(lab, table)
    before = digest(files)
    code, _, err = cli("corrupt", mode, "--dsn", lab.dsn(), "--table", table, *args, "--manifest", str(manifest))
    assert code == Exit.CLEAN, err
    wait_ready(lab)
    return table, files, before, json.loads(manifest.read_text())


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def damaged(
    request: pytest.FixtureRequest, labs: CorruptLabs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Damaged]:
    """One damaged table per version for the module; every test only tries edited copies of its manifest."""
    lab = labs.get(request.param)
    manifest = tmp_path_factory.mktemp("manifest") / "zero.json"
    table, files, before, doc = _corrupted(lab, manifest, "zero", "--block", "1", "--seed", "3")
    assert len(doc["changes"]) > 1  # zeroing a full page changes several runs of bytes
    yield Damaged(lab, table, manifest, doc, before, digest(files))
    # the real manifest, never edited, still undoes everything
    code, _, err = cli("undo", str(manifest))
    assert code == Exit.CLEAN, err
    wait_ready(lab)
    assert digest(files) == before


def _edited(d: Damaged, tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    # the side files are looked up next to the manifest
    data = d.manifest.with_name(d.manifest.name + ".data")
    if data.exists():
        shutil.copytree(data, path.with_name(path.name + ".data"), dirs_exist_ok=True)
    return path


def _renamed(doc: dict[str, Any], file: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for entry in doc["changes"] + doc["pages"]:
        entry["file"] = file
    return doc


def _refused(d: Damaged, manifest: Path, victim: Path | None = None) -> str:
    victim_before = victim.read_bytes() if victim is not None else None
    pid_before = d.lab.status()["pid"]
    code, _, err = cli("undo", str(manifest))
    assert code == Exit.FAILED, err
    assert err.startswith("pgsurgeon: error: ") and err.count("\n") <= 2, err
    if victim is not None:
        assert victim.read_bytes() == victim_before, "undo wrote outside the data directory"
    assert digest(relation_files(d.lab, d.table)) == d.after, "undo restored part of the manifest"
    assert d.lab.status()["pid"] == pid_before, "a refused manifest must not stop the server"
    return err


def test_dotdot_path_is_refused(damaged: Damaged, tmp_path: Path) -> None:
    """Before: ``"file": "../victim"`` overwrote a file beside the data directory and exited 0."""
    victim = damaged.lab.pgdata.parent / "victim"
    shutil.copyfile(damaged.lab.pgdata / damaged.rel_file, victim)  # holds the damaged page: looks undoable
    try:
        err = _refused(damaged, _edited(damaged, tmp_path, "dotdot.json", _renamed(damaged.doc, "../victim")), victim)
        assert "../victim" in err
    finally:
        victim.unlink()


def test_symlink_out_of_the_data_directory_is_refused(damaged: Damaged, tmp_path: Path) -> None:
    victim = damaged.lab.pgdata.parent / "victim-link-target"
    shutil.copyfile(damaged.lab.pgdata / damaged.rel_file, victim)
    link = (damaged.lab.pgdata / damaged.rel_file).with_name("pgsurgeon-test-link")
    link.symlink_to(victim)
    try:
        name = str(Path(damaged.rel_file).with_name(link.name))
        err = _refused(damaged, _edited(damaged, tmp_path, "link.json", _renamed(damaged.doc, name)), victim)
        assert "outside the data directory" in err
    finally:
        link.unlink()
        victim.unlink()


def test_negative_offset_is_refused_before_any_write(damaged: Damaged, tmp_path: Path) -> None:
    """Before: the bad change (restored last) failed with OSError after every other change was written."""
    doc = copy.deepcopy(damaged.doc)
    bad = copy.deepcopy(doc["changes"][0])
    bad["offset"] = -1
    doc["changes"].insert(0, bad)
    err = _refused(damaged, _edited(damaged, tmp_path, "negative.json", doc))
    assert "negative" in err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda doc: doc.pop("pgdata"), "pgdata"),
        (lambda doc: doc.update(pgdata=5), "pgdata"),
        (lambda doc: doc.update(lab="x"), "lab"),
        (lambda doc: doc.update(relation=[]), "relation"),
        (lambda doc: doc.update(changes="abc"), "changes"),
        (lambda doc: doc["changes"][0].pop("kind"), "kind"),
        (lambda doc: doc["changes"][0].update(offset="12"), "offset"),
        (lambda doc: doc["changes"][0].update(length=True), "length"),
        (lambda doc: doc["changes"][0].update(old="00"), "unknown key(s) old"),  # version 2 keeps no bytes inline
        (lambda doc: (doc.update(version=1), doc["changes"][0].update(old="zz", new="00")), "hexadecimal"),
        (lambda doc: doc["changes"][-1].update(surprise=1), "surprise"),
        (lambda doc: doc["pages"][0].update(block=-3), "negative"),
        (lambda doc: doc["pages"][0].pop("sha256_after"), "sha256_after"),
        (lambda doc: doc["pages"].append(7), "page record"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_malformed_manifest_is_refused(damaged: Damaged, tmp_path: Path, edit: Any, said: str) -> None:
    doc = copy.deepcopy(damaged.doc)
    edit(doc)
    err = _refused(damaged, _edited(damaged, tmp_path, "malformed.json", doc))
    assert "malformed" in err and said in err and "Traceback" not in err


def _as_version_1(doc: dict[str, Any], manifest: Path, pgdata: Path) -> dict[str, Any]:
    """The manifest as pgsurgeon wrote it before version 2: each byte change's old and new bytes inline as hex
    (old from the saved page images, new from the damaged file), beside the same pages.bin."""
    doc = copy.deepcopy(doc)
    saved = manifest.with_name(manifest.name + ".data").joinpath("pages.bin").read_bytes()
    pages = {(p["file"], p["block"]): p for p in doc["pages"]}
    for c in doc["changes"]:
        page = pages[(c["file"], c["block"])]
        at = page["saved_at"] + c["offset"] - page["offset"]
        old = saved[at : at + c["length"]]
        new = (pgdata / c["file"]).read_bytes()[c["offset"] : c["offset"] + c["length"]]
        assert len(old) == len(new) == c["length"] and old != new
        c.update(old=old.hex(), new=new.hex(), old_sha256=hashlib.sha256(old).hexdigest())
    doc["version"] = 1
    return doc


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_version_1_manifest_is_undone_and_a_later_one_refused(
    version: str, labs: CorruptLabs, tmp_path: Path
) -> None:
    """Manifests written before the page images moved out of the JSON are still undone, byte-exact; a version
    this pgsurgeon does not know is refused in one line with a hint, before the server is stopped."""
    lab = labs.get(version)
    manifest = tmp_path / "bitflips.json"
    _, files, before, doc = _corrupted(lab, manifest, "bitflips", "--count", "5", "--seed", "2")
    damaged = digest(files)
    assert damaged != before
    later = tmp_path / "later.json"
    later.write_text(json.dumps({**doc, "version": 3}))
    pid = lab.status()["pid"]
    code, _, err = cli("undo", str(later))
    assert code == Exit.FAILED and "has version 3, this pgsurgeon reads 1, 2" in err and "hint:" in err, err
    assert digest(files) == damaged and lab.status()["pid"] == pid
    old = tmp_path / "v1.json"
    old.write_text(json.dumps(_as_version_1(doc, manifest, lab.pgdata), indent=2))
    shutil.copytree(manifest.with_name(manifest.name + ".data"), old.with_name(old.name + ".data"))
    code, _, err = cli("undo", str(old))
    assert code == Exit.CLEAN, err
    wait_ready(lab)
    assert digest(files) == before
    assert json.loads(old.read_text())["state"] == "undone"
