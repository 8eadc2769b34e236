"""The per-version facts table (pgsurgeon.versions) against the installed PostgreSQL 15 and 18."""

from __future__ import annotations

import subprocess

import pytest

from fix_pg import install_or_skip
from pgsurgeon import versions


def test_table_is_contiguous_and_nearest_row_holds_outside() -> None:
    majors = [f.major for f in versions.TABLE]
    assert majors == list(range(versions.OLDEST_SUPPORTED, versions.OLDEST_SUPPORTED + len(majors)))
    assert versions.facts(12) == versions.TABLE[0] and versions.facts(19) == versions.TABLE[-1]
    assert versions.is_supported(140000) and not versions.is_supported(130011)


@pytest.mark.parametrize("major", ["15", "18"])
def test_initdb_flag_matches_the_installation(major: str) -> None:
    install = install_or_skip(major)
    help_text = subprocess.run(
        [str(install.tool("initdb")), "--help"], capture_output=True, text=True, env=install.env(), check=True
    ).stdout
    assert ("--no-data-checksums" in help_text) == versions.facts(int(major)).initdb_no_data_checksums
