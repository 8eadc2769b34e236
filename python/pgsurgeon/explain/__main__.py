"""``python -m pgsurgeon.explain > docs/errors.md``: the catalogue as Markdown."""

from __future__ import annotations

from pgsurgeon.explain import markdown

print(markdown(), end="")
