-- The visibility-map pages that cover each table's end and beyond, as the server has them: one statement for every
-- table instead of one each. A page the server refuses fails the whole statement; the caller then reads each
-- table's map alone.
SELECT t.oid, b, {get_raw_page}(t.oid::regclass::text, 'vm', b)
FROM unnest(%(oids)s::oid[], %(firsts)s::bigint[], %(lasts)s::bigint[]) AS t(oid, first, last)
CROSS JOIN LATERAL generate_series(t.first, t.last) AS b
ORDER BY t.oid, b
