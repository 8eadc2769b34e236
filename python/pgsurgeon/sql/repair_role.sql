-- Who and where repair runs, asked first: a role that is not a superuser cannot read the rest (data_directory,
-- pg_control_system).
SELECT current_setting('server_version_num')::int AS version_num,
       current_setting('server_version') AS version,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
       current_user::text AS usename,
       pg_is_in_recovery() AS in_recovery
