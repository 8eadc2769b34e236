-- The indexes of some tables (the repaired table and its TOAST table), valid or not: what a failed
-- REINDEX CONCURRENTLY left behind is found by comparing before and after.
SELECT i.indexrelid::bigint, ARRAY[n.nspname::text, c.relname::text], i.indisvalid
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.indrelid = ANY (%(oids)s::oid[])
