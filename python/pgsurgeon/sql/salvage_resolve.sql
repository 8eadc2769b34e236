-- A --table argument read as SQL text ("Schema"."Table", unquoted names folded to lower case).
SELECT pg_catalog.to_regclass(%(sqlname)s)::oid::bigint
