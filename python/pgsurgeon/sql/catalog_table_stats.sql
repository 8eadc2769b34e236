-- What the statistics say of each table of the connected database (pg_stat_all_tables: the figures autovacuum
-- decides by), and what governs its vacuuming, to set beside what the pages hold.
SELECT n.nspname AS schema,
       c.relname AS name,
       s.n_live_tup,
       s.n_dead_tup,
       s.last_vacuum,
       s.last_autovacuum,
       s.autovacuum_count,
       age(c.relfrozenxid) AS frozen_age,
       coalesce((SELECT o.option_value FROM pg_options_to_table(c.reloptions) o
                 WHERE o.option_name = 'autovacuum_enabled'), 'on') AS autovacuum_enabled
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'm', 't')
