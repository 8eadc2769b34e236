"""The ways out, in order of what they risk: unload the rows with no server (nothing written), pg_resetwal on a
copy, pg_resetwal on the original after a backup. Each is a list of shell commands with the real paths filled in,
printed for the DBA: nothing here runs them."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.pgbin import PgInstall, install_of_major, is_root

if TYPE_CHECKING:
    from pgsurgeon.rescue.plan import ResetPlan

_SUN_PATH_MAX = 107
"""sizeof(sockaddr_un.sun_path) - 1: the copy's socket goes in its own directory when the path fits."""
RESCUE_PORT = 5499
"""The copy listens on no TCP port (listen_addresses ''); the port only names its socket, in its own directory."""


@dataclass(frozen=True)
class Step:
    what: str
    command: str
    """A shell command line, or '' for a note."""

    def as_dict(self) -> dict[str, str]:
        return {"what": self.what, "command": self.command}


@dataclass(frozen=True)
class Alternative:
    key: str
    """``unload``, ``copy`` or ``original``."""
    title: str
    summary: str
    steps: tuple[Step, ...]
    last_resort: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "summary": self.summary,
            "last_resort": self.last_resort,
            "steps": [s.as_dict() for s in self.steps],
            "script": self.script(),
        }

    def script(self) -> str:
        """The commands alone, one a line, to run in order (set -e stops at the first that fails)."""
        return "\n".join(s.command for s in self.steps if s.command)


def resetwal_install(major: int, pg_bin: Path | None) -> tuple[PgInstall | None, str | None]:
    """The installation of the cluster's major version (pg_resetwal refuses a data directory of another one):
    ``pg_bin`` when given, else the usual places and the embedded wheel. (install, a warning when none is found)."""
    install = install_of_major(major, pg_bin, program="pg_resetwal")
    if install is not None:
        return install, None
    return None, (
        f"no postgresql {major} installation found (pg_resetwal must be of the cluster's version): the commands "
        "name pg_resetwal, pg_ctl and pg_dumpall without a path; pass --pg-bin DIR for full paths"
    )


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def alternatives(plan: ResetPlan, copy: Path | None) -> list[Alternative]:
    pgdata = plan.pgdata
    copy = (copy or pgdata.with_name(pgdata.name + ".rescue")).absolute()
    unload_dir = pgdata.with_name(pgdata.name + ".unloaded")
    dump = copy.with_name(copy.name + ".sql")
    backup = pgdata.with_name(pgdata.name + ".before-resetwal")

    def prog(name: str) -> str:
        return _q(plan.bin_dir / name) if plan.bin_dir is not None else name

    # postgresql refuses to run as root: as root, the server's programs run as the data directory's owner
    as_owner = f"runuser -u {shlex.quote(plan.owner)} -- " if is_root() and plan.owner != "root" else ""
    args = " ".join(shlex.quote(a) for a in plan.arguments())
    resetwal = f"{as_owner}{_q(plan.resetwal) if plan.bin_dir is not None else 'pg_resetwal'} {args}".rstrip()
    gib = plan.data_bytes / (1 << 30)
    space = f"{gib:.1f} GB" if gib >= 0.1 else f"{plan.data_bytes / (1 << 20):.0f} MB"

    unload = Alternative(
        "unload",
        "(a) unload every row with no server",
        "reads the data files read-only (visibility from pg_xact) and writes each table to a file, with schema.sql "
        "and restore.sql; nothing is written to the data directory and nothing is reset",
        (
            Step("every table to files (read-only)", f"pgsurgeon unload {_q(pgdata)} --out {_q(unload_dir)}"),
            Step(
                "then load them into a new cluster (initdb of the same major): "
                f"psql -X -v ON_ERROR_STOP=1 -d postgres -f {unload_dir}/restore.sql",
                "",
            ),
        ),
    )

    sock = copy if len(str(copy)) + len(f"/.s.PGSQL.{RESCUE_PORT}") <= _SUN_PATH_MAX else Path("/tmp")
    # the copy must not archive into the original's WAL archive, nor let autovacuum write before the dump
    server_opts = (
        f"-c port={RESCUE_PORT} -c listen_addresses= -c unix_socket_directories={_q(sock)} "
        "-c archive_mode=off -c autovacuum=off"
    )
    log = copy / "pgsurgeon-rescue.log"
    steps = [
        Step(f"copy the data directory (needs {space} free)", f"cp -a {_q(pgdata)} {_q(copy)}"),
    ]
    if is_root() and plan.owner != "root":
        steps.append(Step("the server's user owns the copy", f"chown -R {shlex.quote(plan.owner)}: {_q(copy)}"))
    if (pgdata / "postmaster.pid").exists():
        steps.append(
            Step(
                "a crashed server's lock file: pg_resetwal refuses to run while it is there",
                f"rm -f {_q(copy)}/postmaster.pid",
            )
        )
    if not (pgdata / "postgresql.conf").exists():
        # a Debian/Ubuntu layout keeps the configuration in /etc: the copy gets a minimal one, local socket only
        steps += [
            Step(
                "the configuration lives outside the data directory: a minimal one", f": > {_q(copy)}/postgresql.conf"
            ),
            Step(
                "local connections only, through the copy's own socket",
                f"echo 'local all all trust' > {_q(copy)}/pg_hba.conf",
            ),
        ]
        if as_owner:
            steps.append(
                Step(
                    "owned by the server's user",
                    f"chown {shlex.quote(plan.owner)}: {_q(copy)}/postgresql.conf {_q(copy)}/pg_hba.conf",
                )
            )
    steps += [
        Step("what pg_resetwal would write (-n: a dry run, nothing changes)", f"{_insert_n(resetwal)} {_q(copy)}"),
        Step("reset the copy's WAL with the planned values", f"{resetwal} {_q(copy)}"),
        Step(
            "start the copy: no TCP, no archiving, no autovacuum (nothing writes before the dump)",
            f"{as_owner}{prog('pg_ctl')} -D {_q(copy)} -l {_q(log)} -w -t 120 -o {shlex.quote(server_opts)} start",
        ),
        Step(
            "dump everything at once, before any other use",
            f"{as_owner}{prog('pg_dumpall')} -h {_q(sock)} -p {RESCUE_PORT} -U {shlex.quote(plan.superuser)} "
            f"> {_q(dump)}",
        ),
        Step("stop the copy", f"{as_owner}{prog('pg_ctl')} -D {_q(copy)} -m fast -w stop"),
        Step("check every page of the copy", f"pgsurgeon scan {_q(copy)}"),
        Step(
            f"then restore {dump} into a new cluster (initdb of the same major: psql -X -f), compare with the "
            "unloaded rows, and look for half-applied transactions (pg_amcheck, unique keys, foreign keys)",
            "",
        ),
    ]
    on_copy = Alternative(
        "copy",
        "(b) pg_resetwal on a copy",
        "the original stays as it is: if the reset goes wrong, nothing is lost that alternative (a) could still save",
        tuple(steps),
    )

    original = Alternative(
        "original",
        "(c) LAST RESORT: pg_resetwal on the original, only after a backup",
        "writes the original's pg_control and removes its WAL: there is no way back without the backup taken first",
        (
            Step("back up the data directory first (cp -a, or tar)", f"cp -a {_q(pgdata)} {_q(backup)}"),
            *(
                [Step("a crashed server's lock file", f"rm -f {_q(pgdata)}/postmaster.pid")]
                if (pgdata / "postmaster.pid").exists()
                else []
            ),
            Step("reset the WAL with the planned values", f"{resetwal} {_q(pgdata)}"),
            Step(
                "start the server as usual, dump everything at once (pg_dumpall) before any other use, and restore "
                "into a new cluster",
                "",
            ),
        ),
        last_resort=True,
    )
    return [unload, on_copy, original]


def _insert_n(resetwal: str) -> str:
    """The pg_resetwal command with -n (dry run) instead of -f: -n prints and never writes."""
    words = shlex.split(resetwal)
    idx = next(i for i, w in enumerate(words) if w.endswith("pg_resetwal"))
    rest = [w for w in words[idx + 1 :] if w != "-f"]
    return shlex.join([*words[: idx + 1], "-n", *rest])
