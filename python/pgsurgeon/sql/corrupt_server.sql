-- Where the server keeps its files and whether it checksums pages.
SELECT current_setting('data_directory') AS data_directory,
       current_setting('data_checksums') = 'on' AS checksums,
       current_setting('server_version_num')::int AS version_num
