"""The corruption manifest: every byte ``corrupt`` changed, so ``undo`` can put it back.

A manifest is a JSON document written (and fsynced) *before* any data file is touched. Byte changes keep
their old and new bytes inline as hex; the bytes of a truncated tail or a removed segment go to side
files in ``<manifest>.data/`` with their sha256, also written before the data file is touched.
States: ``applying`` (written, data being changed), ``applied``, ``undone``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon import __version__
from pgsurgeon.errors import PgSurgeonError

FORMAT = "pgsurgeon-corruption-manifest"
VERSION = 1
KIND_BYTES = "bytes"
KIND_TRUNCATE = "truncate"
KIND_REMOVE = "remove"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """Write ``path`` through a temporary file, fsync it, rename it into place, fsync the directory."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


@dataclass
class FileChange:
    """One change to one file; ``offset`` is from the file start.

    ``bytes``: ``old`` -> ``new`` at ``offset`` (same length, kept inline). ``truncate``: the file was cut
    from ``old_size`` to ``offset`` bytes and the removed tail saved in a side file. ``remove``: the file
    was deleted and its content saved in a side file, with its ``mode``/``uid``/``gid``.
    """

    kind: str
    file: str
    """Path relative to the data directory."""
    offset: int
    old: bytes = b""
    new: bytes = b""
    length: int = 0
    """Bytes of old data (for side files: the side file's size)."""
    old_sha256: str = ""
    block: int | None = None
    item: int | None = None
    note: str = ""
    old_size: int | None = None
    mode: int | None = None
    uid: int | None = None
    gid: int | None = None
    saved: str | None = None
    """Side file holding the old data, relative to the manifest's directory."""

    @classmethod
    def replace_bytes(cls, file: str, offset: int, old: bytes, new: bytes, **kw: Any) -> FileChange:
        return cls(KIND_BYTES, file, offset, old=old, new=new, length=len(old), old_sha256=sha256(old), **kw)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "file": self.file, "offset": self.offset, "length": self.length}
        for key in ("block", "item", "old_size", "mode", "uid", "gid", "saved"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        doc["old_sha256"] = self.old_sha256
        if self.kind == KIND_BYTES:
            doc["old"] = self.old.hex()
            doc["new"] = self.new.hex()
        if self.note:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> FileChange:
        try:
            kind = str(doc["kind"])
            change = cls(
                kind=kind,
                file=str(doc["file"]),
                offset=int(doc["offset"]),
                old=bytes.fromhex(doc.get("old", "")),
                new=bytes.fromhex(doc.get("new", "")),
                length=int(doc.get("length", 0)),
                old_sha256=str(doc.get("old_sha256", "")),
                block=doc.get("block"),
                item=doc.get("item"),
                note=str(doc.get("note", "")),
                old_size=doc.get("old_size"),
                mode=doc.get("mode"),
                uid=doc.get("uid"),
                gid=doc.get("gid"),
                saved=doc.get("saved"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PgSurgeonError(f"a change in the manifest is malformed: {exc}") from None
        if kind == KIND_BYTES and (len(change.old) != len(change.new) or sha256(change.old) != change.old_sha256):
            raise PgSurgeonError(
                f"the change to {change.file} at offset {change.offset} is inconsistent (length or sha256)",
                hint="the manifest was edited; restore the cluster from a backup instead",
            )
        if kind in (KIND_TRUNCATE, KIND_REMOVE) and change.saved is None:
            raise PgSurgeonError(f"the {kind} of {change.file} has no saved data in the manifest")
        if kind not in (KIND_BYTES, KIND_TRUNCATE, KIND_REMOVE):
            raise PgSurgeonError(f"unknown change kind {kind!r} in the manifest")
        return change


@dataclass
class PageRecord:
    """A whole page touched by byte changes, with its hashes before and after. Its original image is saved
    in the side file ``pages.bin`` at ``saved_at``, so a forced undo can restore a page the server rewrote
    since (hint bits, pruning through damaged line pointers) as it was before corrupt."""

    file: str
    block: int
    offset: int
    length: int
    sha256_before: str
    sha256_after: str
    saved_at: int = 0
    original: bytes = field(default=b"", repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "original"}


@dataclass
class Manifest:
    path: Path
    header: dict[str, Any]
    changes: list[FileChange] = field(default_factory=list)
    pages: list[PageRecord] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".data")

    @property
    def pages_file(self) -> Path:
        """Side file with the original images of the damaged pages."""
        return self.data_dir / "pages.bin"

    @property
    def pgdata(self) -> Path:
        return Path(self.header["pgdata"])

    @property
    def state(self) -> str:
        return str(self.header.get("state", ""))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "pgsurgeon_version": __version__,
            **self.header,
            "pages": [p.to_json() for p in self.pages],
            "changes": [c.to_json() for c in self.changes],
        }

    def write(self, state: str, **extra: Any) -> None:
        self.header["state"] = state
        self.header.update(extra)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_durably(self.path, (json.dumps(self.to_json(), indent=2) + "\n").encode())

    @classmethod
    def load(cls, path: Path) -> Manifest:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PgSurgeonError(f"no such manifest: {path}") from None
        except (OSError, ValueError) as exc:
            raise PgSurgeonError(f"cannot read manifest {path}: {exc}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise PgSurgeonError(
                f"{path} is not a pgsurgeon corruption manifest", hint="pass the .json file 'corrupt' printed"
            )
        if doc.get("version") != VERSION:
            raise PgSurgeonError(f"manifest {path} has version {doc.get('version')}, this pgsurgeon reads {VERSION}")
        changes = [FileChange.from_json(c) for c in doc.pop("changes", [])]
        pages = [PageRecord(**p) for p in doc.pop("pages", [])]
        for key in ("format", "version", "pgsurgeon_version"):
            doc.pop(key, None)
        return cls(path=path, header=doc, changes=changes, pages=pages)


def default_path(pgdata: Path, lab_dir: Path | None, stamp: str, mode: str) -> Path:
    """``<lab>/corruptions/<stamp>-<mode>.json`` for a lab cluster, else ``./pgsurgeon-corrupt-…json``;
    a counter is added when the name is taken."""
    directory = lab_dir / "corruptions" if lab_dir is not None else Path.cwd()
    stem = f"{stamp}-{mode}" if lab_dir is not None else f"pgsurgeon-corrupt-{stamp}-{mode}"
    path = directory / f"{stem}.json"
    n = 1
    while path.exists() or path.with_name(path.name + ".data").exists():
        n += 1
        path = directory / f"{stem}-{n}.json"
    return path
