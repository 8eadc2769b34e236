"""The corruption simulator: seeded, recorded, undoable damage to the files of lab clusters.

``modes`` lists what can be damaged, ``target`` finds the files, ``plan`` computes the bytes (through the
Rust injectors), ``apply`` writes them after recording them in a ``manifest`` and undoes them, and ``server``
keeps the server out of the way meanwhile.
"""

from __future__ import annotations

from pgsurgeon.simulate.manifest import Manifest
from pgsurgeon.simulate.modes import MODES, TARGETS, Mode
from pgsurgeon.simulate.plan import CorruptRequest, Plan, make_plan

__all__ = ["MODES", "TARGETS", "CorruptRequest", "Manifest", "Mode", "Plan", "make_plan"]
