"""One module per CLI command; each exposes ``register(subparsers)`` which sets ``func`` on its parser."""

from __future__ import annotations

from types import ModuleType

from pgsurgeon.commands import control, files, inspect, lab, scan

COMMANDS: tuple[ModuleType, ...] = (scan, inspect, control, files, lab)
