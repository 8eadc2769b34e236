"""``rescue``: the cluster's own bookkeeping when the server does not start or cannot tell a transaction's fate.

:mod:`.plan` and :mod:`.alternatives`: the pg_resetwal values derived from the files and checked against pg_control,
and the ways out in order of what they risk, planned without running anything. :mod:`.xact`: a lost pg_xact segment
rebuilt from evidence (hint bits, surviving WAL), written only on request through an undo manifest.

Nothing is imported here: scan reads the WAL through :mod:`.walstatus` and should not load the planner with it
(~10 ms of each scan).
"""
