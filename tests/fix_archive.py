"""A WAL archive for lab clusters: a directory the server user owns and the settings that make a cluster copy every
finished segment into it (``archive_mode = on``, ``archive_command = cp``), as ``repair --from-backup``'s tests and
bench/backup_restore.py use them."""

from __future__ import annotations

import os
from pathlib import Path

from pgsurgeon.pgbin import server_user


def wal_archive(archive: Path) -> dict[str, str | int | bool]:
    """Make ``archive`` (the server user's) and return the settings of a cluster that archives into it."""
    archive.mkdir()
    user = server_user()
    os.chown(archive, user.uid, user.gid)
    command = f"cp %p {archive}/%f"
    return {"wal_level": "replica", "max_wal_senders": 4, "archive_mode": "on", "archive_command": command}
