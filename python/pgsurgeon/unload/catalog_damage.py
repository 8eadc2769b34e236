"""Damage in the catalog copy, before its server starts: every page of the copy is checked as scan checks pages.

A catalog table's page that fails its checks is zeroed in the copy (a garbage line pointer array read through SQL
can crash the backend; the copy is ours to change, the original is never written), and a damaged catalog index has
the copy started with ``ignore_system_indexes``. The objects whose rows lived on those pages are then missing from
pg_dump's schema: they are listed, never silently left out. By name when the row engine could still carve their
rows from the original's page (the catalog read from the original's files against the copy's); by OID, with what
names them, when only another catalog still refers to them (pg_depend, pg_description)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon.catalog.files import FIRST_NORMAL_OID, Database, FilesCatalog, file_key, relation_index
from pgsurgeon.scan import ScanRequest, run_scan

# Catalogs whose rows are objects pg_dump writes, with the column naming each (src/include/catalog/pg_*.h).
NAMED_CATALOGS: dict[int, tuple[str, str, str]] = {
    1255: ("pg_proc", "function", "proname"),
    1259: ("pg_class", "relation", "relname"),
    1247: ("pg_type", "type", "typname"),
    2615: ("pg_namespace", "schema", "nspname"),
    2606: ("pg_constraint", "constraint", "conname"),
    2620: ("pg_trigger", "trigger", "tgname"),
    2618: ("pg_rewrite", "rule", "rulename"),
    3256: ("pg_policy", "policy", "polname"),
    2617: ("pg_operator", "operator", "oprname"),
    3079: ("pg_extension", "extension", "extname"),
}
PG_DEPEND = 2608
PG_DESCRIPTION = 2609


@dataclass
class DamagedPage:
    database: str
    catalog: str
    kind: str
    """``table`` or ``index``."""
    block: int
    problem: str
    path: str


@dataclass
class CatalogDamage:
    pages: list[DamagedPage] = field(default_factory=list)
    lost: dict[str, list[str]] = field(default_factory=dict)
    """Per database, the objects whose catalog rows were on a zeroed page."""

    @property
    def index_damaged(self) -> bool:
        return any(p.kind == "index" for p in self.pages)


def check_copy(
    original: FilesCatalog, copy_root: Path, databases: list[Database], backup_start_lsn: int | None = None
) -> CatalogDamage:
    """Check the copy's pages; zero its damaged catalog table pages; name what they held. From a base backup
    (``backup_start_lsn``), a page newer than the backup's start was written while it was copied: its LSN past the
    copy's reset WAL is no damage (the copy only reads). Failing another check it is torn, or newer than the pages
    it points to; replay would make them agree, but the copy's server reads them as they are: acted on all the
    same, and said for what it is."""
    out = CatalogDamage()
    # the copy's files are the original's: the original's catalog, already read, names them and describes them (its
    # catalogs alone: a finding elsewhere is not acted on, and the other relations were a third of this step)
    names, metas = relation_index(original, system_only=True)
    outcome = run_scan(ScanRequest(pgdata=copy_root, metadata=metas))
    blcksz = int(outcome.control["blcksz"])
    segment_blocks = int(outcome.control["relseg_size"])
    seen: set[tuple[str, int]] = set()
    for f in outcome.findings:
        located = file_key(Path("/") / f["path"]) if f["path"] else None  # relative: no link is followed
        rel = names.get(located[1]) if located is not None else None
        if f["severity"] != "error" or f["block"] is None or rel is None or rel.oid >= FIRST_NORMAL_OID:
            continue
        if f["fork"] not in (None, "main") or f["path"] is None or (f["path"], f["block"]) in seen:
            continue
        problem = str(f["message"])
        newer = (
            backup_start_lsn is not None
            and _page_lsn(copy_root / f["path"], f["block"] % segment_blocks, blcksz) > backup_start_lsn
        )
        if newer and f["code"] == "page_header.lsn_future":
            continue  # the copy's WAL was reset past the backup's checkpoint, not past the pages it copied later
        if newer:
            problem = f"written while the backup copied it (WAL replay would rewrite it, the copy cannot): {problem}"
        seen.add((f["path"], f["block"]))
        kind = "index" if rel.relkind == "i" else "table"
        out.pages.append(DamagedPage(rel.database, rel.name, kind, f["block"], problem, f["path"]))
        if kind == "table":
            _zero(copy_root / f["path"], f["block"] % segment_blocks, blcksz)
    if any(p.kind == "table" for p in out.pages):
        out.lost = _lost_objects(original, FilesCatalog(copy_root), databases)
    return out


def _page_lsn(segment: Path, block_in_segment: int, blcksz: int) -> int:
    """pd_lsn of a page of the copy (0 when it cannot be read): xlogid then xrecoff (src/include/storage/bufpage.h,
    PageXLogRecPtr), little-endian as the core reads pages."""
    try:
        with segment.open("rb") as fh:
            fh.seek(block_in_segment * blcksz)
            head = fh.read(8)
    except OSError:
        return 0
    if len(head) < 8:
        return 0
    return (int.from_bytes(head[0:4], "little") << 32) | int.from_bytes(head[4:8], "little")


def _zero(segment: Path, block_in_segment: int, blcksz: int) -> None:
    fd = os.open(segment, os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(blcksz), block_in_segment * blcksz)
    finally:
        os.close(fd)


def _lost_objects(original: FilesCatalog, copy: FilesCatalog, databases: list[Database]) -> dict[str, list[str]]:
    lost: dict[str, list[str]] = {}
    copy_dbs = {d.oid: d for d in copy.databases()}
    for db in databases:
        if db.oid not in copy_dbs:
            continue
        names = _named_objects(original, db) if db.oid in {d.oid for d in original.databases()} else {}
        here = _named_objects(copy, copy_dbs[db.oid])
        found: list[str] = []
        for (catalog, oid), label in sorted(names.items()):
            if (catalog, oid) not in here:
                found.append(f"{label} (OID {oid}; its row was carved from the original's damaged page)")
        found += _referenced_only(copy, copy_dbs[db.oid], here, set(names))
        if found:
            lost[db.name] = found
    return lost


def _named_objects(fc: FilesCatalog, db: Database) -> dict[tuple[int, int], str]:
    """(catalog, OID) → "function f" for every user object of the named catalogs, as these files hold them."""
    cat = fc.database(db)
    out: dict[tuple[int, int], str] = {}
    for relid, (_name, what, column) in NAMED_CATALOGS.items():
        for r in cat.read(relid, ["oid", column]):
            oid = int(r["oid"] or 0)
            if oid >= FIRST_NORMAL_OID:
                out[(relid, oid)] = f"{what} {r[column]}"
    for oid, (_proname, _nsp, _lang, prosrc) in cat.procs.items():
        if (1255, oid) in out and prosrc:  # what it takes to write the function again by hand
            body = " ".join(prosrc.split())
            out[(1255, oid)] += f" (its body: {body[:200]!r}{'…' if len(body) > 200 else ''})"
    return out


def _referenced_only(
    fc: FilesCatalog, db: Database, here: dict[tuple[int, int], str], carved: set[tuple[int, int]]
) -> list[str]:
    """Objects no named catalog holds any more but pg_depend or pg_description still refers to."""
    cat = fc.database(db)
    refs: dict[tuple[int, int], list[str]] = {}
    for r in cat.read(PG_DEPEND, ["classid", "objid", "refclassid", "refobjid"]):
        for cls, oid in ((r["classid"], r["objid"]), (r["refclassid"], r["refobjid"])):
            key = (int(cls or 0), int(oid or 0))
            if key[0] in NAMED_CATALOGS and key[1] >= FIRST_NORMAL_OID:
                refs.setdefault(key, [])
    for r in cat.read(PG_DESCRIPTION, ["classoid", "objoid", "description"]):
        key = (int(r["classoid"] or 0), int(r["objoid"] or 0))
        if key[0] in NAMED_CATALOGS and key[1] >= FIRST_NORMAL_OID:
            refs.setdefault(key, []).append(f"its comment: {r['description']!r}")
    out = []
    for key, notes in sorted(refs.items()):
        if key in here or key in carved:
            continue
        _name, what, _column = NAMED_CATALOGS[key[0]]
        said = "; ".join(["named only by pg_depend or pg_description", *notes])
        out.append(f"a {what} with OID {key[1]} (its row is lost; {said})")
    return out
