"""Before the carve writes anything: carved rows whose key SQL read in another row are copies of that row (a
spliced or misdirected page, an old image written back), kept apart and named. The blocks to carve are carved once
for their keys, and the server is asked which of those keys the blocks it read hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.salvage.carve import carve_config
from pgsurgeon.salvage.ranges import _complement, _merge
from pgsurgeon.salvage.sinks import reading
from pgsurgeon.session import BackendLost, SqlFailed

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.boundary import CarveConfig
    from pgsurgeon.salvage.engine import Salvage

KEY_CHECK_MAX_BLOCKS = 100_000
"""Blocks to carve up to which their rows' keys are checked against the rows read through SQL (the keys are held)."""
_COPY_ESCAPES = {b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}


def _copy_text_value(field: bytes) -> str | None:
    """One field of a COPY text line as the value's text (None for NULL or bytes that are not UTF-8)."""
    if field == b"\\N":
        return None
    out = bytearray()
    i = 0
    while i < len(field):
        ch = field[i : i + 1]
        if ch == b"\\" and i + 1 < len(field):
            nxt = field[i + 1 : i + 2]
            out += _COPY_ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += ch
        i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def apart_by_key(s: Salvage) -> None:
    """Carved rows whose key SQL read in another row are copies of that row (a spliced or misdirected page, an
    old image written back): the carve keeps them apart and names the row. Settled before the carve writes
    anything: the blocks to carve are carved once for their keys, and the server is asked which of those keys
    the blocks it read hold (TID range scans over those blocks only, in the shared snapshot)."""
    t = s.table
    if not t.key or s.pages is None or s.opts.carve_all:
        return
    blocks = sorted(s.carve_blocks | set(s.carve_items) | {b for a, e in s.carve_ranges for b in range(a, e)})
    if not blocks:
        return
    if len(blocks) > KEY_CHECK_MAX_BLOCKS:
        s.notes.append(
            f"{len(blocks)} blocks to carve: carved rows were not checked against the key of the rows read "
            f"through SQL (done up to {KEY_CHECK_MAX_BLOCKS} blocks); look for duplicate keys in the output"
        )
        return
    names = [c.name for c in t.live_columns]
    if not all(k in names for k in t.key):
        return
    found = _carved_keys(s, blocks, [names.index(k) for k in t.key])
    if not found:
        return
    unsafe = _merge(
        [(b, b + 1) for b in blocks]
        + [(b, b + 1) for b, c in s.classes.items() if c["state"] in ("damaged", "missing")]
        + [(f.first, f.end) for f in s.failures]
    )
    elsewhere = _keys_in(s, list(found), _complement(t.rel.nblocks, unsafe))
    cols = ", ".join(t.key)
    for key, ctid in elsewhere.items():
        why = (
            f"its key ({cols})=({', '.join(key)}) is readable in row {ctid}: a copy of that row (a spliced or "
            "misdirected page, an old page image written back)"
        )
        for block, offset in found[key]:
            s.apart_rows.setdefault(str(block), []).append((offset, why))
    if elsewhere:
        s.notes.append(
            f"{sum(len(found[k]) for k in elsewhere)} carved row(s) kept apart: their key is readable in another "
            "row of the table"
        )


def _carved_keys(s: Salvage, blocks: list[int], positions: list[int]) -> dict[tuple[str, ...], list[tuple[int, int]]]:
    """The keys (the columns at ``positions``, as text) of the rows ``blocks`` carve to, with where each lies."""
    assert s.pages is not None
    cfg: CarveConfig = {**carve_config(s), "format": "text", "can_ask": False, "can_fetch_toast": False}
    found: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    for i in range(0, len(blocks), 256):
        chunk = blocks[i : i + 256]
        res, out = core.carve_pages(s.pages.read_pages(chunk), chunk, cfg, b"")
        for r in res["rows"]:
            if r["verdict"] == "invisible":
                continue
            fields = bytes(out[r["data_start"] : r["data_end"]]).rstrip(b"\n").split(b"\t")
            vals = [_copy_text_value(fields[p]) if p < len(fields) else None for p in positions]
            if all(v is not None for v in vals):
                found.setdefault(tuple(v for v in vals if v is not None), []).append(
                    (int(r["block"]), int(r["offset"]))
                )
    return found


def _keys_in(s: Salvage, keys: list[tuple[str, ...]], ranges: list[tuple[int, int]]) -> dict[tuple[str, ...], str]:
    """Which of ``keys`` (the key columns as text) rows in ``ranges`` hold, with the ctid of one such row. Only
    TID range scans run, so no other block is read."""
    t = s.table
    sq = db.sql.SQL
    cols = sq(", ").join(sq("{}::text").format(db.sql.Identifier(c)) for c in t.key)
    arrays = sq(", ").join(sq("%s::text[]") for _ in t.key)
    query = sq(
        "SELECT ctid::text, {cols} FROM {t} WHERE ctid >= %s::tid AND ctid < %s::tid "
        "AND ({cols}) IN (SELECT * FROM unnest({arrays}))"
    ).format(cols=cols, t=t.rel.ident(), arrays=arrays)
    columns = [list(col) for col in zip(*keys, strict=True)]
    out: dict[tuple[str, ...], str] = {}
    for a, b in ranges:

        def fn(conn: Connection[tuple[Any, ...]], a: int = a, b: int = b) -> list[tuple[Any, ...]]:
            with reading(conn, s.snapshot):
                for knob in ("seqscan", "indexscan", "indexonlyscan", "bitmapscan"):
                    conn.execute(f"SET LOCAL enable_{knob} = off")
                return list(conn.execute(query, (f"({a},0)", f"({b},0)", *columns)).fetchall())

        try:
            rows = s.main.run(fn)
        except (SqlFailed, BackendLost) as exc:
            s.notes.append(f"blocks {a}..{b - 1} not searched for the keys of carved rows: {exc}")
            continue
        for ctid, *vals in rows:
            out.setdefault(tuple(str(v) for v in vals), str(ctid))
    return out
