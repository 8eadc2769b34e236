-- The one relatives query: the chosen relations (every table and materialized view when none is chosen), each
-- followed by its TOAST table, the TOAST table's index, its own indexes and, for a chosen index, its table
-- ('heap-of-index'); then the chosen indexes. `table_oid` is the relation each row belongs to. Temporary
-- relations are left out: their pages live in their own session's local buffers. Nothing here takes a lock on
-- the relations (their sizes do: catalog_sizes.sql). Callers order the rows as they need beyond (table_oid, ord).
WITH chosen AS (
    SELECT c.oid, c.reltoastrelid FROM pg_class c
    WHERE c.relpersistence <> 't'
      AND (%(tables)s::oid[] IS NULL AND %(indexes)s::oid[] IS NULL AND c.relkind IN ('r', 'm')
           OR c.oid = ANY (%(tables)s::oid[]))
), rels AS (
    SELECT 'table' AS role, c.oid, c.oid AS table_oid, 0 AS ord FROM chosen c
    UNION ALL
    SELECT 'toast', c.reltoastrelid, c.oid, 1 FROM chosen c WHERE c.reltoastrelid <> 0
    UNION ALL
    SELECT 'toast-index', i.indexrelid, c.oid, 2
    FROM chosen c JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE c.reltoastrelid <> 0
    UNION ALL
    SELECT 'index', i.indexrelid, i.indrelid, 3 FROM chosen c JOIN pg_index i ON i.indrelid = c.oid
    UNION ALL
    SELECT 'heap-of-index', i.indrelid, c.oid, 4 FROM chosen c JOIN pg_index i ON i.indexrelid = c.oid
    UNION ALL
    SELECT 'index', i.indexrelid, i.indrelid, 3 FROM pg_index i WHERE i.indexrelid = ANY (%(indexes)s::oid[])
)
SELECT DISTINCT ON (r.table_oid, r.ord, r.oid)
       r.role,
       r.oid::bigint AS oid,
       r.table_oid::bigint AS table_oid,
       c.oid::regclass::text AS regclass,
       n.nspname::text AS schema,
       c.relname::text AS name,
       c.relkind::text AS relkind,
       c.relpersistence::text AS persistence,
       coalesce(am.amname::text, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap'
                                      WHEN c.relkind = 'S' THEN 'sequence' END) AS amname,
       -- an access method created over heap's own handler stores heap pages (the name alone does not tell)
       coalesce(am.amhandler::regproc::text, '') AS amhandler,
       pg_relation_filepath(c.oid) AS filepath,
       pg_relation_filenode(c.oid)::bigint AS relfilenode,
       c.relnatts::int AS natts,
       c.reltoastrelid::bigint AS toast_oid,
       coalesce(i.indisprimary, false) AS primary_key,
       coalesce(i.indisexclusion, false) AS exclusion,
       coalesce(i.indisvalid, true) AS valid,
       coalesce(i.indisvalid AND i.indisready, true) AS usable,
       i.indpred IS NOT NULL AS partial,
       n.nspname IN ('pg_catalog', 'information_schema') AS system
FROM rels r
JOIN pg_class c ON c.oid = r.oid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relpersistence <> 't'
ORDER BY r.table_oid, r.ord, r.oid
