"""amcheck's messages mapped to pgsurgeon's finding codes.

``verify_heapam`` returns one row per problem (block, line pointer, attribute, message); its messages are mapped
here to the codes the core uses (crates/core/src/finding/mod.rs), so a problem reads the same whether the offline scan,
the page decoder or amcheck saw it. ``bt_index_check`` raises one ERROR for the first problem; the block it is
about is taken from the message or its DETAIL.

The message texts are those of contrib/amcheck/verify_heapam.c and verify_nbtree.c in PostgreSQL 14-18.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

HEAP_GENERIC = "amcheck.heap"
TOAST_GENERIC = "amcheck.toast"
BTREE_GENERIC = "amcheck.btree"


@dataclass(frozen=True)
class HeapRule:
    source: str
    code: str
    area: str

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on the first message: the ~50 rules took ~7 ms of every diagnose's start, damage or not."""
        return re.compile(self.source)


def _r(pattern: str, code: str, area: str) -> HeapRule:
    return HeapRule(pattern, code, area)


_N = r"-?\d+"
HEAP_RULES: tuple[HeapRule, ...] = (
    # line pointers (verify_heapam's main loop)
    _r(
        rf"^line pointer redirection to item at offset {_N} (precedes minimum|exceeds maximum) offset",
        "line_pointer.redirect_target",
        "line_pointer",
    ),
    _r(
        r"^redirected line pointer points to (an unused item|a dead item|another redirected line pointer)",
        "line_pointer.redirect_target",
        "line_pointer",
    ),
    _r(r"^redirected line pointer points to a non-heap-only tuple", "line_pointer.hot_chain", "line_pointer"),
    _r(
        r"^redirect line pointer points to offset \d+, but offset \d+ also points there",
        "line_pointer.hot_chain",
        "line_pointer",
    ),
    _r(
        r"^tuple points to new version at offset \d+, but offset \d+ also points there",
        "line_pointer.hot_chain",
        "line_pointer",
    ),
    _r(
        r"^(non-heap-only update produced a heap-only tuple|heap-only update produced a non-heap only tuple)",
        "line_pointer.hot_chain",
        "line_pointer",
    ),
    _r(
        r"^tuple with (in-progress|aborted) xmin \d+ was updated to produce a tuple",
        "line_pointer.hot_chain",
        "line_pointer",
    ),
    _r(r"^tuple is root of chain but is marked as heap-only tuple", "line_pointer.hot_chain", "line_pointer"),
    _r(r"^line pointer to page offset \d+ is not maximally aligned", "line_pointer.unaligned", "line_pointer"),
    _r(
        r"^line pointer length \d+ is less than the minimum tuple header size", "line_pointer.too_short", "line_pointer"
    ),
    _r(
        r"^line pointer to page offset \d+ with length \d+ ends beyond maximum page offset",
        "line_pointer.past_page",
        "line_pointer",
    ),
    # tuple headers
    _r(r"^data begins at offset \d+ beyond the tuple length", "tuple_header.hoff_gt_len", "tuple_header"),
    _r(r"^tuple data should begin at byte \d+, but actually begins at byte", "tuple_header.t_hoff", "tuple_header"),
    _r(r"^multixact should not be marked committed", "tuple_header.infomask", "tuple_header"),
    _r(r"^tuple has been HOT updated, but xmax is 0", "tuple_header.infomask", "tuple_header"),
    _r(r"^tuple is heap only, but not the result of an update", "tuple_header.infomask", "tuple_header"),
    _r(r"^old-style VACUUM FULL transaction ID", "tuple_header.infomask", "tuple_header"),
    _r(r"^(multitransaction ID is invalid|update xid is invalid)", "tuple_header.infomask", "tuple_header"),
    _r(r"^xmin \d+ equals or exceeds next valid transaction ID", "tuple_header.xmin_future", "tuple_header"),
    _r(
        r"^xmin \d+ precedes (oldest valid transaction ID|relation freeze threshold)",
        "tuple_header.xmin_old",
        "tuple_header",
    ),
    _r(
        r"^(xmax|update xid) \d+ equals or exceeds next valid transaction ID",
        "tuple_header.xmax_future",
        "tuple_header",
    ),
    _r(
        r"^(xmax|update xid) \d+ precedes (oldest valid transaction ID|relation freeze threshold)",
        "tuple_header.xmax_old",
        "tuple_header",
    ),
    _r(
        r"^multitransaction ID \d+ equals or exceeds next valid multitransaction ID",
        "tuple_header.multi_future",
        "tuple_header",
    ),
    _r(
        r"^multitransaction ID \d+ precedes (relation minimum|oldest valid) multitransaction ID",
        "tuple_header.multi_old",
        "tuple_header",
    ),
    # attributes
    _r(r"^number of attributes \d+ exceeds maximum expected for table", "tuple_data.natts_gt_relation", "tuple_data"),
    _r(
        r"^attribute with length \d+ (starts|ends) at offset \d+ beyond total tuple length",
        "tuple_data.attr_past_end",
        "tuple_data",
    ),
    # TOAST pointers in the table
    _r(r"^toasted attribute has unexpected TOAST tag", "toast.pointer_bad", "toast"),
    _r(rf"^toast value \d+ rawsize {_N} exceeds limit", "toast.pointer_bad", "toast"),
    _r(rf"^toast value \d+ has invalid compression method id {_N}", "toast.pointer_bad", "toast"),
    _r(r"^toast value \d+ is external but relation has no toast relation", "toast.pointer_bad", "toast"),
    _r(r"^toast value \d+ is external but tuple header flag HEAP_HASEXTERNAL not set", "toast.flag_missing", "toast"),
    # TOAST chunks (check_toast = true)
    _r(r"^toast value \d+ not found in toast table", "toast.value_missing", "toast"),
    _r(
        rf"^toast value \d+ was expected to end at chunk {_N}, but ended while expecting chunk",
        "toast.chunk_missing",
        "toast",
    ),
    _r(rf"^toast value \d+ index scan returned chunk {_N} when expecting chunk", "toast.chunk_unexpected", "toast"),
    _r(rf"^toast value \d+ chunk {_N} follows last expected chunk", "toast.chunk_unexpected", "toast"),
    _r(r"^toast value \d+ has toast chunk with null sequence number", "toast.chunk_unexpected", "toast"),
    _r(rf"^toast value \d+ chunk {_N} has size \d+, but expected size", "toast.chunk_size", "toast"),
    _r(rf"^toast value \d+ chunk {_N} has (invalid varlena header|null data)", "toast.chunk_header", "toast"),
    # PostgreSQL 14's wording for TOAST problems
    _r(r"^toasted value for attribute \d+ missing from toast table", "toast.value_missing", "toast"),
    _r(r"^toast value \d+ (found|has) .*chunk", "toast.chunk_unexpected", "toast"),
)

_TOAST_VALUE = re.compile(r"\btoast value (\d+)")


def classify_heap(message: str) -> tuple[str, str]:
    """(code, area) for one verify_heapam message; generic amcheck codes when no rule matches."""
    for rule in HEAP_RULES:
        if rule.pattern.search(message):
            return rule.code, rule.area
    if message.startswith("toast") or "toast" in message:
        return TOAST_GENERIC, "toast"
    return HEAP_GENERIC, "tuple_header"


def toast_value_id(message: str) -> int | None:
    """The TOAST value OID a verify_heapam message is about."""
    m = _TOAST_VALUE.search(message)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------- btree

_ZERO_PAGE = re.compile(r'index "[^"]*" contains unexpected zero page at block (\d+)')
_CORRUPTED_PAGE = re.compile(r'index "[^"]*" contains corrupted page at block (\d+)')
_INVALID_PAGE = re.compile(r'invalid page in block (\d+) of relation "?([^"\s;]+)"?')
_HEAP_TID = re.compile(r"heap tuple \((\d+),(\d+)\) from table")
# The index block a verify_nbtree DETAIL is about: "Index tid=(12,3)", "Block=7", "Target block=7", "block 7".
_BLOCK_HINTS = (
    re.compile(r"(?:Index|index|Target|Lower index|Higher index) tid=\((\d+),(\d+)\)"),
    re.compile(r"(?:Target block|Block)=(\d+)"),
    re.compile(r"\bblock (\d+)"),
)


@dataclass(frozen=True)
class BtreeError:
    code: str
    area: str
    block: int | None
    item: int | None
    heap_tid: tuple[int, int] | None = None
    """For "heap tuple (b,o) … lacks matching index tuple": the table row the index misses."""


def classify_btree(message: str, detail: str | None) -> BtreeError:
    """What one bt_index_check ERROR says, and where."""
    if m := _ZERO_PAGE.search(message):
        return BtreeError("index.zero_page", "index", int(m.group(1)), None)
    if m := _CORRUPTED_PAGE.search(message):
        return BtreeError(BTREE_GENERIC, "index", int(m.group(1)), None)
    if m := _INVALID_PAGE.search(message):
        return BtreeError("server.invalid_page", "page_header", int(m.group(1)), None)
    if m := _HEAP_TID.search(message):
        return BtreeError("index.missing_entry", "index", None, None, (int(m.group(1)), int(m.group(2))))
    for text in (detail or "", message):
        for rx in _BLOCK_HINTS:
            if m := rx.search(text):
                item = int(m.group(2)) if rx.groups == 2 else None
                return BtreeError(BTREE_GENERIC, "index", int(m.group(1)), item)
    return BtreeError(BTREE_GENERIC, "index", None, None)


def invalid_page_block(message: str) -> tuple[int, str] | None:
    """(block, relation path) of an "invalid page in block N of relation R" error (14-17 unquoted, 18 quoted)."""
    m = _INVALID_PAGE.search(message)
    return (int(m.group(1)), m.group(2)) if m else None


_READ_BLOCK = re.compile(r'could not read blocks? (\d+)(?:\.\.(\d+))? in file "([^"]+)"')
_OPEN_TARGET = re.compile(r'could not open file "([^"]+)" \(target block (\d+)\)')


def read_error_block(message: str) -> tuple[int, str] | None:
    """(block, file) of a short read or a missing segment error."""
    if m := _READ_BLOCK.search(message):
        return int(m.group(1)), m.group(3)
    if m := _OPEN_TARGET.search(message):
        return int(m.group(2)), m.group(1)
    return None
