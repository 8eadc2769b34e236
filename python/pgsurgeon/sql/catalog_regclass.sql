-- A --table argument read as SQL text ("Schema"."Table", unquoted names folded to lower case).
SELECT c.oid::bigint, c.relkind::text FROM pg_class c WHERE c.oid = pg_catalog.to_regclass(%(sqlname)s)
