"""Every command against hostile input (issue 19, point 7): malformed dsns, paths that are missing, unreadable or of
the wrong type, a short or unreadable pg_control, damaged manifests, numbers out of range, outputs that cannot be
written and a closed output pipe.

Each case runs the real CLI in a subprocess (``python -m pgsurgeon``), so a traceback would really be printed, and
asserts: exactly one ``pgsurgeon: error:`` line (and at most a ``hint:`` line) on stderr, no traceback, the
documented exit status, and no file written. Cases marked ``nobody`` run as an unprivileged user (root reads and
writes everything), so permissions really refuse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fix_corrupt import PLAIN, CorruptLabs, make_table, sql
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

TIMEOUT_S = 60
BAD_DSNS = ("host=127.0.0.1 port", "host='127.0.0.1", "postgresql://[::1")
USAGE, FAILED = Exit.USAGE, Exit.FAILED


@dataclass
class World:
    lab: LabCluster
    tmp: Path
    """A 0755 directory owned by root: readable, not writable, by the unprivileged user."""

    def fill(self, text: str) -> str:
        return text.format(
            dsn=self.lab.dsn(), pgdata=self.lab.pgdata, tmp=self.tmp, relfile=self.tmp / "good" / "base" / "1" / "1259"
        )


def _unprivileged() -> list[str]:
    """A prefix dropping root to nobody (root bypasses file permissions); nothing when not root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is needed to drop root for the permission cases")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _fake_pgdata(src: Path, dst: Path, control: bytes | None = None) -> Path:
    """A data directory skeleton: PG_VERSION, global/pg_control (``control`` instead when given), pg_class of
    template1."""
    (dst / "global").mkdir(parents=True)
    (dst / "base" / "1").mkdir(parents=True)
    shutil.copyfile(src / "PG_VERSION", dst / "PG_VERSION")
    (dst / "global" / "pg_control").write_bytes(
        control if control is not None else (src / "global" / "pg_control").read_bytes()
    )
    shutil.copyfile(src / "base" / "1" / "1259", dst / "base" / "1" / "1259")
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _manifest(doc: object) -> Callable[[World], None]:
    def write(w: World) -> None:
        (w.tmp / "m.json").write_text(json.dumps(doc))
        (w.tmp / "m.json").chmod(0o644)

    return write


def _good_manifest(**header: object) -> dict[str, object]:
    return {"format": "pgsurgeon-corruption-manifest", "version": 1, "pgdata": "/nonexistent", **header}


@pytest.fixture(scope="module")
def world(lab_base_dir: Path) -> Iterator[World]:
    labs = CorruptLabs(lab_base_dir, "bad")
    tmp = Path(tempfile.mkdtemp(prefix="pgsurgeon-bad-", dir="/tmp"))
    tmp.chmod(0o755)
    try:
        lab = labs.get("18")
        make_table(lab, PLAIN, "t")
        sql(lab, "CREATE SEQUENCE IF NOT EXISTS s")
        src = lab.pgdata
        _fake_pgdata(src, tmp / "good")
        _fake_pgdata(src, tmp / "short", control=(src / "global" / "pg_control").read_bytes()[:100])
        _fake_pgdata(src, tmp / "noread")
        (tmp / "noread" / "global" / "pg_control").chmod(0)
        (tmp / "plain-file").write_text("not a directory\n")
        (tmp / "plain-file").chmod(0o644)
        (tmp / "empty-dir").mkdir(mode=0o755)
        yield World(lab, tmp)
    finally:
        labs.close()
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    code: Exit
    nobody: bool = False
    setup: Callable[[World], None] | None = None
    said: str = ""
    """Text the error line must contain."""


def _dsn_cases() -> list[Case]:
    commands = {
        "scan": ("scan", "{pgdata}", "--live", "--dsn", "DSN"),
        "inspect": ("inspect", "--dsn", "DSN", "--table", "t", "-b", "0"),
        "files": ("files", "{pgdata}", "--dsn", "DSN"),
        "corrupt": ("corrupt", "zero", "--dsn", "DSN", "--table", "t", "--dry-run"),
        "diagnose": ("diagnose", "--dsn", "DSN"),
        "salvage": ("salvage", "--dsn", "DSN", "--table", "t", "--out", "{tmp}/new-out"),
        "dump-tables": ("dump-tables", "--dsn", "DSN", "--out", "{tmp}/new-out"),
        "repair": ("repair", "--dsn", "DSN", "--table", "t", "--run-dir", "{tmp}/new-out"),
    }
    return [
        Case(f"{name}-dsn{n}", tuple(dsn if a == "DSN" else a for a in argv), USAGE, said="the dsn is malformed")
        for name, argv in commands.items()
        for n, dsn in enumerate(BAD_DSNS)
    ]


CASES: list[Case] = [
    *_dsn_cases(),
    # scan
    Case("scan-missing", ("scan", "/nonexistent/pgdata"), FAILED),
    Case("scan-file-outside", ("scan", "{tmp}/plain-file"), FAILED),
    Case("scan-unreadable-control", ("scan", "{tmp}/noread"), FAILED, nobody=True, said="permission denied"),
    Case("scan-jobs-huge", ("scan", "{tmp}/good", "-j", "5000"), USAGE, said="--jobs"),
    Case("scan-jobs-zero", ("scan", "{tmp}/good", "-j", "0"), USAGE, said="--jobs"),
    Case("scan-jobs-text", ("scan", "{tmp}/good", "-j", "many"), USAGE, said="invalid int"),
    # inspect
    Case("inspect-missing", ("inspect", "/nonexistent/1259", "-b", "0"), FAILED),
    Case("inspect-dir", ("inspect", "{tmp}/good", "-b", "0"), USAGE, said="is a directory"),
    Case("inspect-short-control", ("inspect", "{tmp}/short/base/1/1259", "-b", "0"), FAILED, said="pg_control"),
    Case(
        "inspect-unreadable-control",
        ("inspect", "{tmp}/noread/base/1/1259", "-b", "0"),
        FAILED,
        nobody=True,
        said="permission denied",
    ),
    Case("inspect-past-end", ("inspect", "{relfile}", "-b", "999999"), FAILED, said="1259.7"),
    # control
    Case("control-missing", ("control", "/nonexistent/pgdata"), FAILED),
    Case("control-short", ("control", "{tmp}/short"), FAILED),
    Case("control-not-control", ("control", "{tmp}/plain-file"), FAILED),
    Case("control-unreadable", ("control", "{tmp}/noread"), FAILED, nobody=True, said="permission denied"),
    # files
    Case("files-missing", ("files", "/nonexistent/pgdata"), FAILED),
    Case("files-file", ("files", "{tmp}/plain-file"), FAILED),
    Case("files-short-control", ("files", "{tmp}/short"), FAILED, said="pg_control"),
    Case("files-unreadable-control", ("files", "{tmp}/noread"), FAILED, nobody=True, said="permission denied"),
    # lab
    Case("lab-status-lab-dir-file", ("lab", "status", "--lab-dir", "{tmp}/plain-file"), USAGE, said="--lab-dir"),
    Case("lab-up-lab-dir-file", ("lab", "up", "x", "--lab-dir", "{tmp}/plain-file"), USAGE, said="--lab-dir"),
    Case("lab-down-lab-dir-file", ("lab", "down", "x", "--lab-dir", "{tmp}/plain-file"), USAGE, said="--lab-dir"),
    Case("lab-run-out-file", ("lab", "--modes", "header", "--out", "{tmp}/plain-file"), USAGE, said="--out"),
    Case("lab-run-out-unwritable", ("lab", "--modes", "header", "--out", "{tmp}/new-out"), FAILED, nobody=True),
    # corrupt (the lab server must not be stopped for any of these: see test_refused_before_the_server_stops)
    Case(
        "corrupt-count-huge",
        ("corrupt", "bitflips", "--dsn", "{dsn}", "--table", "t", "--count", "1000000000"),
        USAGE,
        said="--count 1000000000",
    ),
    Case(
        "corrupt-count-page",
        ("corrupt", "bitflips", "--dsn", "{dsn}", "--table", "t", "--count", "100000"),
        USAGE,
        said="bits of a page",
    ),
    Case(
        "corrupt-block-past-end",
        ("corrupt", "zero", "--dsn", "{dsn}", "--table", "t", "--block", "99999"),
        FAILED,
        said="beyond the end",
    ),
    Case(
        "corrupt-pgdata-missing",
        ("corrupt", "zero", "--pgdata", "/nonexistent", "--file", "base/1/1259"),
        USAGE,
        said="--pgdata",
    ),
    Case(
        "corrupt-manifest-dir",
        ("corrupt", "zero", "--dsn", "{dsn}", "--table", "t", "--manifest", "{tmp}"),
        USAGE,
        said="--manifest",
    ),
    Case("corrupt-no-table", ("corrupt", "zero", "--dsn", "{dsn}", "--table", "no_such_t"), FAILED),
    # undo
    Case("undo-missing", ("undo", "/nonexistent/m.json"), FAILED),
    Case("undo-dir", ("undo", "{tmp}/empty-dir"), FAILED),
    Case("undo-not-json", ("undo", "{tmp}/plain-file"), FAILED),
    Case("undo-list", ("undo", "{tmp}/m.json"), FAILED, setup=_manifest([1, 2])),
    Case(
        "undo-no-pgdata",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="pgdata",
        setup=_manifest({"format": "pgsurgeon-corruption-manifest", "version": 1, "changes": []}),
    ),
    Case(
        "undo-changes-text",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="changes",
        setup=_manifest(_good_manifest(changes="abc")),
    ),
    Case(
        "undo-change-no-kind",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="kind",
        setup=_manifest(_good_manifest(changes=[{"file": "base/1/1259", "offset": 0, "length": 1}])),
    ),
    Case(
        "undo-offset-text",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="offset",
        setup=_manifest(_good_manifest(changes=[{"kind": "bytes", "file": "f", "offset": "0", "length": 1}])),
    ),
    Case(
        "undo-page-not-object",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="page record",
        setup=_manifest(_good_manifest(changes=[], pages=[7])),
    ),
    Case(
        "undo-lab-text",
        ("undo", "{tmp}/m.json"),
        FAILED,
        said="lab",
        setup=_manifest(_good_manifest(changes=[], lab="x")),
    ),
    Case(
        "undo-unreadable",
        ("undo", "{tmp}/m.json"),
        FAILED,
        nobody=True,
        said="permission denied",
        setup=lambda w: (_manifest(_good_manifest(changes=[]))(w), (w.tmp / "m.json").chmod(0)),
    ),
    # explain
    Case("explain-missing-file", ("explain", "--file", "/nonexistent/log"), FAILED),
    Case("explain-dir", ("explain", "--file", "{tmp}/empty-dir"), FAILED),
    # diagnose
    Case("diagnose-pgdata-missing", ("diagnose", "--dsn", "{dsn}", "--pgdata", "/nonexistent"), USAGE, said="--pgdata"),
    Case("diagnose-pgdata-file", ("diagnose", "--dsn", "{dsn}", "--pgdata", "{tmp}/plain-file"), USAGE),
    Case("diagnose-jobs-huge", ("diagnose", "--dsn", "{dsn}", "-j", "5000"), USAGE, said="--jobs"),
    # salvage
    Case(
        "salvage-chunk-negative",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out", "--chunk-blocks", "-5"),
        USAGE,
        said="--chunk-blocks",
    ),
    Case(
        "salvage-jobs-huge",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out", "-j", "5000"),
        USAGE,
        said="--jobs",
    ),
    Case(
        "salvage-pgdata-missing",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out", "--pgdata", "/nonexistent"),
        USAGE,
        said="--pgdata",
    ),
    Case(
        "salvage-out-file",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/plain-file"),
        USAGE,
        said="--out",
    ),
    Case(
        "salvage-report-dir",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out", "--report", "{tmp}/empty-dir"),
        USAGE,
        said="--report",
    ),
    Case(
        "salvage-report-no-dir",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out", "--report", "{tmp}/nowhere/r.json"),
        USAGE,
        said="--report",
    ),
    Case(
        "salvage-report-unwritable",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "/tmp/pgsurgeon-bad-x", "--report", "{tmp}/r.json"),
        FAILED,
        nobody=True,
        said="not writable",
    ),
    Case(
        "salvage-out-unwritable",
        ("salvage", "--dsn", "{dsn}", "--table", "t", "--out", "{tmp}/new-out"),
        FAILED,
        nobody=True,
        said="not writable",
    ),
    # dump-tables
    Case("dump-out-file", ("dump-tables", "--dsn", "{dsn}", "--out", "{tmp}/plain-file"), USAGE, said="--out"),
    Case(
        "dump-out-unwritable",
        ("dump-tables", "--dsn", "{dsn}", "--out", "{tmp}/new-out"),
        FAILED,
        nobody=True,
        said="not writable",
    ),
    Case("dump-jobs-huge", ("dump-tables", "--dsn", "{dsn}", "--out", "{tmp}/new-out", "-j", "5000"), USAGE),
    # repair
    Case(
        "repair-pgdata-missing",
        ("repair", "--dsn", "{dsn}", "--table", "t", "--pgdata", "/nonexistent"),
        USAGE,
        said="--pgdata",
    ),
    Case(
        "repair-run-dir-file",
        ("repair", "--dsn", "{dsn}", "--table", "t", "--backup-dir", "{tmp}/plain-file"),
        USAGE,
        said="--backup-dir",
    ),
]


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def _run(argv: list[str], *, nobody: bool, cwd: Path, stdout: int | None = subprocess.PIPE) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(cwd), "PGSURGEON_LAB_DIR": str(cwd / "labs")}
    prefix = _unprivileged() if nobody else []
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "pgsurgeon", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )
    return proc.returncode, proc.stdout or "", proc.stderr


def _one_error(err: str, said: str = "") -> None:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("pgsurgeon: error: "), err
    assert len(lines) == 1 or lines[1].startswith("hint: "), err
    assert said in lines[0], err


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(world: World, case: Case) -> None:
    for leftover in ("m.json", "new-out", "r.json"):
        path = world.tmp / leftover
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    if case.setup is not None:
        case.setup(world)
    before = _tree(world.tmp)
    corruptions = _tree(world.lab.lab_dir)
    if case.nobody and os.geteuid() != 0:
        world.tmp.chmod(0o555)  # not root: the directory is ours, so take our own write permission away
    try:
        code, _, err = _run([world.fill(a) for a in case.argv], nobody=case.nobody, cwd=world.tmp)
    finally:
        world.tmp.chmod(0o755)
    _one_error(err, case.said)
    assert code == case.code, err
    assert _tree(world.tmp) == before, "a file was written"
    assert {k for k in _tree(world.lab.lab_dir) if "corruptions" in k} == {k for k in corruptions if "corruptions" in k}
    assert not Path("/tmp/pgsurgeon-bad-x").exists()


def test_scan_of_a_short_pg_control_finds_it(world: World) -> None:
    """A pg_control cut short in a data directory is damage scan reports (issue 29), not input it cannot take: exit
    2, the finding naming the file, no traceback, and a warning that the relations were not judged without it."""
    code, out, err = _run(["scan", f"{world.tmp}/short", "--format", "json"], nobody=False, cwd=world.tmp)
    assert code == Exit.DAMAGE and "Traceback" not in err, err
    (found,) = json.loads(out)["findings"]
    assert (found["code"], found["path"]) == ("file.control_unreadable", "global/pg_control"), found
    assert err.startswith("pgsurgeon: warning: relations were not scanned"), err


def test_refused_before_the_server_stops(world: World) -> None:
    """``corrupt --block`` past the end is refused from the files as they are, before the lab server is stopped
    for the write (it used to be stopped, restarted, and only then the block found missing)."""
    pid = world.lab.status()["pid"]
    code, _, err = _run(
        ["corrupt", "zero", "--dsn", world.lab.dsn(), "--table", "t", "--block", "99999"], nobody=False, cwd=world.tmp
    )
    _one_error(err, "beyond the end")
    assert code == FAILED  # what the table holds decides: could not run (as inspect -b past the end)
    assert world.lab.status()["pid"] == pid


BROKEN_PIPE = {
    "explain-list": ("explain", "--list"),
    "files": ("files", "{tmp}/good", "--format", "json"),
    "control": ("control", "{tmp}/good"),
    "inspect": ("inspect", "{relfile}", "-b", "0", "--format", "json"),
    "scan": ("scan", "{tmp}/good", "--format", "json"),
    "lab-status": ("lab", "status"),
}


@pytest.mark.parametrize("argv", BROKEN_PIPE.values(), ids=BROKEN_PIPE.keys())
def test_closed_output_pipe(world: World, argv: tuple[str, ...]) -> None:
    """``pgsurgeon … | head -1`` where head has already gone: one line, no BrokenPipeError traceback."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: every write fails with EPIPE
    try:
        code, _, err = _run([world.fill(a) for a in argv], nobody=False, cwd=world.tmp, stdout=write)
    finally:
        os.close(write)
    _one_error(err, "broken pipe")
    assert code == FAILED
