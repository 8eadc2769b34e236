"""unload's SQL: restore.sql and the schema files it runs, per database either pg_dump's sections (pre-data, the
rows' ``\\copy``, data, post-data) or the files-built schema.sql and constraints.sql; and what the report says about
the schema."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon.catalog.ddl import schema_sql, table_name
from pgsurgeon.db import quote_ident, quote_literal
from pgsurgeon.unload.schema import BUILT_IN_DATABASES, SchemaDump, SchemaUnavailable, foreign_keys_not_valid
from pgsurgeon.unload.schema_step import missing_objects

if TYPE_CHECKING:
    from pgsurgeon.catalog.files import Database, DbCatalog
    from pgsurgeon.catalog.relation import Relation


def safe(name: str) -> str:
    """A name as a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "_"


def dbdir(out: Path, d: Database) -> Path:
    """A database's directory in the unload's output."""
    return out / f"{d.oid}_{safe(d.name)}"


def copy_line(rel: Relation, cols: list[str], path: str, fmt: str) -> str:
    collist = f" ({', '.join(quote_ident(c) for c in cols)})" if cols else ""  # a table of no columns takes none
    opts = " WITH (FORMAT csv)" if fmt == "csv" else ""
    return f"\\copy {table_name(rel)}{collist} FROM {quote_literal(path)}{opts}"


@dataclass
class RestoreWriter:
    out: Path
    pgdata: Path
    major: str
    notes: list[str]
    """The unload's notes: what is said about the schema is added to them."""

    def header(self) -> list[str]:
        return [
            f"-- pgsurgeon unload of {self.pgdata.resolve()} (PostgreSQL {self.major}),"
            f" {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')}",
            f"-- psql -X -v ON_ERROR_STOP=1 -d postgres -f {self.out.resolve() / 'restore.sql'}",
            "-- (if this directory has moved, add -v dir=<its new path>)",
            "\\if :{?dir}",
            "\\else",
            f"\\set dir {quote_literal(str(self.out.resolve()))}",
            "\\endif",
            "\\cd :dir",
        ]

    def write(
        self,
        plans: list[tuple[DbCatalog, list[Relation]]],
        copies: dict[int, list[str]],
        incomplete: set[str],
        outcome: SchemaDump | SchemaUnavailable | None,
    ) -> dict[str, Any]:
        """restore.sql and the schema files it runs (``incomplete``: databases that lost or kept apart rows); what
        the report says about the schema."""
        restore = self.header()
        schema: dict[str, Any] = {"method": "files"}
        if isinstance(outcome, SchemaDump):
            schema = {"method": "pg_dump", "server": outcome.server, "seconds": outcome.seconds, "objects": {}}
            schema.update(catalog_copy_bytes=outcome.copy_bytes, phases=outcome.phases, phases_cpu=outcome.phases_cpu)
            (self.out / "globals.sql").write_text(outcome.globals_sql, encoding="utf-8")
            restore.append("\\ir globals.sql")
            self.notes.extend(outcome.notes)
            self._damaged_catalog(schema, outcome)
        elif isinstance(outcome, SchemaUnavailable):
            schema.update(fell_back=True, why=outcome.why, hint=outcome.hint, missing={})
        for cat, tables in plans:
            d = cat.db
            if isinstance(outcome, SchemaDump):
                schema["objects"][d.name] = outcome.databases[d.oid].objects
                restore += self._pg_dump_part(outcome, d, copies.get(d.oid, []), d.name in incomplete)
                continue
            restore += self._files_part(cat, tables, copies.get(d.oid, []))
            if isinstance(outcome, SchemaUnavailable):
                schema["missing"][d.name] = missing = missing_objects(cat)
                if missing:
                    self.notes.append(
                        f"{d.name}: not recreated (the schema comes from the files: {outcome.why}): "
                        + ", ".join(f"{n} {k}" for k, n in missing.items())
                        + ", and owners and privileges"
                    )
        (self.out / "restore.sql").write_text("\n".join(restore) + "\n", encoding="utf-8")
        return schema

    def _pg_dump_part(self, outcome: SchemaDump, d: Database, copies: list[str], incomplete: bool) -> list[str]:
        """pg_dump's three sections of one database, its rows loaded between them."""
        dump, directory = outcome.databases[d.oid], dbdir(self.out, d)
        post = dump.post
        if incomplete:
            post, changed = foreign_keys_not_valid(post)
            if changed:
                self.notes.append(
                    f"{d.name}: {changed} foreign keys are added NOT VALID, since rows are missing: "
                    "ALTER TABLE … VALIDATE CONSTRAINT once they are dealt with"
                )
        (directory / "pre-data.sql").write_text(dump.pre, encoding="utf-8")
        dump.data.replace(directory / "data.sql")
        (directory / "post-data.sql").write_text(post, encoding="utf-8")
        lines = [f"\\connect {quote_ident(d.name)}"] if d.name in BUILT_IN_DATABASES else []
        lines.append(f"\\ir {directory.name}/pre-data.sql")  # a new database: CREATE DATABASE, \connect
        return [*lines, *copies, f"\\ir {directory.name}/data.sql", f"\\ir {directory.name}/post-data.sql"]

    def _damaged_catalog(self, schema: dict[str, Any], outcome: SchemaDump) -> None:
        """Catalog pages that failed their checks: zeroed in the copy, so the objects on them are not in the dump."""
        damage = outcome.damage
        if not damage.pages:
            return
        schema["damaged_catalog"] = [asdict(p) for p in damage.pages]
        schema["lost_objects"] = damage.lost
        for p in damage.pages:
            self.notes.append(
                f"{p.database}: catalog {p.catalog} ({p.kind}) block {p.block} failed its checks: {p.problem}"
                + (" (left out of the catalog copy: what it held is not in the schema)" if p.kind == "table" else "")
            )
        for database, lost in damage.lost.items():
            self.notes.extend(f"{database}: lost from the schema: {x}" for x in lost)

    def _files_part(self, cat: DbCatalog, tables: list[Relation], copies: list[str]) -> list[str]:
        """The files-built schema.sql and constraints.sql of one database, and its part of restore.sql."""
        d = cat.db
        directory = dbdir(self.out, d)
        ddl = schema_sql(cat, tables)
        (directory / "schema.sql").write_text(
            f"-- schema of database {d.name}, read from the catalog files by pgsurgeon unload\n"
            + "\n".join(ddl.statements)
            + "\n"
            + "".join(f"-- not recovered: {n}\n" for n in ddl.notes),
            encoding="utf-8",
        )
        self.notes.extend(f"{d.name}: {n}" for n in ddl.notes)
        (directory / "constraints.sql").write_text(
            f"-- keys, indexes and foreign keys of database {d.name}, after its data\n" + "\n".join(ddl.post) + "\n",
            encoding="utf-8",
        )
        lines = []
        if d.name not in BUILT_IN_DATABASES:
            create = f"CREATE DATABASE {quote_ident(d.name)} TEMPLATE template0 ENCODING {d.encoding!r}"
            if d.locale_provider == "c":
                create += f" LC_COLLATE {d.collate!r} LC_CTYPE {d.ctype!r}"
            elif d.locale:
                provider = "icu" if d.locale_provider == "i" else "builtin"
                create += f" LOCALE_PROVIDER {provider} LOCALE {d.locale!r}"
            lines.append(create + ";")
        lines += [f"\\connect {quote_ident(d.name)}", f"\\ir {directory.name}/schema.sql", *copies]
        return [*lines, f"\\ir {directory.name}/constraints.sql"]
