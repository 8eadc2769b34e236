"""PostgreSQL's own message catalogues, extracted for explain (issue 28): every message PostgreSQL 9.6-18 can
raise, in English and in every language it ships translations for, so that explain's coverage is measured.

Two steps (and ``package`` to rewrite only translations.json from the committed catalogue after classified.tsv
changed; ``draft`` to list what explain reads as damage that classified.tsv does not list):

    python bench/pgmessages.py extract --source 15=/tmp/deb15 --source 14=git:/path/to/repo.git@<commit>:<subdir> \\
        ... --out /tmp/pgmessages-full.json
    python bench/pgmessages.py data /tmp/pgmessages-full.json

``extract`` reads each version's catalogues from one of two kinds of source and writes one JSON file (not
committed: it holds whole catalogues):

- a directory where Debian's binary packages postgresql-NN and postgresql-client-NN were unpacked with
  ``dpkg-deb -x`` (the compiled catalogues ``usr/share/locale/<lang>/LC_MESSAGES/<domain>-NN.mo``);
- ``git:<git dir>@<commit>[:<subdir>]``, a PostgreSQL source tree in a git repository: each ``po/*.po`` of the
  languages the tree ships (``po/LINGUAS``, or ``AVAIL_LANGUAGES`` in ``nls.mk``) compiled with ``msgfmt`` (which
  leaves out fuzzy entries, as the build does).

From a source tree it also takes the messages that are never translated and so are in no catalogue: the format
strings of ``elog()`` and ``errmsg_internal()`` calls in src/backend, and every format string in contrib/amcheck
(amcheck is not translated; pg_amcheck prints its messages). For each ``ereport()`` it records whether the errcode
is ERRCODE_DATA_CORRUPTED or ERRCODE_INDEX_CORRUPTED (SQLSTATE XX001/XX002), the server's own word for damage.

``data`` writes what is committed, from that file and the classification ``tests/data/pgmessages/classified.tsv``:

- ``tests/data/pgmessages/catalogue.json.xz``: every message of every version (English format string, plural,
  domain, versions, XX001/XX002), and each one's translations per language: what the tests render and check;
- ``python/pgsurgeon/explain/translations.json`` (package data): the translations of the messages classified as
  damage and of the severity words, for explain to read translated logs.

Nothing of PostgreSQL's code is kept: only message texts, which are data.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import struct
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "pgmessages"
PACKAGE_DATA = ROOT / "python" / "pgsurgeon" / "explain" / "translations.json"

# catalogue domain -> its po directory in the source tree
DOMAINS = {
    "postgres": "src/backend/po",
    "pg_amcheck": "src/bin/pg_amcheck/po",
    "pg_checksums": "src/bin/pg_checksums/po",
    "pg_verifybackup": "src/bin/pg_verifybackup/po",
    "pg_dump": "src/bin/pg_dump/po",
    "psql": "src/bin/psql/po",
    "libpq5": "src/interfaces/libpq/po",
}
# the severity words of elog.c and of the client tools' logging.c, translated in the same catalogues
LEVELS = ("ERROR", "FATAL", "PANIC", "WARNING", "LOG", "NOTICE", "INFO", "DEBUG", "DETAIL", "HINT", "CONTEXT",
          "STATEMENT", "LOCATION", "QUERY")  # fmt: skip
TOOL_LEVELS = ("error: ", "warning: ", "detail: ", "hint: ", "fatal: ")

Catalogue = dict[str, Any]  # {"msgids": {key: plural or ""}, "tr": {lang: {key: [forms]}}}


def read_mo(data: bytes) -> dict[tuple[str, str], list[str]]:
    """(msgid, msgid_plural or "") -> translated forms, of one compiled catalogue (GNU .mo), the header and
    untranslated entries left out, a msgctxt dropped."""
    order = "<" if data[:4] == b"\xde\x12\x04\x95" else ">"
    count, orig, trans = struct.unpack(order + "3I", data[8:20])
    out: dict[tuple[str, str], list[str]] = {}
    for i in range(count):
        olen, ooff = struct.unpack(order + "2I", data[orig + 8 * i : orig + 8 * i + 8])
        tlen, toff = struct.unpack(order + "2I", data[trans + 8 * i : trans + 8 * i + 8])
        key = data[ooff : ooff + olen].decode("utf-8")
        forms = data[toff : toff + tlen].decode("utf-8").split("\x00")
        key = key.split("\x04", 1)[-1]
        msgid, _, plural = key.partition("\x00")
        if msgid and any(forms):
            out[(msgid, plural)] = forms
    return out


def _git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True).stdout


def _languages(gitdir: str, rev: str, podir: str) -> list[str]:
    files = _git(gitdir, "ls-tree", "--name-only", f"{rev}:{podir}").decode().split()
    have = sorted(f[:-3] for f in files if f.endswith(".po"))
    if "LINGUAS" in files:
        listed = _git(gitdir, "show", f"{rev}:{podir}/LINGUAS").decode().split()
        return [lang for lang in listed if lang in have]
    nls = _git(gitdir, "show", f"{rev}:{podir.removesuffix('/po')}/nls.mk").decode()
    m = re.search(r"^AVAIL_LANGUAGES\s*:?=\s*(.*)$", nls, re.MULTILINE)
    return [lang for lang in (m.group(1).split() if m else have) if lang in have]


def _decode_mo(data: bytes) -> dict[tuple[str, str], list[str]]:
    """read_mo, after making sure the catalogue is UTF-8 (msgfmt keeps a .po's charset)."""
    head = re.search(rb"charset=([\w-]+)", data)
    charset = head.group(1).decode() if head else "utf-8"
    if charset.lower().replace("-", "") != "utf8":
        raise SystemExit(f"pgmessages: a catalogue in {charset}\nhint: convert it with msgconv --to-code=UTF-8")
    return read_mo(data)


# ------------------------------------------------------------------------------------------ sources


def from_debian(root: Path, version: str) -> dict[str, dict[str, dict[tuple[str, str], list[str]]]]:
    """domain -> language -> catalogue, from unpacked Debian packages."""
    out: dict[str, dict[str, dict[tuple[str, str], list[str]]]] = {}
    for domain in DOMAINS:
        for mo in sorted(root.glob(f"usr/share/locale/*/LC_MESSAGES/{domain}-{version}.mo")):
            out.setdefault(domain, {})[mo.parent.parent.name] = _decode_mo(mo.read_bytes())
    return out


def from_git(spec: str) -> tuple[dict[str, dict[str, dict[tuple[str, str], list[str]]]], dict[str, Any]]:
    """The catalogues of a source tree (``<git dir>@<commit>[:<subdir>]``) and its untranslated messages."""
    gitdir, _, rest = spec.partition("@")
    rev, _, sub = rest.partition(":")
    prefix = sub.strip("/") + "/" if sub else ""
    out: dict[str, dict[str, dict[tuple[str, str], list[str]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for domain, podir in DOMAINS.items():
            try:
                langs = _languages(gitdir, rev, prefix + podir)
            except subprocess.CalledProcessError:  # the tool is newer than this version
                continue
            for lang in langs:
                po = Path(tmp) / f"{domain}-{lang}.po"
                po.write_bytes(_git(gitdir, "show", f"{rev}:{prefix}{podir}/{lang}.po"))
                mo = subprocess.run(["msgfmt", "-o", "-", str(po)], check=True, capture_output=True).stdout
                out.setdefault(domain, {})[lang] = _decode_mo(mo)
    return out, untranslated(gitdir, rev, prefix)


_LITERALS = r'(?P<lit>(?:"(?:[^"\\\n]|\\.)*"\s*|(?:U?INT64_FORMAT|INT64_MODIFIER|UINT64_FORMAT)\s*)+)'
_UNTRANSLATED_CALLS = re.compile(
    r"\b(?:elog\s*\(\s*(?P<level>ERROR|FATAL|PANIC|WARNING)\s*,|(?P<call>errmsg_internal|errdetail_internal|"
    r"errmsg|errmsg_plural|errdetail|psprintf|report_corruption\s*\(\s*\w+\s*,)\s*\()\s*" + _LITERALS
)
_EREPORT = re.compile(r"\bereport\s*\(")
# the texts that are never a message line of their own: DETAIL, HINT and CONTEXT lines, and the descriptions of
# settings (gettext_noop), which no log shows after ERROR
_SECONDARY = re.compile(
    r"\b(?:errdetail|errdetail_log|errdetail_plural|errhint|errhint_plural|errcontext|gettext_noop)"
    r"\s*\(\s*" + _LITERALS
)
_ERRMSG = re.compile(r"\berrmsg(?:_internal|_plural)?\s*\(\s*" + _LITERALS)
_CORRUPTED = re.compile(r"ERRCODE_(?:DATA|INDEX)_CORRUPTED")


def _c_string(literals: str) -> str:
    """The value of adjacent C string literals (with PostgreSQL's 64-bit format macros as printf's)."""
    literals = re.sub(r"\bU(?:INT64_FORMAT)\b", '"%llu"', literals)
    literals = re.sub(r"\bINT64_FORMAT\b", '"%lld"', literals)
    literals = re.sub(r"\bINT64_MODIFIER\b", '"ll"', literals)
    parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', literals)
    text = "".join(parts)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _balanced(text: str, start: int) -> str:
    """The text of the call whose '(' is at ``start``, to its matching ')', string and char literals skipped."""
    depth, i = 0, start
    while i < len(text) and i - start < 5000:  # an ereport is never longer: past that the scan went astray
        c = text[i]
        if text.startswith("/*", i):
            i = text.find("*/", i) + 1 or len(text)
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif c in "\"'":
            i += 1
            while i < len(text) and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return text[start:]


def untranslated(gitdir: str, rev: str, prefix: str) -> dict[str, Any]:
    """The English-only messages of a source tree (elog, errmsg_internal, contrib/amcheck), and the errmsg texts
    raised with SQLSTATE XX001/XX002, and the texts that are only ever DETAIL/HINT/CONTEXT lines or setting
    descriptions."""
    files = _git(gitdir, "ls-tree", "-r", "--name-only", rev, "--", prefix + "src", prefix + "contrib/amcheck")
    elog: set[str] = set()
    amcheck: set[str] = set()
    corrupted: set[str] = set()
    secondary: set[str] = set()
    for name in files.decode().split("\n"):
        if not name.endswith(".c") or "/src/test/" in "/" + name or "/src/tutorial/" in "/" + name:
            continue
        text = _git(gitdir, "show", f"{rev}:{name}").decode("utf-8", "replace")
        in_amcheck = "/contrib/amcheck/" in "/" + name
        for m in _UNTRANSLATED_CALLS.finditer(text):
            call = m.group("call") or "elog"
            msg = _c_string(m.group("lit"))
            if in_amcheck:
                amcheck.add(msg)
            elif call in ("elog", "errmsg_internal", "errdetail_internal"):
                elog.add(msg)
        secondary.update(_c_string(m.group("lit")) for m in _SECONDARY.finditer(text))
        for m in _EREPORT.finditer(text):
            body = _balanced(text, m.end() - 1)
            if _CORRUPTED.search(body):
                corrupted.update(_c_string(e.group("lit")) for e in _ERRMSG.finditer(body))
    return {
        "elog": sorted(elog),
        "amcheck": sorted(amcheck),
        "corrupted": sorted(corrupted),
        "secondary": sorted(secondary),
    }


def extract(sources: list[str]) -> dict[str, Any]:
    """The whole-catalogue file: per version, domain -> language -> {"msgid\\0plural": forms}, and the English-only
    messages. A version given a Debian directory and a source tree takes its catalogues from Debian's build."""
    versions: dict[str, Any] = {}
    for spec in sources:
        version, _, where = spec.partition("=")
        entry = versions.setdefault(version, {"sources": [], "domains": {}})
        entry["sources"].append(where)
        if where.startswith("git:"):
            cats, english = from_git(where[4:])
            entry.update(english)
        else:
            cats = from_debian(Path(where), version)
        for d, langs in cats.items():
            if d not in entry["domains"] or not where.startswith("git:"):
                entry["domains"][d] = {
                    lang: {f"{k[0]}\x00{k[1]}": v for k, v in sorted(cat.items())} for lang, cat in langs.items()
                }
    return {"versions": versions}


# ------------------------------------------------------------------------------------------ committed data

TOOL_DOMAINS = ("pg_amcheck", "pg_checksums", "pg_verifybackup", "pg_dump", "psql", "libpq5")


def messages(full: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of every version once: English format, plural, domains, versions, XX001/XX002, whether it
    is only ever a DETAIL/HINT/CONTEXT line, and its translations per language with the versions of each."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for version, entry in full["versions"].items():
        corrupted, secondary = set(entry.get("corrupted", ())), set(entry.get("secondary", ()))
        catalogues = [(d, lang, cat) for d, langs in entry["domains"].items() for lang, cat in langs.items()]
        english = [(d, k) for d, _, cat in catalogues for k in cat]
        english += [(kind, m + "\x00") for kind in ("elog", "amcheck") for m in entry.get(kind, ())]
        for domain, key in english:
            msgid, _, plural = key.partition("\x00")
            m = out.setdefault((msgid, plural), {"id": msgid, "plural": plural, "domains": [], "versions": [],
                                                 "xx": False, "secondary": False, "tr": {}})  # fmt: skip
            _add(m["domains"], domain)
            _add(m["versions"], version)
            m["xx"] = m["xx"] or msgid in corrupted
            m["secondary"] = m["secondary"] or msgid in secondary
        for _domain, lang, cat in catalogues:
            for key, forms in cat.items():
                msgid, _, plural = key.partition("\x00")
                variants = out[(msgid, plural)]["tr"].setdefault(lang, [])
                same = next((v for v in variants if v[0] == forms), None)
                if same is None:
                    variants.append([forms, [version]])
                else:
                    _add(same[1], version)
    return sorted(out.values(), key=lambda m: (m["id"], m["plural"]))


def _add(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def languages(full: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """version -> domain -> the languages it ships."""
    return {v: {d: sorted(langs) for d, langs in e["domains"].items()} for v, e in full["versions"].items()}


def classified(path: Path = DATA / "classified.tsv") -> dict[str, str]:
    """English msgid -> its class: a damage pattern's id, 'context', 'wrapper' or 'grey'."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            cls, msgid = line.split("\t")[:2]
            out[json.loads(msgid)] = cls
    return out


def package_data(msgs: list[dict[str, Any]], classes: dict[str, str]) -> dict[str, Any]:
    """translations.json: the severity words of each language and the translated formats of the messages
    classified as damage, context or wrapper (never 'grey'), each paired with the English format it renders."""
    levels: dict[str, dict[str, str]] = defaultdict(dict)
    pairs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for m in msgs:
        word = m["id"].strip().rstrip(":")
        is_level = not m["plural"] and (
            (word in LEVELS and "postgres" in m["domains"])
            or (m["id"] in TOOL_LEVELS and set(m["domains"]) & set(TOOL_DOMAINS))
        )
        for lang, variants in m["tr"].items():
            for forms, _versions in variants:
                if is_level:
                    levels[lang][forms[0].strip()] = word
                elif classes.get(m["id"], "grey") != "grey":
                    for i, form in enumerate(forms):
                        english = m["plural"] if m["plural"] and (i > 0 or len(forms) == 1) else m["id"]
                        pairs[lang].add((english.rstrip("\n"), form.rstrip("\n")))
                        # a message on several lines (libpq's 'server closed the connection unexpectedly') is
                        # read a line at a time: its first line is known on its own
                        if "\n" in english.strip("\n") and "\n" in form.strip("\n"):
                            pairs[lang].add((english.split("\n")[0], form.split("\n")[0]))
    _add_shadowed(msgs, classes, pairs)
    return {
        "levels": {lang: dict(sorted(words.items())) for lang, words in sorted(levels.items())},
        "messages": {lang: sorted(map(list, p)) for lang, p in sorted(pairs.items())},
    }


def _add_shadowed(msgs: list[dict[str, Any]], classes: dict[str, str], pairs: dict[str, set[tuple[str, str]]]) -> None:
    """Add the translations of unclassified messages that a classified translation would also match (German
    'konnte Datei »%s« nicht öffnen: %m' matches the translation of 'could not open file "%s": maximum nesting
    depth exceeded' too): with their own English format, the more specific one, they are read back as what they
    are."""
    from pgsurgeon.explain import printf
    from pgsurgeon.explain.translate import TYPOGRAPHY

    for lang, known in pairs.items():
        regexes = []
        for _, t in known:
            t = t.translate(TYPOGRAPHY).strip()
            anchor = max(printf.literal_parts(t), key=len).strip().lower()
            regexes.append((anchor, re.compile(printf.to_regex(t)[0], re.IGNORECASE)))
        extra: set[tuple[str, str]] = set()
        for m in msgs:
            if classes.get(m["id"]) or "\n" in m["id"].rstrip("\n"):
                continue
            for forms, _versions in m["tr"].get(lang, ()):
                for i, form in enumerate(forms):
                    english = m["plural"] if m["plural"] and (i > 0 or len(forms) == 1) else m["id"]
                    text = printf.render(form, printf.sample(english)).translate(TYPOGRAPHY).strip()
                    low = text.lower()
                    if any(a in low and r.fullmatch(text) for a, r in regexes):
                        extra.add((english.rstrip("\n"), form.rstrip("\n")))
        known |= extra


def write_data(full: dict[str, Any]) -> None:
    msgs = messages(full)
    DATA.mkdir(parents=True, exist_ok=True)
    blob = json.dumps({"languages": languages(full), "messages": msgs}, ensure_ascii=False, sort_keys=True)
    (DATA / "catalogue.json.xz").write_bytes(lzma.compress(blob.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    data = package_data(msgs, classified())
    PACKAGE_DATA.write_text(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("extract", help="read the catalogues of each version into one JSON file")
    ex.add_argument("--source", action="append", required=True, help="VERSION=DEBIAN_DIR or VERSION=git:GITDIR@REV")
    ex.add_argument("--out", type=Path, required=True)
    da = sub.add_parser("data", help="write the committed data from the extracted file")
    da.add_argument("full", type=Path)
    sub.add_parser(
        "package", help="rewrite translations.json from the committed catalogue (after classified.tsv changes)"
    )
    sub.add_parser("draft", help="list the messages explain reads as damage that classified.tsv does not list yet")
    args = ap.parse_args(argv)
    if args.cmd == "extract":
        args.out.write_text(json.dumps(extract(args.source), ensure_ascii=False), encoding="utf-8")
        return 0
    if args.cmd == "package":
        from pgsurgeon.explain import coverage

        data = package_data(coverage.catalogue()["messages"], classified())
        PACKAGE_DATA.write_text(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    if args.cmd == "draft":
        from pgsurgeon.explain import coverage

        for line in coverage.measure().false_alarms:
            print(line)
        return 0
    write_data(json.loads(args.full.read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
