"""Chaos: several kinds of damage at once, chosen by a seed, over a database of several tables.

``build_database`` makes the tables (indexes, TOAST-ed values, HOT chains, deleted rows); ``pick`` chooses the
damages for one table from a seed (page headers, item-ID arrays, single line pointers, tuple headers including a
MultiXact xmax, tuple data, TOAST chunks, btree items, zeroed, torn and misdirected pages, each on its own block);
``damage`` applies them through the simulator, one manifest each, so every byte is recorded and undoable.

Only damage something can see is chosen: a changed byte inside a value that still decodes (random bytes in an
uncompressed TOAST chunk without checksums) would be a wrong value no tool can find, and the chaos runs assert that no
value comes back wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.journal.manifest import Manifest
from pgsurgeon.simulate.runner import SimulateRequest, run

HEAP_XMAX_KEYSHR_LOCK = 0x0010
HEAP_XMAX_EXCL_LOCK = 0x0040
HEAP_XMAX_COMMITTED = 0x0400
HEAP_XMAX_INVALID = 0x0800
HEAP_XMAX_IS_MULTI = 0x1000
"""t_infomask bits, from src/include/access/htup_details.h."""

KINDS = (
    "header",
    "item-ids",
    "item-id",
    "xmin",
    "multixact",
    "tuple-header",
    "varlena",
    "toast",
    "btree",
    "zero",
    "torn",
    "misdirected",
)
"""What chaos chooses from; a table without TOAST or btree indexes gets none of those."""


@dataclass(frozen=True)
class Table:
    name: str
    rows: int
    toast: bool
    indexes: tuple[str, ...]
    short_text: str | None = None
    """A text column whose values are short (1-byte varlena headers): the varlena damage goes there."""


@dataclass
class Damage:
    kind: str
    table: str
    block: int | None
    request: dict[str, Any]
    """The :class:`SimulateRequest` fields besides the relation, seed and manifest."""
    then: dict[str, Any] | None = None
    """A second damage on the same tuple (the MultiXact xmax: the xmax, then the infomask that makes it a multi)."""

    def describe(self) -> str:
        opts = " ".join(f"{k}={v}" for k, v in self.request.items() if k != "mode")
        return f"{self.table}: {self.kind} ({self.request['mode']} {opts})".rstrip()


@dataclass
class ChaosRun:
    seed: int
    damages: list[Damage] = field(default_factory=list)
    manifests: list[Manifest] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- the database

TABLES_SQL = (
    # wide rows, every 8th with an incompressible bytea TOAST-ed in chunks
    """CREATE TABLE {p}wide AS
       SELECT g::bigint AS id, (g::bigint * 7919 + {seed}) % 1000 AS a,
              'row ' || g || ' ' || md5((g + {seed})::text) AS t,
              CASE WHEN g % 8 = 0
                   THEN (SELECT decode(string_agg(md5((g::bigint * 31 + i + {seed})::text), ''), 'hex')
                         FROM generate_series(1, 160) i)
                   ELSE decode(md5((g + {seed})::text), 'hex') END AS payload
       FROM generate_series(1, {n_wide}) g""",
    "ALTER TABLE {p}wide ADD PRIMARY KEY (id)",
    "CREATE INDEX ON {p}wide (a)",
    # HOT chains (non-indexed column updated on pages with room) and deleted rows
    "CREATE TABLE {p}hot (id int PRIMARY KEY, n int, note text) WITH (fillfactor = 60)",
    "INSERT INTO {p}hot SELECT g, 0, 'note ' || md5(g::text) FROM generate_series(1, {n_hot}) g",
    "UPDATE {p}hot SET n = n + 1 WHERE id % 5 = 0",
    "UPDATE {p}hot SET n = n + 1 WHERE id % 10 = 0",
    "DELETE FROM {p}hot WHERE id % 17 = 0",
    # compressible documents (pglz, some TOAST-ed), deletes in the middle
    """CREATE TABLE {p}doc AS
       SELECT g AS id, 'tag' || (g % 13) AS tag,
              CASE WHEN g % 4 = 0 THEN repeat('document ' || g || ' ', 400 + g % 50)
                   ELSE 'short ' || g END AS body
       FROM generate_series(1, {n_doc}) g""",
    "ALTER TABLE {p}doc ADD PRIMARY KEY (id)",
    "CREATE INDEX ON {p}doc (tag)",
    "DELETE FROM {p}doc WHERE id % 23 = 0",
)


def build_database(conn: Any, rows: int, seed: int, prefix: str = "chaos_") -> list[Table]:
    """The chaos tables (about ``rows`` live rows in all), read once (hint bits set) and checkpointed."""
    n_wide, n_hot = rows * 6 // 10, rows * 25 // 100
    n_doc = max(rows - n_wide - n_hot, 10)
    names = [f"{prefix}{t}" for t in ("wide", "hot", "doc")]
    for name in names:
        conn.execute(db.sql.SQL("DROP TABLE IF EXISTS {}").format(db.sql.Identifier(name)))
    for statement in TABLES_SQL:
        conn.execute(statement.format(p=prefix, seed=int(seed) % 100000, n_wide=n_wide, n_hot=n_hot, n_doc=n_doc))
    out = []
    for name in names:
        ident = db.sql.Identifier(name)
        # a read sets the hint bits and prunes HOT chains on pages that need it (redirects appear), VACUUM leaves
        # the visibility map set; a second round of changes after it leaves dead tuples behind
        conn.execute(db.sql.SQL("SELECT count(*) FROM (SELECT md5(t::text) FROM {} t) s").format(ident))
    # VACUUM, as autovacuum would, so no index entry is left pointing at a deleted row (an entry into a destroyed
    # page cannot tell a dead tuple from a live one); then HOT updates only (no new index entries) leave chains with
    # dead members behind
    conn.execute(f"DELETE FROM {prefix}wide WHERE id % 101 = 0")
    for name in names:
        conn.execute(db.sql.SQL("VACUUM {}").format(db.sql.Identifier(name)))
    conn.execute(f"UPDATE {prefix}hot SET n = n + 1 WHERE id % 7 = 0")
    for name in names:
        ident = db.sql.Identifier(name)
        conn.execute(db.sql.SQL("SELECT count(*) FROM (SELECT md5(t::text) FROM {} t) s").format(ident))
        oid, _ = catalog.resolve_relation(conn, name)
        rels = catalog.relatives(conn, [oid])
        toast = [r for r in rels if r.role == "toast"]
        catalog.read_sizes(conn, toast)
        indexes = tuple(r.regclass for r in sorted((r for r in rels if r.role == "index"), key=lambda r: r.oid))
        count = conn.execute(db.sql.SQL("SELECT count(*) FROM {}").format(ident)).fetchone()
        short = {"wide": "t", "hot": "note", "doc": "tag"}[name.removeprefix(prefix)]
        out.append(Table(name, int(count[0]) if count else 0, any(t.size > 0 for t in toast), indexes, short))
    conn.execute("CHECKPOINT")
    return out


# ---------------------------------------------------------------------------------------------- choosing


def _nblocks(conn: Any, name: str) -> int:
    row = conn.execute("SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int", (name,)).fetchone()
    return int(row[0]) if row else 0


def _normal_items(conn: Any, table: str, block: int) -> list[tuple[int, int, int]]:
    """(lp, t_infomask, t_infomask2) of the live-looking tuples of a block (pageinspect, raw page)."""
    rows = conn.execute(
        "SELECT lp, t_infomask, t_infomask2 FROM heap_page_items(get_raw_page(%s, %s::int)) "
        "WHERE lp_flags = 1 AND t_xmax = 0 ORDER BY lp",
        (table, block),
    ).fetchall()
    return [(int(a), int(b), int(c)) for a, b, c in rows]


def pick(conn: Any, table: Table, rng: random.Random, count: int, kinds: tuple[str, ...] = KINDS) -> list[Damage]:
    """``count`` damages of different kinds for ``table``, each on a block of its own (never block 0 of a btree)."""
    nblocks = _nblocks(conn, table.name)
    usable = [k for k in kinds if (k != "toast" or table.toast) and (k != "btree" or table.indexes)]
    if nblocks < 4:
        usable = [
            k for k in usable if k in ("item-id", "xmin", "multixact", "tuple-header", "varlena", "toast", "btree")
        ]
    chosen = rng.sample(usable, min(count, len(usable)))
    free = list(range(nblocks))
    rng.shuffle(free)
    used: set[int] = set()
    out: list[Damage] = []

    def block() -> int | None:
        while free:
            b = free.pop()
            if b not in used:
                used.add(b)
                return b
        return None

    for kind in chosen:
        req: dict[str, Any] = {}
        then = None
        blk: int | None = None
        if kind == "header":
            blk = block()
            req = {"mode": "header", "field": "random", "block": blk}
        elif kind == "item-ids":
            blk = block()
            req = {"mode": "item-ids", "block": blk}
        elif kind == "item-id":
            # a few line pointers of one page: offsets past the page, flags turned dead, redirect or unused
            blk = block()
            req = {"mode": "item-id", "field": "random", "block": blk, "count": rng.randint(2, 5)}
        elif kind == "zero":
            blk = block()
            req = {"mode": "zero", "block": blk}
        elif kind in ("torn", "misdirected"):
            blk, src = block(), block()
            if blk is None or src is None:
                continue
            req = {"mode": kind, "block": blk, "source_block": src}
        elif kind == "xmin":
            blk = block()
            req = {"mode": "tuple-header", "field": "t_xmin", "value": 3000000000, "clear_hints": True, "block": blk}
        elif kind == "tuple-header":
            blk = block()
            req = {"mode": "tuple-header", "field": rng.choice(["random", "t_hoff", "t_infomask2"]), "block": blk}
        elif kind == "varlena":
            blk = block()
            # the longest a 1-byte header allows, past the end of these short tuples: a random length that still
            # fits would change the value silently (no tool sees that; the runs assert no value comes back wrong)
            if table.short_text is None:
                continue
            req = {"mode": "tuple-data", "field": "varlena", "column": table.short_text, "value": 127, "block": blk}
        elif kind == "multixact":
            # a MultiXact xmax that never existed, on a tuple whose data is intact (heap_force_freeze keeps it)
            blk = block()
            items = _normal_items(conn, table.name, blk) if blk is not None else []
            if not items:
                continue
            lp, mask, _ = rng.choice(items)
            mask = (mask | HEAP_XMAX_IS_MULTI | HEAP_XMAX_KEYSHR_LOCK) & ~(HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED)
            value = rng.choice([rng.randrange(1_000_000, 50_000_000), rng.randrange(3_000_000_000, 4_000_000_000)])
            req = {"mode": "tuple-header", "field": "t_xmax", "value": value, "block": blk, "item": lp}
            then = {"mode": "tuple-header", "field": "t_infomask", "value": mask, "block": blk, "item": lp}
        elif kind == "toast":
            req = {"mode": "toast", "field": rng.choice(["chunk_seq", "chunk_size", "missing", "chunk_id"])}
        elif kind == "btree":
            req = {"mode": "btree", "field": "item", "index": rng.choice(table.indexes)}
        if req.get("block", 0) is None:
            continue
        out.append(Damage(kind, table.name, blk, req, then))
    return out


# ---------------------------------------------------------------------------------------------- damaging


def damage(
    dsn: str,
    damages: list[Damage],
    seed: int,
    manifest_dir: Path,
    keep_checksum_valid: bool = False,
) -> ChaosRun:
    """Apply ``damages`` through the simulator (one manifest each, in ``manifest_dir``)."""
    manifest_dir.mkdir(parents=True, exist_ok=True)
    out = ChaosRun(seed, damages)
    for i, d in enumerate(damages):
        for j, req in enumerate([d.request, *([d.then] if d.then else [])]):
            fields = dict(req)
            request = SimulateRequest(
                dsn=dsn,
                table=d.table,
                seed=seed * 1000 + i,
                manifest=manifest_dir / f"chaos-{seed}-{i:02d}-{j}.json",
                keep_checksum_valid=keep_checksum_valid,
                **fields,
            )
            out.manifests.append(run(request).manifest)
    return out


def chaos(
    conn: Any,
    dsn: str,
    tables: list[Table],
    seed: int,
    manifest_dir: Path,
    per_table: tuple[int, int] = (3, 6),
    kinds: tuple[str, ...] = KINDS,
) -> ChaosRun:
    """Pick and apply the damages of one seed: between ``per_table`` damages of different kinds on each table;
    with data checksums, a coin decides whether the damaged pages keep a valid checksum."""
    rng = random.Random(seed)
    picked: list[Damage] = []
    for t in tables:
        picked += pick(conn, t, rng, rng.randint(*per_table), kinds)
    keep = rng.random() < 0.5
    return damage(dsn, picked, seed, manifest_dir, keep_checksum_valid=keep)
