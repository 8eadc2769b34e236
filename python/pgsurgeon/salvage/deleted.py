"""``salvage --deleted``: the row versions committed DELETEs and UPDATEs removed and VACUUM has not reclaimed yet,
from a running server. Pages come through the buffer manager (pageinspect's get_raw_page: what the server has in
memory, even not yet written; reading a page this way does not prune it), a page the server refuses from the files;
the row engine keeps only removed versions, judged against the salvage's shared snapshot."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.salvage.pages import pageinspect_function

if TYPE_CHECKING:
    from pgsurgeon.boundary import CarveConfig
    from pgsurgeon.salvage.engine import Salvage

# The leading columns of a .deleted file (crates/core/src/rows/carve.rs, write_deleted_prefix).
DELETED_COLUMNS = ["block", "lp", "xmin", "xmin_committed_at", "deleted_by", "deleted_at", "how"]

_BATCH = 64


def undelete(s: Salvage, cfg: CarveConfig, oracle: Any, out_dir: Path, base: str, ext: str) -> dict[str, Any]:
    """Carve the removed row versions of the whole table into ``<base>.deleted.<ext>`` (``oracle`` answers what
    the files cannot: transaction status, MultiXact members, TOAST chunks); returns what was written."""
    t = s.table
    conn = s.main.conn
    fn = pageinspect_function(conn, "get_raw_page")
    if fn is None:
        raise PgSurgeonError(
            "--deleted reads pages through the server's buffers with pageinspect, which is not installed",
            hint="CREATE EXTENSION pageinspect; or stop the server and run pgsurgeon unload --deleted",
        )
    query = db.sql.SQL(
        "SELECT string_agg({fn}(%(rel)s::oid::regclass::text, 'main', b), ''::bytea ORDER BY b) "
        "FROM generate_series(%(a)s::bigint, %(b)s::bigint) b"
    ).format(fn=fn)
    bs = t.rel.block_size
    rconn = db.connect(s.opts.dsn)
    lock = threading.Lock()  # the engine may ask from several threads; one connection answers in turn

    def read(first: int, count: int) -> bytes:
        out = bytearray()
        for a in range(first, first + count, _BATCH):
            b = min(first + count, a + _BATCH) - 1
            try:
                with lock, rconn.transaction():
                    row = rconn.execute(query, {"rel": t.rel.oid, "a": a, "b": b}, binary=True).fetchone()
                data = bytes(row[0]) if row and row[0] is not None else b""
            except db.DatabaseError:
                # a page the server refuses ("invalid page"): the files, when at hand, else nothing
                data = s.pages.read_range(a, b - a + 1) if s.pages is not None else b""
            out += data + bytes((b - a + 1) * bs - len(data))
        return bytes(out)

    path = out_dir / f"{base}.deleted.{ext}"
    apart = out_dir / f"{base}.deleted.kept_apart.{ext}"
    path.write_bytes(b"")
    dcfg: CarveConfig = {**cfg, "deleted": True, "deleted_by": s.opts.deleted_by}
    dcfg.pop("files", None)  # pages come from read(), not the files
    dcfg["only"] = {}
    # a page in shared buffers carries the checksum of its last write, if any: only pages from disk have one to check
    dcfg["checksums"] = False
    try:
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
    }
