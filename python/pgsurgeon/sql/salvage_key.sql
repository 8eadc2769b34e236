-- The table's unique key, by column name: the primary key, else a valid unique btree index without a predicate over
-- plain NOT NULL columns (no expression, no generated column). A carved row whose key is readable in another row is
-- a copy of that row (salvage keeps it apart).
SELECT array_agg(a.attname::text ORDER BY k.n)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k (attnum, n)
LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
WHERE i.indrelid = %(oid)s AND i.indisunique AND i.indisvalid AND i.indislive AND i.indpred IS NULL
    AND am.amname = 'btree' AND k.n <= i.indnkeyatts
GROUP BY i.indexrelid, i.indisprimary
HAVING bool_and(a.attnotnull IS TRUE AND a.attgenerated = '' AND NOT a.attisdropped)
ORDER BY i.indisprimary DESC, count(*), i.indexrelid
LIMIT 1
