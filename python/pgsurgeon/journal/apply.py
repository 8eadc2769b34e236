"""Writing a planned corruption to disk, and undoing it from its manifest.

Order when corrupting: side files (the original images of the pages written, old bytes of cut tails and removed
segments) are written and fsynced, then the manifest (state ``applying``), then the data files (each checked to still
hold the old bytes, written, fsynced once per file), then the manifest again (state ``applied``). The server must be
down meanwhile (:func:`pgsurgeon.journal.server.server_stopped`). Undo writes whole pages back from their saved
images, each file fsynced once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.journal.manifest import (
    KIND_BYTES,
    KIND_CREATE,
    KIND_REMOVE,
    KIND_TRUNCATE,
    FileChange,
    Manifest,
    PageRecord,
    fsync_dir,
    sha256,
    write_durably,
)
from pgsurgeon.lab.marker import utc_now

_COPY_CHUNK = 1 << 20


def _read_at(path: Path, offset: int, length: int) -> bytes | None:
    """``length`` bytes at ``offset``, or None when the file is missing."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(length)
    except FileNotFoundError:
        return None


def _handle(files: dict[Path, BinaryIO], path: Path) -> BinaryIO:
    """The handle of ``path`` kept open in ``files`` (opened on first use): a thousand pages of one file cost one
    open and one fsync (:func:`_sync_close`), not a thousand."""
    fh = files.get(path)
    if fh is None:
        fh = files[path] = path.open("r+b")
    return fh


def _read_through(files: dict[Path, BinaryIO], path: Path, offset: int, length: int) -> bytes | None:
    """``length`` bytes at ``offset`` through the kept handle, or None when the file is missing."""
    try:
        fh = _handle(files, path)
    except FileNotFoundError:
        return None
    fh.seek(offset)
    return fh.read(length)


def _write_unsynced(files: dict[Path, BinaryIO], path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` of ``path`` (flushed to the kernel, fsynced by :func:`_sync_close`)."""
    fh = _handle(files, path)
    fh.seek(offset)
    fh.write(data)
    fh.flush()


def _sync_close(files: dict[Path, BinaryIO], only: Path | None = None) -> None:
    """fsync and close the handles in ``files`` (``only`` that of one path: before the file is cut or removed)."""
    for path in [only] if only is not None else list(files):
        fh = files.pop(path, None)
        if fh is not None:
            try:
                os.fsync(fh.fileno())
            finally:
                fh.close()


def _copy_range(src: Path, offset: int, length: int, dst: Path) -> str:
    """Copy ``length`` bytes of ``src`` from ``offset`` into a new file ``dst`` (fsynced); sha256."""
    h = hashlib.sha256()
    tmp = dst.with_name(f".{dst.name}.tmp")
    with src.open("rb") as fin, tmp.open("wb") as fout:
        fin.seek(offset)
        left = length
        while left > 0:
            chunk = fin.read(min(_COPY_CHUNK, left))
            if not chunk:
                raise PgSurgeonError(f"{src} ended early while saving its bytes")
            h.update(chunk)
            fout.write(chunk)
            left -= len(chunk)
        fout.flush()
        os.fsync(fout.fileno())
    tmp.replace(dst)
    fsync_dir(dst.parent)
    return h.hexdigest()


def _create(path: Path, data: bytes) -> None:
    """A new file (refused if one is there), owned like its directory so the server can read it."""
    if path.exists():
        raise PgSurgeonError(f"{path} appeared while pgsurgeon was planning", hint="run corrupt again")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    st = path.parent.stat()
    if os.geteuid() == 0:
        os.chown(path, st.st_uid, st.st_gid)
    fsync_dir(path.parent)


def _sha_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_COPY_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def apply(manifest: Manifest, say: Callable[[str], None]) -> None:
    """Save the old data, write the manifest, then change the data files."""
    pgdata = manifest.pgdata
    for n, change in enumerate(manifest.changes):
        if change.kind == KIND_BYTES:
            continue
        manifest.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{n:04d}-{Path(change.file).name}.bin"
        if change.kind == KIND_CREATE:
            write_durably(manifest.data_dir / name, change.new)
            change.old_sha256 = sha256(change.new)
            change.saved = f"{manifest.data_dir.name}/{name}"
            continue
        change.old_sha256 = _copy_range(pgdata / change.file, change.offset, change.length, manifest.data_dir / name)
        change.saved = f"{manifest.data_dir.name}/{name}"
    if manifest.pages:
        manifest.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        offset = 0
        for page in manifest.pages:
            page.saved_at = offset
            offset += len(page.original)
        write_durably(manifest.pages_file, b"".join(p.original for p in manifest.pages))
    manifest.write("applying")
    # the old bytes are durable beside the manifest from here: a crash at any point below is undone from them
    files: dict[Path, BinaryIO] = {}
    try:
        _apply_changes(manifest, files)
        _sync_close(files)
    finally:
        for fh in files.values():
            fh.close()
    manifest.write("applied", applied_at=utc_now())
    say(f"wrote {len(manifest.changes)} change(s) to {len({c.file for c in manifest.changes})} file(s)")


def _apply_changes(manifest: Manifest, files: dict[Path, BinaryIO]) -> None:
    pgdata = manifest.pgdata
    for change in manifest.changes:
        path = pgdata / change.file
        if change.kind == KIND_BYTES:
            if _read_through(files, path, change.offset, len(change.old)) != change.old:
                raise PgSurgeonError(
                    f"{change.file} changed while pgsurgeon was planning (offset {change.offset})",
                    hint=f"nothing after this change was written; undo the rest with: pgsurgeon undo {manifest.path}",
                )
            _write_unsynced(files, path, change.offset, change.new)
            continue
        _sync_close(files, path)
        if change.kind == KIND_TRUNCATE:
            os.truncate(path, change.offset)
            with path.open("rb+") as cut:
                os.fsync(cut.fileno())
        elif change.kind == KIND_REMOVE:
            path.unlink()
            fsync_dir(path.parent)
        elif change.kind == KIND_CREATE:
            _create(path, change.new)


# --------------------------------------------------------------------------------------------- undo


@dataclass
class UndoReport:
    restored: int = 0
    already: int = 0
    mismatched: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Check:
    """Where each change stands: still as corrupt left it (to restore), already restored, or changed since."""

    todo: list[FileChange] = field(default_factory=list)
    already: list[FileChange] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    """Descriptions of the pages and files changed since corrupt wrote them."""
    rewritten_pages: list[PageRecord] = field(default_factory=list)
    """The pages among ``other``: a forced undo writes their original image back."""


def _page_state(page: PageRecord, pgdata: Path) -> str:
    data = _read_at(pgdata / page.file, page.offset, page.length)
    if data is None or len(data) != page.length:
        return "other"
    digest = sha256(data)
    if digest == page.sha256_after:
        return "new"
    return "old" if digest == page.sha256_before else "other"


def _file_state(change: FileChange, pgdata: Path) -> str:
    """``new`` (as corrupt left it), ``old`` (already restored) or ``other``, for cut and removed files."""
    path = pgdata / change.file
    try:
        size: int | None = path.stat().st_size
    except FileNotFoundError:
        size = None
    if change.kind == KIND_CREATE:
        if size is None:
            return "old"
        return "new" if size == change.length and _sha_file(path) == change.old_sha256 else "other"
    if change.kind == KIND_TRUNCATE:
        if size == change.offset:
            return "new"
        return "old" if size == change.old_size else "other"
    if size is None:
        return "new"
    return "old" if size == change.old_size and _sha_file(path) == change.old_sha256 else "other"


def _inside(path: Path, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or root in real.parents for root in roots)


def confine(manifest: Manifest) -> None:
    """Refuse a manifest naming any file outside its data directory (or its side-file directory), judged on the
    real paths, so no symbolic link or ``..`` leads a write elsewhere. Checked for every path before the first
    read or write. A tablespace's files are reached through its link ``pg_tblspc/OID``, which may point anywhere:
    such a path must stay inside that link's target."""
    pgdata = Path(os.path.realpath(manifest.pgdata))
    files = [c.file for c in manifest.changes] + [p.file for p in manifest.pages]
    for file in files:
        parts = Path(file).parts
        roots = [pgdata]
        if len(parts) > 2 and parts[0] == "pg_tblspc" and parts[1].isdigit():
            roots = [Path(os.path.realpath(pgdata / parts[0] / parts[1]))]
        if not _inside(pgdata / file, roots):
            raise PgSurgeonError(
                f"the manifest names {file}, which leads outside the data directory {manifest.pgdata}: "
                "refusing to touch anything",
                hint="the manifest was edited or the directory changed (a symbolic link); restore from a backup",
            )
    side = Path(os.path.realpath(manifest.data_dir))
    for change in manifest.changes:
        if change.saved is not None and not _inside(manifest.path.parent / change.saved, [side]):
            raise PgSurgeonError(
                f"the manifest keeps the saved bytes of {change.file} outside {manifest.data_dir}: refusing them",
                hint="the manifest was edited; restore the cluster from a backup",
            )


def check(manifest: Manifest) -> Check:
    """Compare the files with the manifest. Pages are compared whole: a page the server rewrote since (hint
    bits set through a damaged line pointer, pruning) counts as changed even where pgsurgeon's bytes survive."""
    confine(manifest)
    pgdata = manifest.pgdata
    result = Check()
    page_states = {(p.file, p.block): (p, _page_state(p, pgdata)) for p in manifest.pages}
    for page, state in page_states.values():
        if state == "other":
            result.rewritten_pages.append(page)
            result.other.append(f"{page.file} block {page.block}")
    # a file removed and written anew in one manifest (a rebuilt segment replacing a damaged one): the removal
    # stands as long as the new file is what was written
    created = {c.file: _file_state(c, pgdata) for c in manifest.changes if c.kind == KIND_CREATE}
    for change in manifest.changes:
        if change.kind == KIND_BYTES:
            found = page_states.get((change.file, change.block if change.block is not None else -1))
            state = found[1] if found is not None else "other"
        else:
            state = _file_state(change, pgdata)
            if change.kind == KIND_REMOVE and created.get(change.file) == "new":
                state = "new"
            if state == "other":
                what = {KIND_TRUNCATE: "cut", KIND_CREATE: "created"}.get(change.kind, "removed")
                result.other.append(f"{change.file} (was {what})")
        if state == "old":
            result.already.append(change)
        else:
            result.todo.append(change)
    return result


def _saved_path(manifest: Manifest, change: FileChange) -> Path:
    assert change.saved is not None
    path = manifest.path.parent / change.saved
    if not path.is_file():
        raise PgSurgeonError(
            f"the saved bytes of {change.file} are missing: {path}",
            hint="undo needs the manifest's .data directory next to it",
        )
    if _sha_file(path) != change.old_sha256:
        raise PgSurgeonError(
            f"the saved bytes of {change.file} ({path}) do not match their sha256",
            hint="the side file was modified; restore the cluster from a backup",
        )
    return path


def _original_page(manifest: Manifest, page: PageRecord) -> bytes:
    data = _read_at(manifest.pages_file, page.saved_at, page.length)
    if data is None or sha256(data) != page.sha256_before:
        raise PgSurgeonError(
            f"the saved image of {page.file} block {page.block} is missing or damaged ({manifest.pages_file})",
            hint="undo needs the manifest's .data directory next to it",
        )
    return data


def _check_target(path: Path, kind: str) -> None:
    """The file a change is restored into must be there (or, for a removed one, its directory)."""
    if kind == KIND_CREATE:
        return
    if kind == KIND_REMOVE:
        if not path.parent.is_dir():
            raise PgSurgeonError(
                f"cannot restore {path}: its directory is gone", hint="the relation was dropped since corrupt ran"
            )
    elif not path.is_file():
        raise PgSurgeonError(
            f"cannot restore {path}: the file is gone or not a regular file",
            hint="the relation was dropped or rewritten since corrupt ran (VACUUM FULL, TRUNCATE)",
        )


def _restore(manifest: Manifest, change: FileChange, saved: Path) -> None:
    """Put back a cut tail, a removed file, or remove a created one (page images are written by :func:`undo`)."""
    path = manifest.pgdata / change.file
    if change.kind == KIND_CREATE:
        path.unlink()
        fsync_dir(path.parent)
        return
    if change.kind == KIND_TRUNCATE:
        with path.open("r+b") as fh, saved.open("rb") as src:
            fh.seek(change.offset)
            shutil.copyfileobj(src, fh, _COPY_CHUNK)
            fh.truncate(change.offset + change.length)
            fh.flush()
            os.fsync(fh.fileno())
        return
    # KIND_REMOVE: recreate with the saved content, mode and owner
    tmp = path.with_name(f".{path.name}.pgsurgeon-undo")
    with saved.open("rb") as src, tmp.open("wb") as fh:
        shutil.copyfileobj(src, fh, _COPY_CHUNK)
        fh.flush()
        os.fsync(fh.fileno())
    if change.mode is not None:
        tmp.chmod(change.mode)
    if change.uid is not None and change.gid is not None and os.geteuid() == 0:
        os.chown(tmp, change.uid, change.gid)
    tmp.replace(path)
    fsync_dir(path.parent)


def undo(manifest: Manifest, *, force: bool) -> UndoReport:
    """Restore every change, last first: a byte change by writing its page's original image back whole (once a
    page), the others from their side files. Refuses (unless ``force``) when a page or file is not what corrupt
    left; forced, a rewritten page gets its original image back all the same (the server's later changes to it
    are lost), so every file ends byte-identical to before corrupt."""
    report = UndoReport()
    state = check(manifest)
    report.already = len(state.already)
    report.mismatched = state.other
    if state.other and not force:
        more = f" (and {len(state.other) - 1} more)" if len(state.other) > 1 else ""
        raise PgSurgeonError(
            f"{state.other[0]}{more} is no longer what corrupt left: refusing to restore",
            hint="the server rewrote it since (hint bits or pruning through the damage), or a later corrupt run "
            "changed it (undo that first); --force puts the saved original back anyway",
        )
    todo_ids = {id(c) for c in state.todo}
    todo = [c for c in reversed(manifest.changes) if id(c) in todo_ids]
    # Everything a restore needs is checked before the first write, so a failure never leaves it half done.
    saved = {id(c): _saved_path(manifest, c) for c in todo if c.kind != KIND_BYTES}
    records: dict[tuple[str, int | None], PageRecord] = {}
    for page in manifest.pages:  # a page written twice in one manifest: its first record has the original
        records.setdefault((page.file, page.block), page)
    images: dict[tuple[str, int | None], bytes] = {}
    for change in todo:
        key = (change.file, change.block)
        if change.kind == KIND_BYTES and key not in images:
            images[key] = _original_page(manifest, records[key])
        _check_target(manifest.pgdata / change.file, change.kind)
    rewritten = {(p.file, p.block) for p in state.rewritten_pages}
    files: dict[Path, BinaryIO] = {}
    try:
        for change in todo:
            path = manifest.pgdata / change.file
            if change.kind != KIND_BYTES:
                _sync_close(files, path)
                _restore(manifest, change, saved[id(change)])
                report.restored += 1
                continue
            key = (change.file, change.block)
            image = images.pop(key, None)
            if image is not None:  # at the page's last change (met first, going backwards): its whole image
                _write_unsynced(files, path, records[key].offset, image)
            report.restored += key not in rewritten
        _sync_close(files)
    finally:
        for fh in files.values():
            fh.close()
    report.notes.extend(
        f"{page.file} block {page.block}: rewritten by the server since corrupt; its original image is back"
        for page in state.rewritten_pages
    )
    manifest.write("undone", undone_at=utc_now(), undo_forced=bool(state.other))
    return report
