-- The settings that decide whether statistics are kept and autovacuum runs, and when the database's statistics
-- were last reset.
SELECT current_setting('track_counts')::bool AS track_counts,
       current_setting('autovacuum')::bool AS autovacuum,
       current_setting('autovacuum_freeze_max_age')::bigint AS freeze_max_age,
       (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()) AS stats_reset,
       now() AS now
