-- The relations diagnose checks in the connected database: the chosen tables (every table and materialized
-- view when none is chosen), each followed by its TOAST table, the TOAST table's index and its own indexes, and
-- the chosen indexes. Temporary tables are skipped: their pages live in their session's local buffers.
-- Nothing here takes a lock on the relations (their sizes do: diagnose_sizes.sql).
WITH chosen AS (
    SELECT c.oid FROM pg_class c
    WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
      AND (%(tables)s::oid[] IS NULL AND %(indexes)s::oid[] IS NULL OR c.oid = ANY (%(tables)s::oid[]))
), rels AS (
    SELECT 'table' AS role, c.oid, c.oid AS table_oid, 0 AS ord FROM chosen c
    UNION ALL
    SELECT 'toast', t.reltoastrelid, t.oid, 1 FROM chosen c JOIN pg_class t ON t.oid = c.oid WHERE t.reltoastrelid <> 0
    UNION ALL
    SELECT 'toast-index', i.indexrelid, t.oid, 2
    FROM chosen c JOIN pg_class t ON t.oid = c.oid JOIN pg_index i ON i.indrelid = t.reltoastrelid
    WHERE t.reltoastrelid <> 0
    UNION ALL
    SELECT 'index', i.indexrelid, i.indrelid, 3 FROM chosen c JOIN pg_index i ON i.indrelid = c.oid
    UNION ALL
    SELECT 'index', i.indexrelid, i.indrelid, 3 FROM pg_index i WHERE i.indexrelid = ANY (%(indexes)s::oid[])
)
SELECT DISTINCT ON (r.table_oid, r.ord, r.oid)
       r.role,
       r.oid::bigint AS oid,
       r.table_oid::bigint AS table_oid,
       c.oid::regclass::text AS relname,
       n.nspname AS schema,
       c.relname AS name,
       c.relkind::text AS relkind,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap' END) AS amname,
       pg_relation_filepath(c.oid) AS path,
       pg_relation_filenode(c.oid)::bigint AS relfilenode,
       c.relnatts::int AS natts,
       coalesce(i.indisvalid AND i.indisready, true) AS usable
FROM rels r
JOIN pg_class c ON c.oid = r.oid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relpersistence <> 't'
ORDER BY r.table_oid, r.ord, r.oid
