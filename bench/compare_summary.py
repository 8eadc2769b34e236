"""The ratios of two builds run by bench/compare.sh: each pgsurgeon time over its baseline's median across both
builds' runs (the baseline is the same program for both, so pooling its runs is its best estimate), as a
Markdown table for docs/benchmarks.md.

    python bench/compare_summary.py OUT
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

# (ratio, script, the baseline's line, pgsurgeon's line): the first number after each label is its seconds
ROWS = [
    ("diagnose / pg_amcheck -j 2", "diagnose", r"^pg_amcheck \(heap \+ btree\)", r"^pgsurgeon diagnose "),
    (
        "diagnose --heapallindexed / pg_amcheck --heapallindexed",
        "diagnose",
        r"^pg_amcheck --heapallindexed",
        r"^pgsurgeon diagnose --heapallindexed",
    ),
    ("scan -j 1 / pg_amcheck -j 1", "scan", r"pg_amcheck \(heap\+btree\) -j 1", r"pgsurgeon scan -j 1"),
    ("scan -j 2 / pg_amcheck -j 2", "scan", r"pg_amcheck \(heap\+btree\) -j 2", r"pgsurgeon scan -j 2"),
    ("salvage --out / server COPY", "salvage", r"server  COPY pgbench_accounts TO 'file'", r"salvage --out DIR -j 2"),
    ("salvage --into / CREATE TABLE AS", "salvage", r"CREATE TABLE … AS SELECT \* FROM", r"salvage --into NEW -j 2"),
    ("salvage --carve-all / server COPY", "carve", r"server   COPY pgbench_accounts", r"--carve-all --out -j 2"),
    ("unload / server COPY", "unload", r"server   COPY t TO 'file', every table", r"unload PGDATA --out -j 2"),
]


def seconds(out: Path, script: str, label: str, build: str) -> list[float]:
    found = []
    for path in sorted(out.glob(f"{script}-{build}-*.txt")):
        m = re.search(label + r"[^\d]*?([\d.]+)(?: s)?(?:\s|$)", path.read_text(encoding="utf-8"), re.M)
        if m:
            found.append(float(m.group(1)))
    return found


def main() -> int:
    out = Path(sys.argv[1])
    print("| ratio | baseline, median of all runs (range) | old | new | new/old |\n|---|---|---|---|---|")
    for name, script, base_rx, own_rx in ROWS:
        base = seconds(out, script, base_rx, "old") + seconds(out, script, base_rx, "new")
        old, new = seconds(out, script, own_rx, "old"), seconds(out, script, own_rx, "new")
        if not (base and old and new):
            print(f"| {name} | missing | | | |")
            continue
        b = statistics.median(base)
        ro, rn = statistics.median(old) / b, statistics.median(new) / b
        print(f"| {name} | {b:.2f} s ({min(base):.2f} to {max(base):.2f}) | {ro:.2f}x | {rn:.2f}x | {rn / ro:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
