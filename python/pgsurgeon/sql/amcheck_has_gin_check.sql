-- Whether the installed amcheck has gin_index_check (extension version 1.5, shipped with PostgreSQL 18), in the
-- schema amcheck is installed in (%(schema)s).
SELECT to_regprocedure(format('%%I.gin_index_check(regclass)', %(schema)s::text)) IS NOT NULL
