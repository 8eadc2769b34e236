"""The ledger of a repair: where every row of the table ends.

Each row ends in exactly one place:

* **in place** — on a block the repair leaves alone (counted through SQL, block ranges by ctid), beside the damage on
  a block it changes (counted through SQL by ctid, never touching the damaged tuples), or frozen (heap_force_freeze);
* **reinserted** — carved with certainty from a tuple the repair removes, and inserted back (``--reinsert``);
* **kept apart** — carved, but not put back: in ``carved.copy`` (certain rows, without ``--reinsert``) or in
  ``kept-apart.copy`` (uncertain rows, rows whose values did not decode whole, rows the table refused), both in the
  run directory;
* **restored** — on a damaged page replaced whole by a good copy (``--from-standby``): counted on the copy;
* **lost** — by ctid, with the reason.

The plan prints the ledger before anything is done; execution moves a row only when the table refuses it (a row
that cannot be inserted goes to ``kept-apart.copy``), and after the last step the table is checked against it: the
row count always, and with a unique key a digest of the keys (a row gone and another come back would show). A
difference fails the repair with exit status 2.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.exitcodes import Exit

if TYPE_CHECKING:
    from psycopg import Connection

    from pgsurgeon.catalog.relation import Relation

Tid = tuple[int, int]

REINSERTED = "reinserted"
KEPT_APART = "kept-apart"
LOST = "lost"
DEAD = "dead"
"""A removed ctid whose tuple the carver judges dead (deleted or updated before the damage): no row, not counted."""
CARVED_FILE = "carved.copy"
APART_FILE = "kept-apart.copy"
TID_BATCH = 5000


class LedgerMismatch(PgSurgeonError):
    """After the repair the table does not hold what the ledger says it must."""

    exit_code = Exit.DAMAGE


@dataclass
class Ledger:
    untouched: int = 0
    """Rows read through SQL on the blocks the repair leaves alone."""
    beside: int = 0
    """Rows on blocks the repair changes that it does not touch themselves (read through SQL by ctid)."""
    frozen: list[Tid] = field(default_factory=list)
    reinsert: list[Tid] = field(default_factory=list)
    apart: dict[Tid, str] = field(default_factory=dict)
    """ctid -> why it is kept apart, and where."""
    lost: dict[Tid, str] = field(default_factory=dict)
    """ctid -> why it is lost."""
    key: list[str] | None = None
    """The columns of a unique key (primary key first), when the table has one: keys are checked too."""
    lost_keys: dict[Tid, str] = field(default_factory=dict)
    """ctid -> the key of a lost row, when an index entry tells it."""
    digest: int = 0
    """Sum of the key hashes of the untouched and beside rows (see ``key_hash``)."""
    counted: bool = False
    """The in-place rows could be counted (else the plan is blocked, or the count is ``deferred``)."""
    deferred: str | None = None
    """Why the rows are counted only after the plan's REINDEX: every query on the table fails on an index until it
    is rebuilt, and the plan changes no row of the table (a rebuild neither adds nor removes one)."""
    restored: int = 0
    """Rows on the pages restored from a good copy, as the carver counts them on the copies."""
    restored_blocks: list[int] = field(default_factory=list)
    possibly_stale: dict[Tid, str] = field(default_factory=dict)
    """ctid -> why: rows restored (among ``restored``) from a copy that may be older than the page was, taken with
    --accept-older (the backup's WAL ends before the primary's position)."""

    @property
    def in_place(self) -> int:
        return self.untouched + self.beside + len(self.frozen)

    @property
    def total(self) -> int:
        return self.in_place + self.restored + len(self.reinsert) + len(self.apart) + len(self.lost)

    @property
    def expected_after(self) -> int:
        """Rows the table must hold after the repair."""
        return self.in_place + self.restored + len(self.reinsert)

    def summary(self) -> str:
        return (
            f"{self.total} row(s): {self.in_place} in place ({self.untouched} on blocks left alone, {self.beside} "
            f"beside the damage, {len(self.frozen)} frozen), {self.restored} restored"
            f"{f' ({len(self.possibly_stale)} possibly stale)' if self.possibly_stale else ''}, {len(self.reinsert)} "
            f"reinserted, {len(self.apart)} kept apart, {len(self.lost)} lost"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.total,
            "in_place": self.in_place,
            "untouched": self.untouched,
            "beside": self.beside,
            "frozen": [tid_text(t) for t in self.frozen],
            "restored": self.restored,
            "restored_blocks": self.restored_blocks,
            "possibly_stale": [{"ctid": tid_text(t), "why": w} for t, w in sorted(self.possibly_stale.items())],
            "reinserted": [tid_text(t) for t in sorted(self.reinsert)],
            "kept_apart": [{"ctid": tid_text(t), "why": w} for t, w in sorted(self.apart.items())],
            "lost": [
                {"ctid": tid_text(t), "why": w, "key": self.lost_keys.get(t)} for t, w in sorted(self.lost.items())
            ],
            "key": self.key,
            "expected_rows_after": self.expected_after,
        }


# ---------------------------------------------------------------------------------------------- SQL


@dataclass(frozen=True)
class KeyInfo:
    columns: list[str]
    index_oid: int
    integer: int
    """The width of a single int2, int4 or int8 key column (0: another key): its btree entries decode to text."""
    position: int | None
    """Its position among the carved columns (the table's stored columns), when it is a single column."""


def unique_key(conn: Connection[tuple[Any, ...]], oid: int) -> KeyInfo | None:
    """The table's unique key (catalog.sql.unique_key) and how its btree entries read, or None."""
    key = catalog.unique_key(conn, oid)
    if key is None:
        return None
    cols, types, attnums = key.columns, key.typids, key.attnums
    position = None
    if len(cols) == 1:
        # its place among the carved columns: the stored ones, in attnum order
        order = [c.attnum for c in catalog.columns(conn, oid) if not c.dropped and not c.generated]
        position = order.index(attnums[0]) if attnums[0] in order else None
    # int2, int4, int8 (pg_type.dat)
    width = {21: 2, 23: 4, 20: 8}.get(types[0], 0) if len(cols) == 1 else 0
    return KeyInfo(cols, key.index_oid, width, position)


def decode_key(info: KeyInfo, raw: bytes) -> str:
    """A btree entry's key as text: the integer for an integer key, else its bytes in hex."""
    if info.integer and len(raw) >= info.integer:
        return str(int.from_bytes(raw[: info.integer], "little", signed=True))
    return "\\x" + raw.hex()


def line_key(info: KeyInfo, line: bytes) -> str | None:
    """The key column of a carved COPY text line (an integer key only: others are not compared)."""
    if not info.integer or info.position is None:
        return None
    fields = line.rstrip(b"\n").split(b"\t")
    if info.position >= len(fields):
        return None
    return fields[info.position].decode("ascii", "replace")


def key_hash(key: list[str] | None) -> Any:
    """An order-independent digest term for one row's key: the 64-bit hash of the key's text. hashtextextended
    (PostgreSQL 11+), not md5 cut to bits: the plan hashes every row the repair leaves in place, and md5 with its
    text and bit casts cost several times the scan."""
    if not key:
        return db.sql.SQL("0")
    cols = db.sql.SQL(", ").join(db.sql.Identifier(c) for c in key)
    return db.sql.SQL("hashtextextended(ROW({})::text, 0)").format(cols)


def _count(
    conn: Connection[tuple[Any, ...]], rel: Relation, key: list[str] | None, where: Any, params: Any
) -> tuple[int, int]:
    q = db.sql.SQL("SELECT count(*), coalesce(sum({h}), 0)::text FROM {t} WHERE {w}").format(
        h=key_hash(key), t=rel.ident(), w=where
    )
    with conn.transaction():
        # only the blocks named are read (TID range and TID scans): never a damaged page
        for name in ("enable_seqscan", "enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
            conn.execute(db.sql.SQL("SET LOCAL {} = off").format(db.sql.Identifier(name)))
        row = conn.execute(q, params).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def count_ranges(
    conn: Connection[tuple[Any, ...]], rel: Relation, key: list[str] | None, runs: list[tuple[int, int]]
) -> tuple[int, int]:
    """Rows (and their key digest) on blocks first..last of each run, by TID range scans."""
    n = digest = 0
    where = db.sql.SQL("ctid >= %s::tid AND ctid < %s::tid")
    for a, b in runs:
        c, d = _count(conn, rel, key, where, (f"({a},0)", f"({b + 1},0)"))
        n, digest = n + c, digest + d
    return n, digest


def count_tids(
    conn: Connection[tuple[Any, ...]], rel: Relation, key: list[str] | None, tids: list[Tid]
) -> tuple[int, int]:
    """Visible rows among these ctids (and their key digest), by TID scan."""
    n = digest = 0
    where = db.sql.SQL("ctid = ANY(%s::tid[])")
    for i in range(0, len(tids), TID_BATCH):
        c, d = _count(conn, rel, key, where, ([tid_text(t) for t in tids[i : i + TID_BATCH]],))
        n, digest = n + c, digest + d
    return n, digest


class EarlyCount:
    """The rows (and key digest) on the blocks a repair surely leaves alone, counted on a session of its own while
    planning goes on: the count reads most of the table, the longest part of a plan. Blocks found touched later are
    counted on their own and taken off (counts and digests add up)."""

    def __init__(
        self,
        connect: Callable[[], Connection[tuple[Any, ...]]],
        rel: Relation,
        key: list[str] | None,
        known: set[int],
    ) -> None:
        self.rel, self.key, self.known = rel, key, set(known)
        self._got: tuple[int, int] | Exception | None = None
        self._thread = threading.Thread(target=self._count, args=(connect,), name="pgsurgeon-count", daemon=True)
        self._thread.start()

    def _count(self, connect: Callable[[], Connection[tuple[Any, ...]]]) -> None:
        try:
            conn = connect()
        except (db.Error, PgSurgeonError):
            return  # no second session (max_connections reached): result() counts on the planning session
        try:
            with conn:
                self._got = count_ranges(conn, self.rel, self.key, untouched_runs(self.rel.nblocks, self.known))
        except Exception as exc:  # the planning thread decides (a damaged page the diagnosis missed: a blocker)
            self._got = exc

    def result(self, conn: Connection[tuple[Any, ...]], touched: set[int]) -> tuple[int, int]:
        """Rows and key digest of the blocks not in ``touched`` (which holds the blocks known at the start)."""
        self._thread.join()
        got = self._got
        if isinstance(got, Exception):
            raise got
        if got is None:
            return count_ranges(conn, self.rel, self.key, untouched_runs(self.rel.nblocks, touched))
        later = {b for b in touched - self.known if b < self.rel.nblocks}
        n, digest = count_ranges(conn, self.rel, self.key, block_runs(later))
        return got[0] - n, got[1] - digest


def block_runs(blocks: set[int]) -> list[tuple[int, int]]:
    """Consecutive blocks as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for b in sorted(blocks):
        if runs and b == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((b, b))
    return runs


def untouched_runs(nblocks: int, touched: set[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    start = None
    for b in range(nblocks + 1):
        if b < nblocks and b not in touched:
            if start is None:
                start = b
        elif start is not None:
            runs.append((start, b - 1))
            start = None
    return runs


def table_counts(conn: Connection[tuple[Any, ...]], rel: Relation, key: list[str] | None) -> tuple[int, int]:
    """Every row of the (repaired) table and the digest of their keys."""
    q = db.sql.SQL("SELECT count(*), coalesce(sum({h}), 0)::text FROM {t}").format(h=key_hash(key), t=rel.ident())
    row = conn.execute(q).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def check(ledger: Ledger, rows: int, digest: int, expected_digest: int, table: str, run_dir: str) -> dict[str, Any]:
    """Compare the table after the repair with the ledger; raise :class:`LedgerMismatch` on any difference."""
    expected = ledger.expected_after
    out = {
        "expected_rows": expected,
        "rows": rows,
        "keys_checked": ledger.key is not None,
        "keys_match": ledger.key is None or digest == expected_digest,
    }
    out["match"] = rows == expected and out["keys_match"]
    if rows != expected:
        raise LedgerMismatch(
            f"{table} holds {rows} row(s) after the repair, the ledger says {expected} ({ledger.in_place} in place, "
            f"{ledger.restored} restored, {len(ledger.reinsert)} reinserted): {abs(rows - expected)} row(s) "
            + ("unaccounted for" if rows < expected else "more than planned"),
            hint=f"compare the ledger in {run_dir}/report.json with the table; the pages as they were are in "
            f"{run_dir}/pages, the carved rows in {run_dir}/{CARVED_FILE} and {run_dir}/{APART_FILE}",
        )
    if not out["keys_match"]:
        raise LedgerMismatch(
            f"{table} holds the planned {rows} row(s) but not the planned keys ({', '.join(ledger.key or [])}): a "
            "row the ledger counts is missing and another is there instead",
            hint=f"compare the ledger in {run_dir}/report.json with the table (SELECT ctid, * …)",
        )
    return out


def tid_text(tid: Tid) -> str:
    return f"({tid[0]},{tid[1]})"
