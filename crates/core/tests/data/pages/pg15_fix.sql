-- How pg15_fix.{heap,toast,reldesc.json,expected.json} were made (PostgreSQL 15.18, 8 KB pages, no checksums):
-- psql -f this file, CHECKPOINT, copy base/5/<fix relfilenode> and its TOAST relfilenode,
-- pg_attribute for the RelDesc, pageinspect tuple_data_split for the expected attribute bytes.
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE EXTENSION IF NOT EXISTS amcheck;
DROP TABLE IF EXISTS fix;
CREATE TABLE fix (
  id int,
  big bigint,
  flag bool,
  small int2,
  t text,
  b bytea,
  n numeric,
  ts timestamp,
  gone text,
  vc varchar(40),
  f8 float8,
  lz text COMPRESSION lz4,
  arr int4[],
  ch "char",
  j jsonb
);
-- deterministic pseudo-random hex
CREATE OR REPLACE FUNCTION rnd_hex(seed int, nbytes int) RETURNS text LANGUAGE sql AS
$$ SELECT substr(string_agg(md5(seed::text || ':' || g::text), ''), 1, nbytes * 2)
   FROM generate_series(1, nbytes / 16 + 1) g $$;

-- small rows, NULL patterns
INSERT INTO fix (id, big, flag, small, t, b, n, ts, gone, vc, f8, lz, arr, ch, j)
SELECT i,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i::bigint * 1000003 END,
       CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END,
       (i % 300)::int2,
       CASE WHEN i % 4 = 0 THEN NULL
            WHEN i % 9 = 0 THEN rnd_hex(i, 100)            -- 200 chars: 4-byte header
            ELSE 'text ' || i END,
       CASE WHEN i % 3 = 0 THEN NULL ELSE decode(rnd_hex(i, i % 20), 'hex') END,
       CASE WHEN i % 6 = 0 THEN NULL ELSE (i * 1.25)::numeric END,
       CASE WHEN i % 8 = 0 THEN NULL ELSE timestamp '2024-01-02 03:04:05' + i * interval '1 hour' END,
       CASE WHEN i % 2 = 0 THEN 'gone ' || i END,
       CASE WHEN i % 10 = 0 THEN NULL ELSE 'vc' || i END,
       i / 3.0,
       CASE WHEN i % 11 = 0 THEN 'lz ' || i END,
       CASE WHEN i % 13 = 0 THEN ARRAY[i, i + 1, i + 2] END,
       chr(65 + i % 26)::"char",
       CASE WHEN i % 12 = 0 THEN jsonb_build_object('k', i, 's', 'v' || i) END
FROM generate_series(1, 90) i;

-- inline compressed pglz (repeat) and lz4
INSERT INTO fix (id, t, lz, flag) VALUES
  (1001, repeat('x', 5000), NULL, true),
  (1002, repeat('abc', 3000), repeat('lz4-inline ', 600), false),
  (1003, NULL, repeat('q', 7000), NULL);

-- external: incompressible bytea (uncompressed external), compressible text (pglz external),
-- lz4 external
INSERT INTO fix (id, b, flag) SELECT 2000 + i, decode(rnd_hex(2000 + i, 2400 + i * 600), 'hex'), true
FROM generate_series(1, 4) i;
INSERT INTO fix (id, t) SELECT 3000 + i, (SELECT string_agg(md5((3000 + i)::text || g::text) || ' lorem ipsum dolor sit amet consectetur ' || (g % 50), ' ')
                                            FROM generate_series(1, 110 + 20 * i) g)
FROM generate_series(1, 3) i;
INSERT INTO fix (id, lz) SELECT 4000 + i, (SELECT string_agg(md5((4000 + i)::text || g::text) || ' lz ' || (g % 50), ' ')
                                             FROM generate_series(1, 120) g)
FROM generate_series(1, 2) i;

ALTER TABLE fix DROP COLUMN gone;
ALTER TABLE fix ADD COLUMN extra int DEFAULT 42;
ALTER TABLE fix ADD COLUMN extra2 text DEFAULT 'dflt';

-- rows with the new columns (natts 17)
INSERT INTO fix (id, t, extra, extra2, b) SELECT 5000 + i, 'after ' || i, CASE WHEN i % 2 = 0 THEN i END,
   CASE WHEN i % 3 = 0 THEN NULL ELSE 'e2 ' || i END,
   CASE WHEN i = 5 THEN decode(rnd_hex(5005, 2500), 'hex') END
FROM generate_series(1, 20) i;

-- dead versions without VACUUM: delete a toasted row, update toasted columns, update another
-- column of a toasted row (the new version shares the pointer), an aborted insert
DELETE FROM fix WHERE id = 2001;
UPDATE fix SET b = decode(rnd_hex(9002, 4100), 'hex') WHERE id = 2002;
UPDATE fix SET flag = NOT flag WHERE id = 2003;
UPDATE fix SET t = t || ' more' WHERE id = 3001;
BEGIN;
INSERT INTO fix (id, b) VALUES (7001, decode(rnd_hex(7001, 4500), 'hex'));
ROLLBACK;
SELECT count(*) FROM fix WHERE id < 50;
CHECKPOINT;
