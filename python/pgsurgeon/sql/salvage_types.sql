-- Type facts for printing values: domains are followed to their base type by the caller, arrays to their element.
SELECT t.oid::bigint, t.typname::text, t.typtype::text, t.typlen::int, t.typalign::text, t.typbyval,
       t.typdelim::text, t.typelem::bigint, t.typbasetype::bigint, t.typcategory::text
FROM pg_type t
WHERE t.oid = ANY(%(oids)s::oid[])
