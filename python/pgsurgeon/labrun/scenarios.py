"""The corruption scenarios `pgsurgeon lab` runs: one simulator mode each, on its own copy of the seeds' table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scenario:
    name: str
    """Short name for --modes and the report."""
    title: str
    """What was damaged, for people."""
    mode: str
    """The simulator mode."""
    options: tuple[tuple[str, Any], ...] = ()
    """More :class:`pgsurgeon.simulate.SimulateRequest` fields (the relation, seed and manifest come from the lab)."""
    shows: str = "table"
    """Which relation the block map shows: table, toast or index (the primary key, or ``<table>_ix`` when the
    scenario has its own ``index``)."""
    index: str = ""
    """The index the scenario damages, built on the table as ``<table>_ix`` (CREATE INDEX's words after ON the
    table); empty: the mode damages the table or its primary key."""

    def describe(self) -> str:
        """The mode and its options, for the progress lines."""
        return " ".join([self.mode, *(f"{k}={v}" for k, v in self.options)])


# Blocks are fixed so runs compare; the table has ~40 blocks (see runner.SEED_ROWS).
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("header", "page header overwritten with random bytes", "header", (("field", "random"), ("block", 3))),
    Scenario("item-ids", "item-ID array overwritten (the seeds' case)", "item-ids", (("block", 4),)),
    Scenario(
        "xmin",
        "a tuple's xmin from before pg_xact's horizon, hint bits cleared",
        "tuple-header",
        (("field", "t_xmin"), ("value", 3000000000), ("clear_hints", True), ("block", 5)),
    ),
    Scenario("tuple-header", "a tuple header overwritten", "tuple-header", (("field", "random"), ("block", 6))),
    Scenario("varlena", "a varlena length damaged", "tuple-data", (("field", "varlena"), ("block", 7))),
    Scenario("toast", "a TOAST chunk's sequence number", "toast", (("field", "chunk_seq"),), shows="toast"),
    Scenario("btree", "a btree item's heap TID", "btree", (("field", "item"),), shows="index"),
    Scenario("checksum", "the page checksum alone", "checksum", (("block", 8),)),
    Scenario("zero", "a page zeroed", "zero", (("block", 9),)),
    Scenario("torn", "a torn page (second half from block 20)", "torn", (("block", 10), ("source_block", 20))),
    Scenario("misdirected", "block 21 written over block 11", "misdirected", (("block", 11), ("source_block", 21))),
    Scenario("truncate", "the table file cut short", "truncate"),
    # issue 30: the other index kinds and the maps. Each index is the scenario's own (damaged through --index).
    Scenario(
        "gin",
        "a GIN entry's posting list item count (int[] opclass)",
        "gin",
        (("field", "entry-leaf"), ("target", "index"), ("index", "lab_gin_ix")),
        shows="index",
        index="USING gin ((ARRAY[a, b]))",
    ),
    Scenario(
        "gist",
        "a GiST inner page's downlink (box opclass)",
        "gist",
        (("field", "downlink"), ("target", "index"), ("index", "lab_gist_ix")),
        shows="index",
        index="USING gist (box(point(a, b), point(a + 1, b + 1)))",
    ),
    Scenario(
        "spgist",
        "an SP-GiST leaf chain's nextOffset (text opclass)",
        "spgist",
        (("field", "leaf_chain"), ("target", "index"), ("index", "lab_spgist_ix")),
        shows="index",
        index="USING spgist (description)",
    ),
    Scenario(
        "hash",
        "a hash bucket page's page type",
        "hash",
        (("field", "bucket"), ("target", "index"), ("index", "lab_hash_ix")),
        shows="index",
        index="USING hash (description)",
    ),
    Scenario(
        "brin",
        "a BRIN revmap entry (minmax opclass)",
        "brin",
        (("field", "revmap"), ("target", "index"), ("index", "lab_brin_ix")),
        shows="index",
        index="USING brin (id) WITH (pages_per_range = 2)",
    ),
    Scenario(
        "vm", "a visibility map's all-frozen bit on a page not frozen", "vm", (("field", "all-frozen"), ("block", 5))
    ),
    # an upper node, not a slot past the end: the lab's scan runs beside the server, and a running server's map on
    # disk lags its table (file.fsm_beyond_end is judged on a stopped cluster only)
    Scenario("fsm", "a free space map's upper node made wrong", "fsm", (("field", "upper-node"),)),
)

CHAOS = Scenario(
    "chaos",
    "several damages at once, chosen by the seed (headers, item IDs, tuples, TOAST, btree, zeroed, torn, misdirected)",
    "chaos",
)
"""``pgsurgeon lab --chaos``: not among the default scenarios (what it damages changes with --seed)."""

BY_NAME = {s.name: s for s in SCENARIOS}


def select(names: list[str] | None) -> list[Scenario]:
    """The scenarios named (all when None), in the canonical order; unknown names raise KeyError."""
    if not names:
        return list(SCENARIOS)
    wanted = set(names)
    unknown = wanted - set(BY_NAME)
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    return [s for s in SCENARIOS if s.name in wanted]
