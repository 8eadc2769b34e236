-- A relation's size in bytes (fails when one of its segment files is missing).
SELECT pg_relation_size(%(oid)s::oid)::bigint
