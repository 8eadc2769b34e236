-- Column layout of a relation, for walking its tuples (dropped columns still take space).
SELECT a.attnum, a.attname::text, a.attlen, a.attalign::text, a.attisdropped
FROM pg_attribute a
WHERE a.attrelid = to_regclass(%(relname)s) AND a.attnum > 0
ORDER BY a.attnum
