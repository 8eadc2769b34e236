"""A streaming standby as the source of good pages (``repair --from-standby CONNINFO``).

Everything here reads: the session is read-only (a standby refuses writes anyway), pages come through pageinspect's
get_raw_page (the standby's buffers, so what it replayed even before its next restartpoint), or for a page its
buffer manager refuses, pg_read_binary_file on the relation file. No CHECKPOINT (a restartpoint would write the
standby's files), no function that changes anything, no file written on its host."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.sql import ServerFacts
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.repair import facts
from pgsurgeon.repair.copies import SOURCE_STANDBY, lsn_text, parse_lsn
from pgsurgeon.repair.pages import PageReader

if TYPE_CHECKING:
    from psycopg import Connection

POLL_S = 0.5
"""The longest pause between two looks at the standby's position: the first looks come sooner (a standby a
moment behind, as after the primary's shutdown checkpoint, is not made to cost half a second)."""
FIRST_POLL_S = 0.01
SAY_EVERY_S = 5.0


@dataclass
class StandbyState:
    in_recovery: bool
    system_identifier: str | None
    replay: int | None
    pause: str | None
    """pg_get_wal_replay_pause_state(): ``not paused``, ``pause requested`` or ``paused``."""
    database: str
    receiver: str | None
    """pg_stat_wal_receiver.status (``streaming`` …), None without a WAL receiver."""


class StandbySource:
    """Pages of the damaged cluster's standby, after it has replayed up to the primary's position."""

    name = SOURCE_STANDBY
    short_of: int | None = None  # a standby is waited for until it is exact to the primary's position, else refused
    accept_older = False
    follows_primary = True

    def __init__(self, conninfo: str, primary: ServerFacts, primary_sysid: str | None) -> None:
        self.conninfo = conninfo
        try:
            self.conn: Connection[tuple[Any, ...]] = facts.connect(conninfo, read_only=True)
        except db.Error as exc:
            raise PgSurgeonError(
                "cannot connect to the standby: " + (str(exc).strip().splitlines() or ["error"])[0],
                hint="check --from-standby's connection string (host, port, user, dbname)",
            ) from None
        try:
            self.facts = catalog.server_facts(self.conn)
            self._refuse_stranger(primary, primary_sysid)
        except BaseException:
            self.conn.close()
            raise
        self.facts.pgdata = None  # pages by SQL only: the standby's files are never opened from here
        self.reader = PageReader(self.conn, self.facts)
        self.replayed: int | None = None

    def _refuse_stranger(self, primary: ServerFacts, primary_sysid: str | None) -> None:
        st = self.state()
        if not st.in_recovery:
            raise PgSurgeonError(
                "the --from-standby server is not a standby (it is not in recovery)",
                hint="give the connection string of a streaming standby of this cluster (pg_basebackup -R)",
            )
        if st.system_identifier is None or primary_sysid is None:
            raise PgSurgeonError(
                "the standby's or the primary's system identifier cannot be read: the standby cannot be matched",
                hint="connect to both as a superuser (pg_control_system() needs it)",
            )
        if st.system_identifier != primary_sysid:
            raise PgSurgeonError(
                f"the standby belongs to another cluster: system identifier {st.system_identifier}, the primary's "
                f"is {primary_sysid}",
                hint="give a standby made from this cluster (its pg_controldata shows the same database system "
                "identifier)",
            )
        if st.database != primary.database:
            raise PgSurgeonError(
                f"the standby connection is to database {st.database}, the table is in {primary.database}",
                hint=f"add dbname={primary.database} to --from-standby",
            )
        if self.facts.block_size != primary.block_size or self.facts.schemas.get("pageinspect") is None:
            raise PgSurgeonError(
                f"the standby in database {st.database} lacks pageinspect or has another block size",
                hint="the standby replays the primary's catalog: check that it follows this primary",
            )

    def state(self) -> StandbyState:
        row = self.conn.execute(db.load_sql("standby_state")).fetchone()
        assert row is not None
        rec, sysid, replay, pause, database, receiver = row
        sysid = None if sysid is None else str(sysid)
        return StandbyState(bool(rec), sysid, parse_lsn(replay), pause, str(database), receiver)

    def wait(self, target: int, what: str, timeout: float, say: Callable[[str], None], streaming: bool = False) -> int:
        """Wait until the standby has replayed to ``target`` (and, with ``streaming``, streams from its primary now);
        its replay position. Refuses when it does not within ``timeout`` seconds, saying how far it got and whether it
        is paused."""
        deadline = time.monotonic() + timeout
        next_say = time.monotonic()
        pause = FIRST_POLL_S
        while True:
            st = self.state()
            replay = st.replay or 0
            if replay >= target and (not streaming or st.receiver == "streaming"):
                self.replayed = replay
                return replay
            now = time.monotonic()
            paused = st.pause not in (None, "not paused")
            if now >= deadline:
                raise PgSurgeonError(
                    f"the standby has replayed to {lsn_text(replay)}, short of the primary's {what} "
                    f"{lsn_text(target)}, after {timeout:.0f}s"
                    + ("; its replay is paused" if paused else "")
                    + ("" if not streaming or st.receiver == "streaming" else "; it is not streaming from its primary")
                    + ": no page was taken from it",
                    hint="resume replay on the standby (SELECT pg_wal_replay_resume())"
                    if paused
                    else "check the standby's WAL receiver (pg_stat_wal_receiver) and log, or wait longer with "
                    "--standby-timeout",
                )
            if now >= next_say:
                say(
                    f"  waiting for the standby to replay to {lsn_text(target)} ({what}): at {lsn_text(replay)}, "
                    f"{target - replay} byte(s) behind" + (", replay paused" if paused else "")
                )
                next_say = now + SAY_EVERY_S
            time.sleep(pause)
            pause = min(pause * 2, POLL_S)

    def fetch(self, rel: Relation, block: int) -> tuple[bytes | None, str]:
        _blk, data, how = next(self.fetch_batch(rel, [block]))
        return data, how

    def fetch_batch(
        self, rel: Relation, blocks: list[int], fork: str = "main"
    ) -> Iterator[tuple[int, bytes | None, str]]:
        """The standby's pages of ``blocks``: get_raw_page over a batch of blocks a statement (its buffers: what it
        replayed, even pages not yet written out by its next restartpoint); a page its buffer manager refuses from
        its relation file with pg_read_binary_file."""
        for blk, got in self.reader.blocks_pages(rel, blocks, fork):
            if isinstance(got, bytes):
                yield blk, with_checksum(got, blk, self.facts.checksums), "get_raw_page"
                continue
            data = self.reader.file_page(rel, blk, fork)
            if data is not None:
                yield blk, data, f"pg_read_binary_file (get_raw_page: {got[:120]})"
            else:
                yield blk, None, f"the standby cannot read it either: {got[:160]}"

    def describe(self) -> str:
        where = f" (replayed to {lsn_text(self.replayed)})" if self.replayed is not None else ""
        return f"standby {self.conninfo_text()}{where}"

    def conninfo_text(self) -> str:
        info = self.conn.info
        return f"host={info.host} port={info.port} dbname={info.dbname}"

    def close(self) -> None:
        self.conn.close()


def with_checksum(page: bytes, block: int, checksums: bool) -> bytes:
    """A page from the standby's shared buffers with its checksum set. A buffer carries the checksum of the page's
    last write, or none when replay made the page: PostgreSQL computes it as it writes the page out (bufmgr.c,
    FlushBuffer: PageSetChecksumCopy). The page was verified when its buffer was read from disk; the checks that
    follow judge its contents."""
    if not checksums or len(page) < 10 or not any(page):
        return page
    out = bytearray(page)
    out[8:10] = b"\0\0"
    value = core.page_checksum(bytes(out), block)
    if value is None:
        return page
    out[8:10] = int(value).to_bytes(2, "little")
    return bytes(out)
