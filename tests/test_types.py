"""Every storable type, carved from the data files, prints byte for byte as the server prints it.

The list of types comes from the server's pg_type (base, range and multirange types in pg_catalog), so a type a
new release adds fails the test until it has sample values here or a reasoned exclusion. Each type gets a column and
an array column; an enum, a domain, composites (nested, with a dropped attribute, in an array) and TOAST-ed values
(pglz, lz4 where the server has it, inline-compressed, external compressed and uncompressed) come on top. The carved
CSV must equal ``COPY (SELECT …) TO STDOUT (FORMAT csv, HEADER)`` run with the salvage session's settings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fix_pg import exec_sql
from pgsurgeon.catalog.sql import resolve_relation
from pgsurgeon.lab import LabCluster
from pgsurgeon.salvage import catalog
from pgsurgeon.salvage.engine import SalvageOptions, salvage
from pgsurgeon.salvage.session import OUTPUT_SETTINGS

# Types no table can hold a value of: their input functions reject every value (the server alone builds them).
EXCLUDED = {
    "pg_node_tree": "pg_node_tree_in rejects all input (a CREATE TABLE AS over a catalog stores it: tested below)",
    "pg_ndistinct": "pg_ndistinct_in rejects all input (extended statistics data)",
    "pg_dependencies": "pg_dependencies_in rejects all input (extended statistics data)",
    "pg_mcv_list": "pg_mcv_list_in rejects all input (extended statistics data)",
    "pg_brin_bloom_summary": "brin_bloom_summary_in rejects all input (BRIN index internals)",
    "pg_brin_minmax_multi_summary": "brin_minmax_multi_summary_in rejects all input (BRIN index internals)",
    "gtsvector": "gtsvectorin rejects all input (GiST index internals)",
}

# Sample values per type, as SQL literals; (literal, minimum server_version_num) for newer syntax.
V = str | tuple[str, int]
VALUES: dict[str, list[V]] = {
    "bool": ["true", "false"],
    "bytea": [r"'\x00ff5c22'", "''", r"'\x'"],
    "char": ["'a'", r"'\377'", "' '", "''"],
    "name": ["'abc'", "'with space \"q\", comma'", "''"],
    "int8": ["9223372036854775807", "-9223372036854775808", "0"],
    "int2": ["32767", "-32768", "0"],
    "int2vector": ["'1 2 -3'", "''", "'32767'"],
    "int4": ["2147483647", "-2147483648", "7"],
    "regproc": ["'now'", "'0'", "'999999'", "'int4pl'"],
    "text": ["'hello'", "''", "E'tab\\there \"q\" \\\\ back,comma\\nnl\\r{x}'", "'ünïcödé ✓'", "'NULL'", "'\\.'"],
    "oid": ["4294967295", "0", "1"],
    "tid": ["'(0,1)'", "'(4294967295,65535)'", "'(0,0)'"],
    "xid": ["'4294967295'", "'3'"],
    "cid": ["'4294967295'", "'0'"],
    "oidvector": ["'1 2 4294967295'", "''"],
    "json": ['\'{"a" : [1, 2.50, "x"] ,"b":null }\'', "'null'", "'  \"str\" '", "'[]'"],
    "xml": ["'<a x=\"1\">t &amp; u</a>'", "'text only'", "''"],
    "point": ["'(1.5,-2)'", "'(1e300,-0)'", "'(NaN,Infinity)'", "'(0.1,1e-5)'"],
    "lseg": ["'[(0,0),(1,1.5)]'", "'[(-1e-300,2),(3,4)]'"],
    "path": ["'[(0,0),(1,1),(2,0)]'", "'((0,0),(1,1))'", "'[(1,2)]'"],
    "box": ["'(1,1),(0,0)'", "'(0,0),(3,2.5)'", "'(-1,-1),(-1,-1)'"],
    "polygon": ["'((0,0),(1,1),(2,0))'", "'((1,2))'"],
    "line": ["'{1,-1,0}'", "'{0.5,2,-3}'"],
    "cidr": ["'10.1.0.0/16'", "'2001:db8::/32'", "'192.168.1.5/32'", "'::/0'"],
    "float4": [
        "'1.17549435e-38'",
        "'16777217'",
        "1.1",
        "'NaN'",
        "'-Infinity'",
        "'3.4028235e38'",
        "'1e-45'",
        "'-0'",
        "'123456'",
        "'1e6'",
        "'0.0001'",
    ],
    "float8": [
        "'5e-324'",
        "'1e22'",
        "'9007199254740993'",
        "'0.30000000000000004'",
        "'-1.5e-7'",
        "0.1",
        "'1e-310'",
        "'Infinity'",
        "'-0'",
        "'1.7976931348623157e308'",
        "'1e15'",
        "'123456789012345'",
    ],
    "circle": ["'<(1,2),3>'", "'<(0,0),0.5>'"],
    "macaddr8": ["'08:00:2b:01:02:03:04:05'", "'08:00:2b:01:02:03'"],
    "money": ["'12.34'", "'-92233720368547758.08'", "'0'", "'1000000'", "'-0.05'", "'92233720368547758.07'"],
    "macaddr": ["'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'"],
    "inet": ["'192.168.0.1/24'", "'::ffff:1.2.3.4'", "'10.0.0.1'", "'fe80::1/64'", "'::'", "'1:0:0:1:0:0:0:1'"],
    "aclitem": ["'postgres=arwdDxt/postgres'", "'=r*w/postgres'", "'\"weird role\"=U*C/postgres'"],
    "bpchar": ["'ab  '", "''", "'x'"],
    "varchar": ["'x'", "'with,comma'", "''"],
    "date": ["'2024-02-29'", "'infinity'", "'-infinity'", "'4713-01-01 BC'", "'5874897-12-31'", "'0001-01-01'"],
    "time": ["'00:00:00'", "'23:59:59.999999'", "'24:00:00'", "'12:34:56.5'"],
    "timestamp": [
        "'2024-01-02 03:04:05.123456'",
        "'infinity'",
        "'-infinity'",
        "'4713-01-01 00:00:00 BC'",
        "'294276-12-31 23:59:59.999999'",
        "'1999-12-31 23:59:59.5'",
    ],
    "timestamptz": [
        "'2024-06-01 12:00:00+05:30'",
        "'infinity'",
        "'-infinity'",
        "'4713-01-01 00:00:00+00 BC'",
        "'0044-03-15 12:00:00.000001+00 BC'",
    ],
    "interval": [
        "'1 year 2 mons 3 days 04:05:06.789'",
        "'-1 year -2 mons +3 days -04:05:06'",
        "'0'",
        "'-178000000 years'",
        "'1 day -00:00:01'",
        "'-2147483648 days -2147483648 mons'",
        "'-00:00:00.000001'",
        "'1 mon -1 days'",
        "'2147483647 mons 2147483647 days 2562047788:00:54.775807'",
        ("'infinity'", 170000),
        ("'-infinity'", 170000),
    ],
    "timetz": ["'12:00:00+05:30'", "'00:00:01-15:59:59'", "'23:59:59.999999+00'", "'01:02:03.25-01:02:03'"],
    "bit": ["B'1'", "B'0'"],
    "varbit": ["B'1011001110001'", "B''", "B'1'", "B'11111111'"],
    "numeric": [
        "'1234.5678'",
        "'-0.000001'",
        "'NaN'",
        "'Infinity'",
        "'-Infinity'",
        "'0'",
        "'1e100'",
        "'0.00'",
        "'-123456789012345678901234567890.123456789'",
        "'1e-130'",
        "'123456789e200'",
        "'0.0000000000000000000001'",
        "'9999.9999'",
    ],
    "refcursor": ["'cur'", "''"],
    "regprocedure": ["'now()'", "'abs(integer)'", "'0'", "'t_schema.\"Odd Func\"(integer)'"],
    "regoper": ["'||/'", "'0'"],
    "regoperator": ["'+(integer,integer)'", "'-(NONE,integer)'"],
    "regclass": ["'pg_class'", "'t_types'", "'0'", "'123456789'", "'t_schema.\"Odd Table\"'"],
    "regtype": ["'integer'", "'character varying'", "'timestamp with time zone'", "'0'", "'t_schema.\"Odd Type\"'"],
    "uuid": [
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
        "'00000000-0000-0000-0000-000000000000'",
        "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
    ],
    "txid_snapshot": ["'10:20:10,14,15'", "'1:1:'"],
    "pg_lsn": ["'0/18800'", "'FFFFFFFF/FFFFFFFF'", "'0/0'", "'1/A'"],
    "tsvector": ["'a fat cat:1A,3B sat:2C on:4 the mat''s'", "''", r"'back\\slash:1,16383D'", "'x:1,2,3'"],
    "tsquery": [
        "'fat & (rat | cat) & !dog'",
        "'a <-> b <2> c'",
        "'x:* & y:AB & z:*CD'",
        "''",
        "'!(a <-> b)'",
        "'(a | b) <-> c'",
        "'a <-> (b <-> c)'",
        "'!!a | (b & c)'",
        r"'''q''''t'' & \\'",
    ],
    "regconfig": ["'english'", "'simple'", "'0'"],
    "regdictionary": ["'simple'", "'english_stem'"],
    "jsonb": [
        '\'{"b": [1, 2.50, {"c": null}], "a": "x\\"y", "e": "\\u00e9\\n\\t"}\'',
        "'[]'",
        "'\"s\"'",
        "'1e-7'",
        '\'{"": true, "long key": false}\'',
        "'-0.0'",
        "'[[[1]], {}]'",
        '\'{"k": "\\u0001\\u001f\\\\\\/", "n": 123456789012345678901234567890.5, "z": 0.000}\'',
    ],
    "int4range": ["'[1,10)'", "'empty'", "'(,5]'", "'[3,)'", "'(,)'"],
    "numrange": ["'[1.5,2.25]'", "'(,0)'", "'empty'", "'(-Infinity,Infinity)'"],
    "tsrange": ["'[2024-01-01,2024-02-01)'", "'(,infinity]'", '\'["2024-01-01 10:00","2024-01-01 11:00"]\''],
    "tstzrange": ["'[2024-01-01,2024-02-01)'", "'empty'"],
    "daterange": ["'[2024-01-01,2024-01-31]'", "'(-infinity,infinity)'", "'[2000-01-01,)'"],
    "int8range": ["'[-9223372036854775808,9223372036854775807)'", "'(0,1]'"],
    "jsonpath": [
        "'$.a[*] ? (@ > 1)'",
        "'strict $.\"b c\".**{2 to last}'",
        "'$.x.datetime(\"HH24:MI\")'",
        '\'lax $ ? (@ like_regex "^ab.*c" flag "i")\'',
        "'$[1, 2 to 5, last]'",
        "'-$.a + 2 * (3 - $.b) == 1 && !(exists($.c)) || ($ starts with \"x\") is unknown'",
        "'$.a == $v && $.* == $.** && $.**{3} == true && null == false'",
        "'$.type().size().abs().floor().ceiling().double().keyvalue()'",
        ("'$.a.bigint().boolean().date().integer().number().string()'", 170000),
        ("'$.decimal(4,2).time().time_tz(3).timestamp().timestamp_tz(1)'", 170000),
        "'(1).type()'",
        "'1 + 2.5e3'",
        "'$.a ? (@.b == -1.5)'",
        "'$.\"\\u0001x\"'",
        "'-(-1)'",
        "'(1).a'",
    ],
    "regnamespace": ["'pg_catalog'", "'public'", "'0'", "'\"Odd Schema\"'"],
    "regrole": ["'postgres'", "'\"weird role\"'", "'0'"],
    "regcollation": ["'\"C\"'", "'\"POSIX\"'", "'0'", "'ucs_basic'"],
    "int4multirange": ["'{[1,3), [5,8)}'", "'{}'", "'{(,1], [3,)}'"],
    "nummultirange": ["'{[1.5,2)}'", "'{}'"],
    "tsmultirange": ["'{[2024-01-01,2024-01-02), [2024-02-01,)}'"],
    "tstzmultirange": ["'{(,2024-01-01)}'"],
    "datemultirange": ["'{[2024-01-01,2024-01-05), [2024-01-07,2024-01-09), [2024-02-01,2024-02-02)}'", "'{}'"],
    "int8multirange": ["'{[1,2), [3,4), [5,6), [7,8), [9,10), [11,12)}'"],
    "pg_snapshot": ["'10:20:10,14,15'", "'5:5:'"],
    "xid8": ["'18446744073709551615'", "'0'"],
}

SETUP = """
CREATE ROLE "weird role";
CREATE SCHEMA t_schema;
CREATE SCHEMA "Odd Schema";
CREATE TABLE t_schema."Odd Table" (x int);
CREATE TYPE t_schema."Odd Type" AS ENUM ('z');
CREATE FUNCTION t_schema."Odd Func"(integer) RETURNS integer LANGUAGE sql AS 'SELECT 1';
CREATE TYPE t_enum AS ENUM ('a', 'b c', 'quote"d', '');
CREATE DOMAIN t_dom AS int4 CHECK (VALUE > 0);
CREATE DOMAIN t_tdom AS text[];
CREATE TYPE t_comp AS (i int, gone text, t text, d date, arr int[], e t_enum, r int4range, n numeric, b bool);
ALTER TYPE t_comp DROP ATTRIBUTE gone;
CREATE TYPE t_nest AS (c t_comp, tags text[], cs t_comp[], j jsonb);
CREATE TYPE t_textrange AS RANGE (subtype = text, collation = "C");
CREATE TABLE t_row (a int, gone int);
"""

EXTRA_COLUMNS: list[tuple[str, str, list[str]]] = [
    ("x_enum", "t_enum", ["'a'", "'b c'", "'quote\"d'", "''"]),
    ("x_dom", "t_dom", ["1", "2147483647"]),
    ("x_tdom", "t_tdom", ["'{a,\"b c\",NULL}'", "'{}'"]),
    ("x_char5", "char(5)", ["'ab'", "'abcde'", "''"]),
    ("x_char5arr", "char(5)[]", ["ARRAY['ab', NULL, '']::char(5)[]", "'[0:0]={\"a b\"}'"]),
    ("x_domarr", "t_dom[]", ["ARRAY[1, NULL, 3]::t_dom[]"]),
    (
        "x_textrange",
        "t_textrange",
        ['\'["a,b","c\\"d"]\'', "'[\"\",z)'", "'(\" sp \",)'", "'empty'", "'[(,\"x)\"]'"],
    ),
    ("x_row", "t_row", ["ROW(1, 2)", "ROW(NULL, NULL)"]),
    ("x_textmulti", "t_textmultirange", ["'{[a,b), [\"c d\",e]}'", "'{}'"]),
    ("x_textranges", "t_textrange[]", ["ARRAY['[a,b)'::t_textrange, NULL, 'empty']"]),
    ("x_varchar3", "varchar(3)", ["'abc'"]),
    ("x_numeric", "numeric(10,3)", ["1.5", "-0.001", "0"]),
    ("x_bit13", "bit(13)", ["B'1010101010101'"]),
    ("x_ts2", "timestamp(2)", ["'2024-01-01 00:00:00.126'"]),
    (
        "x_comp",
        "t_comp",
        [
            "ROW(1, 'a b', '2024-01-01', ARRAY[1,NULL,3], 'b c', '[1,5)', 1.50, true)",
            "ROW(NULL, '', NULL, '{}', NULL, 'empty', 'NaN', NULL)",
            "ROW(-1, 'q\"uo\\\\te,(x)', 'infinity', '[0:1]={7,8}', 'quote\"d', '(,)', -0.0, false)",
        ],
    ),
    (
        "x_nest",
        "t_nest",
        [
            "ROW(ROW(2, 'x', '2000-01-01', NULL, 'a', NULL, 3, true)::t_comp, ARRAY['p q', NULL, ''],"
            " ARRAY[ROW(3, 'y', NULL, NULL, NULL, NULL, NULL, NULL)::t_comp, NULL], '{\"k\": [1, \"v\"]}')",
            "ROW(NULL, NULL, '{}', 'null')",
        ],
    ),
    (
        "x_comps",
        "t_comp[]",
        [
            "ARRAY[ROW(1, 't', NULL, NULL, 'a', NULL, NULL, NULL)::t_comp, NULL,"
            " ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::t_comp]"
        ],
    ),
]


def _conn(cluster: LabCluster) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection with the salvage sessions' output settings."""
    opts = " ".join(
        f"-c {k}={v.replace(' ', chr(92) + ' ')}" for k, v in OUTPUT_SETTINGS.items() if k != "client_encoding"
    )
    return psycopg.connect(cluster.dsn(), autocommit=True, options=opts, client_encoding="UTF8")


def _literal(v: V, version: int) -> str | None:
    if isinstance(v, tuple):
        return v[0] if version >= v[1] else None
    return v


def _values(name: str, version: int) -> list[str]:
    return [x for x in (_literal(v, version) for v in VALUES[name]) if x is not None]


def _qtype(name: str) -> str:
    return 'pg_catalog."' + name + '"'


def _build(cluster: LabCluster) -> tuple[str, list[str]]:
    """Create and fill the table; returns its name and the SELECT list the server must print."""
    with _conn(cluster) as conn:
        version = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        conn.execute(SETUP)
        types = [
            r[0]
            for r in conn.execute(
                """SELECT t.typname::text FROM pg_type t
                   WHERE t.typnamespace = 'pg_catalog'::regnamespace AND t.typisdefined
                     AND t.typtype IN ('b', 'r', 'm')
                     AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.typarray = t.oid)
                   ORDER BY t.oid"""
            ).fetchall()
        ]
        unknown = [t for t in types if t not in VALUES and t not in EXCLUDED]
        assert not unknown, f"types with neither sample values nor an exclusion: {unknown}"
        has_array = {
            r[0]
            for r in conn.execute(
                "SELECT typname::text FROM pg_type WHERE typnamespace = 'pg_catalog'::regnamespace AND typarray <> 0"
            ).fetchall()
        }
        lz4 = (
            "lz4"
            in conn.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'").fetchone()[0]
        )  # type: ignore[index]
        try:
            conn.execute("SELECT '<a/>'::xml")
            xml = True
        except psycopg.errors.FeatureNotSupported:
            xml = False  # built without libxml (the embedded 18): xml columns hold NULLs only
        cols: list[tuple[str, str, list[str]]] = []
        for t in types:
            if t in EXCLUDED:
                continue
            vals = _values(t, version) if xml or t != "xml" else ["NULL"]
            cols.append((f"c_{t}", _qtype(t), vals))
            if t in has_array:
                at = _qtype(t) + "[]"
                arrays = []
                for i in range(len(vals)):
                    a, b = vals[i], vals[(i + 1) % len(vals)]
                    ca, cb = f"CAST({a} AS {_qtype(t)})", f"CAST({b} AS {_qtype(t)})"
                    if i % 3 == 0:
                        arrays.append(f"ARRAY[{ca}, NULL, {cb}]")
                    elif i % 3 == 1:
                        arrays.append(f"('[2:3][-1:0]=' || ARRAY[[{ca}, {cb}], [NULL, {ca}]]::{at}::text)::{at}")
                    else:
                        arrays.append("'{}'")
                cols.append((f"a_{t}", at, arrays))
        cols.extend(EXTRA_COLUMNS)
        toast = [
            ("big_pglz", "text COMPRESSION pglz"),
            ("big_ext", "text"),
            ("big_bytea", "bytea"),
            ("big_jsonb", "jsonb"),
            ("big_arr", "int4[]"),
            ("big_tsv", "tsvector"),
            ("big_comp", "t_nest"),
        ]
        if lz4:
            toast.append(("big_lz4", "text COMPRESSION lz4"))
        ddl = ", ".join([f"{n} {t}" for n, t, _ in cols] + [f"{n} {t}" for n, t in toast] + ["dropme int"])
        conn.execute(f"CREATE TABLE t_types ({ddl})")
        conn.execute("ALTER TABLE t_types SET (autovacuum_enabled = off)")
        conn.execute("ALTER TABLE t_types ALTER COLUMN big_ext SET STORAGE EXTERNAL")  # out of line, uncompressed
        nrows = max(len(v) for _, _, v in cols)
        names = [n for n, _, _ in cols]
        for r in range(nrows):
            exprs = [v[r % len(v)] for _, _, v in cols]
            conn.execute(f"INSERT INTO t_types ({', '.join(names)}) VALUES ({', '.join(exprs)})")
        conn.execute("INSERT INTO t_types (dropme) VALUES (1)")  # every other column NULL
        big = {
            # compressible: pglz/lz4 bring it under the TOAST threshold (inline compressed) or not (external)
            "big_pglz": [
                "repeat('abc', 3000)",
                "(SELECT string_agg(md5((i % 100)::text), ' ') FROM generate_series(1, 3000) i)",
            ],
            "big_ext": ["repeat('x,\"y\"', 4000)"],
            "big_bytea": [
                "decode(repeat('00ff', 5000), 'hex')",
                "(SELECT string_agg(sha256(i::text::bytea), '') FROM generate_series(1, 2000) i)",
            ],
            "big_jsonb": [
                "(SELECT jsonb_agg(jsonb_build_object('k' || i, i * 1.5, 's', repeat('z', i % 50)))"
                " FROM generate_series(1, 800) i)"
            ],
            "big_arr": ["(SELECT array_agg(CASE WHEN i % 7 = 0 THEN NULL ELSE i END) FROM generate_series(1, 5000) i)"],
            "big_tsv": ["(SELECT string_agg('w' || i || ':' || i, ' ')::tsvector FROM generate_series(1, 1500) i)"],
            "big_comp": [
                "ROW(ROW(1, repeat('long', 2000), NULL, NULL, NULL, NULL, NULL, NULL)::t_comp,"
                " (SELECT array_agg(md5(i::text)) FROM generate_series(1, 300) i), NULL, NULL)"
            ],
        }
        if lz4:
            big["big_lz4"] = [
                "repeat('lz4', 3000)",
                "(SELECT string_agg(md5((i % 100)::text), ' ') FROM generate_series(1, 3000) i)",
            ]
        for i in range(2):
            sets = {n: v[i % len(v)] for n, v in big.items()}
            conn.execute(f"INSERT INTO t_types ({', '.join(sets)}) VALUES ({', '.join(sets.values())})")
        conn.execute("ALTER TABLE t_types DROP COLUMN dropme")
        # stored t_row values still hold gone and lack c (the server refuses a column with a default here)
        conn.execute("ALTER TABLE t_row DROP COLUMN gone, ADD COLUMN c int")
        # the big values really are TOAST-ed: compressed with each method, and some stored out of line
        methods = set()
        for n, _ in toast:
            for (m,) in conn.execute(f"SELECT DISTINCT pg_column_compression({n}) FROM t_types").fetchall():
                methods.add(m)
        assert {"pglz", "lz4"} & methods == ({"pglz", "lz4"} if lz4 else {"pglz"}), methods
        toast_rel = conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 't_types'::regclass")
        chunks = conn.execute(f"SELECT count(DISTINCT chunk_id) FROM {toast_rel.fetchone()[0]}").fetchone()  # type: ignore[index]
        assert chunks is not None and chunks[0] >= 4, chunks
        kinds = conn.execute(
            """SELECT bool_or(pg_column_compression(big_pglz) = 'pglz' AND pg_column_size(big_pglz) < 1000),
                      bool_or(pg_column_compression(big_pglz) = 'pglz' AND pg_column_size(big_pglz) > 3000),
                      bool_or(pg_column_compression(big_ext) IS NULL AND pg_column_size(big_ext) > 8000)
               FROM t_types"""
        ).fetchone()
        assert kinds == (True, True, True), "want inline-compressed, external compressed and external plain values"
        conn.execute("CHECKPOINT")
        live = names + [n for n, _ in toast]
    return "public.t_types", live


def _drop_built(cluster: LabCluster) -> None:
    """Drop what :func:`_build` made."""
    exec_sql(
        cluster,
        "DROP TABLE IF EXISTS t_types, t_row; DROP TYPE IF EXISTS t_nest, t_comp, t_enum, t_textrange CASCADE; "
        'DROP DOMAIN IF EXISTS t_dom, t_tdom; DROP SCHEMA IF EXISTS t_schema, "Odd Schema" CASCADE; '
        'DROP ROLE IF EXISTS "weird role"',
    )


# With this set to a directory, the test also writes crates/core/tests/data/datum/pg<major>_values.json there (needs
# pageinspect): the Rust test datum_real.rs checks format_value on these real bytes without a server.
FIXTURE_DIR = os.environ.get("PGSURGEON_DATUM_FIXTURES")


def _shrink_names(t: dict[str, Any] | None, raw: bytes) -> None:
    """Keep only the reg*/aclitem names whose OID the value holds (the full maps are large)."""
    if not t:
        return
    if t.get("names"):
        t["names"] = {k: v for k, v in t["names"].items() if int(k).to_bytes(4, "little") in raw}
    _shrink_names(t.get("elem"), raw)
    _shrink_names(t.get("subtype"), raw)
    for f in t.get("fields") or []:
        _shrink_names(f.get("type"), raw)


def _write_fixture(cluster: LabCluster, columns: list[str], out: Path) -> None:
    """Every inline value of t_types: its TypeDesc, its bytes as pageinspect's tuple_data_split gives them, and the
    text of the type's output function (format('%s', …) calls it; a cast to text need not)."""
    with _conn(cluster) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        version = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        t = catalog.load_table(conn, resolve_relation(conn, "public.t_types")[0])
        bycol = {c.name: c for c in t.columns}
        texts_sql = "SELECT " + ", ".join(f"format('%%s', {c})" for c in columns) + " FROM t_types WHERE ctid = %s::tid"
        cases: list[dict[str, Any]] = []
        seen: set[tuple[str, bytes]] = set()
        for blk in range(t.rel.nblocks):
            items = conn.execute(
                "SELECT lp, tuple_data_split('t_types'::regclass, t_data, t_infomask, t_infomask2, t_bits) "
                "FROM heap_page_items(get_raw_page('t_types', %s)) WHERE lp_flags = 1 ORDER BY lp",
                (blk,),
            ).fetchall()
            for lp, attrs in items:
                texts = conn.execute(texts_sql, (f"({blk},{lp})",)).fetchone() or ()
                for name, text in zip(columns, texts, strict=True):
                    c = bycol[name]
                    raw = attrs[c.attnum - 1]
                    if raw is None or (c.attlen == -1 and raw[0] == 1):
                        continue  # NULL, or a TOAST pointer (the carver fetches those before format_value)
                    raw = bytes(raw)
                    if (name, raw) in seen:
                        continue
                    seen.add((name, raw))
                    ty = json.loads(json.dumps(c.type))
                    _shrink_names(ty, raw)
                    cases.append({"column": name, "type": ty, "attlen": c.attlen, "raw": raw.hex(), "text": text})
    path = out / f"pg{version // 10000}_values.json"
    path.write_text(json.dumps({"server_version_num": version, "cases": cases}, separators=(",", ":")))


def test_every_type_carves_like_the_server(pg: LabCluster, tmp_path: Path) -> None:
    table, columns = _build(pg)
    try:
        if FIXTURE_DIR:
            _write_fixture(pg, columns, Path(FIXTURE_DIR))
        report = salvage(SalvageOptions(dsn=pg.dsn(), table=table, out=tmp_path, fmt="csv", carve_all=True, jobs=1))
        carved = (tmp_path / f"{table}.csv").read_bytes()
        with _conn(pg) as conn:
            query = f"COPY (SELECT {', '.join(columns)} FROM t_types ORDER BY ctid) TO STDOUT (FORMAT csv, HEADER)"
            with conn.cursor().copy(query) as cp:
                expected = b"".join(bytes(b) for b in cp)
            nrows = conn.execute("SELECT count(*) FROM t_types").fetchone()[0]  # type: ignore[index]
        if carved != expected:
            got, want = carved.split(b"\n"), expected.split(b"\n")
            diffs = [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
            header = want[0].split(b",")
            detail = []
            for i, g, w in diffs[:5]:
                gf, wf = g.split(b","), w.split(b",")
                cells = [
                    (header[k] if k < len(header) else k, a, b)
                    for k, (a, b) in enumerate(zip(gf, wf, strict=False))
                    if a != b
                ]
                detail.append(f"line {i}: {cells[:3]!r}")
            pytest.fail(
                f"carved CSV differs from the server's ({len(got)} vs {len(want)} lines):\n" + "\n".join(detail)
            )
        rows = report["rows"]
        print(f"{table}: {len(columns)} columns, {rows}")
        assert rows["carved_kept_apart"] == 0
        assert rows["sql"] == 0 and rows["carved"] == nrows
    finally:
        _drop_built(pg)


def test_every_btree_indexable_type_is_found_by_the_core_heapallindexed(pg: LabCluster) -> None:
    """A btree index on every column of the every-type table that can have one: the core's heapallindexed finds
    every row in every index whose values it compares (none missing: what the index stores normalizes to what the
    heap stores, type by type, compressed or not), and the server agrees there is nothing to report."""
    from pgsurgeon.diagnose import DiagnoseRequest, run_diagnose

    table, columns = _build(pg)
    try:
        indexed: list[str] = []
        with _conn(pg) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
            conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
            for i, col in enumerate(columns):
                try:
                    with conn.transaction():
                        conn.execute(f"CREATE INDEX t_types_i{i} ON t_types ({col})")  # type: ignore[arg-type]
                    indexed.append(f"t_types_i{i}")
                except psycopg.Error:
                    pass  # no btree operator class for the type, or values too big for an index entry
            conn.execute("CHECKPOINT")
            nrows = conn.execute("SELECT count(*) FROM t_types").fetchone()[0]  # type: ignore[index]
        assert len(indexed) > 60, indexed
        out = run_diagnose(DiagnoseRequest(dsn=pg.dsn(), tables=[table], jobs=2, heapallindexed=True))
        assert out.findings == [], out.findings[:3]
        notes = {r["relation"]: " ".join(r["notes"]) for r in out.relations if r["role"] == "index"}
        missing = {n: v for n, v in notes.items() if "not found in the index" in v}
        assert not missing, missing
        proven = [n for n in indexed if notes[n].startswith(f"heapallindexed from the files: all {nrows} live rows")]
        assert len(proven) > 50, {n: notes[n] for n in indexed if n not in proven}
        # the rest: a type stored otherwise in the index (no note: the server checks it), or rows of this very wide
        # table whose value the toaster moved out of line (the index holds it inline): the server decides
        others = {n: notes[n] for n in indexed if n not in proven}
        assert all(v == "" or "with an indexed value in TOAST" in v for v in others.values()), others
    finally:
        _drop_built(pg)


def test_generated_columns_stay_out_of_the_file(pg: LabCluster, tmp_path: Path) -> None:
    """A salvage file has the columns ``COPY t TO`` writes: generated ones (stored, and virtual on 18, whose value is
    not on disk at all) are left out, so the file reloads with ``COPY t FROM`` instead of carrying NULLs."""
    with _conn(pg) as conn:
        version = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        virtual = ", v text GENERATED ALWAYS AS (a::text || '!') VIRTUAL" if version >= 180000 else ""
        conn.execute(f"CREATE TABLE t_gen (a int, s int GENERATED ALWAYS AS (a * 3) STORED, b text{virtual})")
        conn.execute("INSERT INTO t_gen (a, b) SELECT i, 'row ' || i FROM generate_series(1, 5) i")
        conn.execute("CHECKPOINT")
    try:
        report = salvage(
            SalvageOptions(dsn=pg.dsn(), table="public.t_gen", out=tmp_path, fmt="csv", carve_all=True, jobs=1)
        )
        carved = (tmp_path / "public.t_gen.csv").read_bytes()
        with _conn(pg) as conn:
            with conn.cursor().copy("COPY t_gen TO STDOUT (FORMAT csv, HEADER)") as cp:
                expected = b"".join(bytes(b) for b in cp)
            assert carved == expected
            assert report["rows"]["carved"] == 5 and report["rows"]["carved_kept_apart"] == 0
            conn.execute("CREATE TABLE t_gen2 (LIKE t_gen INCLUDING GENERATED)")
            with conn.cursor().copy("COPY t_gen2 FROM STDIN (FORMAT csv, HEADER)") as cp:
                cp.write(carved)
            same = conn.execute("SELECT count(*) FROM (SELECT * FROM t_gen EXCEPT SELECT * FROM t_gen2) d").fetchone()
            assert same == (0,)
    finally:
        exec_sql(pg, "DROP TABLE IF EXISTS t_gen, t_gen2")


def test_types_over_builtin_output_routines_and_catalog_trees(pg: LabCluster, tmp_path: Path) -> None:
    """Found by running PostgreSQL's regression suite and carving its tables: a base type made with CREATE TYPE over
    built-in I/O routines (LANGUAGE internal 'textout', 'int4out', 'int8out'; citext is made so too) prints as the
    built-in type with that routine, and pg_node_tree, which a CREATE TABLE AS over pg_class stores, prints as its
    text. Both used to keep their rows apart as 'not supported by the carver'."""
    setup = """
        CREATE TYPE t_txt; CREATE TYPE t_i4; CREATE TYPE t_i8;
        CREATE FUNCTION t_txt_in(cstring) RETURNS t_txt AS 'textin' LANGUAGE internal STRICT IMMUTABLE;
        CREATE FUNCTION t_txt_out(t_txt) RETURNS cstring AS 'textout' LANGUAGE internal STRICT IMMUTABLE;
        CREATE FUNCTION t_i4_in(cstring) RETURNS t_i4 AS 'int4in' LANGUAGE internal STRICT IMMUTABLE;
        CREATE FUNCTION t_i4_out(t_i4) RETURNS cstring AS 'int4out' LANGUAGE internal STRICT IMMUTABLE;
        CREATE FUNCTION t_i8_in(cstring) RETURNS t_i8 AS 'int8in' LANGUAGE internal STRICT IMMUTABLE;
        CREATE FUNCTION t_i8_out(t_i8) RETURNS cstring AS 'int8out' LANGUAGE internal STRICT IMMUTABLE;
        CREATE TYPE t_txt (input = t_txt_in, output = t_txt_out, internallength = variable, alignment = int4);
        CREATE TYPE t_i4 (input = t_i4_in, output = t_i4_out, internallength = 4, passedbyvalue, alignment = int4);
        CREATE TYPE t_i8 (input = t_i8_in, output = t_i8_out, like = int8);
        CREATE DOMAIN t_i4_dom AS t_i4;
        CREATE TABLE t_outfn (a t_txt, b t_i4, c t_i8, d t_txt[], e t_i4_dom, f t_i8[]);
        INSERT INTO t_outfn VALUES
            ('zippo', '42', '-9223372036854775808', '{x,"y z",NULL}', '-7', '{1,2}'),
            (E'tab\\there', '2147483647', '9223372036854775807', '{}', NULL, NULL),
            (NULL, NULL, NULL, NULL, NULL, NULL);
        CREATE TABLE t_part (a int, b text) PARTITION BY LIST (b);
        CREATE TABLE t_part_1 PARTITION OF t_part FOR VALUES IN ('a', 'b');
        CREATE TABLE t_trees AS
            SELECT relname, relpartbound FROM pg_class WHERE relname IN ('t_part_1', 't_part');
        CHECKPOINT;
    """
    try:
        exec_sql(pg, setup)
        for table, query in (
            ("public.t_outfn", "SELECT * FROM t_outfn"),
            ("public.t_trees", "SELECT * FROM t_trees"),
        ):
            out = tmp_path / table
            report = salvage(SalvageOptions(dsn=pg.dsn(), table=table, out=out, fmt="copy", carve_all=True, jobs=1))
            with _conn(pg) as conn, conn.cursor().copy(f"COPY ({query}) TO STDOUT") as cp:
                expected = sorted(bytes(b) for b in cp)
            carved = (out / f"{table}.copy").read_bytes()
            assert sorted(carved.splitlines(keepends=True)) == expected, table
            assert report["rows"]["carved_kept_apart"] == 0, table
            assert report["rows"]["carved"] == len(expected), table
    finally:
        exec_sql(
            pg,
            "DROP TABLE IF EXISTS t_outfn, t_trees, t_part; DROP DOMAIN IF EXISTS t_i4_dom; "
            "DROP TYPE IF EXISTS t_txt, t_i4, t_i8 CASCADE",
        )
