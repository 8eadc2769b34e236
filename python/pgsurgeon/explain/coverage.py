"""explain measured against PostgreSQL's own message catalogues (tests/data/pgmessages, written by
bench/pgmessages.py from the catalogues of 9.6-18): every message rendered with sample values, in English and in
every language of every version, and read by explain. A message classified as damage (tests/data/pgmessages/
classified.tsv names its pattern) must be recognised by that pattern in every rendering; every other message must
not be taken for damage in any. The tests assert it and docs/errors.md shows the figures; neither is typed in.

Only in a source checkout: the catalogue file is not part of the installed package."""

from __future__ import annotations

import functools
import json
import lzma
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgsurgeon.explain import printf
from pgsurgeon.explain.matching import explain_text


def _data_dir() -> Path:
    """Where the catalogues are: $PGSURGEON_PGMESSAGES, else the source tree this module runs from (an editable
    install), else tests/data/pgmessages under the working directory (a checkout with the package installed)."""
    env = os.environ.get("PGSURGEON_PGMESSAGES")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[3] / "tests" / "data" / "pgmessages"
    return here if here.is_dir() else Path.cwd() / "tests" / "data" / "pgmessages"


DATA = _data_dir()
SERVER = frozenset(("postgres", "elog", "amcheck"))
NOT_DAMAGE = frozenset(("context", "wrapper", "grey"))


def available() -> bool:
    return (DATA / "catalogue.json.xz").is_file() and (DATA / "classified.tsv").is_file()


@functools.cache
def catalogue() -> dict[str, Any]:
    return json.loads(lzma.decompress((DATA / "catalogue.json.xz").read_bytes()))  # type: ignore[no-any-return]


def classified(path: Path | None = None) -> dict[str, str]:
    """English msgid -> its class: a damage pattern's id, 'context' (a CONTEXT line explain reads values from),
    'wrapper' (a client tool's words around the server's message) or 'grey' (see the reason in the file)."""
    out: dict[str, str] = {}
    for line in (path or DATA / "classified.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            cls, msgid = line.split("\t")[:2]
            out[json.loads(msgid)] = cls
    return out


def english_formats(m: dict[str, Any]) -> list[str]:
    return [f for f in (m["id"], m["plural"]) if f]


def _level(m: dict[str, Any]) -> str:
    """The severity a message is written with: DETAIL for a text only ever given as detail, hint or context,
    ERROR for the server's other messages, none for a client tool's."""
    if m["secondary"]:
        return "DETAIL"
    return "ERROR" if SERVER & set(m["domains"]) else ""


def render(fmt: str, values: dict[int, str], level: str) -> str:
    text = printf.render(fmt, values).rstrip("\n")
    return f"{level}:  {text}" if level else text


def damage_ids(text: str) -> list[str]:
    found, _ = explain_text(text)
    return [e.pattern.id for e in found if e.pattern.kind == "damage"]


@dataclass
class Figures:
    """What one version's catalogue gives: damage messages classified and recognised (English, and per
    language), messages checked for false alarms, and the server's own XX001/XX002 messages recognised."""

    damage: int = 0
    recognised: int = 0
    languages: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    checked: int = 0
    checked_translated: int = 0
    xx: int = 0
    xx_recognised: int = 0


@dataclass
class Report:
    versions: dict[str, Figures]
    misses: list[str]
    """A damage message (or one of its translations) not recognised by its pattern."""
    false_alarms: list[str]
    """A message not classified as damage that explain took for damage."""
    ambiguous: int = 0
    """Translations of a message not classified as damage that are word for word the translation of a damage
    message in the same language (Czech says 'nelze otevřít soubor' for several English messages): nothing in
    the line tells them apart, so explain reads them as the damage message."""


def _level_words() -> dict[str, dict[str, str]]:
    """language -> English severity -> the translated word (its newest translation)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for m in catalogue()["messages"]:
        word = m["id"].strip().rstrip(":")
        if word in ("ERROR", "DETAIL") and "postgres" in m["domains"] and not m["plural"]:
            for lang, variants in m["tr"].items():
                out[lang][word] = variants[-1][0][0].strip().rstrip(":").strip()
    return out


def _english_of(m: dict[str, Any], i: int, nforms: int) -> str:
    """The English format translation form ``i`` renders: the singular for form 0 of a language with plural
    forms, the plural otherwise."""
    return str(m["plural"]) if m["plural"] and (i > 0 or nforms == 1) else str(m["id"])


@functools.cache
def measure() -> Report:
    """Every message of the catalogue rendered and read (a minute's work: computed once per process)."""
    classes = classified()
    words = _level_words()
    damage_forms = _damage_translations(classes)
    report = Report({v: Figures() for v in catalogue()["languages"]}, [], [])
    for m in catalogue()["messages"]:
        cls = classes.get(m["id"], "")
        if cls == "grey":
            continue
        damage = cls not in ("", *NOT_DAMAGE)
        level = _level(m)
        english = [_read(render(f, printf.sample(f), level), cls, damage, report) for f in english_formats(m)]
        for v in m["versions"]:
            fig = report.versions[v]
            fig.damage += damage
            fig.recognised += damage and all(ok for ok, _ in english)
            fig.checked += not damage
            fig.xx += m["xx"]
            fig.xx_recognised += m["xx"] and any(ids for _, ids in english)
        for lang, variants in m["tr"].items():
            word = words[lang].get(level, level) if level else ""
            for forms, versions in variants:
                for i, form in enumerate(forms):
                    values = printf.sample(_english_of(m, i, len(forms)))
                    if not damage and _shape(form) in damage_forms.get(lang, ()):
                        report.ambiguous += 1
                        continue
                    ok, _ = _read(render(form, values, word), cls, damage, report)
                    for v in versions:
                        if damage:
                            report.versions[v].languages[lang][0] += 1
                            report.versions[v].languages[lang][1] += ok
                        else:
                            report.versions[v].checked_translated += 1
    return report


def _damage_translations(classes: dict[str, str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for m in catalogue()["messages"]:
        if classes.get(m["id"], "") not in ("", *NOT_DAMAGE):
            for lang, variants in m["tr"].items():
                out[lang].update(_shape(f) for forms, _ in variants for f in forms)
    return out


def _shape(form: str) -> str:
    """A translation with its conversions alike: '%s' and '%m' print the same kind of text."""
    return printf.SPEC.sub("%", form.rstrip("\n"))


def _read(text: str, cls: str, damage: bool, report: Report) -> tuple[bool, list[str]]:
    """Whether explain reads ``text`` as its class says (by that pattern, or as no damage), and the damage
    patterns it found; a miss or false alarm is noted in the report."""
    ids = damage_ids(text)
    if damage:
        if cls not in ids:
            report.misses.append(f"{text!r}: expected {cls}, got {ids}")
        return cls in ids, ids
    if ids:
        report.false_alarms.append(f"{text!r}: taken for {ids}")
    return not ids, ids
