-- How to use one index from SQL (diagnose's probe of a damaged GIN, GiST, SP-GiST, hash or BRIN index): the text of
-- its first key column (a column name or an expression, as pg_get_indexdef prints it), its predicate,
-- and an operator of the first column's operator family that holds between a key and itself, schema-qualified:
-- equality first, then "same", "contains" (a value contains itself, an empty array or range too), "overlaps".
-- None when the family has no such operator; then whether the key is a tsvector (its @@ takes a tsquery, which
-- diagnose builds from the key's own lexemes).
SELECT pg_get_indexdef(i.indexrelid, 1, true),
       pg_get_expr(i.indpred, i.indrelid),
       (SELECT 'OPERATOR(' || quote_ident(n.nspname) || '.' || o.oprname || ')'
        FROM pg_amop ao
        JOIN pg_operator o ON o.oid = ao.amopopr
        JOIN pg_namespace n ON n.oid = o.oprnamespace
        WHERE ao.amopfamily = oc.opcfamily AND ao.amoppurpose = 's'
          AND ao.amoplefttype = oc.opcintype AND ao.amoprighttype = oc.opcintype
          AND o.oprname IN ('=', '~=', '@>', '&&')
        ORDER BY array_position(ARRAY['=', '~=', '@>', '&&'], o.oprname::text)
        LIMIT 1),
       oc.opcintype = 'pg_catalog.tsvector'::pg_catalog.regtype
FROM pg_index i
JOIN pg_opclass oc ON oc.oid = i.indclass[0]
WHERE i.indexrelid = %(index)s
