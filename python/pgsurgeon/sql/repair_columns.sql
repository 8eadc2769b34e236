-- Columns of a table as stored (dropped ones too, they still take room in old tuples): what finding TOAST pointers
-- in raw tuples and inserting carved rows back need.
SELECT a.attnum::int, a.attname::text, a.attlen::int, a.attalign::text, a.attisdropped,
       a.attgenerated::text, a.attidentity::text
FROM pg_attribute a
WHERE a.attrelid = %(oid)s AND a.attnum > 0
ORDER BY a.attnum
