"""A throwaway copy of a cluster's catalog, to be started and read by the cluster's own pg_dump.

It holds the system catalogs with their indexes and TOAST tables (every relation below FirstNormalObjectId, the
mapped ones found through pg_filenode.map), the sequences (pg_dump reads their values), pg_xact, pg_multixact,
pg_commit_ts, the version files and relation maps, and an empty file for every other table: pg_dump opens them,
finds no rows, and the dump holds the schema alone. It is megabytes, not the database. The original
data directory is only read."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon import core
from pgsurgeon.catalog.files import FIRST_NORMAL_OID, PG_CLASS, Database, FilesCatalog
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.pgbin import OsUser

# Directories a data directory must have for the server to start (src/bin/initdb/initdb.c, subdirs[]), copied when
# they hold what the catalog's rows depend on (the status of their transactions), created empty otherwise.
MAX_DEPTH = 32
COPIED_DIRS = ("pg_xact", "pg_multixact", "pg_commit_ts")
EMPTY_DIRS = (
    "global", "base", "pg_wal/archive_status", "pg_wal/summaries", "pg_subtrans", "pg_twophase", "pg_notify",
    "pg_serial", "pg_snapshots", "pg_stat", "pg_stat_tmp", "pg_replslot", "pg_tblspc", "pg_dynshmem",
    "pg_logical/snapshots", "pg_logical/mappings", "pg_multixact/members", "pg_multixact/offsets", "pg_xact",
    "pg_commit_ts",
)  # fmt: skip
SKIPPED_FILES = ("pg_internal.init",)
"""The relation cache's init file: rebuilt at start, and a stale one would describe the catalogs wrongly."""

CONF = """# the throwaway copy of a catalog, started by pgsurgeon unload to run pg_dump on it
max_connections = 10
shared_buffers = 16MB
fsync = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_prepared_transactions = 0
track_commit_timestamp = off
shared_preload_libraries = ''
ignore_checksum_failure = on
default_transaction_read_only = on
logging_collector = off
"""
HBA = "local all all trust\n"


@dataclass
class CatalogCopy:
    root: Path
    bytes: int = 0
    files: int = 0
    empty: int = 0
    tablespaces: dict[str, str] = field(default_factory=dict)
    """Where each tablespace's link points in the copy → where it points in the original (for pg_dumpall's
    CREATE TABLESPACE … LOCATION)."""


def make_copy(
    files: FilesCatalog,
    databases: list[Database],
    dest: Path,
    owner: OsUser,
    read_order: Callable[[str], int | None] | None = None,
    data_root: Path | None = None,
) -> CatalogCopy:
    """Copy the catalog of ``files.pgdata`` (the given databases) into ``dest`` (new or empty), owned by ``owner``.
    ``files.pgdata`` may be a mounted base backup: its files are then read with ``read_order`` (where each comes in
    a compressed archive), so the archive is read through once. With ``data_root`` (the catalog read from an older
    copy, the rows from this cluster), the sequences' files come from there where they are: their values are
    today's, as the rows are."""
    src = str(files.pgdata)
    out = CatalogCopy(dest)
    dest.mkdir(mode=0o700, exist_ok=True)
    for d in EMPTY_DIRS:
        (dest / d).mkdir(parents=True, exist_ok=True)
    plan = _Plan(src)
    plan.copy.append("PG_VERSION")
    for d in COPIED_DIRS:
        plan.tree(d)
    plan.copy += [f"global/{n}" for n in plan.files_in("global") if n not in SKIPPED_FILES]
    for db in databases:
        plan.database(files, db)
    _link_tablespaces(files.pgdata, dest, out)
    if read_order is not None:
        order = read_order
        plan.copy.sort(key=lambda rel: -1 if (at := order(rel)) is None else at)
    for parent in {os.path.dirname(rel) for rel in plan.copy} | {os.path.dirname(rel) for rel in plan.empty}:
        os.makedirs(os.path.join(dest, parent), exist_ok=True)
    uid, gid = (owner.uid, owner.gid) if owner.switch else (-1, -1)
    root = str(dest)

    def one(rel: str) -> int:
        target = os.path.join(root, rel)
        today = os.path.join(data_root, rel) if data_root is not None and rel in plan.sequences else None
        origin = today if today is not None and os.path.isfile(today) else os.path.join(src, rel)
        if read_order is None:
            return _copy_file(origin, target, uid, gid)
        size = core.vfs_copy(origin, target)
        os.chown(target, uid, gid)
        return size

    sizes = [one(rel) for rel in plan.copy]  # one at a time: threads were slower (2 cores, the carving beside)
    out.bytes += sum(sizes)
    out.files += len(sizes)
    for rel in plan.empty:
        _write(os.path.join(root, rel), b"", uid, gid, os.O_WRONLY | os.O_CREAT)
        out.empty += 1
    for name, text in (("postgresql.conf", CONF), ("pg_hba.conf", HBA), ("pg_ident.conf", "")):
        _write(os.path.join(root, name), text.encode(), uid, gid, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    _chown_dirs(dest, owner)
    return out


def _copy_file(origin: str, target: str, uid: int, gid: int) -> int:
    """``origin`` copied by the kernel to ``target``, created owned by uid:gid; its size. Few system calls: a
    catalog file is a page or a few, so a copy costs its calls and the interpreter's work around them, not its
    bytes (shutil.copyfile, os.path.getsize and a walk chowning each file took 0.45-0.6 s for 2,817 files, this
    0.18-0.29 s; docs/benchmarks.md)."""
    src = os.open(origin, os.O_RDONLY)
    try:
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchown(dst, uid, gid)
            size, done = os.fstat(src).st_size, 0
            while done < size:
                sent = os.sendfile(dst, src, None, size - done)
                if sent == 0:  # shrunk while copied
                    break
                done += sent
            return done
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _write(target: str, data: bytes, uid: int, gid: int, flags: int) -> None:
    fd = os.open(target, flags, 0o600)
    try:
        os.fchown(fd, uid, gid)
        os.write(fd, data)
    finally:
        os.close(fd)


class _Plan:
    """The files to copy and the files to create empty, relative to the data directory; listed through the core,
    which reads a mounted backup's directories as it reads a data directory's."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.copy: list[str] = []
        self.empty: list[str] = []
        self.sequences: set[str] = set()
        self._listed: dict[str, list[tuple[str, bool, int]]] = {}
        self._by_node: dict[str, dict[str, list[str]]] = {}

    def listing(self, rel: str) -> list[tuple[str, bool, int]]:
        if rel not in self._listed:
            self._listed[rel] = _entries(Path(self.src) / rel)
        return self._listed[rel]

    def files_in(self, rel: str) -> list[str]:
        return [name for name, is_dir, _ in self.listing(rel) if not is_dir]

    def tree(self, top: str) -> None:
        """Every file under ``top``; PostgreSQL's own go two deep (pg_multixact/members), so a deeper tree is a
        symbolic link loop or not the server's, and an error rather than an endless walk."""
        todo = [top]
        while todo:
            rel = todo.pop()
            if rel.count("/") > MAX_DEPTH:
                raise PgSurgeonError(
                    f"{Path(self.src) / rel}: more than {MAX_DEPTH} directories deep",
                    hint="a symbolic link loop, or a tree PostgreSQL did not make: remove it, then try again",
                )
            for name, is_dir, _ in self.listing(rel):
                if is_dir:
                    todo.append(f"{rel}/{name}")
                else:
                    self.copy.append(f"{rel}/{name}")

    def segments(self, parent: str, node: str) -> list[str]:
        """The main fork's segment files of relation file ``node`` (1234, 1234.1): the server does without a free
        space map or visibility map, and files cost more to create than their bytes to copy."""
        if parent not in self._by_node:
            by_node: dict[str, list[str]] = {}
            for name in self.files_in(parent):
                stem, _, segno = name.partition(".")
                if stem.isdigit() and (not segno or segno.isdigit()):
                    by_node.setdefault(stem, []).append(name)
            self._by_node[parent] = by_node
        return self._by_node[parent].get(node, [])

    def database(self, files: FilesCatalog, db: Database) -> None:
        cat = files.relations_of(db)  # pg_class is all it reads: a database not read whole yet is not read whole
        located = cat.locate(PG_CLASS)
        if located is None:
            return
        dbdir = os.path.dirname(located[0])
        # PG_VERSION, pg_filenode.map
        self.copy += [f"{dbdir}/{n}" for n in self.files_in(dbdir) if not n[0].isdigit() and n not in SKIPPED_FILES]
        for rel in cat.relations.values():
            if rel.oid >= FIRST_NORMAL_OID and rel.relkind not in ("S", "r"):
                continue  # an index, TOAST table, view… of the user's: neither copied nor created
            loc = cat.locate(rel.oid)
            if loc is None or loc[0].startswith("global/"):
                continue  # no storage, or a shared catalog (global/ is copied whole)
            parent, node = os.path.split(loc[0])
            if rel.oid < FIRST_NORMAL_OID or rel.relkind == "S":
                segments = [f"{parent}/{n}" for n in self.segments(parent, node)]
                self.copy += segments
                if rel.relkind == "S":
                    self.sequences.update(segments)
            elif rel.relkind == "r":  # pg_dump COPYs each table (an empty file holds no rows) and opens no index
                self.empty.append(loc[0])


def _link_tablespaces(src: Path, dest: Path, out: CatalogCopy) -> None:
    """Each tablespace becomes a directory of the copy, linked from its pg_tblspc as in the original (a backup names
    the original's directories in its tablespace_map)."""
    mapped: dict[str, str] = {}
    for line in _text(src / "tablespace_map").splitlines():
        oid, _, location = line.partition(" ")
        mapped[oid] = location
    for name, _is_dir, _len in _entries(src / "pg_tblspc"):
        if not name.isdigit():
            continue
        target = dest / "tablespaces" / name
        target.mkdir(parents=True, exist_ok=True)
        (dest / "pg_tblspc" / name).symlink_to(target)
        link = src / "pg_tblspc" / name
        out.tablespaces[str(target)] = mapped.get(name) or (os.readlink(link) if link.is_symlink() else str(link))


def _entries(path: Path) -> list[tuple[str, bool, int]]:
    try:
        return core.vfs_list(path)
    except (OSError, ValueError):
        return []


def _text(path: Path) -> str:
    """A small file of a data directory or a mounted backup, as text ("" when absent; a file over the core's cap
    for whole reads is an error, not a memory exhaustion)."""
    try:
        return core.vfs_read(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _chown_dirs(top: Path, owner: OsUser) -> None:
    """The copy's directories and links given to ``owner`` (its files were created owned by it)."""
    top.chmod(0o700)
    if not owner.switch:
        return
    for dirpath, dirnames, _files in os.walk(top):
        os.chown(dirpath, owner.uid, owner.gid)
        for name in dirnames:  # a tablespace's link is listed here, and not walked into
            os.chown(os.path.join(dirpath, name), owner.uid, owner.gid, follow_symlinks=False)
