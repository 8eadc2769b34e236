"""The server's view of a page against the files': the files hold what the server last wrote out, so a page it
changed since (or is writing now) may read damaged or all zeroes there and sound in its buffers. Its copy comes
through pageinspect's get_raw_page (the buffer manager, never the tuples); without pageinspect, the file is read
again or a TID range scan asks whether the page has rows."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog_sql
from pgsurgeon.salvage.pages import LocalPages, pageinspect_function
from pgsurgeon.salvage.sinks import reading
from pgsurgeon.session import BackendLost, SqlFailed

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.boundary import ClassifyConfig
    from pgsurgeon.salvage.engine import Salvage

NEWER_CHECK_MAX_BLOCKS = 10_000
"""Damaged blocks up to which the server's copy is compared with the file's (one statement each)."""


def flush_for_carving(s: Salvage) -> None:
    """Every page is carved from the files, which hold what the server last wrote out: a change committed before
    the shared snapshot may still sit only in its buffers. A CHECKPOINT taken now writes every such page."""

    def checkpoint(conn: Connection[tuple[Any, ...]]) -> None:
        conn.execute("CHECKPOINT")

    try:
        s.main.run(checkpoint)
    except (SqlFailed, BackendLost) as exc:
        s.notes.append(
            f"CHECKPOINT refused ({exc}): rows changed since the last checkpoint may be carved as they were then"
        )
    else:
        s.notes.append("CHECKPOINT taken: the files hold every change the snapshot sees")


def newer_in_server(s: Salvage, blocks: list[int]) -> set[int]:
    """Of the blocks the files show damaged, those the server holds in a sound, newer state: its copy (read
    through the buffer manager with pageinspect's get_raw_page, which never looks at the tuples) carries a
    later page LSN and passes the page checks. A copy the server refuses, or one with the file's LSN (hint
    bits aside, the same page), confirms the damage. Without pageinspect, the file is read again: a page that
    was being written reads differently a moment later."""
    if not blocks or not isinstance(s.pages, LocalPages) or s.opts.carve_all:
        return set()
    cfg: ClassifyConfig = {**s.classify_cfg, "checksums": False, "nblocks": s.table.rel.nblocks, "jobs": 1}
    query = raw_page_query(s)
    newer: set[int] = set()
    for b in blocks[:NEWER_CHECK_MAX_BLOCKS]:
        disk = s.pages.read_pages([b])
        if query is not None:
            try:
                copy = server_copy(s, query, b)
            except (SqlFailed, BackendLost):
                continue  # refused: the damage is in the server's view too
            if copy is None or copy[:8] == disk[:8]:
                continue
        else:
            time.sleep(0.05)
            copy = s.pages.read_pages([b])
            if copy == disk:
                continue
        if not core.classify_pages(copy, b, cfg)["blocks"]:  # it lists the blocks that are not healthy
            newer.add(b)
    if newer:
        s.notes.append(
            f"{len(newer)} block(s) damaged in the files but sound and newer in the server's "
            f"{'buffers' if query is not None else 'file a moment later'} (changed since last written out): "
            "read through SQL: " + ", ".join(str(b) for b in sorted(newer)[:20]) + (" …" if len(newer) > 20 else "")
        )
    return newer


def raw_page_query(s: Salvage) -> db.sql.Composed | None:
    """pageinspect's get_raw_page, which reads a page through the buffer manager without looking at its tuples
    (None when pageinspect is not installed)."""
    fn = pageinspect_function(s.main.conn, "get_raw_page")
    if fn is None:
        return None
    return db.sql.SQL("SELECT {fn}(%s::oid::regclass::text, 'main', %s::bigint)").format(fn=fn)


def server_copy(s: Salvage, query: db.sql.Composed, block: int) -> bytes | None:
    """The server's current image of ``block``: from its buffers when it holds the page, else from the file."""

    def fetch(conn: Connection[tuple[Any, ...]]) -> bytes | None:
        row = conn.execute(query, (s.table.rel.oid, block), binary=True).fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    return s.main.run(fetch)


def not_zero_in_server(s: Salvage, blocks: list[int]) -> set[int]:
    """Of pages all zeroes in the file, those the server holds with contents: written since the file was last
    written out (a block the table was extended by, filled after the shared snapshot was taken). Without
    pageinspect, a page that returns rows as of now has contents."""
    if not isinstance(s.pages, LocalPages):
        return set()
    query = raw_page_query(s)
    out: set[int] = set()
    for b in blocks[:NEWER_CHECK_MAX_BLOCKS]:
        if query is None:
            if rows_in_block(s, b, shared=False):
                out.add(b)
            continue
        try:
            copy = server_copy(s, query, b)
        except (SqlFailed, BackendLost):
            continue
        if copy is not None and any(copy):
            out.add(b)
    return out


def size_now(s: Salvage) -> int | None:
    """The table's length in blocks as the server has it now (None when it cannot say)."""

    def fn(conn: Connection[tuple[Any, ...]]) -> int | None:
        size = catalog_sql.size_or_missing(conn, s.table.rel.oid)
        return size // s.table.rel.block_size if size >= 0 else None

    try:
        return s.main.run(fn)
    except (SqlFailed, BackendLost):
        return None


def rows_in_block(s: Salvage, block: int, shared: bool = True) -> bool:
    """Whether the server returns rows from ``block`` (a TID range scan of one page), in the shared snapshot or,
    with ``shared=False``, as of now."""
    query = db.sql.SQL("SELECT EXISTS (SELECT FROM {} WHERE ctid >= {}::tid AND ctid < {}::tid)").format(
        s.table.rel.ident(), db.sql.Literal(f"({block},0)"), db.sql.Literal(f"({block + 1},0)")
    )

    def fn(conn: Connection[tuple[Any, ...]]) -> bool:
        with reading(conn, s.snapshot if shared else None):
            row = conn.execute(query).fetchone()
        return bool(row and row[0])

    try:
        return s.main.run(fn)
    except (SqlFailed, BackendLost):
        return False
