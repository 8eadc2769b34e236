"""The rows PostgreSQL's statistics functions return (contrib/pgstattuple), made from the figures the core counted:
their names, their arithmetic and their rounding (two decimals, NaN where PostgreSQL prints NaN)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgsurgeon.boundary import BtreeFigures, GinFigures, HashFigures, TupleFigures


def pct(part: int, whole: int) -> float:
    """pgstattuple's percentage: printed with two decimals (``%.2f``), 0 for an empty relation."""
    return round(100.0 * part / whole, 2) if whole else 0.0


def pgstattuple_row(t: TupleFigures, table_len: int) -> dict[str, int | float]:
    """The row ``pgstattuple(rel)`` returns, from the counted figures."""
    return {
        "table_len": table_len,
        "tuple_count": t["tuple_count"],
        "tuple_len": t["tuple_len"],
        "tuple_percent": pct(t["tuple_len"], table_len),
        "dead_tuple_count": t["dead_tuple_count"],
        "dead_tuple_len": t["dead_tuple_len"],
        "dead_tuple_percent": pct(t["dead_tuple_len"], table_len),
        "free_space": t["free_space"],
        "free_percent": pct(t["free_space"], table_len),
    }


def pgstatindex_row(b: BtreeFigures, block_size: int) -> dict[str, int | float]:
    """The row ``pgstatindex(index)`` returns: the metapage is counted in index_size, an all-zero page as an
    internal one (pgstatindex.c), NaN where there are no leaves."""
    pages = 1 + b["leaf_pages"] + b["internal_pages"] + b["deleted_pages"] + b["empty_pages"]
    density = 100.0 - b["leaf_free_space"] / b["max_avail"] * 100.0 if b["max_avail"] else math.nan
    frag = b["fragments"] / b["leaf_pages"] * 100.0 if b["leaf_pages"] else math.nan
    return {
        "version": b["version"],
        "tree_level": b["tree_level"],
        "index_size": pages * block_size,
        "root_block_no": b["root_block_no"],
        "internal_pages": b["internal_pages"],
        "leaf_pages": b["leaf_pages"],
        "empty_pages": b["empty_pages"],
        "deleted_pages": b["deleted_pages"],
        "avg_leaf_density": round(density, 2),
        "leaf_fragmentation": round(frag, 2),
    }


def pgstathashindex_row(h: HashFigures, blocks: int) -> dict[str, int | float]:
    """The row ``pgstathashindex(index)`` returns, for an index of ``blocks`` blocks: unused pages count as free
    space of the metapage's page size, and free_percent is of the space of every page but the metapage and the
    bitmap pages, a float8 left unrounded (pgstatindex.c), computed in the same order as the server's."""
    free_space = h["free_space"] + h["unused_pages"] * h["space_per_page"]
    total_space = (blocks - (h["bitmap_pages"] + 1)) * h["space_per_page"]
    return {
        "version": h["version"],
        "bucket_pages": h["bucket_pages"],
        "overflow_pages": h["overflow_pages"],
        "bitmap_pages": h["bitmap_pages"],
        "unused_pages": h["unused_pages"],
        "live_items": h["live_items"],
        "dead_items": h["dead_items"],
        "free_percent": 100.0 * free_space / total_space if total_space > 0 else 0.0,
    }


def pgstatginindex_row(g: GinFigures) -> dict[str, int | float]:
    """The row ``pgstatginindex(index)`` returns: the metapage's version and pending list."""
    return {"version": g["version"], "pending_pages": g["pending_pages"], "pending_tuples": g["pending_tuples"]}


def size_text(n: int) -> str:
    """A size as the text report prints it: bytes up to 10 kB, then kB, MB, … (whole units, rounded down)."""
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 10240 or unit == "TB":
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TB"  # pragma: no cover - the loop returns
