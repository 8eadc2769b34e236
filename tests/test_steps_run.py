"""Every next step pgsurgeon prints runs as printed (issue 28): on issue 28's damaged shop cluster (a zeroed page,
garbled line pointers, a damaged TOAST page, a cut index; data checksums on), the steps scan prints offline,
diagnose prints online, and explain prints for every error the server raises reading the damaged tables and for
its log, are run through a shell, one by one, in the order a DBA would: what reads first, what writes last.

A step may exit with a code it announces: pgsurgeon's 2 is "damage found" (docs: exit codes). Anything else fails
the test, with the step and its output. The environment holds what the steps say they need: PGDATA for "$PGDATA",
PGHOST/PGPORT/PGUSER where a step says to set them, and psql on PATH."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import MakeLab, install_or_skip
from fix_shop import shop
from pgsurgeon.cli import main

# statements that change the database: run after every step that only reads
_WRITES = ("REINDEX", "heap_force_", "UPDATE ", "DELETE ", "VACUUM", "--execute", "pg_truncate_visibility_map")


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def printed_steps(text: str) -> list[str]:
    """The command lines under each ``next:`` heading of scan's or diagnose's text output."""
    steps: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.strip() == "next:":
            inside = True
            continue
        if inside and line.startswith("    ") and line.strip():
            if not line.strip().startswith("#"):
                steps.append(line.strip())
            continue
        inside = False
    return steps


def explained_steps(doc: dict[str, object], conn: str) -> list[str]:
    out: list[str] = []
    for exp in doc["explained"]:  # type: ignore[attr-defined]
        for step in exp.get("steps", []):
            if step["kind"] == "shell":
                out.append(step["command"])
            elif step["kind"] == "sql":
                quoted = step["command"].replace("'", "'\\''")
                out.append(f"psql -X -v ON_ERROR_STOP=1 '{conn}' -c '{quoted}'")
    return out


def server_errors(dsn: str) -> list[str]:
    """What the server says when the damaged tables are read, as psql shows it."""
    import psycopg

    queries = [
        "SELECT count(*) FROM orders",
        "SELECT sum(length(body)) FROM documents",
        "SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM orders WHERE customer_id > 0",
    ]
    out = []
    for q in queries:
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                for part in q.split("; "):
                    conn.execute(part)
            except psycopg.Error as exc:
                out.append(f"ERROR:  {exc.diag.message_primary}")
    return out


def run(step: str, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    done = subprocess.run(["bash", "-c", step], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return done.returncode, (done.stdout + done.stderr)[-3000:]


@pytest.mark.parametrize("version", ["15", "18"])
def test_every_printed_next_step_runs(make_lab: MakeLab, version: str, tmp_path: Path) -> None:
    case = shop(make_lab, version, toast=True, index=True)
    lab = case.cluster
    steps: list[tuple[str, str]] = []
    code, out = cli("scan", str(lab.pgdata))
    assert code == 2, out
    steps += [("scan", s) for s in printed_steps(out)]
    lab.start()
    conn = ("-h", "127.0.0.1", "-p", str(lab.port), "-U", "postgres", "-d", "postgres")
    code, out = cli("diagnose", *conn)
    assert code == 2, out
    steps += [("diagnose", s) for s in printed_steps(out)]
    errors = server_errors(lab.dsn())
    assert len(errors) == 3, errors
    for text in [*errors, lab.log_text()]:
        code, out = cli("explain", *conn, "-D", str(lab.pgdata), "--format", "json", text)
        assert code == 0, (text, out)
        steps += [("explain", s) for s in explained_steps(json.loads(out), lab.dsn())]
    unique = list(dict.fromkeys(steps))
    ordered = [s for s in unique if not any(w in s[1] for w in _WRITES)]
    ordered += [s for s in unique if s not in ordered]
    assert len(ordered) >= 10, ordered
    bindir = install_or_skip(version).bin_dir
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(bindir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PGDATA": str(lab.pgdata),
        "PGHOST": "127.0.0.1",
        "PGPORT": str(lab.port),
        "PGUSER": "postgres",
    }
    failed = []
    for source, step in ordered:
        code, output = run(step, env, tmp_path)
        ok = code == 0 or (code == 2 and step.startswith("pgsurgeon "))
        if not ok:
            failed.append(f"[{source}] exit {code}: {step}\n{output}")
    assert not failed, "\n\n".join(failed)
