"""One chaos seed, end to end, against the ground truth: build the tables, record every row (key, digest of its
values, ctid) in truth tables beside them, damage them several ways at once (``simulate.chaos``), repair each table
(``--execute --reinsert``), then check the invariants of the ledger:

* every row of the ground truth is in the table with its values, kept apart, or lost by its ctid, and the ledger
  counts exactly the ground truth's rows (saved + kept apart + lost = ground truth);
* no key twice, no key the table never had, no row with other values than it had;
* the table holds what the ledger planned (the repair's own check passed);
* ``pg_amcheck --heapallindexed`` is clean and ``pg_dump`` succeeds.

Comparisons run in SQL against the truth tables, so memory does not grow with the tables. Used by
``pgsurgeon lab --chaos``, tests/test_chaos.py and bench/chaos.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import db
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.lab import LabCluster
from pgsurgeon.simulate import chaos

Say = Callable[[str], None]
TRUTH_SUFFIX = "_truth"


@dataclass
class TableOutcome:
    table: str
    truth: int = 0
    after: int = 0
    saved: int = 0
    """Ground-truth rows in the table after the repair, with their values."""
    apart: int = 0
    lost: int = 0
    reinserted: int = 0
    frozen: int = 0
    ledger_rows: int = 0
    wrong: int = 0
    duplicates: int = 0
    extra: int = 0
    unaccounted: list[str] = field(default_factory=list)
    """ctids (in the ground truth) of rows missing from the table that the ledger neither keeps apart nor lists."""
    clean: bool = False
    ledger_match: bool = False
    error: str | None = None
    seconds: float = 0.0

    def violations(self) -> list[str]:
        out = []
        if self.error:
            out.append(f"{self.table}: {self.error}")
        if self.wrong:
            out.append(f"{self.table}: {self.wrong} row(s) with other values than before")
        if self.duplicates:
            out.append(f"{self.table}: {self.duplicates} duplicate key(s)")
        if self.extra:
            out.append(f"{self.table}: {self.extra} key(s) the table never had")
        if self.unaccounted:
            out.append(
                f"{self.table}: {len(self.unaccounted)} row(s) missing and not in the ledger: "
                + " ".join(self.unaccounted[:10])
            )
        if not self.error and self.saved + self.apart + self.lost != self.truth:
            out.append(
                f"{self.table}: saved {self.saved} + kept apart {self.apart} + lost {self.lost} != ground truth "
                f"{self.truth}"
            )
        if not self.error and self.ledger_rows < self.truth:
            out.append(f"{self.table}: the ledger counts {self.ledger_rows} row(s), the ground truth {self.truth}")
        if not self.error and not self.ledger_match:
            out.append(f"{self.table}: the table does not match the ledger")
        if not self.error and not self.clean:
            out.append(f"{self.table}: not clean after the repair")
        return out

    @property
    def phantom(self) -> int:
        """Ledger entries beyond the ground truth: ctids it lists as lost or kept apart that held no live row (an
        index entry into a destroyed page cannot tell a dead tuple from a live one)."""
        return max(0, self.ledger_rows - self.truth)

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "phantom": self.phantom, "violations": self.violations()}


@dataclass
class SeedOutcome:
    seed: int
    version: str
    checksums: bool
    rows: int
    damages: list[str] = field(default_factory=list)
    tables: list[TableOutcome] = field(default_factory=list)
    amcheck_ok: bool = False
    amcheck: str = ""
    dump_ok: bool = False
    dump: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    def violations(self) -> list[str]:
        out = [v for t in self.tables for v in t.violations()]
        if not self.amcheck_ok:
            out.append(f"pg_amcheck --heapallindexed: {self.amcheck[:300]}")
        if not self.dump_ok:
            out.append(f"pg_dump: {self.dump[:300]}")
        return out

    def totals(self) -> dict[str, int]:
        keys = ("truth", "saved", "apart", "lost", "reinserted", "frozen", "wrong", "duplicates", "extra", "phantom")
        return {k: sum(int(getattr(t, k)) for t in self.tables) for k in keys}

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "version": self.version,
            "checksums": self.checksums,
            "rows": self.rows,
            "damages": self.damages,
            "tables": [t.to_json() for t in self.tables],
            "totals": self.totals(),
            "amcheck_ok": self.amcheck_ok,
            "dump_ok": self.dump_ok,
            "violations": self.violations(),
            "seconds": self.seconds,
        }


def _q(conn: Any, query: Any, params: Any = None) -> list[tuple[Any, ...]]:
    return list(conn.execute(query, params).fetchall())


def record_truth(conn: Any, table: str) -> int:
    """The ground truth of ``table`` in ``<table>_truth``: key, digest of the row's values, ctid."""
    t, u = db.sql.Identifier(table), db.sql.Identifier(table + TRUTH_SUFFIX)
    conn.execute(db.sql.SQL("DROP TABLE IF EXISTS {}").format(u))
    conn.execute(
        db.sql.SQL("CREATE TABLE {} AS SELECT id, md5(pgs_row::text) AS m, ctid::text AS c FROM {} pgs_row").format(
            u, t
        )
    )
    conn.execute(db.sql.SQL("CREATE INDEX ON {} (id)").format(u))
    return _one(conn, db.sql.SQL("SELECT count(*) FROM {}").format(u))


def _one(conn: Any, query: Any) -> int:
    return int(_q(conn, query)[0][0])


def compare(conn: Any, out: TableOutcome, ledger: dict[str, Any]) -> None:
    """The table after the repair against its truth table and the repair's ledger."""
    sq = db.sql.SQL
    names = {"t": db.sql.Identifier(out.table), "u": db.sql.Identifier(out.table + TRUTH_SUFFIX)}
    out.after = _one(conn, sq("SELECT count(*) FROM {t}").format(**names))
    out.duplicates = out.after - _one(conn, sq("SELECT count(DISTINCT id) FROM {t}").format(**names))
    joined = "FROM {t} pgs_row JOIN {u} u ON u.id = pgs_row.id"
    out.saved = _one(conn, sq(f"SELECT count(DISTINCT u.id) {joined} WHERE u.m = md5(pgs_row::text)").format(**names))
    out.wrong = _one(conn, sq(f"SELECT count(*) {joined} WHERE u.m <> md5(pgs_row::text)").format(**names))
    out.extra = _one(
        conn, sq("SELECT count(*) FROM {t} x WHERE NOT EXISTS (SELECT 1 FROM {u} u WHERE u.id = x.id)").format(**names)
    )
    missing = _q(
        conn,
        sq("SELECT u.c, u.id::text FROM {u} u WHERE NOT EXISTS (SELECT 1 FROM {t} x WHERE x.id = u.id)").format(
            **names
        ),
    )
    apart = {str(x["ctid"]) for x in ledger.get("kept_apart", [])}
    lost = {str(x["ctid"]) for x in ledger.get("lost", [])}
    # a lost row is named by its ctid, or by its key when only index entries (of other versions) told of it
    lost_keys = {str(x["key"]) for x in ledger.get("lost", []) if x.get("key") is not None}
    out.apart = sum(1 for c, _ in missing if c in apart)
    out.lost = sum(1 for c, k in missing if c not in apart and (c in lost or k in lost_keys))
    out.unaccounted = sorted(c for c, k in missing if c not in apart and c not in lost and k not in lost_keys)
    out.reinserted = len(ledger.get("reinserted", []))
    out.frozen = len(ledger.get("frozen", []))
    out.ledger_rows = int(ledger.get("rows", 0))


def repair_table(cluster: LabCluster, out: TableOutcome, run_dir: Path, salvage: bool) -> dict[str, Any]:
    """``repair --execute --reinsert`` of one table; the ledger as the execution left it."""
    from pgsurgeon.repair import RepairRequest, build_plan, execute

    plan, ctx = build_plan(
        RepairRequest(
            dsn=cluster.dsn(), table=f"public.{out.table}", reinsert=True, skip_salvage=not salvage, run_dir=run_dir
        )
    )
    try:
        if plan.blockers:
            out.error = f"repair refused: {plan.blockers[0][0]}"
            return plan.ledger.to_json()
        if not plan.steps:
            out.clean = out.ledger_match = True
            return plan.ledger.to_json()
        try:
            report = execute(plan, ctx, run_dir, lambda _text: None)
        except PgSurgeonError as exc:
            out.error = f"repair failed: {exc.message}"
            return plan.ledger.to_json()
    finally:
        ctx.conn.close()
    out.clean = bool((report.get("after") or {}).get("clean"))
    out.ledger_match = bool((report.get("ledger_check") or {}).get("match"))
    return dict(report.get("ledger") or plan.ledger.to_json())


def run_seed(
    cluster: LabCluster,
    seed: int,
    rows: int,
    work_dir: Path,
    say: Say,
    salvage: bool = False,
    per_table: tuple[int, int] = (3, 6),
) -> SeedOutcome:
    """Build, damage, repair and check one seed on ``cluster`` (its extensions must be installed)."""
    res = SeedOutcome(seed, str(cluster.version), cluster.checksums, rows)
    started = time.monotonic()
    with cluster.connect() as conn:
        say(f"seed {seed}: building {rows} rows")
        tables = chaos.build_database(conn, rows, seed)
        for t in tables:
            record_truth(conn, t.name)
        conn.execute("CHECKPOINT")
        res.seconds["build"] = round(time.monotonic() - started, 1)
        t0 = time.monotonic()
        run = chaos.chaos(conn, cluster.dsn(), tables, seed, work_dir / "manifests", per_table=per_table)
    res.damages = [d.describe() for d in run.damages]
    for d in res.damages:
        say(f"seed {seed}: damaged {d}")
    res.seconds["damage"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    for t in tables:
        out = TableOutcome(t.name)
        t1 = time.monotonic()
        with cluster.connect() as conn:
            out.truth = int(
                _q(conn, db.sql.SQL("SELECT count(*) FROM {}").format(db.sql.Identifier(t.name + TRUTH_SUFFIX)))[0][0]
            )
        say(f"seed {seed}: repairing {t.name}")
        try:
            ledger = repair_table(cluster, out, work_dir / f"repair-{t.name}", salvage)
            with cluster.connect() as conn:
                compare(conn, out, ledger)
        except Exception as exc:  # one table's failure is a violation of its own; the others are still checked
            out.error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        out.seconds = round(time.monotonic() - t1, 1)
        res.tables.append(out)
    res.seconds["repair"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    check = cluster.run_tool(
        "pg_amcheck", "-d", "postgres", "--heapallindexed", "-t", "public.chaos_*", check=False, timeout=3600
    )
    res.amcheck_ok = check.returncode == 0 and not check.stdout.strip()
    res.amcheck = (check.stdout + check.stderr).strip()
    dump = cluster.run_tool("pg_dump", "-d", "postgres", "-f", "/dev/null", check=False, timeout=3600)
    res.dump_ok = dump.returncode == 0
    res.dump = dump.stderr.strip()
    res.seconds["check"] = round(time.monotonic() - t0, 1)
    res.seconds["total"] = round(time.monotonic() - started, 1)
    return res
