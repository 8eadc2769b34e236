"""Helpers for the corruption simulator tests (tests/test_corrupt*.py).

``CorruptLabs``: one throwaway lab cluster per PostgreSQL version for a whole test module (the tests damage
it and undo the damage between cases; they never touch the session clusters ``pg15``/``pg18``).
``observe``: run a query and classify what the server did: rows, an error, a crashed backend (the
postmaster then restarts every session and runs crash recovery; we wait for it) or a timeout.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from fix_pg import create_test_cluster
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster, run_sql

STATEMENT_TIMEOUT_MS = 3000
_names = itertools.count(1)


class CorruptLabs:
    """Lazily created lab clusters, one per version, destroyed by :meth:`close`."""

    def __init__(self, base: Path, prefix: str) -> None:
        self.base = base
        self.prefix = prefix
        self.labs: dict[str, LabCluster] = {}

    def get(self, version: str) -> LabCluster:
        if version not in self.labs:
            lab = create_test_cluster(self.base, f"{self.prefix}{version}", version)
            self.labs[version] = lab
            lab.start()
        lab = self.labs[version]
        lab.start()  # a failed test may have left it stopped
        wait_ready(lab)
        return lab

    def close(self) -> None:
        for lab in self.labs.values():
            with contextlib.suppress(Exception):
                lab.destroy()


def wait_ready(lab: LabCluster, timeout: float = 90) -> None:
    """Wait until the server accepts connections (after a backend crash it runs crash recovery first)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(lab.dsn(), connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@dataclass
class Outcome:
    kind: str
    """rows, error, crash or timeout."""
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    sqlstate: str | None = None
    message: str = ""
    detail: str | None = None

    def __str__(self) -> str:
        if self.kind == "rows":
            return f"rows {self.rows[:3]}{' …' if len(self.rows) > 3 else ''}"
        return f"{self.kind} {self.sqlstate or ''} {self.message}".strip()


def observe(lab: LabCluster, query: str | Sequence[str], dbname: str = "postgres") -> Outcome:
    """Run ``query`` (statements run in turn; the last one's rows count) and say what the server did."""
    statements = [query] if isinstance(query, str) else list(query)
    try:
        with psycopg.connect(
            lab.dsn(dbname), autocommit=True, options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"
        ) as conn:
            rows: list[tuple[Any, ...]] = []
            for st in statements:
                cur = conn.execute(st)
                rows = cur.fetchall() if cur.description is not None else []
            return Outcome("rows", rows)
    except psycopg.errors.QueryCanceled as exc:
        return Outcome("timeout", sqlstate=exc.sqlstate, message=str(exc).splitlines()[0])
    except psycopg.Error as exc:
        if exc.sqlstate is None:  # the connection broke: the backend died
            wait_ready(lab)
            return Outcome("crash", message=(str(exc).splitlines() or ["connection lost"])[0])
        return Outcome("error", sqlstate=exc.sqlstate, message=str(exc).splitlines()[0], detail=exc.diag.message_detail)


def cli(*args: str) -> tuple[int, str, str]:
    """``pgsurgeon ARGS`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def aborted_insert(lab: LabCluster, table: str, row_id: int) -> int:
    """Insert row ``row_id`` (an int key and one text column) into ``table`` and roll it back: the block it went to
    (a page holding an aborted insert, what a wrongly set visibility map bit hides)."""
    with psycopg.connect(lab.dsn()) as conn:
        row = conn.execute(
            f"INSERT INTO {table} VALUES ({row_id}, 'aborted') RETURNING (ctid::text::point)[0]::int"
        ).fetchone()
        assert row is not None
        conn.rollback()
    return int(row[0])


def sql(lab: LabCluster, *statements: str) -> list[tuple[Any, ...]]:
    """Each statement on its own (own transaction), the last one's rows."""
    rows: list[tuple[Any, ...]] = []
    for st in statements:
        rows = run_sql(lab, st)
    return rows


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


# Tables the tests damage. Each is filled, read once (so every tuple has its hint bits) and checkpointed, so
# the server itself does not rewrite pages afterwards and undo finds exactly what corrupt wrote.
PLAIN = "plain"
"""(id int PRIMARY KEY, a int NOT NULL, b text NOT NULL): 1000 short rows over 6 blocks, no NULLs, no TOAST."""
TOASTY = "toasty"
"""(id int PRIMARY KEY, a int, b text, c text): c NULL except every 10th row, where it is a 3200-byte TOASTed
value (compressed with pglz into two chunks)."""
NULLS = "nulls"
"""(id int, a int, b int, c text): every row has a NULL (null bitmaps)."""


def make_table(lab: LabCluster, kind: str, name: str | None = None) -> str:
    name = name or unique(f"{kind}_")
    if kind == PLAIN:
        sql(
            lab,
            f"CREATE TABLE {name} (id int PRIMARY KEY, a int NOT NULL, b text NOT NULL)",
            f"INSERT INTO {name} SELECT g, g % 7, 'row ' || g FROM generate_series(1, 1000) g",
        )
    elif kind == TOASTY:
        sql(
            lab,
            f"CREATE TABLE {name} (id int PRIMARY KEY, a int, b text, c text)",
            f"INSERT INTO {name} SELECT g, g % 7, 'row ' || g, CASE WHEN g % 10 = 0 THEN "
            "(SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 100) i) END "
            "FROM generate_series(1, 1000) g",
        )
    elif kind == NULLS:
        sql(
            lab,
            f"CREATE TABLE {name} (id int, a int, b int, c text)",
            f"INSERT INTO {name} SELECT g, CASE WHEN g % 2 = 0 THEN g END, CASE WHEN g % 2 = 1 THEN g END, "
            "'row ' || g FROM generate_series(1, 1000) g",
        )
    else:  # pragma: no cover
        raise ValueError(kind)
    # read every row and TOAST value once (sets all hint bits), then write everything out
    sql(lab, f"SELECT count(*) FROM (SELECT md5(x::text) FROM {name} x) s", "CHECKPOINT")
    return name


def relation_filepaths(lab: LabCluster, table: str) -> list[str]:
    """pg_relation_filepath of ``table``, its indexes, its TOAST table and TOAST index (asked of the running server)."""
    rows = sql(
        lab,
        f"""SELECT pg_relation_filepath(c.oid) FROM pg_class c
            WHERE c.oid = '{table}'::regclass
               OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = '{table}'::regclass)
               OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = '{table}'::regclass)
               OR c.oid IN (SELECT indexrelid FROM pg_index
                            WHERE indrelid = (SELECT reltoastrelid FROM pg_class WHERE oid = '{table}'::regclass))""",
    )
    return [str(r[0]) for r in rows]


def relation_files(lab: LabCluster, table: str) -> list[Path]:
    """Main-fork files (all segments) of ``table``, its indexes, its TOAST table and TOAST index."""
    out: list[Path] = []
    for rel in relation_filepaths(lab, table):
        base = lab.pgdata / rel
        out.extend(p for p in base.parent.glob(base.name + "*") if re.fullmatch(rf"{base.name}(\.\d+)?", p.name))
    return sorted(out)


def digest(paths: Sequence[Path]) -> dict[str, str | None]:
    """sha256 of each file (None when it is missing)."""
    out: dict[str, str | None] = {}
    for p in paths:
        try:
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        except FileNotFoundError:
            out[str(p)] = None
    return out


@contextlib.contextmanager
def stopped(lab: LabCluster) -> Iterator[None]:
    lab.stop()
    try:
        yield
    finally:
        lab.start()
        wait_ready(lab)
