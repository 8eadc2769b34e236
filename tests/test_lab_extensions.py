"""Lab clusters come with the extensions a rescue uses (amcheck, pageinspect, pg_surgery, pg_visibility,
pgstattuple), in postgres and in template1 so that later databases have them too; `lab up` says so."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from fix_pg import install_or_skip
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster
from pgsurgeon.lab.cluster import LAB_EXTENSIONS


def test_lab_up_installs_the_rescue_extensions(lab_base_dir: Path) -> None:
    base = lab_base_dir / "ext"
    install = install_or_skip("18")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["lab", "up", "extlab", "--lab-dir", str(base), "--pg-bin", str(install.bin_dir)])
    assert code == 0
    assert "extensions: " + ", ".join(LAB_EXTENSIONS) in out.getvalue()
    lab = LabCluster.load("extlab", base)
    try:
        with lab.connect() as conn:
            have = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
            conn.execute("CREATE DATABASE later")
        assert set(LAB_EXTENSIONS) <= have
        with lab.connect("later") as conn:
            assert set(LAB_EXTENSIONS) <= {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
            # usable, not only listed
            assert conn.execute("SELECT count(*) FROM pgstattuple('pg_class')").fetchone() is not None
    finally:
        lab.destroy()
