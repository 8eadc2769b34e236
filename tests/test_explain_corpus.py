"""explain against what real servers said: every ERROR, FATAL, PANIC and WARNING the PostgreSQL 15 and 18 test servers
wrote to their logs during a full test run, and what pg_dump and pg_amcheck printed when they failed in the lab runs
(captured by tests/fix_capture.py, committed as tests/data/server-messages.txt). explain must recognise at least 95
% of them (as damage or as an ordinary error), and every one that is recognised as damage must come with next steps.

Regenerate the corpus after a capture run (see tests/fix_capture.py)::

    .venv/bin/python tests/test_explain_corpus.py /tmp/msgs.txt > tests/data/server-messages.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pgsurgeon.explain import explain_text

CORPUS = Path(__file__).resolve().parent / "data" / "server-messages.txt"
_PREFIX = re.compile(r"^.*?\b(?=(?:ERROR|FATAL|PANIC|WARNING|DETAIL|HINT|CONTEXT):\s)")


def load(path: Path = CORPUS) -> list[tuple[str, str]]:
    """(server, message with its DETAIL/HINT lines) pairs of a corpus file."""
    out: list[tuple[str, str]] = []
    server = ""
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            if lines:
                out.append((server, "\n".join(lines)))
            server, lines = line[2:].strip(), []
        elif line:
            lines.append(line)
    if lines:
        out.append((server, "\n".join(lines)))
    return out


def build(captured: Path) -> str:
    """The corpus from a capture file: log prefixes (time, pid) removed, each wording once per server."""
    seen: set[tuple[str, str]] = set()
    blocks: list[str] = []
    for server, message in load(captured):
        text = "\n".join(_PREFIX.sub("", ln) for ln in message.splitlines())
        # one message per shape: the same wording with other numbers or another temporary path counts once
        shape = re.sub(r"\d+", "N", re.sub(r'"/tmp/[^"]*"', '"/tmp/"', text))
        if (server, shape) in seen:
            continue
        seen.add((server, shape))
        blocks.append(f"# {server}\n{text}")
    return "\n".join(blocks) + "\n"


def test_explain_recognises_what_the_test_servers_said() -> None:
    corpus = load()
    assert len(corpus) >= 50, "the corpus is too small to mean anything; regenerate it"
    missed: list[str] = []
    for _server, message in corpus:
        found, unknown = explain_text(message)
        first = message.splitlines()[0]
        if not found or unknown:  # every line read: the message, and the lines around it as its context
            missed.append(first + "".join(f"\n    (not read: {u})" for u in unknown))
            continue
        for exp in found:
            if exp.pattern.kind == "damage":
                assert exp.steps(), f"no next step for {first!r}"
    share = 1 - len(missed) / len(corpus)
    assert share >= 0.95, f"{share:.1%} recognised; not recognised:\n" + "\n".join(missed)


def test_the_corpus_holds_real_damage_and_both_servers() -> None:
    corpus = load()
    servers = {s for s, _ in corpus}
    assert {"pg15", "pg18"} <= servers
    assert any(s.endswith(("pg_dump", "pg_amcheck")) for s in servers), "no client tool output in the corpus"
    ids = {e.pattern.id for _, m in corpus for e in explain_text(m)[0]}
    assert {"invalid_page", "xact_status"} <= ids, ids


if __name__ == "__main__":  # pragma: no cover
    print(build(Path(sys.argv[1])), end="")
