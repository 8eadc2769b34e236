-- Databases a scan can name relations in (template0 refuses connections).
SELECT datname, oid::bigint FROM pg_database WHERE datallowconn ORDER BY datname
