"""Which files to damage: a relation named through SQL (``--dsn`` + ``--table``, resolved to the table,
its TOAST table and TOAST index, or one of its indexes) or a relation file in a data directory
(``--pgdata`` + ``--file``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import core, db
from pgsurgeon.datadir import Geometry, read_block, segment_path, split_segment
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.simulate.modes import (
    TARGET_INDEX,
    TARGET_TABLE,
    TARGET_TOAST,
    TARGET_TOAST_INDEX,
)

_AM_KIND = {"heap": "heap", "btree": "btree"}


@dataclass
class Relation:
    """One relation fork's files (main fork; segment 0 path) and what is known about it."""

    name: str
    role: str
    """table, toast, toast-index, index, or file (given by path)."""
    kind: str | None
    """Page kind: heap, btree, or None for access methods the injectors do not decode."""
    path: Path
    attrs: list[dict[str, Any]] | None = None
    """Columns (attnum, attname, attlen, attalign, attisdropped) when known through SQL."""
    heap_path: Path | None = None
    """For an index: its table's file, so random TIDs can point inside the table."""


@dataclass
class Resolved:
    pgdata: Path
    relation: Relation
    geometry: Geometry
    dsn: str | None = None
    relatives: dict[str, list[str]] = field(default_factory=dict)

    def relpath(self, path: Path) -> str:
        """``path`` relative to the data directory, as the server names files."""
        try:
            return str(path.relative_to(self.pgdata))
        except ValueError:
            return str(path)


def nblocks(base: Path, geometry: Geometry) -> int:
    """Blocks of a relation fork as md.c counts them: segment by segment until the first short or
    missing one (a partial trailing block does not count)."""
    total = 0
    segno = 0
    while True:
        try:
            size = segment_path(base, segno).stat().st_size
        except FileNotFoundError:
            return total
        n = size // geometry.blcksz
        total += n
        if n < geometry.relseg_size:
            return total
        segno += 1


def segments(base: Path) -> list[int]:
    """Segment numbers present on disk, in order (gaps included as they are)."""
    found = []
    parent = base.parent
    prefix = base.name + "."
    with contextlib.suppress(FileNotFoundError):
        for p in parent.iterdir():
            if p.name == base.name:
                found.append(0)
            elif p.name.startswith(prefix) and p.name[len(prefix) :].isdigit():
                found.append(int(p.name[len(prefix) :]))
    return sorted(found)


def guess_kind(base: Path, geometry: Geometry) -> str:
    """heap or btree, from the special space of the first readable pages."""
    for block in range(min(nblocks(base, geometry), 8)):
        data = read_block(base, block, geometry).data
        report = core.inspect_page(data, block, checksums=False)
        if report["kind"] in ("btree", "btree_meta"):
            return "btree"
        if report["kind"] == "heap":
            return "heap"
    return "heap"


def from_file(pgdata: Path, file: Path, kind: str | None) -> Resolved:
    pgdata = pgdata.resolve()
    if not (pgdata / "global" / "pg_control").is_file():
        raise PgSurgeonError(
            f"{pgdata} is not a data directory (no global/pg_control)", hint="pass the cluster's PGDATA"
        )
    path = file if file.is_absolute() else pgdata / file
    path = path.resolve()
    try:
        path.relative_to(pgdata)
    except ValueError:
        raise UsageError(
            f"{file} is not inside {pgdata}", hint="pass a path relative to PGDATA, e.g. base/5/16384"
        ) from None
    base, _ = split_segment(path)
    if not base.exists() and not segments(base):
        raise PgSurgeonError(f"no such relation file: {base}", hint="check the path (pg_relation_filepath gives it)")
    geometry = Geometry.for_path(base)
    page_kind = kind or guess_kind(base, geometry)
    rel = Relation(name=str(base.relative_to(pgdata)), role="file", kind=page_kind, path=base)
    return Resolved(pgdata, rel, geometry)


def _pick(rows: list[dict[str, Any]], role: str, index: str | None) -> dict[str, Any] | None:
    candidates = [r for r in rows if r["role"] == role]
    if index is not None:
        candidates = [r for r in candidates if r["relname"] == index or r["relname"].split(".")[-1] == index]
    if role == "index":  # primary key first, then btrees by name (the query orders them)
        btrees = [r for r in candidates if r["amname"] == "btree"]
        candidates = btrees or candidates
    return candidates[0] if candidates else None


def from_dsn(dsn: str, table: str, target: str, index: str | None) -> Resolved:
    with db.connect(dsn) as conn:
        server = conn.execute(db.load_sql("corrupt_server")).fetchone()
        assert server is not None
        data_directory, _checksums, _version = server
        cur = conn.execute(db.load_sql("corrupt_relatives"), {"table": table})
        names = [d.name for d in cur.description or []]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        if not rows:
            raise PgSurgeonError(f"relation {table!r} does not exist", hint="qualify it with its schema, e.g. public.t")
        me = rows[0] if rows[0]["role"] == "table" else _pick(rows, "table", None)
        assert me is not None
        is_index = me["relkind"] in ("i", "I")
        if index is not None and target in (TARGET_TABLE, TARGET_INDEX) and not is_index:
            target = TARGET_INDEX
        chosen: dict[str, Any] | None
        if target == TARGET_TABLE or (is_index and target == TARGET_INDEX):
            chosen = me
        elif target == TARGET_INDEX:
            chosen = _pick(rows, "index", index)
            if chosen is None:
                which = f"no index named {index}" if index else "no index"
                raise PgSurgeonError(f"{me['relname']} has {which}", hint="create one, or pass --index NAME")
        elif target in (TARGET_TOAST, TARGET_TOAST_INDEX):
            chosen = me if me["relkind"] == "t" and target == TARGET_TOAST else _pick(rows, target, None)
            if chosen is None:
                raise PgSurgeonError(
                    f"{me['relname']} has no TOAST table",
                    hint="only tables with long variable-length columns have one",
                )
        else:  # pragma: no cover - argparse restricts the choices
            raise UsageError(f"unknown target {target}")
        assert chosen is not None
        if chosen["filepath"] is None:
            raise PgSurgeonError(f"relation {chosen['relname']} has no storage (a view or a partitioned table?)")
        attrs = None
        if chosen["amname"] == "heap":
            cur = conn.execute(db.load_sql("corrupt_columns"), {"relname": chosen["relname"]})
            names = [d.name for d in cur.description or []]
            attrs = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        heap_row = None
        if chosen["amname"] not in (None, "heap"):
            heap_row = _pick(rows, "heap-of-index", None) if chosen is me else me
            if chosen["role"] == "toast-index":
                heap_row = _pick(rows, "toast", None)
    pgdata = Path(data_directory)
    path = pgdata / chosen["filepath"]
    rel = Relation(
        name=chosen["relname"],
        role=target if chosen is not me else ("index" if is_index else "table"),
        kind=_AM_KIND.get(chosen["amname"] or ""),
        path=path,
        attrs=attrs,
        heap_path=pgdata / heap_row["filepath"] if heap_row and heap_row["filepath"] else None,
    )
    relatives: dict[str, list[str]] = {}
    for r in rows:
        relatives.setdefault(r["role"], []).append(r["relname"])
    return Resolved(pgdata, rel, Geometry.for_path(path), dsn=dsn, relatives=relatives)


def checkpoint(dsn: str) -> None:
    """Ask the server to write its dirty buffers (so a dry run reads current files); best effort."""
    with contextlib.suppress(db.Error, PgSurgeonError), db.connect(dsn) as conn:
        conn.execute("CHECKPOINT")
