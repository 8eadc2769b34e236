"""The catalogue: every message pattern explain knows (the server's wording in PostgreSQL 14-18, amcheck's,
pg_amcheck's and pg_checksums'), each with its meaning, the ``pgsurgeon corrupt`` modes that reproduce it, its
next steps, and one real message per pattern (:data:`EXAMPLES`). Data only: the order of :data:`PATTERNS` is the
order they are tried in."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pgsurgeon.explain.derive import (
    derive_am,
    derive_amcheck,
    derive_bitmap_tid,
    derive_checksum,
    derive_file,
    derive_gin,
    derive_pg_checksums,
    derive_relpath,
    derive_xid,
)


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
    when: str = ""
    """The condition the step is for (``the table is sound``): run it only then; otherwise it fails, as said."""


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
    kind: str = "damage"
    """damage: a sign of damaged data; ordinary: an everyday error that says nothing about the data."""
    tail: str = ""
    """table: the damage is in a table's rows, so the answer ends with the salvage and repair command lines (and
    pg_surgery's SQL when a ctid is known); sequence: the sequence is recreated, never carved."""


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

_WAL_FIELDS = ("checkpoint-segment", "empty", "truncate", "checkpoint-record", "checkpoint-rmid", "page-header")
_CHECKPOINT_MODES = (ModeRef("wal", _WAL_FIELDS), ModeRef("control", ("checkpoint",)))
_REFUSING_MODES = (
    *_CHECKPOINT_MODES,
    ModeRef("control", ("crc", "truncate", "version")),
    ModeRef("xact", ("remove",)),
    ModeRef("multixact", ("offsets-remove", "members-remove")),
)

_INSPECT = Step(
    "decode the page offline, including a page the server refuses",
    "pgsurgeon inspect {pgdata}/{relfile} -b {block}",
)
_SCAN_REL = Step(
    "find every damaged page of this relation (offline; --live on a running server)",
    "pgsurgeon scan {pgdata}{scan_db} -t {filenode} --live",
)
_FIND_REL = Step("name the relation ({where_db}); the commands below use $REL", "{name_rel}")
_DIAGNOSE_REL = Step(
    "check it through SQL, continuing past every damaged page (read-only)",
    "pgsurgeon diagnose{conn}{dbopt} -t {rel}",
)
_DIAGNOSE = Step(
    "find the damaged block and line pointer: pages are read raw and amcheck runs only where it is safe",
    "{diagnose_cmd}",
)
_DIAGNOSE_TABLE = Step(
    "check that table: it names the row and the TOAST block and line pointer of the bad chunk",
    "pgsurgeon diagnose{conn}{dbopt} -t {rel}",
)
_SCAN_ALL = Step("the same offline, over the data directory", "pgsurgeon scan {pgdata} --live")
_NO_ZERO = Step(
    "do not SET zero_damaged_pages or run VACUUM on the table before the rows are saved",
    "zero_damaged_pages turns the page into an empty one in memory, and any later write makes the loss permanent",
    "note",
)
_TOAST_TABLE = Step("name the table that owns {toast}; the commands below use $REL", "{name_owner}")
_TOAST_ROW = Step(
    "find the row holding TOAST value {value} (PostgreSQL 17 and later; run in psql, \\gexec runs each query)",
    "{toast_row_cmd}",
)
_TOAST_DIAGNOSE = Step(
    "find the row and the bad chunk (TOAST value {value}) on any version",
    "pgsurgeon diagnose{conn}{dbopt} -t {rel}",
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
# With a connection, explain names the indexes the message may be about (resolver): the server's message names none.
_CANDIDATES = Step(
    "the message names no index; the {ams_words} indexes of this database, the damaged one among them: "
    "{candidates}; check them",
    "{diagnose_candidates}",
)
_GIN_FIND = Step(
    "find the damaged GIN index: gin_index_check on each (amcheck, PostgreSQL 18; run in psql, \\gexec runs each)",
    "SELECT format('SELECT %L AS index_name, gin_index_check(%L);', c.oid::regclass, c.oid::regclass) FROM pg_class c "
    "JOIN pg_am a ON a.oid = c.relam WHERE c.relkind = 'i' AND a.amname = 'gin' \\gexec",
    "sql",
)
_GIN_FIND_SCAN = Step(
    "find the damaged index from the files (every index kind, the pending list and heap TIDs included)",
    "pgsurgeon scan {pgdata}{conn} --live",
)
_GIN_DIAGNOSE = Step(
    "check the table and its indexes once the index is known", "pgsurgeon diagnose{conn}{dbopt} -t TABLE"
)
_GIN_REINDEX = Step(
    "rebuild the index the check names (an index holds no data of its own)",
    "REINDEX INDEX CONCURRENTLY INDEX_NAME;",
    "sql",
)
_CONTROL = Step("compare the value with the cluster's XID and MultiXact horizons", "{control_cmd}")

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
    tail: str = "table",
) -> Pattern:
    return Pattern(id, re.compile(regex, re.IGNORECASE), title, meaning, modes, steps, extras, derive, tail=tail)


def _ordinary(id: str, regex: str, title: str, meaning: str) -> Pattern:
    """An everyday error: recognised so that it is not mistaken for damage, and answered without a diagnosis."""
    return Pattern(id, re.compile(regex, re.IGNORECASE), title, meaning, (), (), kind="ordinary")


_QUOTED_INDEX = r'index "(?P<index>[^"]+)"'


def _constraint_literal(values: dict[str, str]) -> None:
    """The constraint's name as the inside of an SQL string literal."""
    values["constraint_sql"] = values["constraint"].replace("'", "''")


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
        derive=derive_relpath,
    ),
    _p(
        "invalid_pages",
        r"(?:(?P<count>\d+) invalid pages|zeroing (?P<count2>\d+) page\(s\) and ignoring \d+ checksum failure\(s\))"
        r' among blocks (?P<first>\d+)\.\.(?P<last>\d+) of relation "(?P<relpath>[^"]+)"',
        "the server refuses several pages of one read (PostgreSQL 18)",
        "{count} pages among blocks {first}..{last} of {relpath} failed the read-time check (bad header or checksum). "
        "PostgreSQL 18 reads several blocks at once and reports them together; the DETAIL names the first, the "
        "server log the others.",
        (ModeRef("header"), *_CHECKSUM_MODES, *_ANY_PAGE_WITH_CHECKSUMS),
        (
            Step("decode the first of them offline", "pgsurgeon inspect {pgdata}/{relfile} -b {first}"),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
            _NO_ZERO,
        ),
        derive=derive_relpath,
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
                "grep -A2 'page verification failed' {pglog}",
            ),
            Step(
                "every checksum failure of the cluster with its cause (offline; --live on a running server)",
                "pgsurgeon scan {pgdata} --live",
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
        derive=derive_checksum,
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
        derive=derive_relpath,
    ),
    _p(
        "pg_checksums",
        r'checksum verification failed in file "(?P<file>[^"]+)", block (?P<segblock>\d+): calculated (?:checksum )?'
        r"(?P<calc>[0-9A-F]+) but (?:block contains|expected) (?P<stored>[0-9A-F]+)",
        "pg_checksums or a base backup found a bad checksum",
        "pg_checksums (offline) or the checksum check of a base backup found block {segblock} of segment file {file} "
        "with a wrong checksum (block {block} "
        "counted across segments, as the server counts it). The page changed after it was written.",
        _CHECKSUM_MODES,
        (_INSPECT, _SCAN_REL, _FIND_REL),
        derive=derive_pg_checksums,
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
            Step("see which commit-status files exist ({xact_file} is the one wanted)", "ls {pgdata}/pg_xact"),
            Step(
                "find the row: amcheck reports its xmin/xmax as outside the valid range",
                "{diagnose_cmd}",
            ),
            _SCAN_ALL,
            Step(
                "do not create a zero-filled {xact_file} to make the error go away before saving the rows",
                "a fake status file makes the server treat the garbage XID as aborted or in progress: rows vanish",
                "note",
            ),
        ),
        extras=(("slru", "The DETAIL names the file it wanted: {slru}."),),
        derive=derive_xid,
    ),
    _p(
        # chosen by matching (matching.py) when a FATAL or PANIC (the startup process) has a DETAIL saying the
        # status file is not there: never by this regex alone, which xact_status, earlier in the list, matches first
        "xact_file_missing",
        r"could not access status of transaction (?P<xid>\d+)",
        "a transaction's commit-status file is missing",
        "The server looked up whether transaction {xid} committed in {slru}, and that file is not there. Two cases "
        "differ: if {xid} lies within the cluster's XID horizons (pgsurgeon control --xid says so), the transaction is "
        "real and its status file was lost (removed by hand, a failed restore or copy, a disk fault): every row it "
        "wrote or deleted has an unknown fate, and when this comes from the startup process (CONTEXT: WAL redo) the "
        "server does not start. If {xid} lies outside the horizons, a damaged tuple header names a garbage XID and "
        "only that row is affected.",
        (ModeRef("xact", ("remove",)),),
        (
            Step("is {xid} a real transaction of this cluster, or garbage?", "{control_cmd}"),
            Step("see which commit-status files exist ({slru} is the one wanted)", "ls -l {pgdata}/pg_xact"),
            Step(
                "save every table with no server, visibility judged from the files that are left (read-only)",
                "pgsurgeon unload -D {pgdata} --out unloaded -P",
            ),
            Step(
                "rebuild the lost segment from the evidence left (hint bits, WAL commit records): it lists every "
                "transaction nothing decides, with its rows, and writes nothing without --execute",
                "pgsurgeon xact -D {pgdata}",
            ),
            Step(
                "plan pg_resetwal: each value derived from the files and checked against pg_control, what a wrong one "
                "risks, and the ways out as commands (nothing is run or written)",
                "pgsurgeon control --plan {pgdata}",
            ),
            _SCAN_ALL,
            Step(
                "do not create a {slru} full of zeroes or of 'committed' to make the error go away",
                "zeroes make every transaction in it aborted (its inserted rows vanish, its deleted rows come back); "
                "'committed' resurrects rows of transactions that aborted",
                "note",
            ),
        ),
        derive=derive_xid,
    ),
    _p(
        # chosen by matching (matching.py) when the DETAIL names a pg_multixact file that is not there: the number
        # is then a MultiXactId (offsets) or a member offset (members at startup), never a tuple's XID
        "multixact_file_missing",
        r"could not access status of transaction (?P<multi>\d+)",
        "a MultiXact status file is missing",
        "The server looked up MultiXact bookkeeping in {slru}, and that file is not there. The number in the message "
        "is not a transaction: it is a MultiXactId (pg_multixact/offsets), or, from the startup process, the next "
        "member offset (pg_multixact/members). At startup the server reads the pages of pg_control's next "
        "MultiXactId and next member offset and does not start without them. In a query it names the MultiXact in "
        "a row's xmax: rows locked or updated by several transactions at once have an unknown updater.",
        (ModeRef("multixact", ("offsets-remove", "members-remove")),),
        (
            Step(
                "the cluster's MultiXact horizons, and whether {multi} is one",
                "pgsurgeon control -D {pgdata} --multi {multi}",
            ),
            Step(
                "see which MultiXact files exist ({slru} is the one wanted)",
                "ls -l {pgdata}/pg_multixact/offsets {pgdata}/pg_multixact/members",
            ),
            Step(
                "save every table with no server, visibility judged from the files that are left (read-only)",
                "pgsurgeon unload -D {pgdata} --out unloaded -P",
            ),
            _SCAN_ALL,
            Step(
                "a members file: rebuild it from the heap's update chains (dry run; the offsets must be intact)",
                "pgsurgeon multixact -D {pgdata}",
            ),
            Step(
                "do not create a zero-filled {slru} to make the error go away",
                "zeroed members lose every updater: the old versions of rows updated under a lock come back",
                "note",
            ),
        ),
    ),
    _p(
        "multixact_future",
        r"MultiXactId (?P<multi>\d+) (?:has not been|wasn't) created yet\s*-+\s*apparent (?:wraparound|overflow)",
        "a tuple names a MultiXactId from the future",
        "A row's xmax is flagged as a MultiXactId (a group of lockers/updaters) and names {multi}, which the cluster "
        "has not handed out yet. The xmax or its infomask bits are damaged; every query that checks the row's "
        "visibility fails.",
        (*_MULTI_MODES, ModeRef("control", ("next-multi",), "pg_control's next MultiXactId set back")),
        (_CONTROL, _DIAGNOSE, _SCAN_ALL),
    ),
    _p(
        "multixact_gone",
        r"MultiXactId (?P<multi>\d+) does no longer exist\s*-+\s*apparent wraparound",
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
            _TOAST_ROW,
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
        (_TOAST_TABLE, _TOAST_ROW, _TOAST_DIAGNOSE),
    ),
    _p(
        "toast_chunk_size",
        r"unexpected chunk size (?P<size>-?\d+) \(expected (?P<expected>-?\d+)\) in (?:final )?chunk"
        r" (?P<chunk>-?\d+)(?: of (?P<total>-?\d+))? for toast value (?P<value>\d+) in "
        r"(?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST chunk has the wrong size",
        "Chunk {chunk} of TOAST value {value} in {toast} holds {size} bytes where {expected} were expected: the "
        "chunk's length word (its varlena header) or the row's TOAST pointer (the value's size) is damaged.",
        (
            ModeRef("toast", ("chunk_size", "chunk_data")),
            ModeRef("tuple-data", ("varlena",), "on a TOAST pointer"),
        ),
        (_TOAST_TABLE, _TOAST_ROW, _TOAST_DIAGNOSE),
    ),
    _p(
        "toast_toasted_chunk",
        r"found toasted toast chunk for toast value (?P<value>\d+) in (?P<toast>pg_toast_(?P<toast_owner>\d+))",
        "a TOAST chunk's header looks compressed",
        "The chunk_data of a chunk of TOAST value {value} in {toast} has a varlena header flagged as compressed or "
        "external, which chunks never are: the first bytes of the chunk are damaged.",
        (ModeRef("toast", ("chunk_data",)),),
        (_TOAST_TABLE, _TOAST_ROW, _TOAST_DIAGNOSE),
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
            ModeRef("multixact", ("offsets-page",), "reading rows updated under a FOR KEY SHARE lock"),
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
        r'could not read blocks? (?P<block>\d+)(?:\.\.(?P<last>\d+))? in file "(?P<file>[^"]+)": read (?:only )?'
        r"(?P<got>\d+) of (?P<want>\d+)(?: bytes)?",
        "a relation file is shorter than the server expects",
        "The server wanted block {block} from {file} and the file ended before it (read {got} of {want} bytes): the "
        "file was truncated or a write was torn at the end. A sequential scan silently stops at the end of the file; "
        "this error comes from an index scan following an entry into the missing part.",
        (
            ModeRef("truncate"),
            ModeRef("missing-segment", (), "when the missing segment is the last one"),
            ModeRef("hash", ("heap_tid",), "with --value naming a block past the table's end"),
        ),
        (
            Step("compare the file sizes with the block numbers", "ls -l {pgdata}/{relfile}*"),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
        ),
        derive=derive_file,
    ),
    _p(
        "missing_segment",
        r'could not open file "(?P<file>(?:base|global|'
        r'pg_tblspc)/[^"]+)"(?: \(target block (?P<block>\d+)\))?: (?P<reason>(?!maximum nesting depth)[^.]+)',
        "a relation file or segment cannot be opened",
        "The server needed {file} and could not open it ({reason}). For a relation larger than 1 GB each gigabyte is "
        "a separate segment file (.1, .2, …); a missing one loses its blocks and, for an index scan, fails like this.",
        (ModeRef("missing-segment"),),
        (
            Step("see which segments exist", "ls -l {pgdata}/{relfile}*"),
            _SCAN_REL,
            _FIND_REL,
            _DIAGNOSE_REL,
        ),
        extras=(("block", "It was looking for block {block}."),),
        derive=derive_file,
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
        derive=derive_file,
    ),
    _p(
        "index_zero_page",
        _QUOTED_INDEX + r" contains unexpected zero page at block (?P<block>\d+)",
        "an index page is all zeroes",
        "Block {block} of index {index} is all zeroes where the index expects a page: the page was zeroed or never "
        "written (a crash while the index grew, zero_damaged_pages). An index holds no data of its own.",
        (
            ModeRef("zero", (), "on an index (--target index)"),
            ModeRef("gist", ("downlink",), "--value BLOCK of a zero page"),
        ),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
            _REINDEX,
        ),
    ),
    _p(
        "index_corrupted_page",
        _QUOTED_INDEX + r" contains corrupted page at block (?P<block>\d+)",
        "an index page's btree or hash data is impossible",
        "Block {block} of index {index} passes the page checks but its special space is wrong for what the index "
        "expects there (a btree page's size, flags or level; a hash page's type: a bucket page that is not one, or an "
        "overflow chain leading to a page of another type), so the server will not use it.",
        (
            ModeRef("btree", ("special", "btpo_flags", "btpo_level")),
            ModeRef("hash", ("bucket",)),
            ModeRef("hash", ("overflow",), "with --value naming a block that is no overflow page, e.g. 0"),
        ),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
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
            Step("check the table and all its indexes", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
            _REINDEX,
        ),
    ),
    _p(
        "amcheck_index",
        r"(?P<msg>(?:block \d+ or its right sibling block or child block|Number of items on block \d+|"
        r"block found while following rightlinks from child|can't find left sibling high key|"
        r"can't traverse from downlink \d+ to downlink \d+|child high key is greater than rightmost pivot key|"
        r"circular link chain found in block \d+|deleted page block \d+|down-link lower bound invariant violated|"
        r"downlink points to block|downlink to deleted leaf page found|external varlena datum in tuple that "
        r"references heap row|full transaction id page flag appears|internal (?:page )?block \d+|"
        r"invalid internal page level|invalid line pointer storage|non-rightmost leaf block \d+|"
        r"right block of leaf block is non-leaf|the first child of leftmost target page|"
        r"wrong number of (?:high key )?index tuple attributes|found deleted block \d+ while following right link|"
        r"heap tid from index tuple|table tid from new index tuple|target page left link unexpectedly changed|"
        r"right sibling \d+ of scanblkno \d+ unexpectedly|valid left sibling for deletion target|"
        r"index row size \d+ exceeds maximum for|"
        r"inconsistent tuple chain links in page \d+|block \d+ is not (?:leftmost|true root)|"
        r"leaf index block lacks downlink|posting list contains misplaced TID|index tuple size does not equal lp_len|"
        r"line pointer points past end of tuple space|left link/right link pair|could not find tuple using search "
        r"from root page|downlink or sibling link points to deleted block)[^\n]*?)(?:in |of |for )?"
        + _QUOTED_INDEX
        + "|"
        r'index "(?P<index2>[^"]+)":? (?:has (?:deleted (?:internal )?page|inconsistent (?:records|tuple sizes)|'
        r"no valid pages on level|page \d+ with exceeding count|unexpected pd_lower)|lacks a main relation fork|"
        r"metapage (?:has equalimage|incorrectly indicates)|contains a half-dead internal page|posting item exceeds|"
        r"posting list contains invalid heap pointer|posting tree page's high key|internal pages traversal|"
        r"rightmost posting tree page|tid exceeds)",
        "amcheck or the server found an index's structure inconsistent",
        "amcheck (bt_index_check, gin_index_check) or the server's own checks found index {index} inconsistent: a "
        "page in the wrong place in the tree, a broken link between pages, a damaged index tuple or one pointing at "
        "the wrong heap row. Index scans may skip or repeat rows. The table's rows are not affected.",
        (
            ModeRef("btree", ("item", "high_key", "siblings", "btpo_prev", "btpo_next", "special")),
            ModeRef("gin", ("posting-list",), "gin_index_check on 18"),
        ),
        (
            _INDEX_TABLE,
            Step("check the table and all its indexes", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
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
            Step("decode the row's page", "pgsurgeon inspect{conn}{dbopt} -t {rel} -b {block}"),
            _REINDEX,
        ),
    ),
    _p(
        "compressed_corrupt",
        r"compressed (?:(?P<method>pglz|lz4) )?data is corrupt",
        "a compressed value does not decompress",
        "A column value compressed with {method} does not decompress to the size recorded for it: bytes inside the "
        "compressed value changed, or its header was damaged so that plain data is read as compressed.",
        (ModeRef("tuple-data", ("bitflip", "random", "varlena")), ModeRef("toast", ("chunk_data",))),
        (_DIAGNOSE, _SCAN_ALL),
        derive=lambda v: v.update(method=v.get("method", "pglz")),  # before PostgreSQL 14 the only method
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
        r"corrupted (?:line|item) pointer: (?:offset = (?P<off>\d+), (?:size|length) = (?P<size>\d+)|(?P<lp>\d+))",
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
        "startup_failed",
        r"startup process \(PID (?P<pid>\d+)\) (?:was terminated by (?:signal|exception) (?P<signal>\w+)|"
        r"exited with exit code (?P<code>\d+))",
        "the server did not start: recovery stopped",
        "The startup process replays WAL before the server accepts connections. It stopped (exit code 1 after a "
        "FATAL, signal 6 the abort a PANIC raises) on the error logged just before this line, and the server shut "
        "down. That error says what is damaged or missing; this line only says the server is down.",
        _REFUSING_MODES,
        (
            Step("read the PANIC or FATAL logged just before it", "pgsurgeon explain --file {log}"),
            Step(
                "pg_control: the state the server was left in and the checkpoint it needs",
                "pgsurgeon control -D {pgdata}",
            ),
            Step(
                "save every table with no server (read-only)",
                "pgsurgeon unload -D {pgdata} --out unloaded -P",
            ),
            Step(
                "plan pg_resetwal: each value derived from the files and checked against pg_control, what a wrong one "
                "risks, and the ways out as commands (nothing is run or written)",
                "pgsurgeon control --plan {pgdata}",
            ),
        ),
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
                "grep -B2 -A3 'terminated by signal' {pglog} | grep 'Failed process was running'",
            ),
            Step("do not run it again; find the damaged pages without the executor", "{diagnose_cmd}"),
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
            Step("find the crash and its query in the server log", "grep -A3 'terminated by signal' {pglog}"),
            Step("find the damaged pages without the executor", "{diagnose_cmd}"),
        ),
    ),
    _p(
        "pg_dump_table",
        r'Dumping the contents of table "(?P<table>[^"]+)" failed: PQgetResult\(\) failed',
        "pg_dump stopped at a table it could not read",
        "pg_dump read {table} with COPY and the server failed part-way; pg_dump stops at the first such table and "
        "the dump is incomplete. The lines after this one ('Error message from server: …', 'The command was: COPY "
        "…') say why: a damaged page, a TOAST value, a transaction status, or a crashed backend.",
        _CRASH_MODES,
        (
            Step(
                "the cause is in the lines that follow it",
                "explain them as well: paste pg_dump's whole output, or pass the file it went to with --file",
                "note",
            ),
            _DIAGNOSE,
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
        (Step("decode the page", "pgsurgeon inspect{conn}{dbopt} -t {rel} -b {block}"), _DIAGNOSE_TABLE),
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
        derive=derive_relpath,
    ),
    _p(
        "relmapper",
        r'relation mapping file "(?P<file>[^"]+)" contains (?P<what>invalid data|incorrect checksum)',
        "the relation map of a database is damaged",
        "{file} maps the core catalogs (pg_class and friends) to their files; it {what_text}. No connection to that "
        "database (or, for global/, to any) can start.",
        (ModeRef("relmap", ("database", "global")),),
        (
            Step("list the relation files (the map itself is not needed for that)", "pgsurgeon files -D {pgdata}"),
            Step(
                "restore the file from a backup of the same cluster; it changes only on VACUUM FULL/CLUSTER of a"
                " mapped catalog",
                "ls -l {pgdata}/{file}",
            ),
        ),
        derive=lambda v: v.update(
            what_text="contains invalid data" if v["what"] == "invalid data" else "fails its CRC"
        ),
    ),
    _p(
        "control_file",
        r"incorrect checksum in control file|database files are incompatible with server|"
        # pg_controldata's and pg_resetwal's warning, whose first line is all a log or paste may keep
        r"Calculated CRC checksum does not match value stored in file\.|"
        r"control file contains invalid (?:checkpoint location|database cluster state)",
        "pg_control is damaged or from another version",
        "global/pg_control (the cluster's checkpoint location, XID horizons and settings) fails its CRC or does not "
        "match this server build, so the server does not start.",
        (ModeRef("control", ("crc", "version")),),
        (
            Step("decode pg_control, whatever its version, and check its CRC", "{control_cmd}"),
            Step("save every table with no server (read-only)", "pgsurgeon unload -D {pgdata} --out unloaded -P"),
            Step(
                "plan pg_resetwal: each value derived from the files and checked against pg_control, what a wrong one "
                "risks, and the ways out as commands (nothing is run or written)",
                "pgsurgeon control --plan {pgdata}",
            ),
        ),
    ),
    # ---- the cluster's other files: WAL, prepared transactions, replication slots, logical snapshots
    _p(
        "checkpoint_record",
        r"(?:could not locate (?:a valid|required) checkpoint record|"
        r"invalid (?:(?:resource manager ID|xl_info|length|redo) (?:in|of) )?(?:primary |secondary )?checkpoint record|"
        r"could not find redo location (?:[0-9A-F]+/[0-9A-F]+ )?referenced by checkpoint record)"
        r"(?: at (?P<lsn>[0-9A-F]+/[0-9A-F]+))?",
        "the server cannot read its last checkpoint: WAL is missing or damaged",
        "At startup the server reads the checkpoint record pg_control points to (in pg_wal) to know where to start "
        "replaying WAL. That record is missing (a WAL segment removed, pg_wal emptied or lost with its mount, a "
        "backup restored without its WAL) or damaged, so the server does not start. The data files are as the last "
        "checkpoint left them, plus whatever was written after it: nothing is lost yet. pg_resetwal makes the server "
        "start by forgetting the WAL, and transactions committed after the checkpoint can come back half applied; "
        "run it on a copy, after the rows are saved.",
        _CHECKPOINT_MODES,
        (
            Step(
                "pg_control: the checkpoint and redo locations, the WAL segment they need, and whether the server was "
                "shut down cleanly",
                "pgsurgeon control -D {pgdata}",
            ),
            Step("see which WAL segments are left", "ls -l {pgdata}/pg_wal"),
            Step(
                "with a WAL archive, copy the missing segments back into pg_wal (or set restore_command) and start "
                "again: nothing is lost",
                "the archive's segment names are the ones pgsurgeon control names",
                "note",
            ),
            Step(
                "without one, save every table with no server first (read-only: the data directory is not written)",
                "pgsurgeon unload -D {pgdata} --out unloaded -P",
            ),
            Step(
                "plan pg_resetwal: each value derived from the files and checked against pg_control, what a wrong one "
                "risks, and the ways out as commands (nothing is run or written)",
                "pgsurgeon control --plan {pgdata}",
            ),
            Step("check every page of the stopped cluster", "pgsurgeon scan {pgdata}"),
        ),
    ),
    _p(
        "twophase_file",
        r"(?:calculated CRC checksum does not match value stored in|incorrect size of|invalid (?:magic number|size) "
        r'stored in|incorrect alignment of CRC offset for) file "(?P<file>[^"]+)"',
        "a prepared transaction's state file is damaged",
        "{file} holds the state of a prepared transaction (PREPARE TRANSACTION; pg_twophase/, twophase.c) and fails "
        "its own check: a wrong size, magic number or CRC. The server reads these files at startup and at COMMIT or "
        "ROLLBACK PREPARED: it does not start, or that transaction cannot be finished. It is not a page; the "
        "simulator does not damage it.",
        (),
        (
            Step("see the prepared transactions' files, their sizes and times", "ls -l {pgdata}/pg_twophase"),
            Step(
                "restore the file from a backup or a standby of the same cluster taken after the PREPARE",
                "moving it aside instead loses that prepared transaction: its changes never commit",
                "note",
            ),
        ),
    ),
    _p(
        "file_short_read",
        r'could not read file "(?P<file>[^"]+)"[:,] read (?P<got>\d+) (?:of|bytes, expected) (?P<want>\d+)',
        "a file is shorter than its contents say",
        "Reading {file} returned {got} bytes where {want} were expected: the file was cut short (a full disk, a "
        "crash during a copy, a truncated restore) or its recorded size is damaged.",
        (ModeRef("control", ("truncate",), "global/pg_control"),),
        (
            Step("see the file's size", "ls -l {pgdata}/{file}"),
            Step("list the cluster's files", "pgsurgeon files -D {pgdata}"),
        ),
    ),
    _p(
        "wal_short_read",
        r"could not read from (?:WAL|log) segment (?P<segment>[^\s,]+)(?:, LSN [0-9A-F]+/[0-9A-F]+)?, offset "
        r"(?P<offset>\d+): read (?P<got>\d+) of (?P<want>\d+)",
        "a WAL segment file is shorter than a segment",
        "pg_wal/{segment} ended at offset {offset} with {got} of {want} bytes read: the WAL file was cut short (a "
        "full disk, a copy that stopped, a storage fault). Recovery, a standby or a WAL sender needs the records "
        "past that point.",
        (),
        (
            Step("see the segment's size (every segment is wal_segment_size long)", "ls -l {pgdata}/pg_wal/{segment}"),
            Step("the checkpoint and redo location recovery starts from", "{control_cmd}"),
        ),
    ),
    _p(
        "replication_slot_file",
        r'replication slot (?:file "?(?P<file>[^"\s:]+)"?(?::| has) (?:wrong magic|unsupported version|corrupted '
        r"length|checksum mismatch)|checkpoint has wrong checksum)|checksum mismatch for replication slot file",
        "a replication slot's state file is damaged",
        "A replication slot's state (pg_replslot/<slot>/state, slot.c) fails its check: a wrong magic number, "
        "version or CRC. The server does not start with it. It is not a page; the simulator does not damage it.",
        (),
        (
            Step("see the slots' directories and state files", "ls -lR {pgdata}/pg_replslot"),
            Step(
                "with the server stopped, moving the slot's directory out of pg_replslot drops the slot",
                "its consumer (a standby or a logical subscriber) must then be set up again from a new slot",
                "note",
            ),
        ),
    ),
    _p(
        "snapbuild_file",
        r'snapbuild state file "?(?P<file>[^"\s:]+)"?(?::| has) (?:wrong magic|unsupported version|checksum '
        r"mismatch)|checksum mismatch for snapbuild state file",
        "a logical decoding snapshot file is damaged",
        "A snapshot logical decoding saved (pg_logical/snapshots, snapbuild.c) fails its check. "
        "Logical replication slots that need it cannot decode; the tables' data is not affected.",
        (),
        (
            Step("see the saved snapshots", "ls -l {pgdata}/pg_logical/snapshots"),
            Step("the logical slots and where they stand", 'psql{conn} -c "SELECT * FROM pg_replication_slots"'),
        ),
    ),
    _p(
        "xml_declaration",
        r"could not parse XML declaration in stored value",
        "a stored xml value is damaged",
        "An xml value read from a table does not start with the declaration the server stored: the bytes of the "
        "value (or of its TOAST chunks) changed on disk.",
        (ModeRef("tuple-data", ("bitflip", "random")),),
        (Step("find the damaged rows and pages, continuing past errors", "pgsurgeon diagnose{conn}"),),
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
            Step("see the MultiXact files", "ls -l {pgdata}/pg_multixact/offsets {pgdata}/pg_multixact/members"),
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
            Step("decode the page", "pgsurgeon inspect{conn}{dbopt} -t {rel} -b {block}"),
            Step(
                "every damaged page of the table, continuing past errors",
                "pgsurgeon diagnose{conn}{dbopt} -t {rel}",
            ),
            _DIAGNOSE,
        ),
        extras=(("where", "The damage is at {where} of {table}."),),
        derive=derive_amcheck,
    ),
    # ---- sequences: one row that is not carved but recreated
    _p(
        "sequence_no_row",
        r'query to get data of sequence "(?P<seq>[^"]+)" returned (?P<rows>\d+) rows? \(expected 1\)',
        "a sequence's only row cannot be read",
        "pg_dump read sequence {seq} and got {rows} rows instead of its single row: the tuple on the sequence's one "
        "page is invisible (its xmin or infomask is damaged) or the page was zeroed. A sequence holds one number, not "
        "data: nothing is to be carved from it. Recreate it past the highest value in use, then dump again.",
        (ModeRef("tuple-header", ("t_xmin", "t_infomask"), "on a sequence"), ModeRef("zero", (), "on a sequence")),
        (),
        tail="sequence",
    ),
    _p(
        "sequence_magic",
        r'bad magic number in sequence "(?P<seq>[^"]+)": (?P<magic>[0-9A-Fa-f]+)',
        "a sequence's page is damaged",
        "The special space of sequence {seq}'s only page does not hold the sequence magic number ({magic}): the page "
        "is damaged or is not a sequence page. A sequence holds one number: recreate it rather than carve it.",
        (ModeRef("header", ("pd_special",), "on a sequence"),),
        (),
        tail="sequence",
    ),
    # ---- heap: what VACUUM, index builds and updates notice
    _p(
        "concurrent_insert",
        r'concurrent (?P<what>insert|delete) in progress within table "(?P<table>[^"]+)"',
        "an index build met a row whose transaction looks still running",
        "While building an index on {table} (CREATE INDEX, REINDEX, CLUSTER), the server found a row whose "
        "{what}ing transaction is reported as still in progress. With no such transaction running, the row's xmin "
        "or xmax (or its hint bits) is damaged: a garbage XID newer than any real one reads as 'in progress'.",
        (ModeRef("tuple-header", ("t_xmin", "t_xmax", "t_infomask")),),
        (_CONTROL, _DIAGNOSE),
    ),
    _p(
        "freeze_more",
        r"(?P<msg>found xmax (?P<xid>\d+) \(infomask 0x[0-9a-f]+\) not frozen, not multi, not normal|"
        r"cannot freeze committed update xid (?P<xid2>\d+)|"
        r"found update xid (?P<xid3>\d+) from before xid cutoff (?P<cutoff>\d+)|"
        r"multixact (?P<multi>\d+) from before (?:multi freeze )?cutoff (?P<mcutoff>\d+) found to be still running|"
        r"found multixact (?P<multi2>\d+) from before relminmxid (?P<minmxid>\d+)|"
        r"found raw xmax (?P<xid4>\d+) \(infomask 0x[0-9a-f]+\) not invalid and not multi|"
        r"multixact (?P<multi3>\d+) (?:has two or more updating members|contains running locker XID \d+ from before "
        r"removable cutoff \d+)|"
        r'overwrote invalid (?:relfrozenxid|relminmxid) value \d+ with new value \d+ for table "(?P<table>[^"]+)")',
        "VACUUM found a tuple header it cannot freeze",
        "VACUUM refused to freeze a row: {msg}. Freezing needs a coherent xmin/xmax and infomask; these values "
        "contradict each other or the table's horizons, so the tuple header is damaged. VACUUM of the table fails "
        "until the row is dealt with.",
        (ModeRef("tuple-header", ("t_xmax", "t_infomask")),),
        (_CONTROL, _DIAGNOSE),
    ),
    _p(
        "xmin_uncommitted_update",
        r"(?P<msg>t_xmin (?P<xid>\d+) is uncommitted in tuple \((?P<block>\d+),(?P<offset>\d+)\) to be updated in "
        r'table "(?P<table>[^"]+)"|t_xmin is uncommitted in tuple to be updated)',
        "an update met a row whose inserter never committed",
        "Updating the row at ({block},{offset}) of {table}, the server found its inserting transaction {xid} marked "
        "as not committed although the row is visible: the xmin or its hint bits are damaged.",
        (ModeRef("tuple-header", ("t_xmin", "t_infomask")),),
        (_DIAGNOSE_TABLE,),
    ),
    _p(
        "invisible_tuple",
        r"attempted to (?P<op>delete|update|lock) invisible tuple",
        "a statement reached a row it should not see",
        "The server tried to {op} a row that its own visibility rules say is invisible: the row's xmin/xmax or "
        "infomask bits contradict each other, or an index points at the wrong tuple.",
        (ModeRef("tuple-header", ("t_xmin", "t_xmax", "t_infomask")), ModeRef("btree", ("item",))),
        (_DIAGNOSE,),
    ),
    _p(
        "page_not_empty",
        r'page (?P<block>\d+) of relation "(?P<table>[^"]+)" should be empty but is not',
        "a new page at the end of a table is not empty",
        "Extending {table}, the server got block {block} as a fresh page and found data in it: the file's size and "
        "its contents disagree (a truncation or extension that was lost, a file copied in while running).",
        (ModeRef("truncate"),),
        (_DIAGNOSE_TABLE,),
    ),
    _p(
        "page_uninitialized",
        r'(?:relation "(?P<table>[^"]+)" page (?P<block>\d+)|page (?P<block2>\d+) of relation "?(?P<table2>[^"]+?)"?)'
        r" is uninitialized --- fixing",
        "VACUUM found an all-zero page inside a table",
        "VACUUM found a page that was never initialised (all zeroes) inside the table and initialised it. After a "
        "crash during extension this is harmless; anywhere else a page's contents were lost.",
        (ModeRef("zero"),),
        (_DIAGNOSE_TABLE,),
        derive=lambda v: v.update(
            {k: v[k2] for k, k2 in (("block", "block2"), ("table", "table2")) if k2 in v and k not in v}
        ),
    ),
    _p(
        "vm_mismatch",
        # "LP_DEAD items" since 14 (vacuumlazy.c), "dead tuples" before
        r"(?:page is not marked all-visible but visibility map bit is set|page containing (?:dead tuples|LP_DEAD "
        r'items) is marked as all-visible) in relation "(?P<table>[^"]+)" page (?P<block>\d+)',
        "the visibility map disagrees with a page",
        "VACUUM found the visibility map bit of block {block} of {table} set for a page that is not all-visible: "
        "the visibility map (the _vm fork) or the page's PD_ALL_VISIBLE flag is wrong. Index-only scans may return "
        "rows that were deleted. The rows themselves are intact. VACUUM has cleared this bit; pgsurgeon scan "
        "reports every other such page (vm.all_visible_wrong, vm.all_frozen_wrong).",
        (ModeRef("header", ("pd_flags",)), ModeRef("vm", ("all-visible", "all-frozen"))),
        (
            Step(
                "check and clear the map (pg_visibility), then VACUUM rebuilds it",
                "SELECT * FROM pg_check_visible('{table_sql}'::regclass); "
                "SELECT pg_truncate_visibility_map('{table_sql}'::regclass);",
                "sql",
            ),
        ),
    ),
    _p(
        "lsn_beyond_wal",
        r"xlog flush request (?P<lsn>[0-9A-F]+/[0-9A-F]+) is not satisfied --- flushed only to "
        r"(?P<flushed>[0-9A-F]+/[0-9A-F]+)",
        "a page's LSN lies beyond the end of the WAL",
        "Writing a page out, the server had to flush WAL up to {lsn}, past the end of the WAL ({flushed}): the "
        "page's pd_lsn is damaged (or WAL was lost by a restore). The log's CONTEXT line ('writing block N of "
        "relation …') names the page; checkpoints fail until it is dealt with.",
        (ModeRef("header", ("pd_lsn",)),),
        (
            Step("find the page: the CONTEXT line under the error", "grep -A2 'xlog flush request' {pglog}"),
            _INSPECT,
            _SCAN_REL,
            _FIND_REL,
            _SCAN_ALL,
        ),
        derive=derive_relpath,
    ),
    # ---- storage manager and file access
    _p(
        "seek_failed",
        r'could not seek to (?:block (?P<block>\d+) in|end of) file "(?P<file>[^"]+)": (?P<reason>[^\n]+)',
        "the operating system could not seek in a relation file",
        "The server could not position itself in {file} ({reason}): a failing disk or a filesystem problem, not "
        "damaged page contents. Copy the data directory (or what can be read) before anything else.",
        (),
        (
            Step("look for disk errors", "dmesg | grep -i -E 'i/o error|medium|ata|nvme'"),
            _SCAN_REL,
            _FIND_REL,
        ),
        derive=derive_file,
    ),
    _p(
        "write_failed",
        r'could not (?:write|extend|fsync|truncate) (?:block (?P<block>\d+) (?:in|of) )?(?:file "(?P<file>[^"]+)"|'
        r"(?P<relpath>(?:base|global|pg_tblspc)/\S+))(?P<rest>[^\n]*)",
        "the operating system could not write a relation file",
        "Writing {file} failed in the operating system{rest}: a full or failing disk, a read-only filesystem or "
        "permissions. The data already in the file is not damaged by this message itself.",
        (),
        (Step("look for disk errors and free space", "dmesg | tail -50; df -h {pgdata}"), _FIND_REL),
        derive=derive_file,
    ),
    _p(
        "catalog_duplicate",
        # not a unique name (pg_type_typname_nsp_index, pg_namespace_nspname_index, …): two sessions creating
        # the same name at once (CREATE … IF NOT EXISTS included) collide there, an ordinary error
        r'duplicate key value violates unique constraint "(?P<index>pg_(?!\w*(?:name|nsp)_index")\w+_index)"',
        "a system catalog's unique index holds a duplicate",
        "A catalog row was inserted with a key that {index} already holds. PostgreSQL assigns those keys itself "
        "(OIDs are checked against the index before use), so in normal use this does not happen: the catalog index "
        "is damaged (it lost the existing entry) or a catalog row reappeared (a damaged xmax/infomask made a deleted "
        "row visible again).",
        (ModeRef("btree", ("item",), "on a catalog index"), ModeRef("tuple-header", ("t_xmax", "t_infomask"))),
        (
            Step("check the catalog and its indexes (read-only)", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
            Step("rebuild the catalog's indexes once its rows are known sound", "REINDEX SYSTEM CONCURRENTLY;", "note"),
        ),
        tail="",
    ),
    _p(
        "pg_class_index",
        r"could not find pg_class (?:tuple for index|entry for) (?P<oid>\d+)|could not open critical system index "
        r"(?P<oid2>\d+)",
        "an index's catalog row is missing",
        "The server looked for the pg_class row of index {oid} and found none: pg_class or one of its indexes is "
        "damaged.",
        (),
        (Step("check pg_class and its indexes (read-only)", "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.pg_class"),),
        tail="",
    ),
    _p(
        "wraparound_stop",
        r"database is not accepting commands (?:that assign new (?:XIDs|MultiXactIds) )?to avoid wraparound data loss"
        r'(?: in database "(?P<database>[^"]+)")?',
        "the cluster stopped handing out transaction ids (wraparound protection)",
        "The oldest unfrozen transaction id is close to wrapping around, so the server refuses new writes. Usually "
        "VACUUM could not freeze a table: it failed on a damaged tuple (found xmin … from before relfrozenxid, "
        "could not access status of transaction) or was blocked by an old transaction or replication slot.",
        (ModeRef("tuple-header", ("t_xmin",), "when VACUUM fails on the damaged tuple"),),
        (
            Step(
                "the tables holding the horizon back",
                "SELECT oid::regclass, age(relfrozenxid) FROM pg_class "
                "WHERE relkind IN ('r', 't', 'm') ORDER BY 2 DESC LIMIT 10;",
                "sql",
            ),
            _CONTROL,
            _DIAGNOSE,
        ),
        tail="",
    ),
    _p(
        "checkpoint_failed",
        r"checkpoint request failed",
        "a checkpoint could not finish",
        "The checkpointer failed, usually because a page could not be written: a damaged pd_lsn beyond the end of "
        "the WAL ('xlog flush request … is not satisfied'), a full or failing disk. The messages just before it in "
        "the server log name the page.",
        (ModeRef("header", ("pd_lsn",)),),
        (
            Step("the messages before it", "grep -B5 'checkpoint request failed' {pglog}"),
            _SCAN_ALL,
        ),
        tail="",
    ),
    _p(
        "xid_future",
        r"transaction ID (?P<xid8>\d+) is in the future",
        "an XID read from a row is newer than any the cluster has handed out",
        "A transaction number taken from a row ({xid8}, with its epoch) lies in the future of the cluster: the row's "
        "xmin/xmax is damaged.",
        (ModeRef("tuple-header", ("t_xmin", "t_xmax")),),
        (_DIAGNOSE,),
    ),
    _p(
        "segment_short",
        r'could not open file "(?P<file>[^"]+)" \(target block (?P<block>\d+)\): previous segment is only '
        r"(?P<blocks>\d+) blocks",
        "a segment before the one wanted is short",
        "To reach block {block} the server needed {file}, but the segment before it holds only {blocks} blocks "
        "instead of 131072: a segment was truncated, so the blocks after its end are gone.",
        (ModeRef("truncate"), ModeRef("missing-segment")),
        (Step("see which segments exist", "ls -l {pgdata}/{relfile}*"), _SCAN_REL, _FIND_REL, _DIAGNOSE_REL),
        derive=derive_file,
    ),
    _p(
        "slru_read",
        r'could not (?:open|read|seek in|read from|access) (?:file )?"(?P<slru>pg_(?:xact|clog|multixact/\w+|subtrans|'
        r'commit_ts)/[0-9A-F]+)"',
        "a transaction status file is missing or unreadable",
        "The server could not read {slru}, where the commit status (or MultiXact membership) of transactions is "
        "kept. When the transaction number comes from a row, that row's xmin/xmax is almost always damaged.",
        _TUPLE_XID_MODES,
        (Step("see which status files exist", "ls -l {pgdata}/pg_xact {pgdata}/pg_multixact/offsets"), _CONTROL),
    ),
    # ---- relation map, catalogs and caches
    _p(
        "relmapper_open",
        r'could not (?:open|read) (?:relation mapping )?file "(?P<file>[^"]*pg_filenode\.map)"(?P<rest>[^\n]*)',
        "the relation map of a database cannot be read",
        "{file} maps the core catalogs (pg_class and friends) to their files, and the server could not read it"
        "{rest}. No connection to that database (for global/, to any) can start.",
        (),
        (
            Step("list the relation files (the map itself is not needed for that)", "pgsurgeon files -D {pgdata}"),
            Step("look at the file; restore it from a backup of the same cluster", "ls -l {pgdata}/{file}"),
        ),
    ),
    _p(
        "relmap_missing",
        r'could not find relation mapping for relation "?(?P<table>[^",]+)"?, OID (?P<oid>\d+)',
        "a mapped catalog is missing from the relation map",
        "The relation map of the database has no entry for catalog {table} (OID {oid}): pg_filenode.map is damaged "
        "or from another cluster.",
        (),
        (
            Step(
                "look at the file; restore it from a backup of the same cluster",
                "ls -l {pgdata}/global/pg_filenode.map",
            ),
        ),
    ),
    _p(
        "cache_lookup",
        r'cache lookup failed for (?P<what>[a-z][a-z_ -]*?) (?:(?P<oid>\d+)|"(?P<name>[^"]*)")',
        "a catalog row the server needs is missing",
        "The server looked up {what} {oid} in the system catalogs and found nothing. Right after a concurrent DROP "
        "this is a race and harmless; otherwise a catalog row (or a catalog page or index) is damaged or lost, and "
        "every statement touching that object fails.",
        (),
        (
            Step(
                "check the catalogs with amcheck (read-only)",
                "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.pg_class -t pg_catalog.pg_attribute "
                "-t pg_catalog.pg_type -t pg_catalog.pg_proc",
            ),
            Step(
                "if the catalogs are sound, rebuild their indexes (single-user mode may be needed)",
                "REINDEX SYSTEM CONCURRENTLY;",
                "note",
            ),
        ),
        tail="",
    ),
    _p(
        "catalog_attributes",
        r"(?:pg_attribute )?catalog is missing (?P<n>\d+) attribute\(s\) for (?:relid|relation OID) (?P<oid>\d+)",
        "the columns of a relation are missing from pg_attribute",
        "Building the description of relation {oid} the server found {n} column(s) fewer in pg_attribute than "
        "pg_class promises: pg_attribute (its rows, pages or indexes) is damaged.",
        (),
        (
            Step("does the relation exist?", "SELECT {oid}::oid::regclass;", "sql"),
            Step(
                "check pg_attribute and its indexes (read-only)",
                "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.pg_attribute",
            ),
        ),
        tail="",
    ),
    _p(
        "catalog_null",
        r"unexpected null value in cached tuple for catalog (?P<catalog>\w+) column (?P<column>\w+)",
        "a catalog row has a NULL where none can be",
        "A row of {catalog} has NULL in {column}, which the server never writes: the catalog row is damaged.",
        (),
        (Step("check the catalog (read-only)", "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.{catalog}"),),
        tail="",
    ),
    # ---- btree internals (nbtree) and other index access methods
    _p(
        "btree_structure",
        r"(?P<msg>right sibling's left-link doesn't match|invalid meta page found at block \d+|"
        r"fell off the end of|failed to re-find parent key|"
        r"right sibling \d+ of block \d+ is not next child|left link changed unexpectedly|"
        r"could not find left sibling of block \d+|btree level \d+ not found|no live root page found|"
        r"failed to delete|has no first data item|"
        r"root page \d+(?= of)|half-dead page changed status unexpectedly|failed to add (?:new item|hikey)|"
        r"failed to add (?:new |old )?item to the (?:left|right) sibling|"
        r"failed to add item to the index page|lost saved point in index|could not find parent|"
        r"downlink to deleted page found|mismatch between parent key and child high key|"
        r"internal index block lacks (?:high key|downlink)|index uniqueness is violated|"
        r"leftmost down link for level points to block|invalid leaf page level)[^\n]*?"
        r'(?:index "(?P<index>[^"]+)"|(?:in|of) "(?P<index2>[^"]+)"|$)',
        "a btree index's page links or keys are inconsistent",
        "The btree code found the index's structure broken ({msg}): sibling links, parent pointers or keys that "
        "cannot be right. The index is damaged; the table's rows are not affected. Rebuild it.",
        (ModeRef("btree", ("siblings", "btpo_prev", "btpo_next", "item", "high_key")),),
        (
            Step("check the table and all its indexes", "pgsurgeon diagnose{conn}{dbopt} -t {index_sh}"),
            _INDEX_TABLE,
            _REINDEX,
            Step("the message names no index: check every btree index of the database", "{diagnose_noindex}"),
        ),
        tail="",
    ),
    # Issue 30, GiST and SP-GiST part.
    _p(
        "exclusion_rebuild",
        r'could not create exclusion constraint "(?P<constraint>[^"]+)"',
        "an exclusion constraint cannot be rebuilt: rows in the table conflict",
        "Building (or REINDEXing) the index of exclusion constraint {constraint} found two rows that conflict under "
        "it. When this is a REINDEX of an index that existed, the damaged old index missed one of them when the other "
        "was inserted (a GiST downlink or leaf entry pointing elsewhere), and the constraint let it in. The DETAIL "
        "names the keys; pgsurgeon repair lists every such pair by ctid before it rebuilds the index.",
        (ModeRef("gist", ("leaf_tid", "downlink"), "then an INSERT of a row that conflicts with the lost entry"),),
        (
            Step(
                "name the table and the index of the constraint",
                "SELECT conrelid::regclass AS table_name, conindid::regclass AS index_name FROM pg_constraint "
                "WHERE contype = 'x' AND conname = '{constraint_sql}';",
                "sql",
            ),
            Step(
                "list the pairs of conflicting rows by ctid (a dry run: nothing is changed)",
                "pgsurgeon repair{conn}{dbopt} -t TABLE",
            ),
        ),
        derive=_constraint_literal,
        tail="",
    ),
    _p(
        "unique_rebuild",
        r'could not create unique index "(?P<index>[^"]+)"',
        "a unique index cannot be built: the table holds duplicate keys",
        "Building (or REINDEXing) unique index {index} found two rows with the same key. When this is a REINDEX of "
        "an index that existed, the damaged old index let duplicates in, or a row's old version became visible again "
        "(damaged xmax/infomask): the DETAIL names the key. On a brand-new index over data never declared unique it "
        "is an ordinary error.",
        (ModeRef("btree", ("item",)), ModeRef("tuple-header", ("t_xmax", "t_infomask"))),
        (
            Step(
                "list the duplicated rows with their ctids, xmin and xmax (psql runs the query \\gexec builds)",
                "SELECT format('SELECT ctid, xmin, xmax, * FROM %s WHERE (%s) IN (SELECT %2$s FROM %1$s GROUP BY %2$s "
                "HAVING count(*) > 1)', i.indrelid::regclass, (SELECT string_agg(quote_ident(a.attname), ', ') FROM "
                "pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey))) FROM pg_index i WHERE "
                "i.indexrelid = '{index_sql}'::regclass \\gexec",
                "sql",
            ),
            _INDEX_TABLE,
        ),
        tail="",
    ),
    _p(
        "index_wrong_am",
        r'index "(?P<index>[^"]+)" (?:is not an? (?P<am>\w+(?:-\w+)?) index|has wrong hash version|'
        r"contains an inner tuple marked as invalid)",
        "an index's metapage or tuples are damaged",
        "Index {index} does not carry the marks of its access method on its metapage, or holds a tuple flagged "
        "invalid: the index is damaged (or was left by an incomplete split before 9.1). Rebuild it.",
        (
            ModeRef("btree", ("special",), "on block 0"),
            ModeRef("spgist", ("meta",)),
            ModeRef("zero", (), "on block 0 of an index"),
            ModeRef("hash", ("metapage",)),
        ),
        (_INDEX_TABLE, _REINDEX),
        tail="",
    ),
    # Issue 30, GIN part: what a damaged GIN index makes the server say (ginentrypage.c, ginget.c, ginbtree.c,
    # tidbitmap.c). None of these names the index: the step runs gin_index_check (18) on each GIN index to find it.
    _p(
        "gin_item_count",
        r"number of items mismatch in GIN entry tuple, (?P<header>\d+) in tuple header, (?P<decoded>\d+) decoded",
        "a GIN entry's posting list does not hold the items its header counts",
        "A GIN index entry says it holds {header} heap TIDs but its compressed posting list decodes to {decoded}: "
        "the entry tuple is damaged. Every search that reads this key fails; the table's rows are not affected.",
        (ModeRef("gin", ("entry-leaf",)),),
        (_CANDIDATES, _GIN_FIND, _GIN_DIAGNOSE, _GIN_REINDEX),
        derive=derive_gin,
        tail="",
    ),
    _p(
        "gin_pending_list",
        r"could not find additional pending pages for same heap tuple",
        "a GIN index's pending list is broken",
        "A GIN index's pending list (rows inserted with fastupdate, not yet moved into the tree) does not chain as "
        "its metapage says: its head or a page's right-link leads to a page that is not a pending list page. "
        "Searches on the index fail; the table's rows are not affected.",
        (ModeRef("gin", ("metapage",)),),
        (_CANDIDATES, _GIN_FIND_SCAN, _GIN_DIAGNOSE, _GIN_REINDEX),
        derive=derive_gin,
        tail="",
    ),
    _p(
        "gin_sibling",
        r"right sibling of GIN page is of different type",
        "a GIN page's right-link leads to a page of another kind",
        "Moving right along a level of a GIN index, the server reached a page of another kind (entry tree, posting "
        "tree or pending list): a right-link or a page's flags are damaged. The table's rows are not affected.",
        (ModeRef("gin", ("entry-internal",), "when the downlink lands on a page of this index"),),
        (_CANDIDATES, _GIN_FIND, _GIN_DIAGNOSE, _GIN_REINDEX),
        derive=derive_gin,
        tail="",
    ),
    _p(
        "tid_offset_range",
        r"tuple offset out of range: (?P<offset>\d+)",
        "an index handed a bitmap scan an impossible heap TID",
        "A bitmap index scan got a heap TID with line pointer {offset}, which no heap page has: an index entry "
        "(a GIN posting list or pending list tuple, a btree item) is damaged. The table's rows are not affected.",
        (
            ModeRef("gin", ("posting-list", "posting-tree", "pending-list")),
            ModeRef("btree", ("item",), "with --value BLOCK,0"),
        ),
        (_CANDIDATES, _GIN_FIND_SCAN, _GIN_DIAGNOSE, _GIN_REINDEX),
        derive=derive_bitmap_tid,
        tail="",
    ),
    _p(
        "index_other_am",
        r"(?P<msg>failed to re-find parent of a page in|corrupted BRIN index|unexpected page type 0x[0-9A-F]+ in "
        r"BRIN|unexpected SPGiST tuple state|index table contains corrupted page|"
        r"index \"(?P<index3>[^\"]+)\" has wrong tuple order|failed to add item to index page in|"
        r"GIN posting list|invalid GIN|could not split GIN page|unexpected GIN|"
        r"failed to add item of size \d+ to SPGiST|"
        r"leftover placeholder tuple detected in BRIN index|"
        r"inconsistent range map)[^\n]*?"
        r'(?:index "(?P<index>[^"]+)"|in "(?P<index2>[^"]+)"|$)',
        "a GiST, GIN, SP-GiST, hash or BRIN index is damaged",
        "The index code found its own structure impossible ({msg}). The index is damaged; the table's rows are "
        "not affected. Rebuild it.",
        (ModeRef("brin", ("metapage", "revmap", "regular"), "a BRIN index: 'inconsistent range map'"),),
        (
            _INDEX_TABLE,
            _REINDEX,
            _CANDIDATES,
            Step(
                "the message names no index: the {am} indexes of the database, to rebuild (amcheck checks btree only)",
                "SELECT format('REINDEX INDEX CONCURRENTLY %s;', c.oid::regclass) FROM pg_class c JOIN pg_am a ON "
                "a.oid = c.relam WHERE c.relkind = 'i' AND a.amname = '{am}' \\gexec",
                "sql",
            ),
        ),
        derive=derive_am,
        tail="",
    ),
    # ---- client tools and amcheck's own lines
    _p(
        "pg_amcheck_summary",
        r'(?P<msg>error sending command to database "(?P<database>[^"]+)": [^\n]*|no (?:heap tables|btree indexes|'
        r"relations) to check[^\n]*)",
        "pg_amcheck could not check something",
        "pg_amcheck reported: {msg}. When it names a relation or a database, a check stopped there with an error; "
        "the message after 'ERROR:' is explained on its own when pasted.",
        (),
        (_DIAGNOSE,),
        tail="",
    ),
    _p(
        "pg_checksums_summary",
        r"Bad checksums:\s+(?P<bad>[1-9]\d*)",
        "pg_checksums counted bad checksums",
        "pg_checksums found {bad} page(s) whose checksum does not match. Its 'checksum verification failed in file' "
        "lines name each one.",
        _CHECKSUM_MODES,
        (Step("the same, with causes and relation names", "pgsurgeon scan {pgdata}"),),
        tail="",
    ),
    _p(
        "basebackup_checksums",
        r"(?P<total>[1-9]\d*) total checksum verification failures?|checksum verification failure during base backup|"
        r'file "(?P<file>[^"]+)" has a total of (?P<count>[1-9]\d*) checksum verification failures?|'
        r'further checksum verification failures in file "(?P<file2>[^"]+)" will not be reported',
        "a base backup found bad checksums",
        "pg_basebackup (or BASE_BACKUP) checks each page's checksum as it copies it and found pages that do not "
        "match: the backup holds the damaged pages as they are. The WARNING lines before this one name each file "
        "and block.",
        _CHECKSUM_MODES,
        (Step("find every damaged page with its cause and relation", "pgsurgeon scan {pgdata} --live"),),
        tail="",
    ),
    _p(
        "verifybackup",
        r'(?:"(?P<file>[^"]+)" has size \d+ on disk but size \d+ in the manifest|checksum mismatch for file '
        r'"(?P<file2>[^"]+)"|"(?P<file3>[^"]+)" is present (?:in the manifest but not on disk|on disk but not in '
        r'the manifest)|file "(?P<file4>[^"]+)" has checksum of length \d+, but expected \d+)',
        "pg_verifybackup found a backup that differs from its manifest",
        "pg_verifybackup compared the backup with the manifest written when it was taken and found a file changed, "
        "missing or extra: the backup is damaged or incomplete, and a restore from it would carry the damage.",
        (),
        (Step("check the cluster the backup came from, page by page", "pgsurgeon scan {pgdata} --live"),),
        tail="",
    ),
    _p(
        "largeobject_page",
        r"pg_largeobject entry for OID (?P<oid>\d+), page (?P<page>\d+) has invalid data field size (?P<size>\d+)",
        "a large object's page is damaged",
        "Page {page} of large object {oid} (a row of pg_largeobject) has a data field of impossible size {size}: "
        "the row is damaged. Reading the large object fails at that page.",
        (ModeRef("tuple-data", ("varlena", "random"), "in pg_largeobject"),),
        (
            Step("check pg_largeobject", "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.pg_largeobject"),
            _SCAN_ALL,
        ),
        tail="",
    ),
    _p(
        "stats_ext_data",
        r"invalid (?:MVNDistinct size|ndistinct (?:magic|type))|invalid zero-length item array in "
        r"MV(?:Dependencies|NDistinct)|corrupt MVNDistinct entry",
        "extended statistics data is damaged",
        "The data of an extended statistics object (pg_statistic_ext_data, written by ANALYZE) cannot be read: "
        "its header or size is impossible. The planner fails on queries that use it. It holds no user data and "
        "ANALYZE writes it anew.",
        (ModeRef("tuple-data", ("varlena", "random"), "in pg_statistic_ext_data"),),
        (
            Step("check the catalog", "pgsurgeon diagnose{conn}{dbopt} -t pg_catalog.pg_statistic_ext_data"),
            Step("recompute the statistics once the catalog is sound", "ANALYZE;", "sql"),
        ),
        tail="",
    ),
    _p(
        "xx_sqlstate",
        r"(?:\bXX00[12]\b|DataCorrupted|IndexCorrupted|ERRCODE_DATA_CORRUPTED|ERRCODE_INDEX_CORRUPTED)",
        "the server reports damaged data (SQLSTATE XX001 or XX002)",
        "The server marked this error as data corruption (XX001: a table's data, XX002: an index). The message "
        "itself is not one pgsurgeon knows word for word.",
        (),
        (_DIAGNOSE, _SCAN_ALL),
        tail="",
    ),
    _p(
        "generic_damage",
        # the look-ahead before the spaces: after them, \s+ could give one back and look past it
        r"^(?:ERROR|FATAL|PANIC|WARNING):(?!\s*(?:RADIUS response|end-of-copy marker))\s+"
        r"(?P<msg>[^\n]*\b(?:corrupt(?:ed|ion)?|invalid page|damaged|checksum mismatch)\b[^\n]*)",
        "the message speaks of damaged data",
        "The message says something is damaged ({msg}) but is not one pgsurgeon knows word for word.",
        (),
        (_DIAGNOSE, _SCAN_ALL),
        tail="",
    ),
    # ---- ordinary errors: recognised so that they are not taken for damage
    _ordinary(
        "ordinary_syntax",
        r"syntax error at or near|syntax error at end of input|unterminated quoted (?:string|identifier)",
        "a syntax error",
        "The statement is not valid SQL. This says nothing about the data: no damage is involved.",
    ),
    _ordinary(
        "ordinary_deadlock",
        r"deadlock detected|could not serialize access|could not obtain lock|lock timeout|"
        r"canceling statement due to (?:statement timeout|lock timeout|user request|conflict with recovery)|"
        r"canceling autovacuum task|terminating connection due to (?:administrator command|idle)",
        "a lock conflict, cancellation or timeout",
        "Two sessions waited for each other, a lock or statement took longer than allowed, or a session was "
        "cancelled. This is about concurrency and time, not about damaged data.",
    ),
    _ordinary(
        "ordinary_constraint",
        r"duplicate key value violates unique constraint|violates (?:not-null|check|foreign key|exclusion) "
        r"constraint|null value in column|value too long for type|out of range for type|invalid input syntax|"
        r"division by zero|new row for relation .* violates",
        "a constraint or value error",
        "A row broke a constraint or a value did not fit its type. In normal use this is the application's data, "
        "not damage. (A unique violation on keys that cannot be duplicates, together with amcheck errors, points to "
        "a damaged index: check it with pgsurgeon diagnose.)",
    ),
    _ordinary(
        "ordinary_missing",
        r"(?:relation|table|column|function|schema|type|database|role|sequence|index|extension|operator) "
        r'(?:"[^"]*" )?does not exist|already exists|permission denied|must be (?:owner|superuser)|'
        r"password authentication failed|no password supplied|connection (?:to server .* )?(?:refused|failed)|"
        r"database system is (?:starting up|shutting down|in recovery mode)|the database system is",
        "an ordinary error (a missing object, permissions, connection)",
        "The statement names something that does not exist, lacks a privilege, or the server could not be reached "
        "or is restarting. This is not a sign of damaged data.",
    ),
    _ordinary(
        "ordinary_other",
        r"cannot (?:drop|alter|execute|change|insert|update|delete|truncate|use|cast|create)|"
        r"current transaction is aborted|there is no transaction in progress|"
        r"there is already a transaction in progress|out of shared memory|"
        r"could not resize shared memory|too many connections|remaining connection slots|"
        r"(?:is|are) not (?:supported|allowed|permitted)|not supported|unrecognized configuration parameter|"
        r"invalid value for parameter|function .* is not unique|operator does not exist|"
        r"column reference .* is ambiguous|must appear in the GROUP BY|recovery is in progress|"
        r"temporary file size exceeds|could not connect to server|checkpoints are occurring too frequently|"
        r"skipping .* --- |is not a (?:table|view|sequence|index|heap)|wrong number of|"
        r"hint bits? (?:were|was)|data checksums are not enabled|archive command failed|"
        r"will not overwrite a used ItemId|the cluster must be shut down|invalid name syntax|"
        r"unsupported XML feature|configuration file .* contains errors",
        "an ordinary error or warning",
        "An everyday error or warning about the statement, the session or the server's configuration: it says "
        "nothing about damaged data.",
    ),
)

_LATE = ("amcheck_heap", "pg_amcheck_summary", "xx_sqlstate", "generic_damage")
_EARLY = {"missing_segment": "segment_short"}  # the more specific wording first
PATTERNS = tuple(
    q
    for p in PATTERNS
    if p.id not in _LATE and p.id not in _EARLY.values()
    for q in ([p] if p.id not in _EARLY else [next(x for x in PATTERNS if x.id == _EARLY[p.id]), p])
) + tuple(sorted((p for p in PATTERNS if p.id in _LATE), key=lambda p: _LATE.index(p.id)))
PATTERNS = tuple(p for p in PATTERNS if p.kind == "damage") + tuple(p for p in PATTERNS if p.kind != "damage")

# modes for amcheck messages, by finding-code family
AMCHECK_MODES: dict[str, tuple[ModeRef, ...]] = {
    "line_pointer": (ModeRef("item-ids"), ModeRef("item-id", ("lp_off", "lp_len", "lp_flags"))),
    "tuple_header": (ModeRef("tuple-header", ("t_xmin", "t_xmax", "t_infomask", "t_infomask2", "t_hoff", "random")),),
    "tuple_data": (ModeRef("tuple-data", ("varlena", "random")), ModeRef("tuple-header", ("t_infomask2",))),
    "toast": (
        ModeRef("toast", ("chunk_seq", "chunk_id", "chunk_size", "chunk_data", "missing")),
        ModeRef("tuple-data", ("varlena",)),
    ),
}


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
    "xact_file_missing": "FATAL:  could not access status of transaction 3353862211\n"
    'DETAIL:  Could not open file "pg_xact/0C7E": No such file or directory.',
    "multixact_file_missing": "FATAL:  could not access status of transaction 911379\n"
    'DETAIL:  Could not open file "pg_multixact/offsets/000D": No such file or directory.',
    "checkpoint_record": "PANIC:  could not locate a valid checkpoint record at 0/1719ED8",
    "startup_failed": "LOG:  startup process (PID 32389) was terminated by signal 6: Aborted",
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
    "exclusion_rebuild": 'ERROR:  could not create exclusion constraint "booking_room_during_excl"',
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
    "twophase_file": 'FATAL:  calculated CRC checksum does not match value stored in file "pg_twophase/000002E8"',
    "file_short_read": 'FATAL:  could not read file "pg_twophase/000002E8": read 120 of 280',
    "wal_short_read": "FATAL:  could not read from WAL segment 000000010000000000000003, LSN 0/3000100, offset 0: "
    "read 0 of 8192",
    "replication_slot_file": 'FATAL:  replication slot file "pg_replslot/standby1/state" has wrong magic number: '
    "0 instead of 1221189400",
    "snapbuild_file": 'ERROR:  snapbuild state file "pg_logical/snapshots/0-1A2B3C8.snap" has wrong magic number: 0 '
    "instead of 1369563137",
    "xml_declaration": "ERROR:  could not parse XML declaration in stored value",
    "multixact_offset": "ERROR:  MultiXact 1234 has invalid next offset",
    "amcheck_heap": 'heap table "shop.public.orders", block 5, offset 3:\n'
    "    line pointer redirection to item at offset 5585 exceeds maximum offset 4",
    "sequence_no_row": 'pg_dump: error: query to get data of sequence "orders_id_seq" returned 0 rows (expected 1)',
    "sequence_magic": 'ERROR:  bad magic number in sequence "orders_id_seq": 00000000',
    "concurrent_insert": 'WARNING:  concurrent insert in progress within table "orders"',
    "freeze_more": "ERROR:  found update xid 3000000000 from before xid cutoff 740",
    "xmin_uncommitted_update": 'ERROR:  t_xmin 741 is uncommitted in tuple (3,7) to be updated in table "orders"',
    "invisible_tuple": "ERROR:  attempted to delete invisible tuple",
    "page_not_empty": 'ERROR:  page 21 of relation "orders" should be empty but is not',
    "page_uninitialized": 'WARNING:  relation "orders" page 4 is uninitialized --- fixing',
    "vm_mismatch": 'WARNING:  page is not marked all-visible but visibility map bit is set in relation "orders" page 3',
    "lsn_beyond_wal": "ERROR:  xlog flush request 2/3A000000 is not satisfied --- flushed only to 0/1A2B3C8\n"
    "CONTEXT:  writing block 4 of relation base/5/16434",
    "seek_failed": 'ERROR:  could not seek to end of file "base/5/16434": Input/output error',
    "write_failed": 'ERROR:  could not extend file "base/5/16434": No space left on device',
    "segment_short": 'ERROR:  could not open file "base/5/16434.2" (target block 262200): previous segment is only 12 '
    "blocks",
    "slru_read": 'ERROR:  could not open file "pg_xact/0C7E": No such file or directory',
    "relmapper_open": 'FATAL:  could not open relation mapping file "base/5/pg_filenode.map": Input/output error',
    "relmap_missing": 'FATAL:  could not find relation mapping for relation "pg_class", OID 1259',
    "cache_lookup": "ERROR:  cache lookup failed for relation 16434",
    "pg_dump_table": 'pg_dump: error: Dumping the contents of table "orders" failed: PQgetResult() failed.',
    "catalog_attributes": "ERROR:  pg_attribute catalog is missing 2 attribute(s) for relation OID 16434",
    "catalog_null": "ERROR:  unexpected null value in cached tuple for catalog pg_class column relname",
    "btree_structure": "ERROR:  right sibling's left-link doesn't match: block 5 links to 9 instead of expected 4 in "
    'index "orders_pkey"',
    "unique_rebuild": 'ERROR:  could not create unique index "orders_pkey"\nDETAIL:  Key (id)=(5) is duplicated.',
    "index_wrong_am": 'ERROR:  index "orders_gist" contains an inner tuple marked as invalid',
    "gin_item_count": "ERROR:  number of items mismatch in GIN entry tuple, 119 in tuple header, 120 decoded",
    "gin_pending_list": "ERROR:  could not find additional pending pages for same heap tuple",
    "gin_sibling": "ERROR:  right sibling of GIN page is of different type",
    "tid_offset_range": "ERROR:  tuple offset out of range: 0",
    "index_other_am": 'ERROR:  failed to re-find parent of a page in index "orders_gist", block 7',
    "pg_amcheck_summary": 'pg_amcheck: error: error sending command to database "shop": server closed the connection',
    "pg_checksums_summary": "Bad checksums:  3",
    "xx_sqlstate": "psycopg.errors.DataCorrupted: XX001 some new wording about a page",
    "amcheck_index": 'ERROR:  block 4 is not leftmost in index "orders_pkey"',
    "basebackup_checksums": "WARNING:  2 total checksum verification failures",
    "verifybackup": 'pg_verifybackup: error: checksum mismatch for file "base/5/16440"',
    "largeobject_page": "ERROR:  pg_largeobject entry for OID 16500, page 3 has invalid data field size 9000",
    "stats_ext_data": "ERROR:  invalid ndistinct magic 00000000 (expected a352bfa4)",
    "catalog_duplicate": 'ERROR:  duplicate key value violates unique constraint "pg_class_oid_index"',
    "pg_class_index": "ERROR:  could not find pg_class tuple for index 2662",
    "wraparound_stop": "ERROR:  database is not accepting commands that assign new XIDs to avoid wraparound data loss "
    'in database "shop"',
    "checkpoint_failed": "ERROR:  checkpoint request failed\n"
    "HINT:  Consult recent messages in the server log for details.",
    "xid_future": "ERROR:  transaction ID 18446744072414584320 is in the future",
    "generic_damage": "ERROR:  unexpected corrupted posting tree in something new",
    "ordinary_syntax": 'ERROR:  syntax error at or near "SELEC"',
    "ordinary_deadlock": "ERROR:  canceling statement due to statement timeout",
    "ordinary_constraint": 'ERROR:  duplicate key value violates unique constraint "orders_pkey"',
    "ordinary_missing": 'ERROR:  relation "orderz" does not exist',
    "ordinary_other": "ERROR:  current transaction is aborted, commands ignored until end of transaction block",
}
