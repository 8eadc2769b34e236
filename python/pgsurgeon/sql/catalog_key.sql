-- A table's unique key: the primary key, else a valid unique btree index without a predicate or expression over
-- plain NOT NULL columns (no generated column; INCLUDE columns left out), the fewest columns first. A carved row
-- whose key is readable in another row is a copy of that row; repair's ledger counts rows by it.
SELECT i.indexrelid::bigint,
       array_agg(a.attname::text ORDER BY k.n),
       array_agg(a.atttypid::bigint ORDER BY k.n),
       array_agg(a.attnum::int ORDER BY k.n)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k (attnum, n)
LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
WHERE i.indrelid = %(oid)s AND i.indisunique AND i.indisvalid AND i.indislive AND i.indpred IS NULL
    AND i.indexprs IS NULL AND am.amname = 'btree' AND k.n <= i.indnkeyatts
GROUP BY i.indexrelid, i.indisprimary
HAVING bool_and(a.attnotnull IS TRUE AND a.attgenerated = '' AND NOT a.attisdropped)
ORDER BY i.indisprimary DESC, count(*), i.indexrelid
LIMIT 1
