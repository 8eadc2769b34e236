"""Every corruption mode against real servers: PostgreSQL 15 without checksums and 18 with checksums.

Each case builds a small table in a lab cluster made for this module, damages it with ``pgsurgeon corrupt``
(which stops and restarts the server around the write), runs a query and checks what the server does, then
``pgsurgeon undo`` and checks that every file corrupt touched is byte-identical to before (sha256) and that the
query gives its old answer again.

Variants: ``pg15`` (checksums off: the structural symptom), ``pg18`` (checksums on, stored checksum left as
it was: nearly always ``invalid page in block N of relation "…"``) and ``pg18-keep`` (``--keep-checksum-valid``:
the damage happened in memory before the checksum was computed, so PostgreSQL 18 shows the structural
symptom too). docs/corruption-modes.md describes the same outcomes.

Garbage line pointers or tuple headers often crash the backend (SIGSEGV); the postmaster then restarts all
sessions with crash recovery. ``observe`` waits for it and reports ``crash``; such cases accept "crash, error or
wrong rows". Reading damaged pages may also make the server rewrite them (hint bits set through a damaged line
pointer); undo then refuses, and the test repeats it with ``--force``, which restores the saved original pages.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fix_corrupt import (
    NULLS,
    PLAIN,
    TOASTY,
    CorruptLabs,
    Outcome,
    cli,
    digest,
    make_table,
    observe,
    relation_files,
    sql,
    stopped,
    unique,
)
from pgsurgeon.lab import LabCluster

INVALID_PAGE = r'invalid page in block \d+ of relation "?(base|global)/\d+/\d+"?'
QUOTED_INVALID_PAGE = r'invalid page in block \d+ of relation "base/\d+/\d+"'
UNQUOTED_INVALID_PAGE = r"invalid page in block \d+ of relation base/\d+/\d+$"
CHECKSUM_FAILED = r"page verification failed, calculated checksum \d+ but expected \d+"
SHORT_READ = r'could not read blocks? \d+(\.\.\d+)? in file "base/\d+/\d+": read only {got} of 8192 bytes'

SEQ = {
    PLAIN: "SELECT count(*), sum(a), sum(length(b)) FROM {t}",
    TOASTY: "SELECT count(*), sum(a), sum(length(b)), sum(length(c)), md5(string_agg(c, ',' ORDER BY id)) FROM {t}",
    NULLS: "SELECT count(*), count(a), count(b), sum(a), sum(b), sum(length(c)) FROM {t}",
}
BY_INDEX = (
    "SET enable_seqscan = off",
    "SET enable_bitmapscan = off",
    "SELECT count(*), sum(a), min(id), max(id) FROM {t} WHERE id BETWEEN 1 AND 1000",
)


@dataclass(frozen=True)
class Expect:
    """What the server may do: outcome kinds, a regex for the error text, how returned rows compare."""

    kinds: frozenset[str]
    pattern: str | None = None
    rows: str = "differ"
    """same: the query's old answer; differ: another answer; fewer: fewer rows counted."""
    note: str = ""

    def check(self, outcome: Outcome, baseline: Outcome) -> None:
        assert outcome.kind in self.kinds, f"expected {sorted(self.kinds)}, got {outcome}"
        if outcome.kind == "error" and self.pattern is not None:
            assert re.search(self.pattern, outcome.message), f"{outcome.message!r} does not match {self.pattern!r}"
        if outcome.kind == "rows":
            if self.rows == "same":
                assert outcome.rows == baseline.rows, f"rows changed: {outcome} (before: {baseline})"
            else:
                assert outcome.rows != baseline.rows, f"rows unchanged: {outcome}"
            if self.rows == "fewer":
                assert outcome.rows[0][0] < baseline.rows[0][0], f"not fewer rows: {outcome} (before: {baseline})"


def error(pattern: str) -> Expect:
    return Expect(frozenset({"error"}), pattern)


def rows(how: str) -> Expect:
    return Expect(frozenset({"rows"}), rows=how)


INVALID = error(INVALID_PAGE)
SAME = rows("same")
DIFFER = rows("differ")
FEWER = rows("fewer")
BROKEN = Expect(frozenset({"crash", "error", "rows", "timeout"}))
"""A crashed backend, an error, a hang or wrong rows: anything but the old answer."""
WRONG_OR_ERROR = Expect(frozenset({"error", "rows"}))


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    pg15: Expect
    pg18: Expect | None = None
    """With checksums and the stored checksum kept (None: not run)."""
    pg18_keep: Expect | None = None
    """With checksums and --keep-checksum-valid (None: not run)."""
    table: str = PLAIN
    query: tuple[str, ...] = ()
    more: tuple[tuple[tuple[str, ...], Expect], ...] = ()
    """Further (query, expectation) pairs, checked in every variant."""
    log18: str | None = None
    """A regex the PostgreSQL 18 server log must show after the query (variant pg18)."""
    pg_checksums_passes: bool = False
    """pg_checksums --check must accept the damaged files (variant pg18)."""

    def queries(self, table: str) -> list[str]:
        q = self.query or (SEQ[self.table],)
        return [s.format(t=table) for s in q]


CASES = [
    # ---------------------------------------------------------------- page header
    Case("header-random", ("header", "--seed", "11"), INVALID, INVALID, INVALID),
    Case("header-pd_lower", ("header", "--field", "pd_lower", "--seed", "1"), INVALID, INVALID, INVALID),
    # pd_lower shrunk to one line pointer: the other tuples of the page vanish without an error
    Case(
        "header-pd_lower-shrunk", ("header", "--field", "pd_lower", "--value", "28", "--block", "0"), FEWER, None, FEWER
    ),
    Case("header-pd_upper", ("header", "--field", "pd_upper", "--seed", "1"), INVALID, None, INVALID),
    # pd_special = 8000 keeps pd_upper <= pd_special: PageIsVerified accepts it and heap pages ignore it
    Case(
        "header-pd_special-8000",
        ("header", "--field", "pd_special", "--value", "8000", "--block", "1"),
        SAME,
        INVALID,
        SAME,
    ),
    Case("header-pd_special", ("header", "--field", "pd_special", "--seed", "3"), INVALID, None, INVALID),
    Case("header-pd_flags", ("header", "--field", "pd_flags", "--seed", "1"), INVALID, INVALID, INVALID),
    # the size/version word is not checked when reading
    Case(
        "header-pd_pagesize_version", ("header", "--field", "pd_pagesize_version", "--seed", "1"), SAME, INVALID, SAME
    ),
    # pd_lsn is not checked when reading either (see test_pd_lsn_in_the_future_breaks_checkpoints)
    Case("header-pd_lsn", ("header", "--field", "pd_lsn", "--seed", "1"), SAME, INVALID, SAME),
    Case("header-pd_prune_xid", ("header", "--field", "pd_prune_xid", "--seed", "1"), SAME, None, SAME),
    # ---------------------------------------------------------------- line pointers
    Case("item-ids", ("item-ids", "--seed", "1"), BROKEN, INVALID, BROKEN),
    Case("item-id-lp_off", ("item-id", "--field", "lp_off", "--seed", "1"), BROKEN, None, BROKEN),
    Case("item-id-lp_flags", ("item-id", "--field", "lp_flags", "--seed", "1"), FEWER, None, FEWER),
    Case("item-id-lp_len", ("item-id", "--field", "lp_len", "--seed", "1"), SAME, None, SAME),
    Case("item-id-random", ("item-id", "--seed", "4"), BROKEN, INVALID, BROKEN),
    # ---------------------------------------------------------------- tuple header
    # an xmin from before the oldest pg_xact segment, hint bits cleared: the server looks it up and fails
    Case(
        "tuple-t_xmin-old",
        ("tuple-header", "--field", "t_xmin", "--value", "3000000000", "--clear-hints", "--seed", "1"),
        error(r"could not access status of transaction 3000000000"),
        INVALID,
        error(r"could not access status of transaction 3000000000"),
    ),
    # a random xmin with its hint bits kept: committed but "in the future" for every snapshot
    Case("tuple-t_xmin", ("tuple-header", "--field", "t_xmin", "--seed", "1"), FEWER, None, FEWER),
    # an xmax in the future (hint bits cleared): the deleter seems still running, the row stays visible
    Case("tuple-t_xmax", ("tuple-header", "--field", "t_xmax", "--seed", "1", "--clear-hints"), SAME, None, SAME),
    Case("tuple-t_field3", ("tuple-header", "--field", "t_field3", "--seed", "1"), SAME, None, SAME),
    Case("tuple-t_ctid", ("tuple-header", "--field", "t_ctid", "--seed", "1"), SAME, None, SAME),
    Case(
        "tuple-t_infomask",
        ("tuple-header", "--field", "t_infomask", "--seed", "1"),
        WRONG_OR_ERROR,
        INVALID,
        WRONG_OR_ERROR,
    ),
    Case(
        "tuple-t_infomask2-natts", ("tuple-header", "--field", "t_infomask2", "--value", "1"), DIFFER, INVALID, DIFFER
    ),
    # a random natts is nearly always above the real count, which is harmless
    Case("tuple-t_infomask2", ("tuple-header", "--field", "t_infomask2", "--seed", "2"), SAME, None, SAME),
    Case("tuple-t_hoff", ("tuple-header", "--field", "t_hoff", "--seed", "1"), BROKEN, None, BROKEN),
    Case("tuple-t_bits", ("tuple-header", "--field", "t_bits", "--seed", "1"), DIFFER, INVALID, DIFFER, table=NULLS),
    Case("tuple-random", ("tuple-header", "--seed", "1"), BROKEN, INVALID, BROKEN),
    # ---------------------------------------------------------------- tuple data
    Case("data-random", ("tuple-data", "--seed", "1"), WRONG_OR_ERROR, INVALID, WRONG_OR_ERROR),
    Case("data-bitflip", ("tuple-data", "--field", "bitflip", "--flips", "4", "--seed", "1"), BROKEN, None, BROKEN),
    Case(
        "data-varlena-huge",
        ("tuple-data", "--field", "varlena", "--column", "c", "--value", "0x3FFFFFFF", "--seed", "1"),
        error(r"invalid memory alloc request size 1073741827"),
        INVALID,
        error(r"invalid memory alloc request size 1073741827"),
        table=TOASTY,
    ),
    Case(
        "data-varlena-short",
        ("tuple-data", "--field", "varlena", "--column", "b", "--value", "127", "--seed", "1"),
        DIFFER,
        None,
        DIFFER,
        table=TOASTY,
    ),
    Case(
        "data-varlena-random", ("tuple-data", "--field", "varlena", "--seed", "1"), BROKEN, None, BROKEN, table=TOASTY
    ),
    # ---------------------------------------------------------------- TOAST chunks
    Case(
        "toast-chunk_seq",
        ("toast", "--field", "chunk_seq", "--value", "5", "--seed", "1"),
        error(r"unexpected chunk number 5 \(expected \d\) for toast value \d+ in pg_toast_\d+"),
        INVALID,
        error(r"unexpected chunk number 5 \(expected \d\) for toast value \d+ in pg_toast_\d+"),
        table=TOASTY,
    ),
    # the value id is only checked by the index that finds the chunk: reads go on working
    Case("toast-chunk_id", ("toast", "--field", "chunk_id", "--seed", "1"), SAME, None, SAME, table=TOASTY),
    Case(
        "toast-chunk_data",
        ("toast", "--field", "chunk_data", "--seed", "1"),
        WRONG_OR_ERROR,
        INVALID,
        WRONG_OR_ERROR,
        table=TOASTY,
    ),
    Case(
        "toast-chunk_size",
        ("toast", "--field", "chunk_size", "--seed", "1"),
        error(r"unexpected chunk size \d+ \(expected \d+\) in chunk \d of \d for toast value"),
        None,
        error(r"unexpected chunk size \d+ \(expected \d+\) in chunk \d of \d for toast value"),
        table=TOASTY,
    ),
    Case(
        "toast-missing",
        ("toast", "--field", "missing", "--seed", "1"),
        error(r"(unexpected|missing) chunk number \d+ .*for toast value \d+ in pg_toast_\d+"),
        INVALID,
        error(r"(unexpected|missing) chunk number \d+ .*for toast value \d+ in pg_toast_\d+"),
        table=TOASTY,
    ),
    # ---------------------------------------------------------------- btree pages
    Case("btree-item", ("btree", "--field", "item", "--seed", "2"), DIFFER, INVALID, DIFFER, query=BY_INDEX),
    Case(
        "btree-item-beyond-end",
        ("btree", "--field", "item", "--value", "100000,1", "--seed", "1"),
        error(r'could not read blocks? 100000(\.\.100000)? in file "base/\d+/\d+"'),
        None,
        error(r'could not read blocks? 100000(\.\.100000)? in file "base/\d+/\d+"'),
        query=BY_INDEX,
    ),
    Case("btree-high_key", ("btree", "--field", "high_key", "--seed", "1"), FEWER, INVALID, FEWER, query=BY_INDEX),
    Case("btree-siblings", ("btree", "--field", "siblings", "--seed", "1"), BROKEN, None, BROKEN, query=BY_INDEX),
    Case("btree-btpo_next", ("btree", "--field", "btpo_next", "--seed", "1"), DIFFER, None, DIFFER, query=BY_INDEX),
    Case("btree-btpo_prev", ("btree", "--field", "btpo_prev", "--seed", "1"), SAME, None, SAME, query=BY_INDEX),
    Case("btree-btpo_level", ("btree", "--field", "btpo_level", "--seed", "1"), SAME, None, SAME, query=BY_INDEX),
    Case("btree-btpo_flags", ("btree", "--field", "btpo_flags", "--seed", "1"), SAME, None, SAME, query=BY_INDEX),
    Case("btree-special", ("btree", "--field", "special", "--seed", "1"), BROKEN, INVALID, BROKEN, query=BY_INDEX),
    # ---------------------------------------------------------------- whole pages and files
    # checksums off: pd_checksum is not even looked at
    Case("checksum", ("checksum", "--seed", "1"), SAME, INVALID, log18=CHECKSUM_FAILED),
    # an all-zero page is a valid new page: its rows are gone without a word, and pg_checksums agrees
    Case("zero", ("zero", "--seed", "1"), FEWER, FEWER, None, pg_checksums_passes=True),
    Case("torn", ("torn", "--seed", "1"), BROKEN, INVALID, BROKEN, log18=CHECKSUM_FAILED),
    Case("misdirected", ("misdirected", "--seed", "1"), DIFFER, INVALID, DIFFER, log18=CHECKSUM_FAILED),
    Case("bitflips", ("bitflips", "--count", "20", "--seed", "1"), BROKEN, INVALID, BROKEN, table=TOASTY),
    # a sequential scan stops at the end of the file (rows lost silently); the index still points past it
    Case(
        "truncate",
        ("truncate", "--block", "2"),
        error(SHORT_READ.format(got=0)),
        error(SHORT_READ.format(got=0)),
        query=BY_INDEX,
        more=(((SEQ[PLAIN],), FEWER),),
    ),
    # cut inside a block: the partial block does not count either, and reading it is a short read
    Case(
        "truncate-torn",
        ("truncate", "--block", "3", "--tear-at", "4096"),
        error(SHORT_READ.format(got=4096)),
        # 18 reads the block asynchronously and reports the retry of the missing part
        error(SHORT_READ.format(got=0)),
        query=BY_INDEX,
        more=(((SEQ[PLAIN],), FEWER),),
    ),
    Case(
        "missing-segment-0",
        ("missing-segment",),
        error(r'could not open file "base/\d+/\d+": No such file or directory'),
        error(r'could not open file "base/\d+/\d+": No such file or directory'),
    ),
]

VARIANTS = [
    pytest.param(case, variant, id=f"{case.id}-{variant}")
    for case in CASES
    for variant, expect in (("pg15", case.pg15), ("pg18", case.pg18), ("pg18-keep", case.pg18_keep))
    if expect is not None
]


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "modes")
    try:
        yield labs
    finally:
        labs.close()


def _record(case: Case, variant: str, outcome: Outcome, extra: dict[str, object]) -> None:
    """With PGSURGEON_RECORD_SYMPTOMS=FILE, append what the server did (for docs/corruption-modes.md)."""
    target = os.environ.get("PGSURGEON_RECORD_SYMPTOMS")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"case": case.id, "variant": variant, "outcome": str(outcome), **extra}) + "\n")


def corrupt_and_undo(
    lab: LabCluster, case: Case, variant: str, tmp_path: Path
) -> tuple[Outcome, Outcome, dict[str, object]]:
    """Build the table, damage it, observe, undo, check the files: (baseline, outcome, facts)."""
    table = make_table(lab, case.table)
    queries = case.queries(table)
    baseline = observe(lab, queries)
    assert baseline.kind == "rows", baseline
    more_baselines = {q: observe(lab, [x.format(t=table) for x in q]) for q, _ in case.more}
    files = relation_files(lab, table)
    before = digest(files)
    manifest = tmp_path / "corrupt.json"
    extra = ("--keep-checksum-valid",) if variant == "pg18-keep" else ()
    code, _, err = cli("corrupt", *case.args, *extra, "--dsn", lab.dsn(), "--table", table, "--manifest", str(manifest))
    assert code == 0, err
    doc = json.loads(manifest.read_text())
    assert doc["state"] == "applied" and doc["changes"], doc
    assert {str(lab.pgdata / c["file"]) for c in doc["changes"]} <= set(before)
    assert digest(files) != before
    if case.pg_checksums_passes and variant == "pg18":
        with stopped(lab):
            check = lab.run_tool("pg_checksums", "--check", "-D", str(lab.pgdata), check=False)
        assert check.returncode == 0, check.stderr
    log_start = len(lab.log_text())
    outcome = observe(lab, queries)
    facts: dict[str, object] = {"notes": doc["notes"]}
    if case.log18 and variant == "pg18":
        log = lab.log_text()[log_start:]
        found = re.search(case.log18, log)
        assert found, f"server log lacks {case.log18!r}: {log[-800:]}"
        facts["log"] = found.group(0)
    more: list[str] = []
    for more_queries, expect in case.more:
        more_outcome = observe(lab, [q.format(t=table) for q in more_queries])
        more.append(str(more_outcome))
        expect.check(more_outcome, more_baselines[more_queries])
    if more:
        facts["more"] = more
    # undo is refused when the server rewrote a damaged page since (hint bits set through the damage); forced,
    # it puts the saved original pages back
    code, _, err = cli("undo", str(manifest))
    if code != 0:
        assert "no longer what corrupt left" in err, err
        facts["undo_forced"] = True
        code, _, err = cli("undo", str(manifest), "--force")
        assert code == 0, err
    assert digest(files) == before, "undo did not restore every file byte for byte"
    again = observe(lab, queries)
    assert again.rows == baseline.rows, f"after undo: {again} (before: {baseline})"
    sql(lab, f"DROP TABLE {table}")
    return baseline, outcome, facts


@pytest.mark.parametrize(("case", "variant"), VARIANTS)
def test_mode(case: Case, variant: str, labs: CorruptLabs, tmp_path: Path) -> None:
    version = "15" if variant == "pg15" else "18"
    lab = labs.get(version)
    expect = {"pg15": case.pg15, "pg18": case.pg18, "pg18-keep": case.pg18_keep}[variant]
    assert expect is not None
    baseline, outcome, facts = corrupt_and_undo(lab, case, variant, tmp_path)
    _record(case, variant, outcome, facts)
    expect.check(outcome, baseline)
    if outcome.kind == "error" and "could not access status of transaction" in outcome.message:
        assert re.fullmatch(
            r'Could not open file "pg_xact/[0-9A-F]{4}": No such file or directory\.', outcome.detail or ""
        )
    if outcome.kind == "error" and re.search(INVALID_PAGE, outcome.message):
        # the path is quoted from PostgreSQL 18 on
        assert re.search(QUOTED_INVALID_PAGE if version == "18" else UNQUOTED_INVALID_PAGE, outcome.message)


# ------------------------------------------------------------------------------------------ scenarios


def _corrupt(lab: LabCluster, table: str, manifest: Path, *args: str) -> dict[str, object]:
    code, _, err = cli("corrupt", *args, "--dsn", lab.dsn(), "--table", table, "--manifest", str(manifest))
    assert code == 0, err
    doc: dict[str, object] = json.loads(manifest.read_text())
    return doc


@pytest.mark.parametrize("version", ["15", "18"])
def test_pd_lsn_in_the_future_breaks_checkpoints(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    """Reads ignore pd_lsn. But once a read sets hint bits, writing the page back must first flush WAL up to
    its LSN, which does not exist: every checkpoint fails, and so does the shutdown checkpoint."""
    lab = labs.get(version)
    table = unique("lsn_")
    # no read before the damage: the tuples have no hint bits yet
    sql(lab, f"CREATE TABLE {table} (id int, a int)", f"INSERT INTO {table} SELECT g, g FROM generate_series(1, 500) g")
    sql(lab, "CHECKPOINT")
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{table}')")[0]
    block0 = (lab.pgdata / str(path)).read_bytes()[:8192]
    keep = ("--keep-checksum-valid",) if version == "18" else ()
    manifest = tmp_path / "lsn.json"
    _corrupt(lab, table, manifest, "header", "--field", "pd_lsn", "--value", "0xA00000000", "--block", "0", *keep)
    start = len(lab.log_text())
    assert observe(lab, f"SELECT count(*), sum(a) FROM {table}").rows == [(500, 125250)]
    failed = observe(lab, "CHECKPOINT")
    assert failed.kind == "error" and "checkpoint request failed" in failed.message, failed
    log = lab.log_text()[start:]
    assert re.search(r"xlog flush request A/0 is not satisfied --- flushed only to [0-9A-F]+/[0-9A-F]+", log), log
    # undo stops the server: its shutdown checkpoint fails the same way ("abnormal database system shutdown"),
    # the hint bits are lost and crash recovery runs at the next start
    code, _, err = cli("undo", str(manifest))
    assert code == 0, err
    assert "abnormal database system shutdown" in lab.log_text()[start:]
    # block 0 is as before; other blocks may have got their hint bits back from WAL (full-page images on 18)
    assert (lab.pgdata / str(path)).read_bytes()[:8192] == block0
    assert observe(lab, "CHECKPOINT").kind == "rows"
    sql(lab, f"DROP TABLE {table}")


@pytest.mark.parametrize("version", ["15", "18"])
def test_multixact_xmax_in_two_runs_undone_last_first(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    """xmax = 50000 and then t_infomask with HEAP_XMAX_IS_MULTI (and HEAP_XMAX_INVALID cleared): the server
    asks the MultiXact SLRU about a multi that was never created. The two manifests undo last first."""
    lab = labs.get(version)
    table = make_table(lab, PLAIN)
    query = SEQ[PLAIN].format(t=table)
    baseline = observe(lab, query)
    files = relation_files(lab, table)
    before = digest(files)
    keep = ("--keep-checksum-valid",) if version == "18" else ()
    where = ("--block", "0", "--item", "10")
    first, second = tmp_path / "xmax.json", tmp_path / "infomask.json"
    _corrupt(lab, table, first, "tuple-header", "--field", "t_xmax", "--value", "50000", *where, *keep)
    assert observe(lab, query).rows == baseline.rows  # HEAP_XMAX_INVALID still set: xmax is ignored
    # 0x1102 = HEAP_XMAX_IS_MULTI | HEAP_XMIN_COMMITTED | HEAP_HASVARWIDTH (was 0x0902, with HEAP_XMAX_INVALID)
    doc = _corrupt(lab, table, second, "tuple-header", "--field", "t_infomask", "--value", "0x1102", *where, *keep)
    assert "t_infomask 2306 -> 4354" in str(doc["notes"])
    outcome = observe(lab, query)
    assert outcome.kind == "error", outcome
    assert re.search(r"MultiXactId 50000 has not been created yet -- apparent wraparound", outcome.message)
    code, _, err = cli("undo", str(first))
    assert code == 1 and "no longer what corrupt left" in err, err
    for manifest in (second, first):
        code, _, err = cli("undo", str(manifest))
        assert code == 0, err
    assert digest(files) == before
    assert observe(lab, query).rows == baseline.rows
    sql(lab, f"DROP TABLE {table}")


@pytest.mark.parametrize("version", ["15", "18"])
def test_last_toast_chunk_missing(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    """Without its last chunk a value ends early: "missing chunk number N" (the first chunk gone gives
    "unexpected chunk number 1 (expected 0)" instead, see the toast-missing case)."""
    lab = labs.get(version)
    table = make_table(lab, TOASTY)
    (toast,) = sql(lab, f"SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = '{table}'::regclass")[0]
    (ctid, value) = sql(lab, f"SELECT ctid::text, chunk_id FROM {toast} WHERE chunk_seq = 1 LIMIT 1")[0]
    block, item = str(ctid).strip("()").split(",")
    keep = ("--keep-checksum-valid",) if version == "18" else ()
    manifest = tmp_path / "missing.json"
    _corrupt(lab, table, manifest, "toast", "--field", "missing", "--block", block, "--item", item, *keep)
    outcome = observe(lab, SEQ[TOASTY].format(t=table))
    assert outcome.kind == "error", outcome
    assert re.fullmatch(rf"missing chunk number 1 for toast value {value} in {toast.split('.')[-1]}", outcome.message)
    code, _, err = cli("undo", str(manifest))
    assert code == 0, err
    sql(lab, f"DROP TABLE {table}")


@pytest.mark.slow
@pytest.mark.parametrize("version", ["15", "18"])
def test_missing_second_segment_of_a_1gb_table(version: str, labs: CorruptLabs, tmp_path: Path) -> None:
    """Segment .1 removed: md.c stops counting blocks at the missing segment, so a sequential scan silently
    returns only the rows of the first gigabyte; an index that points into the lost segment fails. Then segment 0
    cut short: the server stops counting at the cut, and salvage carves the segment past it."""
    lab = labs.get(version)
    table = unique("big_")
    # one row per page (fillfactor 10, 800-byte rows): 131072 + 40 pages = segment 0 full and 40 blocks in .1;
    # created and filled in one transaction, which wal_level = minimal does without WAL
    with lab.connect() as conn, conn.transaction():
        conn.execute(f"CREATE TABLE {table} (id int, pad text) WITH (fillfactor = 10)")
        conn.execute(f"INSERT INTO {table} SELECT g, repeat('x', 800) FROM generate_series(1, 131112) g")
        conn.execute(f"CREATE INDEX ON {table} (id)")
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{table}')")[0]
    seg1 = lab.pgdata / f"{path}.1"
    saved = digest([seg1])
    manifest = tmp_path / "segment.json"
    doc = _corrupt(lab, table, manifest, "missing-segment")
    assert doc["changes"][0]["file"] == f"{path}.1"  # type: ignore[index]
    assert not seg1.exists()
    assert observe(lab, f"SELECT count(*) FROM {table}").rows == [(131072,)]
    lost = observe(lab, [*BY_INDEX[:2], f"SELECT pad FROM {table} WHERE id = 131100"])
    assert lost.kind == "error" and lost.sqlstate == "58P01", lost
    assert re.search(
        rf'could not open file "{path}\.1" \(target block 131099\): No such file or directory', lost.message
    )
    code, _, err = cli("undo", str(manifest))
    assert code == 0, err
    assert digest([seg1]) == saved
    assert observe(lab, f"SELECT count(*) FROM {table}").rows == [(131112,)]
    # segment 0 cut short at block 131000: the server stops counting there, and .1 is past the gap. salvage
    # saves what SQL returns, carves .1 from its file, and names the 72 cut blocks the index points into.
    sql(lab, "CHECKPOINT")
    manifest = tmp_path / "truncate.json"
    _corrupt(lab, table, manifest, "truncate", "--block", "131000")
    assert observe(lab, f"SELECT count(*) FROM {table}").rows == [(131000,)]
    out = tmp_path / "saved"
    code, stdout, err = cli(
        "salvage", "--dsn", lab.dsn(), "--table", table, "--out", str(out), "--report-format", "json", "-j", "2"
    )
    report = json.loads(stdout)
    assert any("segment file is missing before them" in n for n in report["notes"]), report["notes"]
    ids = {int(ln.split("\t", 1)[0]) for ln in Path(report["outputs"]["rows_file"]).read_text().splitlines()}
    assert ids == set(range(1, 131001)) | set(range(131073, 131113)), (len(ids), report["rows"])
    assert report["rows"]["carved"] == 40, report["rows"]
    assert sorted({x["block"] for x in report["lost"]}) == list(range(131000, 131072)), report["lost"][:3]
    assert code != 0, err
    code, _, err = cli("undo", str(manifest))
    assert code == 0, err
    sql(lab, f"DROP TABLE {table}", "CHECKPOINT")
