"""Writing a rebuilt bookkeeping file into a stopped cluster through the journal: the undo manifest first (with the
replaced file's bytes, when one is replaced), then the file, owned like its directory. ``pgsurgeon undo MANIFEST``
removes the new file and puts back the old one."""

from __future__ import annotations

from pathlib import Path

from pgsurgeon.datadir import postmaster_pid
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.journal import apply as applying
from pgsurgeon.journal.manifest import KIND_CREATE, FileChange, Manifest
from pgsurgeon.lab.marker import utc_now


def write_rebuilt(
    pgdata: Path, relpath: str, data: bytes, *, mode: str, note: str, manifest: Path | None, replace: bool
) -> Path:
    """Write ``data`` as ``relpath`` (replacing the file there only with ``replace``); the manifest's path."""
    pid = postmaster_pid(pgdata)
    if pid is not None:
        raise PgSurgeonError(
            f"the server is running on {pgdata} (postmaster pid {pid}): {relpath} is written only while it is down",
            hint="stop it (pg_ctl stop -D …) and run again",
        )
    stamp = utc_now().replace(":", "").replace("-", "").replace("+0000", "Z")
    name = relpath.replace("/", "-")
    path = (manifest or Path.cwd() / f"pgsurgeon-{mode}-{name}-{stamp}.json").absolute()
    if path.exists():
        raise UsageError(f"manifest {path} already exists", hint="pass another --manifest")
    changes = []
    old = pgdata / relpath
    if old.exists():
        if not replace:
            raise PgSurgeonError(f"{relpath} exists", hint="--replace keeps its bytes in the manifest and replaces it")
        changes.append(FileChange.removal(relpath, old, "the damaged file, kept for undo"))
    changes.append(FileChange(KIND_CREATE, relpath, 0, new=data, length=len(data), note=note))
    header = {
        "created_at": utc_now(),
        "pgdata": str(pgdata.absolute()),
        "lab": None,
        "mode": mode,
        "field": None,
        "relation": {"name": relpath, "role": "bookkeeping", "kind": None, "file": relpath, "nblocks": None},
        "notes": [note],
    }
    applying.apply(Manifest(path, header, changes, []), lambda _text: None)
    return path
