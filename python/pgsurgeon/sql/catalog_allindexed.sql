-- The btree indexes whose heapallindexed check the core can do from the files: every column a plain table column
-- (no expression), no predicate, indcheckxmin off (amcheck then waits for the index to be old enough), and each
-- index column stored as the table column's own type (name_ops, for one, stores name columns as cstring). For
-- each: its columns' table attnums, its own pg_attribute rows, and its table's rows up to the last one it uses.
SELECT i.indexrelid::bigint AS index_oid,
       i.indrelid::bigint AS table_oid,
       greatest(c.reltuples, 0)::bigint AS reltuples,
       (i.indkey::int2[])::int[] AS keys,
       (SELECT json_agg(json_build_object(
                   'attnum', a.attnum, 'attlen', a.attlen, 'attalign', a.attalign, 'attbyval', a.attbyval,
                   'attisdropped', a.attisdropped, 'typname', a.atttypid::regtype::text,
                   'attstorage', a.attstorage) ORDER BY a.attnum)
        FROM pg_attribute a WHERE a.attrelid = i.indexrelid AND a.attnum > 0) AS index_attrs,
       (SELECT json_agg(json_build_object(
                   'attnum', a.attnum, 'attlen', a.attlen, 'attalign', a.attalign, 'attbyval', a.attbyval,
                   'attisdropped', a.attisdropped, 'typname', coalesce(a.atttypid::regtype::text, ''),
                   'attstorage', a.attstorage) ORDER BY a.attnum)
        FROM pg_attribute a
        WHERE a.attrelid = i.indrelid AND a.attnum > 0
          AND a.attnum <= (SELECT max(k) FROM unnest(i.indkey::int2[]) k)) AS table_attrs
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
WHERE i.indexrelid = ANY (%(oids)s::oid[])
  AND i.indexprs IS NULL AND i.indpred IS NULL AND NOT i.indcheckxmin
  AND NOT (0 = ANY (i.indkey::int2[]))
  AND NOT EXISTS (
      SELECT 1
      FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
      JOIN pg_attribute ta ON ta.attrelid = i.indrelid AND ta.attnum = k.attnum
      JOIN pg_attribute ia ON ia.attrelid = i.indexrelid AND ia.attnum = k.n
      WHERE ta.atttypid <> ia.atttypid OR ta.attlen <> ia.attlen OR ta.attalign <> ia.attalign)
