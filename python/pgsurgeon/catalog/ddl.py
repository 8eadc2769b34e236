"""SQL that recreates what a catalog describes: type names as format_type prints them, column defaults and
partition bounds from their node trees, and the CREATE statements of schemas, types, sequences and tables. Used by
``unload`` to write schema.sql; what cannot be recovered is said, never guessed."""

from __future__ import annotations

from dataclasses import dataclass, field

from pgsurgeon import core
from pgsurgeon.catalog import nodetree
from pgsurgeon.catalog.files import FIRST_NORMAL_OID, Attribute, DbCatalog
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.types import type_desc
from pgsurgeon.db import quote_ident, quote_literal

# format_type's names for built-in types (src/backend/utils/adt/format_type.c).
_SQL_NAMES = {
    16: "boolean", 20: "bigint", 21: "smallint", 23: "integer", 700: "real", 701: "double precision",
    1042: "character", 1043: "character varying", 1083: "time", 1114: "timestamp", 1184: "timestamp",
    1266: "time", 1560: "bit", 1562: "bit varying", 1700: "numeric", 1186: "interval", 18: '"char"',
}  # fmt: skip
# Interval field masks (utils/datetime.h: YEAR 2, MONTH 1, DAY 3, HOUR 10, MINUTE 11, SECOND 12; INTERVAL_MASK).
_Y, _MO, _D, _H, _MI, _S = 1 << 2, 1 << 1, 1 << 3, 1 << 10, 1 << 11, 1 << 12
_INTERVAL_FIELDS = {
    _Y: "year", _MO: "month", _D: "day", _H: "hour", _MI: "minute", _S: "second", _Y | _MO: "year to month",
    _D | _H: "day to hour", _D | _H | _MI: "day to minute", _D | _H | _MI | _S: "day to second",
    _H | _MI: "hour to minute", _H | _MI | _S: "hour to second", _MI | _S: "minute to second",
}  # fmt: skip
# INTERVAL_FULL_RANGE, INTERVAL_FULL_PRECISION (utils/timestamp.h).
_FULL_RANGE, _FULL_PRECISION = 0x7FFF, 0xFFFF
# VARHDRSZ: char/varchar typmods count it.
_VARHDRSZ = 4


def format_type(cat: DbCatalog, typid: int, typmod: int = -1) -> str:
    t = cat.types.get(typid)
    if t is None:
        return f"oid_{typid}"  # cannot be created: makes the failure visible in schema.sql
    if t.typcategory == "A" and t.typelem and t.typlen == -1 and typid not in (22, 30):
        return format_type(cat, t.typelem, typmod) + "[]"
    base = _SQL_NAMES.get(typid)
    if base is None:
        schema = cat.namespaces.get(t.nspoid, "")
        return t.name if schema == "pg_catalog" else quote_ident(schema, t.name)
    if typmod < 0:
        if typid in (1114, 1083):
            return f"{base} without time zone"
        if typid in (1184, 1266):
            return f"{base} with time zone"
        return base
    if typid in (1042, 1043):
        return f"{base}({typmod - _VARHDRSZ})"
    if typid == 1700:
        m = typmod - _VARHDRSZ
        return f"numeric({(m >> 16) & 0xFFFF},{m & 0xFFFF})"
    if typid in (1560, 1562):
        return f"{base}({typmod})"
    if typid in (1083, 1114):
        return f"{base}({typmod}) without time zone"
    if typid in (1184, 1266):
        return f"{base}({typmod}) with time zone"
    if typid == 1186:
        rng, prec = (typmod >> 16) & _FULL_RANGE, typmod & 0xFFFF
        out = base
        if rng != _FULL_RANGE and rng in _INTERVAL_FIELDS:
            out += " " + _INTERVAL_FIELDS[rng]
        if prec != _FULL_PRECISION:
            out += f"({prec})"
        return out
    return base


@dataclass
class Ddl:
    """schema.sql's statements, and what could not be recovered."""

    statements: list[str] = field(default_factory=list)
    """Before the data: schemas, types, sequences, tables, inheritance, partitions."""
    post: list[str] = field(default_factory=list)
    """After the data: primary keys, unique constraints, indexes, foreign keys."""
    notes: list[str] = field(default_factory=list)


class Expr:
    """Node trees back to SQL, for the node kinds defaults and partition bounds use; None when not recoverable."""

    def __init__(self, cat: DbCatalog) -> None:
        self.cat = cat

    def const(self, n: nodetree.Node) -> str | None:
        typid = n.int("consttype")
        typmod = n.int("consttypmod", -1)
        if n.text("constisnull") == "true":
            return "NULL"
        raw = n.get("constvalue")
        if not isinstance(raw, bytes):
            return None
        desc = type_desc(typid, self.cat.type_rows({typid}))
        if desc is None:
            return None
        try:
            text = core.format_datum(raw, desc, self.cat.files.server_version_num)
        except ValueError:
            return None
        if typid == 2205:  # regclass: the relation's name, as the server prints it
            text = self.cat.names_for(2205).get(text, text)
        return f"{quote_literal(text)}::{format_type(self.cat, typid, typmod)}"

    def sql(self, v: nodetree.Value) -> str | None:
        if not isinstance(v, nodetree.Node):
            return None
        if v.tag == "CONST":
            return self.const(v)
        if v.tag in ("RELABELTYPE", "COERCETODOMAIN", "COERCEVIAIO"):
            arg = self.sql(v.get("arg"))
            typid = v.int("resulttype")
            return None if arg is None else f"({arg})::{format_type(self.cat, typid, v.int('resulttypmod', -1))}"
        if v.tag == "FUNCEXPR":
            proc = self.cat.procs.get(v.int("funcid"))
            args = v.get("args") or []
            if proc is None or not isinstance(args, list):
                return None
            rendered = [self.sql(a) for a in args]
            if any(r is None for r in rendered):
                return None
            if v.text("funcformat") in ("1", "2") and rendered:
                # an explicit or implicit cast; a length coercion's second argument is the typmod, which the
                # column's own type applies again on insert
                return f"({rendered[0]})::{format_type(self.cat, v.int('funcresulttype'))}"
            schema = self.cat.namespaces.get(proc[1], "")
            name = proc[0] if schema == "pg_catalog" else quote_ident(schema, proc[0])
            return f"{name}({', '.join(r for r in rendered if r is not None)})"
        return None

    def default(self, rel: Relation, a: Attribute) -> str | None:
        text = self.cat.defaults.get((rel.oid, a.attnum))
        if text is None:
            return None
        try:
            return self.sql(nodetree.parse(text))
        except (nodetree.NodeTreeError, IndexError, ValueError):
            return None

    def bound(self, text: str | None) -> str | None:
        """``FOR VALUES …`` or ``DEFAULT`` of a partition."""
        if not text:
            return None
        try:
            spec = nodetree.parse(text)
        except (nodetree.NodeTreeError, IndexError, ValueError):
            return None
        if not isinstance(spec, nodetree.Node) or spec.tag != "PARTITIONBOUNDSPEC":
            return None
        if spec.text("is_default") == "true":
            return "DEFAULT"
        strategy = spec.text("strategy")
        if strategy == "h":
            return f"FOR VALUES WITH (MODULUS {spec.int('modulus')}, REMAINDER {spec.int('remainder')})"

        def values(items: nodetree.Value) -> str | None:
            if not isinstance(items, list):
                return None
            out = []
            for it in items:
                if isinstance(it, nodetree.Node) and it.tag == "PARTITIONRANGEDATUM":
                    kind = it.int("kind")
                    if kind != 0:
                        out.append("MINVALUE" if kind < 0 else "MAXVALUE")
                        continue
                    it = it.get("value")
                v = self.sql(it)
                if v is None:
                    return None
                out.append(v)
            return ", ".join(out)

        if strategy == "l":
            vals = values(spec.get("listdatums"))
            return None if vals is None else f"FOR VALUES IN ({vals})"
        if strategy == "r":
            lo, hi = values(spec.get("lowerdatums")), values(spec.get("upperdatums"))
            return None if lo is None or hi is None else f"FOR VALUES FROM ({lo}) TO ({hi})"
        return None


def table_name(rel: Relation) -> str:
    return quote_ident(rel.schema, rel.name)


def live_columns(cat: DbCatalog, rel: Relation) -> list[Attribute]:
    """The columns COPY writes: not dropped, not generated."""
    return [a for a in cat.attributes.get(rel.oid, []) if not a.dropped and not a.generated]


def _type_dependencies(cat: DbCatalog, typid: int) -> list[int]:
    t = cat.types.get(typid)
    if t is None:
        return []
    deps = [x for x in (t.typelem, t.typbasetype, cat.ranges.get(typid, 0)) if x]
    if t.typtype == "c" and t.typrelid:
        deps += [a.typid for a in cat.attributes.get(t.typrelid, []) if not a.dropped]
    return deps


def _create_type(cat: DbCatalog, typid: int, ddl: Ddl) -> None:
    t = cat.types[typid]
    name = quote_ident(cat.namespaces.get(t.nspoid, ""), t.name)
    if t.typtype == "e":
        labels = ", ".join(quote_literal(label) for _, _, label in cat.enums.get(typid, []))
        ddl.statements.append(f"CREATE TYPE {name} AS ENUM ({labels});")
    elif t.typtype == "c":
        cols = ", ".join(
            f"{quote_ident(a.name)} {format_type(cat, a.typid, a.typmod)}"
            for a in cat.attributes.get(t.typrelid, [])
            if not a.dropped
        )
        ddl.statements.append(f"CREATE TYPE {name} AS ({cols});")
    elif t.typtype == "d":
        stmt = f"CREATE DOMAIN {name} AS {format_type(cat, t.typbasetype, t.typtypmod)}"
        if t.typnotnull:
            stmt += " NOT NULL"
        ddl.statements.append(stmt + ";")
        checks = [c.name for c in cat.constraints if c.contypid == typid and c.contype == "c"]
        if checks:
            ddl.notes.append(f"domain {name}: CHECK constraint(s) {', '.join(checks)} not recreated")
    elif t.typtype == "r":
        sub = format_type(cat, cat.ranges.get(typid, 0))
        ddl.statements.append(f"CREATE TYPE {name} AS RANGE (SUBTYPE = {sub});")
    else:
        ddl.notes.append(f"type {name} ({t.typtype}) is not recreated: create it (or its extension) first")


def _types_in_order(cat: DbCatalog, roots: set[int]) -> list[int]:
    """User-defined types the tables need, dependencies first."""
    out: list[int] = []
    seen: set[int] = set()

    def visit(oid: int) -> None:
        if oid in seen or oid < FIRST_NORMAL_OID:
            return
        seen.add(oid)
        t = cat.types.get(oid)
        if t is None:
            return
        for dep in _type_dependencies(cat, oid):
            visit(dep)
        if t.typtype == "c" and cat.relations.get(t.typrelid) and cat.relations[t.typrelid].relkind != "c":
            return  # a table's row type comes with its table
        if t.typtype == "b" and t.typcategory == "A":
            return  # array types come with their element type
        if t.typtype == "m":
            return  # multiranges come with their range
        out.append(oid)

    for oid in sorted(roots):
        visit(oid)
    return out


def schema_sql(cat: DbCatalog, tables: list[Relation]) -> Ddl:
    """schema.sql for ``tables`` of one database: schemas, types, sequences, tables, inheritance, partitions and
    primary keys, in an order that loads."""
    ddl = Ddl()
    expr = Expr(cat)
    chosen = {r.oid for r in tables}
    schemas = sorted({r.schema for r in tables} - {"public"})
    type_roots: set[int] = set()
    for r in tables:
        type_roots.update(a.typid for a in cat.attributes.get(r.oid, []) if not a.dropped)
    types = _types_in_order(cat, type_roots)
    schemas = sorted(set(schemas) | {cat.namespaces.get(cat.types[t].nspoid, "") for t in types} - {"public", ""})
    for s in schemas:
        ddl.statements.append(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(s)};")
    for t in types:
        _create_type(cat, t, ddl)
    # Sequences the defaults use.
    for oid, seq in sorted(cat.sequences.items()):
        rel = cat.relations.get(oid)
        if rel is None or rel.schema in ("pg_catalog", "information_schema"):
            continue
        name = table_name(rel)
        stmt = (
            f"CREATE SEQUENCE {name} AS {format_type(cat, int(seq['seqtypid'] or 20))}"
            f" INCREMENT {seq['seqincrement']} MINVALUE {seq['seqmin']} MAXVALUE {seq['seqmax']}"
            f" START {seq['seqstart']} CACHE {seq['seqcache']}" + (" CYCLE" if seq["seqcycle"] == "t" else "") + ";"
        )
        ddl.statements.append(stmt)
        rows, _absent, _doubt = cat.files.handle.read(cat.db.oid, oid, ["last_value", "is_called"])
        if rows and rows[0][0] is not None:
            called = "true" if rows[0][1] == "t" else "false"
            ddl.statements.append(f"SELECT pg_catalog.setval({quote_literal(name)}, {rows[0][0]}, {called});")
        else:
            ddl.notes.append(f"sequence {name}: its current value could not be read; it restarts at its start")
    attach: list[str] = []
    for rel in tables:
        cols = []
        for a in cat.attributes.get(rel.oid, []):
            if a.dropped:
                continue
            col = f"    {quote_ident(a.name)} {format_type(cat, a.typid, a.typmod)}"
            if a.notnull:
                col += " NOT NULL"
            if a.generated == "v":
                ddl.notes.append(f"{table_name(rel)}.{a.name}: virtual generated column made an ordinary column")
            elif a.generated:
                ddl.notes.append(f"{table_name(rel)}.{a.name}: generated column made an ordinary column")
            elif a.identity:
                ddl.notes.append(f"{table_name(rel)}.{a.name}: identity column made an ordinary column")
            if a.hasdef and not a.generated:
                d = expr.default(rel, a)
                if d is None:
                    ddl.notes.append(f"{table_name(rel)}.{a.name}: default expression not recovered")
                else:
                    col += f" DEFAULT {d}"
            cols.append(col)
        unlogged = "UNLOGGED " if rel.persistence == "u" else ""
        stmt = f"CREATE {unlogged}TABLE {table_name(rel)} (\n" + ",\n".join(cols) + "\n)"
        if rel.relkind == "p":
            strat, keys, exprs = cat.partitioned.get(rel.oid, ("", [], None))
            names = {a.attnum: a.name for a in cat.attributes.get(rel.oid, [])}
            method = {"r": "RANGE", "l": "LIST", "h": "HASH"}.get(strat, "")
            if exprs or not method or any(k not in names for k in keys):
                ddl.notes.append(f"{table_name(rel)}: partition key not recovered (expressions); created as a table")
            else:
                stmt += f" PARTITION BY {method} (" + ", ".join(quote_ident(names[k]) for k in keys) + ")"
        ddl.statements.append(stmt + ";")
        for child, parent, _seq in cat.inherits:
            if child != rel.oid or parent not in chosen:
                continue
            prel = cat.relations[parent]
            if rel.is_partition:
                bound = expr.bound(rel.partbound)
                if bound is None:
                    ddl.notes.append(f"{table_name(rel)}: partition bound not recovered; not attached")
                else:
                    attach.append(f"ALTER TABLE {table_name(prel)} ATTACH PARTITION {table_name(rel)} {bound};")
            else:
                attach.append(f"ALTER TABLE {table_name(rel)} INHERIT {table_name(prel)};")
    ddl.statements.extend(attach)
    _post_data(cat, chosen, ddl)
    return ddl


# pg_constraint.confupdtype/confdeltype (catalog/pg_constraint.h FKCONSTR_ACTION_*).
_FK_ACTIONS = {"r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}


def _post_data(cat: DbCatalog, chosen: set[int], ddl: Ddl) -> None:
    """Primary keys and unique constraints, plain indexes on columns, then foreign keys (NOT VALID: rows lost to
    the damage must not stop the restore; VALIDATE CONSTRAINT tells afterwards)."""
    names_of = {oid: {a.attnum: a.name for a in cat.attributes.get(oid, [])} for oid in chosen}

    def cols(oid: int, keys: list[int]) -> str | None:
        names = names_of.get(oid, {})
        if not keys or any(k not in names for k in keys):
            return None
        return ", ".join(quote_ident(names[k]) for k in keys)

    backing: set[int] = set()
    for c in cat.constraints:
        if c.contype not in ("p", "u") or c.conrelid not in chosen or not c.conislocal:
            continue
        backing.add(c.conindid)
        rel = cat.relations[c.conrelid]
        keycols = cols(rel.oid, c.conkey)
        if keycols is None:
            ddl.notes.append(f"{table_name(rel)}: constraint {c.name} not recreated (expression columns)")
            continue
        kind = "PRIMARY KEY" if c.contype == "p" else "UNIQUE"
        ddl.post.append(f"ALTER TABLE {table_name(rel)} ADD CONSTRAINT {quote_ident(c.name)} {kind} ({keycols});")
    for ix in cat.indexes:
        if ix.table not in chosen or ix.oid in backing or ix.primary:
            continue
        rel, irel = cat.relations[ix.table], cat.relations.get(ix.oid)
        if irel is None or (rel.relkind == "p" and irel.relkind != "I"):
            continue
        if rel.is_partition and any(i == ix.oid for i, _p, _s in cat.inherits):
            continue  # a partition's copy of its parent's index comes with the parent's
        names = names_of.get(ix.table, {})
        if ix.has_expressions or any(k not in names for k in ix.keys):
            ddl.notes.append(f"{table_name(rel)}: index {irel.name} not recreated (expressions or a predicate)")
            continue
        parts = []
        for k, opt in zip(ix.keys, ix.options + [0] * len(ix.keys), strict=False):
            part = quote_ident(names[k])
            if opt & 1:
                part += " DESC"
            if bool(opt & 2) != bool(opt & 1):  # NULLS FIRST is the default only for DESC
                part += " NULLS FIRST" if opt & 2 else " NULLS LAST"
            parts.append(part)
        unique = "UNIQUE " if ix.unique else ""
        # on a partitioned table the index is made on every partition too, as when it was first created
        ddl.post.append(
            f"CREATE {unique}INDEX {quote_ident(irel.name)} ON {table_name(rel)} USING {irel.amname or 'btree'} "
            f"({', '.join(parts)});"
        )
    for c in cat.constraints:
        if c.contype != "f" or c.conrelid not in chosen or not c.conislocal:
            continue
        rel, ref = cat.relations[c.conrelid], cat.relations.get(c.confrelid)
        mine, theirs = cols(c.conrelid, c.conkey), cols(c.confrelid, c.confkey) if ref else None
        if ref is None or c.confrelid not in chosen or mine is None or theirs is None:
            ddl.notes.append(f"{table_name(rel)}: foreign key {c.name} not recreated (its table is not unloaded)")
            continue
        actions = "".join(
            f" ON {event} {_FK_ACTIONS[code]}"
            for event, code in (("UPDATE", c.confupdtype), ("DELETE", c.confdeltype))
            if code in _FK_ACTIONS
        )
        ddl.post.append(
            f"ALTER TABLE {table_name(rel)} ADD CONSTRAINT {quote_ident(c.name)} FOREIGN KEY ({mine}) "
            f"REFERENCES {table_name(ref)} ({theirs}){actions} NOT VALID;"
        )
