-- The relation `corrupt` damages and its relatives, one row each: the relation itself ('table'), its TOAST
-- table and TOAST index, its indexes, and for an index its table ('heap-of-index'). Paths are relative to
-- the data directory.
WITH rel AS (
    SELECT c.oid, c.reltoastrelid, c.relkind
    FROM pg_class c
    WHERE c.oid = to_regclass(%(table)s)
), relatives AS (
    SELECT 'table' AS role, rel.oid, false AS primary_key FROM rel
    UNION ALL
    SELECT 'toast', rel.reltoastrelid, false FROM rel WHERE rel.reltoastrelid <> 0
    UNION ALL
    SELECT 'toast-index', i.indexrelid, false FROM rel JOIN pg_index i ON i.indrelid = rel.reltoastrelid
    UNION ALL
    SELECT 'index', i.indexrelid, i.indisprimary FROM rel JOIN pg_index i ON i.indrelid = rel.oid
    UNION ALL
    SELECT 'heap-of-index', i.indrelid, false FROM rel JOIN pg_index i ON i.indexrelid = rel.oid
)
SELECT r.role,
       c.oid::regclass::text AS relname,
       c.relkind::text AS relkind,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap' END) AS amname,
       pg_relation_filepath(c.oid) AS filepath,
       r.primary_key
FROM relatives r
JOIN pg_class c ON c.oid = r.oid
LEFT JOIN pg_am am ON am.oid = c.relam
ORDER BY r.role, r.primary_key DESC, c.relname
