"""The loss account: how many rows a damaged page took with it, told the same way by every command (scan,
diagnose, inspect, salvage, repair, unload). A page that reads as all zeroes, or whose line pointer array is gone,
says nothing of the rows it held; the table's btree indexes and its visibility map still do:

* **certainly gone**: index entries name the row and the visibility map marked the page all-visible, so every row
  on it was live to every transaction;
* **possibly gone**: index entries name the row, but the page was not all-visible: some rows may have been
  deleted or updated away already (their entries stay until VACUUM);
* **known dead**: every entry naming it is marked dead, or the table's unique key names the same key elsewhere
  (this was an older version of a row that lives on).

Rows are named by their unique key where one exists. The evidence is read by the core (``core.loss_evidence``);
this module counts it and words it, and builds its inputs from the files catalog or from the server's."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core

if TYPE_CHECKING:
    from pgsurgeon.boundary import Finding, IndexFiles, PageEvidence, SegFile, TypeDesc
    from pgsurgeon.catalog.files import DbCatalog
    from pgsurgeon.catalog.relation import Relation
    from pgsurgeon.catalog.sql import Key as sql_key

Tid = tuple[int, int]
Segments = Callable[[str], "list[SegFile]"]
"""A relation fork's segment files from its path relative to the data directory."""

_INT_WIDTH = {21: 2, 23: 4, 20: 8}
"""int2, int4, int8 (pg_type.dat): a single such key column reads straight from the entry."""


@dataclass(frozen=True)
class KeyDesc:
    """The unique key that names rows: its index (as named in the evidence), columns, and how an entry's key
    bytes read as text."""

    index: str
    columns: tuple[str, ...]
    typid: int = 0
    """The type of a single key column (0: several columns)."""
    type_desc: TypeDesc | None = None
    server_version_num: int = 0

    def text(self, raw_hex: str) -> str:
        raw = bytes.fromhex(raw_hex)
        width = _INT_WIDTH.get(self.typid, 0)
        if width and len(raw) >= width:
            return str(int.from_bytes(raw[:width], "little", signed=True))
        if self.type_desc is not None:
            try:
                return core.format_datum(raw, self.type_desc, self.server_version_num)
            except ValueError:
                pass
        return "\\x" + raw.hex()


@dataclass(frozen=True)
class LostRow:
    block: int
    lp: int
    key: str | None
    indexes: tuple[str, ...]
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"block": self.block, "lp": self.lp, "key": self.key, "indexes": list(self.indexes), "why": self.why}


@dataclass
class PageLoss:
    """One page's account."""

    block: int
    all_visible: bool | None
    key_columns: tuple[str, ...] = ()
    certain: list[LostRow] = field(default_factory=list)
    possible: list[LostRow] = field(default_factory=list)
    dead: list[LostRow] = field(default_factory=list)

    @property
    def gone(self) -> list[LostRow]:
        return self.certain + self.possible

    def sentence(self) -> str:
        """The account in words, the same in every command: ``92 row(s) certainly gone (…): id 1..92``."""
        parts: list[str] = []
        indexes = sorted({i for r in self.gone + self.dead for i in r.indexes})
        named = f"index {indexes[0]} names" if len(indexes) == 1 else f"indexes {', '.join(indexes)} name"
        if self.certain:
            parts.append(
                f"{len(self.certain)} row(s) certainly gone ({named} them and the visibility map marked the page "
                f"all-visible, so every row on it was live){self._keys(self.certain)}"
            )
        if self.possible:
            why = "the page was not all-visible" if self.all_visible is False else "the visibility map cannot be read"
            parts.append(
                f"{len(self.possible)} row(s) possibly gone ({named} them; {why}, so some may have been deleted or "
                f"updated away already){self._keys(self.possible)}"
            )
        if self.dead:
            parts.append(f"{len(self.dead)} known dead (no loss: {self.dead[0].why})")
        return "; ".join(parts) if parts else "no index entry names a row on it: nothing is known lost"

    def row_reason(self, row: LostRow, state: str) -> str:
        """One lost row in words, ``state`` saying what became of its page (``all zeroes``)."""
        how = "certainly" if row in self.certain else "possibly"
        key = f" (key {row.key})" if row.key is not None else ""
        return f"{how} gone{key}: block {row.block} is {state}; index {', '.join(row.indexes)} names it"

    def _keys(self, rows: list[LostRow]) -> str:
        keys = [r.key for r in rows if r.key is not None]
        if not keys or not self.key_columns:
            return ""
        return f": {', '.join(self.key_columns)} {folded_keys(keys)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "all_visible": self.all_visible,
            "key_columns": list(self.key_columns),
            "certain": [r.to_json() for r in self.certain],
            "possible": [r.to_json() for r in self.possible],
            "dead": [r.to_json() for r in self.dead],
            "text": self.sentence(),
        }


def folded_keys(keys: list[str], most: int = 12) -> str:
    """Integer keys as runs (``1..57, 60``); others listed, the first ``most`` of them."""
    if all(k.lstrip("-").isdigit() for k in keys):
        values = sorted({int(k) for k in keys})
        runs: list[tuple[int, int]] = []
        for v in values:
            if runs and runs[-1][1] == v - 1:
                runs[-1] = (runs[-1][0], v)
            else:
                runs.append((v, v))
        text = [f"{a}..{b}" if a != b else str(a) for a, b in runs]
    else:
        text = sorted(set(keys))
    more = f" … ({len(keys)} in all)" if len(text) > most else ""
    return ", ".join(text[:most]) + more


def account(evidence: list[PageEvidence], key: KeyDesc | None, recovered: Collection[Tid] = ()) -> list[PageLoss]:
    """Each page's account from the core's evidence; ``recovered``: rows read back after all (carved)."""
    out: list[PageLoss] = []
    for page in evidence:
        block = int(page["block"])
        loss = PageLoss(block, page["all_visible"], key.columns if key is not None else ())
        seen_keys: dict[str, Tid] = {}
        for r in page["rows"]:
            tid = (block, int(r["lp"]))
            if tid in recovered:
                continue
            text = key.text(r["key"]) if key is not None and r["key"] is not None else None
            row = LostRow(block, tid[1], text, tuple(r["indexes"]))
            elsewhere = r["elsewhere"]
            if r["dead"]:
                loss.dead.append(_why(row, "every index entry naming it is marked dead"))
            elif elsewhere is not None and text is not None:
                loss.dead.append(_why(row, f"an older version: the row with key {text} is at {tuple(elsewhere)}"))
            elif r["key"] is not None and r["key"] in seen_keys:
                loss.dead.append(_why(row, f"another version of the row at {seen_keys[r['key']]}"))
            else:
                if r["key"] is not None:
                    seen_keys[r["key"]] = tid
                (loss.certain if page["all_visible"] else loss.possible).append(row)
        out.append(loss)
    return out


def _why(row: LostRow, why: str) -> LostRow:
    return LostRow(row.block, row.lp, row.key, row.indexes, why)


def evidence_for(
    indexes: list[IndexFiles],
    key: KeyDesc | None,
    blocks: list[int],
    vm: list[SegFile],
    block_size: int,
    recovered: Collection[Tid] = (),
) -> list[PageLoss]:
    """The account of ``blocks`` from the table's btree index files and visibility map."""
    if not blocks:
        return []
    found = core.loss_evidence(
        {
            "indexes": indexes,
            "key_index": key.index if key is not None else None,
            "blocks": sorted(set(blocks)),
            "vm": vm,
            "blcksz": block_size,
        }
    )
    return account(found, key, recovered)


# ---------------------------------------------------------------- from the files catalog


def in_data_directory(pgdata: Path) -> Segments:
    """Segment files as they are in a data directory."""
    from pgsurgeon.datadir import segments_of

    return lambda relpath: segments_of(pgdata / relpath)


def btree_files(cat: DbCatalog, rel: Relation, segments: Segments) -> list[IndexFiles]:
    """The table's btree indexes with their segment files."""
    out: list[IndexFiles] = []
    for ix in cat.indexes_of.get(rel.oid, []):
        irel = cat.relations.get(ix.oid)
        if irel is None or irel.amname != "btree":
            continue
        loc = cat.locate(ix.oid)
        if loc is not None:
            out.append({"name": irel.name, "files": segments(loc[0]), "nblocks": loc[1]})
    return out


def key_from_files(cat: DbCatalog, rel: Relation) -> KeyDesc | None:
    """The table's primary key, else a unique index on plain columns, as the files catalog describes it."""
    candidates = [
        ix for ix in cat.indexes_of.get(rel.oid, []) if ix.unique and not ix.has_expressions and ix.oid in cat.relations
    ]
    candidates.sort(key=lambda ix: (not ix.primary, ix.oid))
    for ix in candidates:
        irel = cat.relations[ix.oid]
        if irel.amname != "btree" or irel.partial:
            continue
        attrs = {a.attnum: a for a in cat.attributes.get(rel.oid, [])}
        cols = [attrs[k] for k in ix.keys if k in attrs]
        if len(cols) != len(ix.keys) or not cols:
            continue
        single = cols[0] if len(cols) == 1 else None
        return KeyDesc(
            irel.name,
            tuple(a.name for a in cols),
            single.typid if single else 0,
            cat.column_type(single) if single else None,
            cat.files.server_version_num,
        )
    return None


def key_from_sql(
    key: sql_key | None, indexes: dict[int, str], columns: dict[int, TypeDesc | None], server_version_num: int
) -> KeyDesc | None:
    """The unique key the server's catalog names (catalog.sql.unique_key), with ``indexes`` naming index OIDs as
    the evidence names them and ``columns`` the table's column types by attnum."""
    if key is None or key.index_oid not in indexes:
        return None
    single = len(key.columns) == 1
    return KeyDesc(
        indexes[key.index_oid],
        tuple(key.columns),
        key.typids[0] if single else 0,
        columns.get(key.attnums[0]) if single else None,
        server_version_num,
    )


def from_server(
    conn: Any,
    pgdata: Path,
    table: Relation,
    indexes: list[Relation],
    blocks: list[int],
    recovered: Collection[Tid] = (),
) -> list[PageLoss]:
    """The account of ``blocks`` of ``table`` on a running server whose data directory is on this host: the
    relations and key from its catalog, the index files and visibility map from the directory."""
    from pgsurgeon.catalog import sql as catalog
    from pgsurgeon.catalog.types import load_types, type_desc
    from pgsurgeon.datadir import segments_of

    if table.filepath is None or not blocks:
        return []
    files: list[IndexFiles] = [
        {"name": ix.name, "files": segments_of(pgdata / ix.filepath), "nblocks": ix.nblocks}
        for ix in indexes
        if ix.is_btree and ix.filepath is not None
    ]
    found = catalog.unique_key(conn, table.oid)
    types: dict[int, TypeDesc | None] = {}
    if found is not None and len(found.typids) == 1:
        types[found.attnums[0]] = type_desc(found.typids[0], load_types(conn, {found.typids[0]}))
    version = int(conn.info.server_version)
    key = key_from_sql(found, {ix.oid: ix.name for ix in indexes}, types, version)
    vm = segments_of(pgdata / (table.filepath + "_vm"))
    return evidence_for(files, key, blocks, vm, table.block_size, recovered)


def from_files(
    cat: DbCatalog,
    rel: Relation,
    blocks: list[int],
    segments: Segments,
    block_size: int,
    recovered: Collection[Tid] = (),
) -> list[PageLoss]:
    """The account of ``blocks`` of table ``rel``, everything read from the files."""
    loc = cat.locate(rel.oid)
    vm = segments(loc[0] + "_vm") if loc is not None else []
    return evidence_for(btree_files(cat, rel, segments), key_from_files(cat, rel), blocks, vm, block_size, recovered)


def for_relation_file(
    path: Path, blocks: list[int], cache: dict[Path, Any] | None = None
) -> tuple[str, list[PageLoss]] | None:
    """For a relation file inside a data directory (the cluster stopped, or a copy): the table's name and the
    account of ``blocks``; None when the file or its catalog cannot be placed, or it holds no rows. ``cache``
    keeps each data directory's catalog between calls."""
    from pgsurgeon.catalog.files import CatalogUnreadable, FilesCatalog, file_key, relation_index

    found = file_key(path)
    if found is None or "_" in path.name:  # a fork (_vm, _fsm) holds no rows
        return None
    pgdata, fkey = found
    cache = {} if cache is None else cache
    try:
        if pgdata not in cache:
            fc = FilesCatalog(pgdata)
            cache[pgdata] = (fc, relation_index(fc)[0], {})
        fc, rels, dbcats = cache[pgdata]
        rel = rels.get(fkey)
        db = next((d for d in fc.databases() if d.oid == fkey[1]), None)
        if rel is None or db is None or rel.relkind not in ("r", "m", "t"):
            return None
        if db.oid not in dbcats:
            dbcats[db.oid] = fc.database(db)
        label = f"{rel.database}.{rel.qualified}" if rel.database else rel.qualified
        return label, from_files(dbcats[db.oid], rel, blocks, in_data_directory(pgdata), fc.block_size)
    except (ValueError, OSError, CatalogUnreadable):
        return None


# ---------------------------------------------------------------- findings


ZEROED = "page_header.zeroed_referenced"


def zero_page_message(page: PageLoss) -> str:
    return f"all-zero page: {page.sentence()}"


def zero_page_finding(path: Path, block: int) -> list[Finding]:
    """``page_header.zeroed_referenced`` for an all-zero ``block`` of a relation file when the table's indexes name
    rows on it (what scan reports for the same page, in the same words), else nothing."""
    found = for_relation_file(path, [block])
    if found is None or not found[1] or not (found[1][0].gone or found[1][0].dead):
        return []
    area, severity, pg_error, remedy = core.describe_code(ZEROED)
    return [
        {
            "code": ZEROED,
            "area": area,
            "severity": "error" if severity == "error" else "warning",
            "block": block,
            "item": None,
            "message": zero_page_message(found[1][0]),
            "pg_error": pg_error,
            "remedy": remedy,
        }
    ]


def reword_zero_pages(findings: Sequence[Any], pgdata: Path) -> None:
    """Give scan's and diagnose's all-zero-page findings the account's words: the rows, not the index entries."""
    by_file: dict[str, list[Any]] = {}
    cache: dict[Path, Any] = {}
    for f in findings:
        if f["code"] == ZEROED and f.get("path") and f.get("block") is not None:
            by_file.setdefault(str(f["path"]), []).append(f)
    for path, group in by_file.items():
        full = Path(path) if Path(path).is_absolute() else pgdata / path
        found = for_relation_file(full, sorted({int(f["block"]) for f in group if f["block"] is not None}), cache)
        if found is None:
            continue
        pages = {p.block: p for p in found[1]}
        for f in group:
            page = pages.get(int(f["block"] or 0))
            if page is not None and (page.gone or page.dead):
                f["message"] = zero_page_message(page)
