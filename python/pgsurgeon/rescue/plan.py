"""The pg_resetwal plan: every value pg_resetwal takes, derived from the files by the rules of its documentation
(doc/src/sgml/ref/pg_resetwal.sgml), checked against pg_control when its CRC is good, and the safe one chosen.
Nothing is written and nothing is run: the plan only reads the data directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.rescue import files as F

if TYPE_CHECKING:
    from pgsurgeon.boundary import ControlFile

SUPPORTED = range(14, 19)
"""The majors whose pg_control the core reads (crates/core/src/format/control/)."""
DB_SHUTDOWNED = 1
"""DBState in src/include/catalog/pg_control.h: pg_resetwal wants -f for any other state (pg_resetwal.c)."""
_SPACE = 1 << 32


@dataclass(frozen=True)
class PlanRequest:
    pgdata: Path
    copy: Path | None = None
    """Where alternative (b) copies the data directory (default: next to it, ``<name>.rescue``)."""
    pg_bin: Path | None = None
    """The bin directory of the cluster's PostgreSQL, when it is not in a usual place."""


@dataclass
class Setting:
    """One value pg_resetwal takes."""

    key: str
    option: str
    what: str
    value: int | str | None
    """What the plan passes; None: not passed (not derivable, or not needed)."""
    files: int | str | None
    """Derived from the files by the documentation's rule (None: the files cannot say)."""
    control: int | str | None
    """pg_control's value (None: pg_control unreadable or its CRC bad)."""
    chosen: str
    """``files``, ``pg_control``, ``pg_control, rounded up`` or ``none``."""
    source: str
    risk: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "option": self.option,
            "what": self.what,
            "value": self.value,
            "from_files": self.files,
            "from_control": self.control,
            "chosen": self.chosen,
            "source": self.source,
            "risk": self.risk,
        }


@dataclass
class ResetPlan:
    pgdata: Path
    major: int
    control_ok: bool
    control_problem: str | None
    """Why pg_control's values are not used (missing, truncated, CRC), None when they are."""
    state: str | None
    blcksz: int
    blcksz_source: str
    wal_seg_size: int
    wal_seg_source: str
    force: bool
    force_why: str
    settings: list[Setting]
    not_derived: list[str]
    warnings: list[str]
    owner: str
    superuser: str
    data_bytes: int
    alternatives: list[Any] = field(default_factory=list)
    """:class:`pgsurgeon.rescue.alternatives.Alternative`, filled by :func:`plan_resetwal`."""
    resetwal: str = "pg_resetwal"
    """The program, with its full path when the cluster's version is installed."""
    bin_dir: Path | None = None

    def setting(self, key: str) -> Setting:
        return next(s for s in self.settings if s.key == key)

    def arguments(self) -> list[str]:
        """pg_resetwal's options (without the data directory), in the order its --help lists them."""
        args: list[str] = ["-f"] if self.force else []
        by_key = {s.key: s for s in self.settings if s.value is not None}
        if "epoch" in by_key:
            args += ["-e", str(by_key["epoch"].value)]
        if "next_wal_file" in by_key:
            args += ["-l", str(by_key["next_wal_file"].value)]
        if "next_multi" in by_key and "oldest_multi" in by_key:
            args += ["-m", f"{by_key['next_multi'].value},{by_key['oldest_multi'].value}"]
        if "next_oid" in by_key:
            args += ["-o", str(by_key["next_oid"].value)]
        if "next_multi_offset" in by_key:
            args += ["-O", str(by_key["next_multi_offset"].value)]
        if "oldest_xid" in by_key:
            args += ["-u", str(by_key["oldest_xid"].value)]
        if "next_xid" in by_key:
            args += ["-x", str(by_key["next_xid"].value)]
        if "commit_ts_oldest" in by_key and "commit_ts_newest" in by_key:
            args += ["-c", f"{by_key['commit_ts_oldest'].value},{by_key['commit_ts_newest'].value}"]
        return args

    def as_dict(self) -> dict[str, Any]:
        return {
            "pgdata": str(self.pgdata),
            "major": self.major,
            "control_ok": self.control_ok,
            "control_problem": self.control_problem,
            "state": self.state,
            "blcksz": self.blcksz,
            "blcksz_source": self.blcksz_source,
            "wal_seg_size": self.wal_seg_size,
            "wal_seg_source": self.wal_seg_source,
            "force": self.force,
            "force_why": self.force_why,
            "pg_resetwal": self.resetwal,
            "arguments": self.arguments(),
            "settings": [s.as_dict() for s in self.settings],
            "not_derived": self.not_derived,
            "warnings": self.warnings,
            "owner": self.owner,
            "superuser": self.superuser,
            "data_bytes": self.data_bytes,
            "alternatives": [a.as_dict() for a in self.alternatives],
        }


# ------------------------------------------------------------------------------------------ reading


def _major(pgdata: Path) -> int:
    if not pgdata.is_dir():
        raise PgSurgeonError(
            f"{pgdata} is not a directory", hint="pass the data directory (the one holding PG_VERSION)"
        )
    try:
        text = (pgdata / "PG_VERSION").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise PgSurgeonError(
            f"{pgdata} is not a data directory: it has no PG_VERSION",
            hint="pass the data directory (the one holding PG_VERSION, global/ and pg_wal/)",
        ) from None
    except OSError as exc:
        raise PgSurgeonError(f"cannot read {pgdata / 'PG_VERSION'}: {exc.strerror or exc}") from None
    if not text.isdigit():
        raise PgSurgeonError(
            f"{pgdata / 'PG_VERSION'} does not hold a major version ({text[:20]!r})",
            hint="it holds one line, the major version (e.g. 15): restore it, pg_resetwal checks it too",
        )
    major = int(text)
    if major not in SUPPORTED:
        raise PgSurgeonError(
            f"the data directory is postgresql {major}: pgsurgeon plans for 14 to 18",
            hint=f"use pg_resetwal's documentation of version {major} by hand",
        )
    if not (pgdata / "global").is_dir():
        raise PgSurgeonError(f"{pgdata} is not a data directory: it has no global/", hint="pass the data directory")
    return major


def _control(pgdata: Path, major: int) -> tuple[ControlFile | None, ControlFile | None, str | None]:
    """(pg_control when sound, pg_control as read when its CRC is bad, why it is not used)."""
    try:
        control = core.read_control(pgdata)
    except FileNotFoundError:
        return None, None, "global/pg_control is missing"
    except core.FormatError as exc:
        return None, None, f"pg_control is not readable ({exc})"
    except OSError as exc:
        return None, None, f"pg_control is not readable ({exc.strerror or exc})"
    theirs = int(control["major_version"])
    if theirs != major:
        # pg_resetwal would ignore it and guess every value (read_controlfile, "broken or wrong version"): which of
        # the two files lies is for the DBA to find out, not for a plan to guess
        raise PgSurgeonError(
            f"pg_control is of postgresql {theirs} but the data directory is postgresql {major} (PG_VERSION)",
            hint="find out which is right: a pg_control copied from another cluster is unusable (move it away and "
            "plan again), a wrong PG_VERSION is fixed by writing the right major into it",
        )
    if not control["crc_ok"]:
        return None, control, "pg_control's CRC does not match its contents"
    return control, None, None


def _later(a: int, b: int) -> int:
    """The later of two ids of a 32-bit counter that wraps (TransactionIdPrecedes, transam.c)."""
    return b if ((a - b) & 0xFFFFFFFF) >= 0x80000000 else a


def _round_up(n: int, unit: int) -> int:
    return ((n // unit) + 1) * unit % _SPACE


def _hexseg(n: int | None) -> str:
    return "none" if n is None else f"{n:04X}"


# ------------------------------------------------------------------------------------------ the values


def _next_counter(
    key: str,
    option: str,
    what: str,
    seg: F.Segments,
    per_segment: int,
    control_value: int | None,
    first: int,
    rule: str,
    risk: str,
) -> Setting:
    """A "next" counter (-x, the first part of -m, -O): the later of the files' value and pg_control's. The files'
    value is the first id of the segment after the newest file, where no page exists yet, so the server does not
    read one at startup; pg_control's is rounded up the same way when its segment file is missing."""
    from_files = None
    if seg.newest is not None:
        from_files = (seg.newest + 1) * per_segment % _SPACE
        from_files = max(from_files, first)
    source = f"{rule}: newest file {seg.directory}/{_hexseg(seg.newest)}"
    if from_files is not None:
        source += f" -> {from_files} (0x{from_files:X})"
    if control_value is None and from_files is None:
        return Setting(key, option, what, None, None, None, "none", source + "; pg_control unreadable", risk)
    if control_value is None:
        assert from_files is not None
        return Setting(key, option, what, from_files, from_files, None, "files", source, risk)
    source += f"; pg_control says {control_value}"
    chosen = control_value if from_files is None else _later(control_value, from_files)
    how = "pg_control" if chosen == control_value and chosen != from_files else "files"
    if how == "pg_control" and (control_value // per_segment) not in seg.numbers:
        # the page of pg_control's value is gone: start at the next segment, which the server creates itself
        chosen = max(_round_up(control_value, per_segment), first)
        how = "pg_control, rounded up"
        source += f" (its segment file {control_value // per_segment:04X} is missing: rounded up to {chosen})"
    return Setting(key, option, what, chosen, from_files, control_value, how, source, risk)


def _oldest_counter(
    key: str,
    option: str,
    what: str,
    seg: F.Segments,
    per_segment: int,
    control_value: int | None,
    first: int,
    rule: str,
    risk: str,
) -> Setting:
    """An "oldest" counter (-u, the second part of -m): pg_control's value when it is sound and its segment file is
    there; else the first id of the oldest file (the documentation's rule), whose status is on disk."""
    from_files = None if seg.oldest is None else max(seg.oldest * per_segment % _SPACE, first)
    source = f"{rule}: oldest file {seg.directory}/{_hexseg(seg.oldest)}"
    if from_files is not None:
        source += f" -> {from_files} (0x{from_files:X})"
    if control_value is not None:
        source += f"; pg_control says {control_value}"
        if (control_value // per_segment) in seg.numbers or from_files is None:
            return Setting(key, option, what, control_value, from_files, control_value, "pg_control", source, risk)
        source += f" (its segment file {control_value // per_segment:04X} is missing)"
    if from_files is None:
        return Setting(key, option, what, None, None, control_value, "none", source, risk)
    return Setting(key, option, what, from_files, from_files, control_value, "files", source, risk)


RISKS = {
    "next_xid": "too low: transaction ids already used are handed out again, and rows those old transactions wrote "
    "or deleted take the new transactions' commit status: committed rows vanish, aborted or deleted ones come back. "
    "Too high only uses up ids (about 2 billion before wraparound)",
    "oldest_xid": "too high: the wraparound limits move forward, and the server may hand out ids that wrap onto rows "
    "not frozen yet (they turn invisible); too low only brings anti-wraparound VACUUM earlier. It must be an id "
    "whose commit status is on disk",
    "next_multi": "too low: MultiXactIds already used are handed out again, and a row locked or updated by an old "
    "one names the new one's members: row locks and updates are misread",
    "oldest_multi": "too high: older MultiXactIds still named by rows lose their members (errors reading those rows) "
    "and the wraparound limits move forward; too low only brings VACUUM earlier",
    "next_multi_offset": "too low: member slots in use are written over, so existing MultiXactIds name the wrong "
    "transactions (locks and updates misread)",
    "next_wal_file": "too low: the new WAL reuses the names and positions of segments that existed (in pg_wal or the "
    "archive): pages stamped with later LSNs fail with 'xlog flush request … is not satisfied', and an archive gets "
    "two different files of one name",
    "epoch": "only txid_current(), xid8 values and replication tools see it; the database itself works with any "
    "value (pg_resetwal's documentation). Too low makes 64-bit transaction ids go backwards",
    "next_oid": "not critical (pg_resetwal's documentation): a new object skips OIDs the catalogs already use",
    "commit_ts": "a range wider than the files hold makes pg_xact_commit_timestamp() fail on missing pages; a "
    "narrower one only returns NULL for the ids left out",
}


def _settings(
    pgdata: Path, control: ControlFile | None, geo: F.Geometry, seg_size: int, wal: F.WalFiles
) -> tuple[list[Setting], list[str]]:
    xact = F.slru_segments(pgdata, "pg_xact", geo.xacts_per_segment)
    offsets = F.slru_segments(pgdata, "pg_multixact/offsets", geo.multis_per_segment)
    members = F.slru_segments(pgdata, "pg_multixact/members", geo.members_per_segment)
    not_derived: list[str] = []
    c_next_xid = c_epoch = None
    if control is not None:
        epoch, _, xid = str(control["next_xid"]).partition(":")
        c_next_xid, c_epoch = int(xid), int(epoch)
    per_x, per_m, per_o = geo.xacts_per_segment, geo.multis_per_segment, geo.members_per_segment
    x_rule = f"(newest pg_xact file + 1) x 0x{per_x:X} ({F.SLRU_PAGES_PER_SEGMENT} pages x {geo.blcksz} bytes x 4)"
    settings = [
        _next_counter(
            "next_xid", "-x", "next transaction id", xact, per_x, c_next_xid, F.FIRST_NORMAL_XID, x_rule,
            RISKS["next_xid"],
        ),
        _oldest_counter(
            "oldest_xid", "-u", "oldest unfrozen transaction id", xact, per_x,
            None if control is None else int(control["oldest_xid"]), F.FIRST_NORMAL_XID,
            f"oldest pg_xact file x 0x{per_x:X}", RISKS["oldest_xid"],
        ),
        _next_counter(
            "next_multi", "-m", "next MultiXactId (first part of -m)", offsets, per_m,
            None if control is None else int(control["next_multi"]), F.FIRST_MULTI,
            f"(newest offsets file + 1) x 0x{per_m:X} ({F.SLRU_PAGES_PER_SEGMENT} pages x {geo.blcksz} / 4)",
            RISKS["next_multi"],
        ),
        _oldest_counter(
            "oldest_multi", "-m", "oldest MultiXactId (second part of -m)", offsets, per_m,
            None if control is None else int(control["oldest_multi"]), F.FIRST_MULTI,
            f"oldest offsets file x 0x{per_m:X}", RISKS["oldest_multi"],
        ),
        _next_counter(
            "next_multi_offset", "-O", "next MultiXact member offset", members, per_o,
            None if control is None else int(control["next_multi_offset"]), 0,
            f"(newest members file + 1) x {per_o} ({F.SLRU_PAGES_PER_SEGMENT} pages x floor({geo.blcksz}/20) x 4)",
            RISKS["next_multi_offset"],
        ),
    ]  # fmt: skip
    for s in settings:
        if s.value is None:
            not_derived.append(f"{s.option} ({s.what}): {s.source}; no file to derive it from")
    # -l: past every segment in pg_wal and past the checkpoint pg_control names (FindEndOfXLOG, pg_resetwal.c)
    tli = max([t for t in (wal.max_tli, None if control is None else int(control["this_timeline_id"])) if t] or [1])
    candidates: list[tuple[int, str]] = []
    if wal.largest_segno is not None:
        candidates.append((wal.largest_segno + 1, f"largest segment in pg_wal {wal.largest}"))
    if control is not None:
        for name in ("checkpoint", "redo"):
            segno = F.lsn_segno(str(control[name]), seg_size)
            candidates.append((segno + 1, f"pg_control's {name} {control[name]} (segment {segno:X})"))
    wal_files_value = None if wal.largest_segno is None else F.wal_file_name(tli, wal.largest_segno + 1, seg_size)
    if candidates:
        segno, why = max(candidates)
        value: str | None = F.wal_file_name(tli, segno, seg_size)
        source = "the segment after " + ", ".join(w for _s, w in sorted(candidates, reverse=True))
        source += f"; the largest wins: {why}"
        chosen = "files" if wal.largest_segno is not None and segno == wal.largest_segno + 1 else "pg_control"
    else:
        value, chosen = None, "none"
        source = "pg_wal holds no segment and pg_control is unreadable"
        not_derived.append(
            "-l (next WAL file): pg_wal is empty and pg_control unreadable: take the segment after the largest name "
            "in the WAL archive, or a name well past any LSN the pages carry: without -l pg_resetwal starts past the "
            "damaged pg_control's checkpoint (CRC bad: unverified) or at the very beginning (unreadable), where pages "
            "look written in the future"
        )
    control_wal = None
    if control is not None:
        control_wal = F.wal_file_name(
            int(control["this_timeline_id"]), F.lsn_segno(control["checkpoint"], seg_size) + 1, seg_size
        )
    source += ". A WAL archive may hold later segments than pg_wal: then pass -l past the archive's largest"
    settings.append(
        Setting("next_wal_file", "-l", "next WAL segment file", value, wal_files_value, control_wal, chosen, source,
                RISKS["next_wal_file"])
    )  # fmt: skip
    # -e: the epoch is nowhere but in pg_control (pg_resetwal's documentation)
    if c_epoch is not None:
        settings.append(
            Setting("epoch", "-e", "transaction id epoch", c_epoch, None, c_epoch, "pg_control",
                    "pg_control's NextXID epoch (the files do not hold it)", RISKS["epoch"])
        )  # fmt: skip
    else:
        settings.append(
            Setting("epoch", "-e", "transaction id epoch", None, None, None, "none",
                    "stored only in pg_control, which is unreadable", RISKS["epoch"])
        )  # fmt: skip
        not_derived.append(
            "-e (epoch): kept only in pg_control: take it from a replica, a backup's pg_control "
            "(pgsurgeon control BACKUP) or the applications' stored txid_current() values, or ask the DBA; "
            "without -e pg_resetwal keeps the damaged file's epoch (CRC bad) or writes 0 (unreadable)"
        )
    relfile = F.largest_relfilenode(pgdata)
    files_oid = None if relfile is None else relfile + 1
    c_oid = None if control is None else int(control["next_oid"])
    oid_value = max([v for v in (files_oid, c_oid) if v is not None] or [0]) or None
    settings.append(
        Setting(
            "next_oid", "-o", "next OID", oid_value, files_oid, c_oid,
            "pg_control" if c_oid is not None and oid_value == c_oid else ("files" if oid_value else "none"),
            f"largest relation file number + 1 = {files_oid} (a lower bound: types and functions take OIDs "
            f"too, with no file)" + ("" if c_oid is None else f"; pg_control says {c_oid}"),
            RISKS["next_oid"],
        )
    )  # fmt: skip
    settings += _commit_ts(pgdata, control, geo, settings[0].value)
    return settings, not_derived


def _commit_ts(pgdata: Path, control: ControlFile | None, geo: F.Geometry, next_xid: int | str | None) -> list[Setting]:
    """-c: with a sound pg_control pg_resetwal keeps its range; without one, the narrowest range the files hold (the
    documentation's rule takes file names as ids, a multiplier its own source comments say is missing)."""
    seg = F.slru_segments(pgdata, "pg_commit_ts", geo.commit_ts_per_segment)
    if control is not None or seg.oldest is None or seg.newest is None:
        why = (
            "kept from pg_control (pg_resetwal leaves it as it is)"
            if control is not None
            else "pg_commit_ts is empty (track_commit_timestamp off): nothing to set"
        )
        return [
            Setting("commit_ts_oldest", "-c", "oldest commit-timestamp id", None, None,
                    None if control is None else int(control["oldest_commit_ts_xid"]), "none", why, RISKS["commit_ts"]),
            Setting("commit_ts_newest", "-c", "newest commit-timestamp id", None, None,
                    None if control is None else int(control["newest_commit_ts_xid"]), "none", why, RISKS["commit_ts"]),
        ]  # fmt: skip
    per_seg, per_page = geo.commit_ts_per_segment, geo.commit_ts_per_page
    oldest = max(seg.oldest * per_seg % _SPACE, F.FIRST_NORMAL_XID)
    pages = seg.sizes.get(seg.newest, 0) // geo.blcksz
    newest = (seg.newest * per_seg + max(pages, 1) * per_page - 1) % _SPACE
    if isinstance(next_xid, int) and _later(newest, next_xid - 1) == newest:
        newest = max(next_xid - 1, F.FIRST_NORMAL_XID)
    newest = max(newest, oldest)
    src = f"pg_commit_ts files {seg.oldest:04X}..{seg.newest:04X} x {per_seg} ids a file ({per_page} a page)"
    return [
        Setting("commit_ts_oldest", "-c", "oldest commit-timestamp id", oldest, oldest, None, "files",
                src + ": the first id of the oldest file", RISKS["commit_ts"]),
        Setting("commit_ts_newest", "-c", "newest commit-timestamp id", newest, newest, None, "files",
                src + ": the last id of the newest file's last page", RISKS["commit_ts"]),
    ]  # fmt: skip


def superuser_of(pgdata: Path) -> str:
    """The bootstrap superuser of a data directory whose pg_control reads (``postgres`` when it does not)."""
    try:
        control = core.read_control(pgdata)
    except (core.FormatError, OSError):
        return "postgres"
    return _superuser(pgdata, int(control["blcksz"]), int(control["major_version"]))


def _superuser(pgdata: Path, blcksz: int, major: int) -> str:
    """The bootstrap superuser's name (pg_authid's OID 10, BOOTSTRAP_SUPERUSERID in pg_authid.dat), read from the
    files: pg_dumpall connects as it. ``postgres`` when the catalog cannot be read."""
    try:
        rows, _cols, _warn = core.files_catalog(pgdata, {"block_size": blcksz, "pg_version": major}).read(
            0, 1260, ["oid", "rolname"]
        )
    except Exception:  # a damaged catalog only costs the guess
        return "postgres"
    for oid, name in rows:
        if oid == "10" and name:
            return name
    return "postgres"


def plan_resetwal(request: PlanRequest | Path) -> ResetPlan:
    """The plan for ``request.pgdata``: nothing is written, nothing is run."""
    from pgsurgeon.pgbin import user_owning
    from pgsurgeon.rescue.alternatives import alternatives, resetwal_install

    req = request if isinstance(request, PlanRequest) else PlanRequest(Path(request))
    pgdata = req.pgdata.absolute()
    major = _major(pgdata)
    control, unverified, problem = _control(pgdata, major)
    warnings: list[str] = []
    if control is not None:
        blcksz, blcksz_source = int(control["blcksz"]), "from pg_control"
    else:
        from_pages = F.block_size_from_pages(pgdata)
        if from_pages is not None:
            blcksz, blcksz_source = from_pages, "from the page headers in global/ (pd_pagesize_version)"
        else:
            blcksz, blcksz_source = 8192, "assumed (BLCKSZ's default): neither pg_control nor a page header says"
            warnings.append("the block size is assumed to be 8192: check it (pg_config --configure, or a page header)")
    wal_probe = F.wal_files(pgdata, None if control is None else int(control["xlog_seg_size"]))
    if control is not None:
        seg_size, seg_source = int(control["xlog_seg_size"]), "from pg_control"
    elif (
        wal_probe.file_size
        and wal_probe.file_size & (wal_probe.file_size - 1) == 0
        and (1 << 20 <= wal_probe.file_size <= 1 << 30)
    ):
        seg_size, seg_source = wal_probe.file_size, "from the size of the segment files in pg_wal"
    else:
        seg_size, seg_source = F.DEFAULT_WAL_SEG_SIZE, "assumed (16 MB, the default): pg_wal has no segment to measure"
    wal = F.wal_files(pgdata, seg_size)
    settings, not_derived = _settings(pgdata, control, F.Geometry(blcksz), seg_size, wal)
    state = None if control is None else str(control["state"])
    if control is None:
        force = True
        force_why = (
            f"{problem}: pg_resetwal then takes pg_control's values as guesses (CRC bad) or guesses them all, and "
            "refuses without -f. -f writes a new pg_control from the values given here and its own defaults"
        )
        if unverified is not None:
            warnings.append(
                "pg_resetwal reads the damaged pg_control anyway (CRC bad): every value not passed as an option is "
                "kept from it, unverified (settings, checksum version, system identifier)"
            )
        else:
            warnings.append(
                "pg_resetwal will guess the values not passed here: a new system identifier (replicas and backups "
                "of the old cluster no longer fit it), data checksums recorded as off (enable them again with "
                "pg_checksums --enable on the stopped copy), wal_level minimal"
            )
    elif int(control["state_code"]) != DB_SHUTDOWNED:
        force = True
        force_why = (
            f"the server did not shut down cleanly (state: {state}): the WAL after the last checkpoint "
            f"({control['checkpoint']}) is not replayed. Transactions committed after that checkpoint may be lost "
            "or half applied (some of their pages written, others not, indexes out of step with their tables)"
        )
    else:
        force = False
        force_why = (
            f"not needed: the server shut down cleanly (state: {state}), so the data files hold everything up to the "
            "shutdown checkpoint and the reset replays nothing that is lost"
        )
    warnings.append(
        "after the reset the WAL history starts over: a standby, a WAL archive or a base backup of this cluster no "
        "longer fits it; take a new base backup"
    )
    owner = user_owning(pgdata).name
    plan = ResetPlan(
        pgdata=pgdata,
        major=major,
        control_ok=control is not None,
        control_problem=problem,
        state=state,
        blcksz=blcksz,
        blcksz_source=blcksz_source,
        wal_seg_size=seg_size,
        wal_seg_source=seg_source,
        force=force,
        force_why=force_why,
        settings=settings,
        not_derived=not_derived,
        warnings=warnings,
        owner=owner,
        superuser=_superuser(pgdata, blcksz, major),
        data_bytes=F.size_of(pgdata),
    )
    install, note = resetwal_install(major, req.pg_bin)
    if install is not None:
        plan.bin_dir = install.bin_dir
        plan.resetwal = str(install.bin_dir / "pg_resetwal")
    if note:
        plan.warnings.append(note)
    plan.alternatives = alternatives(plan, req.copy)
    return plan
