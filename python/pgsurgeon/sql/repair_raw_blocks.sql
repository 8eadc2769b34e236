-- Raw pages of a relation fork through the buffer manager (pageinspect), any set of blocks in one statement: the
-- good copies of scattered damaged pages come in a few round trips. The function name is schema-qualified by the
-- caller.
SELECT b, {fn}(%(rel)s::oid::regclass::text, %(fork)s, b) FROM unnest(%(blocks)s::bigint[]) b
