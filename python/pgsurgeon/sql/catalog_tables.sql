-- Ordinary tables, materialized views and partitions of the connected database that hold data, biggest first (so
-- the longest dumps start early), with their sizes.
SELECT n.nspname::text AS schema, c.relname::text AS name, c.relkind::text,
       pg_total_relation_size(c.oid)::bigint AS size
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%%'
  AND n.nspname NOT LIKE 'pg\_temp\_%%'
  AND c.relpersistence <> 't'
ORDER BY pg_total_relation_size(c.oid) DESC, n.nspname, c.relname
