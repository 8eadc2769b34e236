"""Helpers that run the real CLI in a process of its own and read its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pgsurgeon.exitcodes import Exit
from pgsurgeon.lab.cluster import LabCluster


def salvage_json(lab: LabCluster, table: str, out: Path, *extra: str) -> dict[str, Any]:
    """``pgsurgeon salvage`` of ``table`` on ``lab``'s server into ``out``; its JSON report (exit 0 asserted)."""
    r = subprocess.run(
        [sys.executable, "-m", "pgsurgeon", "salvage", "-d", lab.dsn(), "-t", table, "--out", str(out), *extra,
         "--format", "json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == Exit.CLEAN, r.stderr + r.stdout
    report: dict[str, Any] = json.loads(r.stdout)
    return report
