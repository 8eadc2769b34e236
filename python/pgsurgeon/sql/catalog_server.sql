-- The one server-facts query: who runs where, and what reading the cluster's files needs. What the role may not
-- see comes back NULL instead of failing (data_directory needs superuser or pg_read_all_settings,
-- pg_control_system() its EXECUTE grant), so every command can ask it before deciding what it needs.
SELECT current_setting('server_version_num')::int AS version_num,
       current_setting('server_version') AS version,
       current_database() AS database,
       (SELECT oid::bigint FROM pg_database WHERE datname = current_database()) AS database_oid,
       current_user::text AS usename,
       coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) AS superuser,
       pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') AS read_server_files,
       pg_is_in_recovery() AS in_recovery,
       (SELECT setting FROM pg_settings WHERE name = 'data_directory') AS data_directory,
       CASE WHEN has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
            THEN (SELECT system_identifier FROM pg_control_system())::text END AS system_identifier,
       current_setting('data_checksums') = 'on' AS checksums,
       current_setting('block_size')::int AS block_size,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'segment_size') AS segment_blocks,
       current_setting('server_encoding') AS encoding,
       -- the next transaction ID now, its low 32 bits as tuple headers hold them
       (pg_snapshot_xmax(pg_current_snapshot())::text::bigint %% 4294967296)::bigint AS next_xid,
       (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'amcheck') AS amcheck_schema,
       (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pageinspect') AS pageinspect_schema,
       (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pg_surgery') AS pg_surgery_schema,
       EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_surgery') AS pg_surgery_available,
       -- where good copies of damaged pages may be (repair --from-standby, --from-backup): standbys streaming from
       -- this server, and WAL archiving (archive_library is 15+: missing_ok reads NULL on 14)
       (SELECT count(*) FROM pg_stat_replication)::int AS standbys,
       current_setting('archive_mode') <> 'off'
         AND (coalesce(current_setting('archive_command'), '') NOT IN ('', '(disabled)')
              OR coalesce(current_setting('archive_library', true), '') <> '') AS archiving
