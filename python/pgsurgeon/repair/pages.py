"""Raw pages for planning: through the buffer manager (pageinspect's get_raw_page, never the executor), and, for
pages the server refuses, from the relation files (directly when the data directory is on this host, else with
pg_read_binary_file). Plus the few raw decodings repair needs beyond the core's: TOAST chunk ids and TOAST pointers
in heap tuples."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog.relation import Column, Relation
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.datadir import Geometry, segment_name
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.repair.facts import ext_fn

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.boundary import HeapTuple

BATCH = 64
RUN = 256  # pages a statement when a whole relation streams through the core: 2 MB of 8 kB pages
_NAMED_BLOCK = re.compile(r"(?:invalid page in block|could not read blocks?) (\d+)")

# line pointer flags: src/include/storage/itemid.h; t_infomask(2) bits: src/include/access/htup_details.h
LP_UNUSED, LP_NORMAL, LP_REDIRECT, LP_DEAD = 0, 1, 2, 3
HEAP_HASNULL = 0x0001
HEAP_XMIN_COMMITTED = 0x0100
HEAP_XMIN_INVALID = 0x0200
HEAP_XMAX_INVALID = 0x0800
HEAP_KEYS_UPDATED = 0x2000
HEAP_HOT_UPDATED = 0x4000
HEAP_ONLY_TUPLE = 0x8000
HEAP_NATTS_MASK = 0x07FF
VARTAG_ONDISK = 18


@dataclass
class Item:
    lp: int
    flags: int
    off: int
    length: int
    header: HeapTuple | None


class PageReader:
    def __init__(self, conn: Connection[tuple[Any, ...]], server: ServerFacts) -> None:
        self.conn = conn
        self.server = server
        self.bs = server.block_size
        fn = ext_fn(server, "pageinspect", "get_raw_page")
        self._query = db.sql.SQL(db.load_sql("repair_raw_pages")).format(fn=fn)
        self._blocks_query = db.sql.SQL(db.load_sql("repair_raw_blocks")).format(fn=fn)

    def _batch(self, rel: Relation, a: int, b: int, fork: str) -> list[tuple[int, bytes]] | str:
        return self._run(rel, self._query, {"rel": rel.oid, "fork": fork, "a": a, "b": b})

    def _run(self, rel: Relation, query: Any, params: dict[str, Any]) -> list[tuple[int, bytes]] | str:
        try:
            # binary: the pages come as they are (a text bytea is twice the size, in hex)
            rows = self.conn.execute(query, params, binary=True).fetchall()
        except (db.OperationalError, db.InterfaceError) as exc:
            if self.conn.closed or self.conn.broken:
                raise PgSurgeonError(
                    f"the connection was lost while reading raw pages of {rel.regclass}: {exc}",
                    hint="check the server log; run repair again once the server is up",
                ) from None
            return (str(exc).strip().splitlines() or ["error"])[0]
        except db.DatabaseError as exc:
            return (str(exc).strip().splitlines() or ["error"])[0]
        return [(int(blk), bytes(data)) for blk, data in rows]

    def server_pages(
        self, rel: Relation, first: int, last: int, fork: str = "main", step: int | None = None
    ) -> Iterator[tuple[int, bytes | str]]:
        """Each block of first..last as the buffer manager returns it, or the error it raises for that block;
        ``step`` blocks a statement (all of them by default)."""
        step = max(step or last - first + 1, 1)
        stack = [(a, min(a + step, last + 1) - 1) for a in range(first, last + 1, step)][::-1]
        while stack:
            a, b = stack.pop()
            if a > b:
                continue
            got = self._batch(rel, a, b, fork)
            if not isinstance(got, str):
                yield from got
                continue
            m = _NAMED_BLOCK.search(got)
            named = int(m.group(1)) if m else None
            if named is not None and a <= named <= b:
                yield named, got
                stack.extend([(named + 1, b), (a, named - 1)])
            elif a == b:
                yield a, got
            else:
                mid = a + (b - a) // 2
                stack.extend([(mid + 1, b), (a, mid)])

    def blocks_pages(
        self, rel: Relation, blocks: list[int], fork: str = "main", step: int = RUN
    ) -> Iterator[tuple[int, bytes | str]]:
        """Each of ``blocks`` (any order, any gaps) as the buffer manager returns it, or the error it raises for it:
        ``step`` blocks a statement (memory stays bounded), a statement that fails split until the refused block is
        alone."""
        wanted = sorted(set(blocks))
        stack = [wanted[i : i + step] for i in range(0, len(wanted), step)][::-1]
        while stack:
            part = stack.pop()
            if not part:
                continue
            got = self._run(rel, self._blocks_query, {"rel": rel.oid, "fork": fork, "blocks": part})
            if not isinstance(got, str):
                yield from got
                continue
            m = _NAMED_BLOCK.search(got)
            named = int(m.group(1)) if m else None
            if named is not None and named in part:
                yield named, got
                stack.append([b for b in part if b != named])
            elif len(part) == 1:
                yield part[0], got
            else:
                mid = len(part) // 2
                stack.extend([part[mid:], part[:mid]])

    def all_pages(self, rel: Relation, fork: str = "main") -> Iterator[tuple[int, bytes | str]]:
        yield from self.server_pages(rel, 0, rel.nblocks - 1, fork, BATCH)

    def file_page(self, rel: Relation, block: int, fork: str = "main") -> bytes | None:
        """Block ``block`` of a fork from the relation's files (None when it cannot be read from here)."""
        if rel.filepath is None:
            return None
        segno, offset = Geometry(self.bs, self.server.segment_blocks).locate(block)
        name = segment_name(rel.filepath, segno, fork)
        if self.server.pgdata is not None:
            try:
                with (self.server.pgdata / name).open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read(self.bs)
            except OSError:
                return None
            return data if len(data) == self.bs else None
        try:
            row = self.conn.execute(
                db.load_sql("repair_read_file"), {"path": name, "offset": offset, "length": self.bs}
            ).fetchone()
        except db.DatabaseError:
            return None
        data = bytes(row[0]) if row and row[0] is not None else b""
        return data if len(data) == self.bs else None

    def page(self, rel: Relation, block: int, fork: str = "main") -> tuple[bytes | None, str]:
        """The page as the server has it, else from the files: (bytes or None, ``server``/``file``/error text)."""
        for _blk, got in self.server_pages(rel, block, block, fork):
            if isinstance(got, bytes):
                return got, "server"
            data = self.file_page(rel, block, fork)
            return (data, "file") if data is not None else (None, got)
        return None, "not read"


# ---------------------------------------------------------------------------------------------------- decoding


def heap_items(page: bytes, block: int) -> list[Item]:
    """Line pointers of a heap page (as many as pd_lower claims and the page can hold) with their tuple headers."""
    try:
        report = core.inspect_page(page, block, checksums=False, kind="heap")
    except ValueError:
        return []
    return [
        Item(int(it["lp"]), int(it["lp_flags"]), int(it["lp_off"]), int(it["lp_len"]), it.get("heap"))
        for it in report["items"]
    ]


def is_all_zero(page: bytes) -> bool:
    return not any(page)


def max_offset(page: bytes) -> int:
    lower = int.from_bytes(page[12:14], "little")
    return max((lower - 24) // 4, 0) if 24 <= lower <= len(page) else 0


def toast_chunk_id(page: bytes, item: Item) -> int | None:
    """chunk_id of a TOAST tuple (the first column, an oid right after the header)."""
    if item.flags != LP_NORMAL or item.length < 24 + 4 or item.off + item.length > len(page):
        return None
    t_hoff = page[item.off + 22]
    at = item.off + t_hoff
    if t_hoff < 24 or at + 4 > item.off + item.length:
        return None
    return int(struct.unpack_from("<I", page, at)[0])


def _align(off: int, align: str) -> int:
    n = {"c": 1, "s": 2, "i": 4, "d": 8}.get(align, 1)
    return (off + n - 1) // n * n


def toast_pointers(tuple_bytes: bytes, cols: list[Column]) -> list[int] | None:
    """The TOAST value ids an on-disk heap tuple points to (None when the tuple cannot be walked: its columns do not
    fit, a length runs past the end). Follows heap_deform_tuple's rules for alignment and short varlenas."""
    t = tuple_bytes
    if len(t) < 24:
        return None
    infomask2, infomask, t_hoff = struct.unpack_from("<HHB", t, 18)
    natts = infomask2 & HEAP_NATTS_MASK
    hasnull = bool(infomask & HEAP_HASNULL)
    if t_hoff < 24 or t_hoff > len(t):
        return None
    bitmap = t[23:t_hoff]
    off = t_hoff
    out: list[int] = []
    for i, col in enumerate(cols[:natts]):
        if hasnull and (i >> 3 >= len(bitmap) or not (bitmap[i >> 3] >> (i & 7)) & 1):
            continue
        if col.attlen > 0:
            off = _align(off, col.attalign) + col.attlen
        elif col.attlen == -1:
            if off >= len(t):
                return None
            if t[off] == 0:  # a pad byte: the value is aligned (VARATT_NOT_PAD_BYTE)
                off = _align(off, col.attalign)
                if off >= len(t):
                    return None
            b0 = t[off]
            if b0 == 0x01:  # external
                if off + 2 > len(t):
                    return None
                tag = t[off + 1]
                size = 2 + (16 if tag == VARTAG_ONDISK else 8)
                if tag == VARTAG_ONDISK and off + 18 <= len(t):
                    out.append(int(struct.unpack_from("<I", t, off + 10)[0]))
                off += size
            elif b0 & 0x01:  # short varlena
                off += b0 >> 1
            else:
                if off + 4 > len(t):
                    return None
                off += (struct.unpack_from("<I", t, off)[0] >> 2) & 0x3FFFFFFF
        elif col.attlen == -2:
            end = t.find(b"\0", off)
            if end < 0:
                return None
            off = end + 1
        else:
            return None
        if off > len(t):
            return None
    return out
