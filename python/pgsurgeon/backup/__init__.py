"""Base backups read in place (crates/core/src/sources/backup): a ``pg_basebackup -Fp`` directory, or the directory
holding ``base.tar`` (plain, gzip, lz4 or zstd; tablespace and ``pg_wal`` tars beside it). Opening one mounts it:
while the :class:`BackupSource` is open, the scanner, the files catalog and the row engine read its files by path under
:attr:`BackupSource.root`, as they read a data directory. Nothing is extracted to disk."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.findings import SOURCE_SCAN, Finding

if TYPE_CHECKING:
    from pgsurgeon.boundary import BackupInfo, ManifestReport, SegFile


_DAMAGED_HINT = (
    "the backup is incomplete or damaged: 'pg_verifybackup' of it names what is wrong; restore from another backup"
)


def is_backup(path: Path) -> bool:
    """A base backup (backup_label, backup_manifest or base.tar*) rather than a plain data directory."""
    return core.is_backup(path)


def parse_lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


@contextmanager
def _told(path: Path) -> Iterator[None]:
    """The core's refusals (a damaged archive, a link loop; message and hint) as our one-line errors, naming the
    backup ``path`` when the core named only a member."""
    try:
        yield
    except (ValueError, OSError) as exc:
        message, _, hint = str(exc).strip().partition("\nhint: ")
        if str(path) not in message:  # "backup_manifest: …": say which backup
            message = f"{path}: {message}"
        raise PgSurgeonError(message, hint=hint or _DAMAGED_HINT) from None


class BackupSource:
    """An opened base backup. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: Path) -> None:
        with _told(path):
            self.handle = core.open_backup(path)
        self.root: Path = self.handle.root
        self.info: BackupInfo = self.handle.info()

    @property
    def start_lsn(self) -> int | None:
        """backup_label's START WAL LOCATION: pages newer than this are rewritten by WAL replay."""
        label = self.info["label"]
        return label["start_lsn"] if label is not None else None

    @property
    def form(self) -> str:
        """``plain``, or ``tar`` with its compressions (``tar+zstd``)."""
        if self.info["format"] == "plain":
            return "plain"
        comps = sorted({a["compression"] for a in self.info["archives"]} - {"none"})
        return "tar" + "".join(f"+{c}" for c in comps)

    @property
    def restarts(self) -> int:
        """Extra passes over compressed archives so far (files read out of archive order)."""
        return self.handle.restarts()

    def verify(self) -> ManifestReport:
        """Every file against backup_manifest (``present`` is false without one)."""
        with _told(self.root):
            return self.handle.verify()

    def read_order(self, relpath: str) -> int | None:
        """Where a file comes in a compressed archive's stream (read in this order), None when order is free."""
        return self.handle.read_order(relpath)

    def segments(self, relpath: str) -> list[SegFile]:
        """The segment files of a relation fork, as :func:`pgsurgeon.datadir.segments_of` gives them."""
        return [{"segno": s, "path": str(p)} for s, p in self.handle.segments(relpath)]

    def hold(self, relpath: str) -> None:
        """Keep a file at hand (in a temporary file) until :meth:`release`: a TOAST table read at random while its
        table streams."""
        with _told(self.root):
            self.handle.hold(relpath)

    def release(self, relpath: str) -> None:
        self.handle.release(relpath)

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> BackupSource:
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


MANIFEST_LINES = 20
"""Problems the manifest shows that are said one per line before an unload; beyond, a count per kind."""


def manifest_lines(report: ManifestReport) -> list[str]:
    """What the manifest check found, for a person about to use the backup: one line per problem (a count per kind
    beyond :data:`MANIFEST_LINES`); nothing without a manifest or without problems."""
    if not report["present"]:
        return ["the backup has no backup_manifest: its files are not checked against one"]
    problems = report["problems"]
    if len(problems) <= MANIFEST_LINES:
        return [f"backup_manifest: {p['code']}: {p['message']}" for p in problems]
    counts: dict[str, int] = {}
    for p in problems:
        counts[p["code"]] = counts.get(p["code"], 0) + 1
    kinds = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
    first = problems[0]
    return [
        f"backup_manifest: {len(problems)} problems ({kinds}); the first: {first['code']}: {first['message']} "
        "(scan BACKUP --format json lists them all)"
    ]


def manifest_findings(report: ManifestReport) -> list[Finding]:
    """The manifest's problems as findings (no relation, no block)."""
    out: list[Finding] = []
    for p in report.get("problems", []):
        area, severity, pg_error, remedy = core.describe_code(p["code"])
        out.append(
            {
                "code": p["code"],
                "area": area,
                "severity": severity,
                "path": p["path"],
                "relfilenode": None,
                "fork": None,
                "block": None,
                "item": None,
                "message": p["message"],
                "pg_error": pg_error,
                "remedy": remedy,
                "relation": None,
                "database": None,
                "observed_error": None,
                "source": SOURCE_SCAN,
                "attnum": None,
            }
        )
    return out
