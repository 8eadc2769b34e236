-- Where a standby is: in recovery or not, whose cluster it is, how far it has replayed, and whether its replay is
-- paused (pg_get_wal_replay_pause_state, PostgreSQL 14+) and whether it streams from its primary now. Read-only: repair never writes to a standby.
SELECT pg_is_in_recovery(),
       (SELECT system_identifier FROM pg_control_system())::text,
       pg_last_wal_replay_lsn()::text,
       CASE WHEN pg_is_in_recovery() THEN pg_get_wal_replay_pause_state() END,
       current_database(),
       (SELECT status FROM pg_stat_wal_receiver)
