"""The catalog read from a data directory, with no server: the same facts the SQL resolvers ask the server for
(databases, schemas, relations, columns, types, constraints, defaults, partitions, inheritance), from the catalog
rows the core carves out of the files (crates/core/src/catalog). Rows are visible by pg_xact, so what a rolled back
or later ALTER/DROP left behind is ignored."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgsurgeon import core
from pgsurgeon.catalog.names import RelKey
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.catalog.types import NAMED_TYPES, Types, type_desc
from pgsurgeon.errors import PgSurgeonError

if TYPE_CHECKING:
    from pgsurgeon.boundary import ClusterFacts, ClusterOptions, RelDesc, TypeDesc

# FirstNormalObjectId (access/transam.h): OIDs below it were assigned by initdb.
FIRST_NORMAL_OID = 16384
# INTERNALlanguageId (catalog/pg_language.dat).
INTERNAL_LANGUAGE = 12

# Catalog OIDs (src/include/catalog/pg_*.h).
PG_AUTHID = 1260
PG_DATABASE = 1262
PG_NAMESPACE = 2615
PG_CLASS = 1259
PG_ATTRIBUTE = 1249
PG_TYPE = 1247
PG_PROC = 1255
PG_ENUM = 3501
PG_RANGE = 3541
PG_CONSTRAINT = 2606
PG_ATTRDEF = 2604
PG_INHERITS = 2611
PG_PARTITIONED_TABLE = 3350
PG_SEQUENCE = 2224
PG_AM = 2601
PG_INDEX_OID = 2610

# Encoding names by number (include/mb/pg_wchar.h, enum pg_enc).
ENCODINGS = [
    "SQL_ASCII", "EUC_JP", "EUC_CN", "EUC_KR", "EUC_TW", "EUC_JIS_2004", "UTF8", "MULE_INTERNAL", "LATIN1", "LATIN2",
    "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8", "LATIN9", "LATIN10", "WIN1256", "WIN1258", "WIN866",
    "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5", "ISO_8859_6", "ISO_8859_7", "ISO_8859_8", "WIN1250",
    "WIN1253", "WIN1254", "WIN1255", "WIN1257", "KOI8U",
]  # fmt: skip


def _b(v: str | None) -> bool:
    return v == "t"


def _i(v: str | None) -> int:
    return int(v) if v not in (None, "") else 0


@dataclass
class Database:
    oid: int
    name: str
    encoding: str
    collate: str
    ctype: str
    locale_provider: str
    locale: str | None
    is_template: bool
    allow_connections: bool


def _implied_am(relkind: str) -> str | None:
    """What pg_am leaves unsaid: heap for relations without relam (before 12), "sequence" for sequences."""
    return "heap" if relkind in ("r", "t", "m") else "sequence" if relkind == "S" else None


@dataclass
class Attribute:
    attrelid: int
    attnum: int
    name: str
    typid: int
    attlen: int
    attalign: str
    attbyval: bool
    storage: str
    dropped: bool
    notnull: bool
    hasdef: bool
    hasmissing: bool
    missingval: str | None
    generated: str
    identity: str
    typmod: int
    ndims: int
    collation: int
    islocal: bool


@dataclass
class TypeRow:
    oid: int
    name: str
    nspoid: int
    typtype: str
    typlen: int
    typalign: str
    typbyval: bool
    typdelim: str
    typelem: int
    typbasetype: int
    typcategory: str
    typrelid: int
    typnotnull: bool
    typtypmod: int
    typoutput: int
    typarray: int


@dataclass
class Constraint:
    name: str
    contype: str
    conrelid: int
    contypid: int
    conkey: list[int]
    nspoid: int
    conislocal: bool = True
    conindid: int = 0
    confrelid: int = 0
    confkey: list[int] = field(default_factory=list)
    confupdtype: str = "a"
    confdeltype: str = "a"


@dataclass
class Index:
    oid: int
    table: int
    unique: bool
    primary: bool
    keys: list[int]
    options: list[int]
    """indoption per key: bit 0 DESC, bit 1 NULLS FIRST (catalog/pg_index.h INDOPTION_*)."""
    has_expressions: bool


@dataclass
class DbCatalog:
    """What one database's catalog says, read from its files."""

    files: FilesCatalog
    db: Database
    namespaces: dict[int, str] = field(default_factory=dict)
    relations: dict[int, Relation] = field(default_factory=dict)
    attributes: dict[int, list[Attribute]] = field(default_factory=dict)
    types: dict[int, TypeRow] = field(default_factory=dict)
    enums: dict[int, list[tuple[float, int, str]]] = field(default_factory=dict)
    ranges: dict[int, int] = field(default_factory=dict)
    multiranges: dict[int, int] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    indexes: list[Index] = field(default_factory=list)
    defaults: dict[tuple[int, int], str] = field(default_factory=dict)
    inherits: list[tuple[int, int, int]] = field(default_factory=list)
    partitioned: dict[int, tuple[str, list[int], str | None]] = field(default_factory=dict)
    sequences: dict[int, dict[str, str | None]] = field(default_factory=dict)
    procs: dict[int, tuple[str, int, int, str]] = field(default_factory=dict)
    doubts: list[str] = field(default_factory=list)

    @cached_property
    def indexes_of(self) -> dict[int, list[Index]]:
        """Each table's indexes, by table OID (looked up per table: a scan of every index for each of 20,000 tables
        made an unload of them quadratic)."""
        out: dict[int, list[Index]] = {}
        for ix in self.indexes:
            out.setdefault(ix.table, []).append(ix)
        return out

    def read(self, relid: int, columns: list[str]) -> list[dict[str, str | None]]:
        """Visible rows of catalog ``relid``; none (and a doubt) when it cannot be read at all."""
        try:
            rows, _absent, doubtful = self.files.handle.read(self.db.oid, relid, columns)
        except (ValueError, OSError) as exc:
            self.doubts.append(f"catalog {relid} cannot be read: {str(exc).splitlines()[0]}")
            return []
        if doubtful:
            self.doubts.extend(f"catalog {relid}: {d}" for d in doubtful[:20])
        return [dict(zip(columns, r, strict=True)) for r in rows]

    def load(self) -> DbCatalog:
        """Reads the catalogs the row engine and restore.sql need, each from its own heap file."""
        return self.load_relations().load_rest()

    def load_rest(self) -> DbCatalog:
        """What :meth:`load_relations` leaves unread: columns, types, constraints, defaults and the rest."""
        self._load_attributes()
        self._load_types()
        self._load_constraints()
        self._load_others()
        self.__dict__.pop("indexes_of", None)  # computed before the indexes were read
        return self

    def load_relations(self) -> DbCatalog:
        """Only the relations and their schemas: what names files (pg_attribute, the largest catalog, unread)."""
        for r in self.read(PG_NAMESPACE, ["oid", "nspname"]):
            self.namespaces[_i(r["oid"])] = r["nspname"] or ""
        self._load_classes()
        return self

    def _load_classes(self) -> None:
        ams = {_i(r["oid"]): r["amname"] or "" for r in self.read(PG_AM, ["oid", "amname"])}
        for r in self.read(
            PG_CLASS,
            ["oid", "relname", "relnamespace", "relkind", "relpersistence", "relnatts", "reltoastrelid", "reltype",
             "relispartition", "relpartbound", "relam"],
        ):  # fmt: skip
            oid = _i(r["oid"])
            self.relations[oid] = Relation(
                oid=oid,
                name=r["relname"] or "",
                nspoid=_i(r["relnamespace"]),
                schema=self.namespaces.get(_i(r["relnamespace"]), ""),
                relkind=r["relkind"] or "",
                persistence=r["relpersistence"] or "p",
                natts=_i(r["relnatts"]),
                toast_oid=_i(r["reltoastrelid"]),
                reltype=_i(r["reltype"]),
                is_partition=_b(r["relispartition"]),
                partbound=r["relpartbound"],
                amname=ams.get(_i(r["relam"])) or _implied_am(r["relkind"] or ""),
                database=self.db.name,
            )

    def _load_attributes(self) -> None:
        cols = ["attrelid", "attnum", "attname", "atttypid", "attlen", "attalign", "attbyval", "attstorage",
                "attisdropped", "attnotnull", "atthasdef", "atthasmissing", "attmissingval", "attgenerated",
                "attidentity", "atttypmod", "attndims", "attcollation", "attislocal"]  # fmt: skip
        for r in self.read(PG_ATTRIBUTE, cols):
            relid, attnum = _i(r["attrelid"]), _i(r["attnum"])
            if attnum <= 0 or (relid < FIRST_NORMAL_OID and relid not in self.relations):
                continue
            rel = self.relations.get(relid)
            if rel is None or (relid < FIRST_NORMAL_OID and rel.relkind != "c"):
                continue
            self.attributes.setdefault(relid, []).append(
                Attribute(
                    attrelid=relid,
                    attnum=attnum,
                    name=r["attname"] or "",
                    typid=_i(r["atttypid"]),
                    attlen=_i(r["attlen"]),
                    attalign=r["attalign"] or "c",
                    attbyval=_b(r["attbyval"]),
                    storage=r["attstorage"] or "p",
                    dropped=_b(r["attisdropped"]),
                    notnull=_b(r["attnotnull"]),
                    hasdef=_b(r["atthasdef"]),
                    hasmissing=_b(r["atthasmissing"]),
                    missingval=r["attmissingval"],
                    generated=r["attgenerated"] or "",
                    identity=r["attidentity"] or "",
                    typmod=_i(r["atttypmod"]) if r["atttypmod"] is not None else -1,
                    ndims=_i(r["attndims"]),
                    collation=_i(r["attcollation"]),
                    islocal=_b(r["attislocal"]),
                )
            )
        for attrs in self.attributes.values():
            attrs.sort(key=lambda a: a.attnum)

    def _load_types(self) -> None:
        tcols = ["oid", "typname", "typnamespace", "typtype", "typlen", "typalign", "typbyval", "typdelim",
                 "typelem", "typbasetype", "typcategory", "typrelid", "typnotnull", "typtypmod", "typoutput",
                 "typarray"]  # fmt: skip
        for r in self.read(PG_TYPE, tcols):
            oid = _i(r["oid"])
            self.types[oid] = TypeRow(
                oid=oid,
                name=r["typname"] or "",
                nspoid=_i(r["typnamespace"]),
                typtype=r["typtype"] or "b",
                typlen=_i(r["typlen"]),
                typalign=r["typalign"] or "i",
                typbyval=_b(r["typbyval"]),
                typdelim=r["typdelim"] or ",",
                typelem=_i(r["typelem"]),
                typbasetype=_i(r["typbasetype"]),
                typcategory=r["typcategory"] or "",
                typrelid=_i(r["typrelid"]),
                typnotnull=_b(r["typnotnull"]),
                typtypmod=_i(r["typtypmod"]) if r["typtypmod"] is not None else -1,
                typoutput=_i(r["typoutput"]),
                typarray=_i(r["typarray"]),
            )
        for r in self.read(PG_ENUM, ["oid", "enumtypid", "enumsortorder", "enumlabel"]):
            self.enums.setdefault(_i(r["enumtypid"]), []).append(
                (float(r["enumsortorder"] or 0), _i(r["oid"]), r["enumlabel"] or "")
            )
        for labels in self.enums.values():
            labels.sort()
        for r in self.read(PG_RANGE, ["rngtypid", "rngsubtype", "rngmultitypid"]):
            self.ranges[_i(r["rngtypid"])] = _i(r["rngsubtype"])
            if r["rngmultitypid"]:
                self.multiranges[_i(r["rngmultitypid"])] = _i(r["rngtypid"])

    def _load_constraints(self) -> None:
        con_cols = ["conname", "contype", "conrelid", "contypid", "conkey", "connamespace", "conislocal",
                    "conindid", "confrelid", "confkey", "confupdtype", "confdeltype"]  # fmt: skip

        def int_array(v: str | None) -> list[int]:
            return [int(x) for x in (v or "{}").strip("{}").split(",") if x]

        for r in self.read(PG_CONSTRAINT, con_cols):
            self.constraints.append(
                Constraint(
                    r["conname"] or "", r["contype"] or "", _i(r["conrelid"]), _i(r["contypid"]),
                    int_array(r["conkey"]), _i(r["connamespace"]), _b(r["conislocal"]), _i(r["conindid"]),
                    _i(r["confrelid"]), int_array(r["confkey"]), r["confupdtype"] or "a", r["confdeltype"] or "a",
                )
            )  # fmt: skip
        idx_cols = ["indexrelid", "indrelid", "indisunique", "indisprimary", "indkey", "indoption", "indexprs",
                    "indpred"]  # fmt: skip
        for r in self.read(PG_INDEX_OID, idx_cols):
            self.indexes.append(
                Index(
                    _i(r["indexrelid"]), _i(r["indrelid"]), _b(r["indisunique"]), _b(r["indisprimary"]),
                    [int(x) for x in (r["indkey"] or "").split()], [int(x) for x in (r["indoption"] or "").split()],
                    r["indexprs"] is not None or r["indpred"] is not None,
                )
            )  # fmt: skip

    def _load_others(self) -> None:
        for r in self.read(PG_ATTRDEF, ["adrelid", "adnum", "adbin"]):
            if r["adbin"]:
                self.defaults[(_i(r["adrelid"]), _i(r["adnum"]))] = r["adbin"]
        for r in self.read(PG_INHERITS, ["inhrelid", "inhparent", "inhseqno"]):
            self.inherits.append((_i(r["inhrelid"]), _i(r["inhparent"]), _i(r["inhseqno"])))
        self.inherits.sort()
        for r in self.read(PG_PARTITIONED_TABLE, ["partrelid", "partstrat", "partattrs", "partexprs"]):
            partattrs = [int(x) for x in (r["partattrs"] or "").split()]
            self.partitioned[_i(r["partrelid"])] = (r["partstrat"] or "", partattrs, r["partexprs"])
        seq_cols = ["seqrelid", "seqtypid", "seqstart", "seqincrement", "seqmax", "seqmin", "seqcache", "seqcycle"]
        for r in self.read(PG_SEQUENCE, seq_cols):
            self.sequences[_i(r["seqrelid"])] = r
        for r in self.read(PG_PROC, ["oid", "proname", "pronamespace", "prolang", "prosrc"]):
            self.procs[_i(r["oid"])] = (r["proname"] or "", _i(r["pronamespace"]), _i(r["prolang"]), r["prosrc"] or "")

    # ------------------------------------------------------------------------------------------------ types

    @cached_property
    def _builtin_by_output(self) -> dict[tuple[str, int, bool], int]:
        """(output routine's prosrc, typlen, typbyval) -> the lowest built-in base type printing through it."""
        out: dict[tuple[str, int, bool], int] = {}
        for t in sorted(self.types.values(), key=lambda t: t.oid):
            if t.oid >= FIRST_NORMAL_OID or t.typtype != "b" or t.typcategory == "A":
                continue
            proc = self.procs.get(t.typoutput)
            if proc and proc[2] == INTERNAL_LANGUAGE:
                out.setdefault((proc[3], t.typlen, t.typbyval), t.oid)
        return out

    def _printed_as(self, t: TypeRow) -> int:
        # As catalog_types.sql: a type made with CREATE TYPE over a built-in output routine prints like that type.
        if t.typtype != "b" or t.oid < FIRST_NORMAL_OID or t.typcategory == "A":
            return t.oid
        proc = self.procs.get(t.typoutput)
        if not proc or proc[2] != INTERNAL_LANGUAGE:
            return t.oid
        return self._builtin_by_output.get((proc[3], t.typlen, t.typbyval), t.oid)

    def type_rows(self, oids: set[int]) -> Types:
        """The ``Types`` ``oids`` need (base, element, sub and attribute types, transitively), for type_desc."""
        types = Types()
        want = list(oids)
        seen: set[int] = set()
        while want:
            oid = want.pop()
            if oid in seen or oid == 0:
                continue
            seen.add(oid)
            t = self.types.get(oid)
            if t is None:
                continue
            subtype = self.ranges.get(oid) or self.multiranges.get(oid, 0)
            typrelid = t.typrelid if t.typtype == "c" else 0
            types.rows[oid] = (
                t.oid, t.name, t.typtype, t.typlen, t.typalign, t.typbyval, t.typdelim, t.typelem, t.typbasetype,
                t.typcategory, typrelid, subtype, self._printed_as(t),
            )  # fmt: skip
            want.extend(x for x in (t.typelem, t.typbasetype, subtype) if x)
            if typrelid:
                rows = []
                for a in self.attributes.get(typrelid, []):
                    rows.append(
                        (typrelid, a.attnum, a.name, a.attlen, a.attalign, a.dropped, a.typid, self.missing_text(a))
                    )
                    if not a.dropped:
                        want.append(a.typid)
                types.attrs[typrelid] = rows
            if t.typtype == "e":
                types.labels[oid] = {str(o): label for _, o, label in self.enums.get(oid, [])}
        for oid in types.rows:
            if oid in NAMED_TYPES:
                types.names[oid] = self.names_for(oid)
        return types

    def names_for(self, typid: int) -> dict[str, str]:
        """What reg* values print, as the server would with the default search_path (schemas other than
        pg_catalog and public are written out)."""

        def qualified(nsp: int, name: str) -> str:
            schema = self.namespaces.get(nsp, "")
            return name if schema in ("pg_catalog", "public") else f"{schema}.{name}"

        if typid == 2205:  # regclass
            return {str(o): qualified(r.nspoid, r.name) for o, r in self.relations.items()}
        if typid == 4089:  # regnamespace
            return {str(o): n for o, n in self.namespaces.items()}
        if typid == 24:  # regproc
            return {str(o): qualified(p[1], p[0]) for o, p in self.procs.items()}
        if typid in (4096, 1033):  # regrole, aclitem
            return self.files.roles
        return {}

    def missing_text(self, a: Attribute) -> str | None:
        """attmissingval's one value as text (rows written before the column was added hold it)."""
        if not a.hasmissing or a.dropped or not a.missingval or not a.missingval.startswith("\\x"):
            return None
        desc = type_desc(a.typid, self.type_rows({a.typid}))
        if desc is None:
            return None
        return core.missing_value(bytes.fromhex(a.missingval[2:]), desc, self.files.server_version_num)

    def column_type(self, a: Attribute) -> TypeDesc | None:
        return type_desc(a.typid, self.type_rows({a.typid}))

    @cached_property
    def type_names(self) -> dict[int, str]:
        """pg_type's names by OID: from the types :meth:`load` read, else only these two columns (what a scan
        needs; the whole of pg_type is ~20 % of a catalog read)."""
        if self.types:
            return {oid: t.name for oid, t in self.types.items()}
        return {_i(r["oid"]): r["typname"] or "" for r in self.read(PG_TYPE, ["oid", "typname"])}

    def rel_desc(self, rel: Relation) -> RelDesc:
        """RelDesc for the core (crates/core/src/format/tuple/): every attribute, dropped ones included, built by the
        core from its own pg_attribute (read once when the database is opened). As :meth:`_load_attributes`, a
        system catalog is not described (its rows are checked without)."""
        if rel.oid >= FIRST_NORMAL_OID or rel.relkind == "c":
            return self.files.handle.table_desc(self.db.oid, rel.oid, rel.natts)
        return {"natts": rel.natts, "has_toast": rel.toast_oid != 0, "toast_relid": rel.toast_oid, "attrs": []}

    def user_tables(self) -> list[Relation]:
        """Tables holding rows: ordinary tables and partitions, and materialized views, outside the system
        schemas (and not temporary)."""
        return [
            r
            for r in sorted(self.relations.values(), key=lambda r: (r.schema, r.name))
            if r.oid >= FIRST_NORMAL_OID
            and r.relkind in ("r", "p", "m")
            and r.persistence != "t"
            and r.schema not in ("pg_catalog", "information_schema", "pg_toast")
            and not r.schema.startswith(("pg_temp_", "pg_toast_temp_"))
        ]

    def locate(self, oid: int) -> tuple[str, int] | None:
        """(path of segment 0 relative to the data directory, blocks) of a relation's main fork."""
        loc = self.files.handle.locate(self.db.oid, oid)
        return None if loc is None else (loc[3], loc[4])


class CatalogUnreadable(PgSurgeonError):
    """The catalog cannot be read from the files: one line naming the file, and what to do about it."""


def _catalog_hint(pgdata: Path, reason: str) -> str:
    """What to do, by what stopped the read (the core's message names the file)."""
    if "pg_filenode.map" in reason:
        return (
            "the relation map (where the core catalogs' files are) is lost or damaged: restore that file from a "
            "backup of the same cluster (it changes only on VACUUM FULL or CLUSTER of a mapped catalog); "
            f"'pgsurgeon files {pgdata}' lists the relation files without it"
        )
    if "pg_control" in reason:
        return f"pg_control is damaged: 'pgsurgeon control --plan {pgdata}' derives its values from the other files"
    if "holds no database" in reason:
        return "base/ has no database directory with its relation map: check the path, or restore base/ from a backup"
    return f"'pgsurgeon scan {pgdata}' names the damaged files; restore them from a backup of the same cluster"


def catalog_unreadable(pgdata: Path, exc: Exception) -> CatalogUnreadable:
    """A core error while reading the catalog, as one line naming the file and a hint."""
    reason = (str(exc).strip().splitlines() or ["unknown error"])[0]
    return CatalogUnreadable(f"cannot read the catalog of {pgdata}: {reason}", hint=_catalog_hint(pgdata, reason))


class FilesCatalog:
    """A data directory's catalog, read from its files (read-only). Raises :class:`CatalogUnreadable` when the
    files do not give it (pg_control, a relation map or a core catalog lost)."""

    def __init__(self, pgdata: Path, options: ClusterOptions | None = None) -> None:
        self.pgdata = pgdata
        try:
            self.handle = core.files_catalog(pgdata, options or {})
        except (ValueError, OSError) as exc:
            raise catalog_unreadable(pgdata, exc) from None
        self.facts: ClusterFacts = self.handle.facts()
        self._dbs: dict[int, DbCatalog] = {}
        self._named: dict[int, DbCatalog] = {}
        """Databases read only as far as :meth:`relations_of` goes; :meth:`database` reads the rest of them."""

    @property
    def server_version_num(self) -> int:
        return int(self.facts["server_version_num"])

    @property
    def block_size(self) -> int:
        return int(self.facts["blcksz"])

    @cached_property
    def roles(self) -> dict[str, str]:
        rows, _absent, _doubt = self.handle.read(0, PG_AUTHID, ["oid", "rolname"])
        return {r[0] or "": r[1] or "" for r in rows}

    def databases(self) -> list[Database]:
        cols = ["oid", "datname", "encoding", "datcollate", "datctype", "datistemplate", "datallowconn",
                "datlocprovider", "daticulocale", "datlocale"]  # fmt: skip
        try:
            rows, _absent, _doubt = self.handle.read(0, PG_DATABASE, cols)
        except (ValueError, OSError) as exc:
            raise catalog_unreadable(self.pgdata, exc) from None
        out = []
        for row in rows:
            r = dict(zip(cols, row, strict=True))
            enc = _i(r["encoding"])
            out.append(
                Database(
                    oid=_i(r["oid"]),
                    name=r["datname"] or "",
                    encoding=ENCODINGS[enc] if 0 <= enc < len(ENCODINGS) else str(enc),
                    collate=r["datcollate"] or "",
                    ctype=r["datctype"] or "",
                    locale_provider=r["datlocprovider"] or "c",
                    locale=r["datlocale"] or r["daticulocale"],
                    is_template=_b(r["datistemplate"]),
                    allow_connections=_b(r["datallowconn"]),
                )
            )
        return sorted(out, key=lambda d: d.oid)

    def database(self, db: Database) -> DbCatalog:
        if db.oid not in self._dbs:
            named = self._named.pop(db.oid, None)
            self._dbs[db.oid] = named.load_rest() if named is not None else DbCatalog(self, db).load()
        return self._dbs[db.oid]

    def relations_of(self, db: Database) -> DbCatalog:
        """``db``'s catalog as far as naming and describing its relation files goes: the whole of it when
        :meth:`database` read it already, else only pg_namespace, pg_am and pg_class (a scan, or unload deciding
        which databases hold tables, reads no more)."""
        if db.oid in self._dbs:
            return self._dbs[db.oid]
        if db.oid not in self._named:
            self._named[db.oid] = DbCatalog(self, db).load_relations()
        return self._named[db.oid]


PG_INDEX = 2610
# relkinds with storage (catalog/pg_class.h): table, index, sequence, TOAST table, materialized view.
_STORAGE_KINDS = ("r", "i", "S", "t", "m")


def relation_index(
    fc: FilesCatalog, descs: bool = True, system_only: bool = False
) -> tuple[dict[RelKey, Relation], list[list[Any]]]:
    """Names of every relation file, and what a scan needs to check each (the files source of what
    relation_names.sql and scan_metadata.sql ask a server). ``descs``: with each table's columns, for the checks of
    its tuples' attributes, left to the core to read from ``fc`` (``desc_in_catalog``: a scanner given this
    catalog's handle fills them in). ``system_only``: the system catalogs' files
    alone (unload's catalog copy checks no other)."""
    names: dict[RelKey, Relation] = {}
    metas: list[list[Any]] = []
    for d in fc.databases():
        if d.allow_connections:
            _index_database(fc, fc.relations_of(d), descs, system_only, names, metas)
    return names, metas


def _index_database(
    fc: FilesCatalog,
    cat: DbCatalog,
    descs: bool,
    system_only: bool,
    names: dict[RelKey, Relation],
    metas: list[list[Any]],
) -> None:
    """:func:`relation_index` for one database."""
    heap_of = {_i(r["indexrelid"]): _i(r["indrelid"]) for r in cat.read(PG_INDEX, ["indexrelid", "indrelid"])}
    wanted = [
        (oid, r)
        for oid, r in sorted(cat.relations.items())
        if r.relkind in _STORAGE_KINDS and r.persistence != "t" and not (system_only and oid >= FIRST_NORMAL_OID)
    ]
    # every relation's file, its index's table's and its TOAST table's, in one call into the core
    asked = sorted({oid for oid, _ in wanted} | set(heap_of.values()) | {r.toast_oid for _, r in wanted if r.toast_oid})
    keys = dict(zip(asked, fc.handle.keys(cat.db.oid, asked), strict=True))
    for oid, r in wanted:
        k = keys[oid]
        if k is None:
            continue
        # a copy, the catalog's own object kept as read (copy.copy, or dataclasses.replace running __init__ again,
        # was most of this loop for a schema of 80,000 relations)
        named = object.__new__(Relation)
        named.__dict__.update(r.__dict__)
        named.database, named.relfilenode = ("" if k[1] == 0 else cat.db.name), k[2]
        names[k] = named
        # every index names its table: the core checks the TIDs of the kinds that carry them, scan -t picks a
        # table's indexes (BRIN's too) by it
        heap = keys.get(heap_of[oid]) if oid in heap_of else None
        toast = keys.get(r.toast_oid) if r.toast_oid else None
        described = descs and r.relkind in ("r", "m")
        # a user table's columns are described by the core from the catalog it read (the scanner is given it); a
        # system catalog's description holds no columns
        in_catalog = [cat.db.oid, oid] if described and oid >= FIRST_NORMAL_OID else None
        meta = {
            "kind": r.kind,
            "natts": r.natts,
            "heap": list(heap) if heap else None,
            "desc": cat.rel_desc(r) if described and in_catalog is None else None,
            "desc_in_catalog": in_catalog,
            "toast": list(toast) if toast else None,
            "toast_name": r.name if r.relkind == "t" else None,
        }
        metas.append([list(k), meta])


def names_from_files(pgdata: Path) -> dict[RelKey, Relation]:
    """Relation names from the catalog in the data files; empty when it cannot be read there."""
    try:
        return relation_index(FilesCatalog(pgdata))[0]
    except (ValueError, OSError, CatalogUnreadable):
        return {}


def file_key(path: Path) -> tuple[Path, RelKey] | None:
    """(data directory, key) of a relation segment path: base/<db>/<node>, global/<node> or
    pg_tblspc/<spc>/<version dir>/<db>/<node> (forks and segment suffixes allowed)."""
    parts = path.resolve().parts
    node_text = parts[-1].split(".")[0].split("_")[0]
    if not node_text.isdigit() or len(parts) < 3:
        return None
    node = int(node_text)
    if parts[-2] == "global":
        return Path(*parts[:-2]), (1664, 0, node)
    if len(parts) >= 4 and parts[-3] == "base" and parts[-2].isdigit():
        return Path(*parts[:-3]), (1663, int(parts[-2]), node)
    if len(parts) >= 6 and parts[-5] == "pg_tblspc" and parts[-4].isdigit() and parts[-2].isdigit():
        return Path(*parts[:-5]), (int(parts[-4]), int(parts[-2]), node)
    return None
