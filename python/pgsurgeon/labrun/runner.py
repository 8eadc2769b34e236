"""`pgsurgeon lab`: the whole story on throwaway clusters — for each scenario, a fresh copy of the seeds' table is
damaged with the simulator, the server is observed (SELECT, count, pg_dump, pg_amcheck), then scan and diagnose
look for the damage, salvage saves the rows, repair removes what cannot be saved, and everything is compared with
the ground truth taken before the damage. Every number in the report comes from what happened in this run."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import ROLE_INDEX, ROLE_TABLE, ROLE_TOAST
from pgsurgeon.datadir import Geometry
from pgsurgeon.lab import LabCluster, list_labs
from pgsurgeon.labrun import observe as obs
from pgsurgeon.labrun import steps
from pgsurgeon.labrun.scenarios import Scenario
from pgsurgeon.pgbin import find_install

SEED_ROWS = 2400
# The seeds' table: integer columns, a text description, and a bytea payload that every 8th row makes large and
# incompressible enough to be TOAST-ed.
TEMPLATE_SQL = """
CREATE TABLE lab_template AS
SELECT g AS id,
       (g * 7919 + %(seed)s) %% 1000 AS a,
       g %% 97 AS b,
       'row ' || g || ' ' || md5((g + %(seed)s)::text) AS description,
       CASE WHEN g %% 8 = 0
            THEN (SELECT decode(string_agg(md5((g * 31 + i + %(seed)s)::text), ''), 'hex')
                  FROM generate_series(1, 160) i)
            ELSE decode(md5((g + %(seed)s)::text), 'hex') END AS payload
FROM generate_series(1, %(rows)s) g
"""


@dataclass
class BlockMap:
    relation: str
    nblocks: int
    damaged: list[int]
    """Blocks the simulator changed."""
    flagged: dict[int, str]
    """Block -> worst finding area reported by scan or diagnose."""
    missing: list[int] = field(default_factory=list)
    """Blocks the simulator cut off the file (truncated or removed segment): drawn as missing."""
    checksum: list[int] = field(default_factory=list)
    """Blocks with a checksum failure reported, whatever the worst area."""


@dataclass
class Result:
    scenario: Scenario
    cluster: str
    checksums: bool
    table: str
    rows: int
    rows_on_damaged_blocks: int = 0
    """Rows the ground truth had on the table blocks the simulator changed."""
    observation: obs.Observation | None = None
    scan: dict[str, Any] = field(default_factory=dict)
    diagnose: dict[str, Any] = field(default_factory=dict)
    salvage: dict[str, Any] = field(default_factory=dict)
    repair: dict[str, Any] = field(default_factory=dict)
    block_map: BlockMap | None = None
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass
class LabRun:
    seed: int
    scenarios: list[Scenario]
    results: list[Result]
    clusters: list[dict[str, Any]]
    seconds: float
    out_dir: Path


Progress = Callable[[str], None]


def _truth(cluster: LabCluster, table: str) -> tuple[dict[int, str], dict[int, list[int]]]:
    """id -> md5 of the row's text, and heap block -> ids on it."""
    with cluster.connect() as conn:
        query = db.sql.SQL("SELECT id, md5(t::text), (ctid::text::point)[0]::int FROM {} t").format(
            db.sql.Identifier(table)
        )
        truth: dict[int, str] = {}
        blocks: dict[int, list[int]] = {}
        for key, digest, block in conn.execute(query):
            truth[int(key)] = str(digest)
            blocks.setdefault(int(block), []).append(int(key))
        return truth, blocks


def _prepare(cluster: LabCluster, table: str, index: str) -> tuple[dict[int, str], dict[int, list[int]]]:
    ident = db.sql.Identifier(table)
    with cluster.connect() as conn:
        conn.execute(db.sql.SQL("DROP TABLE IF EXISTS {}").format(ident))
        conn.execute(db.sql.SQL("CREATE TABLE {} AS SELECT * FROM lab_template ORDER BY id").format(ident))
        conn.execute(db.sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (id)").format(ident))
        conn.execute(db.sql.SQL("CREATE INDEX {} ON {} (a)").format(db.sql.Identifier(f"{table}_a"), ident))
        if index:  # the scenario's own index (a constant of scenarios.py, never user input)
            conn.execute(db.sql.SQL("CREATE INDEX {} ON {} " + index).format(db.sql.Identifier(f"{table}_ix"), ident))
        conn.execute(db.sql.SQL("VACUUM ANALYZE {}").format(ident))
    truth = _truth(cluster, table)
    with cluster.connect() as conn:
        conn.execute("CHECKPOINT")
    return truth


def _relation_for_map(cluster: LabCluster, table: str, shows: str, own_index: bool) -> tuple[str, str, int]:
    """(name, relation file path, nblocks) of the relation the scenario damages: the table, its TOAST table, its
    primary key or the scenario's own index."""
    with cluster.connect() as conn:
        facts = catalog.server_facts(conn)
        oid, _ = catalog.resolve_relation(conn, f"public.{table}")
        rels = catalog.relatives(conn, [oid], database=facts.database, block_size=facts.block_size)
        if shows == "toast":
            rel = next(r for r in rels if r.role == ROLE_TOAST)
        elif shows == "index":
            name = f"{table}_ix" if own_index else f"{table}_pkey"
            rel = next(r for r in rels if r.role == ROLE_INDEX and r.name == name)
        else:
            rel = next(r for r in rels if r.role == ROLE_TABLE)
        catalog.read_sizes(conn, [rel])
    assert rel.filepath is not None
    return rel.qualified, rel.filepath, rel.nblocks


_AREA_RANK = {
    "page_header": 6,
    "checksum": 5,
    "line_pointer": 4,
    "tuple_header": 3,
    "tuple_data": 2,
    "toast": 2,
    "index": 2,
    "file": 1,
}


def _block_map(name: str, path: str, nblocks: int, manifest: Any, findings: list[dict[str, Any]]) -> BlockMap:
    geo = Geometry()  # lab clusters are built with the default block and segment sizes
    damaged = sorted({p.block for p in manifest.pages if p.file == path})
    missing: list[int] = []
    for change in manifest.changes:
        if change.kind != "bytes" and change.file.split(".")[0] == path:
            damaged.append(max(0, nblocks - 1))
            segno = int(change.file.split(".")[1]) if "." in change.file else 0
            first = geo.block_at(segno, change.offset if change.kind == "truncate" else 0)
            size = (change.old_size or 0) if change.kind == "truncate" else change.length
            missing += range(first, geo.blocks_to(segno, size))
    node = int(path.rsplit("/", 1)[-1])
    flagged: dict[int, str] = {}
    checksum: set[int] = set()
    caused: set[int] = set()
    # The server's own refusal ("invalid page", code server.*) is a consequence: it colours a block only when
    # nothing names the cause (a checksum failure is then drawn as one, not as a damaged header).
    ordered = sorted(findings, key=lambda f: str(f.get("code", "")).startswith("server."))
    for f in ordered:
        if f.get("relfilenode") != node or f.get("block") is None:
            continue
        block = int(f["block"])
        area = str(f["area"])
        if str(f.get("code", "")).startswith("server.") and block in caused:
            continue
        if _AREA_RANK.get(area, 0) >= _AREA_RANK.get(flagged.get(block, ""), -1) or block not in caused:
            flagged[block] = area
        if not str(f.get("code", "")).startswith("server."):
            caused.add(block)
        if area == "checksum":
            checksum.add(block)
    size = max(nblocks, max(damaged, default=-1) + 1, max(missing, default=-1) + 1)
    return BlockMap(name, size, sorted(set(damaged)), flagged, sorted(set(missing)), sorted(checksum))


def _timed(result: Result, step: str, fn: Callable[[], Any]) -> Any:
    started = time.monotonic()
    try:
        return fn()
    finally:
        result.timings[step] = round(time.monotonic() - started, 2)


def run_scenario(cluster: LabCluster, scenario: Scenario, seed: int, say: Progress) -> Result:
    table = f"lab_{scenario.name.replace('-', '_')}"
    result = Result(scenario, cluster.name, cluster.checksums, table, 0)
    label = f"{cluster.name} {scenario.name}"
    try:
        say(f"{label}: preparing {table}")
        truth, by_block = _timed(result, "prepare", lambda: _prepare(cluster, table, scenario.index))
        result.rows = len(truth)
        name, path, nblocks = _relation_for_map(cluster, table, scenario.shows, bool(scenario.index))
        say(f"{label}: corrupting ({scenario.describe()})")
        manifest = _timed(result, "corrupt", lambda: steps.corrupt(cluster, table, scenario, seed))
        obs.wait_ready(cluster)
        say(f"{label}: observing the server")
        result.observation = _timed(result, "observe", lambda: obs.observe(cluster, table, truth))
        say(f"{label}: scan")
        scan_findings = _timed(result, "scan", lambda: steps.scan(cluster, table))
        result.scan = steps.summarize(scan_findings, table)
        say(f"{label}: diagnose")
        diag_findings = _timed(result, "diagnose", lambda: steps.diagnose(cluster, table))
        result.diagnose = steps.summarize(diag_findings, table)
        result.block_map = _block_map(name, path, nblocks, manifest, scan_findings + diag_findings)
        if scenario.shows == "table":
            result.rows_on_damaged_blocks = sum(len(by_block.get(b, [])) for b in result.block_map.damaged)
        say(f"{label}: salvage")
        result.salvage = _timed(result, "salvage", lambda: steps.salvage(cluster, table, truth))
        say(f"{label}: repair")
        result.repair = _timed(result, "repair", lambda: steps.repair(cluster, table, truth))
    except Exception as exc:  # one scenario's failure is reported, the others still run
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        obs.wait_ready(cluster)
    return result


def _make_cluster(base: Path, name: str, pg_bin: str | None, checksums: bool) -> LabCluster:
    install = find_install(pg_bin)
    cluster = LabCluster.create(
        name,
        base_dir=base,
        pg_bin=install,
        checksums=checksums,
        extra_conf={"autovacuum": False, "max_prepared_transactions": 2},
    )
    cluster.start()
    cluster.install_extensions()
    return cluster


def run_lab(
    scenarios: list[Scenario],
    *,
    seed: int,
    pg_bin: str | None,
    out_dir: Path,
    keep: bool,
    lab_dir: Path | None,
    say: Progress,
) -> LabRun:
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="pgsurgeon-lab-", dir=str(lab_dir) if lab_dir else "/tmp"))
    base.chmod(0o755)
    clusters: list[LabCluster] = []
    results: list[Result] = []
    lock = threading.Lock()
    try:
        for checksums in (True, False):
            name = "checksums" if checksums else "nochecksums"
            say(f"{name}: creating a cluster")
            clusters.append(_make_cluster(base, name, pg_bin, checksums))
        for cluster in clusters:
            with cluster.connect() as conn:
                conn.execute(TEMPLATE_SQL, {"seed": seed, "rows": SEED_ROWS})

        stop = threading.Event()

        def work(cluster: LabCluster) -> None:
            for scenario in scenarios:
                if stop.is_set():
                    return
                r = run_scenario(cluster, scenario, seed, say)
                with lock:
                    results.append(r)

        # The two clusters are independent: run them side by side.
        threads = [threading.Thread(target=work, args=(c,), name=f"lab-{c.name}") for c in clusters]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            # Let each thread finish its scenario before the finally below stops and removes its server.
            say("interrupted: finishing the current scenarios, then removing the lab clusters")
            stop.set()
            for t in threads:
                t.join()
            raise
        info = [
            {"name": c.name, "version": c.install.short_version, "checksums": c.checksums, "pgdata": str(c.pgdata)}
            for c in clusters
        ]
    finally:
        if not keep:
            # Every cluster under base, not only those in the list: an interrupt can land between a server's start
            # and its cluster's return to the list.
            for c in list_labs(base):
                c.destroy()
            shutil.rmtree(base, ignore_errors=True)
    order = {s.name: i for i, s in enumerate(scenarios)}
    results.sort(key=lambda r: (order[r.scenario.name], not r.checksums))
    return LabRun(seed, scenarios, results, info, round(time.monotonic() - started, 1), out_dir)
