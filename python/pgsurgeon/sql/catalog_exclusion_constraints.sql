-- The exclusion constraints of one table that indexes back: the constraint's and index's names, and per key column
-- (in index order) the column's name and the operator the constraint compares it with (pg_constraint.conexclop),
-- schema-qualified. A key that is an expression (conkey 0) has no column name: such a constraint is not checked.
SELECT con.conname::text,
       con.conindid::regclass::text,
       pg_get_expr(i.indpred, i.indrelid) AS predicate,
       array_agg(a.attname::text ORDER BY k.ord) AS columns,
       array_agg(quote_ident(n.nspname) || '.' || o.oprname ORDER BY k.ord) AS operators
FROM pg_constraint con
JOIN pg_index i ON i.indexrelid = con.conindid
CROSS JOIN LATERAL unnest(con.conkey, con.conexclop) WITH ORDINALITY AS k(attnum, opoid, ord)
LEFT JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
JOIN pg_operator o ON o.oid = k.opoid
JOIN pg_namespace n ON n.oid = o.oprnamespace
WHERE con.conrelid = %(table)s AND con.contype = 'x'
GROUP BY con.oid, con.conname, con.conindid, i.indpred, i.indrelid
ORDER BY con.conname
