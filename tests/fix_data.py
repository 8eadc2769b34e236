"""pytest plugin: realistic content in the lab clusters.

``seeded`` (session, per ``pg`` cluster): database ``seeds`` holding the seeds' test table — integer columns, a text
description and a bytea payload large enough to be TOAST-ed, NULLs, indexes with duplicates (posting lists) — after
updates (HOT chains, redirects), deletes and VACUUM, checkpointed so the files on disk match the buffers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pgsurgeon import db
from pgsurgeon.lab import LabCluster, run_sql

SEED_SQL = """
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE TABLE seeds (
    id integer PRIMARY KEY,
    a integer NOT NULL,
    b bigint,
    description text,
    payload bytea,
    note varchar(40)
);
-- every 7th row carries a description and payload beyond the TOAST threshold (md5 hex and random bytes
-- barely compress, so they go out of line); every 5th row has NULLs
INSERT INTO seeds
SELECT g,
       g % 50,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g::bigint * 1000003 END,
       CASE WHEN g % 7 = 0 THEN (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 150) i)
            ELSE 'row ' || g END,
       CASE WHEN g % 7 = 0 THEN (SELECT decode(string_agg(md5((g * 77 + i)::text), ''), 'hex')
                                 FROM generate_series(1, 200) i)
            ELSE decode(md5(g::text), 'hex') END,
       CASE WHEN g % 5 = 0 THEN NULL ELSE 'note ' || (g % 13) END
FROM generate_series(1, 4000) g;
CREATE INDEX seeds_a ON seeds (a);
CREATE INDEX seeds_note ON seeds (note);
UPDATE seeds SET b = b + 1 WHERE id % 11 = 0;
UPDATE seeds SET b = b + 1 WHERE id % 11 = 0;
DELETE FROM seeds WHERE id % 17 = 0;
VACUUM seeds;
UPDATE seeds SET note = 'updated' WHERE id % 23 = 0;
DELETE FROM seeds WHERE id % 29 = 0;
SELECT count(*) FROM seeds;
CHECKPOINT;
"""


@dataclass(frozen=True)
class Seeded:
    cluster: LabCluster
    dbname: str
    conn: db.Connection[Any]

    def sql(self, query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of ``query`` on one long-lived autocommit connection."""
        with self.conn.cursor() as cur:
            cur.execute(query, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []

    def relation_file(self, relname: str) -> Path:
        (path,) = self.sql("SELECT pg_relation_filepath(%s::regclass)", [relname])[0]
        return self.cluster.pgdata / str(path)

    def nblocks(self, relname: str) -> int:
        return int(self.sql("SELECT pg_relation_size(%s::regclass) / 8192", [relname])[0][0])  # type: ignore[call-overload]


@pytest.fixture(scope="session")
def seeded(pg: LabCluster) -> Iterator[Seeded]:
    if not run_sql(pg, "SELECT 1 FROM pg_database WHERE datname = 'seeds'"):
        run_sql(pg, "CREATE DATABASE seeds")
        # one statement at a time: VACUUM refuses to run inside a multi-statement string
        for statement in SEED_SQL.split(";\n"):
            if statement.strip():
                run_sql(pg, statement, dbname="seeds")
    with pg.connect("seeds") as conn:
        yield Seeded(pg, "seeds", conn)
