-- Where a relation's files live and how to read its pages: path relative to the data directory,
-- the data directory itself, the access method (heap, btree, …, or sequence: sequences have no access method and
-- their pages carry a 4-byte special space, so they are not heap pages) and relkind.
SELECT pg_relation_filepath(c.oid) AS filepath,
       current_setting('data_directory') AS data_directory,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap'
                                WHEN c.relkind = 'S' THEN 'sequence' END) AS amname,
       c.relkind::text AS relkind,
       c.oid::regclass::text AS relname,
       current_setting('data_checksums') = 'on' AS checksums
FROM pg_class c
LEFT JOIN pg_am am ON am.oid = c.relam
WHERE c.oid = to_regclass(%(table)s)
