-- Raw pages of a relation fork through the buffer manager (pageinspect): never through the executor, so a damaged
-- tuple cannot crash the backend. The function name is schema-qualified by the caller.
SELECT b::bigint, {fn}(%(rel)s::oid::regclass::text, %(fork)s, b) FROM generate_series(%(a)s::bigint, %(b)s::bigint) b
