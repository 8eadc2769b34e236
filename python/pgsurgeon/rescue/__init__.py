"""``rescue``: plans for a cluster that does not start, without running anything: the pg_resetwal values derived
from the files and checked against pg_control, and the alternatives in order of what they risk."""

from pgsurgeon.rescue.alternatives import Alternative, Step
from pgsurgeon.rescue.plan import PlanRequest, ResetPlan, Setting, plan_resetwal

__all__ = ["Alternative", "PlanRequest", "ResetPlan", "Setting", "Step", "plan_resetwal"]
