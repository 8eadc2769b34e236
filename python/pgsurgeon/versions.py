"""The one table of per-PostgreSQL-version facts the Python code relies on.

A fact that changes between major versions is written here once and looked up with :func:`facts`; code elsewhere
asks ``facts(major).something`` instead of comparing version numbers itself. The Rust core keeps what it needs
for reading files (pg_control layouts per version in ``control.rs``, pg_lsn's output format in ``datum.rs``).
"""

from __future__ import annotations

from dataclasses import dataclass

OLDEST_SUPPORTED = 14
"""repair needs amcheck's verify_heapam and pg_surgery (14), and the core reads pg_control of 14 and later."""


@dataclass(frozen=True)
class VersionFacts:
    major: int
    initdb_no_data_checksums: bool
    """initdb turns data checksums on by default and takes --no-data-checksums for a cluster without them (18)."""


TABLE: tuple[VersionFacts, ...] = (
    VersionFacts(14, initdb_no_data_checksums=False),
    VersionFacts(15, initdb_no_data_checksums=False),
    VersionFacts(16, initdb_no_data_checksums=False),
    VersionFacts(17, initdb_no_data_checksums=False),
    VersionFacts(18, initdb_no_data_checksums=True),
)
_BY_MAJOR = {f.major: f for f in TABLE}


def facts(major: int) -> VersionFacts:
    """The facts of ``major``. Outside the table the nearest row holds (a lab may run an older or a newer
    server than pgsurgeon knows): older majors are like the oldest, newer ones like the newest."""
    known = _BY_MAJOR.get(major)
    if known is not None:
        return known
    return TABLE[0] if major < TABLE[0].major else TABLE[-1]


def is_supported(version_num: int) -> bool:
    """Whether a server's ``server_version_num`` (150018 …) is one pgsurgeon's server-side tools work with."""
    return version_num // 10000 >= OLDEST_SUPPORTED
