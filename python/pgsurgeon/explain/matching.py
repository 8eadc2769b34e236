"""Matching: pasted text or a log file made into messages (typographic quotes and dashes made plain, csvlog
lines unpacked, log_line_prefix, client tool, driver and SQLSTATE prefixes removed), each message read with its
DETAIL/HINT/CONTEXT lines, tried against :data:`~pgsurgeon.explain.patterns.PATTERNS` in order, and answered by an
:class:`Explanation`: the pattern, the values of the message and the ones derived from them, its meaning and next
steps filled in."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import re
import string
from dataclasses import dataclass, field
from typing import Any

from pgsurgeon.explain.derive import relpath, sql_ident
from pgsurgeon.explain.nextsteps import TAILS, Where, finish
from pgsurgeon.explain.patterns import AMCHECK_MODES, PATTERNS, Pattern, Step
from pgsurgeon.explain.translate import TYPOGRAPHY, to_english


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
        out: list[Step] = []
        tail = self.pattern.tail
        if tail == "table" and "rel_index" in self.values:  # the relation a path named turned out to be an index
            tail = "index"
        for s in (*self.pattern.steps, *TAILS.get(tail, ())):
            what, command = _fill(s.what, self.values), _fill(s.command, self.values)
            if what is not None and command is not None and all(command != o.command for o in out):
                out.append(Step(what, command, s.kind, s.when))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.pattern.id,
            "kind": self.pattern.kind,
            "title": self.pattern.title,
            "line": self.line,
            "count": self.count,
            "context": self.context,
            "values": self.values,
            "meaning": self.meaning(),
            "modes": [m.to_json() for m in self.pattern.modes],
            "next": [{"what": s.what, "command": s.command, "kind": s.kind, "when": s.when} for s in self.steps()],
        }


def _fill(template: str, values: dict[str, str]) -> str | None:
    """``template`` with ``{name}`` filled in, or None when a value it needs is missing."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    if any(n not in values for n in names):
        return None
    return template.format(**values)


# ------------------------------------------------------------------------------------------ reading pasted text

_SEVERITY = r"(?:ERROR|FATAL|PANIC|WARNING|NOTICE|LOG|INFO|DEBUG\d?|DETAIL|HINT|CONTEXT|STATEMENT|LOCATION|QUERY)"
# What precedes the message on a line: a log_line_prefix (timestamps, [pid], user@db, …), a client tool's
# 'pg_dump: error: query failed:', psql's 'psql:file.sql:12:', a driver's exception class, a SQLSTATE.
_CLIENT_PREFIX = re.compile(
    r"^(?:(?:pg_dump|pg_dumpall|pg_restore|psql|pg_amcheck|pg_checksums|pg_basebackup|pg_upgrade|vacuumdb|"
    r"reindexdb|clusterdb|pgbench|pg_ctl|postgres)(?::[^:\s]*:\d+)?:\s*(?:(?:error|warning|fatal|detail|hint):\s*)?)+"
    r"(?:(?:query failed|Error message from server|error returned by PQputCopyData|could not execute query):\s*)?",
    re.IGNORECASE,
)
_DRIVER_PREFIX = re.compile(
    r"^(?:(?:Caused by:\s*)?(?:[\w.]*(?:Exception|Error|Warning|errors\.\w+|PSQLException)|error|Error|"
    r"org\.postgresql\.util\.PSQLException|Npgsql\.PostgresException|\w+\.errors\.\w+)"
    r"(?:\s*\([^)]*\))?:\s+)+"
)
_SEVERITY_AT = re.compile(r"(?:^|\s|\]|\)|,)(?P<sev>" + _SEVERITY + r"):\s+")
_SQLSTATE_HEAD = re.compile(r"^(?:[0-9A-Z]{5})\s*(?:-+|:)\s*")
_CSV_LOG = re.compile(r'^\d{4}-\d\d-\d\d [\d:.]+ \w+,(?:"[^"]*"|[^,]*),')
_DRIVER_CONT = re.compile(
    r"^\s*(?:Detail|Hint|Where|Position|Context|Call getNextException|Internal Query|"
    r"Location|File|Line|Routine|Server SQLState|SQL state|MessageText):\s",
    re.IGNORECASE,
)
_TOOL_CONT = re.compile(
    r"^(?:(?:pg_dump|pg_restore|psql|pg_amcheck): (?:error|detail|hint): )?(?:query was:|(?:The )?command was:|"
    r"Dumping the contents of table|This probably means the server terminated|before or while processing the "
    r"request|Failed process was running|processing data for table|reading |saving |dumping contents)",
    re.IGNORECASE,
)
_CONTINUATION = re.compile(r"^(?:DETAIL|HINT|CONTEXT|STATEMENT|LOCATION|QUERY|Where|Detail|Hint):\s")
_PG_AMCHECK_HEAD = re.compile(
    r'^(?:btree index|heap table) "[^"]+"(?:, block \d+, offset \d+(?:, attribute \d+)?)?:\s*$'
)
_AT_STARTUP = re.compile(r"(?:FATAL|PANIC):")
_NO_FILE = re.compile(r"No such file or directory|could not open file", re.IGNORECASE)
_SLRU = re.compile(
    r'Could not (?:open|read from|seek in|access) file "(?P<slru>pg_(?:xact|multixact/\w+|subtrans|'
    r'commit_ts)/[0-9A-F]+)"'
)
# Values the lines around a message give: where VACUUM or a write was, which table pg_dump was copying.
_CONTEXT_VALUES = (
    re.compile(r'while (?:scanning|vacuuming|truncating) block (?P<block>\d+)(?: offset (?P<offset>\d+))? of '
               r'relation "(?P<table>[^"]+)"'),
    re.compile(r'writing block (?P<block>\d+) of relation (?P<relpath>\S+)'),
    re.compile(r'Dumping the contents of table "(?P<table>[^"]+)"'),
    re.compile(r"COPY (?P<table>[\w.\"]+) (?:\([^)]*\) )?TO stdout"),
    re.compile(r"query was: SELECT .* FROM (?P<seqrel>[\w.\"]+)"),
)  # fmt: skip


def _csv_message(line: str) -> str | None:
    """The message (with DETAIL/HINT) of a csvlog line, quotes undoubled, or None for another line."""
    if not _CSV_LOG.match(line):
        return None
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None
    if len(fields) < 15:
        return None
    sev, message, detail, hint = fields[11], fields[13], fields[14], fields[15] if len(fields) > 15 else ""
    out = f"{sev}:  {message}"
    out += f"\nDETAIL:  {detail}" if detail else ""
    out += f"\nHINT:  {hint}" if hint else ""
    return out


def normalise(text: str) -> list[str]:
    """Pasted text as message lines: typographic dashes and quotes made plain, csvlog lines unpacked, a message
    in another language read back into English (:mod:`~pgsurgeon.explain.translate`), prefixes (log_line_prefix,
    client tools, drivers, SQLSTATE) removed, severities kept ('ERROR:  …')."""
    out: list[str] = []
    for raw in text.translate(TYPOGRAPHY).splitlines():
        csv_msg = _csv_message(raw)
        if csv_msg is not None:
            out += [to_english(line) for line in csv_msg.splitlines()]
            continue
        line = raw.strip()
        if not line:
            out.append("")
            continue
        line = _strip_prefixes(to_english(line))
        out.append(line)
    return out


def _strip_prefixes(line: str) -> str:
    for _ in range(4):
        before = line
        line = _CLIENT_PREFIX.sub("", line)
        line = _DRIVER_PREFIX.sub("", line)
        m = _SEVERITY_AT.search(line)
        if m and (m.start() == 0 or _looks_like_prefix(line[: m.start()])):
            sev = m.group("sev")
            line = f"{sev}:  {line[m.end() :]}"
        head = line.split(":  ", 1)
        if len(head) == 2 and head[0] in ("ERROR", "FATAL", "PANIC", "WARNING", "LOG", "DEBUG", "NOTICE"):
            line = head[0] + ":  " + _SQLSTATE_HEAD.sub("", _CLIENT_PREFIX.sub("", head[1].strip()))
        else:
            line = _SQLSTATE_HEAD.sub("", line)
        if line == before:
            break
    return line


def _looks_like_prefix(text: str) -> bool:
    """A log_line_prefix or tool prefix before the severity (timestamps, [pid], user@db, app names), not words."""
    t = text.strip()
    return bool(re.match(r"^[\d\-:. +TZ\[\]()@/,\w]*$", t)) and (any(c.isdigit() for c in t) or "@" in t or "[" in t)


def _entries(text: str) -> list[tuple[str, list[str]]]:
    """Messages with the lines that belong to them: DETAIL/HINT/CONTEXT/STATEMENT (and drivers' Detail/Where),
    the tools' 'query was'/'The command was' lines; pg_amcheck's 'heap table "…", block N, offset M:' heading
    joined to its message; pg_dump's 'Dumping the contents of table …' kept for the message after it."""
    out: list[tuple[str, list[str]]] = []
    pending: list[str] = []
    lines = normalise(text)
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        if _PG_AMCHECK_HEAD.match(line) and i + 1 < len(lines):
            line = line + " " + lines[i + 1].strip()
            i += 1
        if _CONTINUATION.match(line) or _DRIVER_CONT.match(line) or _TOOL_CONT.match(line):
            if line.lower().startswith(("dumping the contents", "pg_dump: error: dumping")) or not out:
                pending.append(line)
            else:
                out[-1][1].append(line)
        else:
            out.append((line, pending))
            pending = []
        i += 1
    if pending and out:
        out[-1][1].extend(pending)
    elif pending:  # only pg_dump's 'Dumping the contents of table … failed' was pasted: it is the message
        out = [(line, []) for line in pending]
    return out


def _cue(regex: str) -> str:
    """The literal words a pattern starts with, to recognise a line cut off before the pattern could match."""
    m = re.match(r"(?:\(\?[^)]*\))?((?:[A-Za-z ,'\-]|\\.)+)", regex)
    text = (m.group(1) if m else "").replace("\\", "")
    return text.strip().lower() if len(text.strip()) >= 12 else ""


# patterns whose first words many ordinary messages share ('could not read from', 'replication slot'): a line
# cut off there says nothing
_NO_CUE = frozenset(
    (
        "xx_sqlstate",
        "generic_damage",
        "pg_amcheck_summary",
        "amcheck_heap",
        "btree_amcheck",
        "file_short_read",
        "wal_short_read",
        "replication_slot_file",
        "snapbuild_file",
        "twophase_file",
        "checkpoint_record",
        "startup_failed",
    )
)
_CUES = {p.id: _cue(p.regex.pattern) for p in PATTERNS if p.id not in _NO_CUE}


_BY_ID = {p.id: p for p in PATTERNS}


def _lost_at_startup(slru: str, detail: str, line: str, context: list[str]) -> bool:
    """pg_xact's file is not there and the startup process said so (a FATAL or PANIC, or WAL redo): it needs the
    next XID's page, so the file is lost, not a tuple's XID garbage (a query reading a garbage XID gets the same
    DETAIL, as an ERROR; issue 29)."""
    at_startup = bool(_AT_STARTUP.match(line)) or any("WAL redo" in c for c in context)
    return slru.startswith("pg_xact/") and bool(_NO_FILE.search(detail)) and at_startup


def _multixact_file_gone(slru: str, detail: str) -> bool:
    """A pg_multixact file is not there: at startup or in a query, the number is no transaction (issue 29)."""
    return slru.startswith("pg_multixact/") and bool(_NO_FILE.search(detail))


def _message(line: str) -> str:
    """The message without its severity."""
    head = line.split(":  ", 1)
    return head[1] if len(head) == 2 and head[0].isupper() else line


def match_line(line: str, context: list[str] | None = None, where: Where | None = None) -> Explanation | None:
    """The explanation of one message (with its DETAIL/HINT lines), or None when no pattern knows it."""
    found = _match(line)
    if found is None:
        return None
    pattern, values = found
    for extra in context or []:
        if s := _SLRU.search(extra):
            values.setdefault("slru", s.group("slru"))
            if pattern.id == "xact_status" and _lost_at_startup(s.group("slru"), extra, line, context or []):
                pattern = _BY_ID["xact_file_missing"]
            elif pattern.id == "xact_status" and _multixact_file_gone(s.group("slru"), extra):
                pattern = _BY_ID["multixact_file_missing"]
                values["multi"] = values.pop("xid", "")
        for rx in _CONTEXT_VALUES:
            if c := rx.search(extra):
                for k, v in c.groupdict().items():
                    if v is not None:
                        values.setdefault(k, v)
    if "seqrel" in values and (pattern.tail == "sequence" or any("last_value" in c for c in context or [])):
        # pg_dump was reading a sequence: it is recreated, never carved
        values.setdefault("seq", values["seqrel"])
        pattern = dataclasses.replace(pattern, tail="sequence")
    values.pop("seqrel", None)
    for k2, k in (("index2", "index"), ("index3", "index"), ("xid2", "xid"), ("xid3", "xid"), ("xid4", "xid"),
                  ("multi2", "multi"), ("multi3", "multi"), ("oid2", "oid"), ("count2", "count")):  # fmt: skip
        if k2 in values:
            values.setdefault(k, values.pop(k2))
    if "index" in values:
        values["index_sql"] = sql_ident(values["index"])
    if pattern.derive is not None:
        with contextlib.suppress(KeyError, ValueError):  # a line cut off before the values it needs
            pattern.derive(values)
    if "relpath" in values and "filenode" not in values:
        relpath(values)
    if pattern.id == "amcheck_heap":
        family = values.get("code", "").split(".")[0]
        pattern = dataclasses.replace(pattern, modes=AMCHECK_MODES.get(family, ()))
    if pattern.kind == "damage":
        finish(values, where or Where())
    return Explanation(pattern, line, values, context=list(context or []))


def _match(line: str) -> tuple[Pattern, dict[str, str]] | None:
    found = _match_cached(line)
    return None if found is None else (found[0], dict(found[1]))


def required_literal(regex: str) -> str:
    """The longest plain text every match of ``regex`` contains (lowercase; '' when none is sure): outside any
    group, class or escape, in a pattern with no top-level alternative, and not under a quantifier."""
    depth, runs, run, i = 0, [""], "", 0
    while i < len(regex):
        c = regex[i]
        if c == "|" and depth == 0:
            return ""
        if depth == 0 and (c.isalnum() or c in " _-,'"):
            run += c
            i += 1
            continue
        if c in "?*{" and run:
            run = run[:-1]  # the quantifier takes the character before it
        runs.append(run)
        run = ""
        if c == "\\":
            i += 1
        elif c == "[":
            while i < len(regex) and regex[i] != "]":
                i += 2 if regex[i] == "\\" else 1
        depth += c == "(" and (i == 0 or regex[i - 1] != "\\")
        depth -= c == ")" and depth > 0
        i += 1
    runs.append(run)
    return max(runs, key=len).strip().lower()


# each pattern's sure text: a line without it is not searched (most log lines match nothing)
_REQUIRED = tuple((p, required_literal(p.regex.pattern)) for p in PATTERNS)


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _top_level(regex: str) -> list[tuple[int, str]]:
    """``regex``'s characters outside classes and escapes with their group depth (an escape or class as one piece
    at the depth it stands)."""
    out: list[tuple[int, str]] = []
    depth, i = 0, 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            out.append((depth, regex[i : i + 2]))
            i += 2
            continue
        if c == "[":
            j = i + 1
            while j < len(regex) and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            out.append((depth, regex[i : j + 1]))
            i = j + 1
            continue
        depth -= c == ")"
        out.append((depth, c))
        depth += c == "("
        i += 1
    return out


def alternatives(regex: str) -> list[str]:
    """The top-level alternatives of ``regex``, looking inside a group that spans all of it (``(?:a|b)``)."""
    pieces = _top_level(regex)
    parts, cur = [], ""
    for depth, piece in pieces:
        if piece == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += piece
    parts.append(cur)
    group = re.match(r"\((?:\?:|\?P<\w+>)?", regex)
    if group is None or len(parts) > 1 or pieces[-1] != (0, ")"):
        return parts
    if all(depth > 0 for depth, _ in pieces[1:-1]):  # the first group closes at the very end
        return alternatives(regex[group.end() : -1])
    return parts


def _required_index() -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    """The rarest three characters of each pattern's sure text -> the patterns (by place) keyed by them, and the
    patterns with too little sure text to key: a line is searched only by the patterns whose key it holds. A pattern
    of alternatives is keyed once by each."""
    sure = [[required_literal(a) for a in alternatives(p.regex.pattern)] for p, _r in _REQUIRED]
    counts: dict[str, int] = {}
    for texts in sure:
        for g in {g for t in texts for g in _grams(t)}:
            counts[g] = counts.get(g, 0) + 1
    index: dict[str, list[int]] = {}
    always: list[int] = []
    for i, texts in enumerate(sure):
        keyed = [_grams(t) for t in texts]
        if not all(keyed):
            always.append(i)
            continue
        for g in {min(grams, key=lambda g: (counts[g], g)) for grams in keyed}:
            index.setdefault(g, []).append(i)
    return {g: tuple(ix) for g, ix in index.items()}, tuple(always)


_BY_GRAM, _ALWAYS = _required_index()


@functools.lru_cache(maxsize=1 << 14)
def _match_cached(line: str) -> tuple[Pattern, dict[str, str]] | None:
    """A log says the same thing many times: each distinct message is matched once."""
    low = line.lower()
    held = {i for g in _grams(low) for i in _BY_GRAM.get(g, ())}
    for i in sorted(held.union(_ALWAYS)):  # PATTERNS' order: the first that matches wins
        pattern, required = _REQUIRED[i]
        if required not in low:
            continue
        m = pattern.regex.search(line)
        if m:
            return pattern, {k: v for k, v in m.groupdict().items() if v is not None}
    # a line cut off: its beginning is a pattern's first words, or those words are there but the values are not
    msg = _message(line).strip().lower()
    if len(msg) >= 12:
        for pattern in PATTERNS:
            cue = _CUES.get(pattern.id, "")
            if not cue:
                continue
            rest = msg[len(cue) :]
            if cue.startswith(msg) or (
                msg.startswith(cue)
                and not rest[:1].isalnum()  # the cue ends a word: 'transaction identifier' is not 'transaction id'
                and len(rest) <= 24
                and not rest.rstrip().endswith(('"', ")", "."))
            ):
                return pattern, {}
    return None


def explain_text(text: str, where: Where | None = None) -> tuple[list[Explanation], list[str]]:
    """Explanations for every recognised message of ``text`` (repeats counted once) and the unrecognised lines.
    A line that is recognised only together with the next one (a message wrapped mid-sentence) is read joined."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], Explanation] = {}
    unknown: list[str] = []
    entries = _entries(text)
    i = 0
    while i < len(entries):
        line, context = entries[i]
        exp = match_line(line, context, where)
        if i + 1 < len(entries) and (exp is None or not exp.pattern.regex.search(line)):
            joined, taken = _joined(entries, i, exp is None, where)
            if joined is not None:
                exp = joined
                i += taken
        i += 1
        if exp is None:
            unknown.append(line)
            continue
        key = (exp.pattern.id, tuple(sorted((k, v) for k, v in exp.values.items() if k in _KEY_VALUES)))
        if key in found:
            found[key].count += 1
        else:
            found[key] = exp
    return list(found.values()), unknown


_NEW_MESSAGE = re.compile(r"(?:ERROR|FATAL|PANIC|WARNING|LOG|NOTICE|INFO|DEBUG\d?):  ")


def _joined(
    entries: list[tuple[str, list[str]]], i: int, alone: bool, where: Where | None
) -> tuple[Explanation | None, int]:
    """The message of entry ``i`` read together with the next line, or the next two (a translator may have wrapped
    the message so that no part alone is a known translation; French spreads some over three lines), and how many
    lines that took. Three lines are tried only for text beyond ASCII: an English log never pays."""
    line, context = entries[i]
    nxt, nctx = entries[i + 1]
    if _NEW_MESSAGE.match(nxt):  # a line of its own severity starts a message; it continues none
        return None, 0
    if alone and match_line(nxt, nctx, where) is not None and _full(nxt):
        return None, 0
    text, ctx = line.rstrip() + " " + nxt.strip(), context + nctx
    exp = match_line(to_english(text, True), ctx, where)
    if exp is not None and exp.pattern.regex.search(exp.line):
        return exp, 1
    if i + 2 >= len(entries) or text.isascii():
        return None, 0
    third, tctx = entries[i + 2]
    exp = match_line(to_english(text + " " + third.strip(), True), ctx + tctx, where)
    return (exp, 2) if exp is not None and exp.pattern.regex.search(exp.line) else (None, 0)


def _full(line: str) -> bool:
    return any(p.regex.search(line) for p in PATTERNS)


_KEY_VALUES = frozenset(
    ("block", "relpath", "xid", "multi", "value", "toast", "index", "table", "seq", "offset", "msg", "file", "oid",
     "calc", "stored", "pid", "lower", "upper", "size", "chunk", "count", "first", "what")
)  # fmt: skip
