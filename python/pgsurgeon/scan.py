"""Running an offline scan: options from pg_control and the catalog, the Rust scanner on a worker
thread, progress while it runs. The command module renders what this returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pgsurgeon import core, db
from pgsurgeon.backup import BackupSource, is_backup, manifest_findings
from pgsurgeon.catalog import names as catalog_names
from pgsurgeon.catalog.names import RelKey, keys_named
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.storage import storage_findings
from pgsurgeon.datadir import postmaster_pid
from pgsurgeon.errors import PgSurgeonError, from_os_error
from pgsurgeon.findings import Finding, from_cluster, from_file, make
from pgsurgeon.loss import reword_zero_pages

if TYPE_CHECKING:
    from pgsurgeon._pgsurgeon import FilesCatalog as FilesCatalogHandle
    from pgsurgeon.boundary import (
        CheckedChunk,
        ControlFile,
        Horizons,
        RelationHealth,
        ScannerConfig,
        ScanOptions,
        ZeroPagesNote,
    )


def parse_lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


@dataclass
class ScanRequest:
    pgdata: Path
    files: list[Path] = field(default_factory=list)
    checksums: str = "auto"
    dsn: str | None = None
    databases: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    live: bool = False
    jobs: int | None = None
    metadata: list[Any] | None = None
    """The relations' descriptions (:func:`scan_metas`), when the caller has read them already on its own
    connection: the scan then does not connect for them, and names no relation."""
    next_xid: Callable[[], int] | None = None
    """The server's next XID on the caller's connection (a live scan otherwise connects for it)."""
    health: bool = False
    """Count the storage-health figures too (:mod:`pgsurgeon.health`), in the same pass over the pages."""
    checks: bool = True
    """Check the pages for damage; off (with ``health``), only the figures are counted."""
    on_checked: Callable[[list[CheckedChunk]], None] | None = None
    """Called from the calling thread with the tables' chunks checked since the last call, while the scan goes on
    (diagnose starts the server's checks of those blocks then)."""


@dataclass
class ScanOutcome:
    pgdata: Path
    control: ControlFile
    summary: dict[str, Any]
    findings: list[Finding]
    names: dict[RelKey, Relation]
    warnings: list[str] = field(default_factory=list)
    """What makes the verdict less certain (said once, not as findings)."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    """Runs of blocks a live scan did not check (written after its redo point): relfilenode, fork, first, last."""
    backup: dict[str, Any] | None = None
    """Scanning a base backup: its form, backup_label and the manifest check."""
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    """(database, index or TOAST table) -> the table it belongs to, qualified names: next steps act on the table."""
    health: list[RelationHealth] = field(default_factory=list)
    """With ``ScanRequest.health``: each main fork's health figures."""
    zero_inside: list[ZeroPagesNote] = field(default_factory=list)
    """Tables with all-zero pages before in-use pages that nothing names rows on (no finding: see the core)."""

    def zero_inside_named(self) -> list[tuple[str, ZeroPagesNote]]:
        """Each of :attr:`zero_inside` with the table's qualified name (its path where the catalog gave none)."""
        out = []
        for z in self.zero_inside:
            rel = self.names.get((z["tablespace_oid"], z["database_oid"], z["relfilenode"]))
            out.append((rel.qualified if rel is not None else z["path"], z))
        return out


def _control_options(control: ControlFile, checksums: str, live: bool) -> ScanOptions:
    enabled = int(control["data_checksum_version"]) > 0 if checksums == "auto" else checksums == "on"
    epoch_xid = str(control["next_xid"]).split(":")
    horizons: Horizons = {
        "next_xid": int(epoch_xid[-1]),
        "oldest_xid": int(control["oldest_xid"]),
        "next_multi": int(control["next_multi"]),
        "oldest_multi": int(control["oldest_multi"]),
    }
    clean = control["state"] == "shut down" and control.get("crc_ok", False)
    return {
        "checksums": enabled,
        "blcksz": int(control["blcksz"]),
        "relseg_size": int(control["relseg_size"]),
        "horizons": horizons if control.get("crc_ok", False) else None,
        "clean_shutdown_lsn": parse_lsn(control["checkpoint"]) if clean else None,
        "live_redo_lsn": parse_lsn(control["redo"]) if live else None,
        "relations": [],
        "chunk_blocks": 256,
        "toast_max_chunk_size": int(control.get("toast_max_chunk_size") or 1996),
    }


LIVE_ATTEMPTS = 3
_XID_FUTURE = frozenset({"tuple_header.xmin_future", "tuple_header.xmax_future"})


def _server_next_xid(dsn: str) -> int:
    """The server's next transaction ID (its 32-bit part)."""
    with db.connect(dsn) as conn:
        row = conn.execute(db.load_sql("server_next_xid")).fetchone()
    return int(row[0]) % (1 << 32) if row else 0


def _scan_once(
    req: ScanRequest,
    config: ScannerConfig,
    on_progress: Callable[[int, int, int], None] | None,
    catalog: FilesCatalogHandle | None = None,
) -> dict[str, Any]:
    """One pass of the core's scanner over what ``config`` selects (``catalog``: the one its metadata came from)."""
    try:
        scanner = core.Scanner(str(req.pgdata), config, catalog)
    except PermissionError as exc:
        raise _not_allowed(exc) from None
    except OSError as exc:
        raise from_os_error(exc) or _cannot_start(req, exc) from None
    except ValueError as exc:
        raise _cannot_start(req, exc) from None
    total = scanner.total_bytes
    result: dict[str, Any] = {}
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.update(scanner.run())
        except BaseException as exc:  # handed to the calling thread
            failure.append(exc)

    on_checked = req.on_checked
    if on_checked is not None:
        scanner.want_checked()
    worker = threading.Thread(target=work, name="pgsurgeon-scan", daemon=True)
    worker.start()
    shown = time.monotonic()
    try:
        while worker.is_alive():
            # a caller waiting for checked chunks is told within 20 ms (~1 % of the bench cluster's scan)
            worker.join(0.2 if on_checked is None else 0.02)
            if on_checked is not None and (chunks := scanner.checked_chunks()):
                on_checked(chunks)
            # told as before, every 0.2 s (the join's wait without a caller polling for chunks; once at least)
            if on_progress is not None and (on_checked is None or time.monotonic() - shown >= 0.2):
                shown = time.monotonic()
                done, pages = scanner.progress()
                on_progress(done, total, pages)
    except KeyboardInterrupt:
        scanner.cancel()
        worker.join()
        raise
    if on_checked is not None and not failure and (chunks := scanner.checked_chunks()):
        on_checked(chunks)  # the last ones (or a scan shorter than the polling interval)
    if not failure and not config["databases"] and not config["relfilenodes"] and not config["files"]:
        result["main_forks"] = scanner.main_forks()  # the whole directory's: the catalog is checked against them
    if failure:
        if isinstance(failure[0], PermissionError):
            raise _not_allowed(failure[0])
        raise PgSurgeonError(f"scan failed: {failure[0]}")
    return result


def _cannot_start(req: ScanRequest, exc: Exception) -> PgSurgeonError:
    reason = (str(exc).strip().splitlines() or ["unknown error"])[0]
    return PgSurgeonError(
        f"cannot scan {req.pgdata}: {reason}",
        hint="the directory is not a whole data directory or base backup: name the relation files to scan them alone",
    )


def _files_catalog(
    pgdata: Path, in_backup: bool = False, descs: bool = True
) -> tuple[dict[RelKey, Relation], list[Any], dict[str, int], str | None, FilesCatalogHandle | None]:
    """Names and relation descriptions from the catalog in the data files, when no server is given, and the
    catalog's handle (the scanner describes the tables from it); a warning instead when the catalog cannot be read
    there (the scan then goes on without names)."""
    if not in_backup and not (pgdata / "global" / "pg_filenode.map").is_file():
        return {}, [], {}, None, None  # not a whole data directory (relation files copied out): nothing names them
    from pgsurgeon.catalog.files import (
        CatalogUnreadable,
        FilesCatalog,
        relation_index,
    )  # only without a server: not on diagnose's path

    try:
        fc = FilesCatalog(pgdata)
        names, metas = relation_index(fc, descs)
        dbs = {d.name: d.oid for d in fc.databases()}
    except CatalogUnreadable as exc:
        return {}, [], {}, f"relations are not named: {exc.message} ({exc.hint})", None
    except (ValueError, OSError) as exc:
        return {}, [], {}, f"relations are not named: the catalog could not be read from the files ({exc})", None
    return names, metas, dbs, None, fc.handle


def _resolve_filters(
    req: ScanRequest, names: dict[RelKey, Relation], databases_by_name: dict[str, int], metas: list[Any]
) -> tuple[list[int], list[int]]:
    db_oids: list[int] = []
    for d in req.databases:
        if d.isdigit():
            db_oids.append(int(d))
        elif d in databases_by_name:
            db_oids.append(databases_by_name[d])
        else:
            raise PgSurgeonError(f"unknown database {d!r}", hint="give its OID, or --dsn so names can be looked up")
    nodes: list[int] = []
    for r in req.relations:
        if r.isdigit():
            nodes.append(int(r))
            continue
        hits = keys_named(names, r)
        if not hits:
            raise PgSurgeonError(
                f"unknown relation {r!r}", hint="give its relfilenode, or --dsn so names can be looked up"
            )
        nodes.extend(k[2] for k in _with_relatives(hits, metas))
    return db_oids, nodes


def _with_relatives(keys: list[RelKey], metas: list[Any]) -> list[RelKey]:
    """A table's files with those of its TOAST table and of every index of either, as pg_amcheck -t checks them:
    damage there shows up when the table is read."""
    chosen = set(keys)
    for _ in range(2):  # the table's TOAST table, then the TOAST table's index
        for key, meta in metas:
            heap, toast = meta.get("heap"), meta.get("toast")
            if heap is not None and tuple(heap) in chosen:
                chosen.add(tuple(key))
            if toast is not None and tuple(key) in chosen:
                chosen.add(tuple(toast))
    return sorted(chosen)


def run_scan(req: ScanRequest, on_progress: Callable[[int, int, int], None] | None = None) -> ScanOutcome:
    """Scan and return the outcome; ``on_progress(bytes_done, bytes_total, pages_done)`` is called
    a few times a second while the scan runs. A base backup (directory or tar) is read in place, its files checked
    against backup_manifest."""
    if not req.files and is_backup(req.pgdata):
        with BackupSource(req.pgdata) as backup:
            return _run_scan(replace(req, pgdata=backup.root), on_progress, backup)
    return _run_scan(req, on_progress, None)


def _run_scan(
    req: ScanRequest, on_progress: Callable[[int, int, int], None] | None, backup: BackupSource | None
) -> ScanOutcome:
    if backup is None and not (req.pgdata / "global" / "pg_control").is_file():
        raise PgSurgeonError(
            f"{req.pgdata} is not a data directory (no global/pg_control)",
            hint="pass a data directory, a base backup, or relation files inside one",
        )
    try:
        control = core.read_control(req.pgdata)
    except core.FormatError as exc:
        if backup is None and not req.files and not req.relations:
            return _control_unreadable(req)
        reason = str(exc).removeprefix("pg_control: ")
        raise PgSurgeonError(
            f"{req.pgdata / 'global' / 'pg_control'} is unreadable: {reason}",
            hint="use --checksums on|off to scan anyway",
        ) from None
    pid = postmaster_pid(req.pgdata)
    if pid is not None and not req.live:
        raise PgSurgeonError(
            f"the server is running on {req.pgdata} (postmaster pid {pid}): pages change while they are read",
            hint="stop the server, scan a base backup, or pass --live to skip pages written after the last checkpoint",
        )
    options = _control_options(control, req.checksums, req.live and pid is not None)
    warnings: list[str] = []
    foreign = _foreign_control(req.pgdata, control)
    if foreign is not None:
        # Its XID horizons and checkpoint belong to another cluster: judged against them, healthy tuples look
        # like damage (xmin "in the future"). Block size and checksums still come from it, as nothing else says.
        warnings.append(foreign)
        options["horizons"] = None
        options["clean_shutdown_lsn"] = None
    options["jobs"] = req.jobs
    if req.health:
        options["health_major"] = int(control["major_version"])
    options["checks"] = req.checks
    # tuples against pg_xact and pg_multixact: only for a whole stopped cluster of this pg_control (a backup's status
    # files are completed by WAL replay, a running server's change under the scan)
    options["bookkeeping"] = backup is None and foreign is None and not req.live and not req.files and not req.relations
    if backup is not None:
        options["backup_start_lsn"] = backup.start_lsn
    names: dict[RelKey, Relation] = {}
    databases_by_name: dict[str, int] = {}
    catalog: FilesCatalogHandle | None = None
    if req.metadata is not None:
        options["relations"] = req.metadata
    elif req.dsn:
        names, metas, databases_by_name = catalog_names.scan_catalog(req.dsn, req.databases)
        options["relations"] = metas
    else:
        names, metas, databases_by_name, why, catalog = _files_catalog(req.pgdata, backup is not None, req.checks)
        options["relations"] = metas
        if why:
            warnings.append(why)
    db_oids, nodes = _resolve_filters(req, names, databases_by_name, options.get("relations") or [])
    config: ScannerConfig = {
        "options": options,
        "files": [str(f) for f in req.files],
        "databases": db_oids,
        "relfilenodes": nodes,
    }
    horizons = options.get("horizons")
    live = req.live and pid is not None and req.dsn is not None and horizons is not None
    if req.live and pid is not None and req.dsn is None:
        warnings.append(
            "without a connection, pages never WAL-logged (unlogged tables, a table filled in the transaction that "
            "created it under wal_level minimal) are judged against the last checkpoint's next XID: rows written "
            "since may be reported as from the future (connect with -d/-h to judge them against the server's)"
        )
    whole = not req.files and not req.relations
    # pg_waldump runs beside the scan (~30 ms of a process start and its own binary's probe, on the critical path
    # of every scan of a stopped cluster otherwise); its answer is used only when the checkpoint itself reads
    wal = _WalRead(req.pgdata, control) if backup is None and pid is None and whole else None
    started = time.monotonic()
    next_xid = req.next_xid or (lambda: _server_next_xid(str(req.dsn)))
    for _attempt in range(LIVE_ATTEMPTS):
        if live:
            # pg_control's next XID is its last checkpoint's: pages never WAL-logged (unlogged tables, a table
            # created and filled in one transaction under wal_level minimal) keep LSN 0 however new their rows,
            # so the redo point does not skip them. They are judged against the server's own next XID instead.
            assert horizons is not None
            horizons["next_xid"] = next_xid()
        result = _scan_once(req, config, on_progress, catalog)
        future = [f for f in result["findings"] if f["code"] in _XID_FUTURE]
        # An XID assigned while the files were read is not from the future: scan again against the new horizon.
        if not (live and future and horizons is not None and next_xid() != horizons["next_xid"]):
            break
    summary = result["summary"]
    summary["seconds"] = round(time.monotonic() - started, 3)
    findings = [
        from_file(f, names.get((f["tablespace_oid"], f["database_oid"], f["relfilenode"]))) for f in result["findings"]
    ]
    if backup is None or backup.form == "plain":  # a tar backup's members are no files the index reader can open
        reword_zero_pages(findings, req.pgdata)
    if req.checks and not req.files and not req.relations and (backup is None or backup.form == "plain"):
        # the whole cluster: its bookkeeping too (a backup's WAL comes apart from it, so not pg_wal there). Not for
        # the figures alone (health without --check): reading the WAL with pg_waldump took a tenth of that run
        extra = [from_cluster(f) for f in core.cluster_checks(req.pgdata, wal=backup is None)]
        if backup is None and pid is None:
            _unneeded_status_files(extra, findings)
        unlisted = backup is None or not backup.info["manifest"]
        if pid is None and unlisted and not any(f["code"] == "file.relmap" for f in extra):
            # a garbled map misplaces the mapped catalogs' files. A base backup with a manifest is judged by it
            # instead: its files and its catalog are copied at different moments of a running server (a TRUNCATE
            # while it copies leaves a catalog row naming a file created after the directory was listed), replay
            # makes them agree, and the manifest says which files pg_basebackup really sent
            extra += storage_findings(req.pgdata, names, result.get("main_forks"))
        if wal is not None and not any(f["code"] in _CHECKPOINT_WAL for f in extra):
            # the records before the checkpoint, once the checkpoint itself reads (else that finding says it all)
            extra += wal.findings(warnings)
        findings.extend(extra)
        summary["findings"] += len(extra)
        summary["errors"] += sum(1 for f in extra if f["severity"] == "error")
        summary["warnings"] += sum(1 for f in extra if f["severity"] != "error")
    backup_doc = None
    if backup is not None:
        manifest = backup.verify()
        extra = manifest_findings(manifest)
        findings.extend(extra)
        summary["findings"] += len(extra)
        summary["errors"] += sum(1 for f in extra if f["severity"] == "error")
        summary["warnings"] += sum(1 for f in extra if f["severity"] != "error")
        if not manifest["present"]:
            warnings.append("the backup has no backup_manifest: its files are not checked against one")
        backup_doc = {
            "form": backup.form,
            "label": backup.info.get("label"),
            "manifest": {k: v for k, v in manifest.items() if k != "problems"},
            "after_backup_start": result.get("after_backup_start", []),
            "extra_passes": backup.restarts,
            "truncated_while_copied": _excuse_truncations(
                backup, int(control["major_version"]), findings, options.get("relations") or [], summary, warnings
            ),
        }
    return ScanOutcome(
        req.pgdata,
        control,
        summary,
        findings,
        names,
        warnings,
        result.get("skipped", []),
        backup_doc,
        _owners(names, options.get("relations") or []),
        result.get("health", []),
        result.get("zero_inside", []),
    )


def _excuse_truncations(
    backup: BackupSource,
    major: int,
    findings: list[Finding],
    metas: list[Any],
    summary: dict[str, Any],
    warnings: list[str],
) -> list[Finding]:
    """Findings a VACUUM truncation during the copy explains (the backup's WAL holds it), out of the findings and
    their counts: information, not damage."""
    from pgsurgeon.backup.truncation import excuse

    excused = excuse(backup, major, findings, metas)
    if excused.note:
        warnings.append(excused.note)
    summary["errors"] -= excused.errors
    summary["warnings"] -= len(excused.findings) - excused.errors
    summary["findings"] -= len(excused.findings)
    summary["truncated_while_copied"] = len(excused.findings)
    return excused.findings


_CHECKPOINT_WAL = ("file.wal_missing", "file.wal_short", "file.wal_page_header", "file.wal_checkpoint_record")
"""The checkpoint's own WAL findings: with one of them, reading the records before it says nothing more."""


def _unneeded_status_files(cluster: list[Finding], rows: list[Finding]) -> None:
    """A status file missing between the horizons that neither the startup process reads nor any row needs (the
    scan of a stopped cluster counts the rows that do: tuple_header.status_lost) is no damage yet: pg_resetwal's
    documented -x and -m values leave such a stretch of ids never handed out. Said as a warning."""
    if any(f["code"] == "tuple_header.status_lost" for f in rows):
        return
    for f in cluster:
        # the startup process's pages are named so in the message (clog.c TrimCLOG, multixact.c TrimMultiXact)
        if f["code"] in ("file.xact_missing", "file.multixact_missing") and "at startup" not in f["message"]:
            f["severity"] = "warning"
            f["message"] += "; no row of any table depends on them (as after pg_resetwal moved the next id past them)"


class _WalRead:
    """The WAL records from the oldest segment left up to the checkpoint, read with the cluster's pg_waldump in a
    thread started now: a record that does not read there stops any restore or standby replaying these segments."""

    def __init__(self, pgdata: Path, control: ControlFile) -> None:
        self.pgdata, self.control = pgdata, control
        self.got: object = None
        self.failure: BaseException | None = None
        self.thread: threading.Thread | None = None
        if control.get("crc_ok") and (pgdata / "pg_wal").is_dir():
            self.thread = threading.Thread(target=self._read, name="pgsurgeon-waldump", daemon=True)
            self.thread.start()

    def _read(self) -> None:
        from pgsurgeon.rescue.walstatus import first_break

        c = self.control
        try:
            self.got = first_break(
                self.pgdata,
                int(c["major_version"]),
                int(c["this_timeline_id"]),
                int(c["xlog_seg_size"]),
                str(c["checkpoint"]),
            )
        except BaseException as exc:  # handed to the scan's thread
            self.failure = exc

    def findings(self, warnings: list[str]) -> list[Finding]:
        if self.thread is None:
            return []
        self.thread.join()
        if self.failure is not None:
            raise self.failure
        return _wal_records(self.got, self.control, warnings)


def _wal_records(got: object, control: ControlFile, warnings: list[str]) -> list[Finding]:
    """What pg_waldump's first break (``got``, of :func:`pgsurgeon.rescue.walstatus.first_break`) means."""
    from pgsurgeon.rescue.walstatus import WalBreak

    if isinstance(got, str):
        warnings.append(got)
    if not isinstance(got, WalBreak):
        return []
    message = (
        f"pg_wal/{got.segment}: the WAL record at {got.lsn}, before the checkpoint at {control['checkpoint']}, does "
        f"not read ({got.message.removeprefix('pg_waldump: error: ')}): the server starts, but a restore or standby "
        "replaying this WAL stops there"
    )
    return [make("file.wal_record", message, f"pg_wal/{got.segment}", None)]


def _control_unreadable(req: ScanRequest) -> ScanOutcome:
    """The whole cluster scanned with a pg_control that cannot be decoded: that is the finding (block size,
    checksums and horizons all come from it, so no relation is judged without it)."""
    findings = [from_cluster(f) for f in core.cluster_checks(req.pgdata, wal=True)]
    errors = sum(1 for f in findings if f["severity"] == "error")
    summary = {"files": 0, "blocks": 0, "bytes": 0, "seconds": 0.0, "findings": len(findings), "errors": errors,
               "warnings": len(findings) - errors}  # fmt: skip
    why = (
        "relations were not scanned: pg_control gives their block size, checksums and XID horizons "
        f"(pgsurgeon control --plan {req.pgdata} derives its values from the other files)"
    )
    return ScanOutcome(req.pgdata, cast("ControlFile", {}), summary, findings, {}, [why])


def _owners(names: dict[RelKey, Relation], metas: list[Any]) -> dict[tuple[str, str], str]:
    """Each btree index's and TOAST table's owning table, from the relation descriptions the scan was given."""
    out: dict[tuple[str, str], str] = {}
    for key, meta in metas:
        rel = names.get(tuple(key))
        if rel is None:
            continue
        heap = names.get(tuple(meta["heap"])) if meta.get("heap") else None
        if heap is not None:
            out[(rel.database, rel.qualified)] = heap.qualified
        toast = names.get(tuple(meta["toast"])) if meta.get("toast") else None
        if toast is not None:
            out[(toast.database, toast.qualified)] = rel.qualified
    return out


def _not_allowed(exc: PermissionError) -> PgSurgeonError:
    """A file we may not read says nothing about its data: the scan could not run (never ``file.unreadable``)."""
    path = str(exc).rpartition(": ")[0] or "a relation file"
    return PgSurgeonError(
        f"cannot read {path}: permission denied",
        hint="run as the owner of the files (the cluster's OS user) or root, or fix their permissions",
    )


def _foreign_control(pgdata: Path, control: ControlFile) -> str | None:
    """A warning when pg_control is of another major version than the data directory (PG_VERSION)."""
    try:
        major = int((pgdata / "PG_VERSION").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    theirs = control.get("major_version")
    if theirs is None or int(theirs) == major:
        return None
    return (
        f"pg_control is of postgresql {theirs} but the data directory is postgresql {major} (PG_VERSION): "
        "transaction ids and checkpoint are not checked against it"
    )
