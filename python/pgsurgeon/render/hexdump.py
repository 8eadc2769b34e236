"""A hex dump of a page with each line labelled by the page region it starts in."""

from __future__ import annotations

from typing import Any


def regions(report: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(start, end, label) of the header, line pointer array, each item and the special space."""
    h = report["header"]
    size = int(report["length"])
    out: list[tuple[int, int, str]] = [(0, min(24, size), "page header")]
    lower = min(int(h["pd_lower"]), size)
    if lower > 24:
        out.append((24, lower, "line pointers"))
    for item in report["items"]:
        off, length = int(item["lp_off"]), int(item["lp_len"])
        if length and item["lp_flags"] != 2 and off + length <= size:
            out.append((off, off + length, f"item {item['lp']}"))
    special = int(h["pd_special"])
    if special < size:
        out.append((special, size, "special space"))
    return sorted(out)


def label_at(regs: list[tuple[int, int, str]], offset: int, width: int) -> str:
    names = [name for start, end, name in regs if start < offset + width and end > offset]
    return ", ".join(names) if names else "free space" if offset >= 24 else ""


def hexdump(data: bytes, report: dict[str, Any], width: int = 16) -> list[str]:
    """Lines of ``offset  hex  |ascii|  region``; runs of identical lines collapse into ``*``."""
    regs = regions(report)
    lines: list[str] = []
    previous: bytes | None = None
    starred = False
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        label = label_at(regs, offset, width)
        if chunk == previous and offset + width < len(data):
            if not starred:
                lines.append("*")
                starred = True
            continue
        starred = False
        previous = chunk
        hexpart = " ".join(f"{b:02x}" for b in chunk).ljust(width * 3 - 1)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:04x} {offset:5d}  {hexpart}  |{text.ljust(width)}|  {label}")
    return lines
