-- The cluster's identity, to tell that a local data directory is the server's own.
SELECT system_identifier::text FROM pg_control_system()
