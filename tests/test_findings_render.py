"""Findings as people read them: one entry per damaged structure, the root cause first and its consequences
grouped under it, on real pages of a real table (damaged in memory, never on disk)."""

from __future__ import annotations

import random

from fix_pg import exec_sql
from pgsurgeon import core
from pgsurgeon.lab import LabCluster
from pgsurgeon.render.findings import root_causes


def real_page(pg: LabCluster) -> bytes:
    exec_sql(pg, "DROP TABLE IF EXISTS rc_t; CREATE TABLE rc_t AS SELECT g AS id, md5(g::text) AS v "
             "FROM generate_series(1, 300) g")  # fmt: skip
    exec_sql(pg, "CHECKPOINT")
    path = exec_sql(pg, "SELECT pg_relation_filepath('rc_t')")[0][0]
    return (pg.pgdata / path).read_bytes()[:8192]


def findings(page: bytes) -> list[dict[str, object]]:
    out = core.inspect_page(page, 0, checksums=False)["findings"]
    for f in out:
        f["block"] = 0
    return out


def test_a_destroyed_header_is_one_structure_with_its_consequences(pg: LabCluster) -> None:
    page = bytearray(real_page(pg))
    assert not [f for f in findings(bytes(page)) if f["severity"] == "error"]
    rng = random.Random(5)
    page[12:24] = bytes(rng.getrandbits(8) for _ in range(12))  # pd_lower, pd_upper, pd_special, pd_pagesize
    fs = findings(bytes(page))
    assert len(fs) > 1
    causes = root_causes(fs)
    assert len(causes) == 1
    root, consequences = causes[0]
    assert root["area"] == "page_header" and len(consequences) == len(fs) - 1


def test_separate_tuples_stay_separate_and_a_garbage_item_array_is_the_cause(pg: LabCluster) -> None:
    page = bytearray(real_page(pg))
    # two tuples' t_hoff made impossible: two damaged structures on one page
    lower = int.from_bytes(page[12:14], "little")
    items = [(24 + 4 * i) for i in range((lower - 24) // 4)]
    for lp in (items[2], items[7]):
        off = int.from_bytes(page[lp : lp + 4], "little") & 0x7FFF
        page[off + 22] = 3  # t_hoff below the header's own size
    fs = findings(bytes(page))
    causes = root_causes(fs)
    assert {c[0]["item"] for c in causes if c[0]["area"] == "tuple_header"} >= {3, 8}
    # now the item-ID array itself overwritten: the array is the cause, the tuples its consequences
    page = bytearray(real_page(pg))
    rng = random.Random(9)
    page[24 : 24 + 4 * 20] = bytes(rng.getrandbits(8) for _ in range(80))
    causes = root_causes(findings(bytes(page)))
    assert causes[0][0]["area"] in ("line_pointer", "page_header"), causes[0][0]
