"""The corruption manifest: every byte ``corrupt`` changed, so ``undo`` can put it back.

A manifest is a small JSON document written (and fsynced) *before* any data file is touched. It holds no page
bytes: a byte change names its file, offset and length inside a page record, and the record names the page's
original image in the side file ``<manifest>.data/pages.bin`` (offset ``saved_at``) with the sha256 of the page
before and after. The new bytes are not kept: undo needs only to know a page is still as written (its digest after)
and its original image. So a thousand restored pages cost one 8 MB binary file, not 32 MB of hex JSON written twice,
and the state change rewrites only the small manifest. The bytes of a truncated tail or a removed segment go to side
files in the same directory with their sha256, also written before the data file is touched. A file the simulator adds
(an orphan relation file) is a ``create`` change: its content is kept the same way, and undo removes the file while
it still holds exactly that content.
States: ``applying`` (written, data being changed), ``applied``, ``undone``.

Version 1 manifests also kept each byte change's old and new bytes inline as hex; their ``pages.bin`` holds the same
original images, so undo reads them the same way and ignores the hex.
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
VERSION = 2
READS = (1, 2)
"""Versions undo reads: 1 differs only by the inline hex of byte changes, which is not used."""
KIND_BYTES = "bytes"
KIND_TRUNCATE = "truncate"
KIND_REMOVE = "remove"
KIND_CREATE = "create"


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

    ``bytes``: ``old`` -> ``new`` at ``offset`` (same length) inside a page record; both are held in memory to write
    them, neither is kept in the manifest (the old bytes are in the page's saved image). ``truncate``: the file was cut
    from ``old_size`` to ``offset`` bytes and the removed tail saved in a side file. ``remove``: the file
    was deleted and its content saved in a side file, with its ``mode``/``uid``/``gid``. ``create``: the file did
    not exist; ``new`` is the content written (kept in a side file, ``old_sha256`` is its hash), undo removes it.
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
    """Of a side file's content (empty for byte changes: their page record's digests cover them)."""
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
        return cls(KIND_BYTES, file, offset, old=old, new=new, length=len(old), **kw)

    @classmethod
    def removal(cls, file: str, path: Path, note: str, block: int = 0) -> FileChange:
        """``path`` (``file`` relative to the data directory) removed: its size, mode and owner kept for undo."""
        st = path.stat()
        return cls(
            KIND_REMOVE,
            file,
            0,
            length=st.st_size,
            old_size=st.st_size,
            block=block,
            mode=st.st_mode & 0o7777,
            uid=st.st_uid,
            gid=st.st_gid,
            note=note,
        )

    def to_json(self, *, with_bytes: bool = False) -> dict[str, Any]:
        """The change as the manifest keeps it; ``with_bytes`` adds a byte change's old and new bytes as hex (for a
        dry run's plan, which has no side file to hold them; a manifest never has them)."""
        doc: dict[str, Any] = {"kind": self.kind, "file": self.file, "offset": self.offset, "length": self.length}
        for key in ("block", "item", "old_size", "mode", "uid", "gid", "saved"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        if self.kind != KIND_BYTES:
            doc["old_sha256"] = self.old_sha256
        elif with_bytes:
            doc["old"] = self.old.hex()
            doc["new"] = self.new.hex()
        if self.note:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str, version: int = VERSION) -> FileChange:
        """A change as the manifest holds it, every key and type checked (``where`` names it in errors). Version 1's
        inline hex of a byte change is checked for its type and dropped: undo restores the page's saved image."""
        optional = _CHANGE_OPTIONAL | (_CHANGE_V1_HEX if version == 1 else frozenset())
        _keys(doc, where, required=_CHANGE_REQUIRED, optional=optional)
        kind = _field(doc, "kind", str, where)
        if kind not in (KIND_BYTES, KIND_TRUNCATE, KIND_REMOVE, KIND_CREATE):
            raise _malformed(f"{where} has unknown kind {kind!r}")
        change = cls(
            kind=kind,
            file=_relpath(doc, "file", where),
            offset=_count(doc, "offset", where),
            length=_count(doc, "length", where),
            old_sha256=_field(doc, "old_sha256", str, where, default=""),
            block=_count(doc, "block", where, optional=True),
            item=_count(doc, "item", where, optional=True),
            note=_field(doc, "note", str, where, default=""),
            old_size=_count(doc, "old_size", where, optional=True),
            mode=_count(doc, "mode", where, optional=True),
            uid=_count(doc, "uid", where, optional=True),
            gid=_count(doc, "gid", where, optional=True),
            saved=_relpath(doc, "saved", where, optional=True),
        )
        at = f"the {kind} change to {change.file} at offset {change.offset}"
        if kind == KIND_BYTES:
            if version == 1:
                old, new = _hex(doc, "old", where), _hex(doc, "new", where)
                if len(old) != len(new) or len(old) != change.length:
                    raise _malformed(f"{at}: old and new bytes differ in length or from 'length'")
            if change.length == 0:
                raise _malformed(f"{at} has length 0")
            if change.block is None:
                raise _malformed(f"{at} names no block")
        elif kind == KIND_CREATE:
            if change.saved is None or change.offset != 0 or change.old_size is not None:
                raise _malformed(f"{at}: a created file has saved content, offset 0 and no old size")
        else:
            if change.saved is None:
                raise _malformed(f"{at} has no saved data")
            if change.old_size is None or change.offset + change.length != change.old_size:
                raise _malformed(f"{at}: offset + length is not the old size")
            if kind == KIND_REMOVE and change.offset != 0:
                raise _malformed(f"{at}: a removed file is restored from offset 0")
            if change.mode is not None and change.mode > 0o7777:
                raise _malformed(f"{at}: mode {change.mode:o} is not a permission mode")
        return change


_HINT_EDITED = "the manifest was edited or damaged; restore the cluster from a backup instead"
_CHANGE_REQUIRED = frozenset({"kind", "file", "offset", "length"})
_CHANGE_OPTIONAL = frozenset({"old_sha256", "block", "item", "note", "old_size", "mode", "uid", "gid", "saved"})
_CHANGE_V1_HEX = frozenset({"old", "new"})
_PAGE_REQUIRED = frozenset({"file", "block", "offset", "length", "sha256_before", "sha256_after"})
_PAGE_OPTIONAL = frozenset({"saved_at"})


def _malformed(message: str) -> PgSurgeonError:
    return PgSurgeonError(f"the manifest is malformed: {message}", hint=_HINT_EDITED)


def _keys(doc: Any, where: str, *, required: frozenset[str], optional: frozenset[str]) -> None:
    if not isinstance(doc, dict):
        raise _malformed(f"{where} is a {type(doc).__name__}, not an object")
    missing = sorted(required - doc.keys())
    if missing:
        raise _malformed(f"{where} has no {', '.join(missing)}")
    unknown = sorted(doc.keys() - required - optional)
    if unknown:
        raise _malformed(f"{where} has unknown key(s) {', '.join(unknown)}")


def _field(doc: dict[str, Any], key: str, kind: type, where: str, *, default: Any = None) -> Any:
    value = doc.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _malformed(f"{key} of {where} is {value!r}, not a {kind.__name__}")
    return value


def _count(doc: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    """A non-negative integer (or None when ``optional`` and absent)."""
    if optional and doc.get(key) is None:
        return None
    value = _field(doc, key, int, where, default=0)
    if value < 0:
        raise _malformed(f"{key} of {where} is negative ({value})")
    return value


def _hex(doc: dict[str, Any], key: str, where: str) -> bytes:
    try:
        return bytes.fromhex(_field(doc, key, str, where, default=""))
    except ValueError:
        raise _malformed(f"{key} of {where} is not hexadecimal") from None


def _relpath(doc: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    """A relative path that stays where it is anchored: no absolute path, no ``..``. Symbolic links are
    judged where the path is used (:func:`pgsurgeon.journal.apply.confine`), against the real directories."""
    if optional and doc.get(key) is None:
        return None
    value = _field(doc, key, str, where)
    parts = Path(value).parts
    if not value or Path(value).is_absolute() or ".." in parts or "\0" in value:
        raise _malformed(f"{key} of {where} is {value!r}, not a path relative to its directory")
    return value


@dataclass
class PageRecord:
    """A whole page touched by byte changes, with its hashes before and after. Its original image is saved
    in the side file ``pages.bin`` at ``saved_at``: undo writes it back whole, onto a page still as written (its
    digest after) or, forced, onto one the server rewrote since (hint bits, pruning through damaged line pointers)."""

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

    @classmethod
    def from_json(cls, doc: Any, where: str) -> PageRecord:
        _keys(doc, where, required=_PAGE_REQUIRED, optional=_PAGE_OPTIONAL)
        page = cls(
            file=_relpath(doc, "file", where),
            block=_count(doc, "block", where),
            offset=_count(doc, "offset", where),
            length=_count(doc, "length", where),
            sha256_before=_field(doc, "sha256_before", str, where),
            sha256_after=_field(doc, "sha256_after", str, where),
            saved_at=_count(doc, "saved_at", where),
        )
        if page.length == 0:
            raise _malformed(f"{where} has length 0")
        return page


def render(doc: dict[str, Any]) -> str:
    """The manifest's text: the header indented, then one page record or change a line. (``indent=2`` over the
    whole document goes through json's pure-Python encoder: 0.12 s a write for a thousand pages; the C encoder writes
    each line here.)"""
    lists = {key: doc[key] for key in ("pages", "changes") if key in doc}
    head = json.dumps({k: v for k, v in doc.items() if k not in lists}, indent=2)
    parts = [head.removesuffix("\n}").removesuffix("}")]
    for key, items in lists.items():
        lines = ",\n".join(f"    {json.dumps(item)}" for item in items)
        parts.append(f',\n  "{key}": [\n{lines}\n  ]' if items else f',\n  "{key}": []')
    return "".join(parts) + "\n}\n"


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

    def to_json(self, *, with_bytes: bool = False) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "pgsurgeon_version": __version__,
            **self.header,
            "pages": [p.to_json() for p in self.pages],
            "changes": [c.to_json(with_bytes=with_bytes) for c in self.changes],
        }

    def write(self, state: str, **extra: Any) -> None:
        self.header["state"] = state
        self.header.update(extra)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_durably(self.path, render(self.to_json()).encode())

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read and check the whole manifest (keys, types, offsets, lengths, paths relative and without ``..``)
        before anything uses it, so a hostile or damaged manifest is refused before the first write."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PgSurgeonError(f"no such manifest: {path}", hint="pass the .json file 'corrupt' printed") from None
        except (OSError, ValueError) as exc:
            reason = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise PgSurgeonError(
                f"cannot read manifest {path}: {reason}", hint="pass the .json file 'corrupt' printed"
            ) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise PgSurgeonError(
                f"{path} is not a pgsurgeon corruption manifest", hint="pass the .json file 'corrupt' printed"
            )
        version = doc.get("version")
        if version not in READS:
            raise PgSurgeonError(
                f"manifest {path} has version {version}, this pgsurgeon reads {', '.join(map(str, READS))}",
                hint="undo it with the pgsurgeon release that wrote it",
            )
        _check_header(doc)
        changes_doc, pages_doc = doc.pop("changes", None), doc.pop("pages", [])
        if not isinstance(changes_doc, list):
            raise _malformed("'changes' is not a list")
        if not isinstance(pages_doc, list):
            raise _malformed("'pages' is not a list")
        changes = [FileChange.from_json(c, f"change {n + 1}", version) for n, c in enumerate(changes_doc)]
        pages = [PageRecord.from_json(p, f"page record {n + 1}") for n, p in enumerate(pages_doc)]
        by_page = {(p.file, p.block): p for p in pages}
        for n, c in enumerate(changes):
            if c.kind != KIND_BYTES:
                continue
            page = by_page.get((c.file, c.block if c.block is not None else -1))
            if page is None or not page.offset <= c.offset <= c.offset + c.length <= page.offset + page.length:
                raise _malformed(f"change {n + 1} lies outside the page record of {c.file} block {c.block}")
        for key in ("format", "version", "pgsurgeon_version"):
            doc.pop(key, None)
        return cls(path=path, header=doc, changes=changes, pages=pages)


def _check_header(doc: dict[str, Any]) -> None:
    """The header keys undo reads, with their types."""
    pgdata = doc.get("pgdata")
    if not isinstance(pgdata, str) or not Path(pgdata).is_absolute():
        raise _malformed(f"pgdata is {pgdata!r}, not an absolute path")
    for key in ("lab", "relation"):
        if not isinstance(doc.get(key), dict | None):
            raise _malformed(f"{key} is {doc[key]!r}, not an object")
    for key in ("state", "mode", "field", "undone_at"):
        if not isinstance(doc.get(key), str | None):
            raise _malformed(f"{key} is {doc[key]!r}, not text")


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
