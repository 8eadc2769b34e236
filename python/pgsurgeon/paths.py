"""Checks of the paths a command line names, made before anything is read, written or started, so a wrong path
costs nothing: no half-written output, no server stopped for nothing, no long run that fails at its last write.

A path that does not exist or is of the wrong type is a usage error; one the OS does not let us use is "could
not run" (a permission problem, not a wrong argument).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pgsurgeon.errors import PgSurgeonError, UsageError

_PERMISSION_HINT = "run as a user who may write there, or choose another place"


def _nearest_existing(path: Path) -> Path:
    for candidate in [path, *path.parents]:
        if candidate.exists():
            return candidate
    return Path("/")


def _creatable_below(path: Path, option: str) -> None:
    """``path`` does not exist yet: the directory it would be made in must be a writable directory."""
    anchor = _nearest_existing(path.parent if path.parent != path else path)
    if not anchor.is_dir():
        raise UsageError(f"{option} {path}: {anchor} is not a directory", hint="choose a path inside a directory")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise PgSurgeonError(f"{option} {path}: {anchor} is not writable", hint=_PERMISSION_HINT)


def output_dir(path: Path, option: str) -> None:
    """A directory to write into: an existing writable directory, or one that can be created."""
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{option} {path} exists and is not a directory", hint="choose a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise PgSurgeonError(f"{option} {path} is not writable", hint=_PERMISSION_HINT)
        return
    _creatable_below(path, option)


def output_file(path: Path, option: str, *, make_parents: bool = False) -> None:
    """A file to (over)write: not a directory, and writable or creatable (``make_parents``: its directory may be
    created too)."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory", hint="name a file")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise PgSurgeonError(f"{option} {path} is not writable", hint=_PERMISSION_HINT)
        return
    if make_parents:
        _creatable_below(path, option)
        return
    if not path.parent.is_dir():
        raise UsageError(f"{option} {path}: {path.parent} is not a directory", hint="create the directory first")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise PgSurgeonError(f"{option} {path}: {path.parent} is not writable", hint=_PERMISSION_HINT)


def existing_dir(path: Path, option: str) -> None:
    """A directory that must already exist (a data directory named on the command line)."""
    if not path.exists():
        raise UsageError(f"{option} {path} does not exist", hint="check the path")
    if not path.is_dir():
        raise UsageError(f"{option} {path} is not a directory", hint="pass the directory itself")


_SAFE = re.compile(r"[A-Za-z0-9_.-]")
NAME_MAX = 200
"""Longest file name ``safe_name`` makes (most file systems allow 255 bytes)."""


def safe_name(name: str) -> str:
    """A file name for a relation's name: letters, digits, ``_ . -`` kept, every other character %XX-encoded (so
    two tables never share a name); a name that would be longer than NAME_MAX is cut and ends with a digest."""
    out = "".join(ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode()) for ch in name)
    if len(out) <= NAME_MAX:
        return out
    import hashlib  # rarely needed: not on every command's start

    return out[: NAME_MAX - 9] + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
