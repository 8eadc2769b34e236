"""A throwaway copy of a cluster's catalog, to be started and read by the cluster's own pg_dump.

It holds the system catalogs with their indexes and TOAST tables (every relation below FirstNormalObjectId, the
mapped ones found through pg_filenode.map), the sequences (pg_dump reads their values), pg_xact, pg_multixact,
pg_commit_ts, the version files and relation maps, and an empty file for every other table: pg_dump opens them,
finds no rows, and the dump holds the schema alone. It is megabytes, not the database. The original
data directory is only read."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon.catalog.files import FIRST_NORMAL_OID, PG_CLASS, Database, FilesCatalog
from pgsurgeon.pgbin import OsUser

# Directories a data directory must have for the server to start (src/bin/initdb/initdb.c, subdirs[]), copied when
# they hold what the catalog's rows depend on (the status of their transactions), created empty otherwise.
COPIED_DIRS = ("pg_xact", "pg_multixact", "pg_commit_ts")
EMPTY_DIRS = (
    "global", "base", "pg_wal/archive_status", "pg_wal/summaries", "pg_subtrans", "pg_twophase", "pg_notify",
    "pg_serial", "pg_snapshots", "pg_stat", "pg_stat_tmp", "pg_replslot", "pg_tblspc", "pg_dynshmem",
    "pg_logical/snapshots", "pg_logical/mappings", "pg_multixact/members", "pg_multixact/offsets",
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


def make_copy(files: FilesCatalog, databases: list[Database], dest: Path, owner: OsUser) -> CatalogCopy:
    """Copy the catalog of ``files.pgdata`` (the given databases) into ``dest`` (new or empty), owned by ``owner``."""
    src = files.pgdata
    out = CatalogCopy(dest)
    dest.mkdir(mode=0o700, exist_ok=True)
    for d in EMPTY_DIRS:
        (dest / d).mkdir(parents=True, exist_ok=True)
    for d in COPIED_DIRS:
        if (src / d).is_dir():
            shutil.copytree(src / d, dest / d, dirs_exist_ok=True)
    _copy_file(src / "PG_VERSION", dest / "PG_VERSION", out)
    _link_tablespaces(src, dest, out)
    for entry in (src / "global").iterdir():
        if entry.is_file() and entry.name not in SKIPPED_FILES:
            _copy_file(entry, dest / "global" / entry.name, out)
    for db in databases:
        _copy_database(files, db, dest, out)
    (dest / "postgresql.conf").write_text(CONF, encoding="utf-8")
    (dest / "pg_hba.conf").write_text(HBA, encoding="utf-8")
    (dest / "pg_ident.conf").write_text("", encoding="utf-8")
    _chown_tree(dest, owner)
    return out


def _copy_database(files: FilesCatalog, db: Database, dest: Path, out: CatalogCopy) -> None:
    cat = files.database(db)
    located = cat.locate(PG_CLASS)
    if located is None:
        return
    dbdir = os.path.dirname(located[0])
    src, dst = str(files.pgdata), str(dest)
    os.makedirs(os.path.join(dst, dbdir), exist_ok=True)
    made = {dbdir}
    for entry in os.scandir(os.path.join(src, dbdir)):
        if entry.is_file() and not entry.name[0].isdigit() and entry.name not in SKIPPED_FILES:
            _copy_file(entry.path, os.path.join(dst, dbdir, entry.name), out)  # PG_VERSION, pg_filenode.map
    forks = _Forks(src)
    for rel in cat.relations.values():
        loc = cat.locate(rel.oid)
        if loc is None or loc[0].startswith("global/"):
            continue  # no storage, or a shared catalog (global/ is copied whole)
        parent, name = os.path.split(loc[0])
        catalog = rel.oid < FIRST_NORMAL_OID or rel.relkind == "S"
        if not catalog and rel.relkind != "r":
            continue  # pg_dump COPYs each table (an empty file holds no rows), and opens no index
        if parent not in made:
            os.makedirs(os.path.join(dst, parent), exist_ok=True)
            made.add(parent)
        if catalog:
            for segment in forks.of(parent, name):
                _copy_file(os.path.join(src, parent, segment), os.path.join(dst, parent, segment), out)
        else:
            os.close(os.open(os.path.join(dst, parent, name), os.O_WRONLY | os.O_CREAT, 0o600))
            out.empty += 1


class _Forks:
    """The main fork's segment files of each relation (1234, 1234.1), one directory listing each: the server does
    without a free space map or visibility map, and files cost more to create than their bytes to copy."""

    def __init__(self, pgdata: str) -> None:
        self.pgdata = pgdata
        self.dirs: dict[str, dict[str, list[str]]] = {}

    def of(self, parent: str, name: str) -> list[str]:
        listing = self.dirs.get(parent)
        if listing is None:
            listing = {}
            directory = os.path.join(self.pgdata, parent)
            for entry in os.scandir(directory) if os.path.isdir(directory) else []:
                if entry.is_file() and entry.name[0].isdigit() and "_" not in entry.name:
                    listing.setdefault(entry.name.split(".", 1)[0], []).append(entry.name)
            self.dirs[parent] = listing
        return listing.get(name, [])


def _link_tablespaces(src: Path, dest: Path, out: CatalogCopy) -> None:
    """Each tablespace becomes a directory of the copy, linked from its pg_tblspc as in the original."""
    spc = src / "pg_tblspc"
    if not spc.is_dir():
        return
    for entry in spc.iterdir():
        if not entry.name.isdigit():
            continue
        target = dest / "tablespaces" / entry.name
        target.mkdir(parents=True, exist_ok=True)
        (dest / "pg_tblspc" / entry.name).symlink_to(target)
        out.tablespaces[str(target)] = os.readlink(entry) if entry.is_symlink() else str(entry)


def _copy_file(src: str | Path, dest: str | Path, out: CatalogCopy) -> None:
    shutil.copyfile(src, dest)
    out.bytes += os.path.getsize(dest)
    out.files += 1


def _chown_tree(top: Path, owner: OsUser) -> None:
    top.chmod(0o700)
    if not owner.switch:
        return
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            os.chown(Path(dirpath) / name, owner.uid, owner.gid, follow_symlinks=False)
    os.chown(top, owner.uid, owner.gid)
