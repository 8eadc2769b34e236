"""Base backups read in place (issue 17): ``pg_basebackup -Fp``, ``-Ft -z`` and ``-Ft --compress=server-zstd`` of a
damaged cluster give the same scan findings as the cluster itself, unload from the tars equals unload from the
directory, a file changed after the backup is reported through backup_manifest, and an incremental backup (18) is
refused with the pg_combinebackup hint. Real PostgreSQL 15 and 18.

The embedded PostgreSQL 18 is built without zstd and lz4 ("this build does not support compression with ZSTD"), so
on 18 the server-compressed form is ``--compress=server-gzip`` and an uncompressed ``-Ft`` is taken instead; 15
(Debian, built with both) covers server-zstd and client-lz4."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_pg import create_test_cluster, parametrize_versions
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

BLCKSZ = 8192
FORMS: dict[str, dict[str, tuple[str, ...]]] = {
    "15": {
        "plain": ("-Fp",),
        "tar-gzip": ("-Ft", "-z"),
        "tar-server-zstd": ("-Ft", "--compress=server-zstd"),
        "tar-client-lz4": ("-Ft", "--compress=client-lz4"),
        "tar-server-lz4": ("-Ft", "--compress=server-lz4"),
        "tar-client-zstd": ("-Ft", "--compress=client-zstd"),
    },
    "18": {
        "plain": ("-Fp",),
        "tar": ("-Ft",),
        "tar-gzip": ("-Ft", "-z"),
        "tar-server-gzip": ("-Ft", "--compress=server-gzip"),
    },
}
FORM_NAMES = {
    "plain": "plain",
    "tar": "tar",
    "tar-gzip": "tar+gzip",
    "tar-server-gzip": "tar+gzip",
    "tar-server-zstd": "tar+zstd",
    "tar-client-lz4": "tar+lz4",
    "tar-server-lz4": "tar+lz4",
    "tar-client-zstd": "tar+zstd",
}
ARCHIVE = {
    "tar": "base.tar",
    "tar-gzip": "base.tar.gz",
    "tar-server-gzip": "base.tar.gz",
    "tar-server-zstd": "base.tar.zst",
    "tar-client-lz4": "base.tar.lz4",
    "tar-server-lz4": "base.tar.lz4",
    "tar-client-zstd": "base.tar.zst",
}


@dataclass
class Lab:
    cluster: LabCluster
    source_scan: dict[str, Any]
    backups: dict[str, Path]
    files: dict[str, Path]


def _cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


def _scan(path: Path) -> dict[str, Any]:
    code, out = _cli("scan", str(path), "--format", "json")
    doc: dict[str, Any] = json.loads(out)
    assert code == (Exit.DAMAGE if doc["summary"]["errors"] else Exit.CLEAN)
    return doc


def _page_findings(doc: dict[str, Any]) -> set[tuple[Any, ...]]:
    """Findings inside relation files, as (path, relation, block, item, code)."""
    return {
        (f["path"], f["relation"], f["block"], f["item"], f["code"])
        for f in doc["findings"]
        if not f["code"].startswith("file.manifest")
    }


def _write_at(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def _damage(files: dict[str, Path], rng: random.Random) -> None:
    """Damage that survives a copy unnoticed without checksums: a header, an item-ID array, a tuple header."""
    _write_at(files["hdr"], 3 * BLCKSZ + 12, (8000).to_bytes(2, "little"))  # pd_lower above pd_upper
    _write_at(files["spaced"], 4 * BLCKSZ + 14, (9000).to_bytes(2, "little"))  # pd_upper past the page
    with files["lps"].open("r+b") as fh:
        fh.seek(2 * BLCKSZ)
        page = bytearray(fh.read(BLCKSZ))
        lower = int.from_bytes(page[12:14], "little")
        page[24:lower] = rng.randbytes(lower - 24)
        fh.seek(2 * BLCKSZ)
        fh.write(page)
    with files["tup"].open("r+b") as fh:
        fh.seek(5 * BLCKSZ)
        page = bytearray(fh.read(BLCKSZ))
        w = int.from_bytes(page[24 + 4 * 6 : 28 + 4 * 6], "little")
        off = w & 0x7FFF
        page[off + 22] = 40  # t_hoff past the tuple's data start
        fh.seek(5 * BLCKSZ)
        fh.write(page)


def _backup(cluster: LabCluster, name: str, *args: str) -> Path:
    target = cluster.lab_dir / name
    if "-Fp" in args:  # a plain backup writes the tablespace to a directory of its own
        args = (*args, "-T", f"{cluster.lab_dir / 'ts'}={target}-ts")
    cluster.run_tool("pg_basebackup", "-D", str(target), "--no-verify-checksums", "-c", "fast", *args, timeout=300)
    return target


def _tablespace_dir(cluster: LabCluster) -> Path:
    path = cluster.lab_dir / "ts"
    path.mkdir()
    user = cluster.user
    if user.switch:
        os.chown(path, user.uid, user.gid)
    return path


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_versions(metafunc, "lab", scope="module")


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Lab]:
    version = request.param
    conf: dict[str, str | int | bool] = {"wal_level": "replica", "max_wal_senders": 4}
    if version == "18":
        conf["summarize_wal"] = True
    cluster = create_test_cluster(lab_base_dir, f"backup{version}", version, extra_conf=conf)
    try:
        cluster.start()
        files: dict[str, Path] = {}
        with cluster.connect() as conn:
            conn.execute(f"CREATE TABLESPACE ts LOCATION '{_tablespace_dir(cluster)}'")
            for table in ("hdr", "lps", "tup", "clean", "spaced"):
                space = " TABLESPACE ts" if table == "spaced" else ""
                conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, a int, label text){space}")
                conn.execute(
                    f"INSERT INTO {table} SELECT g, g % 7, repeat('x', 80) || g FROM generate_series(1, 3000) g"
                )
                (path,) = conn.execute("SELECT pg_relation_filepath(%s::regclass)", [table]).fetchone() or ("",)
                files[table] = cluster.pgdata / str(path)
            # TOAST values: the unload reads the TOAST table at random while the table streams
            conn.execute("CREATE TABLE docs (id int, body text)")
            conn.execute("ALTER TABLE docs ALTER body SET STORAGE EXTERNAL")
            conn.execute("INSERT INTO docs SELECT g, repeat(md5(g::text), 200) FROM generate_series(1, 300) g")
            conn.execute("VACUUM")
            # catalogs with new file numbers: not among the files a compressed backup keeps in memory when opened,
            # so the catalog is read through the archive's stream too
            conn.execute("VACUUM FULL pg_class")
            conn.execute("VACUUM FULL pg_attribute")
            conn.execute("VACUUM FULL pg_type")
            conn.execute("CHECKPOINT")
        cluster.stop()
        _damage(files, random.Random(17))
        source_scan = _scan(cluster.pgdata)
        cluster.start()
        backups = {form: _backup(cluster, f"bk-{form}", *args) for form, args in FORMS[version].items()}
        yield Lab(cluster, source_scan, backups, files)
    finally:
        cluster.destroy()


def test_forms_are_what_pg_basebackup_wrote(lab: Lab) -> None:
    assert (lab.backups["plain"] / "PG_VERSION").is_file()
    for form, path in lab.backups.items():
        if form != "plain":
            assert (path / ARCHIVE[form]).is_file(), sorted(p.name for p in path.iterdir())
            assert not (path / "PG_VERSION").exists()
            # the tablespace in an archive of its own
            assert [p.name for p in path.iterdir() if p.name[0].isdigit()], sorted(p.name for p in path.iterdir())


def test_scan_finds_the_source_damage(lab: Lab) -> None:
    want = _page_findings(lab.source_scan)
    codes = {c for *_, c in want}
    # the damage is seen on the source, and named
    assert {"page_header.lower_gt_upper"} <= codes, sorted(codes)
    assert any(rel == "public.lps" for _, rel, *_ in want)
    assert any(rel == "public.tup" for _, rel, *_ in want)
    assert any(rel == "public.spaced" and path.startswith("pg_tblspc/") for path, rel, *_ in want)
    for form, path in lab.backups.items():
        _same_damage(lab, form, path, want)


def _same_damage(lab: Lab, form: str, path: Path, want: set[tuple[Any, ...]]) -> None:
    doc = _scan(path)
    assert _page_findings(doc) == want, form
    assert doc["warnings"] == [], form
    backup = doc["backup"]
    assert backup["form"] == FORM_NAMES[form]
    assert backup["label"]["start_lsn"] > 0
    assert backup["manifest"]["present"] and backup["manifest"]["self_checksum_ok"]
    assert backup["manifest"]["files_checked"] > 500
    assert backup["manifest"]["algorithms"] == ["CRC32C"]
    if lab.cluster.version >= 17:  # version 2 manifests name their cluster
        system = core.read_control(lab.cluster.pgdata)["system_identifier"]
        assert backup["manifest"]["system_identifier"] == system
    assert [f for f in doc["findings"] if f["code"].startswith("file.manifest")] == []
    assert doc["summary"]["files"] == lab.source_scan["summary"]["files"]


def _unloaded(out: Path) -> dict[str, str]:
    """Every data file and schema file the unload wrote (restore.sql and the reports name the source and time;
    pg_dump's archives hold the time they were taken, and its SQL a random \\restrict key per run). A tablespace's
    LOCATION differs by form: a plain backup's link points where -T put its copy, a tar's tablespace_map names the
    original's directory."""

    def normalised(text: str) -> str:
        text = re.sub(r"^\\(un)?restrict \w+$", "KEY", text, flags=re.M)
        return re.sub(r"LOCATION '[^']*'", "LOCATION '…'", text)

    return {
        str(p.relative_to(out)): normalised(p.read_text())
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in ("restore.sql", "report.json", "report.txt") and p.parent.name != "pg_dump"
    }


def test_unload_from_the_tars_equals_unload_from_the_directory(lab: Lab, tmp_path: Path) -> None:
    results = {}
    for form, path in lab.backups.items():
        out = tmp_path / form
        code, _ = _cli("unload", str(path), "--out", str(out), "-j", "2")
        assert code in (Exit.CLEAN, Exit.DAMAGE)
        results[form] = _unloaded(out)
    plain = results["plain"]
    clean = [v for k, v in plain.items() if k.endswith("_public.clean.copy")]
    assert len(clean) == 1 and len(clean[0].splitlines()) == 3000
    docs = [v for k, v in plain.items() if k.endswith("_public.docs.copy")]
    assert len(docs) == 1 and len(docs[0].splitlines()) == 300
    assert all(len(line.split("\t")[1]) == 6400 for line in docs[0].splitlines())
    spaced = [v for k, v in plain.items() if k.endswith("_public.spaced.copy")]
    assert len(spaced) == 1 and len(spaced[0].splitlines()) > 2900  # less a damaged page's rows
    assert len(results) == len(FORMS[str(lab.cluster.version)])
    for form, got in results.items():
        assert got == plain, form
        # the schema from pg_dump run on a copy of the backup's catalog, from the archive as from the directory
        assert "globals.sql" in got and any(k.endswith("/post-data.sql") for k in got), form


def test_a_relation_file_lost_from_a_backup_is_reported(lab: Lab, tmp_path: Path) -> None:
    """A table's file gone from a plain backup: the manifest names it; without a manifest (a copy made between
    pg_backup_start and pg_backup_stop has none) the catalog does."""
    rel = str(lab.files["clean"].relative_to(lab.cluster.pgdata))
    copy = tmp_path / "bk"
    shutil.copytree(lab.backups["plain"], copy, symlinks=True)
    (copy / rel).unlink()
    with_manifest = {(f["code"], f["path"]) for f in _scan(copy)["findings"]}
    assert ("file.manifest_missing", rel) in with_manifest, with_manifest
    (copy / "backup_manifest").unlink()
    without = {(f["code"], f["path"]) for f in _scan(copy)["findings"]}
    assert ("file.relation_missing", rel) in without, without


def test_a_file_changed_after_the_backup_is_reported(lab: Lab) -> None:
    """Changed, removed and added files against backup_manifest, in a directory and inside an uncompressed tar."""
    plain = lab.backups["plain"]
    rel = lab.files["clean"].relative_to(lab.cluster.pgdata)
    target = plain / rel
    original = target.read_bytes()
    ident = (plain / "pg_ident.conf").read_bytes()
    try:
        # a byte changed inside a tuple: the page stays plausible, only the manifest knows
        _write_at(target, 7 * BLCKSZ + BLCKSZ - 100, b"Z")
        (plain / "pg_ident.conf").unlink()
        (plain / "stray.txt").write_text("not from pg_basebackup\n")
        doc = _scan(plain)
        problems = sorted((f["code"], f["path"]) for f in doc["findings"] if f["code"].startswith("file.manifest"))
        assert problems == [
            ("file.manifest_checksum", str(rel)),
            ("file.manifest_extra", "stray.txt"),
            ("file.manifest_missing", "pg_ident.conf"),
        ]
        assert doc["summary"]["errors"] >= 3
    finally:
        target.write_bytes(original)
        (plain / "pg_ident.conf").write_bytes(ident)
        (plain / "stray.txt").unlink()
    if "tar" not in lab.backups:
        return
    archive = lab.backups["tar"] / "base.tar"
    with tarfile.open(archive) as tf:
        member = tf.getmember(str(rel))
    saved = archive.read_bytes()
    try:
        _write_at(archive, member.offset_data + 7 * BLCKSZ + BLCKSZ - 100, b"Z")
        doc = _scan(lab.backups["tar"])
        problems = sorted((f["code"], f["path"]) for f in doc["findings"] if f["code"].startswith("file.manifest"))
        assert problems == [("file.manifest_checksum", str(rel))]
    finally:
        archive.write_bytes(saved)


def test_pages_written_during_the_backup_are_information(lab: Lab) -> None:
    """A page the server wrote while the backup copied it (its LSN after START WAL LOCATION, possibly torn) is
    rewritten by WAL replay: noted, not reported as damage."""
    plain = lab.backups["plain"]
    rel = lab.files["clean"].relative_to(lab.cluster.pgdata)
    target = plain / rel
    original = target.read_bytes()
    with lab.cluster.connect() as conn:
        conn.execute("UPDATE clean SET a = a + 1 WHERE id <= 5")  # rows of block 0
        conn.execute("CHECKPOINT")
    with lab.files["clean"].open("rb") as fh:
        live = fh.read(BLCKSZ)
    torn = live[: BLCKSZ // 2] + original[BLCKSZ // 2 : BLCKSZ]  # copied while the server wrote it
    lsn = (int.from_bytes(torn[0:4], "little") << 32) | int.from_bytes(torn[4:8], "little")
    if lab.cluster.checksums:
        assert core.page_checksum(torn, 0) != int.from_bytes(torn[8:10], "little")  # damage anywhere else
    try:
        target.write_bytes(torn + original[BLCKSZ:])
        doc = _scan(plain)
        assert lsn > doc["backup"]["label"]["start_lsn"]
        assert [(n["path"], n["block"]) for n in doc["backup"]["after_backup_start"]] == [(str(rel), 0)]
        assert doc["summary"]["after_backup_start"] == 1
        assert _page_findings(doc) == _page_findings(lab.source_scan)
        problems = [(f["code"], f["path"]) for f in doc["findings"] if f["code"].startswith("file.manifest")]
        assert problems == [("file.manifest_checksum", str(rel))]  # changed after the backup, in this test
    finally:
        target.write_bytes(original)


@pytest.mark.pg("18")  # incremental backups exist from PostgreSQL 17
def test_incremental_backup_is_refused(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    inc = _backup(lab.cluster, "bk-incremental", "-Fp", "--incremental", str(lab.backups["plain"] / "backup_manifest"))
    assert any(p.name.startswith("INCREMENTAL.") for p in inc.rglob("*"))
    for cmd in (["scan", str(inc)], ["unload", str(inc), "--out", str(inc.parent / "inc-out")]):
        assert main(cmd) == Exit.FAILED
        err = capsys.readouterr().err
        assert "is an incremental backup" in err
        assert "hint: rebuild a full backup with pg_combinebackup" in err
