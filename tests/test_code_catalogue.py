"""Every finding code written anywhere in the core or the Python package is in the core's catalogue
(crates/core/src/finding/mod.rs) with an area, a severity, the error PostgreSQL raises and a remedy: none falls through
to the catch-all. Issue 15."""

from __future__ import annotations

import re
from pathlib import Path

from pgsurgeon import core

ROOT = Path(__file__).resolve().parent.parent
AREAS = ("file", "checksum", "page_header", "line_pointer", "tuple_header", "tuple_data", "toast", "index", "server")
# A code literal: "area.name" as a whole string. File names that look alike are not codes.
CODE = re.compile(r"\"((?:" + "|".join(AREAS) + r")\.[a-z_]+)\"")
NOT_CODES = {"index.json", "server.log"}


def written_codes() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    files = [*(ROOT / "crates/core/src").rglob("*.rs"), *(ROOT / "python/pgsurgeon").rglob("*.py")]
    for path in files:
        for m in CODE.finditer(path.read_text()):
            if m.group(1) not in NOT_CODES:
                found.setdefault(m.group(1), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_code_is_catalogued() -> None:
    codes = written_codes()
    assert len(codes) > 50  # the scan found the codes (a broken pattern would pass vacuously)
    fallback = core.describe_code("no_such_area.no_such_code")
    missing = {c: sorted(p) for c, p in codes.items() if core.describe_code(c) == fallback}
    assert missing == {}, f"codes not in crates/core/src/finding/mod.rs: {missing}"
    for code in codes:
        area, severity, pg_error, remedy = core.describe_code(code)
        assert area and severity and remedy, code
        assert pg_error or severity != "error", f"{code}: an error finding must say what the server does"


PYI = ROOT / "python/pgsurgeon/_pgsurgeon.pyi"
_BEGIN = "# BEGIN generated finding codes"
_END = "# END generated finding codes"


def _pyi_block(codes: list[str]) -> str:
    body = "".join(f'    "{c}",\n' for c in codes)
    head = f"{_BEGIN} (crates/core/src/finding Code; PGSURGEON_REGEN_CODES=1 pytest {Path(__file__).name})"
    return f"{head}\nFindingCode = Literal[\n{body}]\n{_END}"


def test_pyi_lists_every_finding_code() -> None:
    """The binding's stub types a finding's code as ``FindingCode``, generated from the core's enum: it must list
    exactly the codes the core has (regenerate with PGSURGEON_REGEN_CODES=1)."""
    import os

    codes = core.finding_codes()
    text = PYI.read_text()
    start, end = text.index(_BEGIN), text.index(_END) + len(_END)
    fresh = text[:start] + _pyi_block(codes) + text[end:]
    if os.environ.get("PGSURGEON_REGEN_CODES") == "1":
        PYI.write_text(fresh)
    assert text == fresh, "the FindingCode list in _pgsurgeon.pyi is stale: rerun with PGSURGEON_REGEN_CODES=1"
    assert set(written_codes()) <= set(codes), "a code written in the Python package is not in the core's enum"
