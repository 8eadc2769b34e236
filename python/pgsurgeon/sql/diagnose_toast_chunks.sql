-- The chunks of these TOAST values as the TOAST table holds them, read without its index (a sequential scan: a chunk
-- whose chunk_id or chunk_seq was altered is still found under its old key through the index). Only run on a TOAST
-- table whose pages all passed the page checks.
SELECT chunk_id::bigint, count(*), min(chunk_seq), max(chunk_seq), sum(octet_length(chunk_data))::bigint
FROM {toast}
WHERE chunk_id = ANY(%(values)s::oid[])
GROUP BY chunk_id
