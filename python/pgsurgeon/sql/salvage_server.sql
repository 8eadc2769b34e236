-- The next transaction ID now (its low 32 bits, as tuple headers hold them), the data directory (superusers and
-- pg_read_all_settings only; NULL otherwise), the segment size in bytes and the server encoding.
SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::bigint AS next_xid,
       (SELECT setting FROM pg_settings WHERE name = 'data_directory') AS data_directory,
       pg_size_bytes(current_setting('segment_size'))::bigint AS segment_bytes,
       current_setting('server_encoding') AS server_encoding
