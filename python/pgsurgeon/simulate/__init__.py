"""The corruption simulator: seeded, recorded, undoable damage to the files of lab clusters.

``run(SimulateRequest(...))`` is the entry point for every caller (the corrupt command, the lab, tests). Under it
``modes`` lists what can be damaged, ``target`` finds the files, ``plan`` computes the bytes (through the
Rust injectors), ``apply`` writes them after recording them in a ``manifest`` and undoes them, ``runner`` runs a
request, and ``server`` keeps the server out of the way meanwhile.

The names below are imported when first used (PEP 562): every command of the CLI lists the modes for its help, and
importing the whole simulator for that cost each of them 70 ms.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgsurgeon.simulate.manifest import Manifest
    from pgsurgeon.simulate.modes import MODES, TARGETS, Mode
    from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan
    from pgsurgeon.simulate.runner import SimulateRequest, SimulateResult, run

_WHERE = {
    "Manifest": "manifest",
    "MODES": "modes",
    "TARGETS": "modes",
    "Mode": "modes",
    "CorruptRequest": "plan",
    "Plan": "plan",
    "make_plan": "plan",
    "SimulateRequest": "runner",
    "SimulateResult": "runner",
    "run": "runner",
}

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


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
