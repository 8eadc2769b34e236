"""Issue 28's case as a fixture: a ``shop``-like database with data checksums on (orders with a primary key, a
foreign key and a secondary index; TOAST-heavy documents), damaged by hand while the server is stopped, as a DBA
with dd would:

* one orders page zeroed;
* 16 line pointers of another orders page overwritten with random bytes;
* 4 bytes of a TOAST page inverted;
* the secondary index cut to fewer blocks than it has.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from fix_pg import MakeLab
from pgsurgeon.lab import LabCluster

BLOCK = 8192


@dataclass
class Shop:
    cluster: LabCluster
    orders: Path
    """The orders table's file."""
    zeroed: int
    garbled: int
    keys: list[int]
    """The ids of the rows on the zeroed page, before the damage."""
    index_blocks: int
    """How many blocks the secondary index had."""


def shop(
    make_lab: MakeLab, version: str, rows: int = 30_000, *, toast: bool = False, index: bool = False, wal: bool = False
) -> Shop:
    """The damaged cluster, stopped. ``toast`` and ``index`` add the TOAST and the index damage; ``wal``: WAL
    enough for pg_basebackup."""
    conf: dict[str, str | int | bool] = {"wal_level": "replica", "max_wal_senders": 4} if wal else {}
    cluster = make_lab(version, checksums=True, extra_conf=conf)
    with cluster.connect() as conn:
        for ext in ("amcheck", "pageinspect", "pg_surgery"):
            conn.execute(f"CREATE EXTENSION {ext}")
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, 500) g")
        conn.execute(
            "CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers, amount numeric, "
            "note text, created timestamptz DEFAULT now())"
        )
        conn.execute(
            "INSERT INTO orders SELECT g, 1 + g % 500, g * 1.5, md5(g::text), now() "
            f"FROM generate_series(1, {int(rows)}) g"
        )
        conn.execute("CREATE INDEX orders_customer_id_idx ON orders (customer_id)")
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("ALTER TABLE documents ALTER body SET STORAGE EXTERNAL")  # out of line, uncompressed
        conn.execute("INSERT INTO documents SELECT g, repeat(md5(g::text), 200) FROM generate_series(1, 300) g")
        conn.execute("VACUUM ANALYZE")  # the visibility map marks every page all-visible
        conn.execute("CHECKPOINT")
        (nblocks,) = conn.execute("SELECT pg_relation_size('orders') / 8192").fetchone() or (0,)
        zeroed, garbled = nblocks // 3, nblocks * 2 // 3
        keys = [
            int(k)
            for (k,) in conn.execute(
                "SELECT id FROM orders WHERE (ctid::text::point)[0] = %s ORDER BY id", (zeroed,)
            ).fetchall()
        ]
        paths = {
            name: cluster.pgdata / str(conn.execute("SELECT pg_relation_filepath(%s::regclass)", (name,)).fetchone()[0])  # type: ignore[index]
            for name in ("orders", "orders_customer_id_idx")
        }
        (toast_rel,) = conn.execute(
            "SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 'documents'"
        ).fetchone() or ("",)
        (index_blocks,) = conn.execute("SELECT pg_relation_size('orders_customer_id_idx') / 8192").fetchone() or (0,)
    cluster.stop()
    rng = random.Random(28)
    with paths["orders"].open("r+b") as fh:
        fh.seek(zeroed * BLOCK)
        fh.write(bytes(BLOCK))
        fh.seek(garbled * BLOCK + 24 + 20 * 4)  # line pointers 21..36
        fh.write(bytes(rng.randrange(256) for _ in range(16 * 4)))
    if toast:
        with (cluster.pgdata / str(toast_rel)).open("r+b") as fh:
            fh.seek(3 * BLOCK + 4000)
            old = fh.read(4)
            fh.seek(3 * BLOCK + 4000)
            fh.write(bytes(b ^ 0xFF for b in old))
    if index:
        with paths["orders_customer_id_idx"].open("r+b") as fh:
            fh.truncate(index_blocks // 2 * BLOCK)
    return Shop(cluster, paths["orders"], zeroed, garbled, keys, index_blocks)
