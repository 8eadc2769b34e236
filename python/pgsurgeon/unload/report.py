"""unload's report.json and report.txt: rows per table, what was kept apart or lost and why, the schema's source
and its objects (or what the files-built schema leaves out), orphan files, notes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pgsurgeon.salvage.deleted_columns import DELETED_COLUMNS

if TYPE_CHECKING:
    from pgsurgeon.unload.run import UnloadResult


def write_reports(res: UnloadResult) -> None:
    """report.json and report.txt."""
    doc = {
        "cluster": res.facts,
        "seconds": res.seconds,
        "rows": res.rows,
        "kept_apart": res.kept_apart,
        "complete": not res.incomplete,
        "orphans": res.orphans,
        "schema": res.schema,
        "deleted_columns": DELETED_COLUMNS,
        "tables": [t.to_json() for t in res.tables],
        "notes": res.notes,
    }
    (res.out / "report.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"unload of PostgreSQL {res.facts['major']} data directory: {res.rows} rows in {len(res.tables)} tables,"
        f" {res.kept_apart} kept apart, {res.seconds:.1f} s",
        "",
    ]
    for t in res.tables:
        line = f"{t.rel.database}: {t.rel.qualified}: {t.rows} rows"
        if t.kept_apart:
            line += f", {t.kept_apart} kept apart ({t.apart_file})"
        if t.checksum_failures:
            line += f", {t.checksum_failures} pages failed their checksum"
        if t.lost:
            line += f", {len(t.lost)} lost"
        if t.skipped:
            line += f" [{t.skipped}]"
        if t.deleted_file:
            line += f"; {t.deleted_rows} removed row versions in {t.deleted_file}"
            if t.deleted_apart:
                line += f" ({t.deleted_apart} more kept apart)"
        lines.append(line)
        counted = {p["block"] for p in t.pages_lost}
        lines.extend(f"    lost: block {p['block']}: {p['text']}" for p in t.pages_lost[:20])
        lines.extend(
            f"    lost: block {x.get('block')} item {x.get('lp')}: {x.get('reason')}"
            for x in [x for x in t.lost if x.get("block") not in counted][:20]
        )
        lines.extend(f"    uncertain: {u}" for u in t.uncertain)
    lines += _schema_lines(res.schema)
    if res.orphans:
        lines += ["", "relation files no catalog row names (decode one with: pgsurgeon unload FILE --layout TYPES):"]
        lines += [f"  {o['database']}: {o['path']} ({o['blocks']} blocks)" for o in res.orphans]
    if res.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in res.notes]
    (res.out / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _schema_lines(schema: dict[str, Any]) -> list[str]:
    if schema.get("method") == "pg_dump":
        out = ["", f"schema: pg_dump of a started copy of the catalog ({schema['server']}), recreated by restore.sql:"]
        for db, kinds in schema.get("objects", {}).items():
            listed = ", ".join(f"{n} {k.lower()}" for k, n in kinds.items()) or "no objects"
            out.append(f"  {db}: {listed}")
        return out
    out = ["", "schema: from the catalog files (tables, types, sequences, keys, simple indexes)"]
    if schema.get("fell_back"):
        out[-1] += f", since pg_dump could not be used: {schema.get('why')}"
        if schema.get("hint"):
            out.append(f"  hint: {schema['hint']}")
        for db, kinds in schema.get("missing", {}).items():
            listed = ", ".join(f"{n} {k}" for k, n in kinds.items())
            out.append(f"  {db}: not recreated: {listed + ', ' if listed else ''}owners and privileges")
    return out
