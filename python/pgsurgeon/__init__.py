"""pgsurgeon: PostgreSQL corruption lab and rescue kit."""

from __future__ import annotations

from pgsurgeon._pgsurgeon import __version__

__all__ = ["__version__"]
