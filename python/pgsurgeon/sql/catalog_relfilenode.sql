-- A relation's file number now (TRUNCATE, VACUUM FULL, CLUSTER and REINDEX give it a new one; NULL once dropped).
SELECT pg_relation_filenode(c.oid) FROM pg_class c WHERE c.oid = %(oid)s
