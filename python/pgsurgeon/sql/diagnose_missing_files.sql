-- Relations whose first segment file is gone: pg_relation_size() reports 0 for them, so they would look empty.
-- pg_stat_file(…, missing_ok => true) is NULL for a missing file (superuser or pg_read_server_files).
SELECT r.oid::bigint, pg_relation_filepath(r.oid)
FROM unnest(%(oids)s::oid[]) AS r(oid)
WHERE pg_relation_filepath(r.oid) IS NOT NULL
  AND pg_stat_file(pg_relation_filepath(r.oid), true) IS NULL
