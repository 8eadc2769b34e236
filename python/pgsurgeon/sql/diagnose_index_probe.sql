-- diagnose's probe of a damaged index: the rows of its table that the index does not return when each is looked up
-- by its own key (the probe key compared with the indexed key by the operator, the row's ctid as a filter). The
-- key, the predicate and the operator are the server's own text (pg_get_indexdef, pg_get_expr, quote_ident); run
-- with sequential and TID scans off, so that the inner lookup goes through the index.
SELECT count(*)
FROM (SELECT ctid AS c, ({probe_key}) AS k FROM {table} WHERE ({pred})) s
WHERE s.k IS NOT NULL
  AND NOT EXISTS (SELECT FROM {table} WHERE ({key}) {op} s.k AND ctid = s.c AND ({pred}))
