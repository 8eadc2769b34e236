-- The table's valid btree indexes and their files: their leaf entries tell which rows a lost page held.
SELECT ic.relname::text, pg_relation_filepath(ic.oid) AS filepath, pg_relation_size(ic.oid)::bigint AS size
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
WHERE i.indrelid = %(oid)s AND am.amname = 'btree' AND i.indisvalid AND i.indislive
ORDER BY ic.relname
