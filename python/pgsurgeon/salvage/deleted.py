"""``salvage --deleted``: the row versions committed DELETEs and UPDATEs removed and VACUUM has not reclaimed yet,
from a running server. Pages come through the buffer manager (pageinspect's get_raw_page: what the server has in
memory, even not yet written; reading a page this way does not prune it), a page the server refuses from the files;
the row engine keeps only removed versions, judged against the salvage's shared snapshot.

What lags on disk until the next checkpoint is read through the server too: TOAST values from the pages of the TOAST
table and its index, read the same way (their chunks are deleted with the row: no query returns them), commit times
from pg_xact_commit_timestamp where pg_commit_ts on disk has none yet. pg_subtrans is not readable through SQL: where
its files do not name a subtransaction's parent yet, ``--deleted-by`` takes in the subtransactions its commit record
in pg_wal lists (flushed at commit; rows/undelete.rs, rescue/walstatus.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.rescue.walstatus import CommitRecords
from pgsurgeon.salvage.carve import Oracle
from pgsurgeon.salvage.deleted_columns import DELETED_COLUMNS
from pgsurgeon.salvage.pages import pageinspect_function

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.boundary import CarveConfig
    from pgsurgeon.salvage.engine import Salvage

# The leading columns of a .deleted file (crates/core/src/rows/undelete.rs, write_deleted_prefix).

_BATCH = 64

Read = Callable[[int, int], bytes]


class _PageReader:
    """Pages of one relation through get_raw_page, ``_BATCH`` blocks a query, on one connection the engine's
    threads share in turn."""

    def __init__(self, conn: Connection[tuple[Any, ...]], lock: threading.Lock, fn: db.sql.Composable, bs: int):
        self.conn = conn
        self.lock = lock
        self.bs = bs
        self.query = db.sql.SQL(
            "SELECT string_agg({fn}(%(rel)s::oid::regclass::text, 'main', b), ''::bytea ORDER BY b) "
            "FROM generate_series(%(a)s::bigint, %(b)s::bigint) b"
        ).format(fn=fn)

    def reader(self, relid: int, fallback: Read | None = None) -> Read:
        """``read(first, count)`` for relation ``relid``: a batch the server refuses ("invalid page", past the end)
        comes from ``fallback`` when given, else reads as zeroes."""

        def read(first: int, count: int) -> bytes:
            out = bytearray()
            for a in range(first, first + count, _BATCH):
                b = min(first + count, a + _BATCH) - 1
                try:
                    with self.lock, self.conn.transaction():
                        row = self.conn.execute(self.query, {"rel": relid, "a": a, "b": b}, binary=True).fetchone()
                    data = bytes(row[0]) if row and row[0] is not None else b""
                except db.DatabaseError:
                    data = fallback(a, b - a + 1) if fallback is not None else b""
                out += data + bytes((b - a + 1) * self.bs - len(data))
            return bytes(out)

        return read


class _UndeleteOracle(Oracle):
    """The salvage's oracle, but TOAST values through the pages of the TOAST index and table (deleted values
    included), the SQL query only for what those do not hold."""

    def __init__(self, salvage: Salvage, read_index: Read, read_toast: Read) -> None:
        super().__init__(salvage)
        self.read_index = read_index
        self.read_toast = read_toast

    def toast_chunks(self, valueids: list[int]) -> list[tuple[int, int, bytes]]:
        bs = self.salvage.table.rel.block_size
        found = core.toast_by_index(valueids, bs, self.read_index, self.read_toast)
        missing = sorted(set(valueids) - {v for v, _, _ in found})
        return found + (super().toast_chunks(missing) if missing else [])


def undelete(s: Salvage, cfg: CarveConfig, out_dir: Path, base: str, ext: str) -> dict[str, Any]:
    """Carve the removed row versions of the whole table into ``<base>.deleted.<ext>`` (the server answers what
    the files cannot: transaction status, MultiXact members, TOAST chunks, commit times); returns what was
    written."""
    t = s.table
    conn = s.main.conn
    fn = pageinspect_function(conn, "get_raw_page")
    if fn is None:
        raise PgSurgeonError(
            "--deleted reads pages through the server's buffers with pageinspect, which is not installed",
            hint="CREATE EXTENSION pageinspect; or stop the server and run pgsurgeon unload --deleted",
        )
    path = out_dir / f"{base}.deleted.{ext}"
    apart = out_dir / f"{base}.deleted.kept_apart.{ext}"
    path.write_bytes(b"")
    dcfg: CarveConfig = {**cfg, "deleted": True, "deleted_by": s.opts.deleted_by}
    # pages come from read(), not the files; TOAST values from the oracle: the files lag the server's buffers
    dcfg.pop("files", None)
    dcfg.pop("toast_files", None)
    dcfg.pop("toast_nblocks", None)
    dcfg["only"] = {}
    # a page in shared buffers carries the checksum of its last write, if any: only pages from disk have one to check
    dcfg["checksums"] = False
    rconn = db.connect(s.opts.dsn)
    try:
        pages = _PageReader(rconn, threading.Lock(), fn, t.rel.block_size)
        read = pages.reader(t.rel.oid, s.pages.read_range if s.pages is not None else None)
        oracle = (
            _UndeleteOracle(s, pages.reader(t.toast_index.oid), pages.reader(t.toast.oid))
            if t.toast is not None and t.toast_index is not None
            else Oracle(s)
        )
        summary = core.RowCarver(dcfg).run(
            [(0, t.rel.nblocks)], s.opts.jobs, main=str(path), apart=str(apart), read=read, oracle=oracle
        )
    finally:
        rconn.close()
    counts = summary.get("counts", {})
    if apart.exists() and apart.stat().st_size == 0:
        apart.unlink()
    return {
        "file": str(path),
        "rows": int(counts.get("main_rows", 0)),
        "kept_apart": int(counts.get("apart_rows", 0)),
        "kept_apart_file": str(apart) if apart.exists() else None,
        "columns": DELETED_COLUMNS + [c.name for c in t.live_columns],
        "commit_record": _commit_record(s.commit_records),
    }


def _commit_record(c: CommitRecords | None) -> dict[str, Any] | None:
    """What --deleted-by read of its commit record in pg_wal (None: pg_subtrans named every parent, or no
    --deleted-by): its subtransactions (null: not found) and how long pg_waldump took."""
    if c is None or not c.read:
        return None
    ((xid, subxacts),) = c.read.items()
    return {"xid": xid, "subxacts": subxacts, "seconds": round(c.seconds, 3)}
