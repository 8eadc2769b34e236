"""Planning a corruption: which blocks and items, and the exact bytes, without writing anything.

Choices are seeded: ``random.Random(seed)`` picks blocks and items among those that exist, and the Rust
injectors get the same seed with one stream per damage, so a seed always gives the same bytes for the
same files.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.datadir import read_block, segment_path
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.journal.manifest import KIND_TRUNCATE, FileChange, PageRecord, sha256
from pgsurgeon.simulate.modes import (
    MODES,
    UNIT_FILE,
    UNIT_ITEM,
    UNIT_MAP,
    UNIT_PAGE,
    UNIT_RELATION,
    Mode,
)
from pgsurgeon.simulate.target import Resolved, nblocks, segments

if TYPE_CHECKING:
    from pgsurgeon.boundary import AttrLayout, BTPageOpaqueData, DamageSpec, PageReport

SECTOR = 512
LP_NORMAL = 1


@dataclass
class CorruptRequest:
    """What the user asked for (the CLI options, checked)."""

    mode: str
    field: str | None = None
    block: int | None = None
    item: int | None = None
    segment: int | None = None
    count: int = 1
    seed: int = 0
    value: int | None = None
    tid: tuple[int, int] | None = None
    attnum: int | None = None
    length: int | None = None
    flips: int | None = None
    tear_at: int | None = None
    source_block: int | None = None
    source_file: Path | None = None
    clear_hints: bool = False
    keep_checksum_valid: bool = False


@dataclass
class Plan:
    resolved: Resolved
    mode: Mode
    field: str | None
    unit: str
    nblocks: int
    changes: list[FileChange] = dc_field(default_factory=list)
    pages: list[PageRecord] = dc_field(default_factory=list)
    lines: list[str] = dc_field(default_factory=list)
    """One line per damage, for people."""
    warnings: list[str] = dc_field(default_factory=list)


class _Pages:
    """Pages of the target relation: the originals as read and the images being damaged."""

    def __init__(self, res: Resolved) -> None:
        self.res = res
        self.original: dict[int, bytes] = {}
        self.image: dict[int, bytearray] = {}
        self._reports: dict[int, PageReport] = {}

    def read(self, block: int) -> bytes:
        if block not in self.original:
            blk = read_block(self.res.relation.path, block, self.res.geometry)
            if blk.partial:
                raise PgSurgeonError(f"block {block} of {self.res.relation.name} is partial ({len(blk.data)} bytes)")
            self.original[block] = blk.data
        return self.original[block]

    def report(self, block: int) -> PageReport:
        if block not in self._reports:
            self._reports[block] = core.inspect_page(
                self.read(block), block, checksums=bool(self.res.geometry.checksums), kind=self.res.relation.kind
            )
        return self._reports[block]

    def current(self, block: int) -> bytearray:
        if block not in self.image:
            self.image[block] = bytearray(self.read(block))
        return self.image[block]


def diff_runs(old: bytes, new: bytes, gap: int = 4) -> list[tuple[int, bytes, bytes]]:
    """(offset, old, new) runs where the pages differ; runs closer than ``gap`` bytes merged."""
    runs: list[tuple[int, int]] = []
    step = 64
    for base in range(0, len(old), step):
        if old[base : base + step] == new[base : base + step]:
            continue
        for i in range(base, min(base + step, len(old))):
            if old[i] != new[i]:
                if runs and i - runs[-1][1] <= gap:
                    runs[-1] = (runs[-1][0], i + 1)
                else:
                    runs.append((i, i + 1))
    return [(s, old[s:e], new[s:e]) for s, e in runs]


def _page_usable(report: PageReport) -> bool:
    return not report["all_zero"] and report["header"]["pd_upper"] != 0


def _btree_opaque(report: PageReport) -> BTPageOpaqueData | None:
    bt = report.get("btree")
    return bt["opaque"] if bt else None


def _hash_overflow_bits(meta: bytes) -> int:
    """The overflow pages a hash index has allocated, hashm_spares[hashm_ovflpoint] (access/hash.h
    HashMetaPageData: hashm_ovflpoint at 60, hashm_spares from 76, after the 24-byte page header)."""
    ovflpoint = int.from_bytes(meta[60:64], "little")
    at = 76 + 4 * min(ovflpoint, 97)
    return int.from_bytes(meta[at : at + 4], "little")


def _page_candidate(mode: Mode, fieldname: str | None, report: PageReport) -> bool:
    if not _page_usable(report):
        return False
    if mode.name == "btree":
        o = _btree_opaque(report)
        if o is None or o["btpo_flags"] & (0x08 | 0x04):  # BTP_META, BTP_DELETED
            return False
        if fieldname == "high_key":
            return bool(o["btpo_next"] != 0 and o["btpo_level"] == 0)
    if mode.name == "item-ids":
        return bool(report["header"]["max_offset"] > 0)
    return True


def _item_candidates(mode: Mode, fieldname: str | None, report: PageReport, explicit: bool) -> list[int]:
    """Line pointers of one page the mode can damage."""
    if not _page_usable(report):
        return []
    out = []
    if mode.name == "btree":
        o = _btree_opaque(report)
        if o is None or o["btpo_flags"] & (0x08 | 0x04):
            return []
        if o["btpo_level"] != 0 and not explicit:
            return []
        first = 2 if o["btpo_next"] != 0 else 1  # P_FIRSTDATAKEY: skip the high key
        for it in report["items"]:
            if it["lp"] >= first and it["lp_flags"] == LP_NORMAL and it["btree"] is not None:
                out.append(int(it["lp"]))
        return out
    for it in report["items"]:
        if it["lp_flags"] != LP_NORMAL:
            continue
        heap = it["heap"]
        if mode.name in ("tuple-header", "tuple-data", "toast"):
            if heap is None:
                continue
            if fieldname == "t_bits" and "HEAP_HASNULL" not in heap["infomask_flags"]:
                continue
            if mode.name == "tuple-data" and not heap["data_len"]:
                continue
        out.append(int(it["lp"]))
    return out


def _spec(req: CorruptRequest, mode: Mode, fieldname: str | None, stream: int, **extra: Any) -> DamageSpec:
    spec: DamageSpec = {"mode": mode.name, "stream": stream}
    if fieldname is not None:
        spec["field"] = fieldname
    if req.value is not None:
        spec["value"] = req.value
    if req.length is not None:
        spec["length"] = req.length
    if req.flips is not None:
        spec["flips"] = req.flips
    if req.tear_at is not None:
        spec["tear_at"] = req.tear_at
    if req.attnum is not None:
        spec["attnum"] = req.attnum
    if req.tid is not None:
        spec["tid"] = (req.tid[0], req.tid[1])
    if req.clear_hints:
        spec["clear_hints"] = True
    if extra.get("item") is not None:
        spec["item"] = extra["item"]
    if extra.get("nblocks") is not None:
        spec["nblocks"] = extra["nblocks"]
    if extra.get("attrs") is not None:
        spec["attrs"] = extra["attrs"]
    return spec


def _block_order(rng: random.Random, n: int, explicit: int | None) -> Iterator[int]:
    if explicit is not None:
        yield explicit
        return
    yield from rng.sample(range(n), n)


class _Injector:
    """Runs the core injector target by target on the page images, keeping notes."""

    def __init__(self, plan: Plan, pages: _Pages, req: CorruptRequest) -> None:
        self.plan = plan
        self.pages = pages
        self.req = req
        self.stream = 0

    def try_inject(self, block: int, spec: DamageSpec, source: bytes | None = None) -> str:
        """Apply one damage to the image of ``block``; ``ValueError`` when it does not fit the page."""
        image = self.pages.current(block)
        result = core.inject_page(bytes(image), block, [spec], seed=self.req.seed, source=source)
        for c in result["changes"]:
            new = bytes.fromhex(c["new"])
            image[c["offset"] : c["offset"] + len(new)] = new
        self.stream += 1
        note = "; ".join(result["notes"])
        self.plan.lines.append(f"block {block}: {note}")
        return note


def _relation_nblocks_hint(res: Resolved, own: int) -> dict[str, int | None]:
    heap = None
    if res.relation.heap_path is not None:
        heap = nblocks(res.relation.heap_path, res.geometry)
    return {"own": own, "heap": heap}


def make_plan(req: CorruptRequest, res: Resolved) -> Plan:
    """Read the target's files and compute every change, writing nothing."""
    mode = MODES[req.mode]
    fieldname = req.field or mode.default_field()
    if fieldname is not None and fieldname not in mode.fields:
        raise UsageError(
            f"mode {mode.name} has no field {fieldname}",
            hint=f"fields: {', '.join(mode.fields)}" if mode.fields else f"mode {mode.name} takes no --field",
        )
    unit = mode.unit_for(fieldname)
    rel = res.relation
    if mode.page_kind is not None and rel.kind != mode.page_kind:
        raise PgSurgeonError(
            f"mode {mode.name} damages {mode.page_kind} pages but {rel.name} is a {rel.kind or 'other'} relation",
            hint=f"pick the {mode.default_target} with --target {mode.default_target}"
            if mode.default_target != "table"
            else "use --target or another relation",
        )
    if unit == UNIT_MAP:
        from pgsurgeon.simulate.maps import map_resolved, plan_map

        map_res = map_resolved(res, mode.name)
        plan = Plan(map_res, mode, fieldname, unit, nblocks(map_res.relation.path, res.geometry))
        plan_map(plan, req, res)
        return plan
    n = nblocks(rel.path, res.geometry)
    plan = Plan(res, mode, fieldname, unit, n)
    if unit == UNIT_FILE:
        _plan_file(plan, req)
        return plan
    if n == 0:
        raise PgSurgeonError(f"{rel.name} has no blocks to damage", hint="insert rows (and CHECKPOINT) first")
    if req.block is not None and req.block >= n:
        raise PgSurgeonError(f"block {req.block} is beyond the end of {rel.name} ({n} blocks)")
    pages = _Pages(res)
    inj = _Injector(plan, pages, req)
    rng = random.Random(req.seed)
    hints = _relation_nblocks_hint(res, n)
    if unit == UNIT_PAGE:
        _plan_pages(plan, req, pages, inj, rng, hints)
    elif unit == UNIT_ITEM:
        _plan_items(plan, req, pages, inj, rng, hints)
    elif unit == UNIT_RELATION:
        _plan_bitflips(plan, req, pages, inj, rng)
    _finish_pages(plan, req, pages)
    return plan


def _source_page(
    req: CorruptRequest, res: Resolved, pages: _Pages, block: int, rng: random.Random, n: int
) -> tuple[bytes, str]:
    if req.source_file is not None:
        src_block = block if req.source_block is None else req.source_block
        blk = read_block(req.source_file, src_block, res.geometry)
        if blk.partial:
            raise PgSurgeonError(f"block {src_block} of {req.source_file} is partial")
        return blk.data, f"block {src_block} of {req.source_file}"
    if req.source_block is not None:
        if req.source_block >= n:
            raise PgSurgeonError(
                f"source block {req.source_block} is beyond the end of {res.relation.name} ({n} blocks)"
            )
        src = req.source_block
    else:
        others = [b for b in range(n) if b != block]
        if not others:
            raise PgSurgeonError(
                f"{res.relation.name} has a single block: there is no other block to take the bytes from",
                hint="pass --source-file with an older copy of the file",
            )
        src = rng.choice(others)
    if src == block:
        raise UsageError("the source block is the damaged block itself", hint="pass another --source-block")
    return pages.read(src), f"block {src}"


def _plan_pages(
    plan: Plan, req: CorruptRequest, pages: _Pages, inj: _Injector, rng: random.Random, hints: dict[str, int | None]
) -> None:
    mode, fieldname, n = plan.mode, plan.field, plan.nblocks
    done = 0
    last_error: str | None = None
    for block in _block_order(rng, n, req.block):
        report = pages.report(block)
        if req.block is None and not _page_candidate(mode, fieldname, report):
            continue
        hint = hints["own"] if mode.name in ("btree", "gin", "gist", "spgist", "hash") else None
        if mode.name == "hash" and fieldname == "bitmap":
            hint = _hash_overflow_bits(pages.read(0))
        spec = _spec(req, mode, fieldname, inj.stream, nblocks=hint)
        source: bytes | None = None
        where = ""
        if mode.name in ("torn", "misdirected"):
            source, where = _source_page(req, plan.resolved, pages, block, rng, n)
            if source == pages.read(block):
                if req.block is not None:
                    raise PgSurgeonError(f"the source ({where}) holds the same bytes as block {block}")
                continue
        try:
            inj.try_inject(block, spec, source)
        except ValueError as exc:
            if req.block is not None:
                raise PgSurgeonError(f"cannot damage block {block}: {exc}") from None
            last_error = str(exc)
            continue
        if where:
            plan.lines[-1] += f" ({where})"
        done += 1
        if done == req.count:
            return
    why = f": {last_error}" if last_error else ""
    raise PgSurgeonError(
        f"found {done} of {req.count} page(s) of {plan.resolved.relation.name} that {mode.name} can damage{why}",
        hint="lower --count or pick another relation or --field",
    )


def _plan_items(
    plan: Plan, req: CorruptRequest, pages: _Pages, inj: _Injector, rng: random.Random, hints: dict[str, int | None]
) -> None:
    mode, fieldname, rel = plan.mode, plan.field, plan.resolved.relation
    if mode.name == "tuple-data" and fieldname == "varlena" and rel.attrs is None:
        raise UsageError(
            "the varlena field needs the table's column layout", hint="name the table with --dsn and --table"
        )
    attrs: list[AttrLayout] | None = None
    if rel.attrs is not None and mode.name == "tuple-data" and fieldname == "varlena":
        attrs = [{"attlen": a.attlen, "attalign": a.attalign} for a in rel.attrs]
    chosen: set[tuple[int, int]] = set()
    last_error: str | None = None

    def attempt(block: int, item: int) -> bool:
        nonlocal last_error
        report = pages.report(block)
        hint = hints["own"]
        if mode.name == "btree":
            o = _btree_opaque(report)
            hint = hints["heap"] if o is not None and o["btpo_level"] == 0 else hints["own"]
        elif mode.name == "hash":
            hint = hints["heap"]  # heap_tid: a TID inside the table
        spec = _spec(req, mode, fieldname, inj.stream, item=item, nblocks=hint, attrs=attrs)
        try:
            inj.try_inject(block, spec)
        except ValueError as exc:
            if req.item is not None:
                raise PgSurgeonError(f"cannot damage item {item} of block {block}: {exc}") from None
            last_error = str(exc)
            return False
        chosen.add((block, item))
        return True

    if req.block is not None:
        report = pages.report(req.block)
        items = [req.item] if req.item is not None else _item_candidates(mode, fieldname, report, True)
        rng.shuffle(items)
        for item in items:
            if attempt(req.block, item) and len(chosen) == req.count:
                return
    else:
        # rounds over the blocks in seeded order, at most one new item per block and round
        order = rng.sample(range(plan.nblocks), plan.nblocks)
        progress = True
        while progress:
            progress = False
            for block in order:
                items = [
                    i for i in _item_candidates(mode, fieldname, pages.report(block), False) if (block, i) not in chosen
                ]
                rng.shuffle(items)
                for item in items:
                    if attempt(block, item):
                        progress = True
                        break
                if len(chosen) == req.count:
                    return
    why = f": {last_error}" if last_error else ""
    raise PgSurgeonError(
        f"found {len(chosen)} of {req.count} item(s) in {rel.name} that {mode.name} can damage{why}",
        hint="lower --count, or pick another --block, --field or relation",
    )


def _plan_bitflips(plan: Plan, req: CorruptRequest, pages: _Pages, inj: _Injector, rng: random.Random) -> None:
    per_block: dict[int, int] = {}
    for _ in range(req.count):
        block = req.block if req.block is not None else rng.randrange(plan.nblocks)
        per_block[block] = per_block.get(block, 0) + 1
    for block, flips in per_block.items():
        spec: DamageSpec = {"mode": plan.mode.name, "flips": flips, "stream": inj.stream}
        try:
            inj.try_inject(block, spec)
        except ValueError as exc:
            raise PgSurgeonError(f"cannot flip bits in block {block}: {exc}") from None


def _finish_pages(plan: Plan, req: CorruptRequest, pages: _Pages) -> None:
    """Recompute checksums if asked, then turn the page images into file changes."""
    res = plan.resolved
    geo = res.geometry
    keep = req.keep_checksum_valid and bool(geo.checksums)
    if req.keep_checksum_valid and not geo.checksums:
        plan.warnings.append("data checksums are off in this cluster: there is no checksum to keep valid")
    for block in sorted(pages.image):
        image = pages.image[block]
        if keep:
            result = core.inject_page(bytes(image), block, [], seed=req.seed, keep_checksum=True)
            for c in result["changes"]:
                new = bytes.fromhex(c["new"])
                image[c["offset"] : c["offset"] + len(new)] = new
            plan.lines.extend(f"block {block}: {note}" for note in result["notes"])
        old = pages.original[block]
        new_page = bytes(image)
        if old == new_page:
            continue
        segno, page_off = geo.locate(block)
        path = segment_path(res.relation.path, segno)
        file = res.relpath(path)
        for offset, o, nw in diff_runs(old, new_page):
            plan.changes.append(FileChange.replace_bytes(file, page_off + offset, o, nw, block=block))
        plan.pages.append(PageRecord(file, block, page_off, geo.blcksz, sha256(old), sha256(new_page), original=old))


def _plan_file(plan: Plan, req: CorruptRequest) -> None:
    res, geo, rel = plan.resolved, plan.resolved.geometry, plan.resolved.relation
    rng = random.Random(req.seed)
    if req.count != 1:
        raise UsageError(f"mode {plan.mode.name} damages one file; --count does not apply")
    if plan.mode.name == "truncate":
        n = plan.nblocks
        if n == 0:
            raise PgSurgeonError(f"{rel.name} has no blocks to cut")
        block = req.block if req.block is not None else (rng.randrange(1, n) if n > 1 else 0)
        if block >= n:
            raise PgSurgeonError(f"block {block} is beyond the end of {rel.name} ({n} blocks)")
        tear = req.tear_at or 0
        if tear and (tear % SECTOR or tear >= geo.blcksz):
            raise UsageError(f"--tear-at must be a multiple of {SECTOR} below {geo.blcksz}")
        segno, at = geo.locate(block)
        path = segment_path(rel.path, segno)
        size = path.stat().st_size
        new_size = at + tear
        if new_size >= size:
            raise PgSurgeonError(f"{res.relpath(path)} is {size} bytes: nothing to cut at {new_size}")
        lost = size - new_size
        what = f"cut at block {block}" + (f" + {tear} bytes" if tear else "")
        note = f"{what}: {size} -> {new_size} bytes ({lost // geo.blcksz} whole block(s) lost)"
        change = FileChange(
            KIND_TRUNCATE, res.relpath(path), new_size, length=lost, block=block, old_size=size, note=note
        )
        plan.changes.append(change)
        plan.lines.append(f"{res.relpath(path)}: {note}")
        later = [s for s in segments(rel.path) if s > segno]
        if later:
            plan.warnings.append(
                f"segments {', '.join(map(str, later))} stay: the server stops counting at the short segment"
            )
        return
    present = segments(rel.path)
    if not present:
        raise PgSurgeonError(f"{rel.name} has no segment files")
    segno = req.segment if req.segment is not None else present[-1]
    if segno not in present:
        raise PgSurgeonError(
            f"{rel.name} has no segment {segno}", hint=f"segments present: {', '.join(map(str, present))}"
        )
    path = segment_path(rel.path, segno)
    first = geo.first_block(segno)
    note = f"segment {segno} removed ({path.stat().st_size} bytes, blocks from {first})"
    plan.changes.append(FileChange.removal(res.relpath(path), path, note, block=first))
    plan.lines.append(f"{res.relpath(path)}: {note}")
