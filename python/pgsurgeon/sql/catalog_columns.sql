-- The one columns query: every attribute of a relation as stored (dropped ones too: old tuples still hold them),
-- with what walking, printing and inserting it needs; the missing value (rows written before the column was added)
-- as text; attgenerated ('s' stored, 'v' virtual (18+), '' ordinary), attidentity, and the type as SQL text.
SELECT a.attnum::int,
       a.attname::text,
       a.attlen::int,
       a.attalign::text,
       a.attbyval,
       a.attisdropped,
       a.attstorage::text,
       a.atttypid::bigint,
       coalesce(t.typname::text, '') AS typname,
       CASE WHEN a.atthasmissing AND NOT a.attisdropped THEN (a.attmissingval::text::text[])[1] END AS missing,
       a.attgenerated::text AS generated,
       a.attidentity::text AS identity,
       format_type(a.atttypid, a.atttypmod) AS type_sql
FROM pg_attribute a
LEFT JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = %(oid)s AND a.attnum > 0
ORDER BY a.attnum
