"""Test configuration: the lab-cluster fixtures live in the ``fix_pg`` plugin (tests/fix_pg.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:
    import pgsurgeon  # noqa: F401
except ImportError:  # running from a source tree without installing: use python/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

# explain's coverage reads PostgreSQL's message catalogues from the checkout, wherever the package is installed
os.environ.setdefault("PGSURGEON_PGMESSAGES", str(Path(__file__).resolve().parent / "data" / "pgmessages"))

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:  # so "fix_pg" imports in every import mode
    sys.path.insert(0, _TESTS)

pytest_plugins = ["fix_capture", "fix_pg", "fix_data"]
