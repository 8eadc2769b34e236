"""Carving the rows a repair removes, from the page images planning read: the same core carver salvage uses
(crates/core/src/rows/carve.rs), restricted to the ctids the repair removes or freezes. What it recovers with
certainty is what ``--reinsert`` puts back; what it reads without certainty is kept apart in the run directory; a
tuple it cannot read at all is lost. For a tuple planned for heap_force_freeze it tells whether the data decodes
whole (else the tuple is killed and kept apart instead)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog_sql
from pgsurgeon.datadir import segments_of
from pgsurgeon.repair.model import Tid
from pgsurgeon.salvage import catalog

if TYPE_CHECKING:
    from pgsurgeon.boundary import CarveConfig, ChunkRef, Horizons
    from pgsurgeon.repair.planner import Context

PASSES = 4


class CarveUnavailable(Exception):
    """The carver cannot run here (the table's columns cannot be described)."""


def _table_info(ctx: Context) -> catalog.Table:
    try:
        return catalog.load_table(ctx.conn, ctx.table.oid)
    except Exception as exc:  # its queries or type descriptions failed
        raise CarveUnavailable(f"the table's columns could not be described for the carver ({exc})") from None


def _horizons(ctx: Context) -> Horizons | None:
    if ctx.server.pgdata is None:
        return None
    try:
        control = core.read_control(ctx.server.pgdata)
    except (OSError, ValueError):
        return None
    if not control.get("crc_ok", False):
        return None
    next_xid = int(str(control["next_xid"]).split(":")[-1])
    with contextlib.suppress(db.DatabaseError):
        next_xid = catalog_sql.server_facts(ctx.conn).next_xid or next_xid  # the server's now, past the checkpoint's
    return {
        "next_xid": next_xid,
        "oldest_xid": int(control["oldest_xid"]),
        "next_multi": (int(control["next_multi"]) + 10_000_000) % (1 << 32),
        "oldest_multi": int(control["oldest_multi"]),
    }


def _xid_status(ctx: Context, xids: list[int]) -> dict[str, str]:
    out: dict[str, str] = {}
    for x in xids:
        try:
            row = ctx.conn.execute(db.load_sql("repair_xid_status"), {"xid": int(x)}).fetchone()
        except db.DatabaseError:
            continue
        if row and row[0] is not None:
            out[str(x)] = str(row[0])
    return out


def _multis(ctx: Context, multis: list[int]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for m in multis:
        try:
            rows = ctx.conn.execute(
                "SELECT xid::text, mode FROM pg_get_multixact_members(%s::text::xid)", (str(m),)
            ).fetchall()
        except db.DatabaseError:
            continue
        out[str(m)] = next((int(x) for x, mode in rows if mode in ("upd", "nokeyupd")), None)
    return out


def _toast_chunks(ctx: Context, info: catalog.Table, values: list[int], base: int) -> tuple[list[ChunkRef], bytes]:
    ident = info.toast_ident()
    if ident is None or not values:
        return [], b""
    query = db.sql.SQL(
        "SELECT chunk_id::bigint, chunk_seq, chunk_data FROM {} WHERE chunk_id = ANY(%s::oid[]) ORDER BY 1, 2"
    ).format(ident)
    try:
        rows = ctx.conn.execute(query, (values,)).fetchall()
    except db.DatabaseError:
        return [], b""
    refs: list[ChunkRef] = []
    blob = bytearray()
    for valueid, seq, data in rows:
        raw = bytes(data)
        refs.append({"valueid": int(valueid), "seq": int(seq), "start": base + len(blob), "len": len(raw)})
        blob += raw
    return refs, bytes(blob)


@dataclass
class Carved:
    """One tuple the carver read at a ctid the repair is interested in."""

    line: bytes
    """The row as a COPY text line (columns as ``columns_out``), values it could not decode as \\N."""
    trusted: bool
    """Live, with a certainty (``certainty_besides_checksum`` on a page that failed its checksum) good enough to put
    back."""
    why: str
    """Why it is not trusted (empty when it is)."""
    live: bool
    """The carver judged it a live row (else dead or invisible: not a row of the table)."""
    whole: bool
    """Every value decoded: no note about a column, the tuple's data or its TOAST chunks."""
    checksum_failed: bool
    foreign: bool = False
    """Its t_ctid names another block: a copy of another block's row (a torn or misdirected write), not the row
    that was at this ctid."""


# Notes of the carver that say a value was not (or not surely) decoded; the others are about visibility and place.
_DATA_NOTES = ("column ", "tuple_data.", "a TOAST chunk")


# Notes that say a tuple may not be this block's row at all (a stale or foreign copy).
_PLACE_NOTES = ("found in free space", "t_ctid ", "most tuples on this page", "the tuple crosses")


def carve(
    ctx: Context, images: dict[int, bytes], wanted: set[Tid], damaged: set[Tid], freezable: set[Tid]
) -> dict[Tid, list[Carved]]:
    """What the carver reads at each ctid of ``wanted`` on these pages (several tuples may claim one ctid).

    ``damaged``: tuples with findings of their own — a row read through their (sound) line pointer is not trusted;
    one found in the page body at the position its own t_ctid names is. ``freezable``: damaged tuples whose only
    damage is in their visibility fields (what heap_force_freeze resets): read through their line pointer, whole,
    not dead and in their place, they are trusted whatever the carver could decide about their visibility."""
    info = _table_info(ctx)
    blocks = sorted(images)
    data = b"".join(images[b] for b in blocks)
    encoding = info.facts.encoding
    cfg: CarveConfig = {
        "blcksz": ctx.server.block_size,
        "relseg_size": ctx.server.segment_blocks,
        "nblocks": ctx.table.nblocks,
        "desc": info.rel_desc(),
        "columns": info.columns_out(),
        "format": "text",
        "server_version_num": ctx.server.version_num,
        "encoding": encoding,
        # rows of a page (or TOAST chunks) that fail their checksum are not trusted as they are
        "checksums": ctx.server.checksums,
        "horizons": _horizons(ctx),
        "can_ask": True,
        "can_fetch_toast": info.rel.toast_oid != 0,
        "toast_relid": info.rel.toast_oid,
        # dead tuples come back too: a removed ctid that held one held no row
        "keep_invisible": True,
    }
    if ctx.server.pgdata is not None:
        cfg["xact_dir"] = str(ctx.server.pgdata / "pg_xact")
        if info.toast is not None and info.toast.filepath:
            cfg["toast_files"] = segments_of(ctx.server.pgdata / info.toast.filepath)
            cfg["toast_nblocks"] = info.toast_nblocks
    blob = b""
    try:
        result, out = core.carve_pages(data, blocks, cfg, blob)
        for _ in range(PASSES):
            asked = False
            if result["need_xids"]:
                cfg["xid_status"] = {**cfg.get("xid_status", {}), **_xid_status(ctx, result["need_xids"])}
                asked = True
            if result["need_multis"]:
                cfg["multis"] = {**cfg.get("multis", {}), **_multis(ctx, result["need_multis"])}
                asked = True
            if result["need_toast"]:
                refs, more = _toast_chunks(ctx, info, result["need_toast"], len(blob))
                cfg["toast_chunks"] = cfg.get("toast_chunks", []) + refs
                blob += more
                asked = True
            if not asked:
                break
            cfg["can_ask"] = False
            cfg["can_fetch_toast"] = False
            result, out = core.carve_pages(data, blocks, cfg, blob)
    except (ValueError, OSError) as exc:
        raise CarveUnavailable(f"the carver failed: {exc}") from None
    found: dict[Tid, list[Carved]] = {}
    for r in result["rows"]:
        if r.get("lp") is None:
            continue
        tid = (r["block"], r["lp"])
        if tid not in wanted:
            continue
        notes = [str(n) for n in r.get("notes") or []]
        failed = bool(r.get("checksum_failed"))
        # A page that failed its checksum may hold altered values; a row that is sure besides is put back, and the
        # plan says so (salvage keeps such rows apart: it does not remove the originals).
        certainty = r["certainty_besides_checksum"] if failed else r["certainty"]
        why = ""
        whole = not any(n.startswith(_DATA_NOTES) for n in notes)
        in_place = not any(n.startswith(_PLACE_NOTES) for n in notes)
        if tid in freezable and r["via"] == "line_pointer":
            if r["verdict"] == "invisible":
                why = "carved as dead (deleted or updated before the damage)"
            elif not (whole and in_place):
                why = "carved as uncertain" + (f": {'; '.join(notes)[:300]}" if notes else "")
        elif r["verdict"] != "live":
            why = f"carved as {r['verdict']}" + (f" ({r['reason']})" if r.get("reason") else "")
        elif certainty not in ("sure", "likely"):
            why = "carved as uncertain" + (f": {'; '.join(notes)[:300]}" if notes else "")
        elif r["via"] == "line_pointer" and tid in damaged:
            why = "read through the line pointer of a damaged tuple: its values are not trusted"
        found.setdefault(tid, []).append(
            Carved(
                line=bytes(out[r["data_start"] : r["data_end"]]),
                trusted=not why,
                why=why,
                live=r["verdict"] != "invisible",
                whole=whole,
                checksum_failed=failed,
                foreign=any(n.startswith("t_ctid ") for n in notes),
            )
        )
    return found
