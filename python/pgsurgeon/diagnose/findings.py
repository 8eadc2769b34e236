"""Diagnose findings: the scan's finding model (code, area, severity, path, relfilenode, fork, block, item, message,
pg_error, remedy, relation, database) plus ``observed_error`` (what the server said), ``source`` and ``attnum``.

Every finding's area, severity, server error and remedy come from the core's catalogue (``describe()`` in
crates/core/src/finding/mod.rs), including the codes only diagnose produces (``server.*``, ``amcheck.*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon import findings as _record
from pgsurgeon.catalog.relation import Relation

if TYPE_CHECKING:
    from pgsurgeon.boundary import Finding

FINDING_KEYS = _record.FIELDS
"""The keys of a diagnose finding: the one record of pgsurgeon.findings."""

# Where a finding comes from.
SOURCE_PAGE = "page"
"""The page as the server's buffer manager returned it (get_raw_page), decoded by the core."""
SOURCE_FILE = "file"
"""The page read from the relation file, for a block the server refuses to read."""
SOURCE_AMCHECK = "amcheck"
SOURCE_SERVER = "server"
"""An ERROR the server raised (or a backend crash) while diagnose read or checked the block."""
SOURCE_SCAN = "scan"
"""The offline scan of the data directory (only when it is on this host)."""
SOURCE_CROSS = "cross-check"
"""Index entries compared with the table's line pointers."""


@dataclass(frozen=True)
class CodeInfo:
    area: str
    severity: str
    pg_error: str
    remedy: str


def describe(code: str) -> CodeInfo:
    """The catalogue entry of ``code``: one catalogue for scan, inspect and diagnose (crates/core/src/finding/)."""
    return CodeInfo(*core.describe_code(code))


def make(
    code: str,
    rel: Relation,
    block: int | None,
    item: int | None,
    message: str,
    *,
    source: str,
    observed_error: str | None = None,
    attnum: int | None = None,
    area: str | None = None,
    fork: str = "main",
) -> dict[str, Any]:
    info = describe(code)
    return {
        "code": code,
        "area": area or info.area,
        "severity": info.severity,
        "path": rel.filepath,
        "relfilenode": rel.relfilenode,
        "fork": fork,
        "block": block,
        "item": item,
        "message": message,
        "pg_error": info.pg_error,
        "remedy": info.remedy,
        "relation": rel.regclass,
        "database": rel.database,
        "observed_error": observed_error,
        "source": source,
        "attnum": attnum,
    }


def from_core(f: Finding, rel: Relation, *, source: str, observed_error: str | None = None) -> dict[str, Any]:
    """A finding of core.inspect_page (no file context) in the diagnose model."""
    return {
        "code": f["code"],
        "area": f["area"],
        "severity": f["severity"],
        "path": rel.filepath,
        "relfilenode": rel.relfilenode,
        "fork": "main",
        "block": f["block"],
        "item": f["item"],
        "message": f["message"],
        "pg_error": f["pg_error"],
        "remedy": f["remedy"],
        "relation": rel.regclass,
        "database": rel.database,
        "observed_error": observed_error,
        "source": source,
        "attnum": None,
    }


def sort_key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (
        f.get("relation") or "",
        f.get("fork") or "",
        -1 if f["block"] is None else f["block"],
        -1 if f["item"] is None else f["item"],
        f["code"],
    )
