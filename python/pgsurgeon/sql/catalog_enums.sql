-- Labels of enum types, by the pg_enum OID a column stores.
SELECT e.enumtypid::bigint, e.oid::bigint, e.enumlabel::text
FROM pg_enum e
WHERE e.enumtypid = ANY(%(oids)s::oid[])
