-- What salvage needs to know about one table: its names, files, TOAST table and server facts (sizes apart: they fail
-- when a segment file is missing).
SELECT c.oid::bigint AS oid,
       c.relkind::text AS relkind,
       n.nspname::text AS schema,
       c.relname::text AS name,
       c.relnatts::int AS natts,
       pg_relation_filepath(c.oid) AS filepath,
       c.reltoastrelid::bigint AS toast_oid,
       CASE WHEN c.reltoastrelid <> 0 THEN pg_relation_filepath(c.reltoastrelid) END AS toast_filepath,
       CASE WHEN c.reltoastrelid <> 0 THEN tn.nspname::text END AS toast_schema,
       CASE WHEN c.reltoastrelid <> 0 THEN tc.relname::text END AS toast_name,
       coalesce(am.amname::text, '') AS amname,
       -- an access method created over heap's own handler stores heap pages (the name alone does not tell)
       coalesce(am.amhandler::regproc::text, '') AS amhandler,
       current_setting('block_size')::int AS block_size,
       current_setting('server_version_num')::int AS server_version_num,
       current_setting('data_checksums') = 'on' AS checksums,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
       pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') AS read_server_files
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_class tc ON tc.oid = c.reltoastrelid
LEFT JOIN pg_namespace tn ON tn.oid = tc.relnamespace
WHERE c.oid = %(oid)s
