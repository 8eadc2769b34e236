-- What repair needs to know about the server before it plans anything: version, privileges, where the data
-- directory is (and which cluster it is), checksums, and the schemas of the extensions it uses (NULL when missing).
-- Asked once the role is known to be a superuser (repair_role.sql).
SELECT current_setting('data_directory') AS data_directory,
       (SELECT system_identifier FROM pg_control_system())::text AS system_identifier,
       current_setting('data_checksums') = 'on' AS checksums,
       current_setting('block_size')::int AS block_size,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'segment_size') AS segment_blocks,
       current_database() AS database,
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'amcheck') AS amcheck_schema,
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pageinspect') AS pageinspect_schema,
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pg_surgery') AS pg_surgery_schema,
       (SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_surgery')::int > 0 AS pg_surgery_available
