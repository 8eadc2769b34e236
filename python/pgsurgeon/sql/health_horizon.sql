-- Everything that holds the xmin horizon back, oldest first: VACUUM keeps every row version a holder may still see.
-- xmin is the 32-bit transaction ID (compared with the deleters on the pages); age in transactions; catalogs_only: a
-- logical slot's catalog_xmin, which holds back the system catalogs' row versions only.
SELECT 'transaction' AS kind, pid::text AS name, coalesce(state, '') AS state,
       backend_xmin::text::bigint AS xmin, age(backend_xmin) AS xmin_age, false AS catalogs_only,
       extract(epoch FROM now() - xact_start)::bigint AS seconds, left(query, 200) AS detail
FROM pg_stat_activity
WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
UNION ALL
SELECT 'prepared transaction', gid, 'prepared', transaction::text::bigint, age(transaction), false,
       extract(epoch FROM now() - prepared)::bigint, 'owner ' || owner || ', database ' || database
FROM pg_prepared_xacts
UNION ALL
SELECT 'replication slot', slot_name, CASE WHEN active THEN 'active' ELSE 'inactive' END,
       xmin::text::bigint, age(xmin), false, NULL, slot_type
FROM pg_replication_slots
WHERE xmin IS NOT NULL
UNION ALL
SELECT 'replication slot', slot_name, CASE WHEN active THEN 'active' ELSE 'inactive' END,
       catalog_xmin::text::bigint, age(catalog_xmin), true, NULL, slot_type || ' (catalog_xmin)'
FROM pg_replication_slots
WHERE catalog_xmin IS NOT NULL
UNION ALL
SELECT 'standby feedback', coalesce(application_name, pid::text), state, backend_xmin::text::bigint,
       age(backend_xmin), false, NULL, client_addr::text
FROM pg_stat_replication
WHERE backend_xmin IS NOT NULL
ORDER BY xmin_age DESC
