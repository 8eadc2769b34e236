"""``pgsurgeon explain``: what a PostgreSQL error about damaged data means, which kinds of damage produce it, and
what to run next with the values taken from the message.

A catalogue of message patterns (the server's wording in PostgreSQL 14-18, amcheck's, pg_amcheck's and
pg_checksums'), each with a plain-words meaning, the ``pgsurgeon corrupt`` modes that reproduce it (names from
``pgsurgeon.simulate.modes``) and next steps. :func:`explain_text` takes one message or a log excerpt: every
recognised line is explained once (repeats are counted), DETAIL/HINT/CONTEXT lines are read with the line
they belong to.

The parts: ``patterns`` (the catalogue and one example per pattern: data), ``derive`` (the values computed from
a message's own), ``matching`` (text and logs into explanations), ``nextsteps`` (the commands an explanation ends
with, :class:`Where` and :func:`resolver`), ``docs`` (``--list`` and docs/errors.md).
"""

from __future__ import annotations

from pgsurgeon.explain.docs import catalogue, markdown
from pgsurgeon.explain.matching import Explanation, explain_text, match_line, normalise
from pgsurgeon.explain.nextsteps import Where, resolver
from pgsurgeon.explain.patterns import EXAMPLES, PATTERNS, ModeRef, Pattern, Step

__all__ = [
    "EXAMPLES",
    "PATTERNS",
    "Explanation",
    "ModeRef",
    "Pattern",
    "Step",
    "Where",
    "catalogue",
    "explain_text",
    "markdown",
    "match_line",
    "normalise",
    "resolver",
]
