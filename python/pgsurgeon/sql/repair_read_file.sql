-- Bytes of a relation file read as a backup would (never through shared buffers): pages the server refuses.
SELECT pg_read_binary_file(%(path)s, %(offset)s, %(length)s, true)
