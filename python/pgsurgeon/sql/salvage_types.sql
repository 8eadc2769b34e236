-- Type facts for printing values: domains are followed to their base type by the caller, arrays to their element,
-- ranges to their subtype, multiranges to their range type, composites (typrelid) to their attributes.
SELECT t.oid::bigint, t.typname::text, t.typtype::text, t.typlen::int, t.typalign::text, t.typbyval,
       t.typdelim::text, t.typelem::bigint, t.typbasetype::bigint, t.typcategory::text,
       CASE WHEN t.typtype = 'c' THEN t.typrelid ELSE 0 END::bigint AS typrelid,
       coalesce(r.rngsubtype, mr.rngtypid, 0)::bigint AS subtype
FROM pg_type t
LEFT JOIN pg_range r ON r.rngtypid = t.oid
LEFT JOIN pg_range mr ON mr.rngmultitypid = t.oid
WHERE t.oid = ANY(%(oids)s::oid[])
