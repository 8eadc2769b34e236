"""The rows PostgreSQL's statistics functions return (contrib/pgstattuple), made from the figures the core counted:
their names, their arithmetic and their rounding (two decimals, NaN where PostgreSQL prints NaN)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgsurgeon.boundary import BtreeFigures, TupleFigures


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


def size_text(n: int) -> str:
    """A size as the text report prints it: bytes up to 10 kB, then kB, MB, … (whole units, rounded down)."""
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 10240 or unit == "TB":
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TB"  # pragma: no cover - the loop returns
