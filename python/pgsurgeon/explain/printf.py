"""PostgreSQL's message format strings (C printf with positional arguments, as in its catalogues): a translated
format made into a regex that captures each argument, and an English format rendered with the arguments in the
right order. ``%m`` is the system's error text (an argument of its own here)."""

from __future__ import annotations

import re
from dataclasses import dataclass

SPEC = re.compile(
    r"%(?:(?P<pos>\d+)\$)?(?P<flags>[-+ #0']*)(?P<width>\*(?:\d+\$)?|\d+)?(?:\.(?P<prec>\*(?:\d+\$)?|\d+))?"
    r"(?P<len>hh|h|ll|l|L|q|j|z|t)?(?P<conv>[diouxXeEfFgGaAcspm%])"
)
_NUMBER = {"d": r"-?\d+", "i": r"-?\d+", "u": r"\d+", "o": r"[0-7]+", "x": r"[0-9a-fA-F]+", "X": r"[0-9A-Fa-f]+"}
_FLOAT = r"-?[\d.]+(?:e[-+]?\d+)?|-?inf|nan"


@dataclass(frozen=True)
class Arg:
    """One conversion of a format: where it is, which argument (1-based) it prints, and its letter."""

    start: int
    end: int
    index: int
    conv: str


def args(fmt: str) -> list[Arg]:
    """The conversions of ``fmt`` in order of appearance (``%%`` left out); a ``*`` width or precision takes an
    argument of its own, which is never printed; ``%m`` takes none (its index is 0)."""
    out: list[Arg] = []
    following = 1
    for m in SPEC.finditer(fmt):
        conv = m.group("conv")
        if conv == "%":
            continue
        if conv == "m":  # the error text: no argument of its own in C, index 0 here
            out.append(Arg(m.start(), m.end(), 0, conv))
            continue
        following += sum(1 for star in (m.group("width"), m.group("prec")) if star == "*")
        pos = int(m.group("pos")) if m.group("pos") else following
        following = pos + 1
        out.append(Arg(m.start(), m.end(), pos, conv))
    return out


def literal_parts(fmt: str) -> list[str]:
    """The text of ``fmt`` between its conversions (``%%`` as '%')."""
    parts, last = [], 0
    for a in args(fmt):
        parts.append(fmt[last : a.start].replace("%%", "%"))
        last = a.end
    parts.append(fmt[last:].replace("%%", "%"))
    return parts


def to_regex(fmt: str) -> tuple[str, list[int]]:
    """A regex source matching what ``fmt`` prints, one group per conversion, and the argument index of each
    group. A string argument is as short as the text after it allows; the last one takes the rest of the line."""
    out: list[str] = []
    indices: list[int] = []
    last = 0
    conversions = args(fmt)
    for n, a in enumerate(conversions):
        out.append(_literal(fmt[last : a.start]))
        last_one = n == len(conversions) - 1 and not fmt[a.end :].strip()
        out.append("(" + _value(a.conv, last_one) + ")")
        indices.append(a.index)
        last = a.end
    out.append(_literal(fmt[last:]))
    return "".join(out), indices


def _literal(text: str) -> str:
    """Literal text as a regex: runs of spaces match any run of spaces (logs and pastes re-space lines)."""
    return r"\s+".join(re.escape(p) for p in re.split(r"\s+", text.replace("%%", "%")))


def _value(conv: str, last: bool) -> str:
    if conv in _NUMBER:
        return _NUMBER[conv]
    if conv in "eEfFgGaA":
        return _FLOAT
    if conv == "c":
        return "."
    if conv == "p":
        return r"(?:0x)?[0-9a-fA-F]+"
    return ".+" if last else ".+?"


def render(fmt: str, values: dict[int, str]) -> str:
    """``fmt`` with each conversion replaced by its argument's value (``%%`` as '%')."""
    out: list[str] = []
    last = 0
    for a in args(fmt):
        out.append(fmt[last : a.start].replace("%%", "%"))
        out.append(values.get(a.index, ""))
        last = a.end
    out.append(fmt[last:].replace("%%", "%"))
    return "".join(out)


def sample(fmt: str) -> dict[int, str]:
    """Values for rendering ``fmt`` as a real message would say it: a relation file path after 'file' or
    'relation', a TOAST table after 'toast value … in', distinct numbers otherwise (so that a translation that
    reorders its arguments shows)."""
    values = {0: "Input/output error"}
    for a in args(fmt):
        before = fmt[: a.start]
        if a.conv in "diu":
            values[a.index] = str(1000 * a.index + 285)
        elif a.conv in "xX":
            values[a.index] = "1A2B" if a.conv == "X" else "1a2b"
        elif a.conv in "eEfFgGaA":
            values[a.index] = "1.5"
        elif a.conv == "c":
            values[a.index] = "x"
        elif a.conv == "p":
            values[a.index] = "0x55d0"
        elif re.search(r'(?:relation|file) "?$', before):
            values[a.index] = f"base/16384/2972{a.index}"
        elif "toast value" in fmt and before.endswith("in "):
            values[a.index] = f"pg_toast_1646{a.index}"
        else:
            values[a.index] = f"t{a.index}"
    return values
