"""The corruption simulator: seeded, recorded, undoable damage to the files of lab clusters.

``run(SimulateRequest(...))`` is the entry point for every caller (the corrupt command, the lab, tests). Under it
``modes`` lists what can be damaged, ``target`` finds the files, ``plan`` computes the bytes (through the
Rust injectors), ``apply`` writes them after recording them in a ``manifest`` and undoes them, and ``server``
keeps the server out of the way meanwhile.
"""

from __future__ import annotations

from pgsurgeon.simulate.manifest import Manifest
from pgsurgeon.simulate.modes import MODES, TARGETS, Mode
from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan
from pgsurgeon.simulate.run import SimulateRequest, SimulateResult, run

__all__ = [
    "MODES",
    "TARGETS",
    "CorruptRequest",
    "Manifest",
    "Mode",
    "Plan",
    "SimulateRequest",
    "SimulateResult",
    "make_plan",
    "run",
]
