-- Every relation with storage in the connected database, keyed the way its files are named:
-- (tablespace oid, database oid, relfilenode). Shared catalogs live in pg_global with database 0.
-- pg_relation_filenode() resolves mapped catalogs (relfilenode 0 in pg_class) through the relation mapper.
SELECT CASE WHEN c.reltablespace = 0 THEN d.dattablespace ELSE c.reltablespace END::bigint AS tablespace_oid,
       CASE WHEN c.relisshared THEN 0 ELSE d.oid END::bigint AS database_oid,
       pg_relation_filenode(c.oid)::bigint AS relfilenode,
       c.oid::bigint AS oid,
       n.nspname AS schema,
       c.relname AS name,
       c.relkind::text AS relkind,
       coalesce(am.amname, CASE WHEN c.relkind IN ('r', 't', 'm') THEN 'heap'
                                WHEN c.relkind = 'S' THEN 'sequence' END) AS amname,
       c.relpersistence::text AS persistence,
       c.reltoastrelid::bigint AS toast_oid
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_database d ON d.datname = current_database()
LEFT JOIN pg_am am ON am.oid = c.relam
WHERE pg_relation_filenode(c.oid) IS NOT NULL
