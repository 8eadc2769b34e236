"""pytest plugin: with ``PGSURGEON_CAPTURE_MESSAGES=FILE`` set, every ERROR, FATAL, PANIC and WARNING line the test
servers wrote to their logs (DETAIL/HINT/CONTEXT lines attached) is appended to FILE when a cluster is destroyed,
and so is what pg_dump and pg_amcheck printed when they failed in a lab run, so that
``tests/test_explain_corpus.py`` can check that explain recognises what real servers say, not hand-typed texts.

Regenerate the committed corpus (tests/data/server-messages.txt) with::

    PGSURGEON_CAPTURE_MESSAGES=/tmp/msgs.txt PGSURGEON_REQUIRE_PG=1 .venv/bin/pytest -q -p no:cacheprovider
    .venv/bin/python tests/test_explain_corpus.py /tmp/msgs.txt > tests/data/server-messages.txt
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgsurgeon.lab import LabCluster

SEVERE = re.compile(r"\b(?:ERROR|FATAL|PANIC|WARNING):\s")
ATTACHED = re.compile(r"\b(?:DETAIL|HINT|CONTEXT):\s")


def harvest(log: str) -> list[str]:
    """The severe messages of a server log, each with the DETAIL/HINT lines that follow it (joined by newlines)."""
    out: list[str] = []
    for line in log.splitlines():
        if SEVERE.search(line):
            out.append(line)
        elif out and ATTACHED.search(line) and not out[-1].endswith("\x00"):
            out[-1] += "\n" + line
        elif out:
            out[-1] += "\x00"  # closed: a later DETAIL belongs to something else
    return [m.replace("\x00", "") for m in out]


@pytest.fixture(scope="session", autouse=True)
def capture_server_messages() -> Iterator[None]:
    target = os.environ.get("PGSURGEON_CAPTURE_MESSAGES")
    if not target:
        yield
        return
    destroy = LabCluster.destroy

    def destroy_and_keep_log(self: LabCluster) -> None:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if text:
            with Path(target).open("a", encoding="utf-8") as fh:
                for message in harvest(text):
                    fh.write(f"# pg{self.version}\n{message}\n")
        destroy(self)

    from pgsurgeon.labrun import observe

    run_tool = observe.run_tool

    def run_tool_and_keep_output(cluster: LabCluster, *args: str) -> observe.Tool:
        tool = run_tool(cluster, *args)
        if tool.code and tool.output:  # what pg_dump and pg_amcheck printed when they failed
            with Path(target).open("a", encoding="utf-8") as fh:
                fh.write(f"# pg{cluster.version} {args[0]}\n" + "\n".join(tool.output) + "\n")
        return tool

    mp = pytest.MonkeyPatch()
    mp.setattr(LabCluster, "destroy", destroy_and_keep_log)
    mp.setattr(observe, "run_tool", run_tool_and_keep_output)
    try:
        yield
    finally:
        mp.undo()
