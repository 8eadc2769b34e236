"""The corruption modes: what each damages, at which granularity, in which relation by default.

Page-level damage is done by the Rust core (``crates/core/src/inject/mod.rs``; its field lists are the
source of truth); the file-level modes (``truncate``, ``missing-segment``) are done here.
The symptoms each mode produces are in ``docs/corruption-modes.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgsurgeon import core

UNIT_PAGE = "page"
"""One damage per chosen block (``--count`` blocks)."""
UNIT_ITEM = "item"
"""One damage per chosen line pointer (``--count`` tuples)."""
UNIT_RELATION = "relation"
"""``--count`` damages spread over the relation (bit flips)."""
UNIT_FILE = "file"
"""A whole segment file is cut or removed."""
UNIT_MAP = "map"
"""A table's visibility map or free space map fork, planned by :mod:`pgsurgeon.simulate.maps`."""
UNIT_CLUSTER = "cluster"
"""The cluster's bookkeeping (pg_control, WAL, pg_xact, …), planned by :mod:`pgsurgeon.simulate.bookkeeping`."""

TARGET_TABLE = "table"
TARGET_TOAST = "toast"
TARGET_TOAST_INDEX = "toast-index"
TARGET_INDEX = "index"
TARGETS = (TARGET_TABLE, TARGET_TOAST, TARGET_TOAST_INDEX, TARGET_INDEX)


@dataclass(frozen=True)
class Mode:
    name: str
    unit: str
    summary: str
    default_target: str = TARGET_TABLE
    page_kind: str | None = None
    """``heap``, ``btree``, ``gin``, ``gist``, ``spgist``, ``hash`` or ``brin`` when the mode only makes sense on that
    page kind."""
    fields: tuple[str, ...] = ()
    """The first is the default."""
    item_fields: tuple[str, ...] = ()
    """Fields that damage one item (line pointer) rather than the page, for modes mixing both."""
    value_fields: tuple[str | None, ...] = ()
    """Fields that take ``--value N`` (None: the mode itself, when it has no fields)."""
    tid_fields: tuple[str, ...] = ()
    """Fields that take ``--value BLOCK,OFFSET``."""

    def unit_for(self, field: str | None) -> str:
        if self.unit == UNIT_PAGE and field is not None and field in self.item_fields:
            return UNIT_ITEM
        return self.unit

    def default_field(self) -> str | None:
        return self.fields[0] if self.fields else None


def _core_fields() -> dict[str, tuple[str, ...]]:
    return {m["mode"]: tuple(m["fields"]) for m in core.inject_modes()}


def _build() -> dict[str, Mode]:
    f = _core_fields()
    modes = [
        Mode(
            "header",
            UNIT_PAGE,
            "page header fields (pd_lsn, pd_flags, pd_lower, …) or all 24 bytes random",
            fields=f["header"],
            value_fields=tuple(x for x in f["header"] if x != "random"),
        ),
        Mode("item-ids", UNIT_PAGE, "the whole line pointer (item ID) array filled with random bytes"),
        Mode(
            "item-id",
            UNIT_ITEM,
            "one line pointer: its offset, length or flags, or the whole word",
            fields=f["item-id"],
            value_fields=f["item-id"],
        ),
        Mode(
            "tuple-header",
            UNIT_ITEM,
            "heap tuple header fields (xmin, xmax, ctid, infomask, t_hoff, …) or all 23 bytes random",
            page_kind="heap",
            fields=f["tuple-header"],
            value_fields=("t_xmin", "t_xmax", "t_field3", "t_infomask", "t_infomask2", "t_hoff"),
            tid_fields=("t_ctid",),
        ),
        Mode(
            "tuple-data",
            UNIT_ITEM,
            "heap tuple data: random bytes, bit flips, a varlena length",
            page_kind="heap",
            fields=f["tuple-data"],
            value_fields=("varlena",),
        ),
        Mode(
            "toast",
            UNIT_ITEM,
            "a TOAST chunk: its sequence number, value id, data, size, or the chunk itself",
            default_target=TARGET_TOAST,
            page_kind="heap",
            fields=f["toast"],
            value_fields=("chunk_seq", "chunk_id", "chunk_size"),
        ),
        Mode(
            "btree",
            UNIT_PAGE,
            "a btree page: an item's TID, the high key, sibling links, special space",
            default_target=TARGET_INDEX,
            page_kind="btree",
            fields=f["btree"],
            item_fields=("item",),
            value_fields=("siblings", "btpo_prev", "btpo_next", "btpo_level", "btpo_flags"),
            tid_fields=("item",),
        ),
        # issue 30, hash and BRIN indexes
        Mode(
            "hash",
            UNIT_PAGE,
            "a hash index page: the metapage's magic, a bucket page's type, an overflow page's next link, "
            "a bitmap bit, an item's hash code or heap TID",
            default_target=TARGET_INDEX,
            page_kind="hash",
            fields=f["hash"],
            item_fields=("hash_code", "heap_tid"),
            value_fields=("metapage", "bucket", "overflow", "hash_code"),
            tid_fields=("heap_tid",),
        ),
        Mode(
            "brin",
            UNIT_PAGE,
            "a BRIN index page: the metapage's pagesPerRange, a revmap entry, a summary tuple's range",
            default_target=TARGET_INDEX,
            page_kind="brin",
            fields=f["brin"],
            value_fields=("metapage", "regular"),
            tid_fields=("revmap",),
        ),
        Mode(
            "gin",
            UNIT_PAGE,
            "a GIN page: an entry tuple's posting list or item count, an internal downlink, a posting tree leaf, "
            "a pending list tuple, the metapage's pending list head",
            default_target=TARGET_INDEX,
            page_kind="gin",
            fields=f["gin"],
            value_fields=("entry-leaf", "entry-internal", "metapage"),
        ),
        # Issue 30, GiST and SP-GiST part.
        Mode(
            "gist",
            UNIT_PAGE,
            "a GiST page: an inner page's downlink, a leaf's heap TID, the right-link, the NSN or the flags",
            default_target=TARGET_INDEX,
            page_kind="gist",
            fields=f["gist"],
            value_fields=("downlink", "rightlink", "nsn", "flags"),
            tid_fields=("leaf_tid",),
        ),
        Mode(
            "spgist",
            UNIT_PAGE,
            "an SP-GiST page: an inner tuple's node downlink, a leaf chain's nextOffset, the metapage's magic number",
            default_target=TARGET_INDEX,
            page_kind="spgist",
            fields=f["spgist"],
            value_fields=("leaf_chain", "meta"),
            tid_fields=("inner",),
        ),
        Mode("checksum", UNIT_PAGE, "pd_checksum alone (the data stays intact)", value_fields=(None,)),
        Mode("zero", UNIT_PAGE, "the whole page zeroed"),
        Mode("torn", UNIT_PAGE, "torn page: the page from --tear-at on comes from another block or an older copy"),
        Mode("misdirected", UNIT_PAGE, "misdirected write: another block's image written over this block"),
        Mode("bitflips", UNIT_RELATION, "--count random bit flips spread over the relation"),
        Mode(
            "vm",
            UNIT_MAP,
            "the visibility map: heap block --block marked all-visible (or all-frozen) whatever its tuples",
            page_kind="heap",
            fields=f["vm"],
        ),
        Mode(
            "fsm",
            UNIT_MAP,
            "the free space map: free space recorded past the table's end, or an upper node of a leaf page wrong",
            page_kind="heap",
            fields=f["fsm"],
        ),
        Mode("truncate", UNIT_FILE, "the segment file cut at a block boundary (or inside a block with --tear-at)"),
        Mode("missing-segment", UNIT_FILE, "a whole segment file removed"),
        *_bookkeeping_modes(),
    ]
    for m in modes:
        if m.unit in (UNIT_PAGE, UNIT_ITEM, UNIT_RELATION, UNIT_MAP) and m.name not in f:
            raise RuntimeError(f"the core does not know mode {m.name}")
    return {m.name: m for m in modes}


def _bookkeeping_modes() -> list[Mode]:
    """Modes on the cluster's own files (-D only; --file picks the segment where there is a choice)."""
    control = ("crc", "truncate", "checkpoint", "version", "next-xid", "next-multi")
    wal = ("checkpoint-segment", "empty", "truncate", "checkpoint-record", "checkpoint-rmid", "page-header", "record")
    slru = ("remove", "zero", "page")
    multi = tuple(f"{part}-{f}" for part in ("offsets", "members") for f in slru)
    return [
        Mode(
            "control",
            UNIT_CLUSTER,
            "pg_control: its CRC, a field (CRC kept valid), or the file cut",
            fields=control,
            value_fields=control,
        ),
        Mode(
            "wal",
            UNIT_CLUSTER,
            "WAL: the checkpoint's segment removed or cut, pg_wal emptied, the checkpoint "
            "record's body, resource manager or page header, or an earlier record",
            fields=wal,
            value_fields=("checkpoint-rmid",),
        ),
        Mode(
            "xact",
            UNIT_CLUSTER,
            "pg_xact (commit status): a segment removed or zeroed, or a page garbled",
            fields=slru,
            value_fields=("page",),
        ),
        Mode(
            "subtrans",
            UNIT_CLUSTER,
            "pg_subtrans: a segment removed or a page garbled (a clean shutdown leaves it zeroed)",
            fields=("remove", "page"),
            value_fields=("page",),
        ),
        Mode(
            "multixact",
            UNIT_CLUSTER,
            "pg_multixact offsets or members: a segment removed or zeroed, or a page garbled",
            fields=multi,
            value_fields=("offsets-page", "members-page"),
        ),
        Mode(
            "relmap",
            UNIT_CLUSTER,
            "pg_filenode.map of a database (or global/): its mappings garbled",
            fields=("database", "global"),
        ),
        Mode("orphan-file", UNIT_CLUSTER, "a relation file no catalog names, holding copies of real pages"),
    ]


MODES: dict[str, Mode] = _build()


def modes_help() -> str:
    """One line per mode (and one for its fields), for ``--help``."""
    lines = []
    for m in MODES.values():
        lines.append(f"  {m.name:<16} {m.summary}")
        if m.fields:
            lines.append(f"  {'':<16}   fields: {', '.join(m.fields)} (default {m.fields[0]})")
    return "\n".join(lines)
