"""A backup judged against its manifest as pg_verifybackup judges it (issue 32): the scenarios of PostgreSQL 18's
src/bin/pg_verifybackup/t/003_corruption.pl, 004_options.pl, 005_bad_manifest.pl, 008_untar.pl and
010_client_untar.pl re-created on real backups of PostgreSQL 15 and 18, plain and tar. For each, the real
pg_verifybackup and ``pgsurgeon scan BACKUP`` both pass or both fail, and pgsurgeon names the file (with the kind of
problem) pg_verifybackup's message is about.

pg_verifybackup: 15's own for a plain 15 backup (18's pg_waldump does not read 15's WAL); 18's for the tar forms of
both (15's reads no tar; 18's accepts a version 1 manifest), with ``--no-parse-wal`` as the TAP tests run it there.

Not re-created: 003's three permission scenarios (the tests run as root, who reads a mode 000 file: pg_verifybackup
run as the server's user fails, pgsurgeon as root does not), and 004's options (``--ignore``, ``--skip-checksums``,
``--quiet``, ``--progress``, ``--exit-on-error``, ``--format``), which ``scan`` does not have."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_pg import create_test_cluster, install_or_skip
from pgsurgeon.cli import main
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster
from pgsurgeon.pgbin import PgInstall


@dataclass
class Primary:
    version: str
    cluster: LabCluster
    backups: dict[str, Path]
    tsoid: str
    other_manifest: bytes
    """The manifest of another cluster's backup (003's system_identifier)."""
    pg18: PgInstall


def _cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


def _backup(cluster: LabCluster, name: str, *args: str) -> Path:
    target = cluster.lab_dir / name
    if "--target" in args:
        cluster.run_tool("pg_basebackup", "--no-sync", "-c", "fast", *args, timeout=300)
        return Path(args[args.index("--target") + 1].removeprefix("server:"))
    if "-Fp" in args:  # the tablespace mapped beside the backup, as 003 does
        args = (*args, "-T", f"{cluster.lab_dir / 'ts'}={target}-ts")
    cluster.run_tool("pg_basebackup", "-D", str(target), "--no-sync", "-c", "fast", *args, timeout=300)
    return target


COMPRESSED = {
    "15": {
        "server-gzip": ("--target", "SERVER", "--wal-method", "fetch", "--compress", "server-gzip"),
        "server-lz4": ("--target", "SERVER", "--wal-method", "fetch", "--compress", "server-lz4:5"),
        "server-zstd": ("--target", "SERVER", "--wal-method", "fetch", "--compress", "server-zstd:level=1"),
        "client-gzip": ("-Ft", "--wal-method", "fetch", "--compress", "client-gzip:5"),
        "client-lz4": ("-Ft", "--wal-method", "fetch", "--compress", "client-lz4:1"),
        "client-zstd": ("-Ft", "--wal-method", "fetch", "--compress", "client-zstd:5"),
    },
    # the embedded 18 is built without lz4 and zstd
    "18": {
        "server-none": ("--target", "SERVER", "--wal-method", "fetch"),
        "server-gzip": ("--target", "SERVER", "--wal-method", "fetch", "--compress", "server-gzip"),
        "client-gzip": ("-Ft", "--wal-method", "fetch", "--compress", "client-gzip:5"),
    },
}


def _other_manifest(base: Path, version: str) -> bytes:
    other = create_test_cluster(
        base, f"other{version}", version, extra_conf={"wal_level": "replica", "max_wal_senders": 2}
    )
    try:
        other.start()
        path = _backup(other, "bk", "-Fp")
        return (path / "backup_manifest").read_bytes()
    finally:
        other.destroy()


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def primary(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Primary]:
    version = request.param
    cluster = create_test_cluster(
        lab_base_dir, f"verify{version}", version, extra_conf={"wal_level": "replica", "max_wal_senders": 4}
    )
    try:
        cluster.start()
        ts = cluster.lab_dir / "ts"
        ts.mkdir()
        if cluster.user.switch:
            os.chown(ts, cluster.user.uid, cluster.user.gid)
        with cluster.connect() as conn:
            conn.execute("CREATE TABLE x1 (a int)")
            conn.execute("INSERT INTO x1 VALUES (111)")
            conn.execute(f"CREATE TABLESPACE ts1 LOCATION '{ts}'")
            conn.execute("CREATE TABLE x2 (a int) TABLESPACE ts1")
            conn.execute("INSERT INTO x2 VALUES (222)")
            (tsoid,) = conn.execute("SELECT oid FROM pg_tablespace WHERE spcname = 'ts1'").fetchone() or (0,)
        # 008 and 010: a file of random-looking data in the data directory, about 640 kB
        junk = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(1, 10241))
        (cluster.pgdata / "junk").write_text(junk)
        backups = {"plain": _backup(cluster, "bk-plain", "-Fp"), "tar": _backup(cluster, "bk-tar", "-Ft")}
        for form, args in COMPRESSED[version].items():
            server_dir = cluster.lab_dir / f"bk-{form}"
            args = tuple(f"server:{server_dir}" if a == "SERVER" else a for a in args)
            backups[form] = _backup(cluster, f"bk-{form}", *args)
        yield Primary(
            version, cluster, backups, str(tsoid), _other_manifest(lab_base_dir, version), install_or_skip("18")
        )
    finally:
        cluster.destroy()


def _verifybackup(
    p: Primary, path: Path, tar: bool, *extra: str, latest: bool = False
) -> subprocess.CompletedProcess[str]:
    """The real pg_verifybackup (as root: it reads the copies the tests made); 18's with ``latest``."""
    install = p.pg18 if tar or latest or p.version == "18" else p.cluster.install
    args = [str(install.tool("pg_verifybackup")), *(["--no-parse-wal"] if tar else []), *extra, str(path)]
    return subprocess.run(args, env=install.env(), capture_output=True, text=True, timeout=300, check=False)


def _scan(path: Path) -> tuple[int, list[dict[str, Any]]]:
    code, out = _cli("scan", str(path), "--format", "json")
    if code not in (Exit.CLEAN, Exit.DAMAGE):
        return code, []
    doc = json.loads(out)
    return code, [f for f in doc["findings"] if f["code"].startswith("file.manifest")]


def _copy(p: Primary, form: str, dest: Path) -> Path:
    """A copy of one backup to mutilate (a plain one's tablespace link followed: its files copied in)."""
    shutil.copytree(p.backups[form], dest, symlinks=False)
    return dest


# --- mutilations, on a plain backup directory or a tar backup's archives ------------------------------------------


def _rewrite_tar(
    archive: Path, edit: Callable[[str, bytes], bytes | None], add: dict[str, bytes] | None = None
) -> None:
    """Rewrite ``archive``: each member's data through ``edit`` (None drops it), then ``add``."""
    new = archive.with_suffix(".new")
    with tarfile.open(archive) as src, tarfile.open(new, "w", format=tarfile.USTAR_FORMAT) as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            if data is not None:
                data = edit(m.name, data)
                if data is None:
                    continue
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
        for name, data in (add or {}).items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
            dst.addfile(info, io.BytesIO(data))
    new.replace(archive)


def _replace_member(name: str, change: Callable[[bytes], bytes | None]) -> Callable[[str, bytes], bytes | None]:
    return lambda n, data: change(data) if n.removeprefix("./") == name else data


def _ts_path(p: Primary, root: Path) -> str:
    """pg_tblspc/OID/PG_.../DBOID in a plain backup."""
    catv = next((root / "pg_tblspc" / p.tsoid).iterdir())
    dboid = next(catv.iterdir())
    return str(dboid.relative_to(root))


EXTRA = b"This is an extra file.\n"


def _mutilate(p: Primary, name: str, root: Path, tar: bool) -> None:
    base = root / "base.tar"
    if name == "extra_file":
        if tar:
            _rewrite_tar(base, lambda _n, d: d, {"extra_file": EXTRA})
        else:
            (root / "extra_file").write_bytes(EXTRA)
    elif name == "extra_tablespace_file":
        if tar:
            ts_tar = root / f"{p.tsoid}.tar"
            with tarfile.open(ts_tar) as tf:
                db_dir = next(m.name for m in tf.getmembers() if m.isfile()).rsplit("/", 1)[0]
            _rewrite_tar(ts_tar, lambda _n, d: d, {f"{db_dir}/extra_ts_file": EXTRA})
        else:
            (root / _ts_path(p, root) / "extra_ts_file").write_bytes(EXTRA)
    elif name == "missing_file":
        if tar:
            _rewrite_tar(base, _replace_member("pg_xact/0000", lambda _d: None))
        else:
            (root / "pg_xact/0000").unlink()
    elif name == "missing_tablespace":
        if tar:
            (root / f"{p.tsoid}.tar").unlink()
        else:
            shutil.rmtree(root / "pg_tblspc" / p.tsoid)
    elif name == "append_to_file":
        if tar:
            _rewrite_tar(base, _replace_member("global/pg_control", lambda d: d + b"x"))
        else:
            with (root / "global/pg_control").open("ab") as fh:
                fh.write(b"x")
    elif name == "truncate_file":
        if tar:
            _rewrite_tar(base, _replace_member("pg_hba.conf", lambda _d: b""))
        else:
            (root / "pg_hba.conf").write_bytes(b"")
    elif name == "replace_file":
        if tar:
            _rewrite_tar(base, _replace_member("PG_VERSION", lambda d: b"q" * len(d)))
        else:
            (root / "PG_VERSION").write_bytes(b"q" * len((root / "PG_VERSION").read_bytes()))
    elif name == "system_identifier":
        (root / "backup_manifest").write_bytes(p.other_manifest)
    elif name == "bad_manifest":
        with (root / "backup_manifest").open("ab") as fh:
            fh.write(b"\n")
    elif name == "multiple_problems":  # 004: PG_VERSION corrupt and all of pg_xact removed
        _mutilate(p, "replace_file", root, tar)
        if tar:
            _rewrite_tar(base, lambda n, d: None if n.removeprefix("./").startswith("pg_xact/") else d)
        else:
            shutil.rmtree(root / "pg_xact")
    else:
        assert name == "intact", name


@dataclass(frozen=True)
class Scenario:
    name: str
    fails_like: str | None
    """003/004's regular expression for pg_verifybackup's output (None: it passes)."""
    ours: tuple[tuple[str, str], ...] = ()
    """(code, path) pgsurgeon must report; a path ending in ``/`` is a prefix."""


SCENARIOS = [
    Scenario("intact", None),
    Scenario(
        "extra_file",
        r'extra_file.*present (on disk|in archive "[^"]+") but not in the manifest',
        (("file.manifest_extra", "extra_file"),),
    ),
    Scenario(
        "extra_tablespace_file",
        r'extra_ts_file.*present (on disk|in archive "[^"]+") but not in the manifest',
        (("file.manifest_extra", "*/extra_ts_file"),),
    ),
    Scenario(
        "missing_file",
        r'pg_xact/0000.*present in the manifest but not (on disk|in archive "[^"]+")',
        (("file.manifest_missing", "pg_xact/0000"),),
    ),
    Scenario(
        "missing_tablespace",
        r'pg_tblspc.*present in the manifest but not (on disk|in archive "[^"]+")',
        (("file.manifest_missing", "pg_tblspc/TSOID/"),),
    ),
    Scenario(
        "append_to_file",
        r'has size \d+ (on disk|in archive "[^"]+") but size \d+ in the manifest',
        (("file.manifest_size", "global/pg_control"),),
    ),
    Scenario(
        "truncate_file",
        r'has size 0 (on disk|in archive "[^"]+") but size \d+ in the manifest',
        (("file.manifest_size", "pg_hba.conf"),),
    ),
    Scenario("replace_file", r"checksum mismatch for file", (("file.manifest_checksum", "PG_VERSION"),)),
    # 15's version 1 manifest does not name the cluster: the other cluster's files differ instead
    Scenario("system_identifier", r"(manifest system identifier is .*, but control file has|checksum mismatch)"),
    Scenario("bad_manifest", r"manifest checksum mismatch", (("file.manifest_own_checksum", "backup_manifest"),)),
    Scenario(
        "multiple_problems",
        r'(?s)(pg_xact.*is present in the manifest but not.*checksum mismatch for file "PG_VERSION"|'
        r'checksum mismatch for file "PG_VERSION".*pg_xact.*is present in the manifest but not)',
        (("file.manifest_missing", "pg_xact/0000"), ("file.manifest_checksum", "PG_VERSION")),
    ),
]


def _pg_named(said: str) -> set[str]:
    """The files pg_verifybackup's error lines name, as paths in the data directory (a member of a tablespace's
    archive is named inside it: put under pg_tblspc/OID)."""
    named = set()
    for line in said.splitlines():
        m = re.search(r'error: (?:file )?"([^"]+)"(.*)$', line) or re.search(
            r'error: checksum mismatch for file "([^"]+)"()', line
        )
        if m is None:
            continue
        path, rest = m.groups()
        archive = re.search(r'in archive "(\d+)\.tar[^"]*"', rest)
        named.add(f"pg_tblspc/{archive.group(1)}/{path}" if archive and "checksum mismatch" not in line else path)
    return named


def _named(findings: list[dict[str, Any]], code: str, path: str) -> bool:
    def match(p: str) -> bool:
        if path.startswith("*/"):
            return p.endswith(path[1:])
        return p.startswith(path) if path.endswith("/") else p == path

    return any(f["code"] == code and match(f["path"]) for f in findings)


@pytest.mark.parametrize("form", ["plain", "tar"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_corruption_as_pg_verifybackup_sees_it(primary: Primary, scenario: Scenario, form: str, tmp_path: Path) -> None:
    """003_corruption.pl (and 004's checksum and multiple-problem cases): the backup mutilated, then judged."""
    root = _copy(primary, form, tmp_path / "bk")
    _mutilate(primary, scenario.name, root, form == "tar")
    pg = _verifybackup(primary, root, form == "tar")
    code, findings = _scan(root)
    said = pg.stdout + pg.stderr
    if scenario.fails_like is None:
        assert pg.returncode == 0, said
        assert code == Exit.CLEAN and findings == [], findings
        return
    assert pg.returncode != 0 and re.search(scenario.fails_like, said), said
    assert code == Exit.DAMAGE and findings, findings
    wanted = scenario.ours
    if scenario.name == "system_identifier" and primary.version == "18":  # a version 2 manifest names the cluster
        wanted = (("file.manifest_system", "global/pg_control"),)
    for want_code, want_path in wanted:
        assert _named(findings, want_code, want_path.replace("TSOID", primary.tsoid)), (want_code, want_path, findings)
    # every file pg_verifybackup names, pgsurgeon names (pg_verifybackup stops at a fatal error: it may name fewer)
    ours = {f["path"] for f in findings}
    assert _pg_named(said) <= ours, (sorted(_pg_named(said) - ours), said)


# 003's three scenarios that need Unix permissions (its needs_unix_permissions): (name, path made unreadable, mode,
# what pg_verifybackup says). Run as an unprivileged user, for pg_verifybackup and pgsurgeon alike: root reads all.
PERMISSIONS = [
    ("open_file_fails", "PG_VERSION", 0o000, r"could not open file"),
    ("open_directory_fails", "pg_subtrans", 0o000, r"could not open directory"),
    # 003 sets 0400 as the owner; the files here are root's, read by nobody: readable, not searchable, by others
    ("search_directory_fails", "base", 0o444, r"could not stat file or directory"),
]


@pytest.mark.parametrize(("name", "where", "mode", "fails_like"), PERMISSIONS, ids=[p[0] for p in PERMISSIONS])
def test_permissions_as_pg_verifybackup_sees_them(
    primary: Primary, name: str, where: str, mode: int, fails_like: str
) -> None:
    """Both fail, and pgsurgeon names the path: one error line with the hint for permissions (exit 1), or a finding."""
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
    tmp = Path(tempfile.mkdtemp(prefix="pgsurgeon-perm-", dir="/tmp"))
    try:
        tmp.chmod(0o755)
        root = _copy(primary, "plain", tmp / "bk")
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        (root / where).chmod(mode)
        install = primary.cluster.install
        pg = subprocess.run([*nobody, str(install.tool("pg_verifybackup")), "--no-parse-wal", str(root)],
                            env=install.env(), capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        said = pg.stdout + pg.stderr
        assert pg.returncode != 0 and re.search(fails_like, said), said
        ours = subprocess.run([*nobody, sys.executable, "-m", "pgsurgeon", "scan", str(root), "--format", "json"],
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert "Traceback" not in ours.stderr, ours.stderr
        if ours.returncode == Exit.FAILED:
            errors = [ln for ln in ours.stderr.splitlines() if ln.startswith("pgsurgeon: error:")]
            assert len(errors) == 1 and f"{root}/{where}" in errors[0] and "hint:" in ours.stderr, ours.stderr
        else:
            assert ours.returncode == Exit.DAMAGE, ours.stderr
            paths = [f["path"] for f in json.loads(ours.stdout)["findings"]]
            assert any(p == where or p.startswith(f"{where}/") for p in paths), paths
    finally:
        for p in [tmp, *tmp.rglob("*")]:
            with contextlib.suppress(OSError):
                p.chmod(0o755)
        shutil.rmtree(tmp, ignore_errors=True)


def test_nonexistent_backup_directory(primary: Primary, tmp_path: Path) -> None:
    """004: a valid manifest, no backup directory: both refuse."""
    fake = tmp_path / "fake"
    pg = _verifybackup(primary, fake, False, "--manifest-path", str(primary.backups["plain"] / "backup_manifest"))
    assert pg.returncode != 0 and "could not open directory" in pg.stderr, pg.stderr
    code, _ = _scan(fake)
    assert code not in (Exit.CLEAN, Exit.DAMAGE)


def _extract(backup: Path, dest: Path) -> Path:
    """A tar backup extracted into a plain one, as 15's 008_untar.pl verifies it: base, then each tablespace into
    pg_tblspc/OID (base.tar holds that as a link to the cluster's own tablespace: replaced by a directory first)."""
    unpack = {".zst": ["-I", "zstd -d"], ".lz4": ["-I", "lz4 -d"], ".gz": ["-z"], ".tar": []}
    archives = sorted(p for p in backup.iterdir() if p.name != "backup_manifest")
    archives.sort(key=lambda p: not p.name.startswith("base."))
    dest.mkdir()
    for a in archives:
        stem = a.name.split(".")[0]
        target = dest if stem == "base" else dest / "pg_wal" if stem == "pg_wal" else dest / "pg_tblspc" / stem
        if target.is_symlink():
            target.unlink()
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", *unpack[a.suffix], "-f", str(a), "-C", str(target)], check=True, timeout=120)
    shutil.copy(backup / "backup_manifest", dest)
    return dest


def test_untar_forms_verify(primary: Primary, tmp_path: Path) -> None:
    """008_untar.pl (server-side, compressed or not) and 010_client_untar.pl (client-side): an intact backup in each
    compression this build has passes both."""
    for form in COMPRESSED[primary.version]:
        path = primary.backups[form]
        if any(c in form for c in ("lz4", "zstd")):  # 18's here is built without them, 15's reads no tar
            pg = _verifybackup(primary, _extract(path, tmp_path / form), False, "--exit-on-error")
        else:
            pg = _verifybackup(primary, path, True, "--exit-on-error")
        assert pg.returncode == 0, (form, pg.stderr)
        code, out = _cli("scan", str(path), "--format", "json")
        doc = json.loads(out)
        assert code == Exit.CLEAN, (form, [f for f in doc["findings"] if f["code"].startswith("file.manifest")])
        manifest = doc["backup"]["manifest"]
        assert manifest["self_checksum_ok"] and manifest["files_checked"] > 500, form
        # the WAL ranges' segments, inside base.tar with --wal-method fetch
        assert manifest["wal_segments_checked"] >= 1, form


# --- 005_bad_manifest.pl ------------------------------------------------------------------------------------------

V1 = '{"PostgreSQL-Backup-Manifest-Version": 1, '
BAD_MANIFESTS: list[tuple[str, str, str]] = [
    # (test name, manifest, what pg_verifybackup says after "error: ")
    ("input string ended unexpectedly", "{\n", "could not parse backup manifest: The input string ended unexpectedly."),
    ("unexpected object end", "{}\n", ""),
    ("unexpected array start", "[]\n", ""),
    ("expected version indicator", '{"not-expected": 1}\n', ""),
    ("manifest version not an integer", '{"PostgreSQL-Backup-Manifest-Version": "phooey"}\n', ""),
    ("unexpected manifest version", '{"PostgreSQL-Backup-Manifest-Version": 9876599}\n', ""),
    ("unexpected scalar", V1 + '"Files": true}\n', ""),
    ("unrecognized top-level field", V1 + '"Oops": 1}\n', ""),
    ("unexpected object start", V1 + '"Files": {}}\n', ""),
    ("missing path name", V1 + '"Files": [{}]}\n', ""),
    ("both path name and encoded path name", V1 + '"Files": [\n    {"Path": "x", "Encoded-Path": "1234"}\n]}\n', ""),
    ("unexpected file field", V1 + '"Files": [\n    {"Oops": 1}\n]}\n', ""),
    ("missing size", V1 + '"Files": [\n    {"Path": "x"}\n]}\n', ""),
    ("file size is not an integer", V1 + '"Files": [\n    {"Path": "x", "Size": "Oops"}\n]}\n', ""),
    ("could not decode file name", V1 + '"Files": [\n    {"Encoded-Path": "123", "Size": 0}\n]}\n', ""),
    (
        "duplicate path name in backup manifest",
        V1 + '"Files": [\n    {"Path": "x", "Size": 0},\n    {"Path": "x", "Size": 0}\n]}\n',
        'duplicate path name in backup manifest: "x"',
    ),
    ("checksum without algorithm", V1 + '"Files": [\n    {"Path": "x", "Size": 100, "Checksum": "Oops"}\n]}\n', ""),
    (
        "unrecognized checksum algorithm",
        V1 + '"Files": [\n    {"Path": "x", "Size": 100, "Checksum-Algorithm": "Oops", "Checksum": "00"}\n]}\n',
        'unrecognized checksum algorithm: "Oops"',
    ),
    (
        "invalid checksum for file",
        V1 + '"Files": [\n    {"Path": "x", "Size": 100, "Checksum-Algorithm": "CRC32C", "Checksum": "0"}\n]}\n',
        'invalid checksum for file "x": "0"',
    ),
    ("missing start LSN", V1 + '"WAL-Ranges": [\n    {"Timeline": 1}\n]}\n', ""),
    ("missing end LSN", V1 + '"WAL-Ranges": [\n    {"Timeline": 1, "Start-LSN": "0/0"}\n]}\n', ""),
    ("unexpected WAL range field", V1 + '"WAL-Ranges": [\n    {"Oops": 1}\n]}\n', ""),
    ("missing timeline", V1 + '"WAL-Ranges": [\n    {}\n]}\n', ""),
    (
        "unexpected object end (no checksum)",
        V1 + '"WAL-Ranges": [\n    {"Timeline": 1, "Start-LSN": "0/0", "End-LSN": "0/0"}\n]}\n',
        "could not parse backup manifest: unexpected object end",
    ),
    (
        "timeline is not an integer",
        V1 + '"WAL-Ranges": [\n    {"Timeline": true, "Start-LSN": "0/0", "End-LSN": "0/0"}\n]}\n',
        "",
    ),
    (
        "could not parse start LSN",
        V1 + '"WAL-Ranges": [\n    {"Timeline": 1, "Start-LSN": "oops", "End-LSN": "0/0"}\n]}\n',
        "",
    ),
    (
        "could not parse end LSN",
        V1 + '"WAL-Ranges": [\n    {"Timeline": 1, "Start-LSN": "0/0", "End-LSN": "oops"}\n]}\n',
        "",
    ),
    ("expected at least 2 lines", V1 + '"Files": [], "Manifest-Checksum": null}\n', ""),
    ("last line not newline-terminated", V1 + '\n "Files": [],\n "Manifest-Checksum": null}', ""),
    (
        "invalid manifest checksum",
        V1
        + '"Files": [],\n "Manifest-Checksum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01234567890-"}\n',
        'invalid manifest checksum: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01234567890-"',
    ),
]


@pytest.fixture(scope="module")
def bad_manifest_backup(primary: Primary, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the plain backup per version; each 005 case writes its manifest into it."""
    return _copy(primary, "plain", tmp_path_factory.mktemp(f"bad-manifest-{primary.version}") / "bk")


@pytest.mark.parametrize(("name", "text", "says"), BAD_MANIFESTS, ids=[c[0] for c in BAD_MANIFESTS])
def test_bad_manifest_as_pg_verifybackup_refuses_it(
    primary: Primary, bad_manifest_backup: Path, name: str, text: str, says: str
) -> None:
    """005_bad_manifest.pl: each refused by both, with pg_verifybackup's own message."""
    (bad_manifest_backup / "backup_manifest").write_text(text)
    # 18's messages (15's says "parsing failed" for any JSON error): the manifest is refused before the backup is read
    pg = _verifybackup(primary, bad_manifest_backup, False, latest=True)
    said = says or f"could not parse backup manifest: {name}"
    assert pg.returncode != 0 and f"error: {said}" in pg.stderr, pg.stderr
    code, findings = _scan(bad_manifest_backup)
    assert code == Exit.DAMAGE
    assert [(f["code"], f["path"], f["message"]) for f in findings] == [
        ("file.manifest_invalid", "backup_manifest", said)
    ]


# --- a manifest far larger than its backup (the 100 MB, 1.3 M files) -----------------------------------------


def _write_huge_manifest(path: Path, files: int, wrong_checksum: bool) -> None:
    """A version 1 manifest naming ``files`` files, written as it is made (the test's own memory stays small)."""
    h = hashlib.sha256()
    entry = (
        '{ "Path": "base/1/%d", "Size": 8192, "Last-Modified": "2024-01-01 00:00:00 GMT", '
        '"Checksum-Algorithm": "CRC32C", "Checksum": "0123abcd" }'
    )
    with path.open("wb") as fh:

        def put(text: str) -> None:
            data = text.encode()
            h.update(data)
            fh.write(data)

        put('{ "PostgreSQL-Backup-Manifest-Version": 1,\n"Files": [\n')
        for start in range(0, files, 10_000):
            put(
                "".join(
                    (entry % i) + (",\n" if i < files - 1 else "\n") for i in range(start, min(files, start + 10_000))
                )
            )
        put('],\n"WAL-Ranges": [\n{ "Timeline": 1, "Start-LSN": "0/2000028", "End-LSN": "0/2000100" }\n],\n')
        if wrong_checksum:
            h.update(b"x")
        fh.write(b'"Manifest-Checksum": "' + h.hexdigest().encode() + b'"}\n')


_MEASURED = """
import sys
from pgsurgeon.cli import main
code = main(["scan", sys.argv[1], "--format", "json"])
status = open("/proc/self/status").read()
sys.stderr.write("peak_kb=" + status.split("VmHWM:")[1].split()[0])
sys.exit(code)
"""
"""``pgsurgeon scan`` in a process of its own, which reports its peak resident memory (VmHWM: getrusage's maxrss
would carry over the forking test's own)."""


@pytest.mark.parametrize("wrong_checksum", [False, True], ids=["checksum-right", "checksum-wrong"])
def test_a_huge_manifest_costs_little(primary: Primary, tmp_path: Path, wrong_checksum: bool) -> None:
    """A 100 MB manifest naming 1.3 M files on a small backup: refused (on its checksum, or as naming far more files
    than the backup holds) within 60 s and 200 MB, as pg_verifybackup refuses it."""
    root = _copy(primary, "plain", tmp_path / "bk")
    _write_huge_manifest(root / "backup_manifest", 1_300_000, wrong_checksum)
    assert (root / "backup_manifest").stat().st_size > 100_000_000
    pg = _verifybackup(primary, root, False, "--exit-on-error")
    assert pg.returncode != 0, pg.stderr
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(root)], capture_output=True, text=True, timeout=120, check=False
    )
    seconds = time.monotonic() - started
    peak_kb = int(proc.stderr.rsplit("peak_kb=", 1)[1])
    assert proc.returncode == Exit.DAMAGE, proc.stderr
    findings = [f for f in json.loads(proc.stdout)["findings"] if f["code"].startswith("file.manifest")]
    want = "file.manifest_own_checksum" if wrong_checksum else "file.manifest_oversized"
    assert [(f["code"], f["path"]) for f in findings] == [(want, "backup_manifest")], findings
    assert seconds < 60, seconds
    assert peak_kb < 200 * 1024, f"peak RSS {peak_kb // 1024} MB"


# --- unload says what the manifest found first ----------------------------------------------------------------------


def test_unload_says_what_the_manifest_found(
    primary: Primary, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong manifest checksum, or a changed file: said before the unload, which goes on, and kept in its report."""
    root = _copy(primary, "tar", tmp_path / "bk")
    _mutilate(primary, "replace_file", root, True)
    code = main(["unload", str(root), "--out", str(tmp_path / "out1"), "--schema", "files"])
    err = capsys.readouterr().err
    assert code in (Exit.CLEAN, Exit.DAMAGE)
    assert "backup_manifest: file.manifest_checksum: PG_VERSION: " in err, err
    assert any("PG_VERSION" in n for n in json.loads((tmp_path / "out1/report.json").read_text())["notes"])
    (copy,) = (tmp_path / "out1").rglob("*x1.copy")
    assert copy.read_text() == "111\n"
    with (root / "backup_manifest").open("ab") as fh:
        fh.write(b"\n")
    code = main(["unload", str(root), "--out", str(tmp_path / "out2"), "--schema", "files"])
    err = capsys.readouterr().err
    assert code in (Exit.CLEAN, Exit.DAMAGE)
    assert "backup_manifest: file.manifest_own_checksum: manifest checksum mismatch" in err, err
    assert list((tmp_path / "out2").rglob("*x1.copy")), "the unload went on"
