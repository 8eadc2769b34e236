"""The records of a diagnose run: the request, the outcome, and what the run knows of each relation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import core
from pgsurgeon.catalog.relation import PAGE_KIND, Relation
from pgsurgeon.session import Limits, ServerError

MAX_CROSS_FINDINGS = 50
# The index kinds whose checks across pages (scan's relation-wide ones) run on pages read through the server too;
# a btree's links are bt_index_check's.
CROSS_PAGE_KINDS = frozenset({"gin", "gist", "spgist", "hash", "brin"})


@dataclass
class DiagnoseRequest:
    dsn: str
    tables: list[str] = field(default_factory=list)
    jobs: int = 1
    heapallindexed: bool = False
    use_files: bool = True
    """Read refused blocks from the relation files and merge the offline scan, when the data directory is here."""
    pgdata: Path | None = None
    """Where the server's data directory is mounted on this host, when not at the path the server reports."""
    limits: Limits = field(default_factory=Limits)
    raw_batch: int = 64
    amcheck_batch: int = 4096
    max_crashes: int = 1
    on_progress: Callable[[str], None] | None = None


@dataclass
class DiagnoseOutcome:
    server: dict[str, Any]
    relations: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    summary: dict[str, Any]


@dataclass
class Checked:
    """A relation a run checks: the catalog's relation (with its role beside the table asked about, its file and
    sizes) and what the run learns of it."""

    relation: Relation
    refused: dict[int, ServerError] = field(default_factory=dict)
    suspect: set[int] = field(default_factory=set)
    unchecked: set[int] = field(default_factory=set)
    """Blocks not read (lock or statement timeout): amcheck skips them too."""
    locked: ServerError | None = None
    """The lock_timeout error, once another session's lock kept diagnose out of this relation."""
    lines: core.LineMap | None = None
    """A heap's line pointers, for the index batches (pages read through the server)."""
    cross: core.CrossPages | None = None
    """An index's pages read through the server, for the checks across them (GIN, GiST, SP-GiST, hash, BRIN)."""
    zero: set[int] = field(default_factory=set)
    candidates: list[Crossref] = field(default_factory=list)
    """An index's entries whose row seemed missing, to re-read through the server."""
    toast_scan: list[dict[str, Any]] = field(default_factory=list)
    toast_checked: bool = False
    """verify_heapam followed this table's TOAST pointers."""
    """A table's TOAST findings from the files: kept only when the server's own TOAST check did not run."""
    pages_read: int = 0
    amcheck: str = "not run"
    notes: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        """Segment 0 of its main fork, relative to the data directory (a run checks relations with storage only)."""
        assert self.relation.filepath is not None
        return self.relation.filepath

    @property
    def kind(self) -> str | None:
        """The page kind the core checks its pages as (other access methods' pages get the generic checks)."""
        return PAGE_KIND.get(self.relation.amname or "")

    def observe(self, text: str) -> None:
        if text not in self.observed and len(self.observed) < 10:
            self.observed.append(text)


class NotChecked(Exception):
    """A statement gave no answer about the pages (lock_timeout or statement_timeout fired)."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class Crossref:
    """An index entry whose table line pointer is missing: (index block, index item, table block, table item)."""

    index_block: int
    index_item: int
    heap_block: int
    heap_item: int
    past_end: bool
