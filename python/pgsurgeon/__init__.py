"""pgsurgeon: PostgreSQL corruption lab and rescue kit."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pgsurgeon")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
