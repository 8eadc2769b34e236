"""The unload job: select databases and tables, carve each table's files into a data file, write schema.sql per
database, restore.sql for all, and a report (report.json, report.txt)."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, loss
from pgsurgeon.backup import BackupSource, is_backup, manifest_lines
from pgsurgeon.catalog.ddl import live_columns
from pgsurgeon.catalog.files import CatalogUnreadable, Database, DbCatalog, FilesCatalog
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.datadir import SegmentIndex, postmaster_pid
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.unload.raw_types import Handoff, RawColumn, RawTable, raw_desc
from pgsurgeon.unload.report import write_reports
from pgsurgeon.unload.restore_sql import RestoreWriter, copy_line, dbdir, safe
from pgsurgeon.unload.schema import (
    BUILT_IN_DATABASES,
    SchemaDump,
    SchemaRequest,
    SchemaUnavailable,
)
from pgsurgeon.unload.schema_step import SchemaStep

if TYPE_CHECKING:
    from pgsurgeon.boundary import (
        CarveConfig,
        ClusterFacts,
        ClusterOptions,
        ColumnOut,
        LostItem,
        RelationFork,
        SegFile,
        UnloadSummary,
    )
    from pgsurgeon.rescue.walstatus import CommitRecords


@dataclass
class UnloadRequest:
    pgdata: Path
    out: Path
    databases: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    format: str = "copy"
    jobs: int = 1
    pg_version: int | None = None
    block_size: int | None = None
    live: bool = False
    deleted: bool = False
    """Also write, per table, the row versions committed DELETEs and UPDATEs removed (not yet vacuumed)."""
    deleted_by: int | None = None
    """With ``deleted``: only what this transaction removed."""
    catalog_from: Path | None = None
    """Read the catalog from this copy (an older backup) instead: for when the cluster's own catalog is damaged."""
    schema: str = "pg_dump"
    """``pg_dump``: the schema from the cluster's own pg_dump run on a started copy of the catalog (the files-built
    one when that cannot be done); ``files``: the files-built one only."""
    pg_bin: Path | None = None
    """The bin directory of the cluster's major version, for the schema step."""

    def __post_init__(self) -> None:
        if self.deleted_by is not None:
            self.deleted = True
            # txid_current() carries the epoch above the 32 bits tuple headers hold
            self.deleted_by &= 0xFFFFFFFF
        if self.schema not in ("pg_dump", "files"):
            raise PgSurgeonError(
                f"unknown schema source {self.schema!r}", hint="use --schema pg_dump or --schema files"
            )
        if self.format not in ("copy", "csv"):
            raise PgSurgeonError(f"unknown format {self.format!r}", hint="use --format copy or --format csv")
        if not 1 <= self.jobs <= 64:
            raise PgSurgeonError("--jobs must be between 1 and 64")


@dataclass
class TableResult:
    """What unload did with one table (the catalog's relation, read from the files)."""

    rel: Relation
    file: str | None
    apart_file: str | None
    rows: int = 0
    kept_apart: int = 0
    blocks: int = 0
    checksum_failures: int = 0
    torn_after_backup_start: int = 0
    """Pages of a backup that fail their checksum for having been written while it was copied: not damage."""
    lost: list[LostItem] = field(default_factory=list)
    pages_lost: list[dict[str, Any]] = field(default_factory=list)
    """The loss account of each page that lost rows (loss.PageLoss.to_json), as scan and salvage tell it."""
    uncertain: list[str] = field(default_factory=list)
    skipped: str | None = None
    deleted_file: str | None = None
    deleted_rows: int = 0
    deleted_apart: int = 0

    def to_json(self) -> dict[str, Any]:
        """The table in report.json: who it is, then what was done with it."""
        r = self.rel
        done = {k: v for k, v in asdict(self).items() if k != "rel"}
        return {"database": r.database, "schema": r.schema, "name": r.name, "oid": r.oid, "relkind": r.relkind, **done}


@dataclass
class UnloadResult:
    out: Path
    facts: ClusterFacts
    tables: list[TableResult]
    notes: list[str]
    seconds: float
    orphans: list[dict[str, Any]] = field(default_factory=list)
    damaged_catalogs: list[str] = field(default_factory=list)
    """Databases whose catalog could not name their tables."""
    schema: dict[str, Any] = field(default_factory=dict)
    """How the schema was taken (``method``: pg_dump or files), the objects per database and kind, and, when the
    files-built schema stands in for pg_dump's, why and what it leaves out (``missing``)."""

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)

    @property
    def kept_apart(self) -> int:
        return sum(t.kept_apart for t in self.tables)

    @property
    def incomplete(self) -> bool:
        """Something was kept apart, lost or not unloaded: the data files alone are not the whole story."""
        return (
            bool(self.damaged_catalogs)
            or bool(self.schema.get("fell_back") or self.schema.get("damaged_catalog"))
            or any(t.kept_apart or t.lost or t.checksum_failures or t.skipped for t in self.tables)
        )


def _matches(rel: Relation, patterns: list[str]) -> bool:
    return not patterns or any(p in (rel.name, f"{rel.schema}.{rel.name}") for p in patterns)


class _Job:
    def __init__(
        self, req: UnloadRequest, on_progress: Callable[[int, int], None] | None, backup: BackupSource | None = None
    ) -> None:
        self.req = req
        self.backup = backup
        self.on_progress = on_progress
        options: ClusterOptions = {}
        if req.pg_version:
            options["pg_version"] = req.pg_version
        if req.block_size:
            options["block_size"] = req.block_size
        try:
            self.files = FilesCatalog(req.catalog_from or req.pgdata, options)
        except CatalogUnreadable as exc:
            if "pg_control" in exc.message:
                exc.hint = "give --pg-version and --block-size (pg_control gives them), or --catalog-from a backup"
            raise
        self.notes: list[str] = list(self.files.facts.get("warnings", []))
        self.blocks_done = 0
        self.blocks_total = 0
        self._relfiles: list[RelationFork] | None = None
        self._segments_here = SegmentIndex()  # the cluster is stopped: its directories are listed once
        self.damaged: list[str] = []
        self.raw_tables: list[tuple[RawTable, DbCatalog, Relation, Path]] = []
        """Tables carved with raw columns (unload.raw_types), with what carves them again without."""
        self._commit_records: CommitRecords | None = None

    @property
    def commit_records(self) -> CommitRecords:
        """--deleted-by's commit record in pg_wal, read when pg_subtrans names no parent of some deleter."""
        if self._commit_records is None:
            from pgsurgeon.rescue.walstatus import CommitRecords

            self._commit_records = CommitRecords(self.req.pgdata)
        return self._commit_records

    def databases(self) -> list[Database]:
        dbs = [d for d in self.files.databases() if d.allow_connections]
        if self.req.databases:
            known = {d.name for d in dbs}
            for want in self.req.databases:
                if want not in known:
                    raise PgSurgeonError(
                        f"database {want!r} is not in {self.req.pgdata}",
                        hint=f"databases there: {', '.join(sorted(known))}",
                    )
            dbs = [d for d in dbs if d.name in self.req.databases]
        return dbs

    def carve(self, cat: DbCatalog, rel: Relation, target: Path, apart: Path, *, raw: bool = False) -> TableResult:
        """One table's rows into ``target`` (``apart``: those kept apart); with ``raw``, columns of types the row
        engine cannot print are written as their stored bytes, for the catalog copy's server to print."""
        t = TableResult(rel, None, None)
        loc = cat.locate(rel.oid)
        if loc is None:
            t.skipped = "no file (the relation has no storage, or its file number is unknown)"
            return t
        relpath, nblocks = loc
        segments = self._segments(relpath)
        if not segments:
            named = " (named by the catalog copy)" if self.req.catalog_from is not None else ""
            t.skipped = f"its file {relpath}{named} is not in {self.req.pgdata}: its rows are lost"
            return t
        if self.req.catalog_from is not None:
            nblocks = self.blocks_of(self.req.pgdata / relpath)
        cols = live_columns(cat, rel)
        columns: list[ColumnOut] = []
        raw_columns: dict[str, RawColumn] = {}
        for a in cols:
            desc = cat.column_type(a)
            if desc is None:
                t.uncertain.append(f"column {a.name}: its type cannot be printed offline; rows are kept apart")
            elif raw and (as_raw := raw_desc(cat, desc)) is not None:
                desc, raw_columns[a.name] = as_raw
            columns.append({"attnum": a.attnum, "name": a.name, "type": desc, "missing": cat.missing_text(a)})
        if raw_columns:
            names = [a.name for a in cols]
            self.raw_tables.append(
                (RawTable(cat.db.name, target, self.req.format == "csv", names, raw_columns), cat, rel, apart)
            )
        cfg: CarveConfig = {
            "blcksz": self.files.block_size,
            "relseg_size": int(self.files.facts["relseg_size"]),
            "nblocks": nblocks,
            "files": segments,
            "desc": cat.rel_desc(rel),
            "columns": columns,
            "format": "csv" if self.req.format == "csv" else "text",
            "server_version_num": self.files.server_version_num,
            "encoding": cat.db.encoding,
            "checksums": bool(self.files.facts["checksums"]),
            "backup_start_lsn": self.backup.start_lsn if self.backup is not None else None,
            "xact_dir": str(self.req.pgdata / "pg_xact"),
            "can_ask": False,
        }
        held = None
        if rel.toast_oid:
            tloc = cat.locate(rel.toast_oid)
            if tloc is not None:
                cfg["toast_files"] = self._segments(tloc[0])
                cfg["toast_nblocks"] = (
                    self.blocks_of(self.req.pgdata / tloc[0]) if self.req.catalog_from is not None else tloc[1]
                )
                held = tloc[0] if self.backup is not None and tloc[1] else None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        carver = core.RowCarver(cfg)
        if held is not None and self.backup is not None:
            # The TOAST table is read at random while the table streams: in memory for this table only.
            self.backup.hold(held)
        try:
            summary = self._run(carver, nblocks, str(target), str(apart))
        finally:
            if held is not None and self.backup is not None:
                self.backup.release(held)
        counts = summary.get("counts", {})
        t.file = str(target.relative_to(self.req.out))
        t.rows = int(counts.get("main_rows", 0))
        t.kept_apart = int(counts.get("apart_rows", 0))
        t.checksum_failures = int(counts.get("checksum_failures", 0))
        t.torn_after_backup_start = int(counts.get("torn_after_backup_start", 0))
        t.blocks = nblocks
        t.lost = list(summary.get("lost", []))
        if self.backup is None or self.backup.form == "plain":  # a tar backup's members are no files to open
            pages = page_losses(cat, rel, summary, self._segments, self.files.block_size)
            counted = {p.block for p in pages}
            zero = {int(p["block"]) for p in summary.get("pages", []) if p.get("all_zero")}
            t.lost = [x for x in t.lost if x["block"] not in counted] + [
                {"block": r.block, "lp": r.lp, "reason": p.row_reason(r, _page_state(r.block in zero))}
                for p in pages
                for r in p.gone
            ]
            t.pages_lost = [p.to_json() for p in pages if p.gone or p.dead]
        if apart.exists() and apart.stat().st_size > 0:
            t.apart_file = str(apart.relative_to(self.req.out))
        elif apart.exists():
            apart.unlink()
        if self.req.deleted:
            self.undelete(cfg, nblocks, target, t)
        return t

    def blocks_of(self, base: Path) -> int:
        """A relation's length in blocks from its segment files here."""
        segs = self._segments_here.of(base)
        if not segs:
            return 0
        last = segs[-1]
        per_segment = int(self.files.facts["relseg_size"])
        return int(last["segno"]) * per_segment + Path(last["path"]).stat().st_size // self.files.block_size

    def orphans(self, cat: DbCatalog) -> list[dict[str, Any]]:
        """Relation files of this database that no pg_class row (or relation map entry) names (a data directory's;
        a backup's files are checked against its manifest instead)."""
        if self.backup is not None:
            return []
        oids = list(cat.relations)
        known = {k[2] for k in self.files.handle.keys(cat.db.oid, oids) if k is not None and k[1] == cat.db.oid}
        out = []
        if self._relfiles is None:
            self._relfiles = core.discover_relations(self.req.pgdata)
        for rel in self._relfiles:
            if rel["database_oid"] != cat.db.oid or rel["fork"] != "main" or rel["temp"]:
                continue
            if rel["relfilenode"] in known:
                continue
            size = sum(int(seg["size"]) for seg in rel["segments"])
            out.append({"database": cat.db.name, "path": rel["path"], "blocks": size // self.files.block_size})
        return out

    def undelete(self, cfg: CarveConfig, nblocks: int, target: Path, t: TableResult) -> None:
        """The removed row versions of one table, into ``<stem>.deleted.<ext>``: each line starts with
        DELETED_COLUMNS, then the table's columns."""
        ext = target.suffix
        path = target.with_suffix(f".deleted{ext}")
        apart = target.with_suffix(f".deleted.kept_apart{ext}")
        path.touch()
        carver = core.RowCarver({**cfg, "deleted": True, "deleted_by": self.req.deleted_by})
        oracle = _WalOracle(self.commit_records) if self.req.deleted_by is not None else None
        counts = self._run(carver, nblocks, str(path), str(apart), count=False, oracle=oracle).get("counts", {})
        if self._commit_records is not None:
            self.notes.extend(n for n in self._commit_records.notes if n not in self.notes)
        t.deleted_file = str(path.relative_to(self.req.out))
        t.deleted_rows = int(counts.get("main_rows", 0))
        t.deleted_apart = int(counts.get("apart_rows", 0))
        if apart.exists() and apart.stat().st_size == 0:
            apart.unlink()

    def _segments(self, relpath: str) -> list[SegFile]:
        if self.backup is not None:
            return self.backup.segments(relpath)
        return self._segments_here.of(self.req.pgdata / relpath)

    def read_order(self, cat: DbCatalog, tables: list[Relation]) -> list[Relation]:
        """Tables in the order a compressed backup stores their files, so its stream moves forward (restore.sql then
        lists them in that order: it loads no foreign keys, so the order does not matter)."""
        backup = self.backup
        if backup is None:
            return tables

        def key(rel: Relation) -> int:
            loc = cat.locate(rel.oid)
            order = backup.read_order(loc[0]) if loc else None
            return -1 if order is None else order

        return sorted(tables, key=key)

    def _run(
        self, carver: core.RowCarver, nblocks: int, main: str, apart: str, *, count: bool = True, oracle: object = None
    ) -> UnloadSummary:
        result: list[UnloadSummary] = []
        errors: list[BaseException] = []

        def work() -> None:
            try:
                result.append(carver.run([(0, nblocks)], self.req.jobs, main=main, apart=apart, oracle=oracle))
            except BaseException as exc:  # handed to the caller
                errors.append(exc)

        before = self.blocks_done
        th = threading.Thread(target=work, name="unload-carve", daemon=True)
        th.start()
        try:
            while th.is_alive():
                th.join(0.25)
                if count:
                    self.blocks_done = before + carver.progress()[0]
                if self.on_progress is not None:
                    bs = self.files.block_size
                    self.on_progress(self.blocks_done * bs, self.blocks_total * bs)
        except KeyboardInterrupt:
            carver.cancel()
            th.join()
            raise
        if errors:
            raise PgSurgeonError(f"unloading failed: {errors[0]}")
        if count:
            self.blocks_done = before + nblocks
        return result[0]


class _WalOracle:
    """The row engine's oracle offline (crates/core/src/rows/engine.rs): no server, only the commit record of
    --deleted-by in pg_wal; the carve asks nothing else (can_ask and can_fetch_toast are off)."""

    def __init__(self, records: CommitRecords) -> None:
        self.records = records

    def subxacts(self, xid: int) -> list[int] | None:
        return self.records.subxacts(xid)

    def xid_status(self, xids: list[int]) -> dict[int, str]:
        return {}

    def multi_updaters(self, multis: list[int]) -> dict[int, int | None]:
        return {}

    def toast_chunks(self, valueids: list[int]) -> list[tuple[int, int, bytes]]:
        return []

    def commit_times(self, xids: list[int]) -> dict[int, int | None]:
        return {}


def run(
    req: UnloadRequest,
    on_progress: Callable[[int, int], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> UnloadResult:
    """Unload a data directory, or a base backup read in place (directory or tar, compressed or not);
    ``on_progress(bytes_done, bytes_total)`` is called a few times a second while tables are read. A backup is
    first checked against its manifest, and what that found is handed to ``say`` before the unload starts."""
    if not req.pgdata.is_dir():
        raise PgSurgeonError(f"{req.pgdata} is not a directory", hint="pass the cluster's data directory or a backup")
    with exclusive(req.pgdata):
        return _run_source(req, on_progress, say or (lambda _line: None))


def _run_source(
    req: UnloadRequest, on_progress: Callable[[int, int], None] | None, say: Callable[[str], None]
) -> UnloadResult:
    if req.catalog_from is not None and is_backup(req.catalog_from):
        # the catalog from an older backup, read in place like the data
        with BackupSource(req.catalog_from) as older:
            return _run_source(replace(req, catalog_from=older.root), on_progress, say)
    if is_backup(req.pgdata):
        with BackupSource(req.pgdata) as backup:
            # the manifest's verdict comes first; a wrong one, or a tree it cannot walk (a link loop), does not stop
            # the unload: it reads only the files it needs, which may be fine
            try:
                lines = manifest_lines(backup.verify())
            except PgSurgeonError as exc:
                lines = [f"the backup was not checked against its manifest: {exc.message}"]
            for line in lines:
                say(line)
            return _run(replace(req, pgdata=backup.root), on_progress, backup, lines)
    return _run(req, on_progress, None)


def _run(
    req: UnloadRequest,
    on_progress: Callable[[int, int], None] | None,
    backup: BackupSource | None,
    manifest_notes: list[str] | None = None,
) -> UnloadResult:
    started = time.monotonic()
    if backup is None and (not (req.pgdata / "global").is_dir() or not (req.pgdata / "base").is_dir()):
        raise PgSurgeonError(
            f"{req.pgdata} is not a data directory (no global/ and base/)", hint="pass the cluster's data directory"
        )
    pid = postmaster_pid(req.pgdata)
    if pid is not None and not req.live:
        raise PgSurgeonError(
            f"the server is running on {req.pgdata} (postmaster pid {pid}): pages change while they are read",
            hint="stop the server, unload a base backup, or pass --live to read anyway (recent changes may be missed)",
        )
    if req.out.exists() and (not req.out.is_dir() or any(req.out.iterdir())):
        raise PgSurgeonError(f"{req.out} exists and is not empty", hint="choose a new directory for --out")
    return _unload(req, on_progress, backup, pid, started, manifest_notes or [])


def _unload(
    req: UnloadRequest,
    on_progress: Callable[[int, int], None] | None,
    backup: BackupSource | None,
    pid: int | None,
    started: float,
    manifest_notes: list[str],
) -> UnloadResult:
    job = _Job(req, on_progress, backup)
    job.notes.extend(manifest_notes)
    if pid is not None:
        job.notes.append(
            "read while the server runs (--live): rows changed since the last checkpoint may be missing or old, "
            "and transactions in progress are not judged"
        )
    with_pg_dump = req.schema == "pg_dump" and not req.tables
    plans: list[tuple[DbCatalog, list[Relation]]] = []
    for d in job.databases():
        # pg_class first: a database left out (template1, one without the tables asked for) is not read further
        # (its columns, types and functions are ~2/3 of the catalog read of an empty cluster)
        cat = job.files.relations_of(d)
        tables = [r for r in cat.user_tables() if _matches(r, req.tables)]
        if not any(r.relkind == "r" for r in cat.relations.values()):
            job.damaged.append(d.name)
            job.notes.append(
                f"{d.name}: pg_class yields no tables: the catalog is damaged (try --catalog-from an older backup)"
            )
        if not tables and (req.tables or (d.name in BUILT_IN_DATABASES and not with_pg_dump)):
            job.notes.extend(f"{d.name}: {x}" for x in cat.doubts[:5])
            continue
        cat = job.files.database(d)
        job.notes.extend(f"{d.name}: {x}" for x in cat.doubts[:5])
        plans.append((cat, tables))
    if req.tables and not plans:
        raise PgSurgeonError(f"no table matches {', '.join(req.tables)}", hint="name tables as schema.table")
    for cat, tables in plans:
        for r in tables:
            skipped = r.relkind == "p" or (r.relkind == "m" and with_pg_dump)
            loc = None if skipped else cat.locate(r.oid)
            job.blocks_total += loc[1] if loc else 0
    req.out.mkdir(parents=True, exist_ok=True)
    step: SchemaStep | None = None
    outcome: SchemaDump | SchemaUnavailable | None = None
    handoff = Handoff()
    order = backup.read_order if backup is not None and backup.form != "plain" else None
    if with_pg_dump:
        dbs = [cat.db for cat, _ in plans]
        today = req.pgdata if req.catalog_from is not None else None
        schema_req = SchemaRequest(
            job.files, dbs, req.out / "pg_dump", req.pg_bin, order, data_root=today,
            # the copy's server waits for the carving only when a column needs it to print its values
            handoff=handoff if _any_raw(plans) else None,
            backup_start_lsn=backup.start_lsn if backup is not None else None,
        )  # fmt: skip
        step = SchemaStep(schema_req)
        step.start()
    try:
        if step is not None and order is not None:
            step.req.copied.wait()  # one pass over the compressed archive at a time
        results, copies = _carve_all(job, plans, with_pg_dump and outcome is None, raw=step is not None)
        if step is not None:
            handoff.give([t for t, *_ in job.raw_tables])
            outcome = step.outcome()
    except BaseException:
        if step is not None:
            step.cancel()  # its server is stopped and its scratch directory removed before this returns
        raise
    if step is not None:
        _carve_raw_again(job, results, handoff)
    if step is not None and isinstance(outcome, SchemaUnavailable):
        # the materialized views were left to pg_dump's REFRESH: their rows are needed after all
        results += _carve_all(job, plans, False, only_kind="m")[0]
    incomplete = {t.rel.database for t in results if t.kept_apart or t.lost or t.checksum_failures or t.skipped}
    writer = RestoreWriter(req.out, req.pgdata, str(job.files.facts["major"]), job.notes)
    schema = writer.write(plans, copies, incomplete, outcome)
    torn = sum(t.torn_after_backup_start for t in results)
    if torn:
        job.notes.append(
            f"{torn} page(s) fail their checksum for having been written while the backup copied them (LSN after its"
            " start): torn in the copy and rewritten by WAL replay, not damage; their rows are kept apart as copied"
        )
    if backup is not None and backup.restarts:
        job.notes.append(f"the compressed backup was read {backup.restarts} more time(s): files read out of order")
    orphans = [o for cat, _ in plans for o in job.orphans(cat)]
    seconds = round(time.monotonic() - started, 3)
    result = UnloadResult(req.out, job.files.facts, results, job.notes, seconds, orphans, job.damaged, schema)
    write_reports(result)
    return result


def _any_raw(plans: list[tuple[DbCatalog, list[Relation]]]) -> bool:
    """Whether a table to carve has a column of a type the row engine cannot print (unload.raw_types)."""
    for cat, tables in plans:
        for rel in tables:
            for a in live_columns(cat, rel):
                desc = cat.column_type(a)
                if desc is not None and raw_desc(cat, desc) is not None:
                    return True
    return False


def _carve_raw_again(job: _Job, results: list[TableResult], handoff: Handoff) -> None:
    """Tables whose raw columns the copy's server did not print (it did not start, or the type's output failed):
    carved again without raw columns, so their rows with such values are kept apart, as the row engine alone does."""
    for table, cat, rel, apart in job.raw_tables:
        if table.path in handoff.decoded:
            continue
        why = handoff.failed.get(table.path, "the catalog copy's server was not there to print them")
        for path in (table.path, apart):
            path.unlink(missing_ok=True)
        again = job.carve(cat, rel, table.path, apart)
        again.uncertain.append(f"columns {', '.join(table.raw)}: not printed by their type's output function: {why}")
        results[:] = [again if r.rel.oid == rel.oid and r.rel.database == rel.database else r for r in results]


def _carve_all(
    job: _Job,
    plans: list[tuple[DbCatalog, list[Relation]]],
    with_pg_dump: bool,
    only_kind: str | None = None,
    raw: bool = False,
) -> tuple[list[TableResult], dict[int, list[str]]]:
    """Every table's rows to its data file; the ``\\copy`` lines that load them, per database."""
    req = job.req
    results: list[TableResult] = []
    copies: dict[int, list[str]] = {}
    ext = "csv" if req.format == "csv" else "copy"
    for cat, tables in plans:
        directory = dbdir(req.out, cat.db)
        directory.mkdir(exist_ok=only_kind is not None)
        lines = copies.setdefault(cat.db.oid, [])
        for rel in job.read_order(cat, tables):
            if only_kind is not None and rel.relkind != only_kind:
                continue
            if rel.relkind == "p" or (rel.relkind == "m" and with_pg_dump):
                continue  # no rows of its own; a materialized view is refreshed by pg_dump's post-data
            stem = f"{rel.oid}_{safe(rel.schema)}.{safe(rel.name)}"
            res = job.carve(
                cat, rel, directory / "data" / f"{stem}.{ext}", directory / "data" / f"{stem}.kept_apart.{ext}", raw=raw
            )
            results.append(res)
            if rel.relkind == "m":
                res.skipped = res.skipped or "materialized view: its data is unloaded, its definition is not"
                continue
            if res.file:
                cols = [a.name for a in live_columns(cat, rel)]
                lines.append(copy_line(rel, cols, res.file, req.format))
    return results, copies


@contextmanager
def exclusive(pgdata: Path) -> Iterator[None]:
    """One unload of a data directory at a time (its schema step starts a server on a copy of it): a lock on the
    directory itself, opened read-only, so nothing is written there or left behind."""
    fd = os.open(pgdata, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PgSurgeonError(
                f"another pgsurgeon unload of {pgdata} is running", hint="wait for it to finish, or stop it"
            ) from None
        yield
    finally:
        os.close(fd)


def _page_state(zero: bool) -> str:
    return "all zeroes (it reads as empty, with no error)" if zero else "without its line pointer array"


def page_losses(
    cat: DbCatalog, rel: Relation, summary: UnloadSummary, segments: loss.Segments, block_size: int
) -> list[loss.PageLoss]:
    """The loss account of the table's all-zero pages and of pages whose line pointer array is destroyed (the
    rows carved from those pages are not lost)."""
    pages = summary.get("pages", [])
    blocks = sorted(int(p["block"]) for p in pages if p.get("all_zero") or p.get("lp_array_destroyed"))
    recovered = {(int(p["block"]), int(lp)) for p in pages for lp in p.get("claimed_lps", [])}
    return loss.from_files(cat, rel, blocks, segments, block_size, recovered)
