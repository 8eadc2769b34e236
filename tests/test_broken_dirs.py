"""No traceback on any backup or data directory, however broken (issue 32, point 4).

A real PostgreSQL 18 cluster with checksums, a tablespace, TOAST and an index is stopped; a plain and a compressed tar
``pg_basebackup`` of it are taken. Each case breaks a copy of one of the three the way disks, scripts and half-done
restores break them (a directory gone, emptied, replaced by a file; a symlink dangling; pg_control, PG_VERSION or a
catalog file lost or cut; an archive missing, empty or not an archive), then runs the offline commands a DBA runs on
it: ``scan``, ``unload``, ``health`` and ``files`` (on the backups ``scan`` and ``unload``: health reads as scan does,
and files takes data directories only).

Every run must end as the exit-code table says: 0, 2 with findings, or 1 with exactly one ``pgsurgeon: error:`` line
that names the broken file or directory, then a ``hint:`` line. No Python traceback and no Rust debug text
(``Some(5)``, ``Os { code: … }``, ``(os error 20)``) may reach stdout, stderr or the files written.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from fix_pg import create_test_cluster
from pgsurgeon.exitcodes import Exit

TIMEOUT_S = 120
DEBUG_TEXT = re.compile(r"\bSome\(|\bNone\b|\bOs \{|\bkind: [A-Z]|\(os error \d+\)|Error \{|\bOk\(|\bErr\(")


@dataclass(frozen=True)
class Sources:
    pgdata: Path
    plain: Path
    tar: Path
    db_oid: int
    table_file: str
    """Relative path of table t's main fork."""


def _chown_to(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)


@pytest.fixture(scope="module")
def sources(lab_base_dir: Path) -> Iterator[Sources]:
    cluster = create_test_cluster(
        lab_base_dir, "broken18", "18", extra_conf={"wal_level": "replica", "max_wal_senders": 2}
    )
    try:
        space = cluster.lab_dir / "ts"
        space.mkdir()
        if cluster.user.switch:
            _chown_to(space, cluster.user.uid, cluster.user.gid)
        cluster.start()
        with cluster.connect() as conn:
            conn.execute(f"CREATE TABLESPACE ts LOCATION '{space}'")
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
            conn.execute("INSERT INTO t SELECT g, repeat(md5(g::text), 100) FROM generate_series(1, 2000) g")
            conn.execute("CREATE TABLE s (id int) TABLESPACE ts")
            conn.execute("INSERT INTO s SELECT generate_series(1, 1000)")
            conn.execute("CHECKPOINT")
            row = conn.execute(
                "SELECT d.oid, pg_relation_filepath('t') FROM pg_database d WHERE datname = current_database()"
            ).fetchone()
            assert row is not None
            db_oid, table_file = int(row[0]), str(row[1])
        plain, tar = cluster.lab_dir / "bk-plain", cluster.lab_dir / "bk-tar"
        cluster.run_tool(
            "pg_basebackup", "-D", str(plain), "-c", "fast", "-Fp", "-T", f"{space}={plain}-ts", timeout=300
        )
        cluster.run_tool("pg_basebackup", "-D", str(tar), "-c", "fast", "-Ft", "-z", timeout=300)
        cluster.stop()
        yield Sources(cluster.pgdata, plain, tar, db_oid, table_file)
    finally:
        cluster.destroy()


def _rm(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _emptied(path: Path) -> None:
    for child in path.iterdir():
        _rm(child)


def _to_file(path: Path) -> None:
    _rm(path)
    path.write_text("not what it should be\n")


def _cut(path: Path, size: int) -> None:
    with path.open("r+b") as fh:
        fh.truncate(size)


def _garble(path: Path) -> None:
    """Seeded garbage over the item-ID array and first tuples of block 0 (the catalog read must survive it)."""
    with path.open("r+b") as fh:
        fh.seek(24)
        fh.write(random.Random(32).randbytes(600))


def _tablespace_link(root: Path) -> Path:
    (link,) = (root / "pg_tblspc").iterdir()
    return link


def _redirect(link: Path, target: Path) -> None:
    link.unlink()
    link.symlink_to(target)


Break = Callable[[Path, Sources], None]

DIRECTORY_CASES: dict[str, Break] = {
    "base-emptied": lambda d, s: _emptied(d / "base"),
    "base-gone": lambda d, s: _rm(d / "base"),
    "base-a-file": lambda d, s: _to_file(d / "base"),
    "database-emptied": lambda d, s: _emptied(d / "base" / str(s.db_oid)),
    "database-a-file": lambda d, s: _to_file(d / "base" / str(s.db_oid)),
    "global-gone": lambda d, s: _rm(d / "global"),
    "pg_control-gone": lambda d, s: _rm(d / "global" / "pg_control"),
    "pg_control-empty": lambda d, s: _cut(d / "global" / "pg_control", 0),
    "pg_version-gone": lambda d, s: _rm(d / "PG_VERSION"),
    "pg_version-garbage": lambda d, s: (d / "PG_VERSION").write_text("banana\n"),
    "pg_class-gone": lambda d, s: _rm(d / "base" / str(s.db_oid) / "1259"),
    "pg_class-cut": lambda d, s: _cut(d / "base" / str(s.db_oid) / "1259", 100),
    "pg_attribute-gone": lambda d, s: _rm(d / "base" / str(s.db_oid) / "1249"),
    "pg_class-garbled": lambda d, s: _garble(d / "base" / str(s.db_oid) / "1259"),
    "relmap-gone": lambda d, s: _rm(d / "base" / str(s.db_oid) / "pg_filenode.map"),
    "global-relmap-gone": lambda d, s: _rm(d / "global" / "pg_filenode.map"),
    "pg_xact-gone": lambda d, s: _rm(d / "pg_xact"),
    "table-a-directory": lambda d, s: (_rm(d / s.table_file), (d / s.table_file).mkdir()),
    "tablespace-dangling": lambda d, s: _redirect(_tablespace_link(d), d / "nowhere"),
    "tablespace-a-file": lambda d, s: (_rm(_tablespace_link(d)), _tablespace_link_file(d)),
    "tablespace-loop": lambda d, s: _redirect(_tablespace_link(d), d),
}


def _tablespace_link_file(d: Path) -> None:
    (d / "pg_tblspc" / "99999").write_text("x\n")


def _archive(d: Path, prefix: str) -> Path:
    (path,) = (p for p in d.iterdir() if p.name.startswith(prefix) and ".tar" in p.name)
    return path


def _tablespace_archive(d: Path) -> Path:
    (path,) = (p for p in d.iterdir() if p.name[0].isdigit() and ".tar" in p.name)
    return path


TAR_CASES: dict[str, Break] = {
    "base-archive-gone": lambda d, s: _rm(_archive(d, "base.")),
    "base-archive-empty": lambda d, s: _cut(_archive(d, "base."), 0),
    "base-archive-garbage": lambda d, s: _archive(d, "base.").write_bytes(b"\x1f\x8b" + os.urandom(5000)),
    "base-archive-a-directory": lambda d, s: (_rm(_archive(d, "base.")), (d / "base.tar.gz").mkdir()),
    "tablespace-archive-gone": lambda d, s: _rm(_tablespace_archive(d)),
    "wal-archive-gone": lambda d, s: _rm(_archive(d, "pg_wal.")),
    "manifest-garbage": lambda d, s: (d / "backup_manifest").write_text("{\n"),
}

COMMANDS: dict[str, tuple[str, ...]] = {
    "scan": ("scan", "{dir}"),
    "unload": ("unload", "{dir}", "--out", "{out}", "--schema", "files"),
    "health": ("health", "{dir}"),
    "files": ("files", "{dir}"),
}


def _cases() -> list[tuple[str, str, Break]]:
    out = [(form, name, fn) for form in ("pgdata", "plain") for name, fn in DIRECTORY_CASES.items()]
    return out + [("tar", name, fn) for name, fn in TAR_CASES.items()]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgsurgeon", *argv], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _files_text(out: Path) -> str:
    if not out.exists():
        return ""
    return "\n".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix in {".txt", ".json", ".md"}
    )


def _judge(command: str, broken: Path, run: subprocess.CompletedProcess[str], out: Path) -> list[str]:
    """What is wrong with how one command ended (nothing when it ended as documented)."""
    wrong: list[str] = []
    both = run.stdout + run.stderr
    if "Traceback" in both:
        wrong.append("a traceback")
    if run.returncode not in (Exit.CLEAN, Exit.FAILED, Exit.DAMAGE):
        wrong.append(f"exit {run.returncode}")
    debug = DEBUG_TEXT.search(both + _files_text(out))
    if debug:
        wrong.append(f"debug text {debug.group(0)!r}")
    errors = [line for line in run.stderr.splitlines() if line.startswith("pgsurgeon: error:")]
    if run.returncode == Exit.FAILED:
        lines = run.stderr.strip().splitlines()
        if len(errors) != 1:
            wrong.append(f"{len(errors)} error lines")
        elif str(broken) not in errors[0]:
            wrong.append("an error line naming nothing under the broken directory")
        if not any(line.startswith("hint:") for line in lines):
            wrong.append("no hint")
    elif errors:
        wrong.append(f"an error line with exit {run.returncode}")
    return [f"{command}: {w}: {run.stderr.strip()[-300:]!r}" for w in wrong]


@pytest.mark.parametrize(("form", "name", "breaking"), _cases(), ids=[f"{f}-{n}" for f, n, _ in _cases()])
def test_broken(sources: Sources, form: str, name: str, breaking: Break) -> None:
    src = {"pgdata": sources.pgdata, "plain": sources.plain, "tar": sources.tar}[form]
    with tempfile.TemporaryDirectory(prefix="pgsurgeon-broken-") as tmp:
        broken = _copy(src, Path(tmp) / "dir")
        breaking(broken, sources)
        # a backup is read by scan's and unload's paths (health's is scan's; files takes data directories only)
        commands = COMMANDS if form == "pgdata" else {c: COMMANDS[c] for c in ("scan", "unload")}
        outs = {c: Path(tmp) / f"out-{c}" for c in commands}
        argvs = {c: [a.format(dir=broken, out=outs[c]) for a in argv] for c, argv in commands.items()}
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = dict(zip(argvs, pool.map(_run, argvs.values()), strict=True))
        wrong = [w for c, run in runs.items() for w in _judge(c, broken, run, outs[c])]
        assert not wrong, "\n".join(wrong)
