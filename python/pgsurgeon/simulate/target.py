"""Which files to damage: a relation named through SQL (``--dsn`` + ``--table``, resolved to the table,
its TOAST table and TOAST index, or one of its indexes) or a relation file in a data directory
(``--pgdata`` + ``--file``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import ROLE_HEAP_OF_INDEX, ROLE_INDEX, ROLE_TABLE, ROLE_TOAST, Column, Relation
from pgsurgeon.datadir import Geometry, read_block, segment_path, split_segment
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.simulate.modes import (
    TARGET_INDEX,
    TARGET_TABLE,
    TARGET_TOAST,
    TARGET_TOAST_INDEX,
)

# The page kinds the injectors decode; other access methods' pages are damaged as bytes.
_INJECTED_KINDS = ("heap", "btree", "gin", "gist", "spgist", "hash", "brin")


@dataclass
class Target:
    """What a damage is aimed at: one relation's main fork (segment 0 path) and what is known about it. The
    relation itself is the catalog's (``rel``); given by path there is none."""

    name: str
    """The relation as the server prints it, or the file's path relative to the data directory."""
    role: str
    """table, toast, toast-index, index, or file (given by path)."""
    kind: str | None
    """Page kind: heap, btree, gin, gist, spgist, hash, brin, or None for access methods the injectors do not decode."""
    path: Path
    rel: Relation | None = None
    attrs: list[Column] | None = None
    """Its columns, when known through SQL (heaps)."""
    heap_path: Path | None = None
    """For an index: its table's file, so random TIDs can point inside the table."""


@dataclass
class Resolved:
    pgdata: Path
    relation: Target
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
    """heap, btree, hash or brin, from the special space of the first readable pages."""
    for block in range(min(nblocks(base, geometry), 8)):
        data = read_block(base, block, geometry).data
        report = core.inspect_page(data, block, checksums=False)
        if report["kind"] in ("btree", "btree_meta"):
            return "btree"
        if report["kind"] in ("hash", "brin"):
            return str(report["kind"])
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
    target = Target(name=str(base.relative_to(pgdata)), role="file", kind=page_kind, path=base)
    return Resolved(pgdata, target, geometry)


def _pick(rels: list[Relation], role: str, index: str | None) -> Relation | None:
    candidates = [r for r in rels if r.role == role]
    if index is not None:
        candidates = [r for r in candidates if index in (r.regclass, r.regclass.split(".")[-1])]
    if role == ROLE_INDEX:  # the primary key first, then btrees by name
        candidates.sort(key=lambda r: (not r.primary_key, r.name))
        btrees = [r for r in candidates if r.amname == "btree"]
        candidates = btrees or candidates
    return candidates[0] if candidates else None


def _choose(rels: list[Relation], me: Relation, target: str, index: str | None) -> Relation:
    """The relation ``--target`` (and ``--index``) names among ``me`` and its relatives."""
    if target == TARGET_TABLE or (me.is_index and target == TARGET_INDEX):
        return me
    if target == TARGET_INDEX:
        chosen = _pick(rels, ROLE_INDEX, index)
        if chosen is None:
            which = f"no index named {index}" if index else "no index"
            raise PgSurgeonError(f"{me.regclass} has {which}", hint="create one, or pass --index NAME")
        return chosen
    if target in (TARGET_TOAST, TARGET_TOAST_INDEX):
        found = me if me.relkind == "t" and target == TARGET_TOAST else _pick(rels, target, None)
        if found is None:
            raise PgSurgeonError(
                f"{me.regclass} has no TOAST table", hint="only tables with long variable-length columns have one"
            )
        return found
    raise UsageError(f"unknown target {target}")  # pragma: no cover - argparse restricts the choices


def from_dsn(dsn: str, table: str, target: str, index: str | None) -> Resolved:
    with db.connect(dsn) as conn:
        facts = catalog.server_facts(conn)
        if facts.data_directory is None:
            raise PgSurgeonError(
                "the server does not show this role its data directory",
                hint="connect as a superuser or a member of pg_read_all_settings, or pass --pgdata and --file",
            )
        found = catalog.lookup_relation(catalog.query_on(conn), table)
        if found is None:
            raise PgSurgeonError(f"relation {table!r} does not exist", hint="qualify it with its schema, e.g. public.t")
        rels = catalog.relatives(conn, [found[0]], database=facts.database, block_size=facts.block_size)
        me = next(r for r in rels if r.role == ROLE_TABLE)
        if index is not None and target in (TARGET_TABLE, TARGET_INDEX) and not me.is_index:
            target = TARGET_INDEX
        chosen = _choose(rels, me, target, index)
        if chosen.filepath is None:
            raise PgSurgeonError(f"relation {chosen.regclass} has no storage (a view or a partitioned table?)")
        attrs = catalog.columns(conn, chosen.oid) if chosen.amname == "heap" else None
        heap = None
        if chosen.amname not in (None, "heap"):
            heap = _pick(rels, ROLE_HEAP_OF_INDEX, None) if chosen is me else me
            if chosen.role == TARGET_TOAST_INDEX:
                heap = _pick(rels, ROLE_TOAST, None)
    pgdata = Path(facts.data_directory)
    path = pgdata / chosen.filepath
    aimed = Target(
        name=chosen.regclass,
        role=target if chosen is not me else (ROLE_INDEX if me.is_index else ROLE_TABLE),
        kind=chosen.kind if chosen.kind in _INJECTED_KINDS else None,
        path=path,
        rel=chosen,
        attrs=attrs,
        heap_path=pgdata / heap.filepath if heap is not None and heap.filepath else None,
    )
    relatives: dict[str, list[str]] = {}
    for r in sorted(rels, key=lambda r: (r.role, not r.primary_key, r.name)):
        relatives.setdefault(r.role, []).append(r.regclass)
    return Resolved(pgdata, aimed, Geometry.for_path(path), dsn=dsn, relatives=relatives)


def checkpoint(dsn: str) -> None:
    """Ask the server to write its dirty buffers (so a dry run reads current files); best effort."""
    with contextlib.suppress(db.Error, PgSurgeonError), db.connect(dsn) as conn:
        conn.execute("CHECKPOINT")
