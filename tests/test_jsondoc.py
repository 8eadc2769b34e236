"""The JSON report renderer of scan, health and diagnose: the same JSON, one list item a line."""

from __future__ import annotations

import json
from datetime import date

from pgsurgeon.render import jsondoc


def test_the_text_is_the_document_with_each_list_item_on_a_line_of_its_own() -> None:
    doc = {
        "summary": {"findings": 2, "nested": {"ratio": 0.5}},
        "findings": [{"code": "page.checksum", "block": 7, "message": "é\nsecond line"}, {"code": "x", "ids": [1, 2]}],
        "empty": [],
        "none": None,
        "scalars": [1, "two", 3.5],
    }
    text = jsondoc.dumps(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    # each finding is one line, in order, and the nested summary is indented over several
    assert [json.loads(ln.strip().rstrip(",")) for ln in lines if ln.startswith('  {"code"')] == doc["findings"]
    assert ' "summary": {' in lines and ' "empty": [],' in lines


def test_values_json_cannot_encode_go_through_default() -> None:
    doc = {"when": date(2026, 11, 28), "items": [{"on": date(2026, 1, 2)}]}
    assert json.loads(jsondoc.dumps(doc, default=str)) == {"when": "2026-11-28", "items": [{"on": "2026-01-02"}]}
