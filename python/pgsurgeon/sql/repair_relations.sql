-- The relations one repair touches: the table, its TOAST table, the TOAST table's index and the table's indexes,
-- with their files and sizes. Sizes take AccessShareLock on each relation.
WITH t AS (SELECT c.oid, c.reltoastrelid FROM pg_class c WHERE c.oid = %(oid)s),
rels AS (
    SELECT 'table' AS role, t.oid, 0 AS ord FROM t
    UNION ALL SELECT 'toast', t.reltoastrelid, 1 FROM t WHERE t.reltoastrelid <> 0
    UNION ALL SELECT 'toast-index', i.indexrelid, 2 FROM t JOIN pg_index i ON i.indrelid = t.reltoastrelid
    UNION ALL SELECT 'index', i.indexrelid, 3 FROM t JOIN pg_index i ON i.indrelid = t.oid
)
SELECT r.role,
       c.oid::bigint AS oid,
       n.nspname::text AS schema,
       c.relname::text AS name,
       c.oid::regclass::text AS regclass,
       c.relkind::text AS relkind,
       c.relpersistence::text AS relpersistence,
       coalesce(am.amname::text, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap' END) AS amname,
       pg_relation_filepath(c.oid) AS filepath,
       pg_relation_size(c.oid)::bigint AS size,
       coalesce(i.indisexclusion, false) AS exclusion,
       coalesce(i.indisvalid, true) AS valid,
       i.indpred IS NOT NULL AS partial,
       n.nspname IN ('pg_catalog', 'information_schema') AS system
FROM rels r
JOIN pg_class c ON c.oid = r.oid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid
ORDER BY r.ord, c.relname
