-- What a scan needs to know about each relation with storage in the connected database: its file key,
-- name, access method (page kind) and attribute count.
SELECT CASE WHEN c.reltablespace = 0 THEN d.dattablespace ELSE c.reltablespace END::bigint AS tablespace_oid,
       CASE WHEN c.relisshared THEN 0 ELSE d.oid END::bigint AS database_oid,
       pg_relation_filenode(c.oid)::bigint AS relfilenode,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap'
                                WHEN c.relkind = 'S' THEN 'sequence' END) AS amname,
       c.relnatts AS natts
FROM pg_class c
JOIN pg_database d ON d.datname = current_database()
LEFT JOIN pg_am am ON am.oid = c.relam
WHERE pg_relation_filenode(c.oid) IS NOT NULL
