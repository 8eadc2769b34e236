-- Every kind of object pg_dump reproduces, with rows in every table: the database that "unload gives back the
-- schema" (issue 34) is measured on. Run by psql as a superuser in a fresh database (CREATE DATABASE x, then
-- psql -X -v ON_ERROR_STOP=1 -d x -f this file); valid on PostgreSQL 15 to 18, with the newer kinds behind \if.
-- Roles are cluster-wide and created only when missing, so the script runs twice in one cluster in two databases.
-- The values the behavioural checks expect (tests/fix_schema.py, CHECKS) are set here: change both together.
-- Not here, on purpose: tablespaces (their LOCATION is a directory of the source host, which a second cluster on
-- the same host cannot take over) and security labels (no label provider in a stock server).

SELECT current_setting('server_version_num')::int >= 160000 AS pg16,
       current_setting('server_version_num')::int >= 170000 AS pg17,
       current_setting('server_version_num')::int >= 180000 AS pg18,
       -- initdb imports the ICU locales (und-x-icu, …) only into a server built with ICU (16+ list "unicode" always)
       EXISTS (SELECT FROM pg_collation WHERE collname LIKE '%-x-icu') AS has_icu,
       current_database() AS dbname
\gset
-- a publication's "wal_level is insufficient" warning depends on the cluster's settings, not on this script
SET client_min_messages = error;

-- ------------------------------------------------------------------------------------------------------------ roles
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES
        ('eo_owner', 'NOLOGIN CREATEDB'),
        ('eo_app', 'LOGIN CONNECTION LIMIT 5 VALID UNTIL ''infinity'''),
        ('eo_reader', 'NOLOGIN'),
        ('eo_group', 'NOLOGIN NOINHERIT'),
        ('eo_rls', 'LOGIN'),
        ('eo_admin', 'NOLOGIN CREATEROLE BYPASSRLS')) AS v(name, attrs)
    LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r.name) THEN
            EXECUTE format('CREATE ROLE %I %s', r.name, r.attrs);
        END IF;
    END LOOP;
END
$$;
GRANT eo_group TO eo_app, eo_reader;
GRANT eo_reader TO eo_app WITH ADMIN OPTION;
\if :pg16
-- membership options of 16+: a member that may SET ROLE but does not inherit
GRANT eo_group TO eo_rls WITH INHERIT FALSE, SET TRUE;
\else
GRANT eo_group TO eo_rls;
\endif
ALTER ROLE eo_app SET statement_timeout = '1min';
ALTER ROLE eo_app SET search_path = app, public;
ALTER ROLE eo_app IN DATABASE :"dbname" SET work_mem = '8MB';
COMMENT ON ROLE eo_owner IS 'owns most objects of the every-object database';

-- --------------------------------------------------------------------------------------------------------- database
ALTER DATABASE :"dbname" SET lock_timeout = '10s';
ALTER DATABASE :"dbname" SET datestyle = 'ISO, DMY';
ALTER DATABASE :"dbname" OWNER TO eo_owner;
COMMENT ON DATABASE :"dbname" IS 'every object kind pg_dump reproduces';
GRANT CREATE, TEMPORARY ON DATABASE :"dbname" TO eo_app;
REVOKE TEMPORARY ON DATABASE :"dbname" FROM PUBLIC;

-- ------------------------------------------------------------------------------------------ schemas and extensions
CREATE SCHEMA app AUTHORIZATION eo_owner;
CREATE SCHEMA audit AUTHORIZATION eo_app;
CREATE SCHEMA parts;
CREATE SCHEMA s2;
CREATE SCHEMA ext;
CREATE SCHEMA "Odd ""Name""";
ALTER SCHEMA parts OWNER TO eo_owner;
COMMENT ON SCHEMA app IS 'the application';
COMMENT ON SCHEMA s2 IS 'search_path-dependent function bodies';
GRANT USAGE ON SCHEMA app TO eo_reader, eo_rls, eo_app;
GRANT CREATE ON SCHEMA app TO eo_app;
GRANT USAGE ON SCHEMA audit, parts, s2 TO PUBLIC;
-- the public schema as initdb made it is not dumped; changes to it are
COMMENT ON SCHEMA public IS 'public, commented';
GRANT CREATE ON SCHEMA public TO eo_app;

CREATE EXTENSION hstore SCHEMA public;
CREATE EXTENSION btree_gist SCHEMA public;
CREATE EXTENSION pg_trgm SCHEMA ext;
COMMENT ON EXTENSION pg_trgm IS 'trigram matching, in its own schema';
-- privileges changed on an extension's member and on a pg_catalog function: pg_dump dumps the difference from
-- pg_init_privs
REVOKE EXECUTE ON FUNCTION ext.word_similarity(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ext.word_similarity(text, text) TO eo_app;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_stat_reset() TO eo_admin;

-- --------------------------------------------------------------------------------------------------------- types
CREATE TYPE app.mood AS ENUM ('sad', 'ok', 'happy');
ALTER TYPE app.mood ADD VALUE 'meh' BEFORE 'ok';  -- a sort order that is not the creation order
ALTER TYPE app.mood OWNER TO eo_owner;
CREATE TYPE app.pair AS (a int, b text COLLATE "C");
CREATE TYPE app.address AS (street text, zip int, geo point);
CREATE DOMAIN app.posint AS int NOT NULL CONSTRAINT posint_positive CHECK (VALUE > 0);
CREATE DOMAIN app.email AS text COLLATE "C" DEFAULT 'nobody@example.com' CONSTRAINT email_at CHECK (VALUE ~ '@');
ALTER DOMAIN app.email ADD CONSTRAINT email_short CHECK (length(VALUE) < 200) NOT VALID;
CREATE DOMAIN app.pairs_dom AS app.pair[];
CREATE TYPE app.floatrange AS RANGE (SUBTYPE = float8, SUBTYPE_DIFF = float8mi);
COMMENT ON TYPE app.mood IS 'how it went';
COMMENT ON COLUMN app.pair.a IS 'the number';
COMMENT ON DOMAIN app.posint IS 'a positive integer';
COMMENT ON CONSTRAINT posint_positive ON DOMAIN app.posint IS 'greater than zero';
GRANT USAGE ON TYPE app.mood TO eo_reader;
REVOKE USAGE ON DOMAIN app.posint FROM PUBLIC;
GRANT USAGE ON DOMAIN app.posint TO eo_app;

-- a base type with C input/output functions of its own, as PostgreSQL's regression tests make them: a shell type,
-- functions in language internal over text's own, then the full type
CREATE TYPE app.mytext;
CREATE FUNCTION app.mytext_in(cstring) RETURNS app.mytext LANGUAGE internal IMMUTABLE STRICT AS 'textin';
CREATE FUNCTION app.mytext_out(app.mytext) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'textout';
CREATE TYPE app.mytext (INPUT = app.mytext_in, OUTPUT = app.mytext_out, LIKE = text, COLLATABLE = true,
                        CATEGORY = 'S');
COMMENT ON TYPE app.mytext IS 'text under another name';
-- its comparison functions and a btree operator class, so it can be indexed
CREATE FUNCTION app.mytext_lt(app.mytext, app.mytext) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'text_lt';
CREATE FUNCTION app.mytext_le(app.mytext, app.mytext) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'text_le';
CREATE FUNCTION app.mytext_eq(app.mytext, app.mytext) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'texteq';
CREATE FUNCTION app.mytext_ge(app.mytext, app.mytext) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'text_ge';
CREATE FUNCTION app.mytext_gt(app.mytext, app.mytext) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'text_gt';
CREATE FUNCTION app.mytext_cmp(app.mytext, app.mytext) RETURNS int LANGUAGE internal IMMUTABLE STRICT
    AS 'bttextcmp';
CREATE OPERATOR app.< (LEFTARG = app.mytext, RIGHTARG = app.mytext, FUNCTION = app.mytext_lt,
                       COMMUTATOR = OPERATOR(app.>), NEGATOR = OPERATOR(app.>=),
                       RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR app.<= (LEFTARG = app.mytext, RIGHTARG = app.mytext, FUNCTION = app.mytext_le,
                        COMMUTATOR = OPERATOR(app.>=), NEGATOR = OPERATOR(app.>));
CREATE OPERATOR app.= (LEFTARG = app.mytext, RIGHTARG = app.mytext, FUNCTION = app.mytext_eq,
                       COMMUTATOR = OPERATOR(app.=), RESTRICT = eqsel, JOIN = eqjoinsel, MERGES);
CREATE OPERATOR app.>= (LEFTARG = app.mytext, RIGHTARG = app.mytext, FUNCTION = app.mytext_ge);
CREATE OPERATOR app.> (LEFTARG = app.mytext, RIGHTARG = app.mytext, FUNCTION = app.mytext_gt);
CREATE OPERATOR FAMILY app.mytext_family USING btree;
CREATE OPERATOR CLASS app.mytext_ops DEFAULT FOR TYPE app.mytext USING btree FAMILY app.mytext_family AS
    OPERATOR 1 app.<, OPERATOR 2 app.<=, OPERATOR 3 app.=, OPERATOR 4 app.>=, OPERATOR 5 app.>,
    FUNCTION 1 app.mytext_cmp(app.mytext, app.mytext);
COMMENT ON OPERATOR CLASS app.mytext_ops USING btree IS 'orders mytext as text';
COMMENT ON OPERATOR FAMILY app.mytext_family USING btree IS 'mytext comparisons';
ALTER OPERATOR FAMILY app.mytext_family USING btree OWNER TO eo_owner;

-- ---------------------------------------------------------------------------------------------- functions and co
CREATE FUNCTION app.add_one(i int) RETURNS int LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT i + 1';
CREATE FUNCTION app.greet(who text DEFAULT 'world') RETURNS text LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN 'hello ' || who;
END
$$;
CREATE FUNCTION app.twice(i int) RETURNS int LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
    SELECT i * 2;
END;
CREATE FUNCTION app.split_pair(p app.pair, OUT a int, OUT b text) LANGUAGE sql IMMUTABLE
    AS 'SELECT p.a, p.b';
CREATE FUNCTION app.series(n int) RETURNS TABLE (i int, sq int) LANGUAGE sql IMMUTABLE ROWS 10
    AS 'SELECT g, g * g FROM generate_series(1, n) g';
CREATE FUNCTION app.total(VARIADIC xs numeric[]) RETURNS numeric LANGUAGE sql IMMUTABLE
    AS 'SELECT sum(x) FROM unnest(xs) x';
CREATE FUNCTION app.leak_proof_eq(a int, b int) RETURNS bool LANGUAGE sql IMMUTABLE LEAKPROOF AS 'SELECT a = b';
CREATE FUNCTION app.pair_text(p app.pair) RETURNS text LANGUAGE sql IMMUTABLE STRICT
    AS $$SELECT p.a || ':' || p.b$$;
CREATE FUNCTION app.first_of(anycompatible, anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE
    AS 'SELECT coalesce($1, $2)';
ALTER FUNCTION app.greet(text) OWNER TO eo_app;
ALTER FUNCTION app.twice(int) OWNER TO eo_owner;
COMMENT ON FUNCTION app.add_one(int) IS 'plus one';

CREATE PROCEDURE app.bump(INOUT n int, step int DEFAULT 1) LANGUAGE plpgsql
AS $$
BEGIN
    n := n + step;
END
$$;
COMMENT ON PROCEDURE app.bump(int, int) IS 'adds step to n';
GRANT EXECUTE ON PROCEDURE app.bump(int, int) TO eo_app;

-- aggregates: plain with an initial value, moving (inverse transition), polymorphic, ordered-set
CREATE AGGREGATE app.product(numeric) (SFUNC = numeric_mul, STYPE = numeric, INITCOND = '1', PARALLEL = SAFE,
                                       COMBINEFUNC = numeric_mul);
CREATE AGGREGATE app.msum(int) (SFUNC = int4pl, STYPE = int, INITCOND = '0',
                                MSFUNC = int4pl, MINVFUNC = int4mi, MSTYPE = int, MINITCOND = '0');
CREATE AGGREGATE app.collect(anycompatible) (SFUNC = array_append, STYPE = anycompatiblearray, INITCOND = '{}');
CREATE AGGREGATE app.my_median(float8 ORDER BY float8) (SFUNC = ordered_set_transition, STYPE = internal,
                                                        FINALFUNC = percentile_cont_float8_final);
COMMENT ON AGGREGATE app.product(numeric) IS 'the product of the values';
ALTER AGGREGATE app.msum(int) OWNER TO eo_app;

-- operators on built-in types: binary and prefix
CREATE OPERATOR app.<+> (LEFTARG = int, RIGHTARG = int, FUNCTION = int4pl, COMMUTATOR = OPERATOR(app.<+>));
CREATE OPERATOR app.@@ (RIGHTARG = int, FUNCTION = app.add_one);
COMMENT ON OPERATOR app.<+> (int, int) IS 'plus again';
ALTER OPERATOR app.@@ (NONE, int) OWNER TO eo_owner;

-- casts: binary coercible both ways, through a function, through I/O
CREATE CAST (app.mytext AS text) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (text AS app.mytext) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (app.pair AS text) WITH FUNCTION app.pair_text(app.pair);
CREATE CAST (app.mood AS app.mytext) WITH INOUT;
COMMENT ON CAST (app.pair AS text) IS 'a:b';

-- collations: ICU when the server has it (a case-insensitive one), libc "C" otherwise; the builtin provider of 17+
\if :has_icu
CREATE COLLATION app.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
\else
CREATE COLLATION app.ci (provider = libc, locale = 'C');
\endif
CREATE COLLATION app.c_copy FROM "C";
\if :pg17
CREATE COLLATION app.c_builtin (provider = builtin, locale = 'C.UTF-8');
\endif
COMMENT ON COLLATION app.c_copy IS 'a copy of C';
ALTER COLLATION app.c_copy OWNER TO eo_owner;

-- a conversion (the server calls its function once when it is created)
CREATE CONVERSION app.my_latin1 FOR 'UTF8' TO 'LATIN1' FROM utf8_to_iso8859_1;
COMMENT ON CONVERSION app.my_latin1 IS 'utf8 to latin1';

-- text search: template, parser and dictionary over built-in C functions, a configuration copied and remapped
CREATE TEXT SEARCH TEMPLATE app.my_template (LEXIZE = dsimple_lexize, INIT = dsimple_init);
CREATE TEXT SEARCH PARSER app.my_parser (START = prsd_start, GETTOKEN = prsd_nexttoken, END = prsd_end,
                                         LEXTYPES = prsd_lextype, HEADLINE = prsd_headline);
CREATE TEXT SEARCH DICTIONARY app.my_simple (TEMPLATE = app.my_template, ACCEPT = false);
CREATE TEXT SEARCH DICTIONARY app.my_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION app.my_english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION app.my_english ALTER MAPPING FOR asciiword WITH app.my_simple, app.my_stem;
ALTER TEXT SEARCH CONFIGURATION app.my_english DROP MAPPING FOR url;
CREATE TEXT SEARCH CONFIGURATION app.my_parsed (PARSER = app.my_parser);
ALTER TEXT SEARCH CONFIGURATION app.my_parsed ADD MAPPING FOR word, asciiword WITH simple;
COMMENT ON TEXT SEARCH CONFIGURATION app.my_english IS 'english with my dictionaries';
COMMENT ON TEXT SEARCH DICTIONARY app.my_simple IS 'lower-cases';
COMMENT ON TEXT SEARCH PARSER app.my_parser IS 'the default parser again';
COMMENT ON TEXT SEARCH TEMPLATE app.my_template IS 'the simple template again';
ALTER TEXT SEARCH CONFIGURATION app.my_english OWNER TO eo_owner;

-- access methods (a table AM and an index AM over the built-in handlers) and a procedural language
CREATE ACCESS METHOD eo_heap TYPE TABLE HANDLER heap_tableam_handler;
CREATE ACCESS METHOD eo_gist TYPE INDEX HANDLER gisthandler;
COMMENT ON ACCESS METHOD eo_heap IS 'heap under another name';
CREATE OPERATOR CLASS app.box_ops DEFAULT FOR TYPE box USING eo_gist AS
    OPERATOR 1 <<, OPERATOR 2 &<, OPERATOR 3 &&, OPERATOR 4 &>, OPERATOR 5 >>, OPERATOR 6 ~=,
    OPERATOR 7 @>, OPERATOR 8 <@, OPERATOR 9 &<|, OPERATOR 10 <<|, OPERATOR 11 |>>, OPERATOR 12 |&>,
    FUNCTION 1 gist_box_consistent(internal, box, smallint, oid, internal),
    FUNCTION 2 gist_box_union(internal, internal),
    FUNCTION 5 gist_box_penalty(internal, internal, internal),
    FUNCTION 6 gist_box_picksplit(internal, internal),
    FUNCTION 7 gist_box_same(box, box, internal);
-- the language's handler and validator are C functions of our own over plpgsql's library: pg_dump writes a
-- language whose handler lives in pg_catalog as a bare CREATE LANGUAGE, which the server takes for an extension
CREATE FUNCTION app.eo_call_handler() RETURNS language_handler LANGUAGE c AS '$libdir/plpgsql', 'plpgsql_call_handler';
CREATE FUNCTION app.eo_validator(oid) RETURNS void LANGUAGE c STRICT AS '$libdir/plpgsql', 'plpgsql_validator';
CREATE TRUSTED LANGUAGE eo_plpgsql HANDLER app.eo_call_handler VALIDATOR app.eo_validator;
COMMENT ON LANGUAGE eo_plpgsql IS 'plpgsql under another name';
GRANT USAGE ON LANGUAGE eo_plpgsql TO eo_app;
CREATE FUNCTION app.in_my_language(i int) RETURNS int LANGUAGE eo_plpgsql IMMUTABLE
AS $$
BEGIN
    RETURN i * 3;
END
$$;
-- a transform (the SQL language ignores transforms, so this one is harmless: PostgreSQL's object_address test)
CREATE TRANSFORM FOR int LANGUAGE sql (FROM SQL WITH FUNCTION prsd_lextype(internal),
                                       TO SQL WITH FUNCTION int4recv(internal));
COMMENT ON TRANSFORM FOR int LANGUAGE sql IS 'never used';

-- -------------------------------------------------------------------------------------------------------- sequences
CREATE SEQUENCE app.order_no_seq START 1000;
CREATE SEQUENCE app.ticket_seq AS smallint INCREMENT 5 MINVALUE 1 MAXVALUE 30000 START 10 CACHE 1;
SELECT setval('app.ticket_seq', 500);
CREATE SEQUENCE app.cycler MINVALUE 1 MAXVALUE 3 CYCLE;
SELECT nextval('app.cycler') FROM generate_series(1, 4);  -- wrapped once: its value is 1 again
CREATE SEQUENCE app.countdown INCREMENT -1 MINVALUE -100 MAXVALUE 100 START 100;
SELECT setval('app.countdown', 41, false);  -- not called: nextval gives 41
CREATE SEQUENCE app.untouched;
CREATE UNLOGGED SEQUENCE app.unlogged_seq START 7;
SELECT nextval('app.unlogged_seq');
ALTER SEQUENCE app.ticket_seq OWNER TO eo_app;
COMMENT ON SEQUENCE app.ticket_seq IS 'ticket numbers';
GRANT USAGE, SELECT ON SEQUENCE app.ticket_seq TO eo_reader;
GRANT UPDATE ON SEQUENCE app.order_no_seq TO eo_app;

-- ----------------------------------------------------------------------------------------------------------- tables
CREATE TABLE app.customers (
    id int GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10) PRIMARY KEY,
    name text NOT NULL,
    nick text COLLATE app.ci,
    email app.email,
    mood app.mood DEFAULT 'ok',
    born date CHECK (born > date '1900-01-01'),
    score numeric(3, -6),
    tags text[] DEFAULT '{}',
    attrs public.hstore,
    home app.address,
    created timestamptz DEFAULT now(),
    name_upper text DEFAULT upper('x' || 'y'),
    CONSTRAINT name_len CHECK (length(name) < 100)
);
INSERT INTO app.customers (name, nick, email, mood, born, score, tags, attrs, home, created) VALUES
    ('alice', 'Al', 'alice@example.com', 'happy', '1980-02-03', 123456789, '{a,b}', 'x=>1, y=>2',
     ROW('Main St 1', 1000, point(1, 2)), '2024-01-01 10:00+00'),
    ('bob', 'Bobby', 'bob@example.com', 'meh', '1975-06-07', 998000000, '{}', NULL,
     NULL, '2024-01-02 11:00+00'),
    ('carol', NULL, DEFAULT, 'sad', NULL, -5000000, '{"c d", NULL}', '"k"=>NULL',
     ROW(NULL, NULL, NULL), '2024-01-03 12:00+00'),
    ('dave', 'D', 'dave@example.com', DEFAULT, '2001-12-31', NULL, DEFAULT, '', NULL, '2024-01-04 13:00+00');
-- a CHECK added NOT VALID over a row that breaks it: the restore must keep it NOT VALID
ALTER TABLE app.customers ADD CONSTRAINT no_bob CHECK (name <> 'bob') NOT VALID;
ALTER TABLE app.customers OWNER TO eo_owner;
COMMENT ON TABLE app.customers IS 'people';
COMMENT ON COLUMN app.customers.score IS 'rounded to millions (negative scale)';
COMMENT ON CONSTRAINT no_bob ON app.customers IS 'bob came before the rule';
GRANT SELECT ON app.customers TO eo_reader;
GRANT SELECT (id, name), UPDATE (nick) ON app.customers TO eo_rls;
GRANT INSERT, UPDATE ON app.customers TO eo_app WITH GRANT OPTION;

CREATE TABLE app.orders (
    id bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 50 INCREMENT BY 5 CACHE 1) PRIMARY KEY,
    customer_id int NOT NULL REFERENCES app.customers ON DELETE CASCADE,
    order_no int NOT NULL DEFAULT nextval('app.order_no_seq'),
    status text NOT NULL DEFAULT 'open',
    qty int NOT NULL DEFAULT 1 CHECK (qty > 0),
    unit_price numeric(10, 2) NOT NULL,
    amount numeric GENERATED ALWAYS AS (qty * unit_price) STORED NOT NULL,
    label text GENERATED ALWAYS AS (upper(status) || '#' || order_no::text) STORED,
    placed timestamptz,
    gone int,
    ticket int
);
ALTER SEQUENCE app.order_no_seq OWNED BY app.orders.order_no;
INSERT INTO app.orders (customer_id, status, qty, unit_price, placed, gone)
SELECT c.id, s.status, s.qty, s.price, timestamptz '2024-03-01 00:00+00' + s.n * interval '1 day', s.n
FROM app.customers c
CROSS JOIN (VALUES (1, 'open', 2, 9.99), (2, 'paid', 1, 100.00), (3, 'shipped', 5, 0.50)) s(n, status, qty, price)
ORDER BY c.id, s.n;
INSERT INTO app.orders (id, customer_id, status, qty, unit_price, placed)
VALUES (1, 100, 'open', 3, 1.00, NULL);  -- a key below the identity's start, given by hand
-- a dropped column in the middle, and one added after the rows with a default
ALTER TABLE app.orders DROP COLUMN gone;
ALTER TABLE app.orders ADD COLUMN note text DEFAULT 'none';
ALTER TABLE app.orders OWNER TO eo_owner;
GRANT SELECT ON app.orders TO eo_reader;
GRANT UPDATE (status) ON app.orders TO eo_reader;
GRANT SELECT, INSERT ON app.orders TO eo_app;

CREATE TABLE app.order_lines (
    order_id bigint NOT NULL,
    line int NOT NULL,
    item text NOT NULL,
    qty app.posint DEFAULT 1,
    PRIMARY KEY (order_id, line),
    -- deferrable, checked at commit; and a multi-column key further down
    CONSTRAINT lines_order_fk FOREIGN KEY (order_id) REFERENCES app.orders (id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
INSERT INTO app.order_lines (order_id, line, item) SELECT o.id, l, 'item ' || o.id || '/' || l
FROM app.orders o, generate_series(1, 2) l;
ALTER TABLE app.order_lines OWNER TO eo_app;

-- a foreign key added NOT VALID over an orphan row
CREATE TABLE app.notes (
    id serial PRIMARY KEY,
    order_id bigint,
    customer_id int,
    body text,
    parent int REFERENCES app.notes (id) ON DELETE SET NULL,
    pairs app.pairs_dom,
    CONSTRAINT notes_customer_fk FOREIGN KEY (customer_id) REFERENCES app.customers (id)
        MATCH FULL ON UPDATE RESTRICT ON DELETE NO ACTION
);
INSERT INTO app.notes (order_id, customer_id, body, parent) VALUES
    (50, 100, 'first', NULL), (55, 100, 'reply', 1), (999999, NULL, 'orphan order', NULL);
UPDATE app.notes SET pairs = ARRAY[ROW(1, 'x')::app.pair, ROW(2, NULL)::app.pair] WHERE id = 1;
ALTER TABLE app.notes ADD CONSTRAINT notes_order_fk FOREIGN KEY (order_id) REFERENCES app.orders (id) NOT VALID;
COMMENT ON CONSTRAINT notes_order_fk ON app.notes IS 'one orphan predates it';

-- exclusion constraints: gist over a range alone, and with btree_gist's equality on an integer
CREATE TABLE app.slots (
    id int PRIMARY KEY,
    during int4range NOT NULL,
    EXCLUDE USING gist (during WITH &&)
);
INSERT INTO app.slots VALUES (1, '[1,10)'), (2, '[10,20)'), (3, '[30,40)');
CREATE TABLE app.bookings (
    room int NOT NULL,
    during tsrange NOT NULL,
    who text,
    CONSTRAINT bookings_no_overlap EXCLUDE USING gist (room WITH =, during WITH &&) DEFERRABLE
);
INSERT INTO app.bookings VALUES
    (1, '[2024-01-01 10:00, 2024-01-01 12:00)', 'alice'), (1, '[2024-01-01 12:00, 2024-01-01 13:00)', 'bob'),
    (2, '[2024-01-01 10:00, 2024-01-01 12:00)', 'carol');

-- unique constraints and indexes of every kind
CREATE TABLE app.items (
    id int PRIMARY KEY,
    code text NOT NULL,
    name text,
    price numeric,
    body text,
    doc tsvector,
    tags text[],
    shape box,
    label app.mytext,
    ranges app.floatrange,
    many int4multirange,
    fmany app.floatmultirange,
    serial_no int,
    at timestamp,
    CONSTRAINT items_code_key UNIQUE (code),
    CONSTRAINT items_serial_key UNIQUE NULLS NOT DISTINCT (serial_no)
);
INSERT INTO app.items
SELECT g, 'C' || lpad(g::text, 4, '0'), CASE WHEN g % 4 = 0 THEN NULL ELSE 'Item ' || g END, g * 1.5,
       'the quick brown fox ' || g, to_tsvector('english', 'jumps over the lazy dog number ' || g),
       ARRAY['t' || g % 3, 't' || g % 5], box(point(g, g), point(g + 1, g + 2)), ('label ' || g)::app.mytext,
       app.floatrange(g, g + 0.5), int4multirange(int4range(g, g + 2), int4range(g + 5, g + 6)),
       app.floatmultirange(app.floatrange(0, g)),
       CASE WHEN g = 7 THEN NULL ELSE g END, timestamp '2024-01-01' + g * interval '1 hour'
FROM generate_series(1, 40) g;
CREATE INDEX items_lower_name ON app.items (lower(name));
CREATE INDEX items_cheap ON app.items (price) WHERE price < 10;
CREATE UNIQUE INDEX items_code_incl ON app.items (code) INCLUDE (name, price);
CREATE INDEX items_name_pattern ON app.items (name text_pattern_ops);
CREATE INDEX items_at_desc ON app.items (at DESC NULLS FIRST, id);
CREATE INDEX items_price_ff ON app.items (price) WITH (fillfactor = 70);
CREATE INDEX items_doc_gin ON app.items USING gin (doc);
CREATE INDEX items_tags_gin ON app.items USING gin (tags) WITH (fastupdate = off);
CREATE INDEX items_name_trgm ON app.items USING gin (name ext.gin_trgm_ops);
CREATE INDEX items_shape_gist ON app.items USING gist (shape);
CREATE INDEX items_shape_mygist ON app.items USING eo_gist (shape);
CREATE INDEX items_ranges_gist ON app.items USING gist (ranges);
CREATE INDEX items_at_brin ON app.items USING brin (at) WITH (pages_per_range = 16);
CREATE INDEX items_code_hash ON app.items USING hash (code);
CREATE INDEX items_label ON app.items (label);
CREATE INDEX items_name_c ON app.items (name COLLATE "C" DESC);
CREATE UNIQUE INDEX items_upper_code ON app.items (upper(code));
ALTER INDEX app.items_lower_name ALTER COLUMN 1 SET STATISTICS 250;
COMMENT ON INDEX app.items_cheap IS 'the cheap ones';
ALTER TABLE app.items CLUSTER ON items_code_key;
ALTER TABLE app.items REPLICA IDENTITY USING INDEX items_code_key;
CREATE STATISTICS app.items_stats (ndistinct, dependencies) ON code, name FROM app.items;
CREATE STATISTICS app.items_expr_stats ON (lower(name)) FROM app.items;
ALTER STATISTICS app.items_stats SET STATISTICS 500;
COMMENT ON STATISTICS app.items_stats IS 'code and name go together';
ALTER TABLE app.items OWNER TO eo_owner;
-- a unique constraint taken over from an existing index
CREATE TABLE app.codes (code text NOT NULL, note text);
INSERT INTO app.codes VALUES ('a', 'x'), ('b', NULL);
CREATE UNIQUE INDEX codes_code_idx ON app.codes (code);
ALTER TABLE app.codes ADD CONSTRAINT codes_code_key UNIQUE USING INDEX codes_code_idx;
ALTER TABLE app.codes REPLICA IDENTITY FULL;

-- a zero-column table with rows
CREATE TABLE app.z ();
INSERT INTO app.z DEFAULT VALUES;
INSERT INTO app.z DEFAULT VALUES;
INSERT INTO app.z DEFAULT VALUES;

-- TOAST: values stored out of line, compressed and not, with storage, statistics and table options
CREATE TABLE app.docs (
    id int PRIMARY KEY,
    title varchar(80) NOT NULL,
    body text,
    raw bytea,
    big_json jsonb
);
INSERT INTO app.docs
SELECT g, 'doc ' || g,
       (SELECT string_agg(md5((g * 1000 + i)::text), ' ') FROM generate_series(1, 300) i),
       CASE WHEN g % 3 = 0 THEN decode(repeat('ab', 20000), 'hex') END,
       CASE WHEN g % 2 = 0 THEN (SELECT jsonb_agg(jsonb_build_object('k', i, 'v', md5(i::text)))
                                 FROM generate_series(1, 200) i) END
FROM generate_series(1, 12) g;
ALTER TABLE app.docs ALTER COLUMN body SET STORAGE EXTERNAL;
ALTER TABLE app.docs ALTER COLUMN raw SET STORAGE MAIN;
ALTER TABLE app.docs ALTER COLUMN title SET STATISTICS 500;
ALTER TABLE app.docs ALTER COLUMN big_json SET COMPRESSION pglz;
ALTER TABLE app.docs ALTER COLUMN title SET (n_distinct = -1);
ALTER TABLE app.docs SET (fillfactor = 80, autovacuum_enabled = false, toast.autovacuum_enabled = false,
                          toast_tuple_target = 256);

-- an unlogged table, a table of another access method, a typed table, quoted names
CREATE UNLOGGED TABLE app.cache (k text PRIMARY KEY, v jsonb);
INSERT INTO app.cache VALUES ('one', '{"a": 1}'), ('two', '[1, 2, null]');
CREATE TABLE app.other_am (id int, v text) USING eo_heap;
INSERT INTO app.other_am VALUES (1, 'stored by eo_heap'), (2, NULL);
CREATE TABLE app.pair_rows OF app.pair (PRIMARY KEY (a), b WITH OPTIONS DEFAULT 'none');
INSERT INTO app.pair_rows VALUES (1, 'one'), (2, DEFAULT);
CREATE TABLE "Odd ""Name"""."Tab.le" ("Col, 1" int, "select" text, "ÄÖ" text);
INSERT INTO "Odd ""Name"""."Tab.le" VALUES (1, 'from', 'umlaut'), (NULL, E'tab\there', E'new\nline');

-- triggers: row BEFORE/AFTER, statement with a transition table, on columns, with WHEN and arguments, a constraint
-- trigger, one disabled, one ALWAYS; INSTEAD OF on a view further down
CREATE TABLE audit.log (
    id bigint GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME audit.log_seq) PRIMARY KEY,
    tbl text NOT NULL,
    op text NOT NULL,
    detail text,
    arg text
);
ALTER TABLE audit.log OWNER TO eo_app;
-- SECURITY DEFINER (its owner eo_app owns audit.log): a cascaded delete runs the trigger as the referencing table's
-- owner, who may not write the log
CREATE FUNCTION audit.row_log() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = audit, pg_temp
AS $$
BEGIN
    INSERT INTO audit.log (tbl, op, detail, arg)
    VALUES (TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, TG_OP, TG_WHEN || ' ' || TG_LEVEL, TG_ARGV[0]);
    RETURN coalesce(NEW, OLD);
END
$$;
CREATE FUNCTION audit.statement_log() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO audit.log (tbl, op, detail)
    SELECT TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, TG_OP, 'rows ' || count(*) FROM new_rows;
    RETURN NULL;
END
$$;
CREATE FUNCTION app.orders_defaults() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
    NEW.status := lower(NEW.status);
    NEW.placed := coalesce(NEW.placed, timestamptz '2000-01-01 00:00+00');
    RETURN NEW;
END
$$;
ALTER FUNCTION audit.row_log() OWNER TO eo_app;
CREATE TRIGGER orders_defaults BEFORE INSERT OR UPDATE OF status ON app.orders
    FOR EACH ROW EXECUTE FUNCTION app.orders_defaults();
CREATE TRIGGER orders_audit AFTER INSERT OR DELETE ON app.orders
    FOR EACH ROW EXECUTE FUNCTION audit.row_log('orders');
CREATE TRIGGER orders_paid AFTER UPDATE ON app.orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status = 'paid')
    EXECUTE FUNCTION audit.row_log('paid');
CREATE TRIGGER orders_bulk AFTER UPDATE ON app.orders REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION audit.statement_log();
CREATE CONSTRAINT TRIGGER lines_check AFTER INSERT ON app.order_lines DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION audit.row_log('deferred');
CREATE TRIGGER customers_never BEFORE DELETE ON app.customers FOR EACH ROW EXECUTE FUNCTION audit.row_log('off');
ALTER TABLE app.customers DISABLE TRIGGER customers_never;
CREATE TRIGGER codes_always AFTER INSERT ON app.codes FOR EACH ROW EXECUTE FUNCTION audit.row_log('always');
ALTER TABLE app.codes ENABLE ALWAYS TRIGGER codes_always;
COMMENT ON TRIGGER orders_audit ON app.orders IS 'one audit row per inserted or deleted order';
INSERT INTO app.orders (customer_id, status, qty, unit_price) VALUES (110, 'OPEN', 1, 5.00);  -- fires, logged

-- RLS: enabled and forced, permissive and restrictive policies
CREATE TABLE app.secrets (
    id int PRIMARY KEY,
    owner name NOT NULL,
    body text
);
INSERT INTO app.secrets VALUES (1, 'eo_rls', 'mine'), (2, 'eo_app', 'theirs'), (3, 'eo_rls', 'mine too');
ALTER TABLE app.secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE app.secrets FORCE ROW LEVEL SECURITY;
CREATE POLICY secrets_own ON app.secrets FOR SELECT TO eo_rls, eo_app USING (owner = current_user);
CREATE POLICY secrets_insert ON app.secrets AS RESTRICTIVE FOR INSERT TO PUBLIC WITH CHECK (body <> '');
CREATE POLICY secrets_all ON app.secrets FOR ALL TO eo_app USING (true) WITH CHECK (owner = current_user);
COMMENT ON POLICY secrets_own ON app.secrets IS 'each role sees its own';
GRANT SELECT, INSERT ON app.secrets TO eo_rls, eo_app;
ALTER TABLE app.secrets OWNER TO eo_owner;
-- SECURITY DEFINER: counts as its owner (the superuser), whom RLS does not restrict
CREATE FUNCTION app.secret_count() RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = app, pg_temp COST 50
    AS 'SELECT count(*) FROM secrets';
REVOKE EXECUTE ON FUNCTION app.secret_count() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app.secret_count() TO eo_reader;
CREATE TABLE app.open_rls (id int, v text);
INSERT INTO app.open_rls VALUES (1, 'enabled, no policy, not forced');
ALTER TABLE app.open_rls ENABLE ROW LEVEL SECURITY;

-- -------------------------------------------------------------------------------------------------- partitioning
CREATE TABLE parts.measurements (
    id int NOT NULL,
    at date NOT NULL,
    kind text NOT NULL,
    dropped int,
    value numeric,
    PRIMARY KEY (id, at, kind),
    CONSTRAINT measurements_sane CHECK (value > -1000)
) PARTITION BY RANGE (at);
ALTER TABLE parts.measurements DROP COLUMN dropped;
CREATE TABLE parts.measurements_2023 PARTITION OF parts.measurements
    FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
-- a sub-partitioned partition, by list, with a default sub-partition
CREATE TABLE parts.measurements_2024 PARTITION OF parts.measurements
    FOR VALUES FROM ('2024-01-01') TO ('2025-01-01') PARTITION BY LIST (kind);
CREATE TABLE parts.measurements_2024_temp PARTITION OF parts.measurements_2024 FOR VALUES IN ('temp', 'heat');
CREATE TABLE parts.measurements_2024_rest PARTITION OF parts.measurements_2024 DEFAULT;
CREATE TABLE parts.measurements_other PARTITION OF parts.measurements DEFAULT;
-- a partition made on its own, with its columns in another order, then attached
CREATE TABLE parts.measurements_2025 (value numeric, kind text NOT NULL, at date NOT NULL, id int NOT NULL,
                                      CONSTRAINT m2025_value CHECK (value >= 0),
                                      CONSTRAINT measurements_sane CHECK (value > -1000));  -- merged on attach
ALTER TABLE parts.measurements ATTACH PARTITION parts.measurements_2025
    FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
INSERT INTO parts.measurements
SELECT g, date '2023-06-01' + g * 7, (ARRAY['temp', 'rain', 'heat', 'wind'])[1 + g % 4], g * 0.5
FROM generate_series(1, 200) g;
CREATE INDEX measurements_kind ON parts.measurements (kind);
CREATE INDEX measurements_2025_value ON parts.measurements_2025 (value);
CREATE TRIGGER measurements_audit AFTER INSERT ON parts.measurements
    FOR EACH ROW EXECUTE FUNCTION audit.row_log('measurements');
COMMENT ON TABLE parts.measurements IS 'range partitioned by date';

CREATE TABLE parts.by_region (id int, region text NOT NULL, v text) PARTITION BY LIST (region);
CREATE TABLE parts.by_region_eu PARTITION OF parts.by_region FOR VALUES IN ('de', 'fr', 'it');
CREATE TABLE parts.by_region_am PARTITION OF parts.by_region FOR VALUES IN ('us', 'ca', NULL);
INSERT INTO parts.by_region VALUES (1, 'de', 'x'), (2, 'us', 'y'), (3, 'fr', NULL);

CREATE TABLE parts.by_hash (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE parts.by_hash_0 PARTITION OF parts.by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE parts.by_hash_1 PARTITION OF parts.by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE parts.by_hash_2 PARTITION OF parts.by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2)
    WITH (fillfactor = 90);
INSERT INTO parts.by_hash SELECT g, 'h' || g FROM generate_series(1, 30) g;

-- an expression partition key
CREATE TABLE parts.by_name (name text NOT NULL, v int) PARTITION BY RANGE ((lower(name)));
CREATE TABLE parts.by_name_am PARTITION OF parts.by_name FOR VALUES FROM (MINVALUE) TO ('n');
CREATE TABLE parts.by_name_nz PARTITION OF parts.by_name FOR VALUES FROM ('n') TO (MAXVALUE);
INSERT INTO parts.by_name VALUES ('Alice', 1), ('bob', 2), ('Nina', 3), ('zed', 4);

-- a foreign key to and from a partitioned table
CREATE TABLE parts.readings_ref (
    measurement_id int NOT NULL,
    measurement_at date NOT NULL,
    measurement_kind text NOT NULL,
    FOREIGN KEY (measurement_id, measurement_at, measurement_kind) REFERENCES parts.measurements ON DELETE CASCADE
);
INSERT INTO parts.readings_ref SELECT id, at, kind FROM parts.measurements WHERE id % 20 = 0;
ALTER TABLE parts.by_region ADD CONSTRAINT by_region_slot_fk FOREIGN KEY (id) REFERENCES app.slots (id);

-- ----------------------------------------------------------------------------------------------------- inheritance
CREATE TABLE app.vehicles (id int PRIMARY KEY, wheels int NOT NULL CHECK (wheels >= 0), name text);
CREATE TABLE app.cars (doors int DEFAULT 4, CONSTRAINT cars_only CHECK (doors > 0) NO INHERIT) INHERITS (app.vehicles);
CREATE TABLE app.boats (keel boolean, name text DEFAULT 'boat') INHERITS (app.vehicles);  -- merged column
-- multiple inheritance: the two parents' defaults of name conflict, the child settles it
CREATE TABLE app.amphibians (name text DEFAULT 'amphibian') INHERITS (app.cars, app.boats);
INSERT INTO app.vehicles VALUES (1, 2, 'bike');
INSERT INTO app.cars VALUES (2, 4, 'car', 5);
INSERT INTO app.boats (id, wheels, keel) VALUES (3, 0, true);
INSERT INTO app.amphibians VALUES (4, 4, 'duck', 2, false);

-- ----------------------------------------------------------------------------------------------------------- views
CREATE VIEW app.open_orders AS
    SELECT id, customer_id, status, qty, unit_price FROM app.orders WHERE status = 'open'
    WITH CASCADED CHECK OPTION;
CREATE VIEW app.cheap_open_orders WITH (security_barrier = true) AS
    SELECT * FROM app.open_orders WHERE unit_price < 50
    WITH LOCAL CHECK OPTION;
CREATE VIEW app.customer_totals WITH (security_invoker = true) AS
    SELECT c.id, c.name, count(o.id) AS orders, coalesce(sum(o.amount), 0) AS total
    FROM app.customers c LEFT JOIN app.orders o ON o.customer_id = c.id
    GROUP BY c.id, c.name;
CREATE RECURSIVE VIEW app.countdown_view (n) AS
    VALUES (5) UNION ALL SELECT n - 1 FROM countdown_view WHERE n > 1;
CREATE VIEW app.order_summary AS
    SELECT o.id, c.name, o.amount, app.twice(o.qty) AS twice_qty FROM app.orders o JOIN app.customers c
        ON c.id = o.customer_id;
ALTER VIEW app.open_orders ALTER COLUMN status SET DEFAULT 'open';
ALTER VIEW app.order_summary OWNER TO eo_app;
COMMENT ON VIEW app.open_orders IS 'orders not yet paid';
COMMENT ON COLUMN app.open_orders.qty IS 'how many';
GRANT SELECT ON app.customer_totals TO eo_reader;
-- INSTEAD OF on a join view, and rules
CREATE FUNCTION app.order_summary_insert() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO app.orders (customer_id, qty, unit_price)
    SELECT c.id, 1, NEW.amount FROM app.customers c WHERE c.name = NEW.name;
    RETURN NEW;
END
$$;
CREATE TRIGGER order_summary_insert INSTEAD OF INSERT ON app.order_summary
    FOR EACH ROW EXECUTE FUNCTION app.order_summary_insert();
CREATE TABLE app.archive (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, what text);
INSERT INTO app.archive VALUES (1, 'kept forever');
CREATE RULE archive_keep AS ON DELETE TO app.archive DO INSTEAD NOTHING;
CREATE RULE archive_log AS ON UPDATE TO app.archive
    DO ALSO INSERT INTO audit.log (tbl, op, detail) VALUES ('app.archive', 'UPDATE', 'rule ' || NEW.id);
CREATE RULE archive_never AS ON INSERT TO app.archive WHERE NEW.what = 'never' DO INSTEAD NOTHING;
ALTER TABLE app.archive DISABLE RULE archive_never;
COMMENT ON RULE archive_keep ON app.archive IS 'the archive forgets nothing';
CREATE VIEW app.archive_view AS SELECT id, what FROM app.archive;
CREATE RULE archive_view_insert AS ON INSERT TO app.archive_view
    DO INSTEAD INSERT INTO app.archive VALUES (NEW.id, upper(NEW.what));

-- materialized views: populated (with a unique index, so it can be refreshed concurrently) and not
CREATE MATERIALIZED VIEW app.mv_totals AS
    SELECT customer_id, count(*) AS n, sum(amount) AS total FROM app.orders GROUP BY customer_id;
CREATE UNIQUE INDEX mv_totals_customer ON app.mv_totals (customer_id);
CREATE MATERIALIZED VIEW app.mv_later AS SELECT id, code FROM app.items WHERE id <= 5 WITH NO DATA;
CREATE MATERIALIZED VIEW app.mv_of_mv AS SELECT sum(n) AS orders FROM app.mv_totals;
ALTER MATERIALIZED VIEW app.mv_totals OWNER TO eo_owner;
COMMENT ON MATERIALIZED VIEW app.mv_totals IS 'orders per customer';
GRANT SELECT ON app.mv_totals TO eo_reader;

-- -------------------------------------------------------------------------------------- default privileges, owners
ALTER DEFAULT PRIVILEGES FOR ROLE eo_owner IN SCHEMA app GRANT SELECT ON TABLES TO eo_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE eo_owner IN SCHEMA app GRANT USAGE ON SEQUENCES TO eo_app;
ALTER DEFAULT PRIVILEGES FOR ROLE eo_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE eo_owner GRANT EXECUTE ON FUNCTIONS TO eo_app;
ALTER DEFAULT PRIVILEGES FOR ROLE eo_app REVOKE USAGE ON TYPES FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE eo_owner GRANT USAGE ON SCHEMAS TO eo_reader;
-- objects made by eo_owner itself get the default privileges above
SET ROLE eo_owner;
CREATE TABLE app.owned (id int PRIMARY KEY, v text);
INSERT INTO app.owned VALUES (1, 'made by eo_owner');
CREATE FUNCTION app.owned_count() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM app.owned';
RESET ROLE;
-- a grant made by a role holding the grant option (pg_dump must replay it as that role)
SET ROLE eo_app;
GRANT INSERT ON app.customers TO eo_reader;
RESET ROLE;

-- -------------------------------------------------------------------- search_path-dependent bodies: schema s2
-- s2.things and public.things differ in their rows: a body without a qualified name counts whichever the caller's
-- search_path finds; one with SET search_path, or a SQL-standard body (bound when created), always s2's
CREATE TABLE s2.things (id int PRIMARY KEY, v text);
INSERT INTO s2.things SELECT g, 's2 ' || g FROM generate_series(1, 3) g;
CREATE TABLE public.things (id int PRIMARY KEY, v text);
INSERT INTO public.things SELECT g, 'public ' || g FROM generate_series(1, 5) g;
CREATE FUNCTION s2.count_things() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM things';
CREATE FUNCTION s2.count_things_plpgsql() RETURNS bigint LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN (SELECT count(*) FROM things);
END
$$;
CREATE FUNCTION s2.count_things_pinned() RETURNS bigint LANGUAGE sql STABLE SET search_path = s2, pg_temp
    AS 'SELECT count(*) FROM things';
SET search_path = s2, public;
CREATE FUNCTION s2.count_things_atomic() RETURNS bigint LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT count(*) FROM things;
END;
CREATE VIEW s2.things_view AS SELECT id, v FROM things;
RESET search_path;
ALTER FUNCTION s2.count_things() OWNER TO eo_app;

-- ---------------------------------------------------------- foreign data, publications, subscriptions, large objects
CREATE FOREIGN DATA WRAPPER eo_fdw OPTIONS (debug 'true');
CREATE SERVER eo_server FOREIGN DATA WRAPPER eo_fdw OPTIONS (host 'nowhere.invalid', port '5432');
CREATE USER MAPPING FOR eo_app SERVER eo_server OPTIONS (user 'remote_app');
CREATE USER MAPPING FOR PUBLIC SERVER eo_server;
CREATE FOREIGN TABLE app.remote_orders (id int NOT NULL, status text OPTIONS (column_name 'state'))
    SERVER eo_server OPTIONS (table_name 'orders');
COMMENT ON FOREIGN DATA WRAPPER eo_fdw IS 'no handler';
COMMENT ON SERVER eo_server IS 'never reached';
COMMENT ON FOREIGN TABLE app.remote_orders IS 'elsewhere';
GRANT USAGE ON FOREIGN DATA WRAPPER eo_fdw TO eo_owner;
GRANT USAGE ON FOREIGN SERVER eo_server TO eo_app;
ALTER SERVER eo_server OWNER TO eo_owner;
ALTER FOREIGN TABLE app.remote_orders OWNER TO eo_owner;

CREATE PUBLICATION eo_pub FOR TABLE app.items, app.customers (id, name) WHERE (id > 100)
    WITH (publish = 'insert, update');
CREATE PUBLICATION eo_pub_schema FOR TABLES IN SCHEMA parts WITH (publish_via_partition_root = true);
COMMENT ON PUBLICATION eo_pub IS 'items and some customers';
ALTER PUBLICATION eo_pub_schema OWNER TO eo_owner;
CREATE PUBLICATION eo_pub_all FOR ALL TABLES WITH (publish = 'truncate');
CREATE SUBSCRIPTION eo_sub CONNECTION 'host=nowhere.invalid dbname=none' PUBLICATION eo_pub
    WITH (connect = false, enabled = false, slot_name = NONE);
COMMENT ON SUBSCRIPTION eo_sub IS 'never connected';

SELECT lo_from_bytea(4242001, 'hello, large object');
SELECT lo_from_bytea(4242002, decode(repeat('0123456789abcdef', 1000), 'hex'));  -- 8000 bytes, 4 pages
COMMENT ON LARGE OBJECT 4242001 IS 'a greeting';
ALTER LARGE OBJECT 4242001 OWNER TO eo_app;
GRANT SELECT ON LARGE OBJECT 4242001 TO eo_reader;
GRANT SELECT, UPDATE ON LARGE OBJECT 4242002 TO eo_app;

-- -------------------------------------------------------------------------------------- newer kinds, behind \if
\if :pg17
-- MAINTAIN (17+)
GRANT MAINTAIN ON app.items TO eo_app;
\endif
\if :pg18
-- virtual generated columns, named NOT NULL constraints, NOT NULL NOT VALID over a NULL, NOT ENFORCED constraints
CREATE TABLE app.v18 (
    id int PRIMARY KEY,
    a int,
    doubled int GENERATED ALWAYS AS (a * 2) VIRTUAL,
    b int CONSTRAINT v18_b_nn NOT NULL,
    c int,
    CONSTRAINT v18_c_small CHECK (c < 100) NOT ENFORCED
);
INSERT INTO app.v18 (id, a, b, c) VALUES (1, 10, 1, 5), (2, NULL, 2, NULL), (3, 7, 3, 500);
ALTER TABLE app.v18 ADD CONSTRAINT v18_c_nn NOT NULL c NOT VALID;
ALTER TABLE app.v18 ADD CONSTRAINT v18_a_fk FOREIGN KEY (a) REFERENCES app.slots (id) NOT ENFORCED;
-- temporal keys: PRIMARY KEY and UNIQUE WITHOUT OVERLAPS, and a foreign key with PERIOD
CREATE TABLE app.rooms_t (
    room int,
    valid daterange,
    rate numeric,
    PRIMARY KEY (room, valid WITHOUT OVERLAPS)
);
INSERT INTO app.rooms_t VALUES (1, '[2024-01-01,2024-07-01)', 100), (1, '[2024-07-01,2025-01-01)', 120),
                               (2, '[2024-01-01,2025-01-01)', 80);
CREATE TABLE app.stays_t (
    id int,
    room int,
    valid daterange,
    UNIQUE (id, valid WITHOUT OVERLAPS),
    FOREIGN KEY (room, PERIOD valid) REFERENCES app.rooms_t (room, PERIOD valid)
);
INSERT INTO app.stays_t VALUES (1, 1, '[2024-06-20,2024-07-10)'), (2, 2, '[2024-03-01,2024-03-05)');
-- a NOT VALID foreign key on a partitioned table (refused before 18), over rows that break it
ALTER TABLE parts.by_hash ADD CONSTRAINT by_hash_slot_fk FOREIGN KEY (id) REFERENCES app.slots (id) NOT VALID;
\endif

-- -------------------------------------------------------------------------------------------------- event trigger
-- last, so that it logs none of the DDL above
CREATE FUNCTION audit.on_ddl() RETURNS event_trigger LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO audit.log (tbl, op, detail) VALUES ('-', tg_tag, 'event ' || tg_event);
END
$$;
CREATE EVENT TRIGGER eo_ddl ON ddl_command_end WHEN TAG IN ('CREATE TABLE', 'CREATE VIEW')
    EXECUTE FUNCTION audit.on_ddl();
CREATE EVENT TRIGGER eo_never ON sql_drop EXECUTE FUNCTION audit.on_ddl();
ALTER EVENT TRIGGER eo_never DISABLE;
COMMENT ON EVENT TRIGGER eo_ddl IS 'logs created tables and views';
