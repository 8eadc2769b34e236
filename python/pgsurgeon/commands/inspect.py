"""``pgsurgeon inspect``: an offline pageinspect that also decodes pages the server refuses."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.files import file_key, names_from_files
from pgsurgeon.commands import options
from pgsurgeon.datadir import Geometry, read_block, segment_name
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.exitcodes import Exit
from pgsurgeon.render import term
from pgsurgeon.render.hexdump import hexdump

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

FORKS = ("main", "fsm", "vm", "init")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "inspect",
        help="decode one page: header, line pointers, tuple headers, btree items, checksum",
        description="Decode one page of a relation file, even one the server refuses to read "
        "('invalid page in block N'). Block numbers count across segments, as server errors do.",
    )
    p.add_argument("file", nargs="?", type=Path, help="relation file, e.g. PGDATA/base/16384/29724")
    p.add_argument("-b", "--block", type=int, required=True, help="block number (counted across segments)")
    options.add_connection(p, optional=True, purpose="with -t, find the file (or the page) through SQL")
    options.add_table(p, help="relation name as SQL text, e.g. public.orders or 'my schema.\"T\"'")
    p.add_argument("--fork", choices=FORKS, default="main", help="fork to read with --table (default: main)")
    p.add_argument("--kind", choices=core.PAGE_KINDS, help="decode as this page kind instead of guessing")
    p.add_argument(
        "--checksums",
        choices=("auto", "on", "off"),
        default="auto",
        help="whether the cluster has data checksums (auto: from pg_control or the server)",
    )
    options.add_format(p)
    p.add_argument("--raw", action="store_true", help="add a hex dump of the page, labelled by region")
    p.set_defaults(func=run)


@dataclass
class Target:
    data: bytes
    block: int
    source: str
    segno: int
    block_in_file: int
    partial: bool
    checksums: bool | None
    kind: str | None


def _from_file(path: Path, block: int) -> Target:
    geometry = Geometry.for_path(path)
    blk = read_block(path, block, geometry)
    return Target(blk.data, block, str(blk.file), blk.segno, blk.block_in_file, blk.partial, geometry.checksums, None)


def _from_dsn(dsn: str, table: str, fork: str, block: int) -> Target:
    with db.connect(dsn) as conn:
        facts = catalog.server_facts(conn)
        rel = catalog.find(conn, table, facts)
        if rel is None:
            raise PgSurgeonError(f"relation {table!r} does not exist", hint="qualify it with its schema, e.g. public.t")
        relname, filepath, data_directory, kind = rel.regclass, rel.filepath, facts.data_directory, rel.kind
        if filepath is None:
            raise PgSurgeonError(f"relation {relname} has no storage (a view or a partitioned table?)")
        rel_file = Path(data_directory) / segment_name(filepath, 0, fork) if data_directory else None
        if rel_file is not None and os.access(rel_file, os.R_OK):
            # Reading the file works for pages the buffer manager refuses, and never crashes a backend.
            target = _from_file(rel_file, block)
            target.kind = kind
            return target
        try:
            page = conn.execute(
                db.load_sql("get_raw_page"), {"relname": relname, "fork": fork, "block": block}
            ).fetchone()
        except db.DatabaseError as exc:
            raise PgSurgeonError(
                f"the server could not return block {block} of {relname}: {str(exc).splitlines()[0]}",
                hint="run inspect on the database host against the data directory file "
                f"({data_directory}/{filepath}) to decode a page the server refuses",
            ) from None
        assert page is not None
        data = bytes(page[0])
        return Target(data, block, f"{relname} (via get_raw_page)", 0, block, False, facts.checksums, kind)


def run(args: argparse.Namespace) -> int:
    if args.block < 0:
        raise UsageError("--block must be 0 or more")
    if args.table and args.dsn is None:
        args.dsn = options.build_conninfo()  # no connection option: libpq's PG* variables and defaults
    if args.file is None and not args.table:
        raise UsageError("name a relation file, or a table with -t", hint="pgsurgeon inspect PGDATA/base/5/1259 -b 0")
    if args.file is not None and args.file.is_dir():
        raise UsageError(
            f"{args.file} is a directory: inspect decodes one page of one relation file",
            hint="pass the file, e.g. PGDATA/base/5/1259 (pgsurgeon files PGDATA lists them)",
        )
    target = _from_dsn(args.dsn, args.table, args.fork, args.block) if args.table else _from_file(args.file, args.block)
    if len(target.data) < 24:
        raise PgSurgeonError(
            f"block {args.block} of {target.source} holds only {len(target.data)} bytes, less than a page header",
            hint="the file ends inside this block: a truncated or torn write",
        )
    offline = _name_offline(args.file) if args.file is not None and not args.table else None
    if offline and target.kind is None:
        target.kind = offline[1]
    checksums = {"on": True, "off": False}.get(args.checksums, target.checksums)
    guessed_checksums = checksums is None
    if checksums is None:
        # No pg_control and no server: a non-zero stored checksum suggests checksums are on.
        checksums = int.from_bytes(target.data[8:10], "little") != 0
    page = core.inspect_page(target.data, target.block, checksums=checksums, kind=args.kind or target.kind)
    if args.file is not None and not args.table and page["verification"]["result"] == "all_zero":
        from pgsurgeon.loss import zero_page_finding

        page["findings"].extend(zero_page_finding(args.file, args.block))
    report: dict[str, Any] = {
        **page,
        "source": target.source,
        "segment": target.segno,
        "block_in_file": target.block_in_file,
        "partial": target.partial,
        "checksums_enabled": checksums,
        "checksums_guessed": guessed_checksums,
        "relation": args.table or (offline[0] if offline else None),
    }
    if args.format == "json":
        if args.raw:
            report["raw_hex"] = target.data.hex()
        print(json.dumps(report, indent=2))
    else:
        render_text(report, target.data if args.raw else None, term.console())
    return Exit.DAMAGE if any(f["severity"] == "error" for f in report["findings"]) else Exit.CLEAN


def _server_view(report: dict[str, Any]) -> str:
    v = report["verification"]
    if v["result"] == "valid":
        return "[green]the server reads this page normally[/]"
    if v["result"] == "all_zero":
        return "[yellow]all zeroes: the server reads it as an empty page, any rows that were here are silently gone[/]"
    parts = []
    if v["checksum_failure"]:
        parts.append("page verification failed (checksum)")
    if not v["header_sane"]:
        parts.append("page header fails verification")
    return f"[red]the server refuses it: ERROR invalid page in block {report['block']} ({'; '.join(parts)})[/]"


def _header_table(report: dict[str, Any]) -> Table:
    h = report["header"]
    t = term.table(title="page header", show_header=True, header_style="bold")
    t.add_column("field")
    t.add_column("value", justify="right")
    t.add_column("meaning")
    t.add_row("pd_lsn", h["lsn"], "last WAL record that changed the page")
    cs = report["checksum"]
    if report["verification"]["result"] == "all_zero":
        # bufpage.c's PageIsVerified: an all-zero page is accepted as new, its checksum never computed
        remark = "none: the server does not check an all-zero page"
    elif not report["checksums_enabled"]:
        remark = f"computed {cs['computed']} (checksums off in this cluster)"
    elif cs["matches"]:
        remark = "[green]matches[/]"
    else:
        remark = f"[red]computed {cs['computed']}: MISMATCH[/]"
    t.add_row("pd_checksum", str(h["pd_checksum"]), remark)
    t.add_row("pd_flags", f"0x{h['pd_flags']:04x}", " ".join(h["flags"]) or "-")
    t.add_row("pd_lower", str(h["pd_lower"]), f"{h['max_offset']} line pointers")
    t.add_row("pd_upper", str(h["pd_upper"]), f"free space {h['free_space']} bytes")
    t.add_row("pd_special", str(h["pd_special"]), f"special space {report['length'] - h['pd_special']} bytes")
    t.add_row(
        "pd_pagesize_version",
        str(h["pd_pagesize_version"]),
        f"size {h['page_size']}, layout {h['layout_version']}",
    )
    t.add_row("pd_prune_xid", str(h["pd_prune_xid"]), "")
    return t


def _tid(t: dict[str, Any] | None) -> str:
    return "" if t is None else f"({t['block']},{t['offset']})"


def _items_table(report: dict[str, Any]) -> Table | None:
    items = report["items"]
    if not items:
        return None
    btree = report["kind"] == "btree"
    t = term.table(
        title="line pointers" + (" and index tuples" if btree else " and tuple headers"), header_style="bold"
    )
    for col in ("lp", "lp_off", "lp_flags", "lp_len"):
        t.add_column(col, justify="right")
    if btree:
        for col in ("ctid", "itemlen", "nulls", "vars", "dead", "htid", "data"):
            t.add_column(col)
    else:
        for col in (
            "t_xmin",
            "t_xmax",
            "t_field3",
            "t_ctid",
            "natts",
            "t_infomask",
            "t_hoff",
            "t_bits",
            "flags",
        ):
            t.add_column(col)
    for it in items:
        row = [str(it["lp"]), str(it["lp_off"]), it["lp_flags_name"], str(it["lp_len"])]
        if btree:
            b = it["btree"]
            if b is None:
                row += [""] * 7
            else:
                data = b["data"] if len(b["data"]) <= 36 else b["data"][:33] + "..."
                dead = "" if b["dead"] is None else str(b["dead"]).lower()
                row += [
                    _tid(b["ctid"]),
                    str(b["itemlen"]),
                    str(b["nulls"]).lower(),
                    str(b["vars"]).lower(),
                    dead,
                    _tid(b["htid"]),
                    data,
                ]
        else:
            h = it["heap"]
            if h is None:
                row += [""] * 9
            else:
                flags = " ".join(f.removeprefix("HEAP_") for f in h["infomask_flags"] + h["infomask_combined"])
                row += [
                    str(h["t_xmin"]),
                    str(h["t_xmax"]),
                    str(h["t_field3"]),
                    _tid(h["t_ctid"]),
                    str(h["natts"]),
                    f"0x{h['t_infomask']:04x}",
                    str(h["t_hoff"]),
                    h["t_bits"] or "",
                    flags,
                ]
        t.add_row(*row)
    return t


def _name_offline(path: Path) -> tuple[str, str | None] | None:
    """The relation a file belongs to and its page kind, from the catalog in its data directory (no server)."""
    found = file_key(path)
    if found is None:
        return None
    name = names_from_files(found[0]).get(found[1])
    if name is None:
        return None
    label = f"{name.database}.{name.qualified}" if name.database else name.qualified
    fork_free = "_" not in path.name
    return label, name.kind if fork_free else None


def render_text(report: dict[str, Any], raw: bytes | None, console: Console) -> None:
    where = f"block {report['block']} of {report['source']}"
    if report.get("relation") and report["relation"] not in report["source"]:
        where += f" ({report['relation']})"
    if report["segment"]:
        where += f" (segment {report['segment']}, block {report['block_in_file']} in that file)"
    kind = report["kind"] + (" (guessed)" if report["kind_guessed"] else "")
    console.print(f"[bold]{where}[/]: {kind} page, {report['length']} bytes")
    if report["partial"]:
        console.print("[red]the file ends inside this block: only the bytes shown are on disk[/]")
    console.print(_server_view(report))
    if report["checksums_guessed"]:
        console.print(
            "[dim]no pg_control found: checksums assumed "
            + ("on" if report["checksums_enabled"] else "off")
            + " from the stored value; use --checksums to say[/]"
        )
    console.print(_header_table(report))
    if report["btree"]:
        o = report["btree"]["opaque"]
        console.print(
            f"btree special: prev {o['btpo_prev']}, next {o['btpo_next']}, level {o['btpo_level']}, "
            f"flags 0x{o['btpo_flags']:04x} {' '.join(report['btree']['flags'])}, cycleid {o['btpo_cycleid']}"
        )
        meta = report["btree"]["meta"]
        if meta:
            console.print(
                f"metapage: magic 0x{meta['btm_magic']:06x}, version {meta['btm_version']}, root {meta['btm_root']}, "
                f"level {meta['btm_level']}, fastroot {meta['btm_fastroot']}"
            )
    items = _items_table(report)
    if items is not None:
        console.print(items)
    findings = report["findings"]
    if findings:
        console.print(f"[bold]{len(findings)} finding(s)[/]")
        for f in findings:
            colour = "red" if f["severity"] == "error" else "yellow"
            item = f" item {f['item']}" if f["item"] is not None else ""
            console.print(f"  [{colour}]{f['severity']}[/] {f['code']}{item}: {f['message']}")
            if f["pg_error"]:
                console.print(f"      server: {f['pg_error']}", style="dim")
            console.print(f"      what to do: {f['remedy']}", style="dim")
    else:
        console.print("[green]no findings[/]")
    if raw is not None:
        console.print("[bold]raw page[/]")
        for line in hexdump(raw, report):
            console.print(line, markup=False)
