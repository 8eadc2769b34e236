"""``unload FILE --layout 'int4,text,…'``: one relation file decoded with column types given by hand, for a file no
catalog names (an orphan, a file copied out of a lost cluster). Type storage comes from the catalog of the data
directory the file sits in when it can be read, else from the built-in types' facts below."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.catalog.files import CatalogUnreadable, FilesCatalog, file_key
from pgsurgeon.catalog.types import Types, type_desc
from pgsurgeon.datadir import find_pgdata, segments_of
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from pgsurgeon.boundary import AttrDesc, CarveConfig, ColumnOut, LostItem

# Built-in types (catalog/pg_type.dat): name -> (oid, typlen, typalign, typbyval, array oid).
BUILTIN = {
    "bool": (16, 1, "c", True, 1000), "bytea": (17, -1, "i", False, 1001), "char": (18, 1, "c", True, 1002),
    "name": (19, 64, "c", False, 1003), "int8": (20, 8, "d", True, 1016), "int2": (21, 2, "s", True, 1005),
    "int4": (23, 4, "i", True, 1007), "text": (25, -1, "i", False, 1009), "oid": (26, 4, "i", True, 1028),
    "xid": (28, 4, "i", True, 1011), "json": (114, -1, "i", False, 199), "xml": (142, -1, "i", False, 143),
    "point": (600, 16, "d", False, 1017), "float4": (700, 4, "i", True, 1021), "float8": (701, 8, "d", True, 1022),
    "money": (790, 8, "d", True, 791), "macaddr": (829, 6, "i", False, 1040), "inet": (869, -1, "i", False, 1041),
    "cidr": (650, -1, "i", False, 651), "bpchar": (1042, -1, "i", False, 1014),
    "varchar": (1043, -1, "i", False, 1015), "date": (1082, 4, "i", True, 1182), "time": (1083, 8, "d", True, 1183),
    "timestamp": (1114, 8, "d", True, 1115), "timestamptz": (1184, 8, "d", True, 1185),
    "interval": (1186, 16, "d", False, 1187), "timetz": (1266, 12, "d", False, 1270),
    "bit": (1560, -1, "i", False, 1561), "varbit": (1562, -1, "i", False, 1563),
    "numeric": (1700, -1, "i", False, 1231), "uuid": (2950, 16, "c", False, 2951),
    "jsonb": (3802, -1, "i", False, 3807), "tsvector": (3614, -1, "i", False, 3643),
}  # fmt: skip
ALIASES = {
    "boolean": "bool", "smallint": "int2", "integer": "int4", "int": "int4", "bigint": "int8", "real": "float4",
    "double precision": "float8", "float": "float8", "character varying": "varchar", "character": "bpchar",
    "timestamp with time zone": "timestamptz", "timestamp without time zone": "timestamp",
    "time without time zone": "time", "time with time zone": "timetz", "decimal": "numeric",
}  # fmt: skip


@dataclass
class LayoutResult:
    out: Path
    file: str
    rows: int
    kept_apart: int
    columns: list[str]
    lost: list[LostItem] = field(default_factory=list)
    seconds: float = 0.0


def _builtin_types() -> Types:
    types = Types()
    for name, (oid, typlen, typalign, byval, array) in BUILTIN.items():
        types.rows[oid] = (oid, name, "b", typlen, typalign, byval, ",", 0, 0, "", 0, 0, oid)
        align = "d" if typalign == "d" else "i"
        types.rows[array] = (array, f"_{name}", "b", -1, align, False, ",", oid, 0, "A", 0, 0, array)
    return types


def parse_layout(text: str) -> list[tuple[str, str, int]]:
    """'int4,text[],varchar(20)' -> [(column name, base type name, array depth)]."""
    out = []
    for i, raw in enumerate(x.strip() for x in text.split(",")):
        if not raw:
            raise PgSurgeonError(f"--layout has an empty type at position {i + 1}", hint="e.g. --layout 'int4,text'")
        depth = 0
        while raw.endswith("[]"):
            raw, depth = raw[:-2].strip(), depth + 1
        base = raw.split("(")[0].strip().lower()
        out.append((f"c{i + 1}", ALIASES.get(base, base), depth))
    return out


def run_layout(
    file: Path, layout: str, out: Path, *, fmt: str = "copy", jobs: int = 2, block_size: int | None = None
) -> LayoutResult:
    started = time.monotonic()
    if not file.is_file():
        raise PgSurgeonError(f"no such relation file: {file}", hint="pass the segment 0 file of the relation")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PgSurgeonError(f"{out} exists and is not empty", hint="choose a new directory for --out")
    cols = parse_layout(layout)
    pgdata = find_pgdata(file.resolve().parent)
    types = _builtin_types()
    by_name: dict[str, int] = {name: oid for name, (oid, *_rest) in BUILTIN.items()}
    facts: dict[str, Any] = {"blcksz": block_size or 8192, "relseg_size": (1 << 30) // (block_size or 8192)}
    facts |= {"server_version_num": 180000, "checksums": False}
    if pgdata is not None:
        try:
            fc = FilesCatalog(pgdata, {"block_size": block_size} if block_size else {})
            facts = dict(fc.facts)
            key = file_key(file)
            db = next((d for d in fc.databases() if key and d.oid == key[1][1]), None)
            if db is not None:
                cat = fc.database(db)
                for oid, t in cat.types.items():
                    if cat.namespaces.get(t.nspoid) == "pg_catalog":
                        by_name.setdefault(t.name, oid)
                types = cat.type_rows(set(by_name.values()))
        except (ValueError, OSError, CatalogUnreadable):
            pass  # the built-in facts stand in
    attrs: list[AttrDesc] = []
    columns: list[ColumnOut] = []
    for attnum, (name, base, depth) in enumerate(cols, start=1):
        found = by_name.get(base)
        if found is None:
            raise PgSurgeonError(f"unknown type {base!r} in --layout", hint="built-in types: " + ", ".join(BUILTIN))
        oid = found
        for _ in range(depth):
            arr: int | None = next((o for o, r in types.rows.items() if r[9] == "A" and int(r[7]) == oid), None)
            if arr is None:
                raise PgSurgeonError(f"no array type of {base!r} is known")
            oid = arr
        row = types.rows[oid]
        desc = type_desc(oid, types)
        attrs.append({"attnum": attnum, "attlen": row[3], "attalign": row[4], "attbyval": row[5], "attstorage": "x"})
        columns.append({"attnum": attnum, "name": name, "type": desc, "missing": None})
    blcksz = int(facts["blcksz"])
    segs = segments_of(file)
    nblocks = (
        int(segs[-1]["segno"]) * int(facts["relseg_size"]) + Path(segs[-1]["path"]).stat().st_size // blcksz
        if segs
        else 0
    )
    cfg: CarveConfig = {
        "blcksz": blcksz,
        "relseg_size": int(facts["relseg_size"]),
        "nblocks": nblocks,
        "files": segs,
        "desc": {"natts": len(attrs), "has_toast": False, "toast_relid": 0, "attrs": attrs},
        "columns": columns,
        "format": "csv" if fmt == "csv" else "text",
        "server_version_num": int(facts["server_version_num"]),
        "checksums": bool(facts["checksums"]),
        "can_ask": False,
    }
    if pgdata is not None:
        cfg["xact_dir"] = str(pgdata / "pg_xact")
    out.mkdir(parents=True, exist_ok=True)
    ext = "csv" if fmt == "csv" else "copy"
    main = out / f"{file.name}.{ext}"
    apart = out / f"{file.name}.kept_apart.{ext}"
    main.touch()
    summary = core.RowCarver(cfg).run([(0, nblocks)], jobs, main=str(main), apart=str(apart))
    if apart.exists() and apart.stat().st_size == 0:
        apart.unlink()
    counts = summary["counts"]
    res = LayoutResult(
        out,
        main.name,
        counts["main_rows"],
        counts["apart_rows"],
        [c[0] for c in cols],
        summary["lost"],
        round(time.monotonic() - started, 3),
    )
    (out / "report.json").write_text(
        json.dumps({"file": str(file), "layout": layout, **res.__dict__, "out": str(out)}, indent=2) + "\n",
        encoding="utf-8",
    )
    return res
