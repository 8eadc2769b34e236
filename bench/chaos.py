"""Chaos at size (issue 13): for each seed, a database of three tables (indexes, TOAST, HOT chains, deletes) with
--rows rows in all is built on lab clusters of PostgreSQL 15 (checksums off) and 18 (checksums on), damaged several
ways at once (pgsurgeon.simulate.chaos), repaired table by table with ``repair --execute --reinsert``, and checked
against the ground truth recorded before the damage (pgsurgeon.labrun.chaos):

    saved + kept apart + lost = ground truth rows; no duplicate, no new key, no wrong value;
    every table holds what its ledger planned; pg_amcheck --heapallindexed is clean; pg_dump succeeds.

    python bench/chaos.py --seeds 50 --rows 1000000            # the acceptance run (hours on a small machine)
    python bench/chaos.py --seeds 5 --rows 50000 --versions 15,18 --out chaos.json

Each seed rebuilds the tables in the same clusters (made once under --lab-dir and kept). Exit status 1 when any seed
violates an invariant; every seed's figures go to --out as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from pgsurgeon.lab import LabCluster
from pgsurgeon.labrun.chaos import run_seed

EXTENSIONS = ("amcheck", "pageinspect", "pg_surgery")
PG15_BIN = "/usr/lib/postgresql/15/bin"


def cluster(version: str, lab_dir: Path) -> LabCluster:
    name = f"chaos{version}"
    lab_dir.mkdir(parents=True, exist_ok=True)
    lab_dir.chmod(0o755)
    try:
        lab = LabCluster.load(name, base_dir=lab_dir)
    except Exception:
        lab = LabCluster.create(
            name,
            base_dir=lab_dir,
            pg_bin=PG15_BIN if version == "15" else None,
            checksums=version != "15",
            extra_conf={
                "max_wal_size": "8GB",
                "wal_level": "minimal",
                "max_wal_senders": 0,
                "autovacuum": False,
                "shared_buffers": "256MB",
            },
        )
    lab.start()
    with lab.connect() as conn:
        for ext in EXTENSIONS:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
    return lab


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=50, help="how many seeds (1..N, or from --first)")
    ap.add_argument("--first", type=int, default=1, help="first seed")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows in all three tables together")
    ap.add_argument("--versions", default="15,18", help="postgresql versions (15 and/or 18)")
    ap.add_argument("--lab-dir", type=Path, default=Path("/tmp/pgsurgeon-bench-chaos"))
    ap.add_argument("--out", type=Path, default=Path("chaos-results.jsonl"))
    ap.add_argument("--salvage", action="store_true", help="let repair salvage each table first (slower)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    def say(text: str) -> None:
        if not args.quiet:
            print(f"  {text}", file=sys.stderr, flush=True)

    seeds = list(range(args.first, args.first + args.seeds))
    violations = 0
    totals: dict[str, dict[str, Any]] = {}
    with args.out.open("a", encoding="utf-8") as out:
        for version in [v.strip() for v in args.versions.split(",") if v.strip()]:
            lab = cluster(version, args.lab_dir)
            agg: dict[str, Any] = {"seeds": 0, "violations": 0, "damages": 0, "seconds": 0.0}
            for seed in seeds:
                started = time.monotonic()
                work = args.lab_dir / f"work-{version}-{seed}"
                shutil.rmtree(work, ignore_errors=True)  # manifests and repair run directories of an earlier run
                try:
                    res = run_seed(lab, seed, args.rows, work, say, salvage=args.salvage)
                except Exception as exc:  # a seed that cannot run is a violation of its own; the others go on
                    print(f"pg{version} seed {seed}: FAILED: {type(exc).__name__}: {exc}", flush=True)
                    out.write(json.dumps({"seed": seed, "version": version, "error": str(exc)}) + "\n")
                    violations += 1
                    agg["violations"] += 1
                    continue
                doc = res.to_json()
                out.write(json.dumps(doc) + "\n")
                out.flush()
                bad = res.violations()
                violations += bool(bad)
                agg["seeds"] += 1
                agg["violations"] += len(bad)
                agg["damages"] += len(res.damages)
                agg["seconds"] += time.monotonic() - started
                for k, v in res.totals().items():
                    agg[k] = agg.get(k, 0) + v
                t = res.totals()
                print(
                    f"pg{version} seed {seed}: {len(res.damages)} damages; truth {t['truth']}, saved {t['saved']} "
                    f"(reinserted {t['reinserted']}, frozen {t['frozen']}), kept apart {t['apart']}, lost {t['lost']}; "
                    f"wrong {t['wrong']}, duplicates {t['duplicates']}, extra {t['extra']}; amcheck "
                    f"{'clean' if res.amcheck_ok else 'NOT clean'}, pg_dump {'ok' if res.dump_ok else 'FAILED'}; "
                    f"{res.seconds['total']:.0f}s" + (f"; VIOLATIONS: {bad}" if bad else ""),
                    flush=True,
                )
            totals[version] = agg
    for version, agg in totals.items():
        print(
            f"pg{version}: {agg['seeds']} seeds, {agg['damages']} damages, {agg['violations']} invariant violations; "
            f"truth {agg.get('truth', 0)} rows: saved {agg.get('saved', 0)}, kept apart {agg.get('apart', 0)}, "
            f"lost {agg.get('lost', 0)}; phantom ledger entries {agg.get('phantom', 0)}; {agg['seconds']:.0f}s"
        )
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
