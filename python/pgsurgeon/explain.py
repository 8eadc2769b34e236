"""``pgsurgeon explain``: what a PostgreSQL error about damaged data means, which kinds of damage produce it, and
what to run next with the values taken from the message.

A catalogue of message patterns (the server's wording in PostgreSQL 14-18, amcheck's, pg_amcheck's and
pg_checksums'), each with a plain-words meaning, the ``pgsurgeon corrupt`` modes that reproduce it (names from
``pgsurgeon.simulate.modes``) and next steps. :func:`explain_text` takes one message or a log excerpt: every
recognised line is explained once (repeats are counted), DETAIL/HINT/CONTEXT lines are read with the line
they belong to.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgsurgeon import db, exitcodes
from pgsurgeon.diagnose import amcheck as amcheck_map

XIDS_PER_XACT_FILE = 1_048_576  # 32768 XIDs per 8 KB page, 32 pages per SLRU segment
RELSEG_BLOCKS = 131_072  # 1 GB segments of 8 KB blocks


@dataclass(frozen=True)
class ModeRef:
    """A ``pgsurgeon corrupt`` mode (and fields) that produces the message, and under which condition."""

    mode: str
    fields: tuple[str, ...] = ()
    when: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "fields": list(self.fields), "when": self.when}

    def text(self) -> str:
        out = self.mode
        if self.fields:
            out += f" ({', '.join(self.fields)})"
        if self.when:
            out += f" — {self.when}"
        return out


@dataclass(frozen=True)
class Step:
    what: str
    command: str
    kind: str = "shell"
    """shell, sql or note."""


@dataclass(frozen=True)
class Pattern:
    id: str
    regex: re.Pattern[str]
    title: str
    meaning: str
    modes: tuple[ModeRef, ...]
    steps: tuple[Step, ...]
    extras: tuple[tuple[str, str], ...] = ()
    """(value that must be present, sentence added to the meaning)."""
    derive: Callable[[dict[str, str]], None] | None = None


@dataclass
class Explanation:
    pattern: Pattern
    line: str
    values: dict[str, str]
    count: int = 1
    context: list[str] = field(default_factory=list)

    def meaning(self) -> str:
        text = _fill(self.pattern.meaning, self.values) or self.pattern.meaning
        for key, sentence in self.pattern.extras:
            if self.values.get(key):
                filled = _fill(sentence, self.values)
                if filled:
                    text += " " + filled
        return text

    def steps(self) -> list[Step]:
        out = []
        for s in self.pattern.steps:
            what, command = _fill(s.what, self.values), _fill(s.command, self.values)
            if what is not None and command is not None:
                out.append(Step(what, command, s.kind))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.pattern.id,
            "title": self.pattern.title,
            "line": self.line,
            "count": self.count,
            "context": self.context,
            "values": self.values,
            "meaning": self.meaning(),
            "modes": [m.to_json() for m in self.pattern.modes],
            "next": [{"what": s.what, "command": s.command, "kind": s.kind} for s in self.steps()],
        }


def _fill(template: str, values: dict[str, str]) -> str | None:
    """``template`` with ``{name}`` filled in, or None when a value it needs is missing."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    if any(n not in values for n in names):
        return None
    return template.format(**values)


# ------------------------------------------------------------------------------------------ derived values

_RELPATH = re.compile(
    r"(?:^|/)(?P<rel>(?:base/(?P<dboid>\d+)|global|pg_tblspc/(?P<spc>\d+)/[^/]+/(?P<spcdb>\d+))/(?:t\d+_)?(?P<filenode>\d+)"
    r"(?:_(?P<fork>fsm|vm|init))?(?:\.(?P<segment>\d+))?)$"
)


def _relpath(values: dict[str, str], key: str = "relpath") -> None:
    """From a relation path (base/5/16384, global/1262, pg_tblspc/…, with _vm or .1): database OID, filenode,
    fork, segment, and the segment-0 file to give ``pgsurgeon inspect``."""
    m = _RELPATH.search(values.get(key, "").strip('"'))
    if not m:
        return
    path = m.group("rel")  # pg_checksums prints absolute paths
    dboid = m.group("dboid") or m.group("spcdb")
    values["filenode"] = m.group("filenode")
    values["fork"] = m.group("fork") or "main"
    if m.group("fork") in ("vm", "fsm"):
        values["fork_note"] = (
            f"The page is in the {m.group('fork')} fork, a map the server can rebuild (VACUUM rebuilds the free space "
            "map; pg_visibility's pg_truncate_visibility_map() clears the visibility map): the table's rows are not "
            "in it."
        )
    values["relfile"] = path.rsplit(".", 1)[0] if m.group("segment") else path
    if m.group("segment"):
        values["segment"] = m.group("segment")
    if dboid:
        values["dboid"] = dboid
        values["where_db"] = f"in the database with OID {dboid} (SELECT datname FROM pg_database WHERE oid = {dboid})"
        values["scan_db"] = f" --database {dboid}"
    else:
        values["dboid"] = "0"
        values["where_db"] = "in any database (global/ holds the shared catalogs)"
        values["scan_db"] = ""


def _derive_relpath(values: dict[str, str]) -> None:
    _relpath(values)


def _derive_file(values: dict[str, str]) -> None:
    values["relpath"] = values.get("file", "")
    _relpath(values)


def _derive_pg_checksums(values: dict[str, str]) -> None:
    _derive_file(values)
    seg = int(values.get("segment") or 0)
    values["block"] = str(seg * RELSEG_BLOCKS + int(values["segblock"]))


def _derive_xid(values: dict[str, str]) -> None:
    xid = int(values["xid"])
    values["xact_file"] = f"pg_xact/{xid // XIDS_PER_XACT_FILE:04X}"


def _derive_checksum(values: dict[str, str]) -> None:
    diff = abs(int(values["calc"]) - int(values["stored"]))
    if 0 < diff < 64:
        values["close"] = str(diff)


def _derive_amcheck(values: dict[str, str]) -> None:
    if values.get("table", "").count(".") >= 2:  # pg_amcheck prints database.schema.table
        values["table"] = values["table"].split(".", 1)[1]
    code, _area = amcheck_map.classify_heap(values["msg"])
    values["code"] = code
    values["family"] = _AMCHECK_FAMILY.get(code.split(".")[0], "")
    if values.get("table") and values.get("block"):
        where = f"block {values['block']}" + (f", line pointer {values['offset']}" if values.get("offset") else "")
        values["where"] = where


_AMCHECK_FAMILY = {
    "line_pointer": "the page's line pointer (item ID) array holds values that cannot be right: the array is "
    "overwritten, so the rows on this page are read from wrong places (garbage values, allocation errors or a "
    "crashed backend when a query reads them)",
    "tuple_header": "a tuple header (xmin/xmax, infomask bits, t_hoff) is inconsistent: the row's visibility or "
    "layout is wrong, queries may hide it, fail on it (could not access status of transaction, MultiXactId errors) "
    "or crash",
    "tuple_data": "a column value's length or the attribute count does not fit the tuple: reading the row returns "
    "wrong values, fails with invalid memory alloc request size, or crashes the backend",
    "toast": "a TOAST pointer or the TOAST chunks of a value are wrong: reading that column fails (missing chunk "
    "number, unexpected chunk number/size, invalid compression method)",
    "amcheck": "amcheck found the tuple inconsistent",
}


# ------------------------------------------------------------------------------------------ the catalogue

_CHECKSUMMED = "with data checksums on and the stored checksum left as it was (the default)"
_ANY_PAGE_WITH_CHECKSUMS = (
    ModeRef("item-ids", (), _CHECKSUMMED),
    ModeRef("item-id", (), _CHECKSUMMED),
    ModeRef("tuple-header", (), _CHECKSUMMED),
    ModeRef("tuple-data", (), _CHECKSUMMED),
    ModeRef("toast", (), _CHECKSUMMED),
    ModeRef("btree", (), _CHECKSUMMED),
)
_CHECKSUM_MODES = (
    ModeRef("checksum", (), "with data checksums on"),
    ModeRef("torn", (), "with data checksums on"),
    ModeRef("misdirected", (), "with data checksums on"),
    ModeRef("bitflips", (), "with data checksums on"),
)

_INSPECT = Step(
    "decode the page offline, including a page the server refuses",
    'pgsurgeon inspect "$PGDATA/{relfile}" --block {block}',
)
_SCAN_REL = Step(
    "find every damaged page of this relation (offline; --live on a running server)",
    'pgsurgeon scan "$PGDATA"{scan_db} --relation {filenode} --live',
)
_FIND_REL = Step(
    "name the relation ({where_db})",
    "SELECT oid::regclass AS relation, relkind FROM pg_class WHERE pg_relation_filenode(oid) = {filenode};",
    "sql",
)
_DIAGNOSE_REL = Step(
    "check it through SQL, continuing past every damaged page (read-only)",
    'pgsurgeon diagnose --dsn "$DSN" --table <the relation found above>',
)
_DIAGNOSE = Step(
    "find the damaged block and line pointer: pages are read raw and amcheck runs only where it is safe",
    'pgsurgeon diagnose --dsn "$DSN"',
)
_DIAGNOSE_TABLE = Step(
    "check that table: it names the row and the TOAST block and line pointer of the bad chunk",
    'pgsurgeon diagnose --dsn "$DSN" --table {table}',
)
_SCAN_ALL = Step("the same offline, over the data directory", 'pgsurgeon scan "$PGDATA" --live')
_NO_ZERO = Step(
    "do not SET zero_damaged_pages or run VACUUM on the table before the rows are saved",
    "zero_damaged_pages turns the page into an empty one in memory, and any later write makes the loss permanent",
    "note",
)
_TOAST_TABLE = Step(
    "name the table that owns the TOAST table",
    "SELECT c.oid::regclass AS table_name FROM pg_class c WHERE c.reltoastrelid = 'pg_toast.{toast}'::regclass;",
    "sql",
)
_TOAST_DIAGNOSE = Step(
    "find the row and the bad chunk (TOAST value {value})",
    'pgsurgeon diagnose --dsn "$DSN" --table <the table found above>',
)
_INDEX_TABLE = Step(
    "name the table of the index",
    "SELECT indrelid::regclass AS table_name FROM pg_index WHERE indexrelid = '{index_sql}'::regclass;",
    "sql",
)
_REINDEX = Step(
    "rebuild the index from the table once the table is known sound (an index holds no data of its own)",
    "REINDEX INDEX CONCURRENTLY {index_sql};",
    "sql",
)
_CONTROL = Step("compare the value with the cluster's XID and MultiXact horizons", 'pgsurgeon control "$PGDATA"')

_TUPLE_XID_MODES = (
    ModeRef("tuple-header", ("t_xmin",), "with --clear-hints (an old XID the server has to look up)"),
    ModeRef("tuple-header", ("t_xmax",), "with --clear-hints"),
    ModeRef("tuple-header", ("random",)),
)
_MULTI_MODES = (
    ModeRef("tuple-header", ("t_xmax", "t_infomask"), "an xmax read as a MultiXactId (HEAP_XMAX_IS_MULTI set)"),
    ModeRef("tuple-header", ("random",)),
)
_CRASH_MODES = (
    ModeRef("item-ids"),
    ModeRef("item-id", ("lp_off", "lp_len")),
    ModeRef("tuple-header", ("t_hoff", "t_infomask2", "random")),
    ModeRef("tuple-data", ("varlena", "random")),
)


def _p(
    id: str,
    regex: str,
    title: str,
    meaning: str,
    modes: tuple[ModeRef, ...],
    steps: tuple[Step, ...],
    extras: tuple[tuple[str, str], ...] = (),
    derive: Callable[[dict[str, str]], None] | None = None,
) -> Pattern:
    return Pattern(id, re.compile(regex, re.IGNORECASE), title, meaning, modes, steps, extras, derive)


_QUOTED_INDEX = r'index "(?P<index>[^"]+)"'

PATTERNS: tuple[Pattern, ...] = (
    _p(
        "invalid_page",
        r'invalid page(?: header)? in block (?P<block>\d+) of relation "?(?P<relpath>[^"\s;]+)"?(?P<zeroing>;'
        r" zeroing out page)?",
        "the server refuses a page",
        "Block {block} of {relpath} failed the check every page gets when it is read: its header is impossible "
        "(pd_lower, pd_upper and pd_special out of order, unknown pd_flags bits, or pd_upper = 0 on a page that is "
        "not all zeroes) or, with data checksums on, its checksum does not match its contents. The server refuses "
        "the whole page: every query that reaches it fails, and a sequential scan of the table stops there. The "
        "rows in it are usually still in the file and can be carved out.",
        (
            ModeRef("header", ("pd_lower", "pd_upper", "pd_special", "pd_flags", "random")),
            *_CHECKSUM_MODES,
            *_ANY_PAGE_WITH_CHECKSUMS,
        ),
        (_INSPECT, _SCAN_REL, _FIND_REL, _DIAGNOSE_REL, _NO_ZERO),
        extras=(
            (
                "zeroing",
                "'; zeroing out page' means zero_damaged_pages (or a visibility map/FSM read) made the "
                "server use an empty page instead: the rows vanish from query results, and for good once the page is "
                "written back.",
            ),
            ("fork_note", "{fork_note}"),
        ),
        derive=_derive_relpath,
    ),
    _p(
        "invalid_pages",
        r'(?P<count>\d+) invalid pages among blocks (?P<first>\d+)\.\.(?P<last>\d+) of relation "(?P<relpath>[^"]+)"',
        "the server refuses several pages of one read (PostgreSQL 18)",
        "{count} pages among blocks {first}..{last} of {relpath} failed the read-time check (bad header or checksum). "
        "PostgreSQL 18 reads several blocks at once and reports them together; the DETAIL names the first, the "
        "server log the others.",
        (ModeRef("header"), *_CHECKSUM_MODES, *_ANY_PAGE_WITH_CHECKSUMS),
        (
            Step("decode the first of them offline", 'pgsurgeon inspect "$PGDATA/{relfile}" --block {first}'),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
            _NO_ZERO,
        ),
        derive=_derive_relpath,
    ),
    _p(
        "checksum_failed",
        r"page verification failed, calculated checksum (?P<calc>\d+) but expected (?P<stored>\d+)",
        "a page checksum does not match",
        "A page's contents no longer match the checksum stored in it when it was written: the bytes changed on disk "
        "or on the way (bit flips, a torn or misdirected write, a storage or firmware bug), or something other than "
        "PostgreSQL wrote the file. PostgreSQL 14-17 send this as a WARNING right before 'invalid page in block N "
        "of relation R', which names the block; 18 writes it to the server log only (LOG level).",
        (*_CHECKSUM_MODES, ModeRef("header", (), _CHECKSUMMED), *_ANY_PAGE_WITH_CHECKSUMS),
        (
            Step(
                "find the block: the 'invalid page in block' line that follows it in the log",
                "grep -A2 'page verification failed' \"$PGLOG\"",
            ),
            Step(
                "every checksum failure of the cluster with its cause (offline; --live on a running server)",
                'pgsurgeon scan "$PGDATA" --live',
            ),
            _NO_ZERO,
        ),
        extras=(
            (
                "close",
                "The two values differ by only {close}: the page is probably intact but belongs to another "
                "block (the checksum includes the block number), i.e. a misdirected write or swapped blocks.",
            ),
        ),
        derive=_derive_checksum,
    ),
    _p(
        "checksum_ignored",
        r"ignoring (?:checksum failure in block (?P<block>\d+)|(?P<count>\d+) checksum failures among blocks "
        r'(?P<first>\d+)\.\.(?P<last>\d+)) of relation "(?P<relpath>[^"]+)"',
        "a checksum failure ignored (ignore_checksum_failure = on)",
        "The page failed its checksum but was used anyway because ignore_checksum_failure is on. The next change to "
        "the page (even a hint bit) writes it back with a fresh, valid checksum: the evidence disappears and any "
        "damage becomes permanent.",
        _CHECKSUM_MODES,
        (
            Step(
                "turn it off again unless you are salvaging on purpose",
                "ALTER SYSTEM RESET ignore_checksum_failure; SELECT pg_reload_conf();",
                "sql",
            ),
            _INSPECT,
            _SCAN_REL,
            _FIND_REL,
        ),
        derive=_derive_relpath,
    ),
    _p(
        "pg_checksums",
        r'checksum verification failed in file "(?P<file>[^"]+)", block (?P<segblock>\d+): calculated checksum '
        r"(?P<calc>[0-9A-F]+) but block contains (?P<stored>[0-9A-F]+)",
        "pg_checksums found a bad checksum",
        "Offline pg_checksums found block {segblock} of segment file {file} with a wrong checksum (block {block} "
        "counted across segments, as the server counts it). The page changed after it was written.",
        _CHECKSUM_MODES,
        (_INSPECT, _SCAN_REL, _FIND_REL),
        derive=_derive_pg_checksums,
    ),
    _p(
        "xact_status",
        r"could not access status of transaction (?P<xid>\d+)",
        "a tuple names a transaction whose commit status is gone",
        "A row's xmin or xmax says transaction {xid} inserted or deleted it. The row has no hint bits saying whether "
        "that transaction committed, so the server looks it up in {xact_file}, and that file is gone (removed long "
        "ago as older than the oldest transaction still needed) or too short. Almost always the XID in the tuple "
        "header is garbage rather than a real old transaction. Every query that reaches the row fails; VACUUM of the "
        "table fails too.",
        _TUPLE_XID_MODES,
        (
            _CONTROL,
            Step("see which commit-status files exist ({xact_file} is the one wanted)", 'ls "$PGDATA/pg_xact"'),
            Step(
                "find the row: amcheck reports its xmin/xmax as outside the valid range",
                'pgsurgeon diagnose --dsn "$DSN"',
            ),
            _SCAN_ALL,
            Step(
                "do not create a zero-filled {xact_file} to make the error go away before saving the rows",
                "a fake status file makes the server treat the garbage XID as aborted or in progress: rows vanish",
                "note",
            ),
        ),
        extras=(("slru", "The DETAIL names the file it wanted: {slru}."),),
        derive=_derive_xid,
    ),
    _p(
        "multixact_future",
        r"MultiXactId (?P<multi>\d+) has not been created yet -- apparent wraparound",
        "a tuple names a MultiXactId from the future",
        "A row's xmax is flagged as a MultiXactId (a group of lockers/updaters) and names {multi}, which the cluster "
        "has not handed out yet. The xmax or its infomask bits are damaged; every query that checks the row's "
        "visibility fails.",
        _MULTI_MODES,
        (_CONTROL, _DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "multixact_gone",
        r"MultiXactId (?P<multi>\d+) does no longer exist -- apparent wraparound",
        "a tuple names a MultiXactId that was already removed",
        "A row's xmax is flagged as a MultiXactId and names {multi}, older than the oldest one the cluster still "
        "keeps. The xmax or its infomask bits are damaged (or the row escaped freezing); queries on the row fail.",
        _MULTI_MODES,
        (_CONTROL, _DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "toast_chunk_number",
        r"unexpected chunk number (?P<chunk>-?\d+) \((?:expected (?P<expected>-?\d+)|"
        r"out of range (?P<lo>-?\d+)\.\.(?P<hi>-?\d+))\) "
        r"for toast value (?P<value>\d+) in (?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST value's chunks are out of sequence",
        "A large column value (TOAST value {value}, stored in {toast}) is kept as numbered chunks found through the "
        "TOAST table's index. The index returned a chunk whose sequence number is {chunk}: the chunk's chunk_seq "
        "was overwritten, a chunk of another value took its place, or the TOAST index points to the wrong tuple. "
        "Only this column of one row is unreadable; the rest of the row is intact.",
        (
            ModeRef("toast", ("chunk_seq",)),
            ModeRef("toast", ("chunk_id",)),
            ModeRef("btree", ("item",), "on the TOAST index (--target toast-index)"),
        ),
        (
            _TOAST_TABLE,
            _TOAST_DIAGNOSE,
            Step("rebuild the TOAST index if diagnose blames it", "REINDEX TABLE pg_toast.{toast};", "sql"),
        ),
    ),
    _p(
        "toast_missing_chunk",
        r"missing chunk number (?P<chunk>\d+) for toast value (?P<value>\d+) in"
        r" (?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST value's chunk is missing",
        "Chunk {chunk} of TOAST value {value} is not found in {toast}. Chunk 0 missing usually means the whole value "
        "is gone, or the row's TOAST pointer is damaged and names a value that never existed; a later chunk means "
        "the chunk was removed, zeroed, truncated away or renumbered. Only this column of one row is unreadable.",
        (
            ModeRef("toast", ("missing", "chunk_id", "chunk_seq")),
            ModeRef("tuple-data", ("varlena",), "on a column stored out of line (its TOAST pointer)"),
            ModeRef("zero", (), "on the TOAST table (--target toast)"),
            ModeRef("truncate", (), "on the TOAST table"),
        ),
        (_TOAST_TABLE, _TOAST_DIAGNOSE),
    ),
    _p(
        "toast_chunk_size",
        r"unexpected chunk size (?P<size>-?\d+) \(expected (?P<expected>-?\d+)\) in (?:final )?chunk"
        r" (?P<chunk>-?\d+) of "
        r"(?P<total>-?\d+) for toast value (?P<value>\d+) in (?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST chunk has the wrong size",
        "Chunk {chunk} of TOAST value {value} in {toast} holds {size} bytes where {expected} were expected: the "
        "chunk's length word (its varlena header) or the row's TOAST pointer (the value's size) is damaged.",
        (
            ModeRef("toast", ("chunk_size", "chunk_data")),
            ModeRef("tuple-data", ("varlena",), "on a TOAST pointer"),
        ),
        (_TOAST_TABLE, _TOAST_DIAGNOSE),
    ),
    _p(
        "toast_toasted_chunk",
        r"found toasted toast chunk for toast value (?P<value>\d+) in (?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST chunk's header looks compressed",
        "The chunk_data of a chunk of TOAST value {value} in {toast} has a varlena header flagged as compressed or "
        "external, which chunks never are: the first bytes of the chunk are damaged.",
        (ModeRef("toast", ("chunk_data",)),),
        (_TOAST_TABLE, _TOAST_DIAGNOSE),
    ),
    _p(
        "alloc_size",
        r"invalid memory alloc request size (?P<size>\d+)",
        "the server was asked for an impossible amount of memory",
        "While reading a row the server computed a length of {size} bytes (over 1 GB) and refused to allocate it. "
        "The length came from the data: a column's varlena header, a compressed value's raw size, a TOAST pointer, "
        "or a tuple read from the wrong place because its line pointer or t_hoff is damaged. The message does not "
        "say where: the query's table is in the log's STATEMENT or CONTEXT line.",
        (
            ModeRef("tuple-data", ("varlena", "random", "bitflip")),
            ModeRef("item-ids"),
            ModeRef("item-id", ("lp_off", "lp_len")),
            ModeRef("tuple-header", ("t_hoff", "t_infomask2")),
            ModeRef("toast", ("chunk_size",)),
        ),
        (_DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "short_read",
        r'could not read blocks? (?P<block>\d+)(?:\.\.(?P<last>\d+))? in file "(?P<file>[^"]+)": read only'
        r" (?P<got>\d+) of (?P<want>\d+) bytes",
        "a relation file is shorter than the server expects",
        "The server wanted block {block} from {file} and the file ended before it (read {got} of {want} bytes): the "
        "file was truncated or a write was torn at the end. A sequential scan silently stops at the end of the file; "
        "this error comes from an index scan following an entry into the missing part.",
        (ModeRef("truncate"), ModeRef("missing-segment", (), "when the missing segment is the last one")),
        (
            Step("compare the file sizes with the block numbers", 'ls -l "$PGDATA/{relfile}"*'),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
        ),
        derive=_derive_file,
    ),
    _p(
        "missing_segment",
        r'could not open file "(?P<file>(?:base|global|'
        r'pg_tblspc)/[^"]+)"(?: \(target block (?P<block>\d+)\))?: (?P<reason>[^.]+)',
        "a relation file or segment cannot be opened",
        "The server needed {file} and could not open it ({reason}). For a relation larger than 1 GB each gigabyte is "
        "a separate segment file (.1, .2, …); a missing one loses its blocks and, for an index scan, fails like this.",
        (ModeRef("missing-segment"),),
        (
            Step("see which segments exist", 'ls -l "$PGDATA/{relfile}"*'),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
        ),
        extras=(("block", "It was looking for block {block}."),),
        derive=_derive_file,
    ),
    _p(
        "read_io_error",
        r'could not read blocks? (?P<block>\d+)(?:\.\.\d+)? in file "(?P<file>[^"]+)": (?P<reason>(?!read only)[^\n]+)',
        "the operating system could not read a relation file",
        "Reading block {block} of {file} failed in the operating system ({reason}): a failing disk, a filesystem or "
        "permission problem, not damaged page contents. Copy what can be read before anything else.",
        (),
        (
            Step("look for disk errors", "dmesg | grep -i -E 'i/o error|medium|ata|nvme'", "shell"),
            _SCAN_REL,
            _FIND_REL,
        ),
        derive=_derive_file,
    ),
    _p(
        "index_zero_page",
        _QUOTED_INDEX + r" contains unexpected zero page at block (?P<block>\d+)",
        "an index page is all zeroes",
        "Block {block} of index {index} is all zeroes where the btree expects a page: the page was zeroed or never "
        "written (a crash while the index grew, zero_damaged_pages). An index holds no data of its own.",
        (ModeRef("zero", (), "on an index (--target index)"),),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", 'pgsurgeon diagnose --dsn "$DSN" --table <the table>'),
            _REINDEX,
        ),
    ),
    _p(
        "index_corrupted_page",
        _QUOTED_INDEX + r" contains corrupted page at block (?P<block>\d+)",
        "an index page's btree data is impossible",
        "Block {block} of index {index} passes the page checks but its btree special space is wrong (its size, flags "
        "or level), so the server will not use it.",
        (ModeRef("btree", ("special", "btpo_flags", "btpo_level")),),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", 'pgsurgeon diagnose --dsn "$DSN" --table <the table>'),
            _REINDEX,
        ),
    ),
    _p(
        "index_metapage",
        r'(?:version mismatch in index "(?P<index2>[^"]+)"|index "(?P<index>[^"]+)" is not a btree)',
        "an index's metapage is damaged",
        "Block 0 of index {index} (its metapage: magic number, version, root) is damaged, so the server cannot use "
        "the index at all.",
        (ModeRef("btree", ("special",), "on block 0"), ModeRef("zero", (), "on block 0 of an index")),
        (_INDEX_TABLE, _REINDEX),
    ),
    _p(
        "btree_amcheck",
        r"(?P<msg>(?:item order invariant violated|high key invariant violated|"
        r"cross page item order invariant violated|"
        r"downlink or sibling link points to deleted block|left link/right link pair|could not find tuple using search "
        r"from root page|index tuple size does not equal lp_len|line pointer points past end of tuple space|"
        r"block \d+ is not leftmost|block \d+ is not true root|leaf index block lacks downlink|"
        r"posting list contains misplaced TID|downlink lower bound invariant violated)[^\n]*?)for " + _QUOTED_INDEX,
        "amcheck found a btree index inconsistent",
        "amcheck's bt_index_check found index {index} inconsistent ({msg}): keys out of order, a broken sibling "
        "link or a damaged index tuple. Index scans may skip or repeat rows. The table's rows are not affected.",
        (ModeRef("btree", ("item", "high_key", "siblings", "btpo_prev", "btpo_next")),),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", 'pgsurgeon diagnose --dsn "$DSN" --table <the table>'),
            _REINDEX,
        ),
    ),
    _p(
        "index_missing_row",
        r'heap tuple \((?P<block>\d+),(?P<offset>\d+)\) from table "(?P<table>[^"]+)" lacks matching index tuple'
        r" within " + _QUOTED_INDEX,
        "a row is missing from its index",
        "amcheck (bt_index_check with heapallindexed) found the row at block {block}, line pointer {offset} of "
        "{table} without an entry in {index}: the index lost the entry, or the row's indexed columns (for a TOAST "
        "table: chunk_id or chunk_seq) changed on disk after it was indexed. Index scans miss that row.",
        (
            ModeRef("btree", ("item",)),
            ModeRef("toast", ("chunk_seq", "chunk_id"), "the TOAST index then lacks the chunk"),
            ModeRef("tuple-data", ("random", "bitflip"), "in an indexed column"),
        ),
        (
            Step("decode the row's page", 'pgsurgeon inspect --dsn "$DSN" --table {table} --block {block}'),
            _REINDEX,
        ),
    ),
    _p(
        "compressed_corrupt",
        r"compressed (?P<method>pglz|lz4) data is corrupt",
        "a compressed value does not decompress",
        "A column value compressed with {method} does not decompress to the size recorded for it: bytes inside the "
        "compressed value changed, or its header was damaged so that plain data is read as compressed.",
        (ModeRef("tuple-data", ("bitflip", "random", "varlena")), ModeRef("toast", ("chunk_data",))),
        (_DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "compression_id",
        r"invalid compression method id (?P<id>\d+)",
        "a value names an unknown compression method",
        "A compressed column value's header (or its TOAST pointer) says compression method {id}, which does not "
        "exist: the value's header bytes are damaged. Only that column of that row is unreadable.",
        (ModeRef("tuple-data", ("varlena", "bitflip")),),
        (_DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "page_pointers",
        r"corrupted page pointers: lower = (?P<lower>\d+), upper = (?P<upper>\d+), special = (?P<special>\d+)",
        "a page header is damaged and the server noticed while changing the page",
        "While inserting into (or pruning, or deleting index entries from) a page the server found its header "
        "impossible (pd_lower {lower}, pd_upper {upper}, pd_special {special}). On an insert this is a PANIC: the "
        "whole server restarts. The message does not name the block; the log's CONTEXT or STATEMENT line names the "
        "relation.",
        (ModeRef("header", ("pd_lower", "pd_upper", "pd_special")),),
        (_DIAGNOSE, _SCAN_ALL, _NO_ZERO),
    ),
    _p(
        "line_pointer",
        r"corrupted line pointer: (?:offset = (?P<off>\d+), size = (?P<size>\d+)|(?P<lp>\d+))",
        "a line pointer is impossible",
        "While pruning or compacting a page the server found a line pointer (item ID) pointing outside the page's "
        "tuple space: the item-ID array is damaged. Rows on that page are read from wrong places.",
        (ModeRef("item-id", ("lp_off", "lp_len")), ModeRef("item-ids")),
        (_DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "item_lengths",
        r"corrupted item lengths: total (?P<total>\d+), available space (?P<avail>\d+)",
        "line pointer lengths do not fit the page",
        "The lengths in a page's line pointers add up to {total} bytes but the page has room for {avail}: the "
        "item-ID array is damaged.",
        (ModeRef("item-id", ("lp_len",)), ModeRef("item-ids")),
        (_DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "crash_signal",
        r"(?:server process|process|"
        r"backend) \(PID (?P<pid>\d+)\) was terminated by signal (?P<signal>\d+)(?::\s*(?P<signame>[A-Za-z ]+))?",
        "a backend crashed",
        "Backend {pid} died from signal {signal}. Reading a damaged page with ordinary queries can crash a backend: "
        "the executor trusts line pointers, t_hoff and column lengths, and a garbage item-ID array or tuple header "
        "sends it reading outside the row. The postmaster then disconnects every session and runs crash recovery.",
        _CRASH_MODES,
        (
            Step(
                "find the query that crashed",
                "grep -B2 -A3 'terminated by signal' \"$PGLOG\" | grep 'Failed process was running'",
            ),
            Step("do not run it again; find the damaged pages without the executor", 'pgsurgeon diagnose --dsn "$DSN"'),
            _SCAN_ALL,
        ),
    ),
    _p(
        "crash_other",
        r"terminating connection because of crash of another server process|server closed the connection unexpectedly",
        "the connection was lost because a backend crashed",
        "A backend process died (often a segmentation fault) and the server restarted every session. If it happens "
        "on the same query each time, the data that query reads is probably damaged.",
        _CRASH_MODES,
        (
            Step("find the crash and its query in the server log", "grep -A3 'terminated by signal' \"$PGLOG\""),
            Step("find the damaged pages without the executor", 'pgsurgeon diagnose --dsn "$DSN"'),
        ),
    ),
    _p(
        "freeze_horizon",
        r"found (?P<what>xmin|xmax|update xid|multixact) (?P<xid>\d+) from before (?P<horizon>relfrozenxid|"
        r"relminmxid) (?P<limit>\d+)",
        "VACUUM found an XID older than the table's freeze horizon",
        "VACUUM found a row whose {what} {xid} is older than the table's {horizon} {limit}: every such value should "
        "have been frozen already. The tuple header (xmin/xmax or its hint bits) is damaged, or the horizon in "
        "pg_class is wrong. VACUUM of the table fails until the row is dealt with, which ends in wraparound trouble.",
        (
            ModeRef("tuple-header", ("t_xmin", "t_xmax")),
            ModeRef("tuple-header", ("t_infomask",), "frozen/committed hint bits cleared"),
        ),
        (_CONTROL, _DIAGNOSE),
    ),
    _p(
        "uncommitted_xmin",
        r"uncommitted xmin (?P<xid>\d+)(?: from before xid cutoff (?P<cutoff>\d+))? needs to be frozen",
        "VACUUM found an old row not marked committed",
        "VACUUM must freeze a row inserted by transaction {xid}, but the row does not say its inserter committed "
        "(its XMIN_COMMITTED hint is gone, or the xmin is damaged). VACUUM of the table fails.",
        (ModeRef("tuple-header", ("t_infomask", "t_xmin")),),
        (_CONTROL, _DIAGNOSE),
    ),
    _p(
        "committed_xmax",
        r"cannot freeze committed xmax (?P<xid>\d+)",
        "VACUUM found a deleted row it was asked to freeze",
        "VACUUM found a row whose deleting transaction {xid} committed, which should have made the row removable, "
        "not freezable: the xmax or its hint bits are damaged. VACUUM of the table fails.",
        (ModeRef("tuple-header", ("t_xmax", "t_infomask")),),
        (_CONTROL, _DIAGNOSE),
    ),
    _p(
        "hot_parent",
        r"failed to find parent tuple for heap-only tuple at \((?P<block>\d+),(?P<offset>\d+)\) in table"
        r' "(?P<table>[^"]+)"',
        "a HOT chain is broken",
        "Building an index found a heap-only tuple at ({block},{offset}) of {table} that no chain leads to: a "
        "redirect line pointer, a tuple's t_ctid or its HEAP_ONLY/HOT_UPDATED bits are damaged.",
        (
            ModeRef("tuple-header", ("t_infomask2", "t_ctid")),
            ModeRef("item-id", ("lp_flags", "lp_off")),
        ),
        (Step("decode the page", 'pgsurgeon inspect --dsn "$DSN" --table {table} --block {block}'), _DIAGNOSE_TABLE),
    ),
    _p(
        "relation_oid",
        r"could not open relation with OID (?P<oid>\d+)",
        "a value names a relation that does not exist",
        "The server looked for relation {oid} and it does not exist. With damaged data this is a TOAST pointer whose "
        "TOAST table OID (va_toastrelid) is damaged; it can also be a concurrently dropped table or a catalog problem.",
        (ModeRef("tuple-data", ("varlena",), "on a column stored out of line (its TOAST pointer)"),),
        (Step("does the relation exist?", "SELECT {oid}::oid::regclass;", "sql"), _DIAGNOSE),
    ),
    _p(
        "beyond_eof",
        r'unexpected data beyond EOF in block (?P<block>\d+) of relation "?(?P<relpath>[^"\s]+)"?',
        "a page past the end of a file is not empty",
        "Extending {relpath} the server found data in block {block}, which it believed to be past the end of the "
        "file: the file size and its contents disagree (a filesystem or kernel problem, or a file copied in while "
        "the server ran).",
        (),
        (_INSPECT, _SCAN_REL, _FIND_REL),
        derive=_derive_relpath,
    ),
    _p(
        "relmapper",
        r'relation mapping file "(?P<file>[^"]+)" contains (?P<what>invalid data|incorrect checksum)',
        "the relation map of a database is damaged",
        "{file} maps the core catalogs (pg_class and friends) to their files; it {what_text}. No connection to that "
        "database (or, for global/, to any) can start. It is not a page and the corruption simulator does not "
        "damage it.",
        (),
        (
            Step("list the relation files (the map itself is not needed for that)", 'pgsurgeon files "$PGDATA"'),
            Step(
                "restore the file from a backup of the same cluster; it changes only on VACUUM FULL/CLUSTER of a"
                " mapped catalog",
                'ls -l "$PGDATA/{file}"',
            ),
        ),
        derive=lambda v: v.update(
            what_text="contains invalid data" if v["what"] == "invalid data" else "fails its CRC"
        ),
    ),
    _p(
        "control_file",
        r"incorrect checksum in control file|database files are incompatible with server",
        "pg_control is damaged or from another version",
        "global/pg_control (the cluster's checkpoint location, XID horizons and settings) fails its CRC or does not "
        "match this server build, so the server does not start. It is not a page; the simulator does not damage it.",
        (),
        (Step("decode pg_control, whatever its version, and check its CRC", 'pgsurgeon control "$PGDATA"'),),
    ),
    _p(
        "multixact_offset",
        r"MultiXact (?P<multi>\d+) has invalid (?:next )?offset",
        "the MultiXact offsets file is damaged",
        "The pg_multixact/offsets entry of MultiXact {multi} is impossible: the SLRU file is damaged, not a table"
        " page.",
        (),
        (
            _CONTROL,
            Step("see the MultiXact files", 'ls -l "$PGDATA/pg_multixact/offsets" "$PGDATA/pg_multixact/members"'),
        ),
    ),
    _p(
        "amcheck_heap",
        r'(?:heap table "(?P<table>[^"]+)", block (?P<block>\d+), offset (?P<offset>\d+)(?:, attribute'
        r" (?P<attnum>\d+))?:?\s*)?"
        r"(?P<msg>(?:line pointer (?:redirection|to page offset|length)|redirected line pointer|redirect line pointer|"
        r"tuple points to new version|non-heap-only update|heap-only update|tuple with (?:in-progress|aborted) xmin|"
        r"tuple is root of chain|data begins at offset|tuple data should begin|multixact should not|tuple has been HOT|"
        r"tuple is heap only|old-style VACUUM FULL|multitransaction ID|update xid|xmin \d+ (?:equals|precedes)|"
        r"xmax \d+ (?:equals|precedes)|number of attributes|attribute with length|toasted attribute|toast value \d+)"
        r"[^\n]*)",
        "amcheck (verify_heapam) found a damaged tuple",
        "verify_heapam says: {msg}. In plain words: {family}.",
        (),
        (
            Step("decode the page", 'pgsurgeon inspect --dsn "$DSN" --table {table} --block {block}'),
            Step(
                "every damaged page of the table, continuing past errors",
                'pgsurgeon diagnose --dsn "$DSN" --table {table}',
            ),
            _DIAGNOSE,
        ),
        extras=(("where", "The damage is at {where} of {table}."),),
        derive=_derive_amcheck,
    ),
)

# modes for amcheck messages, by finding-code family
_AMCHECK_MODES: dict[str, tuple[ModeRef, ...]] = {
    "line_pointer": (ModeRef("item-ids"), ModeRef("item-id", ("lp_off", "lp_len", "lp_flags"))),
    "tuple_header": (ModeRef("tuple-header", ("t_xmin", "t_xmax", "t_infomask", "t_infomask2", "t_hoff", "random")),),
    "tuple_data": (ModeRef("tuple-data", ("varlena", "random")), ModeRef("tuple-header", ("t_infomask2",))),
    "toast": (
        ModeRef("toast", ("chunk_seq", "chunk_id", "chunk_size", "chunk_data", "missing")),
        ModeRef("tuple-data", ("varlena",)),
    ),
}

_CONTINUATION = re.compile(r"^\s*(?:\S+\s+)*?(?:DETAIL|HINT|CONTEXT|STATEMENT|LOCATION):\s")
_PG_AMCHECK_HEAD = re.compile(
    r'^(?:btree index|heap table) "[^"]+"(?:, block \d+, offset \d+(?:, attribute \d+)?)?:\s*$'
)
_SLRU = re.compile(
    r'Could not (?:open|read from|seek in|access) file "(?P<slru>pg_(?:xact|multixact/\w+|subtrans|'
    r'commit_ts)/[0-9A-F]+)"'
)
_IDENT = re.compile(r"^[a-z_][a-z0-9_$]*$")


def _sql_ident(name: str) -> str:
    """An index or table name from a message as SQL text (messages print names unquoted and unqualified)."""
    return name if _IDENT.match(name) else db.quote_ident(name)


def _entries(text: str) -> list[tuple[str, list[str]]]:
    """Log lines with their DETAIL/HINT/CONTEXT lines; pg_amcheck's 'heap table "…", block N, offset M:' heading
    joined to the message on the next line."""
    out: list[tuple[str, list[str]]] = []
    lines = [ln.rstrip() for ln in text.splitlines()]
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _PG_AMCHECK_HEAD.match(line.strip()) and i + 1 < len(lines):
            line = line.strip() + " " + lines[i + 1].strip()
            i += 1
        if _CONTINUATION.match(line) and out:
            out[-1][1].append(line.strip())
        else:
            out.append((line.strip(), []))
        i += 1
    return out


def match_line(line: str, context: list[str] | None = None) -> Explanation | None:
    """The explanation of one message (with its DETAIL/HINT lines), or None when no pattern knows it."""
    for pattern in PATTERNS:
        m = pattern.regex.search(line)
        if not m:
            continue
        values = {k: v for k, v in m.groupdict().items() if v is not None}
        for extra in context or []:
            if s := _SLRU.search(extra):
                values.setdefault("slru", s.group("slru"))
        if "index2" in values:
            values.setdefault("index", values.pop("index2"))
        if "index" in values:
            values["index_sql"] = _sql_ident(values["index"])
        if pattern.derive is not None:
            pattern.derive(values)
        if pattern.id == "amcheck_heap":
            family = values.get("code", "").split(".")[0]
            pattern = Pattern(
                pattern.id,
                pattern.regex,
                pattern.title,
                pattern.meaning,
                _AMCHECK_MODES.get(family, ()),
                pattern.steps,
                pattern.extras,
                pattern.derive,
            )
        return Explanation(pattern, line, values, context=list(context or []))
    return None


def explain_text(text: str) -> tuple[list[Explanation], list[str]]:
    """Explanations for every recognised line of ``text`` (repeats counted once) and the unrecognised lines."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], Explanation] = {}
    unknown: list[str] = []
    for line, context in _entries(text):
        exp = match_line(line, context)
        if exp is None:
            unknown.append(line)
            continue
        key = (exp.pattern.id, tuple(sorted(exp.values.items())))
        if key in found:
            found[key].count += 1
        else:
            found[key] = exp
    return list(found.values()), unknown


def catalogue() -> list[dict[str, Any]]:
    """The patterns, for ``--list`` and docs/errors.md."""
    return [
        {
            "id": p.id,
            "title": p.title,
            "regex": p.regex.pattern,
            "modes": [m.to_json() for m in (p.modes or ())],
        }
        for p in PATTERNS
    ]


# One real message per pattern: the documentation shows them, and the tests check each is explained by its own
# pattern (wording from PostgreSQL 15 and 18, amcheck, pg_amcheck and pg_checksums).
EXAMPLES: dict[str, str] = {
    "invalid_page": "ERROR:  invalid page in block 285 of relation base/16384/29724",
    "invalid_pages": 'ERROR:  3 invalid pages among blocks 8..15 of relation "base/5/16440"',
    "checksum_failed": "WARNING:  page verification failed, calculated checksum 25135 but expected 36026",
    "checksum_ignored": 'WARNING:  ignoring checksum failure in block 4 of relation "base/5/16440"',
    "pg_checksums": 'pg_checksums: error: checksum verification failed in file "/data/base/5/16440.1", block 12: '
    "calculated checksum 6225 but block contains 9DC2",
    "xact_status": "ERROR:  could not access status of transaction 3000000000",
    "multixact_future": "ERROR:  MultiXactId 50000 has not been created yet -- apparent wraparound",
    "multixact_gone": "ERROR:  MultiXactId 12 does no longer exist -- apparent wraparound",
    "toast_chunk_number": "ERROR:  unexpected chunk number 5 (expected 1) for toast value 16472 in pg_toast_16467",
    "toast_missing_chunk": "ERROR:  missing chunk number 0 for toast value 16486 in pg_toast_16434",
    "toast_chunk_size": "ERROR:  unexpected chunk size 100 (expected 1996) in chunk 0 of 3 for toast value 16486 in "
    "pg_toast_16434",
    "toast_toasted_chunk": "ERROR:  found toasted toast chunk for toast value 16486 in pg_toast_16434",
    "alloc_size": "ERROR:  invalid memory alloc request size 1073741827",
    "short_read": 'ERROR:  could not read blocks 21..21 in file "base/5/16434": read only 0 of 8192 bytes',
    "missing_segment": 'ERROR:  could not open file "base/5/16384.1" (target block 131072): No such file or directory',
    "read_io_error": 'ERROR:  could not read block 7 in file "base/5/16384": Input/output error',
    "index_zero_page": 'ERROR:  index "orders_pkey" contains unexpected zero page at block 4',
    "index_corrupted_page": 'ERROR:  index "orders_pkey" contains corrupted page at block 1',
    "index_metapage": 'ERROR:  index "orders_pkey" is not a btree',
    "btree_amcheck": 'ERROR:  item order invariant violated for index "orders_pkey"',
    "index_missing_row": 'ERROR:  heap tuple (30,1) from table "pg_toast_16434" lacks matching index tuple within '
    'index "pg_toast_16434_index"',
    "compressed_corrupt": "ERROR:  compressed pglz data is corrupt",
    "compression_id": "ERROR:  invalid compression method id 3",
    "page_pointers": "PANIC:  corrupted page pointers: lower = 9000, upper = 1712, special = 8192",
    "line_pointer": "ERROR:  corrupted line pointer: offset = 8189, size = 40",
    "item_lengths": "ERROR:  corrupted item lengths: total 9120, available space 8040",
    "crash_signal": "LOG:  server process (PID 6200) was terminated by signal 11: Segmentation fault",
    "crash_other": "FATAL:  terminating connection because of crash of another server process",
    "freeze_horizon": "ERROR:  found xmin 3000000000 from before relfrozenxid 716",
    "uncommitted_xmin": "ERROR:  uncommitted xmin 741 needs to be frozen",
    "committed_xmax": "ERROR:  cannot freeze committed xmax 745",
    "hot_parent": 'ERROR:  failed to find parent tuple for heap-only tuple at (5,12) in table "orders"',
    "relation_oid": "ERROR:  could not open relation with OID 16999",
    "beyond_eof": "ERROR:  unexpected data beyond EOF in block 21 of relation base/5/16434",
    "relmapper": 'FATAL:  relation mapping file "base/5/pg_filenode.map" contains invalid data',
    "control_file": "FATAL:  incorrect checksum in control file",
    "multixact_offset": "ERROR:  MultiXact 1234 has invalid next offset",
    "amcheck_heap": 'heap table "shop.public.orders", block 5, offset 3:\n'
    "    line pointer redirection to item at offset 5585 exceeds maximum offset 4",
}


def markdown() -> str:
    """docs/errors.md: every known message with an example, what it means, the modes and the next steps."""
    out = [
        "# Errors pgsurgeon explains",
        "",
        "Generated by `python -m pgsurgeon.explain > docs/errors.md` from the catalogue in "
        '`python/pgsurgeon/explain.py`; `pgsurgeon explain "<message>"` prints the same for a message from a log, '
        "with its values filled in. In commands, $PGDATA is the data directory, $DSN a connection string for the "
        "database named and $PGLOG the server log.",
        "",
        "## pgsurgeon's exit statuses",
        "",
        "Every command exits with one of these (the table is `python/pgsurgeon/exitcodes.py`); commands that only "
        "show or change things (corrupt, undo, files, lab, explain) never return 2.",
        "",
        exitcodes.markdown(),
    ]
    for p in PATTERNS:
        found, _ = explain_text(EXAMPLES[p.id])
        exp = found[0]
        out += [f"## {p.title}", "", f"`{p.id}` — example:", "", "```", EXAMPLES[p.id], "```", "", exp.meaning(), ""]
        modes = p.modes if p.id != "amcheck_heap" else tuple(m for ms in _AMCHECK_MODES.values() for m in ms)
        if modes:
            out.append("Produced by `pgsurgeon corrupt` modes:")
            out.append("")
            out += [f"- {m.text()}" for m in modes]
        else:
            out.append("Not reproduced by `pgsurgeon corrupt`: the damage is outside table and index pages.")
        out.append("")
        steps = exp.steps()
        if steps:
            out.append("Next, for the example:")
            out.append("")
            for i, s in enumerate(steps, 1):
                fence = "sql" if s.kind == "sql" else "sh" if s.kind == "shell" else ""
                if s.kind == "note":
                    out.append(f"{i}. {s.what}: {s.command}")
                else:
                    out += [f"{i}. {s.what}", "", f"   ```{fence}", f"   {s.command}", "   ```"]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
