"""Hostile and damaged backups cannot exhaust memory (issue 32): a tar header that lies about a member's size, a
compressed stream that expands far past what its headers account for, archives cut short, deep directory trees and
symbolic link loops. Each is built from a real ``pg_basebackup -Ft`` / ``-Fp`` of PostgreSQL 15 and 18, then
``pgsurgeon scan`` and ``pgsurgeon unload`` run on it as a subprocess under a 1 GiB address-space limit
(``prlimit --as``): each must end in one ``error:`` line naming the archive and member (or the path), exit 1 or 2,
no traceback, within 60 s, with a peak RSS of at most 200 MB.

Compression is done here, with the gzip module and the zstd and lz4 programs (the PostgreSQL builds lack server-side
lz4), so a bomb can be written as concatenated frames: a few MB that decompress to 21 GiB."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

import pytest

from fix_pg import create_test_cluster

AS_LIMIT = 1 << 30
RSS_LIMIT_KB = 200 * 1024
TIME_LIMIT = 60.0
TIB = 1 << 40
BOMB = 21 << 30
ZEROS = 64 << 20  # one compressed frame of zeros, repeated to make a bomb
BLOCK = 512


@dataclass
class Source:
    version: str
    tar: Path  # a -Ft backup: base.tar, pg_wal.tar, backup_manifest
    plain: Path  # a -Fp backup
    relation: str  # a user table's segment in base.tar (base/<db>/<relfilenode>)


@dataclass
class Run:
    code: int
    err: str
    seconds: float
    rss_kb: int


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def source(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Source]:
    version = request.param
    cluster = create_test_cluster(
        lab_base_dir, f"hostile{version}", version, extra_conf={"wal_level": "replica", "max_wal_senders": 4}
    )
    try:
        cluster.start()
        with cluster.connect() as conn:
            conn.execute("CREATE TABLE t (id int, label text)")
            conn.execute("INSERT INTO t SELECT g, repeat('x', 40) || g FROM generate_series(1, 2000) g")
            conn.execute("CHECKPOINT")
            (path,) = conn.execute("SELECT pg_relation_filepath('t')").fetchone() or ("",)
        out = {}
        for form in ("-Ft", "-Fp"):
            target = cluster.lab_dir / f"bk{form}"
            cluster.run_tool(
                "pg_basebackup", "-D", str(target), "-c", "fast", form, "--no-verify-checksums", timeout=300
            )
            out[form] = target
        yield Source(version, out["-Ft"], out["-Fp"], str(path))
    finally:
        cluster.destroy()


# ------------------------------------------------------------------------------------------ building hostile input


def _member(tar_bytes: bytes, name: str) -> tarfile.TarInfo:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tf:
        for info in tf.getmembers():
            if info.name.removeprefix("./") == name:
                return info
    raise AssertionError(f"{name} is not in the archive")


def _with_size(header: bytes, size: int) -> bytes:
    """A ustar header stating ``size``, base-256 when octal cannot hold it (as GNU tar and PostgreSQL's tar.c do),
    with its checksum recomputed: only the size lies."""
    h = bytearray(header)
    if size < 8**11:
        h[124:136] = b"%011o\0" % size
    else:
        h[124:136] = b"\x80" + size.to_bytes(11, "big")
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def _lie(tar_bytes: bytes, name: str, size: int) -> bytes:
    info = _member(tar_bytes, name)
    head = _with_size(tar_bytes[info.offset : info.offset + BLOCK], size)
    return tar_bytes[: info.offset] + head + tar_bytes[info.offset + BLOCK :]


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return gzip.compress(data, compresslevel=6)
    tool = {"zstd": ["zstd", "-q", "-c", "-1"], "lz4": ["lz4", "-q", "-c", "--content-size"]}[kind]
    return subprocess.run(tool, input=data, capture_output=True, check=True).stdout


SUFFIX = {"gzip": ".gz", "zstd": ".zst", "lz4": ".lz4"}
_zero_frames: dict[str, bytes] = {}


def _zeros(kind: str, n: int) -> Iterator[bytes]:
    """``n`` zero bytes (a multiple of ZEROS, plus a tail) as concatenated compressed frames."""
    if kind not in _zero_frames:
        _zero_frames[kind] = _compress(kind, bytes(ZEROS))
    for _ in range(n // ZEROS):
        yield _zero_frames[kind]
    if n % ZEROS:
        yield _compress(kind, bytes(n % ZEROS))


def _bomb(tar_bytes: bytes, name: str, size: int, kind: str, *, honest_header: bool) -> Iterator[bytes]:
    """Member ``name`` expanded to ``size`` zero bytes. With a header stating ``size`` the tar is well formed, only
    huge; with ``honest_header`` the header keeps its size and the zeros run on past the member."""
    info = _member(tar_bytes, name)
    data_end = info.offset_data + -(-info.size // BLOCK) * BLOCK
    if honest_header:
        yield _compress(kind, tar_bytes[:data_end])
        yield from _zeros(kind, size)
        return
    yield _compress(kind, tar_bytes[: info.offset] + _with_size(tar_bytes[info.offset : info.offset + BLOCK], size))
    yield from _zeros(kind, size)
    yield _compress(kind, bytes(-size % BLOCK) + tar_bytes[data_end:])


def _backup_with(src: Source, dest: Path, archive: str, chunks: Iterator[bytes] | bytes) -> Path:
    """A copy of the -Ft backup whose base.tar is replaced by ``archive`` holding ``chunks``."""
    dest.mkdir()
    for p in src.tar.iterdir():
        if p.name != "base.tar":
            shutil.copy(p, dest / p.name)
    with (dest / archive).open("wb") as fh:
        for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
            fh.write(chunk)
    return dest


# ------------------------------------------------------------------------------------------ running under limits


# Forks the command and reports its peak RSS. Measured from pytest directly, a child's ru_maxrss starts at pytest's
# own size (exec keeps the larger of the old and new memory's peak, and the old one is pytest's copy), which grows
# past the limit after a few test files; this small parent makes that floor a few MB.
_PEAK = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stderr.write(f'\\npeak_rss_kb={usage.ru_maxrss}\\n')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def _run(*argv: str) -> Run:
    """``pgsurgeon ARGV`` under ``prlimit --as=1GiB``: exit code, stderr, seconds, peak RSS of it and its children."""
    cmd = [sys.executable, "-c", _PEAK, "prlimit", f"--as={AS_LIMIT}", "--", sys.executable, "-m", "pgsurgeon", *argv]
    start = time.monotonic()
    with (
        open(os.devnull, "wb") as out,
        subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, start_new_session=True) as proc,
    ):
        try:
            _, raw = proc.communicate(timeout=TIME_LIMIT * 2)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, raw = proc.communicate()
    err, said, peak = raw.decode(errors="replace").rpartition("\npeak_rss_kb=")
    if not said:  # killed before it could say: the limits fail the test
        return Run(proc.returncode, peak, time.monotonic() - start, 1 << 30)
    return Run(proc.returncode, err, time.monotonic() - start, int(peak))


def _refused(backup: Path, tmp: Path, *names: str) -> list[str]:
    """scan and unload both end in one error line naming each of ``names``, within the limits; the lines."""
    lines = []
    for argv in (["scan", str(backup)], ["unload", str(backup), "--out", str(tmp / f"out-{backup.name}")]):
        r = _run(*argv)
        errors = [line for line in r.err.splitlines() if "error:" in line]
        assert "Traceback" not in r.err, r.err[-3000:]
        assert r.code in (1, 2), (argv[0], r.code, r.err[-3000:])
        assert len(errors) == 1, (argv[0], r.err[-3000:])
        assert errors[0].startswith("pgsurgeon: error: "), errors
        assert "\nhint: " in r.err, r.err
        for name in names:
            assert name in errors[0], (name, errors[0])
        assert r.seconds < TIME_LIMIT, (argv[0], r.seconds, errors[0])
        assert r.rss_kb <= RSS_LIMIT_KB, (argv[0], r.rss_kb, errors[0])
        lines.append(errors[0])
    return lines


def _base(src: Source) -> bytes:
    return (src.tar / "base.tar").read_bytes()


# ------------------------------------------------------------------------------------------ tests


def test_a_normal_backup_reads_under_the_limits(source: Source, tmp_path: Path) -> None:
    """The limits leave room for the real thing: the untouched backup, plain tar and gzip, scans and unloads."""
    gz = _backup_with(source, tmp_path / "gz", "base.tar.gz", _compress("gzip", _base(source)))
    for backup in (source.tar, gz):
        for argv in (["scan", str(backup)], ["unload", str(backup), "--out", str(tmp_path / f"u-{backup.name}")]):
            r = _run(*argv)
            assert r.code in (0, 1), (argv, r.code, r.err[-3000:])  # 1: unload notes what it left out
            assert "error:" not in r.err, r.err[-3000:]
            assert r.rss_kb <= RSS_LIMIT_KB and r.seconds < TIME_LIMIT, (argv, r)


LIES = {
    # archive name, compress?, member chosen by a lambda on the source
    "relation-tar": ("base.tar", None, lambda s: s.relation),
    "pg_version-tar": ("base.tar", None, lambda s: "PG_VERSION"),
    "relation-gzip": ("base.tar.gz", "gzip", lambda s: s.relation),
    "backup_label-zstd": ("base.tar.zst", "zstd", lambda s: "backup_label"),
    "pg_control-lz4": ("base.tar.lz4", "lz4", lambda s: "global/pg_control"),
}


@pytest.mark.parametrize("case", LIES)
def test_a_header_claiming_1_tib_is_refused(source: Source, tmp_path: Path, case: str) -> None:
    archive, kind, member = LIES[case]
    name = member(source)
    tar = _lie(_base(source), name, TIB)
    backup = _backup_with(source, tmp_path / "bk", archive, tar if kind is None else _compress(kind, tar))
    for line in _refused(backup, tmp_path, archive, f"member {name} ", "1 TiB"):
        assert "truncated" in line or "more than the 64 MiB" in line, line


def _lz4_bomb(tar_bytes: bytes, name: str, size: int) -> bytes:
    """The lz4 reader takes one frame (as pg_basebackup writes), so the bomb is one frame, made by the lz4 program
    from a stream of zeros."""
    info = _member(tar_bytes, name)
    data_end = info.offset_data + -(-info.size // BLOCK) * BLOCK
    head = tar_bytes[: info.offset] + _with_size(tar_bytes[info.offset : info.offset + BLOCK], size)
    tail = bytes(-size % BLOCK) + tar_bytes[data_end:]
    script = 'cat "$1"; head -c "$2" /dev/zero; cat "$3"'
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "head").write_bytes(head)
        (Path(tmp) / "tail").write_bytes(tail)
        feed = subprocess.Popen(["sh", "-c", script, "sh", f"{tmp}/head", str(size), f"{tmp}/tail"], stdout=PIPE)
        done = subprocess.run(["lz4", "-q", "-1", "-c"], stdin=feed.stdout, capture_output=True, check=True)
        feed.wait()
    return done.stdout


# (compression, member: "relation" or a file read whole, size). A relation segment may be large, so its bomb is
# decompressed through once and refused against pg_control's segment size (3 GiB: three times the address space the
# tests allow, and seconds less per run than 21); a file read whole is refused on its header. The lz4 program writes
# its bombs from zeros for each run.
BOMBS = {
    "gzip-relation": ("gzip", "relation", 3 << 30),
    "gzip-pg_xact": ("gzip", "pg_xact/0000", BOMB),
    "zstd-relation": ("zstd", "relation", 3 << 30),
    "zstd-pg_control": ("zstd", "global/pg_control", BOMB),
    "lz4-relation": ("lz4", "relation", 3 << 30),
    "lz4-PG_VERSION": ("lz4", "PG_VERSION", 3 << 30),
}


@pytest.mark.parametrize("case", BOMBS)
def test_a_bomb_is_refused(source: Source, tmp_path: Path, case: str) -> None:
    kind, member, size = BOMBS[case]
    name = source.relation if member == "relation" else member
    archive = "base.tar" + SUFFIX[kind]
    if kind == "lz4":
        data: bytes | Iterator[bytes] = _lz4_bomb(_base(source), name, size)
    else:
        data = _bomb(_base(source), name, size, kind, honest_header=False)
    backup = _backup_with(source, tmp_path / "bk", archive, data)
    assert (backup / archive).stat().st_size < size // 100  # a bomb indeed
    why = "more than a segment file can hold" if member == "relation" else "more than the 64 MiB a file read whole"
    for line in _refused(backup, tmp_path, archive, f"member {name} "):
        assert why in line, line


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_data_past_a_member_is_refused(source: Source, tmp_path: Path, kind: str) -> None:
    """A member's header keeps its size, and 21 GiB of zeros follow its data: the tar reader takes the first zero
    block for the end of the archive; what follows must be refused after a little padding, not decompressed."""
    archive = "base.tar" + SUFFIX[kind]
    data = _bomb(_base(source), source.relation, BOMB, kind, honest_header=True)
    backup = _backup_with(source, tmp_path / "bk", archive, data)
    for line in _refused(backup, tmp_path, archive, f"member {source.relation}"):
        assert "goes on past the end of the archive" in line, line


def _cut(src: Source, where: str) -> bytes:
    base = _base(src)
    info = _member(base, src.relation)
    return base[: {"header": info.offset + 100, "member": info.offset_data + 5000, "boundary": info.offset}[where]]


CUTS = {
    "tar-mid-header": ("base.tar", "header", "ends inside a header"),
    "tar-mid-member": ("base.tar", "member", "only 4.8 KiB of the archive are left"),
    "tar-at-a-header": ("base.tar", "boundary", "without its end-of-archive block"),
    "gzip-mid-header": ("base.tar.gz", "header", "ends inside a header"),
    "zstd-mid-member": ("base.tar.zst", "member", "ends inside member"),
    "lz4-at-a-header": ("base.tar.lz4", "boundary", "without its end-of-archive block"),
}


@pytest.mark.parametrize("case", CUTS)
def test_a_truncated_archive_is_refused(source: Source, tmp_path: Path, case: str) -> None:
    archive, where, why = CUTS[case]
    tar = _cut(source, where)
    kind = {".gz": "gzip", ".zst": "zstd", ".lz4": "lz4"}.get(Path(archive).suffix)
    backup = _backup_with(source, tmp_path / "bk", archive, tar if kind is None else _compress(kind, tar))
    for line in _refused(backup, tmp_path, archive):
        assert why in line, line
        assert "member " in line, line


@pytest.mark.parametrize("kind", ["gzip", "zstd", "lz4"])
def test_a_cut_compressed_stream_is_refused(source: Source, tmp_path: Path, kind: str) -> None:
    archive = "base.tar" + SUFFIX[kind]
    whole = _compress(kind, _base(source))
    backup = _backup_with(source, tmp_path / "bk", archive, whole[: len(whole) // 2])
    for line in _refused(backup, tmp_path, archive):
        assert "reading the archive failed" in line and "member " in line, line


def _deep(top: Path, levels: int) -> None:
    fd = os.open(top, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)


# name → (how the plain backup is changed, what scan's error says, whether unload reads there)
TREES: dict[str, tuple[Callable[[Path], None], str, bool]] = {
    "tablespace-link-to-parent": (lambda d: (d / "pg_tblspc" / "99999").symlink_to(".."), "pg_tblspc/99999", False),
    "loop-inside-base": (lambda d: (d / "base" / "1" / "loop").symlink_to(".."), "base/1/loop", False),
    "link-to-itself": (lambda d: (d / "base" / "1" / "self").symlink_to("self"), "base/1/self", False),
    "loop-inside-pg_multixact": (lambda d: (d / "pg_multixact" / "loop").symlink_to(".."), "pg_multixact/loop", True),
    "deep-base": (lambda d: _deep(d / "base" / "1", 200), "base/1/d/d", False),
    "deep-pg_multixact": (lambda d: _deep(d / "pg_multixact", 200), "pg_multixact/d/d", True),
}


@pytest.mark.parametrize("case", TREES)
def test_loops_and_deep_trees_end(source: Source, tmp_path: Path, case: str) -> None:
    """scan checks every file against backup_manifest, so it walks the whole tree: one error line. unload reads only
    what it needs: where that is (pg_multixact is copied for the schema step) the step is given up with the reason,
    elsewhere the tree is not its business; either way it ends, within the limits."""
    change, where, unload_reads = TREES[case]
    backup = tmp_path / "plain"
    shutil.copytree(source.plain, backup, symlinks=True)
    change(backup)
    r = _run("scan", str(backup))
    errors = [line for line in r.err.splitlines() if "error:" in line]
    assert r.code == 1 and len(errors) == 1 and "Traceback" not in r.err, r.err[-3000:]
    assert where in errors[0] and ("loop" in errors[0] or "more than 32 directories deep" in errors[0]), errors
    assert r.seconds < TIME_LIMIT and r.rss_kb <= RSS_LIMIT_KB, r
    r = _run("unload", str(backup), "--out", str(tmp_path / "out"))
    assert "Traceback" not in r.err and r.seconds < TIME_LIMIT and r.rss_kb <= RSS_LIMIT_KB, (r.code, r.err[-3000:])
    said = " ".join(r.err.split())  # the console wraps notes
    if unload_reads:
        assert r.code == 2 and "the schema step failed" in said and "more than 32 directories deep" in said, said
    else:
        assert r.code == 0, r.err[-3000:]
