"""`pgsurgeon scan` on real clusters: every kind of damage reported at the right block (and line pointer) with the
right area, on PostgreSQL 15 without checksums and 18 with checksums; no findings on healthy clusters of varied
content; junk files never crash it.

Damage is written with plain byte writes while the cluster is stopped, one small table per kind of damage, and one
scan covers them all.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_pg import MakeLab, create_test_cluster
from pgsurgeon import core
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster, run_sql

BLCKSZ = 8192
# one table per damage; 2000 rows of ~100 bytes ≈ 28 pages, so block 3 is mid-relation
DAMAGE_TABLES = (
    "hdr_lower",
    "hdr_upper",
    "hdr_special",
    "hdr_flags",
    "hdr_version",
    "lp_random",
    "lp_one",
    "tup_xmin",
    "tup_xmax_multi",
    "tup_infomask",
    "tup_hoff",
    "tup_natts",
    "tup_random",
    "zero_vm",
    "torn",
    "misdirected",
    "checksum_only",
    "truncated",
    "tup_xmin_recomputed",
    "healthy",
)


@dataclass
class Damaged:
    cluster: LabCluster
    files: dict[str, Path]
    report: dict[str, Any]
    code: int

    def findings(self, table: str) -> list[dict[str, Any]]:
        node = int(self.files[table].name)
        return [f for f in self.report["findings"] if f["relfilenode"] == node and f["fork"] == "main"]


def write_at(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def read_page(path: Path, block: int) -> bytearray:
    with path.open("rb") as fh:
        fh.seek(block * BLCKSZ)
        return bytearray(fh.read(BLCKSZ))


def write_page(path: Path, block: int, page: bytes, *, restamp: bool = False) -> None:
    page = bytearray(page)
    if restamp:  # damage "in memory before the write": a valid checksum over the damaged page
        checksum = core.page_checksum(bytes(page), block)
        assert checksum is not None
        page[8:10] = checksum.to_bytes(2, "little")
    write_at(path, block * BLCKSZ, bytes(page))


def item(page: bytes, lp: int) -> tuple[int, int]:
    """(lp_off, lp_len) of line pointer ``lp``."""
    w = int.from_bytes(page[24 + 4 * (lp - 1) : 28 + 4 * (lp - 1)], "little")
    return w & 0x7FFF, (w >> 17) & 0x7FFF


def damage(files: dict[str, Path], rng: random.Random) -> None:
    u16 = lambda v: v.to_bytes(2, "little")  # noqa: E731
    u32 = lambda v: v.to_bytes(4, "little")  # noqa: E731
    write_at(files["hdr_lower"], 3 * BLCKSZ + 12, u16(8000))  # pd_lower above pd_upper
    write_at(files["hdr_upper"], 3 * BLCKSZ + 14, u16(9000))  # pd_upper beyond pd_special and the page
    write_at(files["hdr_special"], 3 * BLCKSZ + 16, u16(8000))  # pd_special inside the tuples (PG15 reads it!)
    write_at(files["hdr_flags"], 3 * BLCKSZ + 10, u16(0x0F00))
    write_at(files["hdr_version"], 3 * BLCKSZ + 18, u16(4096 | 4))  # page size 4096 in the size/version word
    page = read_page(files["lp_random"], 3)
    lower = int.from_bytes(page[12:14], "little")
    page[24:lower] = rng.randbytes(lower - 24)  # the seeds' case: the whole item-ID array is garbage
    write_page(files["lp_random"], 3, page)
    page = read_page(files["lp_one"], 3)
    page[24 + 4 * 4 : 24 + 4 * 5] = u32(8189 | (1 << 15) | (200 << 17))  # lp 5: off 8189 len 200, past the page
    write_page(files["lp_one"], 3, page)
    for table, lp, edit in (
        # xmin far in the past with its hint bits cleared: what gives "could not access status of transaction"
        (
            "tup_xmin",
            7,
            lambda t: (
                t.__setitem__(slice(0, 4), u32(3_000_000_000)),
                t.__setitem__(slice(20, 22), u16(int.from_bytes(t[20:22], "little") & ~0x0300)),
            ),
        ),
        # xmin never assigned yet: the row silently disappears
        ("tup_xmin_recomputed", 7, lambda t: t.__setitem__(slice(0, 4), u32(2_000_000))),
        (
            "tup_xmax_multi",
            7,
            lambda t: (t.__setitem__(slice(4, 8), u32(50_000)), t.__setitem__(slice(20, 22), u16(0x1000 | 0x0002))),
        ),
        ("tup_infomask", 7, lambda t: t.__setitem__(slice(20, 22), u16(0x1000 | 0x0400 | 0x0002))),
        ("tup_hoff", 7, lambda t: t.__setitem__(22, 40)),
        ("tup_natts", 7, lambda t: t.__setitem__(slice(18, 20), u16(0x07FF))),
        ("tup_random", 7, lambda t: t.__setitem__(slice(0, 23), rng.randbytes(23))),
    ):
        page = read_page(files[table], 3)
        off, length = item(page, lp)
        tup = bytearray(page[off : off + length])
        edit(tup)
        page[off : off + length] = tup
        write_page(files[table], 3, page, restamp=table == "tup_xmin_recomputed")
    # an all-zero page where VACUUM had set the visibility map bit
    write_at(files["zero_vm"], 3 * BLCKSZ, bytes(BLCKSZ))
    # torn: the second half of block 3 comes from block 9
    torn = read_page(files["torn"], 3)
    torn[4096:] = read_page(files["torn"], 9)[4096:]
    write_page(files["torn"], 3, torn)
    # misdirected: block 9 written over block 3
    write_page(files["misdirected"], 3, read_page(files["misdirected"], 9))
    # checksum only
    page = read_page(files["checksum_only"], 3)
    page[8] ^= 0x5A
    write_page(files["checksum_only"], 3, page)
    # the file loses its tail (at a block boundary: nothing partial to see, only the VM knows)
    size = files["truncated"].stat().st_size
    os.truncate(files["truncated"], size - 5 * BLCKSZ)


@pytest.fixture(scope="module", params=["15", "18"], ids=["pg15", "pg18"])
def damaged(request: pytest.FixtureRequest, lab_base_dir: Path) -> Iterator[Damaged]:
    version = request.param
    cluster = create_test_cluster(lab_base_dir, f"scan{version}", version)
    try:
        cluster.start()
        files: dict[str, Path] = {}
        with cluster.connect() as conn:
            for table in DAMAGE_TABLES:
                conn.execute(f"CREATE TABLE {table} (id int, a int, label text)")
                conn.execute(
                    f"INSERT INTO {table} SELECT g, g % 7, repeat('x', 80) || g FROM generate_series(1, 2000) g"
                )
                conn.execute(f"VACUUM (FREEZE OFF) {table}")
                (path,) = conn.execute("SELECT pg_relation_filepath(%s::regclass)", [table]).fetchone() or ("",)
                files[table] = cluster.pgdata / str(path)
            conn.execute("CHECKPOINT")
        cluster.stop()
        damage(files, random.Random(20261122))
        out = cluster.pgdata.parent / "scan.json"
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["scan", str(cluster.pgdata), "--format", "json"])
        out.write_text(buf.getvalue())
        yield Damaged(cluster, files, json.loads(buf.getvalue()), code)
    finally:
        cluster.destroy()


def test_checked_chunks_are_kept_only_when_asked_for(damaged: Damaged, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan hands its checked chunks to a caller that asks (diagnose starts the server's checks on them); a plain
    scan keeps none, so its memory does not grow with the cluster. Fails when a plain scan's chunks pile up, or when
    an asking caller misses a table's blocks."""
    from pgsurgeon import core
    from pgsurgeon.scan import ScanRequest, run_scan

    made: list[Any] = []
    real = core.Scanner

    def scanner(*args: Any) -> Any:
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr(core, "Scanner", scanner)
    run_scan(ScanRequest(pgdata=damaged.cluster.pgdata))
    assert made and all(s.checked_chunks() == [] for s in made)
    handed: list[Any] = []
    run_scan(ScanRequest(pgdata=damaged.cluster.pgdata, on_checked=handed.extend))
    node = int(damaged.files["healthy"].name)
    blocks = damaged.files["healthy"].stat().st_size // BLCKSZ
    mine = sorted((c["first"], c["count"]) for c in handed if c["relfilenode"] == node)
    assert sum(n for _f, n in mine) == blocks and mine[0][0] == 0, mine


def codes_at(d: Damaged, table: str, block: int | None = 3) -> set[str]:
    return {f["code"] for f in d.findings(table) if f["block"] == block}


def areas_at(d: Damaged, table: str, block: int = 3) -> set[str]:
    return {f["area"] for f in d.findings(table) if f["block"] == block}


def test_exit_status_and_shape(damaged: Damaged) -> None:
    assert damaged.code == 2
    r = damaged.report
    assert set(r) == {"pgdata", "control", "summary", "warnings", "findings", "zero_pages_inside"}
    assert r["warnings"] == []
    assert set(r["summary"]) >= {"files", "blocks", "bytes", "findings", "seconds"}
    for f in r["findings"]:
        assert set(f) >= {
            "code",
            "area",
            "severity",
            "path",
            "relfilenode",
            "fork",
            "block",
            "item",
            "message",
            "pg_error",
            "remedy",
        }
        assert f["severity"] in ("error", "warning") and f["remedy"]
        assert not f["path"].startswith("/")


def test_healthy_table_is_clean(damaged: Damaged) -> None:
    assert damaged.findings("healthy") == []
    # nothing outside the damaged tables either (catalogs, other relations)
    damaged_nodes = {int(p.name) for p in damaged.files.values()}
    stray = [f for f in damaged.report["findings"] if f["relfilenode"] not in damaged_nodes]
    assert stray == []


@pytest.mark.parametrize(
    ("table", "area", "code"),
    [
        ("hdr_lower", "page_header", "page_header.lower_gt_upper"),
        ("hdr_upper", "page_header", "page_header.upper_gt_special"),
        ("hdr_special", "page_header", "page_header.special_size"),
        ("hdr_flags", "page_header", "page_header.bad_flags"),
        ("hdr_version", "page_header", "page_header.page_size"),
        ("lp_random", "line_pointer", None),
        ("zero_vm", "page_header", "page_header.zeroed_all_visible"),
        ("torn", "tuple_header", "tuple_header.ctid_not_self"),
        ("misdirected", "tuple_header", "tuple_header.ctid_not_self"),
    ],
)
def test_page_damage_is_reported_at_its_block(damaged: Damaged, table: str, area: str, code: str | None) -> None:
    found = damaged.findings(table)
    assert found, f"{table}: nothing reported"
    assert {f["block"] for f in found} == {3}, f"{table}: {found}"
    assert area in areas_at(damaged, table)
    if code:
        assert code in codes_at(damaged, table)
    if damaged.cluster.checksums and table != "zero_vm":
        assert "checksum.mismatch" in codes_at(damaged, table)


@pytest.mark.parametrize(
    ("table", "code"),
    [
        ("lp_one", "line_pointer.past_page"),
        ("tup_xmin", "tuple_header.xmin_old"),
        ("tup_xmax_multi", "tuple_header.multi_future"),
        ("tup_infomask", "tuple_header.infomask"),
        ("tup_hoff", "tuple_header.t_hoff"),
        ("tup_natts", "tuple_header.natts"),
        ("tup_random", None),
    ],
)
def test_item_damage_names_the_line_pointer(damaged: Damaged, table: str, code: str | None) -> None:
    found = [f for f in damaged.findings(table) if f["code"] != "checksum.mismatch"]
    assert found and {f["block"] for f in found} == {3}
    assert {f["item"] for f in found} == {5 if table == "lp_one" else 7}, found
    if code:
        assert code in {f["code"] for f in found}


def test_checksum_only_flip(damaged: Damaged) -> None:
    found = damaged.findings("checksum_only")
    if damaged.cluster.checksums:
        assert [(f["code"], f["block"], f["area"]) for f in found] == [("checksum.mismatch", 3, "checksum")]
    else:  # without checksums the stored value means nothing: no false alarm
        assert found == []


def test_recomputed_checksum_is_caught_structurally(damaged: Damaged) -> None:
    """Damage done in memory before the write carries a valid checksum: only the structure gives it away."""
    codes = codes_at(damaged, "tup_xmin_recomputed")
    assert "checksum.mismatch" not in codes
    assert "tuple_header.xmin_future" in codes


def test_truncated_file_is_reported(damaged: Damaged) -> None:
    """Five blocks cut off a vacuumed table: the visibility map and the free space map both still cover them."""
    found = damaged.findings("truncated")
    assert sorted(f["code"] for f in found) == ["file.fsm_beyond_end", "file.vm_beyond_end"]
    assert {f["area"] for f in found} == {"file"}
    nblocks = damaged.files["truncated"].stat().st_size // BLCKSZ
    assert {f["block"] for f in found} == {nblocks}


def test_scan_single_files_and_relation_filter(damaged: Damaged, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(damaged.files["hdr_flags"]), str(damaged.files["healthy"]), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    assert {f["relfilenode"] for f in report["findings"]} == {int(damaged.files["hdr_flags"].name)}
    node = damaged.files["healthy"].name
    assert main(["scan", str(damaged.cluster.pgdata), "--relation", node, "-j", "1"]) == 0
    assert "no damage found" in capsys.readouterr().out


def test_running_server_is_refused_without_live(damaged: Damaged, capsys: pytest.CaptureFixture[str]) -> None:
    damaged.cluster.start()
    try:
        assert main(["scan", str(damaged.cluster.pgdata)]) == 1
        err = capsys.readouterr().err
        assert "the server is running" in err and "hint:" in err
        assert (
            main(["scan", str(damaged.cluster.pgdata), "--live", "--dsn", damaged.cluster.dsn(), "--format", "json"])
            == 2
        )
        report = json.loads(capsys.readouterr().out)
        names = {f["relation"] for f in report["findings"]}
        assert "public.hdr_flags" in names and "public.healthy" not in names
    finally:
        damaged.cluster.stop()
    _assert_same_without_dsn(damaged.cluster, report, capsys)


# --------------------------------------------------------------------------------------------- healthy clusters

HEALTHY_SQL = [
    "CREATE EXTENSION IF NOT EXISTS pageinspect",
    "CREATE TABLE docs (id serial PRIMARY KEY, body text, blob bytea, meta jsonb, tags text[], at tsrange, pt point)",
    "INSERT INTO docs (body, blob, meta, tags, at, pt) SELECT repeat(md5(g::text), 10 + g % 400), "
    "decode(repeat(md5((g * 3)::text), 5 + g % 300), 'hex'), jsonb_build_object('k', g, 'v', repeat('y', g % 3000)), "
    "ARRAY['a' || g, 'b'], tsrange('2020-01-01'::timestamp + g * interval '1 hour', NULL), point(g, g) "
    "FROM generate_series(1, 3000) g",
    "CREATE INDEX docs_gin ON docs USING gin (meta)",
    "CREATE INDEX docs_tags ON docs USING gin (tags)",
    "CREATE INDEX docs_gist ON docs USING gist (pt)",
    "CREATE INDEX docs_range ON docs USING gist (at)",
    "CREATE INDEX docs_brin ON docs USING brin (id)",
    "CREATE INDEX docs_hash ON docs USING hash (body)",
    "CREATE INDEX docs_spgist ON docs USING spgist (pt)",
    "UPDATE docs SET body = body || '!' WHERE id % 10 = 0",
    "UPDATE docs SET meta = meta || '{\"x\": 1}' WHERE id % 13 = 0",
    "DELETE FROM docs WHERE id % 17 = 0",
    "VACUUM docs",
    "DELETE FROM docs WHERE id % 19 = 0",
    "CREATE SEQUENCE s; SELECT nextval('s')",
    "CREATE UNLOGGED TABLE scratch AS SELECT g FROM generate_series(1, 1000) g",
    "CREATE TABLE parted (k int, v text) PARTITION BY RANGE (k)",
    "CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (500)",
    "CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (500) TO (1000)",
    "INSERT INTO parted SELECT g, 'v' || g FROM generate_series(0, 999) g",
    "UPDATE parted SET k = k + 500 WHERE k < 10",  # rows move between partitions
    "BEGIN; INSERT INTO docs (body) VALUES ('aborted'); UPDATE docs SET body = 'no' WHERE id < 50; ROLLBACK",
    "BEGIN; INSERT INTO docs (body) VALUES ('prepared'); PREPARE TRANSACTION 'p1'",
    "SELECT count(*) FROM docs",
    "CHECKPOINT",
]


@pytest.mark.parametrize("version", ["15", "18"])
def test_healthy_clusters_have_no_findings(version: str, lab_base_dir: Path) -> None:
    cluster = create_test_cluster(
        lab_base_dir, f"healthy{version}", version, extra_conf={"max_prepared_transactions": 5}
    )
    try:
        cluster.start()
        cluster.run_tool("pgbench", "-i", "-q", "-s", "2", "-d", "postgres")
        cluster.run_tool("pgbench", "-c", "2", "-t", "300", "-n", "-d", "postgres")
        with cluster.connect() as conn:
            for statement in HEALTHY_SQL:
                conn.execute(statement)
        cluster.stop()
        outcome = json.loads(_scan_json(cluster.pgdata))
        assert outcome["findings"] == [], json.dumps(outcome["findings"][:5], indent=1)
        assert outcome["summary"]["blocks"] > 2000
        assert outcome["control"]["state"] == "shut down"
        # with the catalog: attribute walks, TOAST chunk checks, index TIDs against heaps, all relations named
        cluster.start()
        outcome = json.loads(_scan_json(cluster.pgdata, "--live", "--dsn", cluster.dsn()))
        assert outcome["findings"] == [], json.dumps(outcome["findings"][:5], indent=1)
    finally:
        cluster.destroy()


def _scan_json(pgdata: Path, *extra: str) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["scan", str(pgdata), "--format", "json", *extra]) in (0, 2)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------- junk files


def test_junk_files_never_crash(damaged: Damaged, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Garbage, empty, truncated and odd-sized files give findings or one clear line, never a crash."""
    fake = tmp_path / "pgdata"
    (fake / "global").mkdir(parents=True)
    (fake / "base" / "5").mkdir(parents=True)
    shutil.copy(damaged.cluster.pgdata / "global" / "pg_control", fake / "global" / "pg_control")
    (fake / "PG_VERSION").write_text(str(damaged.cluster.version))
    rng = random.Random(7)
    (fake / "base" / "5" / "16384").write_bytes(rng.randbytes(BLCKSZ * 6))  # garbage
    (fake / "base" / "5" / "16385").write_bytes(b"")  # empty
    (fake / "base" / "5" / "16386").write_bytes(rng.randbytes(BLCKSZ * 2 + 1000))  # partial trailing page
    (fake / "base" / "5" / "16387").write_bytes(bytes(BLCKSZ * 3))  # zeroes
    (fake / "base" / "5" / "16388.2").write_bytes(bytes(BLCKSZ))  # segments 0 and 1 missing
    (fake / "base" / "5" / "not-a-relation").write_text("hello")
    code = main(["scan", str(fake), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    by_node: dict[int, set[str]] = {}
    for f in report["findings"]:
        by_node.setdefault(f["relfilenode"], set()).add(f["code"])
    assert by_node[16384]
    assert "file.partial_page" in by_node[16386]
    assert "file.missing_segment" in by_node[16388]
    assert 16385 not in by_node and 16387 not in by_node
    # a directory that is not a data directory: one clear line
    assert main(["scan", str(tmp_path)]) == 1
    assert "not a data directory" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------- index evidence


@pytest.mark.parametrize("version", ["15", "18"])
def test_index_entries_reveal_lost_rows(version: str, make_lab: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """With --dsn the scan knows each btree's table and checks every leaf TID against the heap: entries into an
    all-zero page (rows lost, though the server reads the page as empty), past a truncated heap's end, or at an
    unused line pointer. A table with no index keeps no trace but the zero page before its in-use ones: listed
    by scan and noted by diagnose (concurrent inserts leave such pages in healthy tables, so it is no finding)."""
    cluster = make_lab(version)
    files: dict[str, Path] = {}
    with cluster.connect() as conn:
        conn.execute("CREATE EXTENSION amcheck")
        conn.execute("CREATE EXTENSION pageinspect")
        conn.execute("CREATE TABLE no_index AS SELECT g AS id, repeat('z', 90) AS label FROM generate_series(1, 900) g")
        (path,) = conn.execute("SELECT pg_relation_filepath('no_index')").fetchone() or ("",)
        files["no_index"] = cluster.pgdata / str(path)
        for table in ("ix_zero", "ix_trunc", "ix_unused", "ix_healthy"):
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, label text)")
            conn.execute(f"INSERT INTO {table} SELECT g, repeat('y', 90) FROM generate_series(1, 3000) g")
            (path,) = conn.execute("SELECT pg_relation_filepath(%s::regclass)", [table]).fetchone() or ("",)
            files[table] = cluster.pgdata / str(path)
        conn.execute("CHECKPOINT")
    cluster.stop()
    write_at(files["ix_zero"], 4 * BLCKSZ, bytes(BLCKSZ))
    write_at(files["no_index"], 3 * BLCKSZ, bytes(BLCKSZ))
    os.truncate(files["ix_trunc"], files["ix_trunc"].stat().st_size - 3 * BLCKSZ)
    page = read_page(files["ix_unused"], 2)
    page[24 + 4 * 9 : 24 + 4 * 10] = bytes(4)  # line pointer 10 -> LP_UNUSED
    write_page(files["ix_unused"], 2, page, restamp=True)
    cluster.start()
    code = main(["scan", str(cluster.pgdata), "--live", "--dsn", cluster.dsn(), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    by_rel: dict[str, set[tuple[str, int | None]]] = {}
    for f in report["findings"]:
        by_rel.setdefault(f["relation"], set()).add((f["code"], f["block"]))
    assert ("page_header.zeroed_referenced", 4) in by_rel["public.ix_zero"]
    assert {c for c, _ in by_rel["public.ix_trunc_pkey"]} == {"index.tid_beyond_heap"}
    assert ("index.tid_unused", None) not in by_rel.get("public.ix_unused", set())
    assert "index.tid_unused" in {c for c, _ in by_rel["public.ix_unused_pkey"]}
    assert "public.ix_healthy" not in by_rel and "public.ix_healthy_pkey" not in by_rel
    assert "public.no_index" not in by_rel
    # the referenced zero page is a finding, not a note; the unreferenced one is listed with its block
    assert [(z["relation"], z["blocks"]) for z in report["zero_pages_inside"]] == [("public.no_index", [3])]
    assert main(["diagnose", "-d", cluster.dsn(), "-t", "no_index", "--format", "json"]) == 0
    (rel,) = [r for r in json.loads(capsys.readouterr().out)["relations"] if r["relation"] == "no_index"]
    assert any("block(s) 3," in n for n in rel["notes"]), rel["notes"]
    _assert_same_without_dsn(cluster, report, capsys)


def _assert_same_without_dsn(cluster: Any, report: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """With the server stopped and no --dsn, the catalog comes from the data files: the findings are the same,
    relation names included, and the free space map's, which only a stopped cluster's files can tell (a running
    server's map on disk lags its truncations: crates/core/src/checks/scan/relation.rs, fsm_check)."""
    cluster.stop()
    code = main(["scan", str(cluster.pgdata), "--format", "json"])
    offline = json.loads(capsys.readouterr().out)
    assert code == (2 if report["findings"] else 0)

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f["code"], f["relation"], str(f["block"]), str(f["item"]))

    assert not [f for f in report["findings"] if f["code"] == "file.fsm_beyond_end"]
    judged_live = [f for f in offline["findings"] if f["code"] != "file.fsm_beyond_end"]
    assert sorted(map(key, judged_live)) == sorted(map(key, report["findings"]))
    assert all(f["relation"] for f in offline["findings"])


def test_progress_and_text_output(damaged: Damaged, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(damaged.cluster.pgdata), "-P", "-j", "2"])
    out = capsys.readouterr().out
    assert code == 2
    assert "scanned" in out and "MB/s" in out
    assert "page_header.bad_flags" in out and "what to do:" in out


@pytest.mark.parametrize("version", ["15", "18"])
def test_toast_damage_is_traced_to_the_row(version: str, make_lab: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged TOAST chunk is reported at the table row whose value it breaks (block and line pointer), with
    the server's error; healthy TOAST-ed text, bytea and jsonb, dropped and added columns give nothing."""
    cluster = make_lab(version)
    with cluster.connect() as conn:
        conn.execute("CREATE TABLE tt (id int PRIMARY KEY, gone int, body text, blob bytea, doc jsonb)")
        conn.execute(
            "INSERT INTO tt SELECT g, g,"
            " (SELECT string_agg(md5((g * 100 + i)::text), '') FROM generate_series(1, 120) i),"
            " (SELECT decode(string_agg(md5((g * 7 + i)::text), ''), 'hex') FROM generate_series(1, 300) i),"
            " jsonb_build_object('k', g, 'pad', repeat('z', 3000)) FROM generate_series(1, 60) g"
        )
        conn.execute("ALTER TABLE tt DROP COLUMN gone")
        conn.execute("ALTER TABLE tt ADD COLUMN extra int DEFAULT 7")
        conn.execute("UPDATE tt SET body = body || 'x' WHERE id % 10 = 0")
        conn.execute("DELETE FROM tt WHERE id % 9 = 0")
        (toast_path, toast_rel) = conn.execute(
            "SELECT pg_relation_filepath(reltoastrelid), reltoastrelid::regclass::text"
            " FROM pg_class WHERE relname = 'tt'"
        ).fetchone() or ("", "")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        # the second chunk on the TOAST table's first page, and the value it belongs to
        (chunk_id, lp_off) = conn.execute(
            "SELECT (SELECT chunk_id FROM " + toast_rel + " WHERE ctid = '(0,2)'), lp_off "
            "FROM heap_page_items(get_raw_page(%s, 0)) WHERE lp = 2",
            [toast_rel],
        ).fetchone() or (0, 0)
        # the row holding the TOAST pointer to that value (va_valueid sits 8 bytes after the pointer's 0x01 0x12 tag)
        needle = int(chunk_id).to_bytes(4, "little")
        row_ctid = ""
        for blk in range(int(conn.execute("SELECT pg_relation_size('tt') / 8192").fetchone()[0])):  # type: ignore[index]
            for lp, data in conn.execute("SELECT lp, t_data FROM heap_page_items(get_raw_page('tt', %s))", [blk]):
                raw = bytes(data or b"")
                at = raw.find(b"\x01\x12")
                while at >= 0:
                    if raw[at + 10 : at + 14] == needle:
                        row_ctid = f"({blk},{lp})"
                    at = raw.find(b"\x01\x12", at + 1)
        assert row_ctid
        conn.execute("CHECKPOINT")
    code = main(["scan", str(cluster.pgdata), "--live", "--dsn", cluster.dsn(), "--format", "json"])
    assert code == 0, capsys.readouterr().out[:2000]
    capsys.readouterr()
    cluster.stop()
    toast_file = cluster.pgdata / str(toast_path)
    page = read_page(toast_file, 0)
    seq_at = lp_off + 24 + 4  # t_hoff 24, chunk_id oid, then chunk_seq
    page[seq_at : seq_at + 4] = (57).to_bytes(4, "little")
    write_page(toast_file, 0, page, restamp=True)
    cluster.start()
    code = main(["scan", str(cluster.pgdata), "--live", "--dsn", cluster.dsn(), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    on_row = [f for f in report["findings"] if f["relation"] == "public.tt" and f["area"] == "toast"]
    assert on_row, report["findings"]
    block, item = (int(x) for x in row_ctid.strip("()").split(","))
    assert {(f["block"], f["item"]) for f in on_row} == {(block, item)}
    assert any("chunk number" in f["pg_error"] for f in on_row)
    _assert_same_without_dsn(cluster, report, capsys)


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("pd_pagesize_version", 4096 | 4, "page_header.page_size"),  # the size/version word says 4096 bytes
        ("pd_pagesize_version", BLCKSZ | 5, "page_header.layout_version"),
        ("pd_special", BLCKSZ - 16, "page_header.special_size"),  # a heap page has no special space
    ],
)
def test_header_fields_the_server_ignores_are_damage(
    make_lab: MakeLab, field: str, value: int, code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL 15 reads these pages without a word, but the server never writes such values: scan reports them
    as damage (severity error, exit 2), with no server error and a remedy."""
    from pgsurgeon import simulate
    from pgsurgeon.exitcodes import Exit

    lab = make_lab("15")
    run_sql(lab, "CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 2000) g")
    run_sql(lab, "CHECKPOINT")
    (node,) = run_sql(lab, "SELECT pg_relation_filenode('t')")[0]
    simulate.run(simulate.SimulateRequest(mode="header", field=field, value=value, block=3, dsn=lab.dsn(), table="t"))
    (count,) = run_sql(lab, "SELECT count(*) FROM t")[0]  # read silently: no error
    assert count > 0
    lab.stop()
    assert main(["scan", str(lab.pgdata), "--format", "json"]) == Exit.DAMAGE
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["relfilenode"] == node]
    ours = [f for f in found if f["code"] == code]
    assert ours and ours[0]["block"] == 3 and ours[0]["severity"] == "error", found
    assert ours[0]["pg_error"].startswith("none") and ours[0]["remedy"]


# --------------------------------------------------------------------------------------------- free space map


def _fsm_finding(pgdata: Path, node: int, capsys: pytest.CaptureFixture[str]) -> dict[str, Any] | None:
    assert main(["scan", str(pgdata), "--relation", str(node), "--format", "json"]) in (0, 2)
    report = json.loads(capsys.readouterr().out)
    found = [f for f in report["findings"] if f["code"] == "file.fsm_beyond_end"]
    assert len(found) <= 1, found
    return found[0] if found else None


@pytest.mark.parametrize("version", ["15", "18"])
def test_fsm_past_a_cut_main_fork(
    version: str, make_lab: MakeLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The main fork cut short (the simulator's truncate mode) leaves the free space map recording space for the
    blocks that are gone: the scan names the first of them and counts them all, as pg_freespace saw them before the
    cut. The server checks each block the map offers against the file's length (freespace.c's fsm_does_block_exist)
    and zeroes the slot: an INSERT that needs the space succeeds, and the map forgets the slots it stepped over.
    Fails if the scan misses or miscounts the blocks, reports a block inside the file, or the server raises an error
    on the INSERT (then the finding would be an error with a pg_error, not a warning)."""
    cluster = make_lab(version)
    table = "fsm_cut"
    with cluster.connect() as conn:
        conn.execute("CREATE EXTENSION pg_freespacemap")
        conn.execute(f"CREATE TABLE {table} (id int, pad text)")
        conn.execute(f"INSERT INTO {table} SELECT g, repeat('x', 200) FROM generate_series(1, 4000) g")
        # half the rows of the second half: those pages keep rows (VACUUM does not cut them) and gain free space
        conn.execute(f"DELETE FROM {table} WHERE id > 2000 AND id % 2 = 0")
        conn.execute(f"VACUUM {table}")
        conn.execute("CHECKPOINT")
        (cut,) = conn.execute(f"SELECT (ctid::text::point)[0]::int FROM {table} WHERE id = 2001").fetchone() or (0,)
        recorded = [
            b
            for (b,) in conn.execute(
                f"SELECT blkno FROM pg_freespace('{table}') WHERE avail > 0 AND blkno >= %s ORDER BY 1", [cut]
            ).fetchall()
        ]
        (path,) = conn.execute("SELECT pg_relation_filepath(%s::regclass)", [table]).fetchone() or ("",)
    node = int(Path(str(path)).name)
    assert cut > 10 and len(recorded) > 20, (cut, recorded)
    manifest = tmp_path / "cut.json"
    code = main(
        ["corrupt", "truncate", "--block", str(cut), "-d", cluster.dsn(), "-t", table, "--manifest", str(manifest)]
    )
    assert code == 0
    capsys.readouterr()
    cluster.stop()
    assert (cluster.pgdata / str(path)).stat().st_size == cut * BLCKSZ

    found = _fsm_finding(cluster.pgdata, node, capsys)
    assert found is not None
    assert (found["block"], found["fork"], found["severity"], found["pg_error"]) == (recorded[0], "main", "warning", "")
    assert f"{len(recorded)} block(s)" in found["message"], (found["message"], recorded)
    assert f"(block {cut})" in found["message"]

    # The server steps over the missing blocks: the INSERT lands in the file, and the map forgets the slots met.
    cluster.start()
    with cluster.connect() as conn:
        (ctid,) = conn.execute(f"INSERT INTO {table} VALUES (0, repeat('y', 200)) RETURNING ctid::text").fetchone() or (
            "",
        )
        (nblocks,) = conn.execute(f"SELECT pg_relation_size('{table}') / {BLCKSZ}").fetchone() or (0,)
        conn.execute("CHECKPOINT")
    assert int(ctid.strip("()").split(",")[0]) < nblocks <= cut + 1, (ctid, nblocks)
    cluster.stop()
    after = _fsm_finding(cluster.pgdata, node, capsys)
    left = int(after["message"].split(" block(s)")[0].rsplit(" ", 1)[1]) if after else 0
    assert left < len(recorded), (after, recorded)
