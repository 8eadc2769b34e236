"""heapallindexed from the files: the core checks, beside amcheck, that every live row of a sound table is in its
btree indexes (crates/core/src/checks/diagnose/allindexed/); what it doubts goes to the server."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.datadir import segments_of
from pgsurgeon.diagnose.context import Diagnosis
from pgsurgeon.diagnose.model import Checked
from pgsurgeon.diagnose.server import runner

if TYPE_CHECKING:
    from pgsurgeon.boundary import AllIndexedConfig


def start_allindexed(d: Diagnosis, tables: list[Checked], bloom_bytes: int) -> None:
    """With --heapallindexed and the files here: check in the core, beside amcheck, that every live row of each
    sound table is in its btree indexes (amcheck's Bloom filter check, reading the files). Proof ends there;
    any doubt (a row not found, a page written since the last checkpoint, a value in TOAST) sends the index to
    bt_index_check with heapallindexed, which decides. ``bloom_bytes``: one pass's Bloom filters, all indexes
    of a table."""
    if not d.req.heapallindexed or d.pgdata is None or d.geometry is None:
        return
    sound = {t.relation.oid: t for t in tables if t.locked is None and not d.has_errors(t) and not t.refused}
    candidates = [
        r
        for r in d.rels
        if r.relation.is_btree and r.relation.role == "index" and r.relation.usable and r.relation.table_oid in sound
    ]
    if not candidates:
        return
    rows = catalog.allindexed_candidates(runner(d.main), [r.relation.oid for r in candidates])
    plans: dict[int, list[tuple[Checked, list[int], list[Any], list[Any], int]]] = {}
    by_oid = {r.relation.oid: r for r in candidates}
    for index_oid, table_oid, reltuples, keys, index_attrs, table_attrs in rows:
        plans.setdefault(int(table_oid), []).append(
            (by_oid[int(index_oid)], [int(k) for k in keys], index_attrs, table_attrs, int(reltuples))
        )
    if not plans:
        return
    from pgsurgeon.scan import parse_lsn

    redo = parse_lsn(str(core.read_control(d.pgdata)["redo"]))
    pool = d.allindexed_pool = ThreadPoolExecutor(1, thread_name_prefix="pgsurgeon-allindexed")
    for table_oid, plan in plans.items():
        future = pool.submit(_allindexed, d, sound[table_oid], plan, redo, bloom_bytes)
        d.allindexed.update((index.relation.oid, future) for index, *_rest in plan)


def _allindexed(
    d: Diagnosis,
    heap: Checked,
    plan: list[tuple[Checked, list[int], list[Any], list[Any], int]],
    redo: int,
    bloom_bytes: int,
) -> dict[int, tuple[bool, str]]:
    assert d.geometry is not None and d.pgdata is not None
    table_attrs = max((p[3] for p in plan), key=len)
    config: AllIndexedConfig = {
        "heap": {
            "name": heap.relation.regclass,
            "files": segments_of(d.pgdata / heap.path),
            "nblocks": heap.relation.nblocks,
        },
        "heap_attrs": table_attrs,
        "indexes": [
            {
                "name": index.relation.regclass,
                "files": segments_of(d.pgdata / index.path),
                "nblocks": index.relation.nblocks,
                "keys": keys,
                "attrs": attrs,
            }
            for index, keys, attrs, _t, _n in plan
        ],
        "expected_rows": max(p[4] for p in plan),
        "bloom_bytes": bloom_bytes,
        "seed": int.from_bytes(os.urandom(8), "little"),
        "live_redo_lsn": redo,
        "jobs": d.req.jobs,
        "blcksz": d.geometry.blcksz,
        "relseg_size": d.geometry.relseg_size,
    }
    try:
        res = core.all_indexed(config)
    except (OSError, ValueError) as exc:
        why = f"heapallindexed through the server: the files could not be read here ({str(exc).splitlines()[0]})"
        return {index.relation.oid: (False, why) for index, *_r in plan}
    out: dict[int, tuple[bool, str]] = {}
    doubts = [
        (res["newer_pages"], "table page(s) written since the last checkpoint"),
        (res["unreadable_pages"], "table page(s) not readable from the files"),
        (res["orphans"], "heap-only tuple(s) outside any HOT chain"),
    ]
    for (index, *_r), verdict, proven in zip(plan, res["indexes"], res["proven"], strict=True):
        if proven:
            out[index.relation.oid] = (
                True,
                f"heapallindexed from the files: all {res['rows']} live rows found"
                + (f" ({res['unhinted']} of them without hint bits)" if res["unhinted"] else "")
                + f" among {verdict['entries']} index entries (Bloom filter {verdict['bloom_bytes'] // 1024} kB, "
                f"{verdict['false_positive_rate']:.2%} false positives expected)",
            )
            continue
        mine = [
            (verdict["missing"], "live row(s) not found in the index"),
            (verdict["toasted"], "row(s) with an indexed value in TOAST"),
            (verdict["short_rows"], "row(s) older than an indexed column (its value is the default)"),
            (verdict["newer_pages"], "index page(s) written since the last checkpoint"),
            (verdict["unreadable_pages"] + verdict["unreadable_entries"], "index page(s) or entries not readable"),
        ]
        why = "; ".join(f"{n} {what}" for n, what in [*doubts, *mine] if n)
        out[index.relation.oid] = (False, f"heapallindexed through the server (from the files: {why})")
    return out
