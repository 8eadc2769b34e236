"""The lab marker: ``pgsurgeon_lab.json`` inside PGDATA says "this cluster was made to be broken".

The corruption simulator refuses any data directory without it.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pgsurgeon import __version__
from pgsurgeon.errors import LabError

MARKER_NAME = "pgsurgeon_lab.json"
_REQUIRED_KEYS = ("name", "created_at", "id", "pgsurgeon_version")


def utc_now() -> str:
    """Current UTC time as ISO 8601 with seconds, e.g. ``2025-01-31T12:00:00+00:00``."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def new_marker(name: str, created_at: str | None = None, marker_id: str | None = None) -> dict[str, Any]:
    return {
        "kind": "pgsurgeon-lab",
        "name": name,
        "created_at": created_at or utc_now(),
        "id": marker_id or uuid.uuid4().hex,
        "pgsurgeon_version": __version__,
    }


def write_lab_marker(pgdata: Path, marker: dict[str, Any], *, uid: int | None = None, gid: int | None = None) -> Path:
    """Write the marker into ``pgdata`` (mode 0600, owned by ``uid:gid`` when given)."""
    path = Path(pgdata) / MARKER_NAME
    tmp = path.with_name(f".{MARKER_NAME}.tmp")
    tmp.write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.chmod(0o600)
    if uid is not None and gid is not None:
        os.chown(tmp, uid, gid)
    tmp.replace(path)
    return path


def _load(pgdata: Path) -> dict[str, Any] | None:
    pgdata = Path(pgdata)
    try:
        if not (pgdata / "PG_VERSION").is_file():
            return None
        data = json.loads((pgdata / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in _REQUIRED_KEYS):
        return None
    return data


def is_lab_cluster(pgdata: Path) -> bool:
    """True when ``pgdata`` is a PostgreSQL data directory carrying a valid pgsurgeon lab marker."""
    return _load(pgdata) is not None


def read_lab_marker(pgdata: Path) -> dict[str, Any]:
    """The marker of lab cluster ``pgdata``; :class:`LabError` when it is not a lab cluster."""
    data = _load(pgdata)
    if data is None:
        raise LabError(
            f"{pgdata} is not a pgsurgeon lab cluster (no valid {MARKER_NAME})",
            hint="pgsurgeon only damages clusters it created; make one with 'pgsurgeon lab up'",
        )
    return data
