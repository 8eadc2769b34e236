"""The catalog against the files on disk: relations the catalog names whose file is gone, and relation files no
catalog names (orphans). Only databases the catalog was read for are judged (template0 takes no connections, so
its catalog is not read and its files are not orphans)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.findings import Finding, make

if TYPE_CHECKING:
    from pgsurgeon.catalog.names import RelKey
    from pgsurgeon.catalog.relation import Relation


def storage_findings(
    pgdata: Path, names: dict[RelKey, Relation], main_forks: list[tuple[int, int, int, int, str]] | None = None
) -> list[Finding]:
    """``file.relation_missing`` for each named relation with no main fork on disk, ``file.orphan`` for each main
    fork in a judged database that no relation names. For a stopped cluster: on a running one, a relation being
    created has its file before its catalog row is visible. ``main_forks``: every main fork of the data directory
    as a whole scan found them (Scanner.main_forks), else listed here."""
    if not names:
        return []
    if main_forks is None:
        main_forks = [
            (f["tablespace_oid"], f["database_oid"], f["relfilenode"], sum(s["size"] for s in f["segments"]), f["path"])
            for f in core.discover_relations(pgdata)
            if f["fork"] == "main" and not f["temp"]
        ]
    on_disk = {(spc, db, node): (size, path) for spc, db, node, size, path in main_forks}
    judged = {db for _spc, db, _node in names}
    out: list[Finding] = []
    for key, rel in sorted(names.items()):
        if key not in on_disk:
            path = _path(key)
            out.append(
                make(
                    "file.relation_missing",
                    f"{rel.qualified} ({rel.database}) has no file {path}: every query on it fails",
                    path,
                    rel,
                    "main",
                )
            )
    for key, (size, path) in sorted(on_disk.items()):
        # an empty file is what a dropped or rewritten relation leaves until the next checkpoint unlinks it
        if key[1] in judged and key not in names and size > 0:
            out.append(
                make(
                    "file.orphan",
                    f"{path} ({size} bytes) belongs to no relation of the catalog: an orphan file",
                    path,
                    None,
                    "main",
                )
            )
    return out


def _path(key: RelKey) -> str:
    spc, db, node = key
    if spc == 1664:  # GLOBALTABLESPACE_OID (pg_tablespace.dat)
        return f"global/{node}"
    if spc == 1663:  # DEFAULTTABLESPACE_OID
        return f"base/{db}/{node}"
    return f"pg_tblspc/{spc}/…/{db}/{node}"
