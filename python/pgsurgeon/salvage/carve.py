"""Phase 3 of a salvage: the damaged blocks, and the tuples SQL could not read, carved from their raw bytes by the
row engine (crates/core/src/rows/), which asks the server for what the files do not say (transaction status,
MultiXact members, TOAST chunks). Rows stream from the core into the sink; only counters, losses and the pages that
need accounting come back."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.rescue.walstatus import CommitRecords
from pgsurgeon.salvage.evidence import evidence
from pgsurgeon.salvage.pages import fetch_toast
from pgsurgeon.salvage.ranges import _merge
from pgsurgeon.salvage.sinks import DirSink
from pgsurgeon.session import BackendLost, SqlFailed

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.boundary import CarveConfig, UnloadSummary
    from pgsurgeon.salvage.engine import Salvage


class Oracle:
    """What the files do not say, asked of the server for the row engine (crates/core/src/rows/engine.rs)."""

    def __init__(self, salvage: Salvage) -> None:
        self.salvage = salvage

    def xid_status(self, xids: list[int]) -> dict[int, str]:
        return {int(k): v for k, v in _resolve_xids(self.salvage, xids).items()}

    def multi_updaters(self, multis: list[int]) -> dict[int, int | None]:
        return {int(k): v for k, v in _resolve_multis(self.salvage, multis).items()}

    def toast_chunks(self, valueids: list[int]) -> list[tuple[int, int, bytes]]:
        try:
            refs, blob = fetch_toast(self.salvage.main, self.salvage.table, valueids)
        except (SqlFailed, BackendLost) as exc:
            self.salvage.notes.append(f"TOAST values could not be read through SQL: {exc}")
            return []
        return [(int(r["valueid"]), int(r["seq"]), blob[r["start"] : r["start"] + r["len"]]) for r in refs]

    def commit_times(self, xids: list[int]) -> dict[int, int | None]:
        """XID -> commit time in microseconds since 2000-01-01 (what pg_commit_ts holds), None when the server
        has none: asked by undelete for what pg_commit_ts on disk does not hold yet (it is written at checkpoints)."""
        query = (
            "SELECT x, ((extract(epoch FROM pg_xact_commit_timestamp(x::text::xid)) - 946684800) * 1000000)::bigint"
            " FROM unnest(%s::bigint[]) x"
        )
        try:
            rows = self.salvage.main.run(lambda c: c.execute(query, (xids,)).fetchall())
        except (SqlFailed, BackendLost) as exc:
            # track_commit_timestamp off: "could not get commit timestamp data"
            note = f"commit times could not be read through SQL: {exc}"
            if note not in self.salvage.notes:
                self.salvage.notes.append(note)
            return dict.fromkeys(xids)
        return {int(x): None if t is None else int(t) for x, t in rows}

    def subxacts(self, xid: int) -> list[int] | None:
        """The subtransactions the commit record of ``xid`` lists, from the server's pg_wal (flushed at commit):
        asked by undelete's --deleted-by where pg_subtrans on disk names no parent (it is written at checkpoints)."""
        s = self.salvage
        if s.pgdata is None:
            note = (
                f"the data directory is not at hand: the commit record of XID {xid} was not read, rows removed in"
                " its subtransactions cannot be tied to it and are not listed; run without --deleted-by to see every"
                " removed row with its own deleter XID"
            )
            if note not in s.notes:
                s.notes.append(note)
            return None
        if s.commit_records is None:
            s.commit_records = CommitRecords(s.pgdata)
        found = s.commit_records.subxacts(xid)
        s.notes.extend(n for n in s.commit_records.notes if n not in s.notes)
        return found


def _resolve_xids(s: Salvage, xids: list[int]) -> dict[str, str]:
    """pg_xact_status for 32-bit XIDs (epoch from the current next XID)."""
    out: dict[str, str] = {}
    if not xids:
        return out
    try:
        row = s.main.run(lambda c: c.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone())
    except (SqlFailed, BackendLost):
        return out
    full_next = int(row[0]) if row else 0
    epoch = full_next >> 32
    for x in xids:
        full = (epoch << 32) | x
        # running transactions may have IDs past the snapshot's xmax (it is one past the latest finished one):
        # only an ID more than half the XID space ahead belongs to the previous epoch
        if full >= full_next + (1 << 31):
            full -= 1 << 32
        if full < 0:
            continue

        def status(c: Connection[tuple[Any, ...]], f: int = full) -> tuple[Any, ...] | None:
            return c.execute("SELECT pg_xact_status(%s::text::xid8)", (str(f),)).fetchone()

        try:
            r = s.main.run(status)
        except (SqlFailed, BackendLost):
            continue
        if r and r[0] is not None:
            out[str(x)] = str(r[0])
    return out


def _resolve_multis(s: Salvage, multis: list[int]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for m in multis:

        def members(c: Connection[tuple[Any, ...]], m: int = m) -> list[tuple[Any, ...]]:
            return c.execute(
                "SELECT xid::text, mode FROM pg_get_multixact_members(%s::text::xid)", (str(m),)
            ).fetchall()

        try:
            rows = s.main.run(members)
        except (SqlFailed, BackendLost):
            continue
        updater = next((int(x) for x, mode in rows if mode in ("upd", "nokeyupd")), None)
        out[str(m)] = updater
    return out


def carve(s: Salvage) -> None:
    """Carve the damaged blocks (every block with --carve-all) through the row engine: rows stream from the
    core into the sink; only counters, losses and the pages that need accounting come back."""
    ranges = _merge(s.carve_ranges + [(b, b + 1) for b in s.carve_blocks | set(s.carve_items)])
    zero_blocks = sorted(b for b, c in s.classes.items() if c["state"] == "zero")
    summary: UnloadSummary | None = None
    if ranges and s.pages is not None:
        summary = _run_carver(s, carve_config(s), ranges)
    elif ranges:
        for a, b in ranges:
            s.lost.extend(
                {"block": x, "lp": None, "reason": "damaged, and raw pages cannot be read here"} for x in range(a, b)
            )
    _account(s, summary, ranges, zero_blocks)


def _account(s: Salvage, summary: UnloadSummary | None, ranges: list[tuple[int, int]], zero_blocks: list[int]) -> None:
    """Counters, losses and page evidence of a carve (``summary`` None: nothing was carved)."""
    pages = summary["pages"] if summary is not None else []
    if summary is not None:
        counts = summary["counts"]
        s.lost.extend(dict(x) for x in summary["lost"])
        s.carved["rows"] = counts["main_rows"]
        s.carved["uncertain"] = counts["apart_rows"]
        s.carved["invisible"] = counts["invisible"]
        s.carved["checksum_failures"] = counts["checksum_failures"]
    else:
        s.carved.update(rows=0, uncertain=0, invisible=0, checksum_failures=0)
    s.carved["pages"] = sum(b - a for a, b in ranges)
    if s.opts.carve_all:
        # no classify pass ran: the carve saw every page
        for p in pages:
            if p["all_zero"]:
                b = p["block"]
                s.classes[b] = {"block": b, "state": "zero", "codes": [], "message": "all zeroes"}
        zero_blocks = sorted(b for b, c in s.classes.items() if c["state"] == "zero")
    evidence(s, zero_blocks, pages)


def carve_config(s: Salvage) -> CarveConfig:
    """The row engine's configuration for this table (crates/core/src/rows/carve.rs CarveConfig)."""
    t = s.table
    assert s.pages is not None
    cfg: CarveConfig = {
        "blcksz": t.rel.block_size,
        "nblocks": t.rel.nblocks,
        "desc": t.rel_desc(),
        "columns": t.columns_out(),
        "format": "csv" if isinstance(s.sink, DirSink) and s.sink.fmt == "csv" else "text",
        "server_version_num": t.facts.version_num,
        "encoding": s.facts.encoding,
        "checksums": t.facts.checksums,
        "horizons": s.horizons,
        "snapshot": s.snapshot.text,
        "can_ask": True,
        "can_fetch_toast": t.rel.toast_oid != 0,
        "toast_relid": t.rel.toast_oid,
        "only": {str(b): sorted(lps) for b, lps in s.carve_items.items() if b not in s.carve_blocks},
        "apart_rows": s.apart_rows,
    }
    extras = s.pages.carve_extras()
    for key in ("xact_dir", "relseg_size", "files", "toast_files", "toast_nblocks"):
        if key in extras:
            cfg[key] = extras[key]
    return cfg


def _run_carver(s: Salvage, cfg: CarveConfig, ranges: list[tuple[int, int]]) -> UnloadSummary:
    """Run the row engine over ``ranges`` in a worker thread, reporting progress meanwhile."""
    assert s.pages is not None
    carver = core.RowCarver(cfg)
    read = None if "files" in cfg else s.pages.read_range
    oracle = Oracle(s)
    result: list[UnloadSummary] = []
    errors: list[BaseException] = []
    done_before = s.stats.blocks_done

    def work(**targets: Any) -> None:
        try:
            result.append(carver.run(ranges, s.opts.jobs, read=read, oracle=oracle, **targets))
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    with s.sink.carve_targets() as targets:
        th = threading.Thread(target=work, kwargs=targets, name="salvage-carve", daemon=True)
        th.start()
        try:
            while th.is_alive():
                th.join(0.25)
                blocks, _, _ = carver.progress()
                with s.stats.lock:
                    s.stats.blocks_done = done_before + blocks
                if s.on_progress is not None:
                    s.on_progress(s.stats)
        except KeyboardInterrupt:
            carver.cancel()
            th.join()
            raise
        if errors:
            raise errors[0]
    return result[0]
