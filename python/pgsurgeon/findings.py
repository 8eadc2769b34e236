"""The one finding record: what scan, inspect, diagnose and repair report about a damaged structure, from the core's
``Finding`` (crates/core/src/finding/mod.rs) to the JSON output, with the same keys everywhere.

The core's finding says what is wrong with a page (code, area, severity, block, item, message, the server's
error and the remedy); the scanner adds the file it is in; Python adds the relation and database it belongs to,
where the finding came from (``source``) and, from diagnose, the server's own words and the column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from pgsurgeon.boundary import ClusterFinding, FileFinding
    from pgsurgeon.catalog.relation import Relation


class Finding(TypedDict):
    code: str
    area: str
    severity: str
    path: str | None
    """The segment file, relative to the data directory."""
    relfilenode: int | None
    fork: str | None
    block: int | None
    """Counted across segments, as server errors count blocks."""
    item: int | None
    message: str
    pg_error: str
    remedy: str
    relation: str | None
    database: str | None
    observed_error: str | None
    """What the server said when it read the damage (diagnose)."""
    source: str
    """Where it was found: scan (the files), page, file, amcheck, server, cross-check (diagnose)."""
    attnum: int | None


FIELDS: tuple[str, ...] = tuple(Finding.__annotations__)
"""The keys of every finding in JSON output, in this order."""

SOURCE_SCAN = "scan"
"""The offline scan of the files."""


def from_file(f: FileFinding, rel: Relation | None) -> Finding:
    """A scanner finding with the relation its file belongs to (None when no catalog named it)."""
    return {
        "code": f["code"],
        "area": f["area"],
        "severity": f["severity"],
        "path": f["path"],
        "relfilenode": f["relfilenode"],
        "fork": f["fork"],
        "block": f["block"],
        "item": f["item"],
        "message": f["message"],
        "pg_error": f["pg_error"],
        "remedy": f["remedy"],
        "relation": rel.qualified if rel is not None else None,
        "database": rel.database if rel is not None else None,
        "observed_error": None,
        "source": SOURCE_SCAN,
        "attnum": None,
    }


def make(code: str, message: str, path: str | None, rel: Relation | None, fork: str | None = None) -> Finding:
    """A finding made outside the core (the catalog against the files), with its code's area, severity, server
    error and remedy from the core's catalogue."""
    from pgsurgeon import core

    area, severity, pg_error, remedy = core.describe_code(code)
    return {
        "code": code,
        "area": area,
        "severity": severity,
        "path": path,
        "relfilenode": None,
        "fork": fork,
        "block": None,
        "item": None,
        "message": message,
        "pg_error": pg_error,
        "remedy": remedy,
        "relation": rel.qualified if rel is not None else None,
        "database": rel.database if rel is not None else None,
        "observed_error": None,
        "source": SOURCE_SCAN,
        "attnum": None,
    }


def from_cluster(f: ClusterFinding) -> Finding:
    """A finding about a file of the cluster's bookkeeping (pg_wal, pg_xact): no relation, no block."""
    return {
        "code": f["code"],
        "area": f["area"],
        "severity": f["severity"],
        "path": f["path"],
        "relfilenode": None,
        "fork": None,
        "block": None,
        "item": None,
        "message": f["message"],
        "pg_error": f["pg_error"],
        "remedy": f["remedy"],
        "relation": None,
        "database": None,
        "observed_error": None,
        "source": SOURCE_SCAN,
        "attnum": None,
    }
