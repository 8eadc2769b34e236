"""salvage's block planning works on ranges: its cost and memory do not grow with the table."""

from __future__ import annotations

import tracemalloc

from pgsurgeon.salvage.engine import _complement, plan_chunks


def test_chunks_avoid_skipped_and_done_blocks() -> None:
    assert plan_chunks(10, [(3, 4)], [], 4) == [(0, 3), (4, 8), (8, 10)]
    assert plan_chunks(10, [], [(0, 5)], 3) == [(5, 8), (8, 10)]
    assert plan_chunks(10, [(0, 10)], [], 3) == []
    assert _complement(10, [(2, 3), (5, 12)]) == [(0, 2), (3, 5)]


def test_planning_a_huge_table_takes_no_memory() -> None:
    tracemalloc.start()
    try:
        work = plan_chunks(1 << 31, [(5, 6)], [(0, 1)], 1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert work[0] == (1, 5) and work[-1][1] == 1 << 31
    assert peak < 5_000_000
