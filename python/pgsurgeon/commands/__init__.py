"""One module per CLI command; each exposes ``register(subparsers)`` which sets ``func`` on its parser."""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES: dict[str, str] = {
    "scan": "scan",
    "health": "health",
    "inspect": "inspect",
    "control": "control",
    "xact": "xact",
    "multixact": "multixact",
    "verify": "verify",
    "files": "files",
    "lab": "lab",
    "corrupt": "corrupt",
    "undo": "undo",
    "diagnose": "diagnose",
    "explain": "explain",
    "salvage": "salvage",
    "dump-tables": "dump_tables",
    "repair": "repair",
    "unload": "unload",
}
"""Each command's name and its module, in the order ``pgsurgeon --help`` lists them."""


def modules(command: str | None = None) -> list[ModuleType]:
    """The modules to register: only ``command``'s when it names one (a run imports one command, not thirteen:
    ~15 ms of every start), all of them otherwise (the top-level help, a mistyped command)."""
    names = [NAMES[command]] if command in NAMES else list(NAMES.values())
    return [importlib.import_module(f"pgsurgeon.commands.{name}") for name in names]
