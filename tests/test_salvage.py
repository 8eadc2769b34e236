"""``pgsurgeon salvage`` against real PostgreSQL 15 and 18, compared with a ground-truth copy taken before the
damage.

One throwaway lab cluster per version for the whole module (the session clusters are never damaged). Every
simulator mode gets its own copy of the test table; they are all damaged in one stop of the server, then each is
salvaged and compared with its ground truth:

* every row on an undamaged page is saved exactly once, with its values;
* no row is saved twice, no deleted, updated-away or aborted row comes back;
* on pages whose header or item-ID array is destroyed (or whose checksum alone is wrong) every row is carved back
  with the right values, TOAST-ed ones included;
* what cannot be saved is reported lost, with the block.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import CorruptLabs, cli, stopped, wait_ready
from pgsurgeon import core
from pgsurgeon.lab import LabCluster

SETTINGS = (
    "SET TimeZone = 'UTC'",
    "SET extra_float_digits = 1",
    "SET DateStyle = 'ISO, MDY'",
    "SET IntervalStyle = postgres",
    "SET bytea_output = hex",
)

# Every 10th row has a ~3.2 kB text that is TOAST-ed; every 11th is updated (HOT where it fits), every 13th
# deleted, every 17th updated by a transaction that aborts; column z is dropped after the load and column o added
# with a default afterwards (so old rows read it from attmissingval).
TABLE_SQL = """
CREATE TABLE {t} (
    id integer PRIMARY KEY, a integer, b text, c text, d numeric, e timestamptz, f float8, g bytea, h jsonb,
    i integer[], j uuid, k boolean, l date, m varchar(20), n interval, z integer, p text[]
);
INSERT INTO {t}
SELECT g, g % 7, 'row ' || g,
       CASE WHEN g % 10 = 0 THEN (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 100) i) END,
       g / 3.0, '2024-01-01'::timestamptz + g * interval '17 minutes', g * 0.1, decode(md5(g::text), 'hex'),
       jsonb_build_object('k', g, 'arr', jsonb_build_array(1, 'x', null, true), 's', 'a"b\\c'),
       ARRAY[g, g + 1, NULL], md5(g::text)::uuid, g % 2 = 0, '2020-02-29'::date + g,
       CASE WHEN g % 9 = 0 THEN NULL ELSE 'm' || g END, make_interval(0, g % 14, 0, g % 30, g % 24, 0, g * 0.5), g,
       ARRAY['a b', g::text, 'NULL', '', 'q"\\']
FROM generate_series(1, {n}) g;
ALTER TABLE {t} DROP COLUMN z;
ALTER TABLE {t} ADD COLUMN o integer DEFAULT 42;
UPDATE {t} SET a = a + 100 WHERE id % 11 = 0;
DELETE FROM {t} WHERE id % 13 = 0;
"""
ROWS = 1200


@dataclass
class Truth:
    """The table as SQL saw it before the damage: id -> (block, lp, COPY line)."""

    rows: dict[str, tuple[int, int, str]]
    nblocks: int

    def on_blocks(self, blocks: set[int]) -> set[str]:
        return {k for k, (b, _, _) in self.rows.items() if b in blocks}


def sql(lab: LabCluster, *statements: str, dbname: str = "postgres") -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    with psycopg.connect(lab.dsn(dbname), autocommit=True) as conn:
        for st in statements:
            cur = conn.execute(st)  # type: ignore[arg-type]
            rows = cur.fetchall() if cur.description is not None else []
    return rows


def make_table(lab: LabCluster, name: str, n: int = ROWS) -> None:
    for st in TABLE_SQL.format(t=name, n=n).split(";\n"):
        if st.strip():
            sql(lab, st)
    # an update that aborts: new versions stay behind with an aborted xmin, old ones with an aborted xmax
    with psycopg.connect(lab.dsn()) as conn:
        conn.execute(f"UPDATE {name} SET b = 'aborted' WHERE id % 17 = 0")  # type: ignore[arg-type]
        conn.rollback()
    # read everything once (hint bits, pruning) and write it out
    sql(lab, f"SELECT count(*) FROM (SELECT md5(x::text) FROM {name} x) s", "CHECKPOINT")


def truth_of(lab: LabCluster, table: str) -> Truth:
    out: dict[str, tuple[int, int, str]] = {}
    with psycopg.connect(lab.dsn(), autocommit=True) as conn:
        for s in SETTINGS:
            conn.execute(s)  # type: ignore[arg-type]
        with conn.cursor().copy(f"COPY (SELECT ctid, * FROM {table}) TO STDOUT") as cp:  # type: ignore[arg-type]
            for raw in cp:
                line = bytes(raw).decode().rstrip("\n")
                ctid, rest = line.split("\t", 1)
                b, lp = ctid.strip("()").split(",")
                out[rest.split("\t", 1)[0]] = (int(b), int(lp), rest)
        (size,) = conn.execute("SELECT pg_relation_size(%s::regclass) / 8192", (table,)).fetchone()  # type: ignore[misc]
    return Truth(out, int(size))


def read_output(path: Path) -> list[str]:
    return [ln for ln in path.read_text().split("\n") if ln]


@dataclass
class Outcome:
    report: dict[str, Any]
    lines: list[str]
    code: int

    @property
    def by_id(self) -> dict[str, str]:
        return {ln.split("\t", 1)[0]: ln for ln in self.lines}

    @property
    def apart_by_id(self) -> dict[str, str]:
        """Rows kept apart (COPY text after the six provenance columns), by id."""
        rows = [ln.split("\t", 6) for ln in read_output(Path(self.report["outputs"]["carved_file"]))]
        return {r[6].split("\t", 1)[0]: r[6] for r in rows if len(r) == 7}

    @property
    def duplicates(self) -> list[str]:
        ids = [ln.split("\t", 1)[0] for ln in self.lines]
        return sorted({i for i in ids if ids.count(i) > 1})


def salvage(lab: LabCluster, table: str, out: Path, *extra: str) -> Outcome:
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, stderr = cli(
        "salvage", "--dsn", lab.dsn(), "--table", table, "--out", str(out), "--report-format", "json", *extra
    )
    assert code in (0, 2), stderr
    report = json.loads(stdout)
    main = Path(report["outputs"]["rows_file"])
    return Outcome(report, read_output(main), code)


def check_exactly_once(truth: Truth, got: Outcome, damaged: set[int]) -> None:
    """Rows on undamaged pages: all there, once, with their values; nothing that was not a live row."""
    assert got.duplicates == [], "rows saved twice"
    by_id = got.by_id
    healthy = {k for k, (b, _, _) in truth.rows.items() if b not in damaged}
    missing = sorted(healthy - set(by_id), key=int)
    assert missing == [], f"rows on undamaged pages not saved: {missing[:10]}"
    wrong = [k for k in healthy if by_id[k] != truth.rows[k][2]]
    assert wrong == [], f"wrong values: {by_id[wrong[0]][:200]!r} != {truth.rows[wrong[0]][2][:200]!r}"
    resurrected = sorted(set(by_id) - set(truth.rows), key=int)
    assert resurrected == [], f"rows that were not live came back: {resurrected[:10]}"


def carved_back(truth: Truth, got: Outcome, blocks: set[int]) -> tuple[int, int]:
    """(rows of these blocks saved with the right values, rows that were on them)."""
    want = truth.on_blocks(blocks)
    by_id = got.by_id
    return sum(1 for k in want if by_id.get(k) == truth.rows[k][2]), len(want)


def break_jsonb(lab: LabCluster, table: str, truth: Truth, row_id: str) -> None:
    """Damage the jsonb of one row so that printing it reads far past the value (crashes PostgreSQL 15): the
    length of its first object value is made huge. Plain byte writes with the server stopped."""
    (path,) = sql(lab, f"SELECT pg_relation_filepath('{table}'::regclass)")[0]
    block, lp, _ = truth.rows[row_id]
    lab.stop()
    try:
        f = lab.pgdata / str(path)
        data = bytearray(f.read_bytes())
        page = block * 8192
        word = int.from_bytes(data[page + 24 + 4 * (lp - 1) : page + 28 + 4 * (lp - 1)], "little")
        off = page + (word & 0x7FFF)
        tup = bytes(data[off : off + ((word >> 17) & 0x7FFF)])
        at = tup.find((0x20000003).to_bytes(4, "little"))  # the object's header: 3 pairs
        assert at > 0
        # JEntry 3 (the first value): a length near 2^28
        data[off + at + 4 + 4 * 3 + 2 : off + at + 4 + 4 * 3 + 4] = b"\xff\x0f"
        f.write_bytes(bytes(data))
    finally:
        lab.start()
        wait_ready(lab)


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def labs(lab_base_dir: Path) -> Iterator[CorruptLabs]:
    labs = CorruptLabs(lab_base_dir, "salv")
    yield labs
    labs.close()


# mode, extra corrupt arguments, target (table or toast), the block to damage (None: the simulator picks)
MODES: list[tuple[str, list[str], str, int | None]] = [
    ("header", ["--field", "random"], "table", 3),
    ("header", ["--field", "pd_lower"], "table", 5),
    ("item-ids", [], "table", 4),
    ("item-id", [], "table", 6),
    ("tuple-header", [], "table", 7),
    ("tuple-data", [], "table", 8),
    ("checksum", [], "table", 9),
    ("zero", [], "table", 10),
    ("torn", [], "table", 11),
    ("misdirected", [], "table", 12),
    ("toast", ["--field", "missing"], "toast", None),
    ("truncate", [], "table", 30),
]


def _mode_id(m: tuple[str, list[str], str, int | None]) -> str:
    return m[0] + ("-" + m[1][1] if m[1] else "")


@dataclass
class Damaged:
    lab: LabCluster
    tables: dict[str, str]
    truths: dict[str, Truth]
    notes: dict[str, str]


@pytest.fixture(scope="module")
def damaged(labs: CorruptLabs, request: pytest.FixtureRequest) -> dict[str, Damaged]:
    """Per version: one table per mode, all damaged in one stop of the server."""
    return {}


def build(labs: CorruptLabs, version: str, cache: dict[str, Damaged]) -> Damaged:
    if version in cache:
        return cache[version]
    lab = labs.get(version)
    tables: dict[str, str] = {}
    truths: dict[str, Truth] = {}
    files: dict[str, tuple[str, str | None]] = {}
    for m in MODES:
        mid = _mode_id(m)
        name = "s_" + mid.replace("-", "_")
        make_table(lab, name)
        tables[mid] = name
        truths[mid] = truth_of(lab, name)
        (path, toast) = sql(
            lab,
            f"SELECT pg_relation_filepath('{name}'::regclass), "
            f"pg_relation_filepath((SELECT reltoastrelid FROM pg_class WHERE oid = '{name}'::regclass))",
        )[0]
        files[mid] = (str(path), str(toast) if toast else None)
    notes: dict[str, str] = {}
    lab.stop()
    try:
        for m in MODES:
            mode, extra, target, block = m
            mid = _mode_id(m)
            path, toast = files[mid]
            f = toast if target == "toast" else path
            assert f is not None
            args = ["corrupt", mode, "--pgdata", str(lab.pgdata), "--file", f, "--seed", "11", *extra]
            if block is not None:
                args += ["--block", str(block)]
            if target == "toast":
                args += ["--kind", "heap"]
            code, out, err = cli(*args)
            assert code == 0, f"{mid}: {err}"
            notes[mid] = out
    finally:
        lab.start()
        wait_ready(lab)
    cache[version] = Damaged(lab, tables, truths, notes)
    return cache[version]


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("version", ["15", "18"])
def test_every_mode(
    labs: CorruptLabs,
    damaged: dict[str, Damaged],
    tmp_path: Path,
    version: str,
    mode: tuple[str, list[str], str, int | None],
) -> None:
    d = build(labs, version, damaged)
    mid = _mode_id(mode)
    table, truth = d.tables[mid], d.truths[mid]
    got = salvage(d.lab, table, tmp_path / "out")
    r = got.report
    bad_blocks = {b["block"] for b in r["damaged_blocks"]} | {int(f["blocks"][0]) for f in r["failures"]}
    lost_blocks = {x["block"] for x in r["lost"]}
    name = mode[0]
    block = mode[3]
    # the page the simulator damaged counts as damaged even when nothing can tell (random bytes in a value)
    damaged_blocks = bad_blocks | lost_blocks | ({block} if block is not None else set())
    check_exactly_once(truth, got, damaged_blocks)
    if name in ("header", "item-ids", "item-id", "checksum"):
        if name == "checksum" and version == "15":
            # no data checksums on the 15 cluster: a wrong pd_checksum is not damage, SQL reads the page
            assert bad_blocks | lost_blocks == set()
            return
        assert block in damaged_blocks, r["damaged_blocks"]
        if version == "18":
            # the page failed its checksum: every row carved back with its values, but kept apart (bytes the
            # server never wrote may have altered them), never merged as sure
            apart = got.apart_by_id
            want = truth.on_blocks({block})
            assert want and all(apart.get(k) == truth.rows[k][2] for k in want)
            assert not want & set(got.by_id)
            assert r["rows"]["carved_from_checksum_failures"] >= 1
            return
        ok, total = carved_back(truth, got, {block})
        assert total > 0
        assert ok / total >= 0.9, f"carved back {ok} of {total}"
        assert ok == total  # the page body is intact: every row, TOAST-ed values too
        toasted = [k for k in truth.on_blocks({block}) if int(k) % 10 == 0]
        assert toasted and all(got.by_id[k] == truth.rows[k][2] for k in toasted)
        # every carved row of the block went to the main output, its provenance beside it; none kept apart
        prov = [ln.split("\t") for ln in read_output(Path(r["outputs"]["provenance_file"]))]
        assert sum(int(p[6]) for p in prov if p[0] == str(block)) == total
        assert all(p[4] in ("sure", "likely") for p in prov)
        assert not [ln for ln in read_output(Path(r["outputs"]["carved_file"])) if ln.split("\t")[0] == str(block)]
        assert r["rows"]["carved"] == total
    elif name in ("tuple-header", "tuple-data"):
        ok, total = carved_back(truth, got, {block})
        if version == "18":
            # the page failed its checksum: the rows are carved back kept apart
            apart = got.apart_by_id
            ok = sum(1 for k in truth.on_blocks({block}) if apart.get(k) == truth.rows[k][2])
        assert ok >= total - 1  # one tuple damaged: the others carved
        accounted = r["lost_count"] + r["rows"]["carved_kept_apart"]
        assert ok == total or accounted >= 1  # the damaged one is reported, not silently dropped
    elif name == "zero":
        # the primary key still points at the rows that were there: the loss account counts them, by key
        (page,) = [p for p in r["pages_lost"] if p["block"] == block]
        lost_lps = {x["lp"] for x in r["lost"] + r["maybe_lost"] if x["block"] == block}
        on_page = {lp for (b, lp, _) in truth.rows.values() if b == block}
        # the page was not all-visible: the entries of rows already dead count as possibly gone, never as certain
        certain = {x["lp"] for x in page["certain"]}
        assert (
            on_page <= lost_lps and certain <= on_page and len(page["certain"]) + len(page["possible"]) >= len(on_page)
        )
    elif name in ("torn", "misdirected"):
        assert block in damaged_blocks
        assert any(x["block"] == block for x in r["lost"])
        # copies of other blocks' rows are kept apart, never merged (check_exactly_once found no duplicates)
        assert r["rows"]["carved_kept_apart"] > 0
    elif name == "toast":
        # one TOAST chunk's line pointer was set unused: SQL fails on its row, and the carver finds the chunk's
        # bytes in the TOAST page's body (no line pointer references them), so the row comes back whole. A chunk
        # whose bytes were gone would keep the row apart with the reason.
        ok, total = carved_back(truth, got, damaged_blocks)
        if version == "18":
            # the TOAST page failed its checksum: the rows whose values have chunks on it come back kept apart,
            # with their values
            apart = got.apart_by_id
            back = [k for k in truth.rows if k not in got.by_id]
            assert back and all(apart.get(k) == truth.rows[k][2] for k in back), back
            return
        assert ok == total and r["rows"]["carved"] >= 1, (r["rows"], r["failures"], r["notes"])
        assert any("toast value" in f["error"] for f in r["failures"])
    elif name == "truncate":
        assert r["blocks"]["total"] < truth.nblocks
        assert {x["block"] for x in r["lost"]} >= set(range(r["blocks"]["total"], truth.nblocks))
    possibly = any(x.get("zero") for x in r["maybe_lost"])
    assert r["complete"] == (r["lost_count"] == 0 and not possibly and r["rows"]["carved_kept_apart"] == 0)
    assert got.code == (0 if r["complete"] else 2)


# ------------------------------------------------------------------------------------------ visibility


@pytest.mark.parametrize("version", ["15", "18"])
def test_carving_agrees_with_sql_on_healthy_pages(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """Carve every block of a healthy table (--carve-all) and compare with what SQL returns: updated rows (HOT
    and not), deleted rows, aborted inserts and updates, a row inserted and one deleted by a transaction still in
    progress, MultiXact lockers and a committed subtransaction."""
    lab = labs.get(version)
    name = f"vis_{version}"
    make_table(lab, name, n=600)
    sql(
        lab,
        f"BEGIN; SAVEPOINT s; UPDATE {name} SET b = 'sub' WHERE id = 5; RELEASE s; COMMIT",
    )
    lockers = [psycopg.connect(lab.dsn()) for _ in range(2)]
    in_flight = psycopg.connect(lab.dsn())
    try:
        for c in lockers:
            c.execute(f"SELECT * FROM {name} WHERE id IN (7, 8) FOR KEY SHARE")  # type: ignore[arg-type]
        in_flight.execute(f"INSERT INTO {name} (id, a, b) VALUES (100000, 1, 'in flight')")  # type: ignore[arg-type]
        in_flight.execute(f"DELETE FROM {name} WHERE id = 3")  # type: ignore[arg-type]
        sql(lab, "CHECKPOINT")
        truth = truth_of(lab, name)
        assert "100000" not in truth.rows and "3" in truth.rows
        got = salvage(lab, name, tmp_path / "out", "--carve-all")
        r = got.report
        apart = read_output(Path(r["outputs"]["carved_file"]))
        assert apart == []
        assert r["rows"]["sql"] == 0 and r["rows"]["carved"] == len(truth.rows)
        check_exactly_once(truth, got, set())
        assert r["rows"]["carved_invisible_skipped"] > 0
    finally:
        for c in [*lockers, in_flight]:
            with contextlib.suppress(Exception):
                c.rollback()
                c.close()


@pytest.mark.parametrize("version", ["15", "18"])
def test_carved_copy_of_a_readable_row_is_kept_apart(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """A page holding a copy of a row that is readable elsewhere (an old image of another block's row written over
    a tuple, its t_ctid and checksum made consistent, so nothing in the page itself gives it away) and damaged
    besides, so it is carved: the copy goes apart with the row that holds its key named, and the key is saved
    once."""
    lab = labs.get(version)
    name = f"dupkey_{version}"
    sql(
        lab,
        f"DROP TABLE IF EXISTS {name}",
        f"CREATE TABLE {name} (id integer PRIMARY KEY, v text)",
        f"INSERT INTO {name} SELECT g, lpad(g::text, 40, 'x') FROM generate_series(1, 3000) g",
        f"SELECT count(*) FROM {name}",
        "CHECKPOINT",
    )
    ((path,),) = sql(lab, f"SELECT pg_relation_filepath('{name}')")
    ((copied,),) = sql(lab, f"SELECT id FROM {name} WHERE ctid = '(1,3)'")
    ((overwritten,),) = sql(lab, f"SELECT id FROM {name} WHERE ctid = '(5,3)'")
    file = lab.pgdata / str(path)

    def item(page: bytearray, lp: int) -> tuple[int, int]:
        raw = int.from_bytes(page[24 + 4 * (lp - 1) : 28 + 4 * (lp - 1)], "little")
        return raw & 0x7FFF, raw >> 17

    with stopped(lab):
        data = bytearray(file.read_bytes())
        src = bytearray(data[8192 : 2 * 8192])
        page = bytearray(data[5 * 8192 : 6 * 8192])
        (s_off, s_len), (d_off, d_len) = item(src, 3), item(page, 3)
        assert s_len == d_len
        page[d_off : d_off + d_len] = src[s_off : s_off + s_len]
        page[d_off + 12 : d_off + 18] = bytes([0, 0, 5, 0, 3, 0])  # t_ctid (5,3): the copy names itself
        at = 24 + 4 * 6  # line pointer 7 points past the page: the page is damaged, so it is carved
        page[at : at + 4] = ((8180) | (1 << 15) | (64 << 17)).to_bytes(4, "little")
        if version == "18":
            page[8:10] = (core.page_checksum(bytes(page), 5) or 0).to_bytes(2, "little")
        data[5 * 8192 : 6 * 8192] = page
        file.write_bytes(bytes(data))
    got = salvage(lab, name, tmp_path / "out")
    r = got.report
    ids = [ln.split("\t", 1)[0] for ln in got.lines]
    assert ids.count(str(copied)) == 1, "the copied row is saved once, from its own block"
    assert str(overwritten) not in ids
    apart = read_output(Path(r["outputs"]["carved_file"]))
    dup = [ln for ln in apart if ln.split("\t")[6] == str(copied)]
    assert len(dup) == 1 and dup[0].startswith("5\t3\t"), apart[:3]
    assert f"its key (id)=({copied}) is readable in row (1,3)" in dup[0]
    assert any("key is readable in another row" in n for n in r["notes"]), r["notes"]


# ------------------------------------------------------------------------------------------ SQL paths


@pytest.mark.parametrize("version", ["15", "18"])
def test_sql_only_bisects_to_the_tuple(labs: CorruptLabs, tmp_path: Path, version: str) -> None:
    """Without raw pages (--files none) a missing TOAST chunk fails its chunk, the chunk is split down to the
    block and the block read tuple by tuple: every other row is saved, the one that fails is reported with the
    server's error."""
    lab = labs.get(version)
    name = f"bis_{version}"
    make_table(lab, name)
    truth = truth_of(lab, name)
    (toast,) = sql(
        lab, f"SELECT pg_relation_filepath((SELECT reltoastrelid FROM pg_class WHERE oid = '{name}'::regclass))"
    )[0]
    code, _, err = cli(
        "corrupt",
        "toast",
        "--field",
        "missing",
        "--pgdata",
        str(lab.pgdata),
        "--file",
        str(toast),
        "--kind",
        "heap",
        "--seed",
        "5",
        "--keep-checksum-valid",
    )
    assert code == 0, err
    wait_ready(lab)
    got = salvage(lab, name, tmp_path / "out", "--files", "none", "-j", "2", "--chunk-blocks", "16")
    r = got.report
    assert r["pages_from"] == "none"
    failed = [f for f in r["failures"] if "ctid" in f]
    assert len(failed) == 1 and "toast value" in failed[0]["error"] and failed[0]["action"] == "lost"
    assert any("tuple by tuple" in f["action"] for f in r["failures"])
    b, lp = (int(x) for x in failed[0]["ctid"].strip("()").split(","))
    lost_id = next(k for k, (bb, ll, _) in truth.rows.items() if (bb, ll) == (b, lp))
    assert set(got.by_id) == set(truth.rows) - {lost_id}
    assert all(got.by_id[k] == truth.rows[k][2] for k in got.by_id)
    assert [(x["block"], x["lp"]) for x in r["lost"]] == [(b, lp)]


@pytest.mark.pg("15")
def test_survives_a_crashing_page_without_precheck(labs: CorruptLabs, tmp_path: Path) -> None:
    """A page whose jsonb internals are damaged crashes the PostgreSQL 15 backend that prints it. Read without
    the precheck, the chunk holding it crashes the server; salvage reconnects, retries the chunk alone, and carves
    it from the raw pages when it crashes again. Every row is saved."""
    lab = labs.get("15")
    name = "crash_15"
    make_table(lab, name)
    truth = truth_of(lab, name)
    break_jsonb(lab, name, truth, "40")
    got = salvage(lab, name, tmp_path / "out", "--no-precheck", "--chunk-blocks", "8")
    r = got.report
    assert r["crashes"] >= 1
    assert any(f["action"] == "carved" and "crashed" in f["error"] for f in r["failures"]), (r["failures"], r["notes"])
    by_id = got.by_id
    assert set(by_id) == set(truth.rows) - {"40"}
    apart = read_output(Path(r["outputs"]["carved_file"]))
    assert any("\t40\t" in ln and "jsonb" in ln for ln in apart)


@pytest.mark.parametrize(
    ("blocks", "gap"),
    [
        ([2, 2, 1], False),  # full segments, then the last one: the server counts them all
        ([2, 1], False),
        ([2, 2], False),
        ([2, None, 1], True),  # .1 missing: the server stops at block 2
        ([None, 2], True),  # the first file missing
        ([2, 1, 2], True),  # .1 short: the server stops at block 3
    ],
)
def test_a_gap_in_the_segment_files_is_where_the_server_stops_counting(
    tmp_path: Path, blocks: list[int | None], gap: bool
) -> None:
    """Only a missing or short segment before the last one hides blocks from the server; files longer than its
    count without such a gap are a table that grew after it was sized (its new blocks hold no row the snapshot
    sees, and must not be carved as if a segment were lost)."""
    from types import SimpleNamespace

    from pgsurgeon.salvage.engine import _has_gap
    from pgsurgeon.salvage.pages import LocalPages

    (tmp_path / "base" / "5").mkdir(parents=True)
    for segno, n in enumerate(blocks):
        if n is not None:
            name = "16384" if segno == 0 else f"16384.{segno}"
            (tmp_path / "base" / "5" / name).write_bytes(bytes(n * 8192))
    table: Any = SimpleNamespace(rel=SimpleNamespace(filepath="base/5/16384", block_size=8192))
    assert _has_gap(LocalPages(tmp_path, table, 2), table) is gap
