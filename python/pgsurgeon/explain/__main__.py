"""``python -m pgsurgeon.explain > docs/errors.md``: the catalogue as Markdown."""

from __future__ import annotations

from pgsurgeon.explain.docs import markdown

print(markdown(), end="")
