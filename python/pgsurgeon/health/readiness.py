"""Checksum readiness (the seeds' checksums article): before ``pg_checksums --enable``, or an upgrade to 18 whose
initdb enables checksums by default, whether stamping checksums now would hide damage for good. pg_checksums
computes a valid checksum for whatever bytes a page holds: a damaged page then passes every later check. So the
pages are checked first (``health --check``), and the answer is "safe to enable" or "repair these first", with how
long pg_checksums will take at the rate this run read the pages."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgsurgeon.health import HealthOutcome

RELATION_DIRS = ("base", "global", "pg_tblspc")
"""Where pg_checksums reads (and with --enable rewrites) relation files."""


@dataclass
class Readiness:
    enabled: bool
    """Data checksums are on already."""
    verdict: str
    """on, safe, repair-first, unknown (the pages were not checked)"""
    damaged_pages: int
    cluster_bytes: int
    """The relation files' bytes, for the estimate (0 with checksums on: nothing to estimate)."""
    seconds_estimate: float | None
    """pg_checksums --enable: reading and rewriting every relation file, at this run's read rate."""

    def words(self) -> str:
        if self.enabled:
            return "data checksums are on"
        when = ""
        if self.seconds_estimate is not None:
            when = (
                f" (pg_checksums --enable: about {self.seconds_estimate:.0f} s to rewrite "
                f"{self.cluster_bytes / 1e9:.1f} GB at this run's read rate, with the server stopped)"
            )
        if self.verdict == "safe":
            return f"data checksums are off; safe to enable: no damaged page was found{when}"
        if self.verdict == "repair-first":
            return (
                f"data checksums are off; repair first: {self.damaged_pages} damaged page(s) would get a valid "
                f"checksum from pg_checksums --enable and pass every later check{when}"
            )
        return f"data checksums are off; run health --check to know whether enabling them would hide damage{when}"


def readiness(outcome: HealthOutcome) -> Readiness:
    scan = outcome.scan
    enabled = int(scan.control["data_checksum_version"]) > 0
    damaged = len({(f.get("path"), f.get("block")) for f in scan.findings if f["severity"] == "error"})
    # the estimate is only said with checksums off: walking every relation file for it took a twentieth of the run
    total = 0 if enabled else cluster_bytes(scan.pgdata)
    read, secs = scan.summary["bytes"], scan.summary["seconds"]
    # --enable reads each page and writes it back: twice the bytes of a read at the measured rate
    estimate = 2 * total / (read / secs) if read and secs > 0 and total else None
    if enabled:
        verdict = "on"
    elif not outcome.checked:
        verdict = "unknown"
    else:
        verdict = "repair-first" if damaged else "safe"
    return Readiness(enabled, verdict, damaged, total, estimate)


def cluster_bytes(pgdata: Path) -> int:
    """The relation files' bytes (tablespaces followed through their links); 0 for a tar backup."""
    return sum(_tree_bytes(str(pgdata / sub)) for sub in RELATION_DIRS)


def _tree_bytes(path: str) -> int:
    """Bytes of the files under ``path``, links followed. Through scandir's entries, not a Path per file: an
    empty cluster has ~3,000 files, and os.walk with a Path each took ~20 ms of every health run."""
    total = 0
    try:
        entries = os.scandir(path)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            try:
                total += _tree_bytes(entry.path) if entry.is_dir() else entry.stat().st_size
            except OSError:
                continue
    return total
