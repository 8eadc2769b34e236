-- What diagnose needs to know about the server and the connected database: version, checksums, block size,
-- where the data directory is and which cluster it is (to tell whether the files are on this host), and the
-- schemas of the amcheck and pageinspect extensions (NULL when not installed).
SELECT current_setting('server_version_num')::int AS version_num,
       current_setting('server_version') AS version,
       current_setting('data_checksums') = 'on' AS checksums,
       current_setting('block_size')::int AS block_size,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'segment_size') AS segment_blocks,
       current_setting('data_directory') AS data_directory,
       (SELECT system_identifier FROM pg_control_system())::text AS system_identifier,
       current_database() AS database,
       (SELECT oid::bigint FROM pg_database WHERE datname = current_database()) AS database_oid,
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'amcheck') AS amcheck_schema,
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pageinspect') AS pageinspect_schema,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser
