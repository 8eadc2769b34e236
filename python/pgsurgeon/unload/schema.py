"""The databases' schema as the cluster's own pg_dump writes it, with no server on the original.

The catalog is copied to a scratch directory (unload.catalog_copy), made startable with the cluster's own
pg_resetwal and the values rescue.plan derives from the files, started on a private socket, and dumped with
``pg_dump -Fc`` per database plus ``pg_dumpall --globals-only``. pg_restore then splits each dump the way pg_dump's
sections do: pre-data (types, functions, tables, views…) before unload's rows, the data section's sequence values
and large objects, post-data (indexes, constraints, triggers, rules, policies, materialized view refreshes) after.
The scratch directory and its server are gone when this returns, also on errors and Ctrl-C."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pgsurgeon.catalog.files import Database, FilesCatalog
from pgsurgeon.pgbin import PgInstall, install_of_major, run_as, server_user
from pgsurgeon.unload.catalog_damage import CatalogDamage
from pgsurgeon.unload.raw_types import Handoff, print_again

if TYPE_CHECKING:
    # the step that dumps the schema through a private server imports these when it runs (unload --schema files
    # needs none of them)
    from pgsurgeon.rescue.private import PrivateServer
    from pgsurgeon.unload.catalog_copy import CatalogCopy

T = TypeVar("T")
BUILT_IN_DATABASES = ("postgres", "template1")
"""Databases a fresh cluster already has: restore.sql loads into them instead of creating them."""
TOOL_TIMEOUT = 3600
# pg_dump's TOC entry descriptions of more than one word (pg_dump.c, ArchiveEntry … .description); any other
# description is its first word.
_LONG_DESCS = sorted(
    ("TABLE DATA", "SEQUENCE SET", "SEQUENCE OWNED BY", "FK CONSTRAINT", "CHECK CONSTRAINT", "MATERIALIZED VIEW DATA",
     "MATERIALIZED VIEW", "DEFAULT ACL", "EVENT TRIGGER", "FOREIGN TABLE", "FOREIGN DATA WRAPPER", "SERVER",
     "USER MAPPING", "TEXT SEARCH CONFIGURATION", "TEXT SEARCH DICTIONARY", "TEXT SEARCH PARSER",
     "TEXT SEARCH TEMPLATE", "OPERATOR CLASS", "OPERATOR FAMILY", "ROW SECURITY", "TABLE ATTACH", "INDEX ATTACH",
     "SHELL TYPE", "PROCEDURAL LANGUAGE", "ACCESS METHOD", "BLOB METADATA", "LARGE OBJECT", "DATABASE PROPERTIES",
     "PUBLICATION TABLE", "PUBLICATION TABLES IN SCHEMA", "SEARCH PATH", "STATISTICS DATA", "DUMMY TYPE"),
    key=len,
    reverse=True,
)  # fmt: skip
_NOT_OBJECTS = (
    "TABLE DATA", "BLOBS", "LARGE OBJECTS", "SEQUENCE SET", "MATERIALIZED VIEW DATA",  # data, not objects
    "ENCODING", "STDSTRINGS", "SEARCH PATH", "DATABASE", "DATABASE PROPERTIES",
)  # fmt: skip


class SchemaUnavailable(Exception):
    """The schema could not be taken with pg_dump: why, and what would make it possible."""

    def __init__(self, why: str, hint: str = "") -> None:
        super().__init__(why)
        self.why, self.hint = why, hint


@dataclass(frozen=True)
class SchemaRequest:
    files: FilesCatalog
    databases: list[Database]
    archives: Path
    """Where each database's ``pg_dump -Fc`` archive is kept (``<oid>.dump``): pg_restore reads it again."""
    pg_bin: Path | None = None
    read_order: Callable[[str], int | None] | None = None
    """A tar backup's: where each file comes in its archive (the catalog copy reads them in that order)."""
    copied: threading.Event = field(default_factory=threading.Event)
    """Set once the catalog has been copied (or the step has ended): a tar backup's carving waits for it, so the
    two do not pull one compressed stream two ways."""
    data_root: Path | None = None
    """With the catalog from an older copy (unload --catalog-from): the cluster unloaded, whose sequences' values
    the schema takes."""
    handoff: Handoff | None = None
    """Data files with columns of types the row engine cannot print, printed again by the copy's server once the
    carving hands them over (unload.raw_types)."""
    backup_start_lsn: int | None = None
    """Unloading a base backup: backup_label's START WAL LOCATION (pages newer than it were written while copied)."""


@dataclass
class DbDump:
    database: Database
    archive: Path
    pre: str
    data: Path
    """The data section's SQL (sequence values, large objects), a file beside the archive."""
    post: str
    objects: dict[str, int]


@dataclass
class SchemaDump:
    server: str
    """The PostgreSQL that started the copy and the pg_dump that read it."""
    globals_sql: str
    databases: dict[int, DbDump]
    copy_bytes: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    damage: CatalogDamage = field(default_factory=CatalogDamage)
    """Catalog pages that failed their checks (zeroed in the copy) and the objects lost with them."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase."""
    phases_cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per phase (:class:`_Phases`)."""


def _installs(major: int, pg_bin: Path | None) -> tuple[PgInstall, PgInstall]:
    """The cluster's own major (it starts the copy), and the pg_dump to read it: the same installation's when it has
    one, else the newest client at hand (pg_dump reads any older server)."""
    server = install_of_major(major, pg_bin, program="pg_resetwal")
    if server is None:
        raise SchemaUnavailable(
            f"no postgresql {major} installation found (postgres and pg_resetwal of major {major})",
            hint=f"install postgresql-{major} (e.g. apt install postgresql-{major}) or pass its bin directory "
            "with --pg-bin",
        )
    if (server.bin_dir / "pg_dump").is_file() and (server.bin_dir / "pg_restore").is_file():
        return server, server
    for newer in range(18, major - 1, -1):
        client = install_of_major(newer, program="pg_dump")
        if client is not None and (client.bin_dir / "pg_restore").is_file():
            return server, client
    raise SchemaUnavailable(
        f"no pg_dump of postgresql {major} or newer found", hint="pass its bin directory with --pg-bin"
    )


def dump_schema(req: SchemaRequest, cancelled: threading.Event | None = None) -> SchemaDump:
    """Dump the schema of ``req.databases`` from a started copy of the catalog; raises :class:`SchemaUnavailable`."""
    started = time.monotonic()
    cancelled = cancelled or threading.Event()
    major = int(req.files.facts["major"])
    server, client = _installs(major, req.pg_bin)
    scratch = Path(tempfile.mkdtemp(prefix="pgs-unload-", dir=_scratch_parent(req.files)))
    phases = _Phases(cancelled)
    try:
        scratch.chmod(0o755)  # the server's unprivileged user reaches its data directory inside
        pgdata, copy, superuser, damage = _prepare(req, server, pgdata=scratch / "data", phases=phases)
        req.archives.mkdir(parents=True, exist_ok=True)
        dumps, globals_sql, notes = _dump_all(pgdata, server, client, req, superuser, damage, cancelled, scratch)
        phases.done("start, pg_dump and pg_restore, pg_dumpall, stop")
        out = SchemaDump(
            server=f"PostgreSQL {server.short_version}"
            + ("" if client is server else f" (pg_dump {client.short_version})"),
            globals_sql=_restorable_globals(globals_sql, copy.tablespaces),
            databases=dumps,
            copy_bytes=copy.bytes,
            seconds=0.0,
            notes=notes,
            damage=damage,
        )
        out.seconds = round(time.monotonic() - started, 3)
        out.phases, out.phases_cpu = phases.seconds, phases.cpu
        return out
    finally:
        req.copied.set()
        shutil.rmtree(scratch, ignore_errors=True)


class _Phases:
    """Seconds per phase of the schema step, wall and CPU (report.json shows them), and a cancellation check
    between them. CPU is this thread's and its programs' (pg_resetwal, the server with its backends once stopped,
    pg_dump, pg_restore: unload's only child processes); not the page check's worker threads."""

    def __init__(self, cancelled: threading.Event) -> None:
        self.cancelled = cancelled
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._since, self._cpu_since = time.monotonic(), _cpu()

    def done(self, name: str) -> None:
        now, cpu = time.monotonic(), _cpu()
        self.seconds[name] = round(now - self._since, 3)
        self.cpu[name] = round(cpu - self._cpu_since, 3)
        self._since, self._cpu_since = now, cpu
        _check(self.cancelled)


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + children.ru_utime + children.ru_stime


def _prepare(
    req: SchemaRequest, server: PgInstall, *, pgdata: Path, phases: _Phases
) -> tuple[Path, CatalogCopy, str, CatalogDamage]:
    """The copy made, reset and checked: (its data directory, what was copied, the superuser, its damage)."""
    from pgsurgeon.rescue.plan import PlanRequest, plan_resetwal
    from pgsurgeon.unload.catalog_copy import make_copy
    from pgsurgeon.unload.catalog_damage import check_copy

    wanted = {d.oid for d in req.databases} | {d.oid for d in req.files.databases() if d.name in BUILT_IN_DATABASES}
    databases = [d for d in req.files.databases() if d.oid in wanted]
    try:
        copy = make_copy(req.files, databases, pgdata, server_user(), req.read_order, req.data_root)
    finally:
        req.copied.set()
    phases.done("copy the catalog")
    # the copy holds what the plan reads (pg_control, pg_xact, pg_multixact, pg_commit_ts), read as ordinary files
    # even when the original is a backup's archive
    plan = plan_resetwal(PlanRequest(pgdata, pg_bin=req.pg_bin))
    args = ["-f", *(a for a in plan.arguments() if a != "-f")]
    done = run_as(server_user(), [server.tool("pg_resetwal"), *args, pgdata], env=server.env(), timeout=300)
    if done.returncode != 0:
        raise SchemaUnavailable(
            f"pg_resetwal on the catalog copy failed: {_last_line(done.stderr)}",
            hint="see pgsurgeon control --plan PGDATA for the values it was given",
        )
    phases.done("pg_resetwal")
    damage = check_copy(req.files, pgdata, req.databases, req.backup_start_lsn)
    phases.done("check its pages")
    return pgdata, copy, plan.superuser, damage


SHM = Path("/dev/shm")
"""Where the copy goes unless TMPDIR says otherwise: creating its thousand files costs 0.2 ms each on a journaled
file system and nothing in memory, and it is megabytes (docs/benchmarks.md, the schema step)."""


def _scratch_parent(files: FilesCatalog) -> str | None:
    """``$TMPDIR`` when set; else /dev/shm when it has room for the copy many times over; else the default."""
    if os.environ.get("TMPDIR") or not SHM.is_dir() or not os.access(SHM, os.W_OK):
        return None
    large_objects = sum(f.stat().st_size for f in files.pgdata.glob("base/*/2613*"))  # pg_largeobject's data
    free = shutil.disk_usage(SHM).free
    return str(SHM) if free > 4 * (large_objects + (256 << 20)) else None


def _dump_all(
    pgdata: Path,
    server: PgInstall,
    client: PgInstall,
    req: SchemaRequest,
    superuser: str,
    damage: CatalogDamage,
    cancelled: threading.Event,
    scratch: Path,
) -> tuple[dict[int, DbDump], str, list[str]]:
    """Start the copy and dump it, each archive split into its sections as soon as it is written (while the other
    databases are dumped); once more with ignore_system_indexes when a catalog index is what fails (at once when
    the copy's check found one damaged)."""
    from pgsurgeon.rescue.private import PrivateServer

    notes: list[str] = []
    failure = "a catalog index failed its checks" if damage.index_damaged else ""
    attempts: list[dict[str, str]] = [{}, {"ignore_system_indexes": "on"}]
    for settings in attempts[1:] if damage.index_damaged else attempts:
        with PrivateServer(pgdata, server, settings, user=superuser, stop_mode="immediate") as srv:
            if not srv.started:
                raise SchemaUnavailable(
                    f"the catalog copy did not start: {srv.start_error}",
                    hint="the catalog itself may be damaged: pgsurgeon scan PGDATA names what",
                )
            try:
                split = _each(
                    req.databases,
                    lambda db: _split(client, db, _pg_dump(client, srv, db, req.archives, cancelled), scratch),
                )
                dumps = {db.oid: one for db, one in zip(req.databases, split, strict=True)}
                globals_sql = _run(client, "pg_dumpall", [*srv.client_args(), "--globals-only"])
                if req.handoff is not None:
                    _print_raw(srv, req, req.handoff, cancelled)
            except SchemaUnavailable as exc:
                failure = exc.why
                if cancelled.is_set():
                    raise
                continue
        if settings:
            notes.append(f"the catalog's indexes were bypassed (ignore_system_indexes) after: {failure}")
        return dumps, globals_sql, notes
    raise SchemaUnavailable(
        f"pg_dump of the catalog copy failed: {failure}", hint="pgsurgeon scan PGDATA names the damage"
    )


def _print_raw(srv: PrivateServer, req: SchemaRequest, handoff: Handoff, cancelled: threading.Event) -> None:
    """Wait for the carving, then print its raw columns with the copy's server (still running)."""
    tables = handoff.take(cancelled)
    if tables is None:
        raise SchemaUnavailable("cancelled")
    if tables:
        print_again({db.name: srv.dsn(db.name) for db in req.databases}, tables, handoff)


PARALLEL = max(2, min(4, os.cpu_count() or 2))
"""pg_dump and pg_restore processes at once, one database each (they wait on the server and on their files)."""


def _each(databases: list[Database], work: Callable[[Database], T]) -> list[T]:
    """``work`` for every database, a few at once; in their order. The first failure is raised."""
    if len(databases) < 2:
        return [work(db) for db in databases]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="unload-schema") as pool:
        return list(pool.map(work, databases))


def _pg_dump(client: PgInstall, srv: PrivateServer, db: Database, archives: Path, cancelled: threading.Event) -> Path:
    _check(cancelled)
    archive = archives / f"{db.oid}.dump"
    # uncompressed (-Z 0): it is small, read at once by pg_restore, and compressing costs the carving CPU time; not
    # fsynced (--no-sync), as nothing else unload writes is
    _run(client, "pg_dump", [*srv.client_args(), "-Fc", "-Z", "0", "--no-sync", "-f", str(archive), "-d", db.name])
    return archive


def _split(client: PgInstall, db: Database, archive: Path, scratch: Path) -> DbDump:
    """The archive's three parts as SQL, and its objects counted per kind."""
    toc = _run(client, "pg_restore", ["-l", str(archive)])
    pre = _run(client, "pg_restore", ["-C", "--section=pre-data", "-f", "-", str(archive)])
    if db.name in BUILT_IN_DATABASES:
        # the fresh cluster has it: keep its settings, comment and grants, not its creation
        pre = re.sub(r"^CREATE DATABASE .*;$", "-- (the database exists in a fresh cluster)", pre, flags=re.M)
    data_toc = _run(client, "pg_restore", ["--section=data", "-l", str(archive)])
    wanted = [
        line for line in data_toc.splitlines() if line and not line.startswith(";") and _desc(line) != "TABLE DATA"
    ]
    # the sequences' values and the large objects (unload writes the tables' rows itself), straight to a file:
    # the large objects' data can be any size
    data = archive.with_suffix(".data.sql")
    data.write_text("", encoding="utf-8")
    if wanted:
        listing = scratch / f"{db.oid}.list"
        listing.write_text("\n".join(wanted) + "\n", encoding="utf-8")
        _run(client, "pg_restore", ["-L", str(listing), "-f", str(data), str(archive)])
    post = _run(client, "pg_restore", ["--section=post-data", "-f", "-", str(archive)])
    objects: dict[str, int] = {}
    for line in toc.splitlines():
        if line and not line.startswith(";"):
            kind = _desc(line)
            if kind not in _NOT_OBJECTS:
                objects[kind] = objects.get(kind, 0) + 1
    return DbDump(db, archive, pre, data, post, dict(sorted(objects.items())))


def _desc(line: str) -> str:
    """The description of a ``pg_restore -l`` line: ``3479; 0 0 SEQUENCE SET public s owner``."""
    rest = line.split(" ", 3)[3] if line.count(" ") >= 3 else ""
    for long in _LONG_DESCS:
        if rest.startswith(long + " ") or rest == long:
            return long
    return rest.split(" ", 1)[0]


_CREATE_ROLE = re.compile(r"^CREATE ROLE (.+);$", re.M)
_FK = re.compile(r"^(    ADD CONSTRAINT .* FOREIGN KEY .*?);$", re.M)


def _restorable_globals(text: str, tablespaces: dict[str, str]) -> str:
    """pg_dumpall's globals as a fresh cluster takes them under ON_ERROR_STOP: a role that exists there already (the
    bootstrap superuser) is not created again (pg_dumpall expects that CREATE ROLE to fail), and tablespaces point
    where the original's did, not into the copy."""

    def create_role(m: re.Match[str]) -> str:
        # a DO block, not \\gexec: the dump runs under psql's \\restrict, which allows no meta-command
        lit = "'" + m.group(1).replace("'", "''") + "'"
        return (
            "DO $pgsurgeon$BEGIN IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE "
            f"pg_catalog.quote_ident(rolname) = {lit}) THEN EXECUTE 'CREATE ROLE ' || {lit}; END IF; END$pgsurgeon$;"
        )

    text = _CREATE_ROLE.sub(create_role, text)
    for copied, original in tablespaces.items():
        text = text.replace("'" + copied.replace("'", "''") + "'", "'" + original.replace("'", "''") + "'")
    return text


def foreign_keys_not_valid(post: str) -> tuple[str, int]:
    """Post-data with every foreign key added NOT VALID (rows lost to the damage must not stop the restore; validate
    them once the missing rows are dealt with): the text and how many were changed."""
    count = 0

    def not_valid(m: re.Match[str]) -> str:
        nonlocal count
        stmt = m.group(1)
        if stmt.endswith(" NOT VALID") or " NOT ENFORCED" in stmt:
            return m.group(0)
        count += 1
        return f"{stmt} NOT VALID;"

    return _FK.sub(not_valid, post), count


def _run(install: PgInstall, program: str, args: list[str]) -> str:
    try:
        done = subprocess.run(
            [str(install.tool(program)), *args],
            capture_output=True,
            text=True,
            env=install.env(),
            timeout=TOOL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SchemaUnavailable(f"{program} failed: {exc}") from None
    if done.returncode != 0:
        raise SchemaUnavailable(f"{program} failed: {_last_line(done.stderr)}")
    return done.stdout


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1].strip() if lines else "(no message)"


def _check(cancelled: threading.Event) -> None:
    if cancelled.is_set():
        raise SchemaUnavailable("cancelled")
