-- What a scan needs to know about each relation with storage in the connected database: its file key, access method
-- (page kind) and attribute count; for every index the file key of its table (btree, hash, GIN, GiST and SP-GiST
-- entries carry heap TIDs the scan checks against it; `scan -t TABLE` picks the table's indexes by it, BRIN's too);
-- for tables their column descriptors and the file key of their TOAST table; for TOAST tables their name (as errors
-- print it); for a single-column GIN index whose keys compare as a plain type, how ("int4": btint4cmp; "bytes":
-- memcmp then length, which gin_compare_jsonb, gin_cmp_tslexeme and C-collation text do). Without a support function
-- 1 the key type's default btree comparator is used (ginutil.c, initGinState): the index column's type says which.
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
       CASE WHEN c.relkind = 't' THEN c.relname::text END AS toast_name,
       CASE WHEN am.amname = 'gin' AND i.indnatts = 1 THEN (
           SELECT CASE
                      WHEN cmp.proname IN ('gin_compare_jsonb', 'gin_cmp_tslexeme') THEN 'bytes'
                      WHEN coalesce(cmp.proname::text, kt.typname::text) IN ('btint4cmp', 'int4') THEN 'int4'
                      WHEN coalesce(cmp.proname::text, kt.typname::text) IN ('bttextcmp', 'text')
                           AND i.indcollation[0] IN (950, 951) THEN 'bytes'
                  END
           FROM pg_opclass opc
           JOIN pg_attribute ka ON ka.attrelid = c.oid AND ka.attnum = 1
           JOIN pg_type kt ON kt.oid = ka.atttypid
           LEFT JOIN pg_amproc ap ON ap.amprocfamily = opc.opcfamily AND ap.amprocnum = 1
                                 AND ap.amproclefttype = opc.opcintype
           LEFT JOIN pg_proc cmp ON cmp.oid = ap.amproc
           WHERE opc.oid = i.indclass[0])
       END AS gin_key
FROM pg_class c
JOIN pg_database d ON d.datname = current_database()
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class h ON h.oid = i.indrelid
LEFT JOIN pg_class tc ON tc.oid = c.reltoastrelid AND c.reltoastrelid <> 0
WHERE pg_relation_filenode(c.oid) IS NOT NULL
