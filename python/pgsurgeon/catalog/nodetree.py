"""pg_node_tree text (``{CONST :consttype 23 … :constvalue 4 [ 42 0 0 0 0 0 0 0 ]}``) read back into Python values:
what the server's nodeToString wrote into pg_attrdef.adbin and pg_class.relpartbound (src/backend/nodes/outfuncs.c,
read by readfuncs.c). Only the shape is parsed; what a node means is up to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

Value = Union["Node", list["Value"], bytes, str, None]


@dataclass
class Node:
    tag: str
    fields: dict[str, Value] = field(default_factory=dict)

    def get(self, name: str) -> Value:
        return self.fields.get(name)

    def text(self, name: str) -> str:
        v = self.fields.get(name)
        return v if isinstance(v, str) else ""

    def int(self, name: str, default: int = 0) -> int:
        try:
            return int(self.text(name))
        except ValueError:
            return default


class NodeTreeError(ValueError):
    pass


def _tokens(text: str) -> list[str]:
    """outfuncs.c's tokens: braces, parentheses, ``<>``, and words separated by blanks (a backslash escapes)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            i += 1
        elif c in "{}()":
            out.append(c)
            i += 1
        else:
            j = i
            word: list[str] = []
            while j < n and text[j] not in " \t\n{}()":
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                word.append(text[j])
                j += 1
            out.append("".join(word))
            i = j
    return out


def parse(text: str) -> Value:
    toks = _tokens(text)
    pos = 0

    def value() -> Value:
        nonlocal pos
        if pos >= len(toks):
            raise NodeTreeError("node tree ends early")
        t = toks[pos]
        if t == "{":
            pos += 1
            tag = toks[pos]
            pos += 1
            node = Node(tag)
            while toks[pos] != "}":
                name = toks[pos]
                if not name.startswith(":"):
                    raise NodeTreeError(f"expected a field name in {tag}, got {name!r}")
                pos += 1
                if name == ":constvalue":
                    node.fields["constvalue"] = datum()
                else:
                    node.fields[name[1:]] = value()
            pos += 1
            return node
        if t == "(":
            pos += 1
            items: list[Value] = []
            # integer/OID lists: (i 1 2) (o 16384)
            if pos < len(toks) and toks[pos] in ("i", "o", "b", "x"):
                pos += 1
            while toks[pos] != ")":
                items.append(value())
            pos += 1
            return items
        pos += 1
        if t == "<>":
            return None
        return t

    def datum() -> Value:
        # ":constvalue 4 [ 42 0 0 0 0 0 0 0 ]" or "<>" for NULL (outDatum)
        nonlocal pos
        if toks[pos] == "<>":
            pos += 1
            return None
        length = int(toks[pos])
        pos += 1
        if toks[pos] != "[":
            raise NodeTreeError("constvalue without bytes")
        pos += 1
        raw: list[int] = []
        while toks[pos] != "]":
            raw.append(int(toks[pos]) & 0xFF)
            pos += 1
        pos += 1
        return bytes(raw[:length]) if length <= len(raw) else bytes(raw)

    v = value()
    return v
