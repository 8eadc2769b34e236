"""Issue 30's acceptance, point by point, on real PostgreSQL 15 and 18: every new simulator mode on every opclass
the issue names (GIN jsonb_ops, jsonb_path_ops, tsvector and int[]; GiST box, range, tsvector and an exclusion
constraint; SP-GiST text, point and range; hash; BRIN minmax, minmax-multi and inclusion), the visibility map and
the free space map.

One cluster per version and one database: each index sits on its own table, so that all of them are damaged at
once (stopped, with the checksums kept valid) without one damage hiding another. Then, in order: ``scan`` of the
stopped cluster and ``diagnose`` of the running one each exit 2 and name every damage (relation, block, finding
code); a query through each damaged index meets the server's error, which ``explain`` explains naming the real
index; the VM's aborted row comes back through an index-only scan, and pg_visibility agrees with us; ``repair``
plans and then executes, after which amcheck (bt_index_check, gin_index_check on 18), pg_check_visible and
pg_check_frozen, scan and diagnose are clean and every query through an index returns the sequential scan's rows.
A free space map slot past the table's end is a warning, not damage: an INSERT meets it and the server corrects it
(freespace.c checks each block the map offers against the file's length), as asserted here on both versions.
The per-opclass detail (every field of each mode) is in tests/test_check_{gin,gist,hashbrin,vmfsm}.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_corrupt import Outcome, aborted_insert, cli, observe, sql, stopped, wait_ready
from fix_pg import create_test_cluster
from pgsurgeon.diagnose.gincheck import GIN_GENERIC, classify_gin
from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab import LabCluster

ROWS = 3000
BITMAP = ("SET enable_seqscan = off", "SET enable_indexscan = off", "SET enable_indexonlyscan = off")
INDEX = ("SET enable_seqscan = off", "SET enable_bitmapscan = off")
SEQ = ("SET enable_indexscan = off", "SET enable_bitmapscan = off", "SET enable_indexonlyscan = off")


@dataclass(frozen=True)
class Case:
    table: str
    columns: str
    rows: str
    """The SELECT list over generate_series(1, n) g."""
    index: str
    """CREATE INDEX's tail after ON <table> (or a constraint, see ``constraint``)."""
    corrupt: tuple[str, ...]
    """mode, --field and its extra options."""
    codes: frozenset[str]
    where: str
    """A condition the index answers, over (nearly) every row."""
    block: str = "damaged"
    """Where the finding is: the damaged block, the metapage ('meta') or anywhere in the index ('any')."""
    error: str | None = None
    """The server's error through the index (a regex), None: it returns rows (right or wrong)."""
    probes: tuple[str, ...] = ()
    """More queries through the index that meet the damage (each is only asked not to fail after the repair)."""
    scan_path: tuple[str, ...] = BITMAP
    n: int = ROWS
    constraint: bool = False
    killed: bool = False
    """An index scan meets the damaged entry before anything is checked: its row is not there, so the server marks
    the entry dead (kill_prior_tuple), and every later scan skips it: the row is missing from the index."""

    @property
    def ix(self) -> str:
        return f"{self.table}_ix"

    def select(self, where: str | None = None) -> str:
        # no ORDER BY: the primary key's index would answer it, filtering every row, instead of the index tested
        return f"SELECT id FROM {self.table} WHERE {where or self.where}"


GIN_DOC = "jsonb_build_object('n', g, 'tag', 't' || g % 40, 'all', 1)"
GIN_TSV = "to_tsvector('simple', 'word' || g % 300 || ' term' || g % 17 || ' common')"
RANGE = (
    "tstzrange('2020-01-01'::timestamptz + g * interval '1 day', '2020-01-01'::timestamptz + (g + 1) * interval "
    "'1 day')"
)
CASES = (
    Case(
        "gin_doc", "id int, doc jsonb", f"g, {GIN_DOC}", "USING gin (doc)", ("gin", "entry-internal"),
        frozenset({"index.gin_entry_tuple"}), "doc @> '{}'", error="could not read block", n=6000,
        probes=(
            "SELECT count(*) FROM generate_series(1, 6000, 7) k, LATERAL (SELECT 1 FROM gin_doc WHERE doc @> "
            "jsonb_build_object('n', k)) x",
        ),
    ),
    Case(
        "gin_path", "id int, doc jsonb", f"g, {GIN_DOC}", "USING gin (doc jsonb_path_ops)", ("gin", "posting-tree"),
        frozenset({"index.gin_posting_list"}), """doc @> '{"all": 1}'""", error="tuple offset out of range", n=6000,
    ),
    Case(
        "gin_tsv", "id int, tsv tsvector", f"g, {GIN_TSV}", "USING gin (tsv)", ("gin", "posting-list"),
        frozenset({"index.gin_posting_list"}), "tsv @@ '!zzz'", error="tuple offset out of range", n=6000,
    ),
    Case(
        "gin_tags", "id int, tags int[]", "g, ARRAY[g % 50, g % 7, 1000 + g % 3]", "USING gin (tags)",
        ("gin", "entry-leaf"), frozenset({"index.gin_posting_list"}), "tags @> '{}'",
        error="number of items mismatch", n=6000,
    ),
    Case(
        "gist_box", "id int, b box", "g, box(point(g % 60, g / 60), point(g % 60 + 1, g / 60 + 1))",
        "USING gist (b)", ("gist", "downlink"), frozenset({"index.gist_downlink"}),
        "b && box(point(-1, -1), point(1000, 1000))", scan_path=INDEX,
    ),
    Case(
        "gist_range", "id int, r int4range", "g, int4range(g, g + 5)", "USING gist (r)", ("gist", "leaf_tid"),
        frozenset({"index.tid_unused"}), "r && int4range(0, 100000)", killed=True,
    ),
    Case(
        "gist_tsv", "id int, tv tsvector", "g, to_tsvector('simple', 'w' || (g % 40) || ' x' || (g % 7))",
        "USING gist (tv)", ("gist", "downlink"), frozenset({"index.gist_downlink"}),
        "tv @@ to_tsquery('simple', 'x0 | x1 | x2 | x3 | x4 | x5 | x6')", scan_path=INDEX,
    ),
    Case(
        "gist_excl", "id int, during tstzrange", f"g, {RANGE}", "EXCLUDE USING gist (during WITH &&)",
        ("gist", "leaf_tid"), frozenset({"index.tid_unused"}), "during && tstzrange('2000-01-01', '2100-01-01')",
        constraint=True,
    ),
    Case(
        "sp_text", "id int, t text", "g, md5(g::text)", "USING spgist (t)", ("spgist", "inner"),
        frozenset({"index.spgist_unreachable"}), "t >= '0'", block="any", scan_path=INDEX,
    ),
    Case(
        "sp_point", "id int, p point", "g, point(g % 137, g % 211)", "USING spgist (p)", ("spgist", "leaf_chain"),
        frozenset({"index.spgist_unreachable"}), "p <@ box '((-1,-1),(1000,1000))'", scan_path=INDEX,
    ),
    Case(
        "sp_range", "id int, r int4range", "g, int4range(g, g + 10)", "USING spgist (r)", ("spgist", "meta"),
        frozenset({"index.spgist_meta"}), "r && int4range(0, 100000)", block="meta",
        error=r'index "sp_range_ix" is not an SP-GiST index', scan_path=INDEX,
    ),
    Case(
        "hash_t", "id int, s text", "g, 'val' || (g % 40)", "USING hash (s)", ("hash", "bucket"),
        frozenset({"index.hash_page_type"}), "s = 'val7'", error=r'index "hash_t_ix" contains corrupted page',
        scan_path=INDEX,
        probes=(
            "SELECT sum(n) FROM (SELECT DISTINCT s AS k FROM hash_t) d, "
            "LATERAL (SELECT count(*) AS n FROM hash_t WHERE s = d.k) x",
        ),
    ),
    Case(
        "brin_minmax", "id int", "g", "USING brin (id) WITH (pages_per_range = 2)",
        ("brin", "metapage", "--value", "3"), frozenset({"index.brin_metapage"}), "id >= 0", block="meta",
        error="corrupted BRIN index: inconsistent range map", n=3 * ROWS,
    ),
    Case(
        "brin_multi", "id int, x int8", "g, g", "USING brin (x int8_minmax_multi_ops) WITH (pages_per_range = 2)",
        ("brin", "revmap"), frozenset({"index.brin_revmap"}), "x >= 0",
        error="corrupted BRIN index: inconsistent range map", n=3 * ROWS,
    ),
    Case(
        "brin_incl", "id int, b box", "g, box(point(g, g), point(g + 1, g + 1))",
        "USING brin (b box_inclusion_ops) WITH (pages_per_range = 2)", ("brin", "regular"),
        frozenset({"index.brin_tuple"}), "b && box '((-1,-1),(100000,100000))'",
        error="corrupted BRIN index: inconsistent range map", n=2 * ROWS,
    ),
)  # fmt: skip

VM_TABLE = "vm_t"
FSM_TABLE = "fsm_t"
FSM_INSERT = "fsm_ins"
"""Its map's slot past the end only, met by an INSERT (the server corrects it; fsm_t keeps its damage for repair)."""
ABORTED_ID = 1_000_000
IOS = (
    "SET enable_seqscan = off",
    "SET enable_bitmapscan = off",
    f"SELECT count(*) FROM {VM_TABLE} WHERE id = {ABORTED_ID}",
)


@dataclass
class Matrix:
    lab: LabCluster
    damaged: dict[str, int] = field(default_factory=dict)
    """Index (or map's table) -> the block the simulator changed."""
    truth: dict[str, list[Any]] = field(default_factory=dict)
    vm_block: int = -1
    fsm_blocks: int = -1


def _schema(c: Case) -> list[str]:
    create = (
        f"ALTER TABLE {c.table} ADD CONSTRAINT {c.ix} {c.index}"
        if c.constraint
        else f"CREATE INDEX {c.ix} ON {c.table} {c.index}"
    )
    return [
        f"CREATE TABLE {c.table} ({c.columns}, PRIMARY KEY (id))",
        f"INSERT INTO {c.table} SELECT {c.rows} FROM generate_series(1, {c.n}) g",
        create,
        f"VACUUM ANALYZE {c.table}",
    ]


def _vm_fsm_schema(lab: LabCluster) -> int:
    """vm_t: frozen and all-visible, then an aborted insert on its last page (that block); fsm_t: plain rows."""
    sql(
        lab,
        f"CREATE TABLE {VM_TABLE} (id int PRIMARY KEY, pad text)",
        f"INSERT INTO {VM_TABLE} SELECT g, repeat('x', 40) FROM generate_series(1, 3000) g",
        f"VACUUM (FREEZE) {VM_TABLE}",
        *(
            st
            for t in (FSM_TABLE, FSM_INSERT)
            for st in (
                f"CREATE TABLE {t} (id int PRIMARY KEY, pad text)",
                f"INSERT INTO {t} SELECT g, repeat('f', 60) FROM generate_series(1, 3000) g",
                f"DELETE FROM {t} WHERE id % 5 = 0",
                f"VACUUM {t}",
            )
        ),
    )
    return aborted_insert(lab, VM_TABLE, ABORTED_ID)


def through(lab: LabCluster, c: Case, query: str | None = None, path: tuple[str, ...] | None = None) -> Outcome:
    """The query's rows (sorted) through the case's index, or the server's error."""
    out = observe(lab, [*(path or c.scan_path), query or c.select()])
    out.rows.sort()
    return out


def sequential(lab: LabCluster, c: Case) -> list[Any]:
    out = observe(lab, [*SEQ, c.select()])
    assert out.kind == "rows", out
    return sorted(out.rows)


def plan_uses_index(lab: LabCluster, c: Case) -> bool:
    out = observe(lab, [*c.scan_path, f"EXPLAIN {c.select()}"])
    return any(c.ix in str(r[0]) for r in out.rows)


def corrupt_file(lab: LabCluster, path: str, args: tuple[str, ...], seed: int = 7, *extra: str) -> dict[str, Any]:
    mode, fld, *rest = args
    code, out, err = cli(
        "corrupt", mode, "--field", fld, *rest, "--pgdata", str(lab.pgdata), "--file", path, "--seed", str(seed),
        "--keep-checksum-valid", "--format", "json", *extra,
    )  # fmt: skip
    assert code == Exit.CLEAN, err + out
    manifest: dict[str, Any] = json.loads(out)
    return manifest


@pytest.fixture(scope="module", params=["15", "18"])
def matrix(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Matrix]:
    lab = create_test_cluster(lab_base_dir, f"accept{request.param}", request.param)
    lab.start()
    try:
        lab.install_extensions(("postgres",))
        m = Matrix(lab)
        for c in CASES:
            sql(lab, *_schema(c))
        m.vm_block = _vm_fsm_schema(lab)
        m.fsm_blocks = int(sql(lab, f"SELECT pg_relation_size('{FSM_TABLE}') / 8192")[0][0])
        sql(lab, "CHECKPOINT")
        for c in CASES:
            assert plan_uses_index(lab, c), c.ix
            m.truth[c.ix] = sequential(lab, c)
            assert len(m.truth[c.ix]) > c.n // 2 or c.table == "hash_t", c.table
        files = {c.ix: str(sql(lab, f"SELECT pg_relation_filepath('{c.ix}')")[0][0]) for c in CASES}
        heap = {
            t: str(sql(lab, f"SELECT pg_relation_filepath('{t}')")[0][0]) for t in (VM_TABLE, FSM_TABLE, FSM_INSERT)
        }
        with stopped(lab):
            code, report = scan_stopped(lab)
            assert (code, report) == (Exit.CLEAN, []), report[:5]  # healthy first: not one finding
            for c in CASES:
                pages = corrupt_file(lab, files[c.ix], c.corrupt, 7, "--kind", c.corrupt[0])["pages"]
                m.damaged[c.ix] = pages[0]["block"]
            corrupt_file(lab, heap[VM_TABLE], ("vm", "all-frozen", "--block", str(m.vm_block)))
            corrupt_file(lab, heap[FSM_TABLE], ("fsm", "beyond-end"))
            corrupt_file(lab, heap[FSM_TABLE], ("fsm", "upper-node"), 3)
            corrupt_file(lab, heap[FSM_INSERT], ("fsm", "beyond-end"))
        for c in CASES:
            if c.killed:  # the entry marked dead; the row it stood for is no longer found through the index
                rows = through(lab, c, path=INDEX).rows
                assert rows == through(lab, c, path=INDEX).rows and len(rows) < len(m.truth[c.ix]), c.ix
        sql(lab, "CHECKPOINT")
        yield m
    finally:
        lab.destroy()


def scan_stopped(lab: LabCluster) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = cli("scan", "-D", str(lab.pgdata), "--format", "json")
    assert out.startswith("{"), err
    return code, json.loads(out)["findings"]


def diagnose(lab: LabCluster) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("diagnose", "-d", lab.dsn(), "--pgdata", str(lab.pgdata), "--format", "json")
    assert out.startswith("{"), err
    return code, json.loads(out)


def _missing(m: Matrix, findings: list[dict[str, Any]], qualify: str) -> list[str]:
    """The damages ``findings`` do not name with their relation, block and code."""
    missing = []
    for c in CASES:
        mine = [f for f in findings if f["relation"] == f"{qualify}{c.ix}" and f["code"] in c.codes]
        want = {"damaged": m.damaged[c.ix], "meta": 0, "any": None}[c.block]
        if not mine or (want is not None and not any(f["block"] == want for f in mine)):
            got = [(f["code"], f["block"]) for f in findings if c.ix in str(f["relation"])]
            missing.append(f"{c.ix}: {sorted(c.codes)} at block {want}, got {got}")
    vm = {(f["code"], f["block"]) for f in findings if f["relation"] == f"{qualify}{VM_TABLE}"}
    if not {("vm.all_visible_wrong", m.vm_block), ("vm.all_frozen_wrong", m.vm_block)} <= vm:
        missing.append(f"{VM_TABLE}: vm findings at block {m.vm_block}, got {vm}")
    return missing


def test_scan_of_the_stopped_cluster_names_every_damage(matrix: Matrix) -> None:
    with stopped(matrix.lab):
        code, findings = scan_stopped(matrix.lab)
    assert code == Exit.DAMAGE
    assert _missing(matrix, findings, "public.") == []
    fsm = {(f["code"], f["block"]) for f in findings if f["relation"] == f"public.{FSM_TABLE}"}
    assert {("file.fsm_beyond_end", matrix.fsm_blocks), ("fsm.tree_inconsistent", 2)} <= fsm, fsm
    # warnings, not damage: the server corrects the map as it meets it (see the INSERT below)
    assert {f["severity"] for f in findings if f["relation"] == f"public.{FSM_TABLE}"} == {"warning"}
    assert [f["code"] for f in findings if f["relation"] == f"public.{FSM_INSERT}"] == ["file.fsm_beyond_end"]
    damaged = {f"public.{c.ix}" for c in CASES} | {f"public.{t}" for t in (VM_TABLE, FSM_TABLE, FSM_INSERT)}
    assert {f["relation"] for f in findings} <= damaged, [f for f in findings if f["relation"] not in damaged]


def test_diagnose_names_every_damage_and_agrees_with_the_server_checks(matrix: Matrix) -> None:
    lab = matrix.lab
    code, doc = diagnose(lab)
    assert code == Exit.DAMAGE, doc["findings"]
    assert _missing(matrix, doc["findings"], "") == []
    # pg_visibility: pg_check_visible names the aborted tuple, and diagnose says it agrees with the files
    visible = sql(lab, f"SELECT t_ctid::text FROM pg_check_visible('{VM_TABLE}')")
    assert [r[0].startswith(f"({matrix.vm_block},") for r in visible] == [True], visible
    note = doc["summary"]["visibility"]
    assert "pg_check_visible and pg_check_frozen agree" in note, note
    # gin_index_check on 18: every damage it reports, we report
    if lab.install.major >= 18:
        for c in CASES:
            if c.corrupt[0] != "gin":
                continue
            try:
                sql(lab, f"SELECT gin_index_check('{c.ix}')")
                continue
            except psycopg.Error as exc:
                theirs = str(exc).splitlines()[0]
            wait_ready(lab)
            code_, block, _ = classify_gin(theirs)
            ours = [f for f in doc["findings"] if f["relation"] == c.ix]
            assert any(
                (code_ == GIN_GENERIC or f["code"] == code_) and (block is None or f["block"] == block) for f in ours
            ), (theirs, ours)


def test_the_server_meets_each_damage_and_explain_names_the_index(matrix: Matrix) -> None:
    lab = matrix.lab
    problems = []
    for c in CASES:
        answers = [through(lab, c), *(observe(lab, [*c.scan_path, p]) for p in c.probes)]
        if c.error is None:
            continue
        errors = [a.message for a in answers if a.kind == "error"]
        message = next((e for e in errors if re.search(c.error, e)), None)
        if message is None:
            problems.append(f"{c.ix}: no {c.error!r} in {[str(a) for a in answers]}")
            continue
        code, out, _ = cli("explain", "-d", lab.dsn(), message)
        if code != Exit.CLEAN or "not recognised" in out or c.ix not in out:
            problems.append(f"{c.ix}: explain of {message!r} does not name it:\n{out}")
    assert problems == [], "\n".join(problems)
    # the visibility map: the aborted row comes back through an index-only scan
    assert observe(lab, IOS).rows == [(1,)]
    # the free space map's slot past the end: no INSERT fails on it, the server checks each block the map offers
    # against the file's length and clears the slot (freespace.c, fsm_does_block_exist): why it is a warning
    more = f"INSERT INTO {FSM_INSERT} SELECT g, repeat('z', 1500) FROM generate_series(100001, 100200) g"
    assert observe(lab, more).kind == "rows"


def test_repair_leaves_everything_clean_and_the_indexes_answer_as_the_table(matrix: Matrix) -> None:
    lab = matrix.lab
    problems = []
    for table in [*(c.table for c in CASES), VM_TABLE, FSM_TABLE]:
        args = ("repair", "-d", lab.dsn(), "-t", table, "--skip-salvage", "--format", "json")
        code, out, err = cli(*args)
        plan = json.loads(out) if out.startswith("{") else {}
        if code != Exit.CLEAN or not plan.get("steps"):
            problems.append(f"{table}: plan {code} {err} {plan.get('blockers')}")
            continue
        code, out, err = cli(*args, "--execute", "--yes")
        if code != Exit.CLEAN:
            problems.append(f"{table}: execute {code} {err} {out[-2000:]}")
    assert problems == []
    # the server's checks
    for c in CASES:
        sql(lab, f"SELECT bt_index_check('{c.table}_pkey', true)")
        if lab.install.major >= 18 and c.corrupt[0] == "gin":
            sql(lab, f"SELECT gin_index_check('{c.ix}')")
    for t in (VM_TABLE, FSM_TABLE, FSM_INSERT, *(c.table for c in CASES)):
        assert sql(lab, f"SELECT count(*) FROM pg_check_visible('{t}')")[0][0] == 0, t
        assert sql(lab, f"SELECT count(*) FROM pg_check_frozen('{t}')")[0][0] == 0, t
    assert observe(lab, IOS).rows == [(0,)]
    # the same rows through each index as through a sequential scan
    for c in CASES:
        got = through(lab, c)
        assert got.kind == "rows" and got.rows == matrix.truth[c.ix], (c.ix, str(got))
        for p in c.probes:
            assert observe(lab, [*c.scan_path, p]).kind == "rows", (c.ix, p)
    code, doc = diagnose(lab)
    assert (code, doc["findings"]) == (Exit.CLEAN, []), doc["findings"][:5]
    sql(lab, "CHECKPOINT")
    with stopped(lab):
        code, findings = scan_stopped(lab)
    assert (code, findings) == (Exit.CLEAN, []), findings[:5]
