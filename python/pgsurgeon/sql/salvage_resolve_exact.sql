-- A --table argument read as the exact stored name (spaces, quotes and capitals kept): schema.name, or a name alone
-- that the search_path makes visible.
SELECT c.oid::bigint
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm', 'p')
  AND ((n.nspname = %(schema)s AND c.relname = %(name)s)
       OR (c.relname = %(sqlname)s AND pg_table_is_visible(c.oid)))
ORDER BY pg_table_is_visible(c.oid) DESC
LIMIT 1
