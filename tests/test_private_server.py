"""``rescue.private.PrivateServer``: a cluster started as ``postgres`` itself (not pg_ctl) on a private socket, taken
as up once postmaster.pid says it is ready, and gone when left: stopped, its socket directory removed, also when it
refused to start (real PostgreSQL 15 and 18)."""

from __future__ import annotations

import psycopg
import pytest

from fix_pg import MakeLab, running
from pgsurgeon.pgbin import install_of_major
from pgsurgeon.rescue.private import PrivateServer
from test_interrupt import still_running


@pytest.mark.parametrize(("version", "mode"), [("15", "fast"), ("18", "immediate")])
def test_started_ready_and_gone_when_left(make_lab: MakeLab, version: str, mode: str) -> None:
    lab = make_lab(version)
    with lab.connect() as conn:
        conn.execute("CREATE TABLE t AS SELECT g FROM generate_series(1, 10) g")
    lab.stop()
    install = install_of_major(int(version))
    assert install is not None
    with PrivateServer(lab.pgdata, install, stop_mode=mode) as srv:
        assert srv.started, srv.start_error
        pid = srv.pid
        assert pid is not None and running(pid)
        assert int((lab.pgdata / "postmaster.pid").read_text().split()[0]) == pid
        with psycopg.connect(srv.dsn()) as conn:  # ready means it answers at once, on its socket only
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (10,)
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
    assert still_running([pid]) == []
    assert not (lab.pgdata / "postmaster.pid").exists()
    assert not srv.sock.exists()
    lab.start()  # stopped fast or immediate, the cluster starts again as it was
    with lab.connect() as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (10,)


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_server_that_refuses_to_start_says_why_and_leaves_nothing(make_lab: MakeLab, version: str) -> None:
    lab = make_lab(version)
    lab.stop()
    install = install_of_major(int(version))
    assert install is not None
    with PrivateServer(lab.pgdata, install, {"shared_buffers": "not-a-size"}) as srv:
        assert not srv.started
        assert srv.start_error.startswith("FATAL") and "shared_buffers" in srv.start_error, srv.start_error
        assert srv.pid is None  # exited, and reaped
    assert not (lab.pgdata / "postmaster.pid").exists()
    assert not srv.sock.exists()
