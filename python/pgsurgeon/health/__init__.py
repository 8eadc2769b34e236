"""Storage health from the files: the figures pgstattuple and pgstatindex give, for every table and btree index of a
stopped cluster, a base backup or a running server's files, counted by the scan in its one pass over the pages
(crates/core/src/health); and pgstattuple's of hash and GiST indexes, pgstathashindex's and pgstatginindex's.
Named as PostgreSQL names them, and rounded as it rounds them (two decimals, NaN for an index with no leaves;
pgstathashindex's free_percent unrounded), so the two can be compared figure for figure.

Where the definitions differ: pgstattuple judges a tuple with a dirty snapshot on the running server; here a tuple
is judged by its hint bits and pg_xact, and one whose transaction the files cannot settle (the server running, or
a crash) counts as live, as a running transaction's does there, and is counted in ``undecided``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.health import why
from pgsurgeon.health.figures import (
    pct,
    pgstatginindex_row,
    pgstathashindex_row,
    pgstatindex_row,
    pgstattuple_row,
)
from pgsurgeon.scan import ScanOutcome, ScanRequest, run_scan

if TYPE_CHECKING:
    from pgsurgeon.boundary import RelationHealth
    from pgsurgeon.catalog.names import RelKey
    from pgsurgeon.catalog.relation import Relation
    from pgsurgeon.findings import Finding
    from pgsurgeon.health.why import Cause


@dataclass
class HealthRequest:
    pgdata: Path
    dsn: str | None = None
    databases: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    live: bool = False
    jobs: int | None = None
    system: bool = False
    """Count the system catalogs too (pg_catalog, information_schema)."""
    checks: bool = False
    """Check the pages for damage in the same pass (slower: every page through the scan's checks)."""


SYSTEM_SCHEMAS = frozenset(("pg_catalog", "information_schema"))


@dataclass
class RelationFigures:
    """One relation's health: what was counted, and the rows PostgreSQL's functions would return."""

    key: RelKey
    relation: Relation | None
    counted: RelationHealth
    block_size: int
    owner: str = ""
    """For an index or TOAST table (or a TOAST table's index): the table it belongs to, qualified."""
    toast_bytes: int = 0
    """For a table: its TOAST table's size."""
    index_bytes: int = 0
    """For a table: the size of its indexes (and its TOAST table's)."""
    table_live: int | None = None
    """For a btree of a table: the table's live tuples."""

    @property
    def dead_entries(self) -> int | None:
        """For a btree: its heap TIDs beyond the table's live rows, the entries that point at dead tuples (each live
        row has one entry, a HOT chain's included; a partial index has fewer, so this never overstates)."""
        b = self.counted.get("btree")
        if b is None or self.table_live is None:
            return None
        return max(0, b["heap_tids"] - self.table_live)

    @property
    def toast_share(self) -> float:
        """The share of the table's heap and TOAST bytes that are in TOAST (values stored out of line)."""
        return pct(self.toast_bytes, self.size + self.toast_bytes)

    @property
    def name(self) -> str:
        return self.relation.qualified if self.relation is not None else f"relfilenode {self.key[2]}"

    @property
    def database(self) -> str:
        return self.relation.database if self.relation is not None else str(self.key[1])

    @property
    def kind(self) -> str:
        return self.counted["kind"]

    @property
    def size(self) -> int:
        return self.counted["blocks"] * self.block_size

    def pgstattuple(self) -> dict[str, int | float] | None:
        """pgstattuple's row: of a table's tuples, or of a btree's, hash index's or GiST index's index tuples;
        None for other kinds (the server refuses GIN, SP-GiST and BRIN indexes)."""
        c = self.counted
        if "heap" in c:
            return pgstattuple_row(c["heap"], self.size)
        if "btree" in c:
            return pgstattuple_row(c["btree"]["tuples"], self.size)
        if "hash" in c:
            return pgstattuple_row(c["hash"]["tuples"], self.size)
        if "gist" in c:
            return pgstattuple_row(c["gist"]["tuples"], self.size)
        return None

    def pgstatindex(self) -> dict[str, int | float] | None:
        return pgstatindex_row(self.counted["btree"], self.block_size) if "btree" in self.counted else None

    def pgstathashindex(self) -> dict[str, int | float] | None:
        """pgstathashindex's row of a hash index; None for other kinds, or when its metapage was not read (the
        server fails on such an index)."""
        h = self.counted.get("hash")
        return pgstathashindex_row(h, self.counted["blocks"]) if h and h["version"] else None

    def pgstatginindex(self) -> dict[str, int | float] | None:
        """pgstatginindex's row of a GIN index; None for other kinds, or when its metapage was not read."""
        g = self.counted.get("gin")
        return pgstatginindex_row(g) if g is not None else None

    def leaf_histogram(self) -> list[tuple[int, int]]:
        """(items on a leaf, leaves with that many), ascending: how full the leaves are, page by page."""
        return [(int(i), int(n)) for i, n in self.counted["btree"]["leaf_items"]] if "btree" in self.counted else []

    def heap_pages_per_leaf(self) -> float:
        """The heap pages a scan of one leaf visits, on average (runs of its entries in one heap block): a few for an
        index in heap order (a range scan reads few heap pages), as many as its entries for a random key."""
        b = self.counted.get("btree")
        return round(b["heap_runs"] / b["leaf_pages"], 2) if b and b["leaf_pages"] else math.nan

    def heap_order_percent(self) -> float:
        """Of the entries following one another in key order, the share whose heap block does not go back: 100 for
        an index in heap order, about 50 for a random one (the seed's index order against heap order)."""
        b = self.counted.get("btree")
        return pct(b["tid_pairs_in_order"], b["tid_pairs"]) if b and b["tid_pairs"] else math.nan

    def leaf_order(self) -> list[tuple[int, int]]:
        """(position of the leaf in key order, its block number) for at most 512 leaves evenly spaced along the
        right-links, the first and last included: rising blocks mean a range scan reads the file forwards."""
        return [(int(p), int(b)) for p, b in self.counted["btree"]["leaf_order"]] if "btree" in self.counted else []

    def in_order_leaves(self) -> float:
        """The percentage of leaves whose right sibling is the next block (a range scan reads them in order)."""
        b = self.counted.get("btree")
        return pct(b["next_adjacent"], b["leaf_pages"]) if b else math.nan


@dataclass
class HealthOutcome:
    scan: ScanOutcome
    relations: list[RelationFigures]

    checked: bool = False
    """Whether the pages were checked for damage in the same pass."""
    causes: list[Cause] = field(default_factory=list)
    """With a connection: why the pages are as they are (:mod:`pgsurgeon.health.why`)."""

    @property
    def findings(self) -> list[Finding]:
        """The damage the same pass found (none unless checked): figures of a damaged relation count only what its
        pages still show."""
        return self.scan.findings


def run_health(req: HealthRequest, on_progress: Callable[[int, int, int], None] | None = None) -> HealthOutcome:
    """One scan of the selected relations with the health figures counted."""
    outcome = run_scan(
        ScanRequest(
            pgdata=req.pgdata,
            dsn=req.dsn,
            databases=req.databases,
            relations=req.relations,
            live=req.live,
            jobs=req.jobs,
            health=True,
            checks=req.checks,
        ),
        on_progress,
    )
    if "blcksz" not in outcome.control:
        raise PgSurgeonError(
            f"{req.pgdata / 'global' / 'pg_control'} cannot be read: it gives the block size and XID horizons every "
            "figure needs",
            hint=f"'pgsurgeon scan {req.pgdata}' says what is wrong; 'pgsurgeon control --plan {req.pgdata}' derives "
            "its values from the other files",
        )
    block_size = int(outcome.control["blcksz"])
    named_databases = {k[1] for k in outcome.names}
    figures = []
    for h in outcome.health:
        key = (h["tablespace_oid"], h["database_oid"], h["relfilenode"])
        rel = outcome.names.get(key)
        f = RelationFigures(key, rel, h, block_size, _table_of(outcome.owners, rel))
        if req.system or _user_relation(f, named_databases):
            figures.append(f)
    _sizes_of_tables(figures)
    health = HealthOutcome(outcome, in_report_order(figures), req.checks)
    if req.dsn:
        health.causes = why.causes(health, req.dsn)
    return health


def _user_relation(f: RelationFigures, named_databases: set[int]) -> bool:
    """Not a system catalog, and not in a database the catalog names nothing of (template0, which takes no
    connections); a file no catalog names in a named database stays (an orphan is worth seeing)."""
    if f.relation is None:
        return not named_databases or f.key[1] in named_databases
    return (f.owner or f.relation.qualified).split(".", 1)[0] not in SYSTEM_SCHEMAS


def _table_of(owners: dict[tuple[str, str], str], rel: Relation | None) -> str:
    """The table an index, TOAST table or TOAST index belongs to ('' for a table itself)."""
    if rel is None:
        return ""
    owner = owners.get((rel.database, rel.qualified), "")
    return owners.get((rel.database, owner), owner) if owner else ""


def _sizes_of_tables(figures: list[RelationFigures]) -> None:
    """Each table's TOAST and index bytes, from the figures of its relatives."""
    tables = {(f.database, f.name): f for f in figures if not f.owner}
    for f in figures:
        table = tables.get((f.database, f.owner)) if f.owner else None
        if table is None:
            continue
        if f.relation is not None and f.relation.relkind == "t":
            table.toast_bytes += f.size
        else:
            table.index_bytes += f.size
        # the TOAST table's index points at chunks, not at the table's rows
        if "btree" in f.counted and "heap" in table.counted and f.relation and f.relation.schema != "pg_toast":
            f.table_live = table.counted["heap"]["tuple_count"]


def in_report_order(figures: list[RelationFigures]) -> list[RelationFigures]:
    """By database; in each, the tables largest first (with their TOAST table and indexes), each followed by its
    TOAST table and then its indexes; relations with no name last."""
    groups: dict[tuple[str, str], list[RelationFigures]] = {}
    for f in figures:
        groups.setdefault((f.database, f.owner or f.name), []).append(f)
    for members in groups.values():
        members.sort(key=lambda f: (bool(f.owner), f.kind != "heap", f.name))
    order = sorted(
        groups.items(),
        key=lambda g: (g[0][0], g[1][0].relation is None, -sum(f.size for f in g[1]), g[0][1]),
    )
    return [f for _, members in order for f in members]
