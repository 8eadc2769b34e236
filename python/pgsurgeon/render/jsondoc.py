"""A command's JSON report as text: its top-level keys one a line, and each item of its lists (findings, relations)
on a line of its own.

``json.dumps(..., indent=…)`` runs Python's own encoder, element by element: health's report on a schema of 80,000
relations took longer to print than to compute. Each item here goes through the C encoder in one piece; the text
is the same JSON, one record a line (what grep and a reader of a long report want anyway).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

_ITEM = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=True)


def dumps(doc: Mapping[str, Any], default: Callable[[Any], Any] | None = None) -> str:
    """``doc`` as JSON text; ``default`` as json.dumps takes it."""
    item = _ITEM if default is None else json.JSONEncoder(separators=(", ", ": "), default=default)
    lines = ["{"]
    keys = list(doc)
    for n, key in enumerate(keys):
        value = doc[key]
        comma = "," if n < len(keys) - 1 else ""
        head = f" {json.dumps(key)}: "
        if isinstance(value, list) and value:
            lines.append(head + "[")
            lines.extend(f"  {item.encode(v)}," for v in value[:-1])
            lines.append(f"  {item.encode(value[-1])}")
            lines.append(f" ]{comma}")
        else:
            lines.append(head + json.dumps(value, indent=1, default=default).replace("\n", "\n ") + comma)
    lines.append("}")
    return "\n".join(lines)
