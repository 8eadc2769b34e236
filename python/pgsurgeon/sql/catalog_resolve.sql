-- A --table argument read as the exact stored name: schema and name (case, spaces and quotes kept), or a name
-- alone that the search_path makes visible.
SELECT c.oid::bigint, c.relkind::text
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = %(name)s
  AND (n.nspname = %(schema)s OR (%(schema)s::text IS NULL AND pg_table_is_visible(c.oid)))
