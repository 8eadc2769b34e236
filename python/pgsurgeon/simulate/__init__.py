"""The corruption simulator: seeded, recorded, undoable damage to the files of lab clusters.

``run(SimulateRequest(...))`` is the entry point for every caller (the corrupt command, the lab, tests). Under it
``modes`` lists what can be damaged, ``target`` finds the files, ``plan`` computes the bytes (through the
Rust injectors) and ``runner`` runs a request. Writing the bytes, recording them in a manifest, undoing them and
keeping the server out of the way belong to :mod:`pgsurgeon.journal`, which repair writes through too.

The names below are imported when first used (PEP 562): every command of the CLI lists the modes for its help, and
importing the whole simulator for that cost each of them 70 ms.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgsurgeon.journal.manifest import Manifest
    from pgsurgeon.simulate.modes import MODES, TARGETS, Mode
    from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan
    from pgsurgeon.simulate.runner import SimulateRequest, SimulateResult, run

_WHERE = {
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
    if name == "Manifest":
        module = "pgsurgeon.journal.manifest"
    elif name in _WHERE:
        module = f"{__name__}.{_WHERE[name]}"
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
