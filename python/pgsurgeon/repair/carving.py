"""Carving the rows a repair removes, from the page images planning read: the same core carver salvage uses
(crates/core/src/carve.rs), restricted to the lost ctids. What it recovers with certainty is what ``--reinsert``
puts back; the rest stays in the run directory for people to look at."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.repair.model import Tid
from pgsurgeon.salvage import catalog

if TYPE_CHECKING:
    from pgsurgeon.repair.planner import Context

PASSES = 4


class CarveUnavailable(Exception):
    """The carver cannot run here (the table's columns cannot be described)."""


def _table_info(ctx: Context) -> Any:
    try:
        return catalog.load_table(ctx.conn, ctx.table.oid)
    except Exception as exc:  # its queries or type descriptions failed
        raise CarveUnavailable(f"the table's columns could not be described for the carver ({exc})") from None


def _horizons(ctx: Context) -> dict[str, Any] | None:
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
        row = ctx.conn.execute(db.load_sql("salvage_server")).fetchone()
        if row and row[0]:
            next_xid = int(row[0])
    return {
        "next_xid": next_xid,
        "oldest_xid": int(control["oldest_xid"]),
        "next_multi": (int(control["next_multi"]) + 10_000_000) % (1 << 32),
        "oldest_multi": int(control["oldest_multi"]),
    }


def _segments(base: Any) -> list[dict[str, Any]]:
    out = [{"segno": 0, "path": str(base)}] if base.exists() else []
    n = 1
    while (p := base.with_name(f"{base.name}.{n}")).exists():
        out.append({"segno": n, "path": str(p)})
        n += 1
    return out


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


def _toast_chunks(ctx: Context, info: Any, values: list[int], base: int) -> tuple[list[dict[str, Any]], bytes]:
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
    refs: list[dict[str, Any]] = []
    blob = bytearray()
    for valueid, seq, data in rows:
        raw = bytes(data)
        refs.append({"valueid": int(valueid), "seq": int(seq), "start": base + len(blob), "len": len(raw)})
        blob += raw
    return refs, bytes(blob)


def carve(
    ctx: Context, images: dict[int, bytes], lost: set[Tid], damaged: set[Tid]
) -> tuple[dict[Tid, bytes], str | None]:
    """COPY text lines of the lost ctids carving recovers with certainty, and a note on what was left out.

    ``damaged``: tuples with findings of their own — a row read through their (sound) line pointer is not trusted;
    one found in the page body at the position its own t_ctid names is."""
    info = _table_info(ctx)
    blocks = sorted(images)
    data = b"".join(images[b] for b in blocks)
    cfg: dict[str, Any] = {
        "blcksz": ctx.server.block_size,
        "relseg_size": ctx.server.segment_blocks,
        "nblocks": ctx.table.nblocks,
        "desc": info.rel_desc(),
        "columns": info.columns_out(),
        "format": "text",
        "server_version_num": ctx.server.version_num,
        "horizons": _horizons(ctx),
        "can_ask": True,
        "can_fetch_toast": info.toast_oid != 0,
        "toast_relid": info.toast_oid,
    }
    if ctx.server.pgdata is not None:
        cfg["xact_dir"] = str(ctx.server.pgdata / "pg_xact")
        if info.toast_filepath:
            cfg["toast_files"] = _segments(ctx.server.pgdata / info.toast_filepath)
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
    found: dict[Tid, list[bytes]] = {}
    uncertain = 0
    from_failed_pages = 0
    for r in result["rows"]:
        if r.get("lp") is None:
            continue
        tid = (int(r["block"]), int(r["lp"]))
        if tid not in lost:
            continue
        # A page that failed its checksum may hold altered values: salvage keeps such rows apart; repair puts them
        # back (the alternative is losing them) and says so in the plan.
        certainty = r["certainty_besides_checksum"] if r.get("checksum_failed") else r["certainty"]
        trusted = r["verdict"] == "live" and certainty in ("sure", "likely")
        if trusted and r.get("checksum_failed"):
            from_failed_pages += 1
        if r["via"] == "line_pointer" and tid in damaged:
            trusted = False
        if not trusted:
            uncertain += 1
            continue
        found.setdefault(tid, []).append(bytes(out[r["data_start"] : r["data_end"]]))
    carved = {tid: lines[0] for tid, lines in found.items() if len(lines) == 1}
    ambiguous = len(found) - len(carved)
    parts = []
    if uncertain:
        parts.append(f"{uncertain} carved tuple(s) were not certain enough to put back")
    if ambiguous:
        parts.append(f"{ambiguous} ctid(s) carved twice (left out)")
    if from_failed_pages:
        parts.append(
            f"{from_failed_pages} carved row(s) come from pages that failed their checksum: their values may be "
            "altered, compare them with a backup"
        )
    if info.unsupported_columns:
        parts.append("the carver cannot print " + ", ".join(info.unsupported_columns))
    return carved, ("; ".join(parts) or None)
