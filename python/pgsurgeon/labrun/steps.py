"""The lab's steps, each a thin call into the command it shows: corrupt, scan, diagnose, salvage, repair."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pgsurgeon import simulate
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.findings import Finding
from pgsurgeon.lab import LabCluster
from pgsurgeon.labrun.scenarios import Scenario
from pgsurgeon.simulate import Manifest, SimulateRequest


def corrupt(cluster: LabCluster, table: str, scenario: Scenario, seed: int) -> Manifest:
    """Damage ``table`` as the scenario says; returns the simulator's manifest (for chaos, the damages' manifests
    merged: every page and file change)."""
    if scenario.mode == "chaos":
        return _chaos(cluster, table, seed)
    manifest_path = cluster.lab_dir / "corruptions" / f"lab-{table}.json"
    if manifest_path.exists():
        manifest_path.unlink()
    request = SimulateRequest(
        mode=scenario.mode,
        dsn=cluster.dsn(),
        table=f"public.{table}",
        seed=seed,
        manifest=manifest_path,
        **dict(scenario.options),
    )
    return simulate.run(request).manifest


def _chaos(cluster: LabCluster, table: str, seed: int) -> Manifest:
    import random

    from pgsurgeon.simulate import chaos

    rng = random.Random(seed)
    target = chaos.Table(f"public.{table}", 0, True, (f"{table}_pkey", f"{table}_a"), "description")
    with cluster.connect() as conn:
        damages = chaos.pick(conn, target, rng, rng.randint(4, 7))
    run = chaos.damage(cluster.dsn(), damages, seed, cluster.lab_dir / "corruptions" / f"lab-{table}")
    first = run.manifests[0]
    return Manifest(
        first.path,
        {**first.header, "notes": [d.describe() for d in damages]},
        [c for m in run.manifests for c in m.changes],
        [p for m in run.manifests for p in m.pages],
    )


def _toast_name(cluster: LabCluster, table: str) -> str | None:
    with cluster.connect() as conn:
        oid, _ = catalog.resolve_relation(conn, f"public.{table}")
        rels = catalog.relatives(conn, [oid])
    return next((r.name for r in rels if r.role == "toast"), None)


def scan(cluster: LabCluster, table: str) -> list[Finding]:
    """The offline scan of the table, its TOAST table and its indexes (live: the lab server keeps running)."""
    from pgsurgeon.scan import ScanRequest, run_scan

    names = [table, f"{table}_pkey", f"{table}_a"]
    with cluster.connect() as conn:
        oid, _ = catalog.resolve_relation(conn, f"public.{table}")
        names += [r.name for r in catalog.relatives(conn, [oid]) if r.role == "index" and r.name not in names]
    toast = _toast_name(cluster, table)
    if toast:
        names.append(toast)
    outcome = run_scan(ScanRequest(pgdata=cluster.pgdata, relations=names, live=True, dsn=cluster.dsn(), jobs=1))
    return outcome.findings


def diagnose(cluster: LabCluster, table: str) -> list[dict[str, Any]]:
    from pgsurgeon.diagnose import DiagnoseRequest, run_diagnose

    outcome = run_diagnose(DiagnoseRequest(dsn=cluster.dsn(), tables=[f"public.{table}"]))
    return outcome.findings


def summarize(findings: list[dict[str, Any]], table: str) -> dict[str, Any]:
    errors = [f for f in findings if f["severity"] == "error"]
    codes = Counter(f["code"] for f in findings)
    blocks = sorted(
        {(f.get("relation") or "", f["block"]) for f in findings if f.get("block") is not None},
        key=lambda x: (x[0], x[1]),
    )
    return {
        "findings": len(findings),
        "errors": len(errors),
        "codes": [c for c, _ in codes.most_common(3)],
        "blocks": [f"{rel.split('.')[-1]}:{b}" for rel, b in blocks[:6]],
        "found": bool(findings),
    }


def salvage(cluster: LabCluster, table: str, truth: dict[int, str]) -> dict[str, Any]:
    """`pgsurgeon salvage --into`, then the saved rows compared with the ground truth: saved correctly, saved with
    wrong values, saved twice, lost (and the carved rows kept apart as uncertain)."""
    from pgsurgeon import db
    from pgsurgeon.salvage.engine import SalvageOptions
    from pgsurgeon.salvage.engine import salvage as run_salvage

    into = f"{table}_saved"
    with cluster.connect() as conn:
        for suffix in ("", "_carved", "_salvage"):
            conn.execute(db.sql.SQL("DROP TABLE IF EXISTS {}").format(db.sql.Identifier(into + suffix)))
    report = run_salvage(SalvageOptions(dsn=cluster.dsn(), table=f"public.{table}", into=into, jobs=2))
    with cluster.connect() as conn:
        query = db.sql.SQL("SELECT id, md5(t::text) FROM {} t").format(db.sql.Identifier(into))
        rows = [(int(k), str(d)) for k, d in conn.execute(query)]
    seen: dict[int, str] = {}
    duplicates = 0
    for key, digest in rows:
        duplicates += key in seen
        seen[key] = digest
    correct = sum(1 for k, d in seen.items() if truth.get(k) == d)
    # rows kept apart (after their provenance columns) that hold a row's true values
    with cluster.connect() as conn:
        oid, _ = catalog.resolve_relation(conn, db.sql.Identifier(into).as_string(conn))
        cols = [c.name for c in catalog.columns(conn, oid) if not c.dropped]
        query = db.sql.SQL("SELECT id, md5(ROW({})::text) FROM {}").format(
            db.sql.SQL(", ").join(db.sql.Identifier(c) for c in cols), db.sql.Identifier(into + "_carved")
        )
        apart = {int(k): str(d) for k, d in conn.execute(query)}
    apart_correct = {k for k, d in apart.items() if k not in seen and truth.get(k) == d}
    return {
        "saved": correct,
        "wrong": sum(1 for k, d in seen.items() if k in truth and truth[k] != d),
        "duplicates": duplicates,
        "apart": len(apart_correct),
        "lost": sum(1 for k in truth if k not in seen and k not in apart_correct),
        "carved": int(report["rows"]["carved"]),
        "kept_apart": int(report["rows"]["carved_kept_apart"]),
        "via_sql": int(report["rows"]["sql"]),
    }


def repair(cluster: LabCluster, table: str, truth: dict[int, str]) -> dict[str, Any]:
    """`pgsurgeon repair --execute --yes --reinsert`, then the table read again against the ground truth: the rows
    missing must be the ones the plan said would be lost (minus those carving put back)."""
    from pgsurgeon.labrun.observe import read_rows
    from pgsurgeon.repair import RepairRequest, build_plan, execute

    run_dir = cluster.lab_dir / "repairs" / table
    plan, ctx = build_plan(RepairRequest(dsn=cluster.dsn(), table=f"public.{table}", reinsert=True, run_dir=run_dir))
    try:
        if plan.blockers:
            return {"error": plan.blockers[0][0]}
        planned = len(plan.ledger.lost) + len(plan.ledger.apart)
        report = execute(plan, ctx, run_dir, lambda _text: None) if plan.steps else None
    finally:
        ctx.conn.close()
    after = read_rows(cluster, table, truth)
    clean = bool(report["after"].get("clean")) if report and report.get("after") else not plan.steps
    matched = bool(report.get("ledger_check", {}).get("match")) if report else True
    ledger = (report or {}).get("ledger") or plan.ledger.to_json()
    return {
        "steps": len(plan.steps),
        "planned_lost": planned,
        "lost": after.missing,
        "wrong": after.wrong,
        "extra": after.extra,
        "readable": after.error is None and not after.crashed and not after.timed_out,
        "clean": clean and after.error is None and matched,
        "ledger_match": matched,
        "reinserted": len(ledger["reinserted"]),
        "kept_apart": len(ledger["kept_apart"]),
        "ledger_lost": len(ledger["lost"]),
    }
