"""The lab's steps, each a thin call into the command it shows: corrupt, scan, diagnose, salvage, repair."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pgsurgeon.lab import LabCluster
from pgsurgeon.labrun.scenarios import Scenario


def corrupt(cluster: LabCluster, table: str, scenario: Scenario, seed: int) -> Any:
    """Damage ``table`` as the scenario says; returns the simulator's manifest."""
    from pgsurgeon.commands.corrupt import corrupt as apply_corruption

    manifest_path = cluster.lab_dir / "corruptions" / f"lab-{table}.json"
    if manifest_path.exists():
        manifest_path.unlink()
    mode, *rest = scenario.corrupt
    argv = [
        mode,
        "--dsn",
        cluster.dsn(),
        "--table",
        f"public.{table}",
        "--seed",
        str(seed),
        "--manifest",
        str(manifest_path),
        *rest,
    ]
    return apply_corruption(argv)


def _toast_name(cluster: LabCluster, table: str) -> str | None:
    with cluster.connect() as conn:
        row = conn.execute(
            "SELECT c.relname FROM pg_class t JOIN pg_class c ON c.oid = t.reltoastrelid WHERE t.oid = %s::regclass",
            [f"public.{table}"],
        ).fetchone()
    return str(row[0]) if row else None


def scan(cluster: LabCluster, table: str) -> list[dict[str, Any]]:
    """The offline scan of the table, its TOAST table and its indexes (live: the lab server keeps running)."""
    from pgsurgeon.scan import ScanRequest, run_scan

    names = [table, f"{table}_pkey", f"{table}_a"]
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
    return {"available": False}


def repair(cluster: LabCluster, table: str, truth: dict[int, str]) -> dict[str, Any]:
    return {"available": False}
