"""Every pgsurgeon command explain prints, for every pattern it knows, is a command line pgsurgeon accepts (issue 28).
test_steps_run runs the steps of the damage a test cluster can be given; the patterns whose damage it cannot give
yet (pg_control, WAL, pg_xact, replication slots, …) are checked here without a server: each command of the
pattern's example, explained with connection options and a data directory, parses with pgsurgeon's own parser, so
none of them ends in a usage error (exit 64) when run as printed."""

from __future__ import annotations

import shlex

import pytest

from pgsurgeon.cli import get_parser
from pgsurgeon.errors import UsageError
from pgsurgeon.explain import EXAMPLES, Where, explain_text

WHERE = Where(conn="-h db1 -p 5432 -U postgres -d shop", pgdata="/srv/pg/18/main", log="/var/log/postgresql/pg.log")
_OPERATORS = {"&&", "||", "|", ";", "(", ")", "$(", "`"}


def pgsurgeon_commands(shell: str) -> list[list[str]]:
    """The pgsurgeon invocations of a shell line (pipelines, lists and $(…) split apart), as argv."""
    lexer = shlex.shlex(shell, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out: list[list[str]] = []
    words: list[str] = []
    for token in [*lexer, ";"]:
        if token in _OPERATORS or set(token) <= set("&|;()"):
            if words and words[0] == "pgsurgeon":
                out.append(words[1:])
            words = []
        else:
            words.append(token)
    return out


def test_the_splitter_finds_each_invocation() -> None:
    line = 'pgsurgeon scan "$PGDATA" -t 1 && X=$(pgsurgeon control -D /d --xid 5) | grep x  # pgsurgeon lab'
    assert pgsurgeon_commands(line) == [["scan", "$PGDATA", "-t", "1"], ["control", "-D", "/d", "--xid", "5"]]


@pytest.mark.parametrize("pattern_id", sorted(EXAMPLES))
def test_each_pattern_s_pgsurgeon_commands_parse(pattern_id: str) -> None:
    found, _ = explain_text(EXAMPLES[pattern_id], WHERE)
    commands = [
        argv for exp in found for s in exp.steps() if s.kind == "shell" for argv in pgsurgeon_commands(s.command)
    ]
    for argv in commands:
        try:
            get_parser(argv).parse_args(argv)
        except UsageError as exc:
            pytest.fail(f"{pattern_id}: pgsurgeon {shlex.join(argv)}: {exc}")
