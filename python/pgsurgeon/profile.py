"""Per-thread busy time of one command (issue 35), written as JSON to the path in ``PGSURGEON_PROFILE``.

The core records spans of work on each of its threads (units read and checked or carved, batches written, oracle
rounds, the scan's serial steps) and the windows of its calls (``call.scan``, ``call.carve``); this module adds the
command's own window (``call.command``) and sums them: busy time per thread and per role, the single-threaded
phases (the Python layer outside the core's calls, and the core's steps that run while no worker does), and the
serial share that says how far more cores would take the command (Amdahl's law).
"""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core

if TYPE_CHECKING:
    from pgsurgeon.boundary import ProfileSpan as Span

ENV = "PGSURGEON_PROFILE"

#: Roles run by the thread that called the core while every worker waits: serial, whatever the number of cores.
#: ``call.evidence`` is a whole call of one thread (salvage's btree leaf entries into the blocks it carved).
SERIAL_ROLES = ("oracle", "engine.account", "scan.prepare", "scan.heapmap", "scan.assemble", "call.evidence")


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def now_ns() -> int:
    return core.profile_now()


def amdahl(serial_share: float, cores: int) -> float:
    """The speed-up on ``cores`` of a run whose serial part is ``serial_share`` of its parallel work."""
    f = serial_share / (1 + serial_share)
    return 1 / (f + (1 - f) / cores)


def summarize(spans: list[Span]) -> dict[str, Any]:
    """Busy CPU seconds per thread and role, the single-threaded phases and the serial share of ``spans``.

    Busy time is each thread's own CPU clock, so a machine shared with other work does not count as busy the
    moments another process had the core; the ``call.*`` windows are wall time."""
    s = 1e-9
    busy: dict[int, float] = defaultdict(float)
    roles: dict[str, float] = defaultdict(float)
    windows: dict[str, float] = defaultdict(float)
    thread_roles: dict[int, set[str]] = defaultdict(set)
    for sp in spans:
        roles[sp["role"]] += sp["cpu_ns"] * s
        if sp["role"].startswith("call."):
            windows[sp["role"]] += (sp["end_ns"] - sp["start_ns"]) * s
        else:
            busy[sp["thread"]] += sp["cpu_ns"] * s
            thread_roles[sp["thread"]].add(sp["role"])
    # the Python layer: the command's thread outside the core's calls (catalog, connections, between tables)
    calls = sum(d for r, d in roles.items() if r.startswith("call.") and r != "call.command")
    python = max(0.0, roles.get("call.command", 0.0) - calls)
    workers = sum(d for r, d in roles.items() if r.startswith("worker."))
    serial_steps = sum(roles.get(r, 0.0) for r in SERIAL_ROLES)
    # a thread beside the workers (the writer) holds them back once it is busier than they are, core for core
    pipeline = max((d for t, d in busy.items() if thread_roles[t] == {"writer"}), default=0.0)
    serial = python + serial_steps + pipeline
    share = serial / workers if workers else None
    first = min((sp["start_ns"] for sp in spans if sp["role"].startswith("worker.")), default=0)
    last = max((sp["end_ns"] for sp in spans if sp["role"].startswith("worker.")), default=0)
    parallel_wall = (last - first) * s
    parallel_cpu = sum(
        sp["cpu_ns"] * s
        for sp in spans
        if not sp["role"].startswith("call.") and sp["start_ns"] >= first and sp["end_ns"] <= last
    )
    return {
        "command_wall_s": windows.get("call.command", 0.0),
        "engine_wall_s": windows.get("call.scan", 0.0) + windows.get("call.carve", 0.0),
        "evidence_wall_s": windows.get("call.evidence", 0.0),
        "busy_by_thread": {str(t): busy[t] for t in sorted(busy)},
        "roles_by_thread": {str(t): sorted(thread_roles[t]) for t in sorted(thread_roles)},
        "cpu_by_role": dict(sorted(roles.items())),
        "workers_s": workers,
        "python_s": python,
        "serial_steps_s": serial_steps,
        "pipeline_s": pipeline,
        "serial_s": serial,
        "serial_share": share,
        "parallel_wall_s": parallel_wall,
        "parallel_cpu_per_wall": parallel_cpu / parallel_wall if parallel_wall else None,
        "predicted_speedup": {str(n): amdahl(share, n) for n in (16, 64)} if share is not None else {},
    }


def write(path: Path, spans: list[Span]) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    doc = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_mb": usage.ru_maxrss / 1024,
        "summary": summarize(spans),
        "spans": spans,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


class Command:
    """The command's window: opened before it runs, closed and written after (when ``PGSURGEON_PROFILE`` is set)."""

    def __init__(self) -> None:
        self.path = Path(os.environ[ENV]) if enabled() else None
        self.start = now_ns() if self.path else 0
        self.cpu = core.profile_thread_cpu() if self.path else 0

    def close(self) -> None:
        if self.path is None:
            return
        core.profile_record("call.command", self.start, now_ns(), core.profile_thread_cpu() - self.cpu)
        write(self.path, core.profile_take())
