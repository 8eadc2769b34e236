"""Before the phases of a salvage: where raw pages come from (the data directory, pg_read_binary_file, or
nowhere), the table's size when the server cannot tell it or cannot see all of its files, and the transaction
horizons the row engine judges row versions by."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog_sql
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.salvage import catalog
from pgsurgeon.salvage.pages import LocalPages, RemotePages, can_read_remote

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile, Horizons
    from pgsurgeon.salvage.engine import Salvage


def _horizons(table: catalog.Table, facts: ServerFacts, pgdata: Path | None) -> Horizons | None:
    control: ControlFile | None = None
    if pgdata is not None:
        with contextlib.suppress(Exception):
            control = core.read_control(pgdata)
    if control is None or not control.get("crc_ok", False):
        return None
    next_xid = int(str(control["next_xid"]).split(":")[-1])
    if facts.next_xid:
        next_xid = facts.next_xid
    # The snapshot's xmax is one past the latest finished transaction: running ones (and those starting while
    # we work) are above it. Only garbage lies far beyond.
    next_xid = (next_xid + 10_000_000) % (1 << 32)
    if next_xid < 3:
        next_xid = 3
    return {
        "next_xid": next_xid,
        "oldest_xid": int(control["oldest_xid"]),
        # pg_control's value is from the last checkpoint; MultiXacts made since are valid too
        "next_multi": (int(control["next_multi"]) + 10_000_000) % (1 << 32),
        "oldest_multi": int(control["oldest_multi"]),
    }


def _files_size(pages: LocalPages, t: catalog.Table) -> int:
    """Bytes up to the end of the last segment file present (a missing segment reads as all-zero blocks...
    counted as missing by the classifier)."""
    last = max((int(s["segno"]) for s in pages.segments), default=0)
    size = 0
    for seg in pages.segments:
        if int(seg["segno"]) == last:
            size = last * pages.relseg_size * t.rel.block_size + Path(seg["path"]).stat().st_size
    return size


def _has_gap(pages: LocalPages, t: catalog.Table) -> bool:
    """Whether a segment file is missing, or one before the last is short: where the server stops counting blocks
    (md.c's mdnblocks)."""
    segs = sorted((int(s["segno"]), Path(s["path"])) for s in pages.segments)
    full = pages.relseg_size * t.rel.block_size
    return any(segno != i for i, (segno, _) in enumerate(segs)) or any(
        path.stat().st_size < full for _, path in segs[:-1]
    )


def open_pages(s: Salvage, facts: ServerFacts) -> Path | None:
    """Set ``s.pages``, where raw pages come from (None: nowhere), and size the table from its files when the
    server cannot see all of them; returns the local data directory, if any."""
    o = s.opts
    t = s.table
    pgdata: Path | None = None
    s.pages = None
    if o.files in ("auto", "local"):
        pgdata = catalog_sql.local_pgdata(facts, o.pgdata, probe=t.rel.filepath)
        if pgdata is not None:
            s.pages = LocalPages(pgdata, t, facts.segment_bytes // t.rel.block_size)
        elif o.files == "local":
            raise PgSurgeonError(
                f"the data directory of {db.describe_dsn(o.dsn)} cannot be read here",
                hint="pass --pgdata, run where the data directory is, or use --files remote",
            )
    if s.pages is None and o.files in ("auto", "remote"):
        if can_read_remote(t):
            s.pages = RemotePages(s.session(), t, facts.segment_bytes // t.rel.block_size)
        elif o.files == "remote":
            raise PgSurgeonError(
                "reading raw pages through the server needs a superuser or pg_read_server_files",
                hint="connect as a superuser, or use --files none (SQL only: damaged pages cannot be carved)",
            )
    if s.pages is None:
        s.notes.append("no raw page access: damaged blocks cannot be carved, only read through SQL")
    _size_from_files(s)
    return pgdata


def _size_from_files(s: Salvage) -> None:
    t = s.table
    if t.rel.size < 0:
        # the server cannot size the table (a segment file is missing): count the blocks in the files
        if not isinstance(s.pages, LocalPages):
            raise PgSurgeonError(
                f"the server cannot tell the size of {t.rel.qualified} (a segment file is missing?)",
                hint="run salvage where the data directory is (or pass --pgdata) so the files can be counted",
            )
        t.rel.size = _files_size(s.pages, t)
        s.notes.append("the server could not size the table (a segment file is missing); sized from its files")
    elif isinstance(s.pages, LocalPages) and _has_gap(s.pages, t):
        # segments after a missing or short one are invisible to the server (it stops counting at the gap) but
        # not to us. Without a gap, files longer than the server's count are the table growing since it was
        # sized: blocks the snapshot (taken first) has no rows in.
        on_disk = _files_size(s.pages, t)
        if on_disk > t.rel.size:
            s.notes.append(
                f"the files hold {(on_disk - t.rel.size) // t.rel.block_size} blocks past the end the server sees "
                "(a segment file is missing before them): they are carved"
            )
            t.rel.size = on_disk
