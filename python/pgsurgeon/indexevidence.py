"""Rows an all-zero page held, named by its table's btree indexes, read from their files: an all-zero page reads as
empty, with no error, so without the indexes the rows on it vanish from every account. A page the server extended
but never wrote is all zeroes too; no index entry points into it, and nothing is named. unload and inspect ask this
(salvage reads the same core reader through its own page source)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core

if TYPE_CHECKING:
    from pgsurgeon.boundary import Finding, IndexFiles, SegFile
    from pgsurgeon.catalog.files import DbCatalog
    from pgsurgeon.catalog.relation import Relation

Segments = Callable[[str], "list[SegFile]"]
"""A relation's segment files from its path relative to the data directory."""

Tid = tuple[int, int]


def rows_named(
    cat: DbCatalog, rel: Relation, blocks: list[int], segments: Segments, block_size: int
) -> dict[Tid, list[str]]:
    """Each heap TID in ``blocks`` that the table's btree indexes hold, with the indexes that hold it."""
    indexes = btree_files(cat, rel, segments)
    if not blocks or not indexes:
        return {}
    tids = core.index_evidence({"indexes": indexes, "blocks": blocks, "beyond": None, "blcksz": block_size})
    held: dict[Tid, list[str]] = {}
    for e in tids:
        names = held.setdefault((int(e["block"]), int(e["lp"])), [])
        if e["index"] not in names:
            names.append(e["index"])
    return dict(sorted(held.items()))


def btree_files(cat: DbCatalog, rel: Relation, segments: Segments) -> list[IndexFiles]:
    """The table's btree indexes with their segment files."""
    out: list[IndexFiles] = []
    for ix in cat.indexes:
        irel = cat.relations.get(ix.oid)
        if ix.table != rel.oid or irel is None or irel.amname != "btree":
            continue
        loc = cat.locate(ix.oid)
        if loc is not None:
            out.append({"name": irel.name, "files": segments(loc[0]), "nblocks": loc[1]})
    return out


def in_data_directory(pgdata: Path) -> Segments:
    """Segment files as they are in a data directory."""
    from pgsurgeon.datadir import segments_of

    return lambda relpath: segments_of(pgdata / relpath)


def rows_on_zero_page(path: Path, block: int) -> tuple[str, dict[Tid, list[str]]] | None:
    """For a relation file inside a data directory (the cluster stopped, or a copy): the table's name and the rows
    its btree indexes name on ``block``; None when the file or its catalog cannot be placed."""
    from pgsurgeon.catalog.files import FilesCatalog, file_key, relation_index

    found = file_key(path)
    if found is None or "_" in path.name:  # a fork (_vm, _fsm) holds no rows
        return None
    pgdata, key = found
    try:
        fc = FilesCatalog(pgdata)
        rel = relation_index(fc)[0].get(key)
        db = next((d for d in fc.databases() if d.oid == key[1]), None)
    except (ValueError, OSError):
        return None
    if rel is None or db is None or rel.relkind not in ("r", "m", "t"):
        return None
    cat = fc.database(db)
    label = f"{rel.database}.{rel.qualified}" if rel.database else rel.qualified
    return label, rows_named(cat, rel, [block], in_data_directory(pgdata), fc.block_size)


def zero_page_finding(path: Path, block: int) -> list[Finding]:
    """``page_header.zeroed_referenced`` for an all-zero ``block`` of a relation file when the table's indexes name
    rows on it (what scan reports for the same page), else nothing."""
    found = rows_on_zero_page(path, block)
    if found is None or not found[1]:
        return []
    rows = found[1]
    names = sorted({n for ns in rows.values() for n in ns})
    area, severity, pg_error, remedy = core.describe_code("page_header.zeroed_referenced")
    return [
        {
            "code": "page_header.zeroed_referenced",
            "area": area,
            "severity": "error" if severity == "error" else "warning",
            "block": block,
            "item": None,
            "message": f"all-zero page, but index {', '.join(names)} names {len(rows)} row(s) on it (line pointers "
            f"{_folded(sorted(lp for _b, lp in rows))}): those rows are lost",
            "pg_error": pg_error,
            "remedy": remedy,
        }
    ]


def _folded(values: list[int]) -> str:
    """``1..57, 60``: runs of consecutive numbers folded."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in runs)
