"""``pgsurgeon repair``: a planned, dry-run-first repair of a damaged table, backed up first and verified after.

``build_plan(RepairRequest(dsn=…, table=…))`` diagnoses the table and returns the plan (every statement, every page
write, every ctid lost) and the context to execute it with; ``execute(plan, ctx, run_dir)`` runs it.
"""

from __future__ import annotations

from pgsurgeon.repair.execute import execute
from pgsurgeon.repair.model import Loss, Plan, Step
from pgsurgeon.repair.planner import Context, RepairRequest, build_plan

__all__ = ["Context", "Loss", "Plan", "RepairRequest", "Step", "build_plan", "execute"]
