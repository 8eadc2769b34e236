-- Attributes of composite types (by their pg_class OID), dropped ones too: composite values still hold them. A table's
-- row type may have missing values (columns added with a default): record_out prints those for older values.
SELECT a.attrelid::bigint, a.attnum::int, a.attname::text, a.attlen::int, a.attalign::text, a.attisdropped,
       a.atttypid::bigint,
       CASE WHEN a.atthasmissing AND NOT a.attisdropped THEN (a.attmissingval::text::text[])[1] END AS missing
FROM pg_attribute a
WHERE a.attrelid = ANY(%(relids)s::oid[]) AND a.attnum > 0
ORDER BY a.attrelid, a.attnum
