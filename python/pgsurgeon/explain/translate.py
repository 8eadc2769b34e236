"""Messages in the server's other languages read back into English: a log written with lc_messages = 'de_DE' says
'FEHLER:  ungültige Seite in Block 3 von Relation base/5/16437'; explain's patterns are English. The translations
come from PostgreSQL's own catalogues (``translations.json``, written by bench/pgmessages.py): the severity words
of every language and, for each message explain classifies, its translated format in every language and version.

A line whose severity word is translated has it replaced by the English one; its message, when it is the
rendering of a translated format, is rendered again from the English format with the same values (positional
arguments respected). A line with an English severity and a message of plain ASCII is left alone at once, so that
an English log costs one regex search a line."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources

from pgsurgeon.explain import printf

# What pasted text and the catalogues' translations are both made into before matching: typographic quotes,
# dashes and spaces as plain ASCII (French catalogues quote with « » and no-break spaces), CR dropped.
TYPOGRAPHY = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "--", "\u2015": "--",
                            "\u2212": "-", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"',
                            "\u00bb": '"', "\u2033": '"', "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                            "\u00a0": " ", "\u202f": " ", "\uff1a": ":", "\r": ""})  # fmt: skip

# a word (or two) followed by a colon and a space: where a severity can be
_LEVEL_AT = re.compile(r"(?:^|(?<=[\s\]),>]))(?P<word>[^\s:\d][^\s:]*(?: [^\s:\d][^\s:]*)?) ?:\s")
# the server's severity words and the client tools' (pg_dump writes 'error: ')
_SEVERITIES = ("ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "LOG", "INFO", "DEBUG", "DETAIL", "HINT", "CONTEXT",
               "STATEMENT", "LOCATION", "QUERY", "error", "warning", "detail", "hint", "fatal")  # fmt: skip
_ENGLISH_LEVEL = re.compile(r"(?:^|[\s\]),])(?P<word>" + "|".join(_SEVERITIES).replace("DEBUG", r"DEBUG\d?") + r"):\s")


@dataclass(frozen=True)
class Format:
    """One translated format of a classified message and the English format it translates."""

    english: str
    source: str
    """The regex of the translation, compiled when a line first holds its anchor."""
    indices: tuple[int, ...]
    anchor: str
    """The longest literal piece of the translation, lowercased: a line without it cannot match."""
    literal: int
    """How much of the translation is literal text: the more, the more specific (tried first)."""


@dataclass(frozen=True)
class Catalogue:
    levels: dict[str, tuple[str, frozenset[str]]]
    """translated severity word -> (English word, languages that use it)."""
    formats: dict[str, tuple[Format, ...]]
    """language -> formats, the most specific first."""
    untranslated: dict[str, frozenset[str]]
    """English severity word -> the languages that leave it English (Spanish and Japanese write 'ERROR', German
    'DETAIL', Czech translates neither): their messages can be plain ASCII after it."""
    by_gram: dict[str, tuple[Candidate, ...]]
    """The rarest three characters of each format's anchor -> the formats keyed by them: a message is tried only
    against the formats whose key it holds (a line without the key cannot hold the anchor), not against all of them
    in every language."""
    short: tuple[Candidate, ...]
    """Formats whose anchor is too short for a key: always tried."""


Candidate = tuple[str, int, Format]
"""(language, place among the language's formats, format): sorted, the order in which they are tried."""


@functools.cache
def catalogue() -> Catalogue:
    """translations.json, compiled on first use (a log with no translated line never pays for it)."""
    data = json.loads(resources.files("pgsurgeon.explain").joinpath("translations.json").read_text("utf-8"))
    levels: dict[str, tuple[str, set[str]]] = {}
    for lang, words in data["levels"].items():
        for word, english in words.items():
            word = word.translate(TYPOGRAPHY).strip().rstrip(":").strip()
            if word and word != english:
                levels.setdefault(word, (english, set()))[1].add(lang)
    formats = {lang: tuple(sorted(_formats(pairs), key=_specific_first)) for lang, pairs in
               data["messages"].items()}  # fmt: skip
    by_gram, short = _gram_index(formats)
    return Catalogue({w: (e, frozenset(ls)) for w, (e, ls) in levels.items()}, formats,
                     _untranslated(data["levels"]), by_gram, short)  # fmt: skip


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _gram_index(
    formats: dict[str, tuple[Format, ...]],
) -> tuple[dict[str, tuple[Candidate, ...]], tuple[Candidate, ...]]:
    counts: dict[str, int] = {}
    for fs in formats.values():
        for f in fs:
            for g in _grams(f.anchor):
                counts[g] = counts.get(g, 0) + 1
    index: dict[str, list[Candidate]] = {}
    short: list[Candidate] = []
    for lang, fs in formats.items():
        for i, f in enumerate(fs):
            grams = _grams(f.anchor)
            if grams:
                index.setdefault(min(grams, key=lambda g: (counts[g], g)), []).append((lang, i, f))
            else:
                short.append((lang, i, f))
    return {g: tuple(c) for g, c in index.items()}, tuple(short)


def _untranslated(levels: dict[str, dict[str, str]]) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for lang, words in levels.items():
        kept = {w.strip().rstrip(":").strip() for w, e in words.items() if w.strip().rstrip(":").strip() == e}
        translated = set(words.values()) - kept
        for english in _SEVERITIES:
            if english in kept or english not in translated:
                out.setdefault(english, set()).add(lang)
    return {w: frozenset(ls) for w, ls in out.items()}


def _specific_first(f: Format) -> tuple[int, int]:
    """The most literal translation first; of English formats translated alike (Russian renders 'could not open
    file' and 'could not open control file' the same), the plainest English, which claims the least."""
    return -f.literal, len(f.english)


def _formats(pairs: list[list[str]]) -> list[Format]:
    out: list[Format] = []
    for english, translated in pairs:
        translated = translated.translate(TYPOGRAPHY).strip()
        source, indices = printf.to_regex(translated)
        parts = printf.literal_parts(translated)
        anchor = " ".join(max(parts, key=len).lower().split())  # a translator's line break is a space in a log
        out.append(Format(english, source, tuple(indices), anchor, sum(len(p.strip()) for p in parts)))
    return out


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, re.IGNORECASE)


def to_english(line: str, every_language: bool = False) -> str:
    """``line`` (already made plain with :data:`TYPOGRAPHY`) with a translated severity word and a translated
    classified message made English; a wrapper's message (pg_dump's 'Error message from server: …') is read
    again for the message it wraps. Unchanged when nothing in it is translated. ``every_language``: try every
    language even for plain ASCII after an English severity (a wrapped line joined again, whose severity the
    first reading made English: too slow for every line of a log)."""
    for _ in range(3):
        english = _once(line, every_language)
        if english == line:
            return line
        line = english
    return line


def _once(line: str, every_language: bool = False) -> str:
    english_level = _ENGLISH_LEVEL.search(line)
    cat = catalogue()
    langs = frozenset(cat.formats)
    if english_level and line.isascii() and not every_language:
        langs = cat.untranslated.get(english_level["word"].rstrip("0123456789"), frozenset())
        if not langs:
            return line
    head, level, message = "", "", line
    for m in _LEVEL_AT.finditer(line):
        word = m.group("word")
        last = word.rsplit(" ", 1)[-1]  # '[4242] FEHLER': the prefix's last word ran into the severity
        if word in cat.levels or last in cat.levels:
            start = m.start() if word in cat.levels else m.start() + len(word) - len(last)
            english, langs = cat.levels[word if word in cat.levels else last]
            head, level, message = line[:start], english, line[m.end() :]
            break
        if english_level and m.start() >= english_level.start():
            head, message = line[: english_level.end()], line[english_level.end() :]
            break
    rendered = _message(message.strip(), langs)
    if rendered is None and level and head.strip():
        # the 'severity' may be a word of the message itself (Georgian pg_dump: 'ცხრილის ("t") დამპის შეცდომა: …')
        whole = _message(line.strip(), langs)
        if whole is not None:
            return whole
    if rendered is None and not level:
        return line
    body = rendered if rendered is not None else message.strip()
    if not level:
        return head + body
    sep = " " if level.islower() else "  "  # the tools write 'error: ', the server 'ERROR:  '
    return f"{head}{level}:{sep}{body}"


@functools.lru_cache(maxsize=1 << 14)
def _message(message: str, langs: frozenset[str]) -> str | None:
    """The English rendering of a translated classified message (the whole rest of the line after the severity:
    a translation of 'could not open file' must not be found inside one of 'could not open configuration
    file'), or None. A log repeats its messages: each distinct one is read once."""
    cat = catalogue()
    low = " ".join(message.lower().split())
    plain = low.isascii()  # a message of plain ASCII holds no translation's non-ASCII anchor
    held = [c for g in _grams(low) for c in cat.by_gram.get(g, ())]
    for _lang, _i, f in sorted([*held, *cat.short], key=lambda c: (c[0], c[1])):
        if _lang not in langs or (plain and not f.anchor.isascii()) or f.anchor not in low:
            continue
        m = _compiled(f.source).fullmatch(message)
        if m:
            return printf.render(f.english, dict(zip(f.indices, m.groups(), strict=True)))
    return None
