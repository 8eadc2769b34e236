-- What the server prints for each object a reg* column may name, with this session's search_path (regclassout and
-- its siblings qualify and quote as needed), keyed by the reg* type OID; only for the types in %(types)s. For
-- aclitem (1033), role names unquoted (aclitemout quotes them itself).
SELECT 2205::bigint, oid::bigint, oid::regclass::text FROM pg_class WHERE 2205 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 2206, oid, oid::regtype::text FROM pg_type WHERE 2206 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 24, oid, oid::regproc::text FROM pg_proc WHERE 24 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 2202, oid, oid::regprocedure::text FROM pg_proc WHERE 2202 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 2203, oid, oid::regoper::text FROM pg_operator WHERE 2203 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 2204, oid, oid::regoperator::text FROM pg_operator WHERE 2204 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 4089, oid, oid::regnamespace::text FROM pg_namespace WHERE 4089 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 4096, oid, oid::regrole::text FROM pg_roles WHERE 4096 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 3734, oid, oid::regconfig::text FROM pg_ts_config WHERE 3734 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 3769, oid, oid::regdictionary::text FROM pg_ts_dict WHERE 3769 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 4191, oid, oid::regcollation::text FROM pg_collation WHERE 4191 = ANY(%(types)s::bigint[])
UNION ALL
SELECT 1033, oid, rolname::text FROM pg_roles WHERE 1033 = ANY(%(types)s::bigint[])
