"""Raw pages of a table without the executor: from the data directory when it is at hand (``LocalPages``), else
through ``pg_read_binary_file`` (``RemotePages``: superusers and pg_read_server_files), which reads the file the
way a backup would, never through shared buffers, so damaged pages cannot crash anything."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.datadir import segments_of
from pgsurgeon.salvage.catalog import Table
from pgsurgeon.session import Session

if TYPE_CHECKING:
    from pgsurgeon.boundary import BlockClass, ChunkRef, ClassifyConfig, ClassifyResult, IndexFiles, SegFile

REMOTE_BATCH = 128  # blocks per pg_read_binary_file call (1 MB)


class CarveExtras(TypedDict, total=False):
    """The part of a CarveConfig a page source fills in (boundary.CarveConfig)."""

    xact_dir: str
    relseg_size: int
    files: list[SegFile]
    toast_files: list[SegFile]
    toast_nblocks: int


class PageSource(Protocol):
    kind: str

    def classify(self, config: ClassifyConfig) -> ClassifyResult: ...

    def read_pages(self, blocks: list[int]) -> bytes: ...

    def carve_extras(self) -> CarveExtras:
        """Carve configuration this source can provide (the heap's files, TOAST files, pg_xact)."""
        ...

    def read_range(self, first: int, count: int) -> bytes:
        """Blocks first..first+count (fewer bytes where the relation ends)."""
        ...

    def index_files(self) -> list[IndexFiles]: ...


class LocalPages:
    """The server's own data directory, read directly."""

    kind = "local"

    def __init__(self, pgdata: Path, table: Table, relseg_size: int) -> None:
        self.pgdata = pgdata
        self.table = table
        self.relseg_size = relseg_size
        assert table.rel.filepath is not None  # load_table refuses a table without storage
        self.base = pgdata / table.rel.filepath
        self.segments = segments_of(self.base)

    def classify(self, config: ClassifyConfig) -> ClassifyResult:
        return core.classify_relation({**config, "files": self.segments, "relseg_size": self.relseg_size})

    def read_pages(self, blocks: list[int]) -> bytes:
        bs = self.table.rel.block_size
        out = bytearray()
        handles: dict[int, Any] = {}
        try:
            for b in blocks:
                segno, in_seg = divmod(b, self.relseg_size)
                fh = handles.get(segno)
                if fh is None:
                    path = self.base if segno == 0 else self.base.with_name(f"{self.base.name}.{segno}")
                    try:
                        fh = handles[segno] = path.open("rb")
                    except FileNotFoundError:
                        out += bytes(bs)
                        continue
                fh.seek(in_seg * bs)
                data = fh.read(bs)
                out += data + bytes(bs - len(data))
        finally:
            for fh in handles.values():
                fh.close()
        return bytes(out)

    def carve_extras(self) -> CarveExtras:
        extras: CarveExtras = {
            "xact_dir": str(self.pgdata / "pg_xact"),
            "relseg_size": self.relseg_size,
            "files": self.segments,
        }
        toast = self.table.toast
        if toast is not None and toast.filepath:
            extras["toast_files"] = segments_of(self.pgdata / toast.filepath)
            extras["toast_nblocks"] = self.table.toast_nblocks
        return extras

    def read_range(self, first: int, count: int) -> bytes:
        return self.read_pages(list(range(first, first + count)))

    def index_files(self) -> list[IndexFiles]:
        return [
            {
                "name": ix.name,
                "files": segments_of(self.pgdata / (ix.filepath or "")),
                "nblocks": ix.size // self.table.rel.block_size,
            }
            for ix in self.table.indexes
        ]


class RemotePages:
    """Pages read through ``pg_read_binary_file`` on the server (no shared buffers, no executor on the page)."""

    kind = "remote"

    def __init__(self, session: Session, table: Table, relseg_size: int) -> None:
        self.session = session
        self.table = table
        self.relseg_size = relseg_size

    def _read(self, first: int, count: int) -> bytes:
        """Blocks first..first+count of one segment (the caller keeps a read inside one segment)."""
        bs = self.table.rel.block_size
        segno, in_seg = divmod(first, self.relseg_size)
        path = self.table.rel.filepath if segno == 0 else f"{self.table.rel.filepath}.{segno}"
        query = "SELECT pg_read_binary_file(%s, %s, %s, true)"
        row = self.session.run(lambda c: c.execute(query, (path, in_seg * bs, count * bs)).fetchone())
        data = bytes(row[0]) if row and row[0] is not None else b""
        return data

    def _nblocks_now(self) -> int:
        size = self.session.run(lambda c: catalog.relation_size(c, self.table.rel.oid))
        return (size or 0) // self.table.rel.block_size

    def classify(self, config: ClassifyConfig) -> ClassifyResult:
        nblocks = self.table.rel.nblocks
        blocks: list[BlockClass] = []
        read = 0
        first = 0
        while first < nblocks:
            count = min(REMOTE_BATCH, nblocks - first, self.relseg_size - first % self.relseg_size)
            data = self._read(first, count)
            read += len(data)
            # read after the pages: on a running server an updated row's t_ctid may name a block added since
            # the table's length was taken, and it exists by the time the row was written out
            grown = self._nblocks_now()
            res = core.classify_pages(data, first, {**config, "nblocks": nblocks, "rel_nblocks": max(nblocks, grown)})
            blocks.extend(res["blocks"])
            # blocks the file did not have
            have = len(data) // self.table.rel.block_size
            for b in range(first + have, first + count):
                blocks.append(
                    {"block": b, "state": "missing", "codes": ["file.partial_page"], "message": "not in the file"}
                )
            first += count
        zero = sum(1 for b in blocks if b["state"] == "zero")
        damaged = sum(1 for b in blocks if b["state"] == "damaged")
        missing = sum(1 for b in blocks if b["state"] == "missing")
        return {
            "nblocks": nblocks,
            "bytes_read": read,
            "blocks": sorted(blocks, key=lambda b: int(b["block"])),
            "zero": zero,
            "damaged": damaged,
            "missing": missing,
            "healthy": nblocks - zero - damaged - missing,
        }

    def read_pages(self, blocks: list[int]) -> bytes:
        bs = self.table.rel.block_size
        out = bytearray()
        for b in blocks:
            data = self._read(b, 1)
            out += data + bytes(bs - len(data))
        return bytes(out)

    def carve_extras(self) -> CarveExtras:
        return {"relseg_size": self.relseg_size}

    def read_range(self, first: int, count: int) -> bytes:
        out = bytearray()
        end = first + count
        while first < end:
            n = min(end - first, REMOTE_BATCH, self.relseg_size - first % self.relseg_size)
            data = self._read(first, n)
            out += data
            if len(data) < n * self.table.rel.block_size:
                break
            first += n
        return bytes(out)

    def index_files(self) -> list[IndexFiles]:
        return []


def pageinspect_function(conn: Any, name: str) -> db.sql.Composable | None:
    """A pageinspect function, schema-qualified (None when the extension is not installed)."""
    schema = catalog.extension_schema(conn, "pageinspect")
    return db.sql.Identifier(schema, name) if schema else None


def can_read_remote(table: Table) -> bool:
    return table.facts.superuser or table.facts.read_server_files


def fetch_toast(session: Session, table: Table, valueids: list[int]) -> tuple[list[ChunkRef], bytes]:
    """The chunks of these TOAST values read through SQL (the TOAST table's index): chunk refs and their blob."""
    ident = table.toast_ident()
    if ident is None or not valueids:
        return [], b""
    query = db.sql.SQL(
        "SELECT chunk_id::bigint, chunk_seq, chunk_data FROM {} WHERE chunk_id = ANY(%s::oid[]) ORDER BY 1, 2"
    ).format(ident)
    rows = session.run(lambda c: c.execute(query, (valueids,)).fetchall())
    refs: list[ChunkRef] = []
    blob = bytearray()
    for valueid, seq, data in rows:
        data = bytes(data)
        refs.append({"valueid": int(valueid), "seq": int(seq), "start": len(blob), "len": len(data)})
        blob += data
    return refs, bytes(blob)
