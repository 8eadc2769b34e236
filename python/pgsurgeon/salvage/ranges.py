"""Block ranges as half-open ``(first, end)`` pairs: merging, the complement, and the SQL phase's chunks. Works on
ranges, not block sets, so its cost does not grow with the table."""

from __future__ import annotations


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _complement(nblocks: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges of [0, nblocks) outside ``covered`` (merged, sorted)."""
    out: list[tuple[int, int]] = []
    at = 0
    for a, b in covered:
        if a > at:
            out.append((at, min(a, nblocks)))
        at = max(at, b)
    if at < nblocks:
        out.append((at, nblocks))
    return [(a, b) for a, b in out if a < b]


def plan_chunks(
    nblocks: int, skip: list[tuple[int, int]], done: list[tuple[int, int]], chunk: int
) -> list[tuple[int, int]]:
    """Ranges of blocks still to read through SQL: everything not skipped and not done, cut into chunks that do not
    cross a skipped block. Works on ranges: its cost does not grow with the table."""
    out: list[tuple[int, int]] = []
    for a, b in _complement(nblocks, _merge(skip + done)):
        out.extend((x, min(x + chunk, b)) for x in range(a, b, chunk))
    return out
