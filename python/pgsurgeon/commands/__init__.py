"""One module per CLI command; each exposes ``register(subparsers)`` which sets ``func`` on its parser."""

from __future__ import annotations

from types import ModuleType

from pgsurgeon.commands import control, corrupt, diagnose, explain, files, inspect, lab, scan, undo

COMMANDS: tuple[ModuleType, ...] = (scan, inspect, control, files, lab, corrupt, undo, diagnose, explain)
