"""Commit and abort records that survive in pg_wal, read with the cluster's own ``pg_waldump``: the third source of
a lost transaction status, after the hint bits on heap pages.

pg_waldump prints a Transaction record as ``rmgr: Transaction … tx: 745, lsn: …, desc: COMMIT <time>; subxacts: 746
747`` (``xact_desc_commit`` in ``src/backend/access/rmgrdesc/xactdesc.c``); a prepared transaction's end names its XID
in the description (``COMMIT_PREPARED 750: …``). A subtransaction commits or aborts with its top-level transaction.

The same records tie subtransactions to their top-level transaction for undelete's ``--deleted-by`` where pg_subtrans
does not (:class:`CommitRecords`): WAL is flushed at commit, so a running server's pg_wal holds them already.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgsurgeon import core
from pgsurgeon.pgbin import install_of_major
from pgsurgeon.rescue.files import wal_file_name

_RECORD = re.compile(r"rmgr: Transaction .*?tx:\s*(?P<tx>\d+), .*?desc: (?P<what>[A-Z_]+)(?P<rest>.*)$")
_PREPARED = re.compile(r"^\s*(?P<xid>\d+):")
_SUBXACTS = re.compile(r"subxacts:(?P<list>(?: \d+)+)")
_SEGMENT = re.compile(r"^[0-9A-F]{24}$")
_AT_LSN = re.compile(r"at ([0-9A-F]+/[0-9A-F]+)")
_ENDS = {"COMMIT": "committed", "COMMIT_PREPARED": "committed", "ABORT": "aborted", "ABORT_PREPARED": "aborted"}


@dataclass
class WalStatus:
    """What the surviving WAL says: XID -> ``committed`` or ``aborted``, a committed top-level XID -> the
    subtransactions its commit record lists (``xl_xact_subxacts``, every committed descendant), and how it was
    read."""

    status: dict[int, str] = field(default_factory=dict)
    subxacts: dict[int, list[int]] = field(default_factory=dict)
    records: int = 0
    tool: str | None = None
    first_segment: str | None = None
    note: str = ""


def waldump_for(major: int) -> Path | None:
    """The ``pg_waldump`` of PostgreSQL ``major``: it reads only its own release's WAL."""
    install = install_of_major(major, program="pg_waldump")
    return install.bin_dir / "pg_waldump" if install is not None else None


@dataclass(frozen=True)
class WalBreak:
    """Where pg_waldump stopped before the checkpoint: the segment, the LSN and its words."""

    segment: str
    lsn: str
    message: str


def first_break(pgdata: Path, major: int, timeline: int, seg_size: int, checkpoint: str) -> WalBreak | str | None:
    """Read every WAL record from the oldest segment of ``timeline`` in pg_wal up to the checkpoint record with the
    cluster's pg_waldump: the first record that does not read (a restore or a standby replaying these segments
    stops there), None when all read, or a sentence when they could not be read at all."""
    tool = waldump_for(major)
    if tool is None:
        return f"WAL records before the checkpoint were not read: no pg_waldump of PostgreSQL {major} found"
    segments = _segments(pgdata, timeline)
    if not segments:
        return None
    done = subprocess.run(
        [
            str(tool),
            "--path",
            str(pgdata / "pg_wal"),
            "--quiet",
            "--timeline",
            str(timeline),
            "--end",
            checkpoint,
            segments[0],
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["pg_waldump failed"])[-1]
    at = _AT_LSN.findall(said)  # "error in WAL record at <previous>: … in record at <damaged>"
    if not at:
        return None if "could not find a valid record" in said else f"pg_waldump could not read pg_wal: {said}"
    hi, lo = (int(x, 16) for x in at[-1].split("/"))
    lsn = (hi << 32) | lo
    return WalBreak(wal_file_name(timeline, lsn // seg_size, seg_size), at[-1], said)


def _segments(pgdata: Path, timeline: int) -> list[str]:
    return sorted(
        p.name for p in (pgdata / "pg_wal").iterdir() if _SEGMENT.match(p.name) and int(p.name[:8], 16) == timeline
    )


def read_wal_status(pgdata: Path, major: int, timeline: int) -> WalStatus:
    """Every commit and abort record pg_waldump reads from the oldest segment of ``timeline`` left in pg_wal on,
    until the WAL ends or breaks (what it printed before stopping counts)."""
    out = WalStatus()
    tool = waldump_for(major)
    if tool is None:
        out.note = f"no pg_waldump of PostgreSQL {major} found: WAL records were not read"
        return out
    out.tool = str(tool)
    segments = _segments(pgdata, timeline)
    if not segments:
        out.note = "pg_wal holds no segment of the current timeline"
        return out
    out.first_segment = segments[0]
    done = subprocess.run(
        [
            str(tool),
            "--path",
            str(pgdata / "pg_wal"),
            "--rmgr",
            "Transaction",
            "--timeline",
            str(timeline),
            segments[0],
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        m = _RECORD.search(line)
        if m is None or m.group("what") not in _ENDS:
            continue
        out.records += 1
        fate = _ENDS[m.group("what")]
        xid = int(m.group("tx"))
        if m.group("what").endswith("_PREPARED") and (p := _PREPARED.match(m.group("rest"))):
            xid = int(p.group("xid"))
        out.status[xid] = fate
        subs = [int(x) for x in s.group("list").split()] if (s := _SUBXACTS.search(m.group("rest"))) else []
        out.status.update((x, fate) for x in subs)
        if fate == "committed":
            out.subxacts[xid] = subs
    if done.returncode != 0 and not out.records:
        out.note = (done.stderr.strip().splitlines() or ["pg_waldump failed"])[-1]
    return out


@dataclass
class CommitRecords:
    """Undelete's ``--deleted-by``: the subtransactions of a top-level transaction, from its commit record in the
    cluster's pg_wal, read once per XID when pg_subtrans does not name the parent of a transaction that removed
    rows (the row engine's oracle asks, crates/core/src/rows/undelete.rs). ``notes``: what could not be had, and
    what to do instead; ``seconds``: the time pg_waldump took."""

    pgdata: Path
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    read: dict[int, list[int] | None] = field(default_factory=dict)

    def subxacts(self, xid: int) -> list[int] | None:
        """The subtransactions the commit record of ``xid`` lists; None when pg_wal does not hold it."""
        if xid not in self.read:
            self.read[xid] = self._read(xid)
        return self.read[xid]

    def _read(self, xid: int) -> list[int] | None:
        why = ""
        if not (self.pgdata / "pg_wal").is_dir():
            why = f"{self.pgdata} has no pg_wal directory to read the commit record of XID {xid} from"
        else:
            try:
                control = core.read_control(self.pgdata)
            except (ValueError, OSError) as exc:
                why = f"the commit record of XID {xid} was not read (pg_control: {exc})"
            else:
                major = int(control["major_version"])
                start = time.monotonic()
                wal = read_wal_status(self.pgdata, major, int(control["this_timeline_id"]))
                self.seconds += time.monotonic() - start
                if xid in wal.subxacts:
                    return wal.subxacts[xid]
                if wal.status.get(xid) == "aborted":
                    return []  # its subtransactions aborted with it: none removed a row
                why = (
                    f"no pg_waldump of PostgreSQL {major} found to read the commit record of XID {xid}"
                    if wal.tool is None
                    else f"the commit record of XID {xid} is no longer in pg_wal"
                )
        self.notes.append(
            f"{why}: rows removed in its subtransactions that pg_subtrans does not name cannot be tied to it and are"
            " not listed; run without --deleted-by to see every removed row with its own deleter XID"
        )
        return None
