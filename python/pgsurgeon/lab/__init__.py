"""Lab clusters: throwaway PostgreSQL clusters, marked as safe to damage."""

from __future__ import annotations

from pgsurgeon.lab.cluster import (
    CONF_NAME,
    META_NAME,
    SUPERUSER,
    LabCluster,
    ToolError,
    default_base_dir,
    list_labs,
    pick_free_port,
    port_is_free,
    run_sql,
)
from pgsurgeon.lab.marker import MARKER_NAME, is_lab_cluster, read_lab_marker, write_lab_marker

__all__ = [
    "CONF_NAME",
    "MARKER_NAME",
    "META_NAME",
    "SUPERUSER",
    "LabCluster",
    "ToolError",
    "default_base_dir",
    "is_lab_cluster",
    "list_labs",
    "pick_free_port",
    "port_is_free",
    "read_lab_marker",
    "run_sql",
    "write_lab_marker",
]
