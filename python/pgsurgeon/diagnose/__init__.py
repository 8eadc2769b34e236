"""``pgsurgeon diagnose``: every damaged block and tuple of a live database, found through SQL without crashing it.

``run_diagnose(DiagnoseRequest(dsn=…, tables=[…]))`` returns a :class:`DiagnoseOutcome` whose findings use the
scan's model plus ``observed_error`` (what the server said), ``source`` and ``attnum``.
"""

from __future__ import annotations

from pgsurgeon.diagnose.engine import DiagnoseOutcome, DiagnoseRequest, run_diagnose
from pgsurgeon.session import Limits

__all__ = ["DiagnoseOutcome", "DiagnoseRequest", "Limits", "run_diagnose"]
