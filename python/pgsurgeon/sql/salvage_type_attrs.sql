-- Attributes of composite types (by their pg_class OID), dropped ones too: composite values still hold them.
SELECT a.attrelid::bigint, a.attnum::int, a.attname::text, a.attlen::int, a.attalign::text, a.attisdropped,
       a.atttypid::bigint
FROM pg_attribute a
WHERE a.attrelid = ANY(%(relids)s::oid[]) AND a.attnum > 0
ORDER BY a.attrelid, a.attnum
