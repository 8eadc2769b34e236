"""One module per CLI command; each exposes ``register(subparsers)`` which sets ``func`` on its parser."""

from __future__ import annotations

from types import ModuleType

from pgsurgeon.commands import (
    control,
    corrupt,
    diagnose,
    dump_tables,
    explain,
    files,
    inspect,
    lab,
    repair,
    salvage,
    scan,
    undo,
    unload,
)

COMMANDS: tuple[ModuleType, ...] = (
    scan,
    inspect,
    control,
    files,
    lab,
    corrupt,
    undo,
    diagnose,
    explain,
    salvage,
    dump_tables,
    repair,
    unload,
)
