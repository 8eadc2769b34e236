"""Type descriptions for the row engine (TypeDesc, crates/core/src/datum/mod.rs), built from pg_type rows however
they were read: through SQL (catalog_types.sql) or from the data files (catalog.files).

A row of ``Types.rows`` is (oid, typname, typtype, typlen, typalign, typbyval, typdelim, typelem, typbasetype,
typcategory, typrelid, subtype, printed_as); ``attrs`` maps a composite's pg_class OID to (attrelid, attnum, attname,
attlen, attalign, attisdropped, atttypid, missing) rows; ``labels`` and ``names`` map type OIDs to {oid text: text}."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgsurgeon.boundary import FieldDesc, TypeDesc
    from pgsurgeon.catalog.sql import Source

# Types whose typelem is set but whose text form is not array_out's (utils/adt/int.c, oid.c).
NOT_ARRAYS = {22, 30}  # int2vector, oidvector
# Types whose values are OIDs printed as catalog names (utils/adt/regproc.c, acl.c; OIDs from catalog/pg_type.dat):
# regproc, regprocedure, regoper, regoperator, regclass, regtype, regnamespace, regrole, regconfig, regdictionary,
# regcollation, and aclitem (role names). catalog_reg_names.sql lists the names per type.
NAMED_TYPES = {24, 2202, 2203, 2204, 2205, 2206, 4089, 4096, 3734, 3769, 4191, 1033}
# Nesting deeper than this (domains over arrays of composites of ranges…) is not followed.
MAX_DEPTH = 32


@dataclass
class Types:
    """What the type descriptions are built from: pg_type rows, enum labels, composite attributes, reg* names."""

    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    labels: dict[int, dict[str, str]] = field(default_factory=dict)
    attrs: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    names: dict[int, dict[str, str]] = field(default_factory=dict)


def type_desc(oid: int, types: Types, depth: int = 0) -> TypeDesc | None:
    """The TypeDesc of type ``oid`` (domains resolved to their base type), None when it cannot be described."""
    if depth > MAX_DEPTH:
        return None
    while True:
        row = types.rows.get(oid)
        if row is None or depth > MAX_DEPTH:
            return None
        _oid, typname, typtype, typlen, typalign, typbyval, typdelim, typelem, typbasetype, typcategory = row[:10]
        typrelid, subtype = int(row[10]), int(row[11])
        if typtype == "d":
            oid = int(typbasetype)
            depth += 1
            continue
        break
    # A type made with CREATE TYPE over a built-in output routine prints as the built-in type with that routine (see
    # catalog_types.sql); the carver knows types by their built-in OID. Not for the reg* and aclitem types: their
    # values print names looked up per type, which are loaded for the built-in OIDs only.
    printed_as = int(row[12])
    if printed_as in NAMED_TYPES:
        printed_as = oid
    desc: TypeDesc = {
        "oid": printed_as,
        "name": typname,
        "typtype": typtype,
        "typlen": typlen,
        "typalign": typalign,
        "typbyval": typbyval,
        "typdelim": typdelim,
        "elem": None,
        "enum_labels": types.labels.get(oid, {}),
        "names": types.names.get(oid, {}),
    }
    if typcategory == "A" and int(typelem) != 0 and typlen == -1 and oid not in NOT_ARRAYS:
        elem = type_desc(int(typelem), types, depth + 1)
        if elem is None:
            return None
        desc["elem"] = elem
    if typtype in ("r", "m"):
        sub = type_desc(subtype, types, depth + 1) if subtype else None
        if sub is None:
            return None
        desc["subtype"] = sub
    if typtype == "c":
        fields: list[FieldDesc] = []
        for _relid, _attnum, attname, attlen, attalign, dropped, atttypid, missing in types.attrs.get(typrelid, []):
            ftype = None if dropped else type_desc(int(atttypid), types, depth + 1)
            if not dropped and ftype is None:
                return None
            fields.append(
                {
                    "name": attname,
                    "attlen": attlen,
                    "attalign": attalign,
                    "dropped": bool(dropped),
                    "type": ftype,
                    "missing": missing,
                }
            )
        if not fields:
            return None
        desc["fields"] = fields
    return desc


def load_types(src: Source, oids: set[int]) -> Types:
    """Every type ``oids`` need to be printed, read through SQL: their base, element, sub and attribute types,
    transitively, with enum labels and the names reg* values print."""
    from pgsurgeon.catalog.sql import rows_of

    types = Types()
    want = set(oids)
    for _ in range(MAX_DEPTH):
        missing = sorted(o for o in want if o not in types.rows)
        relids = sorted(
            {int(r[10]) for r in types.rows.values() if r[2] == "c" and int(r[10])} - set(types.attrs.keys())
        )
        if not missing and not relids:
            break
        if missing:
            for row in rows_of(src, "catalog_types", {"oids": missing}):
                types.rows[int(row[0])] = row
        if relids:
            for relid in relids:
                types.attrs[relid] = []
            for arow in rows_of(src, "catalog_type_attrs", {"relids": relids}):
                types.attrs[int(arow[0])].append(arow)
        want = set(types.rows)
        for row in types.rows.values():
            want.update(int(x) for x in (row[7], row[8], row[11]) if int(x) != 0)
        for attrs in types.attrs.values():
            want.update(int(a[6]) for a in attrs if not a[5] and int(a[6]) != 0)
    enums = [o for o, r in types.rows.items() if r[2] == "e"]
    if enums:
        for typid, label_oid, label in rows_of(src, "catalog_enums", {"oids": enums}):
            types.labels.setdefault(int(typid), {})[str(int(label_oid))] = label
    named = sorted(o for o in types.rows if o in NAMED_TYPES)
    if named:
        for typid, obj, text in rows_of(src, "catalog_reg_names", {"types": named}):
            types.names.setdefault(int(typid), {})[str(int(obj))] = text
    return types
