-- The server's next transaction ID, 64-bit (pg_current_snapshot's xmax): callers keep its low 32 bits.
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint
