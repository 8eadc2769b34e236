-- What a scan needs to know about each relation with storage in the connected database: its file key, access
-- method (page kind) and attribute count; for btree, GiST and SP-GiST indexes the file key of their table (their
-- leaf TIDs are checked against it); for tables their column descriptors and the file key of their TOAST table;
-- for TOAST tables their name (as errors print it).
SELECT CASE WHEN c.reltablespace = 0 THEN d.dattablespace ELSE c.reltablespace END::bigint AS tablespace_oid,
       CASE WHEN c.relisshared THEN 0 ELSE d.oid END::bigint AS database_oid,
       pg_relation_filenode(c.oid)::bigint AS relfilenode,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap'
                                WHEN c.relkind = 'S' THEN 'sequence' END) AS amname,
       c.relnatts AS natts,
       CASE WHEN h.reltablespace = 0 THEN d.dattablespace ELSE h.reltablespace END::bigint AS heap_tablespace_oid,
       CASE WHEN h.relisshared THEN 0 ELSE d.oid END::bigint AS heap_database_oid,
       pg_relation_filenode(h.oid)::bigint AS heap_relfilenode,
       CASE WHEN c.relkind IN ('r', 'm') THEN json_build_object(
           'natts', c.relnatts,
           'has_toast', c.reltoastrelid <> 0,
           'toast_relid', c.reltoastrelid::bigint,
           'attrs', coalesce((
               SELECT json_agg(json_build_object(
                          'attnum', a.attnum, 'attlen', a.attlen, 'attalign', a.attalign, 'attbyval', a.attbyval,
                          'attisdropped', a.attisdropped, 'typname', coalesce(t.typname::text, ''),
                          'attstorage', a.attstorage) ORDER BY a.attnum)
               FROM pg_attribute a LEFT JOIN pg_type t ON t.oid = a.atttypid
               WHERE a.attrelid = c.oid AND a.attnum > 0), '[]'::json))
       END AS descriptor,
       CASE WHEN tc.reltablespace = 0 THEN d.dattablespace ELSE tc.reltablespace END::bigint AS toast_tablespace_oid,
       pg_relation_filenode(tc.oid)::bigint AS toast_relfilenode,
       CASE WHEN c.relkind = 't' THEN c.relname::text END AS toast_name
FROM pg_class c
JOIN pg_database d ON d.datname = current_database()
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid AND am.amname IN ('btree', 'gist', 'spgist')
LEFT JOIN pg_class h ON h.oid = i.indrelid
LEFT JOIN pg_class tc ON tc.oid = c.reltoastrelid AND c.reltoastrelid <> 0
WHERE pg_relation_filenode(c.oid) IS NOT NULL
