-- The user indexes of these access methods: the ones a server message that names no index may be about.
SELECT c.oid::regclass::text
FROM pg_class c
JOIN pg_am a ON a.oid = c.relam
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'i'
  AND a.amname = ANY(%(ams)s)
  AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
ORDER BY 1
LIMIT %(limit)s
