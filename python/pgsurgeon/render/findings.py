"""Findings as people read them: grouped by file or relation, then a summary per code with the server's error
and what to do. Shared by scan and diagnose."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from pgsurgeon.boundary import ZeroPagesNote


F = TypeVar("F", bound=Mapping[str, Any])
"""A finding: the record of pgsurgeon.findings, or a diagnose finding on its way to it."""

# At most this many findings are printed per group; JSON output has all of them.
PER_GROUP = 200


def where(f: Mapping[str, Any]) -> str:
    """``block 3 lp 7 att 2``, or ``file`` for findings about a whole file."""
    if f.get("block") is None:
        return "file"
    text = f"block {f['block']}"
    if f.get("item") is not None:
        text += f" lp {f['item']}"
    if f.get("attnum") is not None:
        text += f" att {f['attnum']}"
    return text


def print_groups(
    console: Console,
    groups: dict[str, list[F]],
    *,
    title: Callable[[str, list[F]], str],
    note: Callable[[F], str | None] | None = None,
    steps: Callable[[str, list[F]], list[str]] | None = None,
) -> None:
    """Each group under its title, one line per finding; ``note`` adds a dim line under a finding, ``steps`` the
    commands to run next under the group (once per damaged structure, not per finding)."""
    from rich.markup import escape

    # a table before its TOAST table and indexes: the row that owns a damaged value is where the damage shows
    ordered = sorted(groups.items(), key=lambda kv: str(kv[0]).startswith("pg_toast."))
    for key, fs in ordered:
        causes = root_causes(fs)
        console.print(f"\n[bold]{escape(title(key, fs))}[/] — {len(causes)} damaged structure(s), {len(fs)} finding(s)")
        for root, consequences in causes[:PER_GROUP]:
            colour = "red" if root["severity"] == "error" else "yellow"
            console.print(
                f"  [{colour}]{root['severity']:7}[/] {where(root):24} {root['code']}: {escape(root['message'])}"
            )
            extra = note(root) if note else None
            if extra:
                console.print(f"          {extra}", style="dim", markup=False)
            if consequences:
                counts = Counter(c["code"] for c in consequences)
                shown = ", ".join(f"{code} x{n}" if n > 1 else code for code, n in counts.most_common(4))
                more = ", …" if len(counts) > 4 else ""
                console.print(
                    f"          and {len(consequences)} consequence(s) here: {shown}{more}", style="dim", markup=False
                )
        if len(causes) > PER_GROUP:
            console.print(f"  … {len(causes) - PER_GROUP} more (use --format json for all)")
        commands = steps(key, fs) if steps else []
        if commands:
            console.print("  next:", style="bold", markup=False)
            for line in commands:
                # commands are never wrapped: they are copied and pasted
                style = "green" if not line.startswith("#") else "dim"
                console.print(f"    {line}", style=style, markup=False, soft_wrap=True)


# Which finding on a block is the cause and which are its consequences: a destroyed page header makes every line
# pointer look wrong, a wrong line pointer makes its tuple look wrong, and any of them fails the checksum.
_CAUSE_RANK = {
    "file": 7,
    "page_header": 6,
    "line_pointer": 5,
    "tuple_header": 4,
    "tuple_data": 3,
    "toast": 3,
    "index": 2,
    "checksum": 1,
}
_PAGE_LEVEL = ("file", "page_header", "line_pointer")


def root_causes(fs: list[F]) -> list[tuple[F, list[F]]]:
    """One entry per damaged structure: its root-cause finding and the findings that follow from it. On a page
    whose header or item-ID array is damaged, everything else on that page is a consequence; otherwise each tuple
    (block, line pointer) is its own structure, and page-wide symptoms (a checksum failure) go with the first."""
    out: list[tuple[F, list[F]]] = []
    by_block: dict[Any, list[F]] = {}
    for f in fs:
        if f.get("block") is None:
            out.append((f, []))
        else:
            by_block.setdefault((f.get("path"), f.get("fork"), f["block"]), []).append(f)

    def rank(f: F) -> int:
        if str(f.get("code", "")).startswith("server."):  # what the server said: a symptom, never the cause
            return -1
        return _CAUSE_RANK.get(str(f.get("area")), 0) * 2 + (f.get("severity") == "error")

    for block_fs in by_block.values():
        ordered = sorted(block_fs, key=rank, reverse=True)
        top = ordered[0]
        if str(top.get("area")) in _PAGE_LEVEL and (top.get("item") is None or top.get("area") != "line_pointer"):
            out.append((top, ordered[1:]))
            continue
        by_item: dict[Any, list[F]] = {}
        for f in ordered:
            by_item.setdefault(f.get("item"), []).append(f)
        page_wide = by_item.pop(None, [])
        first = True
        for item_fs in by_item.values():
            out.append((item_fs[0], item_fs[1:] + (page_wide if first else [])))
            first = False
        if not by_item:
            out.append((page_wide[0], page_wide[1:]))
    return out


def print_code_summary(console: Console, findings: Iterable[Mapping[str, Any]], errors: int, warnings: int) -> None:
    """How many of each code, with the server's error and the remedy once per code."""
    found = list(findings)
    console.print(f"\n[bold]{errors} error(s), {warnings} warning(s)[/]")
    for code, n in Counter(f["code"] for f in found).most_common():
        example = next(f for f in found if f["code"] == code)
        console.print(f"  {n:6} {code}")
        if example["pg_error"]:
            console.print(f"         server: {example['pg_error']}", style="dim", markup=False)
        console.print(f"         what to do: {example['remedy']}", style="dim", markup=False)


def group_by(findings: Iterable[F], key: str) -> dict[str, list[F]]:
    groups: dict[str, list[F]] = {}
    for f in findings:
        groups.setdefault(str(f.get(key) or ""), []).append(f)
    return groups


_ATTRIBUTE = re.compile(r"^attribute (\d+):")
MAX_CTIDS = 50
"""pg_surgery statements list at most this many ctids; the JSON output and repair's plan have all of them."""
_VISIBILITY_ONLY = frozenset(
    (
        "tuple_header.xmin_old",
        "tuple_header.xmin_old_hinted",
        "tuple_header.xmin_future",
        "tuple_header.xmin_invalid",
        "tuple_header.xmax_old",
        "tuple_header.xmax_future",
        "tuple_header.multi_old",
        "tuple_header.multi_future",
        "tuple_header.infomask",
    )
)
"""Codes about a tuple's visibility fields only: heap_force_freeze makes such a tuple readable again."""


# A page that fails bufpage.c's PageIsVerified (its header, or with data checksums its checksum) is refused whole:
# pg_surgery's functions read it through the buffer manager too and fail with "invalid page in block N".
_REFUSED_CODES = frozenset(
    {
        "checksum.mismatch",
        "page_header.bad_flags",
        "page_header.lower_gt_upper",
        "page_header.upper_gt_special",
        "page_header.special_gt_blcksz",
        "page_header.special_unaligned",
        "page_header.upper_zero",
        "page_header.invalid",
        "server.invalid_page",
    }
)


def refused_blocks(fs: Iterable[Mapping[str, Any]]) -> set[int]:
    """The blocks the server refuses to read, from the findings about them."""
    return {
        int(f["block"])
        for f in fs
        if f.get("block") is not None and f.get("severity") == "error" and f.get("code") in _REFUSED_CODES
    }


def next_steps(
    relation: str,
    fs: Sequence[Mapping[str, Any]],
    conn: str = "",
    everything: Iterable[Mapping[str, Any]] = (),
    owner: str | None = None,
    server: Mapping[str, Any] | None = None,
) -> list[str]:
    """Runnable commands for one damaged relation, with its real name, ctids and the connection options given
    (``conn``, e.g. '-h db1 -p 5432 -d shop'; empty: the PG* variables). ``everything``: all findings of the
    run, to know whether the TOAST table's pages can still be read (setting a value to NULL deletes its chunks).
    ``owner``: the table a TOAST table belongs to, when the run knows it. ``server``: the server's facts (its
    ``standbys`` and ``archiving`` say where good copies of the damaged pages may be)."""
    import shlex

    if not relation or not fs:
        return []
    c = f" {conn}" if conn else ""
    rel = shlex.quote(relation)
    lit = relation.replace("'", "''").replace('"', '\\"')
    # an index: by its findings, or by belonging to another table (a checksum failure says nothing of the kind)
    index_codes = all(str(f.get("code", "")).startswith(("btree", "index.", "amcheck.btree")) for f in fs)
    if index_codes or (owner and owner != relation and not relation.startswith("pg_toast.")):
        if owner and owner != relation and _table_damaged(owner, everything):
            table = shlex.quote(owner)
            return [
                f"# {relation} is an index of {owner}, which is damaged too: a rebuild reads the table and stops at "
                "its first bad page; repairing the table rebuilds its indexes once the table is sound",
                f"pgsurgeon salvage{c} -t {table} --out salvage-{_slug(owner)}",
                f"pgsurgeon repair{c} -t {table}    # a dry run: prints the plan, changes nothing",
                *copy_steps(c, table, server),
            ]
        return [
            "# an index holds no data of its own: rebuild it once its table is known sound",
            f'psql{c} -c "REINDEX INDEX CONCURRENTLY {lit}"',
        ]
    if relation.startswith("pg_toast.") and owner and owner != relation:
        table = shlex.quote(owner)
        return [
            f"# {relation} is the TOAST table of {owner}: save and repair that table",
            f"pgsurgeon salvage{c} -t {table} --out salvage-{_slug(owner)}",
            f"pgsurgeon repair{c} -t {table}    # a dry run: prints the plan, changes nothing",
            *copy_steps(c, table, server),
        ]
    if relation.startswith("pg_toast."):
        return [
            "# the table owning this TOAST table, then save and repair that table",
            f"REL=$(psql{c} -XAtc \"SELECT oid::regclass FROM pg_class WHERE reltoastrelid = '{lit}'::regclass\")",
            f'pgsurgeon salvage{c} -t "$REL" --out salvage-{relation.split(".")[-1]}',
            f'pgsurgeon repair{c} -t "$REL"',
            *copy_steps(c, '"$REL"', server),
        ]
    out = [
        f"pgsurgeon salvage{c} -t {rel} --out salvage-{_slug(relation)}",
        f"pgsurgeon repair{c} -t {rel}    # a dry run: prints the plan, changes nothing",
        *copy_steps(c, rel, server),
    ]
    freeze: list[str] = []
    kill: list[str] = []
    values: dict[str, int] = {}  # ctid -> attnum of a damaged TOAST value: the rest of the row is intact
    for f in fs:
        if f.get("block") is None or f.get("item") is None:
            continue
        if str(f.get("area")) not in ("tuple_header", "tuple_data", "toast", "line_pointer"):
            continue
        ctid = f"({f['block']},{f['item']})"
        attnum = f.get("attnum")
        if attnum is None and (m := _ATTRIBUTE.match(str(f.get("message", "")))):
            attnum = m.group(1)  # the core names the column in its message
        if str(f.get("area")) == "toast" and attnum is not None:
            values.setdefault(ctid, int(attnum))
            continue
        target = freeze if str(f.get("code", "")) in _VISIBILITY_ONLY else kill
        if ctid not in freeze and ctid not in kill:
            target.append(ctid)
    toast_pages_bad = any(
        str(f.get("relation") or "").startswith("pg_toast.")
        and (str(f.get("area")) in (*_PAGE_LEVEL, "checksum") or str(f.get("code", "")).startswith("server."))
        for f in everything
    )
    if values and toast_pages_bad:
        out.append("# the TOAST table has pages the server refuses: the repair above deals with them first")
        values = {}
    for ctid, attnum in list(values.items())[:MAX_CTIDS]:
        if ctid in kill or ctid in freeze:
            continue
        out.append(f"# or keep row {ctid} and set only its unreadable value (column {attnum}) to NULL")
        out.append(
            f"psql{c} -XAtc \"SELECT format('UPDATE %s SET %I = NULL WHERE ctid = %L', '{lit}'::regclass, attname, "
            f"'{ctid}') FROM pg_attribute WHERE attrelid = '{lit}'::regclass AND attnum = {attnum}\" | psql{c} -X"
        )
    refused = refused_blocks(fs)
    unreachable = sorted({int(t.strip("()").split(",")[0]) for t in freeze + kill} & refused)
    if unreachable:
        out.append(
            f"# block(s) {', '.join(map(str, unreachable))} fail the server's page check: pg_surgery cannot reach "
            "their tuples; repair's plan (above) carves and zeroes such a page instead"
        )
        freeze = [t for t in freeze if int(t.strip("()").split(",")[0]) not in refused]
        kill = [t for t in kill if int(t.strip("()").split(",")[0]) not in refused]
    for fn, ctids in (("freeze", freeze), ("kill", kill)):
        if not ctids:
            continue
        shown = ctids[:MAX_CTIDS]
        more = f"    # and {len(ctids) - len(shown)} more" if len(ctids) > len(shown) else ""
        why = "only visibility fields damaged" if fn == "freeze" else "the row is lost; salvage it first"
        out.append(f"# or per tuple with pg_surgery ({why})")
        array = ", ".join(f"'{t}'" for t in shown)
        out.append(f"psql{c} -c \"SELECT heap_force_{fn}('{lit}'::regclass, ARRAY[{array}]::tid[])\"{more}")
    return out


def copy_steps(c: str, table: str, server: Mapping[str, Any] | None) -> list[str]:
    """The repair that restores damaged pages from a good copy instead of losing their rows, when the server shows
    one may exist: a standby streaming from it (pg_stat_replication), a WAL archive (archive_mode). ``c``: the
    connection options with a leading space; ``table``: the table as a shell word."""
    if not server:
        return []
    out = []
    standbys = int(server.get("standbys") or 0)
    database = str(server.get("database") or "postgres")
    if standbys:
        out += [
            f"# this server streams to {standbys} standby(s) (pg_stat_replication): their copies of the damaged pages "
            f"can replace them instead of losing their rows; STANDBY is a standby's connection string, e.g. "
            f"STANDBY='host=standby1 dbname={database}'",
            f'pgsurgeon repair{c} -t {table} --from-standby "$STANDBY"    # a dry run',
        ]
    if server.get("archiving"):
        out += [
            "# WAL archiving is on (archive_mode, archive_command): a base backup of this cluster, brought forward "
            "with the archived WAL, can replace the damaged pages; BACKUP is the backup, WALARCHIVE the archive",
            f'pgsurgeon repair{c} -t {table} --from-backup "$BACKUP" --wal-archive "$WALARCHIVE"    # a dry run',
        ]
    return out


def _table_damaged(table: str, everything: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the run found errors in ``table``'s own pages or rows (its indexes' findings aside)."""
    return any(f.get("relation") == table and f.get("severity") == "error" for f in everything)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "relation"


def offline_steps(
    pgdata: str,
    path: str,
    fs: Sequence[Mapping[str, Any]],
    conn: str = "",
    owners: Mapping[tuple[str, str], str] | None = None,
    everything: Iterable[Mapping[str, Any]] = (),
) -> list[str]:
    """Runnable commands for one damaged file found offline: decode the first damaged page, then (when the
    relation is named) the same commands as for a live table. ``conn``: the connection options given, if any;
    ``owners``: the table each index and TOAST table belongs to, by (database, qualified name); ``everything``:
    all findings of the run."""
    import shlex

    causes = root_causes(list(fs))
    # a file-level finding's block (where a cut file ends, a missing segment) is past what the file holds
    blocks = [root["block"] for root, _ in causes if root.get("block") is not None and root.get("area") != "file"]
    out = []
    if blocks and path:
        out.append(f"pgsurgeon inspect {shlex.quote(f'{pgdata}/{path}')} -b {blocks[0]}")
    relation = next((str(f["relation"]) for f in fs if f.get("relation")), "")
    if relation:
        database = next((str(f["database"]) for f in fs if f.get("database")), "")
        if not conn and database:
            # found offline: the commands below need the server running; the database is known, the rest is not
            out.append("# with the server running (add -h/-p/-U for it, or set PGHOST/PGPORT/PGUSER):")
            conn = f"-d {shlex.quote(database)}"
        owner = (owners or {}).get((database, relation))
        out += next_steps(relation, fs, conn, [f for f in everything if f.get("database") == database], owner)
    return out


ZERO_LISTED_TABLES = 10
"""Tables named one by one after the all-zero page count; the rest are counted."""


def zero_pages_lines(named: Sequence[tuple[str, ZeroPagesNote]]) -> list[str]:
    """One line per table with all-zero pages before in-use pages: their blocks, and what they mean for it. Not
    damage by themselves, but the only trace rows lost from a table with no usable index or all-visible bit leave."""
    lines = []
    for name, z in named[:ZERO_LISTED_TABLES]:
        blocks = ", ".join(str(b) for b in z["blocks"])
        more = f" and {z['count'] - len(z['blocks'])} more" if z["count"] > len(z["blocks"]) else ""
        lines.append(f"{name}: block(s) {blocks}{more}")
    if len(named) > ZERO_LISTED_TABLES:
        lines.append(f"and {len(named) - ZERO_LISTED_TABLES} more table(s) (--format json lists them)")
    if named:
        lines.append(
            "where one session at a time filled a table (no concurrent inserts), rows were probably on these pages: "
            "compare its row count with what the application expects"
        )
    return lines
