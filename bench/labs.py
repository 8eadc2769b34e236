"""The lab cluster the benchmarks build once and reuse: PostgreSQL 18 from the embedded wheel, data checksums on,
settings for bulk loading (minimal WAL, no autovacuum)."""

from __future__ import annotations

from pathlib import Path

from pgsurgeon.lab import LabCluster


def bench_cluster(name: str, lab_dir: Path) -> LabCluster:
    """The started cluster ``name`` under ``lab_dir``, created the first time."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    lab_dir.chmod(0o755)
    try:
        cluster = LabCluster.load(name, base_dir=lab_dir)
    except Exception:
        cluster = LabCluster.create(
            name,
            base_dir=lab_dir,
            checksums=True,
            extra_conf={
                "max_wal_size": "16GB",
                "checkpoint_timeout": "30min",
                "wal_level": "minimal",
                "max_wal_senders": 0,
                "autovacuum": False,
                "shared_buffers": "256MB",
            },
        )
    if not cluster.is_running():
        cluster.start()
    return cluster
