-- The server's log file when its logging collector writes one (pg_current_logfile), as an absolute path.
SELECT CASE WHEN f LIKE '/%%' THEN f ELSE current_setting('data_directory') || '/' || f END
FROM pg_current_logfile() f
WHERE f IS NOT NULL
