"""The lab cluster the benchmarks build once and reuse: PostgreSQL 18 from the embedded wheel, data checksums on,
settings for bulk loading (minimal WAL, no autovacuum)."""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from pgsurgeon.lab import LabCluster
from pgsurgeon.pgbin import server_user


def run_measured(
    cmd: list[str],
    *,
    as_server: LabCluster | None = None,
    ok: tuple[int, ...] = (0, 2),
    env: dict[str, str] | None = None,
) -> tuple[float, float, int, str]:
    """Run ``cmd`` (as the server's OS user with ``as_server``; else in ``env``, by default this process's):
    seconds, its peak RSS in MB (wait4), exit code and stdout; an exit code not in ``ok`` ends the benchmark with the
    command's stderr."""
    elapsed, usage, code, text = run_usage(cmd, as_server=as_server, ok=ok, env=env)
    return elapsed, usage.ru_maxrss / 1024, code, text


def run_usage(
    cmd: list[str],
    *,
    as_server: LabCluster | None = None,
    ok: tuple[int, ...] = (0, 2),
    env: dict[str, str] | None = None,
) -> tuple[float, resource.struct_rusage, int, str]:
    """:func:`run_measured` with the child's whole resource usage (CPU time too) from wait4."""
    kwargs: dict[str, object] = {}
    # pip install compiles the package's bytecode; a development install (maturin develop) under
    # PYTHONDONTWRITEBYTECODE compiles every module again on each run (~0.06 s): let the warm-up run leave the
    # bytecode an installed pgsurgeon has.
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONDONTWRITEBYTECODE"}
    if as_server is not None:
        env = as_server.tool_env()
        user = server_user()
        if user.switch:
            kwargs = {"user": user.uid, "group": user.gid, "cwd": "/"}
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, **kwargs)  # type: ignore[call-overload]
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        out.seek(0)
        text = out.read().decode()
    if code not in ok:
        raise SystemExit(f"{Path(cmd[0]).name} failed ({code}): {err[-2000:]}{text[-2000:]}")
    return elapsed, usage, code, text


def server_cpu(cluster: LabCluster) -> float:
    """CPU seconds the running server has used so far: its postmaster, its live processes, and the processes it has
    reaped (backends of finished connections). 0 when it is stopped. Read from /proc: the server runs on this host."""
    pid_file = cluster.pgdata / "postmaster.pid"
    if not pid_file.exists():
        return 0.0
    postmaster = int(pid_file.read_text().split()[0])
    ticks = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, …
        except OSError:
            continue
        if proc.name == str(postmaster):
            ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime (proc(5))
        elif int(fields[1]) == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def bench_cluster(name: str, lab_dir: Path) -> LabCluster:
    """The started cluster ``name`` under ``lab_dir``, created the first time."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    lab_dir.chmod(0o755)
    try:
        cluster = LabCluster.load(name, base_dir=lab_dir)
    except Exception:
        cluster = LabCluster.create(
            name,
            base_dir=lab_dir,
            checksums=True,
            extra_conf={
                "max_wal_size": "16GB",
                "checkpoint_timeout": "30min",
                "wal_level": "minimal",
                "max_wal_senders": 0,
                "autovacuum": False,
                "shared_buffers": "256MB",
            },
        )
    if not cluster.is_running():
        cluster.start()
    return cluster


def empty_cluster(lab_dir: Path) -> LabCluster:
    """The started empty cluster the fixed start-up is measured on (bench/startup.py, bench/many_cores.py): one
    empty table to name, amcheck and pageinspect for diagnose."""
    empty = bench_cluster("empty18", lab_dir)
    with empty.connect() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (a int)")
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute("CHECKPOINT")
    return empty


def pgbench_cluster(lab_dir: Path, scale: int) -> LabCluster:
    """The started cluster holding pgbench tables at ``scale`` (100: 1.3 GB, 800: >= 10 GB), built once and shared
    by every benchmark, with amcheck and pageinspect for diagnose."""
    import sys
    import time

    cluster = bench_cluster(f"carve18s{scale}", lab_dir)
    with cluster.connect() as conn:
        have = conn.execute("SELECT to_regclass('pgbench_accounts') IS NOT NULL").fetchone()
    if not (have and have[0]):
        print(f"building pgbench scale {scale} (once) ...", file=sys.stderr)
        started = time.monotonic()
        cluster.run_tool("pgbench", "-i", "-q", "-s", str(scale), "-d", "postgres", timeout=7200)
        print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    with cluster.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute("CHECKPOINT")
    return cluster
